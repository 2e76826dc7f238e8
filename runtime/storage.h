// Storage: a block of device memory shared by every tensor that views it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tensorjit/device.h"

namespace tj::rt {

class Storage {
public:
  // Fresh, 64-byte aligned, uninitialized memory.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device = kCPU);
  // Memory owned by the user (from_blob); `deleter` runs when the last view goes.
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Bumped by every in-place write: a Buffer node records the version it reads.
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }
  // Pinned memory has been handed out (numpy(), data_ptr(), from_blob): writes
  // to it happen in place, before the call that makes them returns.
  bool pinned() const { return pinned_; }
  // Pins the memory for `owner`, the frontend's storage that handed it out.
  void pin(const std::shared_ptr<void>& owner) {
    pinned_ = true;
    owner_ = owner;
  }
  std::shared_ptr<void> owner() const { return owner_.lock(); }
  // The name a .tjir file gave it, kept so that printing the graph again uses it.
  const std::string& label() const { return label_; }
  void set_label(std::string label) { label_ = std::move(label); }

private:
  Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter)
      : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}
  void* data_;
  size_t nbytes_;
  Device device_;
  std::function<void(void*)> deleter_;
  uint64_t version_ = 0;
  bool pinned_ = false;
  std::weak_ptr<void> owner_;
  std::string label_;
};

// The device `d` names, checked to exist: "cuda" is cuda:0. Throws a clear
// error when CUDA is asked for and no driver or no such device is present.
Device checked_device(Device d);

// `nbytes` from `offset` of `src`, copied into fresh storage on `dst`.
std::shared_ptr<Storage> copy_bytes(const Storage& src, size_t offset, size_t nbytes, Device dst);
std::shared_ptr<Storage> copy_to_device(const std::shared_ptr<Storage>& src, Device dst);

} // namespace tj::rt
