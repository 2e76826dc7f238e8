// tj-bench: fused-kernel workloads timed against an unfused run, a plain C++
// loop and the machine's copy bandwidth, all measured in the same process.
#include <fmt/format.h>
#include <tensorjit/tensorjit.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cuda_driver.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median wall time of `fn` over `reps` runs, after a warm-up.
double time_median(int reps, const std::function<void()>& fn) {
  // Warm up for 50 ms at least, not one call: after a single-threaded stretch (the C++ loop) the
  // other cores took several calls to come back to speed (sum: 5.5, 3.5, 2.9, 2.3, 1.7, then
  // 1.3 ms a call).
  const auto warm = Clock::now();
  do
    fn();
  while (seconds_since(warm) < 0.05);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    fn();
    t.push_back(seconds_since(t0));
  }
  return median(t);
}

// Copies [b, e) of src to dst with non-temporal stores where the compiler has them (SSE2 on
// x86-64): the lines written are not read first, as a kernel's streaming stores do not.
void stream_copy(char* dst, const char* src, size_t b, size_t e) {
#if defined(__SSE2__)
  size_t i = b;
  for (; i < e && (reinterpret_cast<uintptr_t>(dst + i) & 15) != 0; ++i)
    dst[i] = src[i];
  for (; i + 64 <= e; i += 64)
    for (size_t k = 0; k < 64; k += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + k),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + k)));
  _mm_sfence();
  std::memcpy(dst + i, src + i, e - i);
#else
  std::memcpy(dst + b, src + b, e - b);
#endif
}

// Copy bandwidth with as many threads as tensorjit uses: the roofline for kernels that read one
// array and write another. The faster of glibc's memcpy and a copy with non-temporal stores
// (which memcpy may not use: on some machines it is the slower of the two).
double copy_seconds(size_t bytes, int threads, int reps) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  auto timed = [&](void (*copy)(char*, const char*, size_t, size_t)) {
    return time_median(reps, [&] {
      std::vector<std::thread> pool;
      size_t per = (bytes / threads + 63) / 64 * 64;
      for (int t = 0; t < threads; ++t) {
        size_t b = std::min(bytes, t * per), e = std::min(bytes, (t + 1) * per);
        pool.emplace_back([&, b, e] { copy(dst.data(), src.data(), b, e); });
      }
      for (auto& th : pool)
        th.join();
    });
  };
  const double with_memcpy = timed(
      [](char* dst, const char* src, size_t b, size_t e) { std::memcpy(dst + b, src + b, e - b); });
  return std::min(with_memcpy, timed(stream_copy));
}

tj::Tensor gelu_tanh(const tj::Tensor& x) {
  return 0.5 * x * (1 + tj::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
}

// Device-to-device copy bandwidth through the driver (bytes read + written per second).
double cuda_copy_gbps(size_t bytes, int reps) {
  namespace cu = tj::rt::cuda;
  const int dev = 0;
  const cu::DeviceInfo& info = cu::device(dev);
  cu::CUdeviceptr src = cu::allocate(dev, bytes), dst = cu::allocate(dev, bytes);
  cu::CUevent e0, e1;
  TJ_CU(cuEventCreate(&e0, 0));
  TJ_CU(cuEventCreate(&e1, 0));
  std::vector<double> t;
  for (int i = 0; i <= reps; ++i) {
    TJ_CU(cuEventRecord(e0, info.stream));
    TJ_CU(cuMemcpyDtoDAsync(dst, src, bytes, info.stream));
    TJ_CU(cuEventRecord(e1, info.stream));
    TJ_CU(cuEventSynchronize(e1));
    float ms = 0;
    TJ_CU(cuEventElapsedTime(&ms, e0, e1));
    if (i > 0) t.push_back(ms / 1e3); // the first run warms up
  }
  cu::driver().cuEventDestroy(e0);
  cu::driver().cuEventDestroy(e1);
  cu::release(dev, src, bytes);
  cu::release(dev, dst, bytes);
  return 2.0 * static_cast<double>(bytes) / median(t) / 1e9;
}

struct Row {
  std::string workload, variant;
  double ms, gbps;
};

} // namespace

