// Kernel cache: structural hash -> compiled kernel, with equality checked on hit; machine code
// persists in the disk cache between processes.
#include "runtime/kernel_cache.h"

#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <unordered_map>

#include "runtime/disk_cache.h"
#include "runtime/stats_counters.h"
#include "tensorjit/config.h"

namespace tj::rt {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

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

// Machine code from the disk cache (config().cache_dir) when an entry with the kernel's
// identity is there and loads, else compiled now (and stored there).
std::shared_ptr<llvmjit::CompiledKernel> from_disk_or_compile(const kir::Kernel& k) {
  const int opt = config().opt_level;
  if (config().cache_dir.empty()) {
    auto code = llvmjit::compile(k, opt);
    ++counters().kernels_compiled;
    if (config().debug >= 1)
      fmt::print(stderr, "[tj] compiled {} in {:.2f} ms\n", k.name, code->compile_ms);
    return code;
  }
  auto t0 = std::chrono::steady_clock::now();
  const std::string id = llvmjit::identity(k, opt);
  // An entry is the symbol's name, a newline, and the object file.
  if (auto entry = disk_cache::load("cpu", id)) {
    size_t nl = entry->find('\n');
    if (nl != std::string::npos) {
      try {
        auto code = llvmjit::load({entry->substr(0, nl), entry->substr(nl + 1)});
        code->compile_ms = ms_since(t0);
        ++counters().disk_cache_hits;
        if (config().debug >= 1)
          fmt::print(stderr, "[tj] loaded {} from the disk cache in {:.2f} ms\n", k.name,
                     code->compile_ms);
        return code;
      } catch (const std::runtime_error&) {
        // Unloadable (a symbol already defined here, say): compile afresh below.
      }
    }
  }
  llvmjit::ObjectCode obj = llvmjit::compile_object(k, opt);
  disk_cache::store("cpu", id, obj.symbol + "\n" + obj.object);
  auto code = llvmjit::load(obj);
  code->compile_ms = ms_since(t0);
  ++counters().kernels_compiled;
  if (config().debug >= 1)
    fmt::print(stderr, "[tj] compiled {} in {:.2f} ms (stored in the disk cache)\n", k.name,
               code->compile_ms);
  return code;
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
  if (config().debug >= 1) {
    // Why this kernel compiles: the closest cached one (same name, so the
    // same roots) and what differs from it.
    std::lock_guard lock(c.mu);
    for (const auto& [hash, e] : c.map)
      if (e.kernel.name == k.name) {
        fmt::print(stderr, "[tj] compiling {}: a cached {} exists, but here {}\n", k.name, k.name,
                   k.difference(e.kernel));
        break;
      }
  }
  auto code = from_disk_or_compile(k);
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
