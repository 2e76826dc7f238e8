// The CPU executor: walks each launch's outer dims and calls the kernel per row.
#include <fmt/format.h>

#include <atomic>
#include <chrono>

#include "kernel_cache.h"
#include "launch.h"
#include "stats_counters.h"
#include "tensorjit/config.h"
#include "tensorjit/error.h"
#include "thread_pool.h"

namespace tj::rt {
namespace {

// Elements below which a launch runs on the calling thread only.
constexpr int64_t kGrain = 32768;

void run_launch(const Launch& l, llvmjit::KernelFn fn) {
  const size_t nd = l.domain.size(), ns = l.slots.size();
  int64_t total = 1;
  for (int64_t d : l.domain)
    total *= d;
  std::vector<void*> ptrs(ns, nullptr);
  std::vector<int64_t> inner(ns), rstride(ns);
  for (size_t s = 0; s < ns; ++s) {
    if (l.slots[s].storage) ptrs[s] = l.slots[s].storage->data();
    inner[s] = l.slots[s].strides[nd - 1];
    rstride[s] = l.slots[s].rstride;
  }
  std::atomic<int32_t> err{0};
  // Work per output element is r: reductions split over fewer elements.
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(l.r, 1));
  parallel_for(total, grain, l.r > 1 ? 1 : 64, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(nd), base(ns);
    int64_t rem = begin;
    for (size_t d = nd; d-- > 0;) {
      idx[d] = rem % l.domain[d];
      rem /= l.domain[d];
    }
    int32_t local_err = 0;
    for (int64_t pos = begin; pos < end;) {
      int64_t n = std::min(l.domain[nd - 1] - idx[nd - 1], end - pos);
      for (size_t s = 0; s < ns; ++s) {
        int64_t b = l.slots[s].base;
        for (size_t d = 0; d < nd; ++d)
          b += idx[d] * l.slots[s].strides[d];
        base[s] = b;
      }
      fn(n, ptrs.data(), base.data(), inner.data(), l.params.data(), &local_err, l.r,
         rstride.data());
      pos += n;
      idx[nd - 1] = 0;
      for (size_t d = nd - 1; d-- > 0;) {
        if (++idx[d] < l.domain[d]) break;
        idx[d] = 0;
      }
    }
    if (local_err) err = 1;
  });
  if (err) throw Error("ZeroDivisionError");
}

} // namespace

void execute(const std::vector<Launch>& launches) {
  auto on_gpu = [](const Launch& l) {
    for (const auto& s : l.slots)
      if (s.storage && s.storage->device().is_cuda()) return true;
    return false;
  };
  std::vector<const Launch*> gpu;
  for (const auto& l : launches)
    if (on_gpu(l)) gpu.push_back(&l);
  if (gpu.size() > 1) prepare_cuda(gpu);
  for (const auto& l : launches) {
    if (on_gpu(l)) {
      execute_cuda(l);
      continue;
    }
    auto code = get_kernel(l.kernel);
    auto t0 = std::chrono::steady_clock::now();
    run_launch(l, code->fn);
    ++counters().kernels_launched;
    if (config().debug >= 1) {
      double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      fmt::print(stderr, "[tj] launched {} over [{}] in {:.1f} us\n", l.kernel.name,
                 fmt::join(l.domain, ", "), us);
    }
  }
}

} // namespace tj::rt
