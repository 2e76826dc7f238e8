// Run-time settings (environment variables and their C++ twins) and counters.
#pragma once
#include <cstdint>
#include <string>

namespace tj {

// Counters since the last reset_stats().
struct Stats {
  int64_t kernels_compiled = 0;
  int64_t kernels_launched = 0;
  int64_t memory_cache_hits = 0;
  int64_t disk_cache_hits = 0;
  int64_t materializations = 0;
  int64_t bytes_allocated = 0;
  int64_t library_calls =
      0; // calls into a library (cuBLAS, the CPU GEMM) that computed a graph node
  // Pieces the CPU's parallel loops split their work into (a kernel launch's chunks, a GEMM's
  // blocks): tasks of the thread pool, or 1 for a loop run on the calling thread alone.
  int64_t parallel_chunks = 0;
  // Times a thread of the pool, a worker or the caller, polled for work or for the workers to
  // finish before sleeping (config().spin_us); none where the threads outnumber the cores.
  int64_t pool_polls = 0;
  // Materializations whose schedule was found in the schedule cache (no simplification, no
  // scheduling: config().schedule_cache).
  int64_t schedule_cache_hits = 0;
};
Stats stats();
void reset_stats();

// Settings read once from the environment (TJ_NUM_THREADS, TJ_FUSION, TJ_CPU_GEMM, TJ_DEBUG,
// TJ_DUMP, TJ_DUMP_DIR, TJ_CACHE_DIR, TJ_CACHE_MAX_MB, TJ_OPT_LEVEL, TJ_MAX_GRAPH_NODES,
// TJ_STREAM_STORE_BYTES, TJ_SPIN_US, TJ_SCHEDULE_CACHE, TJ_ORDERED_SCANS, TJ_VERIFY) and
// changeable from C++.
struct Config {
  int num_threads = 0; // 0: all cores
  bool fusion = true;  // false: one kernel per primitive op
  // TJ_SCHEDULE_CACHE: a graph materialized again with the same structure reuses its schedule,
  // with its leaves' memory bound anew (lib/pipeline/schedule_cache.h); false: every graph is
  // simplified and scheduled.
  bool schedule_cache = true;
  // float32/float64 products on the CPU by the packed GEMM (a Call node, runtime/cpu_gemm.h);
  // false: as fused reductions, like the other dtypes' products.
  bool cpu_gemm = true;
  // TJ_ORDERED_SCANS: a long float32 or float64 cumsum, cumprod or logcumsumexp over few rows on
  // the CPU combines in PyTorch's order, one element after the other on one thread; false (the
  // default): in segments that every thread scans, combined with the totals of the segments
  // before (passes/split_scans), which may change float64's last bits, or more where partial
  // results cancel. 16-bit floats' scans stay in order.
  bool ordered_scans = false;
  int debug = 0;                   // TJ_DEBUG level, 0..4
  int opt_level = 3;               // LLVM optimization level of kernels
  std::string cache_dir;           // persistent cache; empty disables it
  int64_t cache_max_mb = 1024;     // per kind of code; the oldest entries go first
  int64_t max_graph_nodes = 10000; // pending nodes past which a tensor is materialized
  // CPU outputs of elementwise kernels at least this large (bytes) are written around the cache
  // (non-temporal stores): 0 takes the last-level cache's size, at most 32 MiB; negative: never.
  int64_t stream_store_bytes = 0;
  // Microseconds that idle CPU worker threads poll for the next launch (and the launching thread
  // for the workers' end) before they sleep: waking a sleeping thread costs tens of microseconds
  // a launch. 0: sleep at once.
  int spin_us = 200;
  // TJ_VERIFY: check every node of each graph materialized, as built and after each pass,
  // against its op's rules (ir::verify; slow). On in debug builds and in the tests.
  bool verify = false;
  // TJ_DUMP: stages (as ir::dump names them, comma-separated) written for
  // every materialization to TJ_DUMP_DIR (default "tj-dump") as
  // NNNN-STAGE.txt files.
  std::string dump;
  std::string dump_dir = "tj-dump";
};
Config& config();

} // namespace tj
