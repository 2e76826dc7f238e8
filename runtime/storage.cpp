// Memory for Storage: the caching host allocator, device memory, copies between devices.
#include "runtime/storage.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/stats_counters.h"
#include "tensorjit/error.h"

namespace tj::rt {

namespace {

// Blocks from 64 KiB up are cached after use: a fresh block costs a page fault per page on
// first touch, which dominates a memory-bound kernel, and the C library hands such blocks back
// to the system when they are freed (mmap, or trimming the heap's top) so that the next one
// faults again. Blocks are rounded to 64 KiB below 1 MiB (few sizes, so that they are found
// again) and to 2 MiB from there, those asked to be backed by transparent huge pages.
constexpr size_t kCachedBlock = size_t{64} << 10;
constexpr size_t kLargeBlock = size_t{1} << 20;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kCacheLimit = size_t{2} << 30;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

class HostAllocator {
public:
  void* allocate(size_t nbytes, size_t* capacity) {
    if (nbytes < kCachedBlock) {
      *capacity = round_up(nbytes, 64);
      return *capacity ? std::aligned_alloc(64, *capacity) : nullptr;
    }
    const bool large = nbytes >= kLargeBlock;
    *capacity = round_up(nbytes, large ? kHugePage : kCachedBlock);
    {
      std::lock_guard lock(mu_);
      auto it = free_.find(*capacity);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= *capacity;
        return p;
      }
    }
    void* p = std::aligned_alloc(large ? kHugePage : 64, *capacity);
    if (p && large) madvise(p, *capacity, MADV_HUGEPAGE);
    return p;
  }

  void release(void* p, size_t capacity) {
    if (capacity >= kCachedBlock) {
      std::lock_guard lock(mu_);
      if (cached_ + capacity <= kCacheLimit) {
        free_[capacity].push_back(p);
        cached_ += capacity;
        return;
      }
    }
    std::free(p);
  }

private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

HostAllocator& host_allocator() {
  static HostAllocator* a = new HostAllocator; // outlives every storage
  return *a;
}

} // namespace

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (device.is_cuda()) {
    const int dev = device.index();
    cuda::CUdeviceptr p = cuda::allocate(dev, nbytes);
    counters().bytes_allocated += static_cast<int64_t>(nbytes);
    return std::shared_ptr<Storage>(
        new Storage(reinterpret_cast<void*>(p), nbytes, device, [dev, nbytes](void* q) {
          cuda::release(dev, reinterpret_cast<cuda::CUdeviceptr>(q), nbytes);
        }));
  }
  size_t capacity = 0;
  void* p = host_allocator().allocate(nbytes, &capacity);
  if (capacity && !p)
    throw Error("DefaultCPUAllocator: not enough memory: you tried to allocate " +
                std::to_string(nbytes) + " bytes.");
  counters().bytes_allocated += static_cast<int64_t>(nbytes);
  return std::shared_ptr<Storage>(new Storage(
      p, nbytes, device, [capacity](void* q) { host_allocator().release(q, capacity); }));
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter) {
  return std::shared_ptr<Storage>(new Storage(data, nbytes, device, std::move(deleter)));
}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

Device checked_device(Device d) {
  if (d.is_cpu()) return Device(kCPU);
  int index = d.index() < 0 ? 0 : d.index();
  cuda::device(index); // throws when there is no driver or no such device
  return Device(kCUDA, index);
}

std::shared_ptr<Storage> copy_bytes(const Storage& src, size_t offset, size_t nbytes, Device dst) {
  auto out = Storage::allocate(nbytes, dst);
  const char* from = static_cast<const char*>(src.data()) + offset;
  char* to = static_cast<char*>(out->data());
  auto dptr = [](const void* p) { return reinterpret_cast<cuda::CUdeviceptr>(p); };
  const Device s = src.device();
  if (s.is_cpu() && dst.is_cpu()) {
    std::memcpy(to, from, nbytes);
  } else if (s.is_cpu()) {
    cuda::copy_to_device(dst.index(), dptr(to), from, nbytes);
  } else if (dst.is_cpu()) {
    cuda::copy_to_host(s.index(), to, dptr(from), nbytes);
  } else if (s == dst) {
    cuda::copy_on_device(s.index(), dptr(to), dptr(from), nbytes);
  } else { // between devices, through the host
    std::vector<char> staging(nbytes);
    cuda::copy_to_host(s.index(), staging.data(), dptr(from), nbytes);
    cuda::copy_to_device(dst.index(), dptr(to), staging.data(), nbytes);
  }
  return out;
}

std::shared_ptr<Storage> copy_to_device(const std::shared_ptr<Storage>& src, Device dst) {
  return copy_bytes(*src, 0, src->nbytes(), dst);
}

} // namespace tj::rt
