// Device names, and CUDA availability.
#include "tensorjit/device.h"

#include "runtime/cuda_driver.h"
#include "tensorjit/error.h"

namespace tj {

Device::Device(const std::string& spec) : type_(kCPU), index_(-1) {
  if (spec == "cpu") return;
  if (spec.rfind("cuda", 0) == 0) {
    type_ = kCUDA;
    if (spec.size() == 4) return;
    if (spec[4] == ':' && spec.size() > 5 &&
        spec.find_first_not_of("0123456789", 5) == std::string::npos) {
      if (spec.size() <= 9) { // at most 4 digits: no overflow
        index_ = std::stoi(spec.substr(5));
        return;
      }
    }
  }
  throw Error("Expected one of cpu, cuda device type at start of device string: " + spec);
}

std::string Device::str() const {
  if (type_ == kCPU) return "cpu";
  return "cuda:" + std::to_string(index_ < 0 ? 0 : index_);
}

namespace cuda {
bool is_available() { return rt::cuda::unavailable_reason().empty(); }
int device_count() {
  if (!is_available()) return 0;
  int n = 0;
  rt::cuda::check(rt::cuda::driver().cuDeviceGetCount(&n), "cuDeviceGetCount");
  return n;
}
void synchronize() {
  if (is_available()) rt::cuda::synchronize_all();
}
void empty_cache() {
  if (is_available()) rt::cuda::empty_cache();
}
} // namespace cuda

} // namespace tj
