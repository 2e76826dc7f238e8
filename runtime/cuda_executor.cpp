// The CUDA executor: NVRTC-compiled kernels (cached in memory and on disk), launched over whole
// domains.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "codegen/cuda/cuda_source.h"
#include "codegen/cuda/nvrtc_compile.h"
#include "runtime/cuda_driver.h"
#include "runtime/disk_cache.h"
#include "runtime/launch.h"
#include "runtime/stats_counters.h"
#include "tensorjit/config.h"
#include "tensorjit/error.h"

namespace tj::rt {
namespace {

using cuda::CUfunction;

struct Compiled {
  kir::Kernel kernel; // compared on lookup: hashes may collide
  int nd = 0;
  bool index32 = false;
  int device = 0;
  CUfunction fn = nullptr;
  bool may_fail = false;
};

struct ModuleCache {
  std::mutex mu;
  std::multimap<uint64_t, Compiled> map;
};
ModuleCache& module_cache() {
  static ModuleCache* c = new ModuleCache; // modules stay loaded until exit
  return *c;
}

uint64_t key_hash(const kir::Kernel& k, int nd, bool index32, int dev) {
  return k.hash() ^ (uint64_t(nd) << 56) ^ (uint64_t(dev) << 48) ^ (uint64_t(index32) << 40);
}

const Compiled* find_function(const kir::Kernel& k, int nd, bool index32, int dev) {
  auto& c = module_cache();
  std::lock_guard lock(c.mu);
  auto [lo, hi] = c.map.equal_range(key_hash(k, nd, index32, dev));
  for (auto it = lo; it != hi; ++it)
    if (it->second.nd == nd && it->second.index32 == index32 && it->second.device == dev &&
        it->second.kernel.same_structure(k))
      return &it->second;
  return nullptr;
}

const Compiled& get_function(const kir::Kernel& k, int nd, bool index32, int dev) {
  if (const Compiled* hit = find_function(k, nd, index32, dev)) {
    ++counters().memory_cache_hits;
    return *hit;
  }
  const uint64_t h = key_hash(k, nd, index32, dev);
  auto& c = module_cache();
  const cuda::DeviceInfo& info = cuda::device(dev);
  const int arch = info.sm_major * 10 + info.sm_minor;
  cudagen::Source src = cudagen::generate(k, nd, index32);
  // Everything the image depends on: the source, the compiler and the target.
  const std::string key =
      fmt::format("{}\nnvrtc {} sm_{}", src.code, cudagen::nvrtc_version(), arch);
  std::string image;
  if (auto hit = disk_cache::load("cuda", key)) {
    image = std::move(*hit);
    ++counters().disk_cache_hits;
  } else {
    cudagen::Image img = cudagen::compile(src.code, k.name, arch, /*want_cubin=*/true);
    ++counters().kernels_compiled;
    if (config().debug >= 1)
      fmt::print(stderr, "[tj] NVRTC compiled {} for {}_{} in {:.1f} ms\n", k.name,
                 img.cubin ? "sm" : "compute", img.arch, img.compile_ms);
    image = std::move(img.data);
    disk_cache::store("cuda", key, image);
  }
  if (config().debug >= 3) fmt::print(stderr, "{}\n{}", k.str(), src.code);
  auto t0 = std::chrono::steady_clock::now();
  cuda::CUmodule mod = nullptr;
  TJ_CU(cuModuleLoadData(&mod, image.c_str()));
  if (config().debug >= 1)
    fmt::print(
        stderr, "[tj] loaded module of {} in {:.1f} ms\n", k.name,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  Compiled entry{k, nd, index32, dev, nullptr, src.may_fail};
  TJ_CU(cuModuleGetFunction(&entry.fn, mod, cudagen::kEntry));
  std::lock_guard lock(c.mu);
  return c.map.emplace(h, std::move(entry))->second;
}

// The per-device int32 that kernels OR their error bits into.
cuda::CUdeviceptr error_word(int dev) {
  static std::mutex mu;
  static std::map<int, cuda::CUdeviceptr> words;
  std::lock_guard lock(mu);
  auto it = words.find(dev);
  if (it == words.end()) it = words.emplace(dev, cuda::allocate(dev, 4)).first;
  return it->second;
}

// What a launch needs compiled.
struct Need {
  const kir::Kernel* kernel;
  int nd;
  bool index32;
  int dev;
  int64_t total; // domain elements
};

Need need_of(const Launch& l) {
  int dev = 0;
  for (const auto& s : l.slots)
    if (s.storage) dev = s.storage->device().index();
  CudaForm f = cuda_form(l);
  return {&l.kernel, f.nd, f.index32, dev, f.total};
}

int64_t pow2_at_least(int64_t x) {
  int64_t p = 1;
  while (p < x)
    p <<= 1;
  return p;
}

} // namespace

void prepare_cuda(const std::vector<const Launch*>& launches) {
  std::vector<Need> missing;
  for (const Launch* l : launches) {
    Need n = need_of(*l);
    if (find_function(*n.kernel, n.nd, n.index32, n.dev)) continue;
    bool dup = false;
    for (const Need& m : missing)
      dup |= m.nd == n.nd && m.index32 == n.index32 && m.dev == n.dev &&
             m.kernel->same_structure(*n.kernel);
    if (!dup) missing.push_back(n);
  }
  if (missing.size() < 2) return;
  // NVRTC runs on one thread per program: compile the schedule's new kernels side by side.
  // Errors are left for execute_cuda to raise, in launch order.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < missing.size();) {
      try {
        get_function(*missing[i].kernel, missing[i].nd, missing[i].index32, missing[i].dev);
      } catch (...) {
      }
    }
  };
  const size_t n =
      std::min<size_t>(missing.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n; ++t)
    threads.emplace_back(work);
  work();
  for (auto& t : threads)
    t.join();
}

