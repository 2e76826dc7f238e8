// Host memory allocation for Storage.
#include "storage.h"

#include <cstdlib>

#include "stats_counters.h"
#include "tensorjit/error.h"

namespace tj::rt {

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (!device.is_cpu()) throw Error("CUDA is not available: this build has no CUDA backend yet");
  size_t rounded = (nbytes + 63) / 64 * 64;
  void* p = rounded ? std::aligned_alloc(64, rounded) : nullptr;
  if (rounded && !p)
    throw Error("DefaultCPUAllocator: not enough memory: you tried to allocate " +
                std::to_string(nbytes) + " bytes.");
  counters().bytes_allocated += static_cast<int64_t>(nbytes);
  return std::shared_ptr<Storage>(new Storage(p, nbytes, device, [](void* q) { std::free(q); }));
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> deleter) {
  return std::shared_ptr<Storage>(new Storage(data, nbytes, device, std::move(deleter)));
}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

} // namespace tj::rt
