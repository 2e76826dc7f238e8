// Devices: the CPU, and CUDA devices when a driver is present.
#pragma once
#include <cstdint>
#include <string>

namespace tj {

enum class DeviceType : uint8_t { CPU, CUDA };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

class Device {
public:
  Device(DeviceType type = kCPU, int index = -1) : type_(type), index_(index) {}
  // "cpu", "cuda", "cuda:1".
  Device(const std::string& spec);
  Device(const char* spec) : Device(std::string(spec)) {}

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool is_cpu() const { return type_ == kCPU; }
  bool is_cuda() const { return type_ == kCUDA; }
  // "cpu", "cuda:0".
  std::string str() const;
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

private:
  DeviceType type_;
  int index_;
};

namespace cuda {
bool is_available();
int device_count();
// Waits for the work queued on every CUDA device in use (torch.cuda.synchronize).
void synchronize();
// Returns the device memory the caching allocator keeps for reuse to the driver
// (torch.cuda.empty_cache); memory that tensors hold stays theirs.
void empty_cache();
} // namespace cuda

} // namespace tj
