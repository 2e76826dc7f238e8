// Kernel cache: structural hash -> compiled kernel, with equality checked on hit.
#include "kernel_cache.h"

#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

#include "stats_counters.h"
#include "tensorjit/config.h"

namespace tj::rt {
namespace {

struct Entry {
  kir::Kernel kernel;
  std::shared_ptr<llvmjit::CompiledKernel> code;
};

struct Cache {
  std::mutex mu;
  std::unordered_multimap<uint64_t, Entry> map;
};
Cache& cache() {
  static Cache* c = new Cache; // kernels stay valid until exit
  return *c;
}

} // namespace

std::shared_ptr<llvmjit::CompiledKernel> get_kernel(const kir::Kernel& k) {
  uint64_t h = k.hash();
  auto& c = cache();
  {
    std::lock_guard lock(c.mu);
    auto [lo, hi] = c.map.equal_range(h);
    for (auto it = lo; it != hi; ++it)
      if (it->second.kernel.same_structure(k)) {
        ++counters().memory_cache_hits;
        return it->second.code;
      }
  }
  auto code = llvmjit::compile(k, config().opt_level);
  ++counters().kernels_compiled;
  if (config().debug >= 1)
    fmt::print(stderr, "[tj] compiled {} ({:016x}) in {:.2f} ms\n", k.name, h, code->compile_ms);
  if (config().debug >= 3) fmt::print(stderr, "{}", k.str());
  if (config().debug >= 4) fmt::print(stderr, "{}", llvmjit::emit_llvm_ir(k, config().opt_level));
  std::lock_guard lock(c.mu);
  c.map.emplace(h, Entry{k, code});
  return code;
}

std::vector<kir::Kernel> cached_kernels() {
  auto& c = cache();
  std::lock_guard lock(c.mu);
  std::vector<kir::Kernel> out;
  for (const auto& [h, e] : c.map)
    out.push_back(e.kernel);
  return out;
}

} // namespace tj::rt
