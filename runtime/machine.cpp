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

const CpuCaches& cpu_caches() {
  static const CpuCaches caches = [] {
    auto bytes = [](int name) -> int64_t {
      const long v = sysconf(name);
      return v > 0 ? v : 0;
    };
    CpuCaches c{0, 0, 0};
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) &&                           \
    defined(_SC_LEVEL3_CACHE_SIZE)
    c = {bytes(_SC_LEVEL1_DCACHE_SIZE), bytes(_SC_LEVEL2_CACHE_SIZE),
         std::min<int64_t>(bytes(_SC_LEVEL3_CACHE_SIZE), int64_t(32) << 20)};
#endif
    return c;
  }();
  return caches;
}

int64_t stream_store_bytes() {
  const int64_t set = config().stream_store_bytes;
  if (set != 0) return set;
  const int64_t l3 = cpu_caches().l3;
  return l3 > 0 ? l3 : int64_t(32) << 20;
}

} // namespace tj::rt
