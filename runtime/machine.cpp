// Facts of the host machine that scheduling decisions use.
#include "runtime/machine.h"

#include <unistd.h>

#include <algorithm>

#include "runtime/cuda_driver.h"
#include "runtime/thread_pool.h"
#include "tensorjit/config.h"

namespace tj::rt {

ReductionSplit reduction_split(Device device) {
  if (device.is_cuda()) return {int64_t(cuda::device(device.index()).sm_count) * 8, 1024, true};
  return {num_threads(), 256, false};
}

int64_t stream_store_bytes() {
  static const int64_t cache = [] {
    constexpr int64_t kMax = int64_t(32) << 20;
#ifdef _SC_LEVEL3_CACHE_SIZE
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) return std::min<int64_t>(l3, kMax);
#endif
    return kMax;
  }();
  const int64_t set = config().stream_store_bytes;
  return set == 0 ? cache : set;
}

} // namespace tj::rt
