// Host memory allocation for Storage.
#include "storage.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "stats_counters.h"
#include "tensorjit/error.h"

namespace tj::rt {

namespace {

// Large blocks are cached after use: a fresh block costs a page fault per
// page on first touch, which dominates a memory-bound kernel. Blocks are
// rounded to 2 MiB and asked to be backed by transparent huge pages.
constexpr size_t kLargeBlock = size_t{1} << 20;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kCacheLimit = size_t{2} << 30;

class HostAllocator {
public:
  void* allocate(size_t nbytes, size_t* capacity) {
    if (nbytes < kLargeBlock) {
      *capacity = (nbytes + 63) / 64 * 64;
      return *capacity ? std::aligned_alloc(64, *capacity) : nullptr;
    }
    *capacity = (nbytes + kHugePage - 1) / kHugePage * kHugePage;
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
    void* p = std::aligned_alloc(kHugePage, *capacity);
    if (p) madvise(p, *capacity, MADV_HUGEPAGE);
    return p;
  }

  void release(void* p, size_t capacity) {
    if (capacity >= kLargeBlock) {
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
  if (!device.is_cpu()) throw Error("CUDA is not available: this build has no CUDA backend yet");
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

} // namespace tj::rt
