// A fixed pool of worker threads for data-parallel loops.
#pragma once
#include <cstdint>
#include <functional>

namespace tj::rt {

// Number of threads parallel_for uses (TJ_NUM_THREADS, default: all cores).
int num_threads();

// Calls fn(begin, end) over disjoint chunks covering [0, n), on up to
// num_threads() threads including the caller. Chunks are multiples of `align`
// (except the last) and at least `grain` long; small n runs inline.
void parallel_for(int64_t n, int64_t grain, int64_t align,
                  const std::function<void(int64_t, int64_t)>& fn);

} // namespace tj::rt
