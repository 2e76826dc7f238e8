// The pool of worker threads for data-parallel loops: started on first need, grown to the most
// threads a loop has asked for.
#pragma once
#include <cstdint>
#include <functional>

namespace tj::rt {

// Number of threads parallel_for uses (TJ_NUM_THREADS, default: all cores).
int num_threads();
// The machine's cores (hardware threads), read once. Where the threads outnumber them, neither
// the workers nor the caller poll for work before sleeping (config().spin_us).
int cores();

// Calls fn(begin, end) over disjoint chunks covering [0, n), on up to
// num_threads() threads including the caller. Chunks are multiples of `align`
// (except the last) and at least `grain` long; small n runs inline.
void parallel_for(int64_t n, int64_t grain, int64_t align,
                  const std::function<void(int64_t, int64_t)>& fn);

} // namespace tj::rt
