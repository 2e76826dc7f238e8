// The process-wide counters behind tj::stats().
#pragma once
#include <atomic>
#include <cstdint>

namespace tj::rt {

struct Counters {
  std::atomic<int64_t> kernels_compiled{0};
  std::atomic<int64_t> kernels_launched{0};
  std::atomic<int64_t> memory_cache_hits{0};
  std::atomic<int64_t> disk_cache_hits{0};
  std::atomic<int64_t> materializations{0};
  std::atomic<int64_t> bytes_allocated{0};
  std::atomic<int64_t> library_calls{0};
  std::atomic<int64_t> parallel_chunks{0};
  std::atomic<int64_t> pool_polls{0};
  std::atomic<int64_t> schedule_cache_hits{0};
};
Counters& counters();

} // namespace tj::rt
