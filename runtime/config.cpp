// tj::config() from the environment, and tj::stats().
#include <cstdlib>
#include <string>

#include "runtime/stats_counters.h"
#include "tensorjit/config.h"

namespace tj {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::atoi(v);
}

Config from_env() {
  Config c;
  c.num_threads = env_int("TJ_NUM_THREADS", 0);
  c.spin_us = env_int("TJ_SPIN_US", 200);
  c.fusion = env_int("TJ_FUSION", 1) != 0;
  c.schedule_cache = env_int("TJ_SCHEDULE_CACHE", 1) != 0;
  c.cpu_gemm = env_int("TJ_CPU_GEMM", 1) != 0;
  c.ordered_scans = env_int("TJ_ORDERED_SCANS", 0) != 0;
#ifdef NDEBUG
  c.verify = env_int("TJ_VERIFY", 0) != 0;
#else
  c.verify = env_int("TJ_VERIFY", 1) != 0;
#endif
  c.debug = env_int("TJ_DEBUG", 0);
  c.opt_level = env_int("TJ_OPT_LEVEL", 3);
  if (const char* v = std::getenv("TJ_MAX_GRAPH_NODES"); v && *v) c.max_graph_nodes = std::atoll(v);
  if (const char* v = std::getenv("TJ_CACHE_MAX_MB"); v && *v) c.cache_max_mb = std::atoll(v);
  if (const char* v = std::getenv("TJ_STREAM_STORE_BYTES"); v && *v)
    c.stream_store_bytes = std::atoll(v);
  if (const char* v = std::getenv("TJ_DUMP")) c.dump = v;
  if (const char* v = std::getenv("TJ_DUMP_DIR"); v && *v) c.dump_dir = v;
  if (const char* v = std::getenv("TJ_CACHE_DIR")) {
    c.cache_dir = v;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    c.cache_dir = std::string(home) + "/.cache/tensorjit";
  }
  return c;
}

} // namespace

Config& config() {
  static Config c = from_env();
  return c;
}

namespace rt {
Counters& counters() {
  static Counters c;
  return c;
}
} // namespace rt

Stats stats() {
  auto& c = rt::counters();
  return Stats{c.kernels_compiled.load(),   c.kernels_launched.load(), c.memory_cache_hits.load(),
               c.disk_cache_hits.load(),    c.materializations.load(), c.bytes_allocated.load(),
               c.library_calls.load(),      c.parallel_chunks.load(),  c.pool_polls.load(),
               c.schedule_cache_hits.load()};
}

void reset_stats() {
  auto& c = rt::counters();
  c.kernels_compiled = 0;
  c.kernels_launched = 0;
  c.memory_cache_hits = 0;
  c.disk_cache_hits = 0;
  c.materializations = 0;
  c.bytes_allocated = 0;
  c.library_calls = 0;
  c.parallel_chunks = 0;
  c.pool_polls = 0;
  c.schedule_cache_hits = 0;
}

} // namespace tj
