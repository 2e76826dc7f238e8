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

// Kernels write large outputs with non-temporal stores, which are weakly ordered: this makes the
// calling thread's visible to others (an sfence). parallel_for calls it after each chunk, before
// the chunk is reported done; whoever runs kernels outside it calls it before handing their
// outputs on. Once per chunk, not per kernel call: a fence in every call of a kernel run row by
// row waited for each row's stores to reach memory (gathered rows of 264 floats, streamed:
// 11.8-12.9 ms fenced per call, 8.0-8.6 ms per chunk, as fast as through the cache).
void stores_visible();

// Calls fn(begin, end) over disjoint chunks covering [0, n), on up to
// num_threads() threads including the caller. Chunks are multiples of `align`
// (except the last) and at least `grain` long; small n runs inline. Each chunk's
// non-temporal stores are visible when it returns (stores_visible).
void parallel_for(int64_t n, int64_t grain, int64_t align,
                  const std::function<void(int64_t, int64_t)>& fn);

} // namespace tj::rt