void execute_cuda(const Launch& l) {
  const kir::Kernel& k = l.kernel;
  const Need need = need_of(l);
  const int dev = need.dev, nd = need.nd;
  const int64_t total = need.total;
  const Compiled& fn = get_function(k, nd, need.index32, dev);
  const cuda::DeviceInfo& info = cuda::device(dev);
  const bool reduces = k.has_row_loops();
  const int64_t r = reduces ? l.r : 1;
  // Threads per output. Along a contiguous reduction: a warp per output (coalesced rows, no
  // block barriers) when outputs fill the device, else up to a block. Across a strided one:
  // one thread per output (neighbouring outputs are neighbours in memory) when they fill it.
  int64_t group = 1;
  if (reduces) {
    bool contiguous_r = false;
    for (const auto& s : k.slots)
      contiguous_r |= s.role == kir::Slot::Role::Input && s.rstride == kir::StrideKind::Contiguous;
    const int64_t resident = int64_t(info.sm_count) * info.max_threads_per_sm;
    const int64_t want = pow2_at_least((r + 7) / 8); // about 8 elements per thread
    if (contiguous_r)
      group =
          std::clamp<int64_t>(want, 1, total * 32 >= 2 * resident ? 32 : cudagen::kBlockThreads);
    else if (total < resident)
      group = std::clamp<int64_t>(want, 1, cudagen::kBlockThreads);
  }

  const size_t ns = k.slots.size();
  std::vector<uint64_t> words;
  words.reserve(cudagen::arg_words(k, nd));
  auto put = [&](int64_t v) { words.push_back(static_cast<uint64_t>(v)); };
  put(total);
  put(r);
  put(group);
  for (int64_t d : l.domain)
    put(d);
  if (l.domain.empty()) put(1);
  for (const auto& s : l.slots)
    put(s.base);
  for (const auto& s : l.slots)
    for (int d = 0; d < nd; ++d)
      put(l.domain.empty() ? 0 : s.strides[d]);
  for (const auto& s : l.slots)
    put(s.rstride);
  for (uint64_t p : l.params)
    words.push_back(p);
  if (l.params.empty()) put(0);
  for (const auto& s : l.slots)
    words.push_back(s.storage ? reinterpret_cast<uint64_t>(s.storage->data()) : 0);
  cuda::CUdeviceptr err = fn.may_fail ? error_word(dev) : 0;
  words.push_back(err);
  if (words.size() != cudagen::arg_words(k, nd) || ns != l.slots.size())
    throw Error("internal error: CUDA launch arguments do not match the kernel");

  const int64_t per_block = reduces ? cudagen::kBlockThreads / group : cudagen::kBlockThreads;
  const int64_t waves = int64_t(info.sm_count) * (info.max_threads_per_sm / cudagen::kBlockThreads);
  const int64_t blocks = std::clamp<int64_t>((total + per_block - 1) / per_block, 1, waves);

  if (err) TJ_CU(cuMemsetD32Async(err, 0, 1, info.stream));
  auto t0 = std::chrono::steady_clock::now();
  void* params[] = {words.data()};
  TJ_CU(cuLaunchKernel(fn.fn, unsigned(blocks), 1, 1, cudagen::kBlockThreads, 1, 1, 0, info.stream,
                       params, nullptr));
  ++counters().kernels_launched;
  if (config().debug >= 1) {
    cuda::synchronize(dev);
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr,
               "[tj] launched {} on cuda:{} over [{}] (r {}, group {}, {} blocks) in {:.1f} us\n",
               k.name, dev, fmt::join(l.domain, ", "), r, group, blocks, us);
  }
  if (err) {
    int32_t flag = 0;
    cuda::copy_to_host(dev, &flag, err, sizeof(flag));
    raise_kernel_errors(flag);
  }
}

} // namespace tj::rt