int main(int argc, char** argv) {
  int64_t n = 0;
  int reps = 9;
  std::string json;
  tj::Device device = tj::kCPU;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--size" && i + 1 < argc)
      n = std::atoll(argv[++i]);
    else if (a == "--device" && i + 1 < argc)
      device = tj::Device(std::string(argv[++i]));
    else if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (a == "--help" || a == "-h") {
      fmt::print("usage: tj-bench [--device cpu|cuda] [--size N] [--reps R] [--json FILE]\n"
                 "Times fused tensorjit kernels against an unfused run (TJ_FUSION=0),\n"
                 "a plain C++ loop (CPU) and the measured copy bandwidth.\n"
                 "N defaults to 2^24 elements on the CPU and 2^28 on a GPU.\n");
      return 0;
    } else {
      fmt::print(stderr, "tj-bench: unknown argument '{}' (see --help)\n", a);
      return 2;
    }
  }
  const bool gpu = device.is_cuda();
  if (n == 0) n = gpu ? int64_t{1} << 28 : int64_t{1} << 24;
  int threads = tj::config().num_threads > 0
                    ? tj::config().num_threads
                    : static_cast<int>(std::thread::hardware_concurrency());
  const double bytes = 2.0 * static_cast<double>(n) * sizeof(float); // read once, write once
  double copy_gbps = 0;
  if (gpu) {
    const auto& info = tj::rt::cuda::device(device.index() < 0 ? 0 : device.index());
    copy_gbps = cuda_copy_gbps(static_cast<size_t>(bytes / 2), reps);
    fmt::print("device: {} (sm_{}{}, {} SMs), device-to-device copy {:.1f} GB/s (median of {})\n",
               info.name, info.sm_major, info.sm_minor, info.sm_count, copy_gbps, reps);
    fmt::print("times are end to end: graph, schedule, launch and a synchronize\n\n");
  } else {
    copy_gbps = bytes / copy_seconds(static_cast<size_t>(bytes / 2), threads, reps) / 1e9;
  }
  // Materializes `t` and waits for the device.
  auto run = [&](const tj::Tensor& t) {
    t.eval();
    if (gpu) tj::cuda::synchronize();
  };
  const tj::TensorOptions on = tj::TensorOptions().device(device);

  std::vector<Row> rows;
  auto add = [&](std::string w, std::string v, double s) {
    rows.push_back({w, v, s * 1e3, bytes / s / 1e9});
  };

  tj::Tensor x = tj::rand({n}, on);
  run(x);
  auto fused_unfused = [&](const std::string& name, double bytes_moved,
                           const std::function<tj::Tensor()>& fn) {
    auto row = [&](const std::string& v, double s) {
      rows.push_back({name, v, s * 1e3, bytes_moved / s / 1e9});
    };
    row("fused", time_median(reps, [&] { run(fn()); }));
    tj::config().fusion = false;
    row("unfused", time_median(std::max(3, reps / 3), [&] { run(fn()); }));
    tj::config().fusion = true;
  };
  // The generated kernel closest to the copy: what every elementwise kernel's memory costs.
  add("copy", "clone (generated kernel)", time_median(reps, [&] { run(x.clone()); }));
  fused_unfused("gelu_tanh", bytes, [&] { return gelu_tanh(x); });
  if (!gpu) {
    std::vector<float> in = x.to_vector<float>(), out(in.size());
    add("gelu_tanh", "c++ loop (1 thread)", time_median(std::max(3, reps / 3), [&] {
          for (size_t i = 0; i < in.size(); ++i) {
            float v = in[i];
            out[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
          }
        }));
  }
  // Reductions: bytes are the input read once (and the output written once).
  const double in_bytes = static_cast<double>(n) * sizeof(float);
  fused_unfused("sum", in_bytes, [&] { return x.sum(); });
  // Row workloads over half the elements (4096 x 2048 and 8192 x 1024 at the default size).
  const double half_bytes = in_bytes / 2;
  tj::Tensor half = x.narrow(0, 0, n / 2);
  tj::Tensor wide = half.reshape({-1, 2048}), m = half.reshape({-1, 1024});
  fused_unfused("softmax", 2 * half_bytes, [&] { return tj::nn::functional::softmax(wide, 1); });
  tj::Tensor w = tj::rand({1024}, on), b = tj::rand({1024}, on);
  tj::eval({w, b});
  fused_unfused("layer_norm", 2 * half_bytes,
                [&] { return tj::nn::functional::layer_norm(m, {1024}, w, b); });
  fused_unfused("cumsum", 2 * half_bytes, [&] { return m.cumsum(1); });
  {
    // Strided access: an elementwise op over a transposed matrix (strided reads,
    // contiguous writes), and an in-place add_ into a column slice of a matrix
    // (read and written in place through the view).
    const int64_t s = 4096;
    tj::Tensor big = tj::rand({s, s}, on);
    run(big);
    const double mat_bytes = 2.0 * double(s) * double(s) * sizeof(float);
    fused_unfused("transposed", mat_bytes, [&] { return big.t() * 2 + 1; });
    // Narrow rows: a bias over 24 features, so that every kernel call runs a row of 24 (shorter
    // than the main vector loop's step: the vector epilogue and the remainder do the work).
    const int64_t feats = 24;
    tj::Tensor narrow = tj::rand({s * s / feats, feats}, on), bias = tj::rand({feats}, on);
    tj::eval({narrow, bias});
    fused_unfused("narrow rows", mat_bytes, [&] { return tj::exp(narrow) * 2 + bias; });
    // Gathered rows: an embedding lookup of random rows of a table, scaled (a Gather node fused
    // with the scale; unfused, the selection and the product are a kernel each).
    tj::Tensor table = tj::rand({4 * s, feats * 11}, on);
    tj::Tensor ids = tj::randint(0, 4 * s, {s * s / (feats * 11)}, on);
    tj::eval({table, ids});
    fused_unfused("gather rows", mat_bytes, [&] { return tj::index_select(table, 0, ids) * 2; });
    // Its gradient: the gathered rows' gradients added into a zero table (a Scatter that
    // accumulates; repeated ids add up), through backward.
    tj::Tensor weights = table.detach().requires_grad_();
    fused_unfused("scatter add", mat_bytes, [&] {
      weights.set_grad(tj::Tensor());
      (tj::index_select(weights, 0, ids) * 2).sum().backward();
      return weights.grad();
    });
    tj::Tensor target = tj::zeros({2 * s, s}, on); // its half: as large as the copy's buffers
    run(target);
    double t = time_median(reps, [&] {
      target.narrow(1, 0, s / 2).add_(1);
      run(target);
    });
    const double moved = mat_bytes; // half the columns, read and written
    rows.push_back({"slice add_", "in place", t * 1e3, moved / t / 1e9});
  }
  double matmul_gflops = 0, mlp_fused_ms = 0, mlp_unfused_ms = 0;
  {
    tj::Tensor a = tj::rand({1024, 1024}, on), c = tj::rand({1024, 1024}, on);
    tj::eval({a, c});
    double s = time_median(3, [&] { run(tj::matmul(a, c)); });
    matmul_gflops = 2.0 * 1024 * 1024 * 1024 / s / 1e9;
    fmt::print("matmul 1024x1024x1024 float32: {:.3f} ms, {:.1f} GFLOP/s\n", s * 1e3,
               matmul_gflops);
    if (gpu) {
      const int64_t g = 8192;
      tj::Tensor p = tj::rand({g, g}, on), q = tj::rand({g, g}, on);
      tj::eval({p, q});
      double t = time_median(reps, [&] { run(tj::matmul(p, q)); });
      fmt::print("matmul {0}x{0}x{0} float32 (cuBLAS, no TF32): {1:.2f} ms, {2:.1f} TFLOP/s\n", g,
                 t * 1e3, 2.0 * double(g) * g * g / t / 1e12);
    }
  }

  {
    // One training step of a 784-512-10 MLP (ReLU, MSE, SGD): forward, backward
    // and update, with fusion and without.
    const int64_t batch = 128;
    namespace F = tj::nn::functional;
    tj::Tensor xb = tj::randn({batch, 784}, on), yb = tj::randn({batch, 10}, on);
    tj::Tensor w1 = (tj::randn({512, 784}, on) * 0.05).requires_grad_();
    tj::Tensor b1 = tj::zeros({512}, on).requires_grad_();
    tj::Tensor w2 = (tj::randn({10, 512}, on) * 0.05).requires_grad_();
    tj::Tensor b2 = tj::zeros({10}, on).requires_grad_();
    tj::eval({xb, yb, w1, b1, w2, b2});
    tj::optim::SGD opt({w1, b1, w2, b2}, 1e-3);
    auto step = [&] {
      opt.zero_grad();
      tj::Tensor loss = F::mse_loss(F::linear(F::relu(F::linear(xb, w1, b1)), w2, b2), yb);
      loss.backward();
      opt.step();
      if (gpu) tj::cuda::synchronize();
    };
    // Multiply-adds of the forward pass; the backward does two products per forward one.
    const double flops = 3 * 2.0 * batch * (784.0 * 512 + 512.0 * 10);
    double fused = time_median(reps, step);
    tj::config().fusion = false;
    double unfused = time_median(std::max(3, reps / 3), step);
    mlp_fused_ms = fused * 1e3;
    mlp_unfused_ms = unfused * 1e3;
    tj::config().fusion = true;
    fmt::print("mlp step 784-512-10, batch {}: fused {:.2f} ms ({:.1f} GFLOP/s, {:.0f}% of the "
               "matmul's), unfused {:.2f} ms: fused is {:.2f}x faster\n",
               batch, fused * 1e3, flops / fused / 1e9, 100 * flops / fused / 1e9 / matmul_gflops,
               unfused * 1e3, unfused / fused);
  }

  // Compile latency: each kernel below has a structure not seen before, and the disk cache is
  // off so that none comes from an earlier run.
  const std::string cache_dir = tj::config().cache_dir;
  tj::config().cache_dir.clear();
  std::vector<double> compile_ms;
  tj::Tensor small = tj::rand({1024}, on);
  run(small);
  for (int k = 0; k < std::max(5, reps); ++k) {
    tj::Tensor e = tj::exp(small) * small;
    for (int j = 0; j <= k; ++j)
      e = e + small * static_cast<double>(j + 2);
    auto before = tj::stats().kernels_compiled;
    auto t0 = Clock::now();
    run(e);
    double ms = seconds_since(t0) * 1e3;
    if (tj::stats().kernels_compiled > before) compile_ms.push_back(ms);
  }
  tj::config().cache_dir = cache_dir;
  // A cache hit: the same structure on new data, end to end (build, schedule, look up, run).
  tj::Tensor tiny = tj::rand({16}, on);
  run(tiny);
  double hit_us = time_median(std::max(25, reps), [&] { run(tj::exp(tiny) * tiny + 1); }) * 1e6;

  if (!gpu) {
    // The copy again, after the workloads: a neighbour's burst during one measurement of a noisy
    // machine would otherwise flatter every fraction. The faster of the two is the roofline.
    const double again = bytes / copy_seconds(static_cast<size_t>(bytes / 2), threads, reps) / 1e9;
    fmt::print("machine: {} threads, copy bandwidth {:.1f} GB/s (the faster of {:.1f} before and "
               "{:.1f} after the workloads, medians of {})\n\n",
               threads, std::max(copy_gbps, again), copy_gbps, again, reps);
    copy_gbps = std::max(copy_gbps, again);
  }
  fmt::print("{:<12} {:<22} {:>10} {:>10} {:>12}\n", "workload", "variant", "ms", "GB/s",
             "% of copy");
  for (const auto& r : rows)
    fmt::print("{:<12} {:<22} {:>10.2f} {:>10.1f} {:>11.1f}%\n", r.workload, r.variant, r.ms,
               r.gbps, 100 * r.gbps / copy_gbps);
  fmt::print("\n");
  for (size_t i = 0; i + 1 < rows.size(); ++i)
    if (rows[i].variant == "fused" && rows[i + 1].variant == "unfused")
      fmt::print("{}: fused is {:.2f}x faster than unfused\n", rows[i].workload,
                 rows[i + 1].ms / rows[i].ms);
  auto ms_of = [&](const std::string& workload, const std::string& variant) {
    for (const auto& r : rows)
      if (r.workload == workload && r.variant == variant) return r.ms;
    return 0.0;
  };
  if (!gpu)
    fmt::print("gelu_tanh: fused is {:.2f}x faster than the c++ loop\n",
               ms_of("gelu_tanh", "c++ loop (1 thread)") / ms_of("gelu_tanh", "fused"));
  fmt::print("(sum reads only: its GB/s can exceed the copy's read+write rate)\n");
  fmt::print("compile latency of one fused elementwise kernel: median {:.2f} ms over {}\n",
             compile_ms.empty() ? 0.0 : median(compile_ms), compile_ms.size());
  fmt::print("cache hit, end to end (16 elements): median {:.1f} us\n", hit_us);

  if (!json.empty()) {
    std::ofstream f(json);
    f << "{\n  \"device\": \"" << device.str() << "\",\n  \"copy_gbps\": " << copy_gbps
      << ",\n  \"threads\": " << threads << ",\n  \"rows\": [\n";
    for (size_t i = 0; i < rows.size(); ++i)
      f << fmt::format(
          "    {{\"workload\": \"{}\", \"variant\": \"{}\", \"ms\": {:.4f}, \"gbps\": {:.3f}, "
          "\"fraction_of_copy\": {:.4f}}}{}\n",
          rows[i].workload, rows[i].variant, rows[i].ms, rows[i].gbps, rows[i].gbps / copy_gbps,
          i + 1 < rows.size() ? "," : "");
    f << fmt::format("  ],\n  \"matmul_gflops\": {:.3f},\n  \"mlp_step_ms\": {{\"fused\": {:.4f}, "
                     "\"unfused\": {:.4f}}},\n",
                     matmul_gflops, mlp_fused_ms, mlp_unfused_ms);
    f << fmt::format("  \"compile_ms_median\": {:.4f},\n  \"cache_hit_us_median\": {:.3f}\n}}\n",
                     compile_ms.empty() ? 0.0 : median(compile_ms), hit_us);
  }
  return 0;
}
