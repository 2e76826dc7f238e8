// tj-bench: fused-kernel workloads timed against an unfused run, a plain C++
// loop and the machine's copy bandwidth, all measured in the same process.
#include <fmt/format.h>
#include <tensorjit/tensorjit.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "runtime/cuda_driver.h"
#include "tools/tj-bench/peers.h"
#include "tools/tj-bench/report.h"

namespace {

using namespace tj::bench;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    R"(usage: tj-bench [--device cpu|cuda[:N]] [--size N] [--reps R] [--only NAME,...]
                [--json FILE] [--csv FILE] [--chart FILE.svg]

Times fused tensorjit kernels against an unfused run (TJ_FUSION=0), a plain
C++ loop (CPU) and the copy bandwidth measured in the same run.

  --device DEVICE    cpu (default) or cuda, cuda:N
  --size N           elements of the 1-D workloads, a multiple of 4096 (default
                     2^24 on the CPU, 2^28 on a GPU); the matrices scale with it
                     up to 4096x4096
  --reps R           timed runs per figure; the median counts (default 9)
  --only NAME,...    run only these workloads (the names the table prints;
                     '_' stands for a space): copy, gelu_tanh, sum, softmax,
                     layer_norm, cumsum, cumsum 1-d, cumsum cols, transposed,
                     narrow rows, gather rows, scatter add, slice add_, matmul,
                     linalg, mlp step, compile, cache hit, op chain,
                     materialized op
  --json FILE        write the figures as JSON
  --csv FILE         write the figures as CSV, one line per workload
  --chart FILE.svg   draw them as an SVG chart
  -h, --help         this text

Progress goes to stderr, the table to stdout. Exit status: 0 success, 1 an
error while running, 2 a usage error.
)";

// A mistake in the command line: exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  bool help = false;
  int64_t size = 0; // 0: the device's default
  int reps = 9;
  tj::Device device = tj::kCPU;
  std::vector<std::string> only;
  std::string json, csv, chart;
};

int64_t parse_count(const std::string& flag, const std::string& value, int64_t multiple_of) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || v <= 0 || v % multiple_of != 0)
    throw UsageError(fmt::format("{} takes a positive {}, got '{}'", flag,
                                 multiple_of == 1 ? std::string("integer")
                                                  : fmt::format("multiple of {}", multiple_of),
                                 value));
  return v;
}

Options parse_args(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    // "--flag=value" and "--flag value" are the same.
    std::string flag = args[i], value;
    bool inline_value = false;
    if (flag.rfind("--", 0) == 0 && flag.find('=') != std::string::npos) {
      value = flag.substr(flag.find('=') + 1);
      flag = flag.substr(0, flag.find('='));
      inline_value = true;
    }
    auto take = [&]() -> std::string {
      if (inline_value) return value;
      if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", flag));
      return args[++i];
    };
    if ((flag == "--help" || flag == "-h") && !inline_value) {
      o.help = true;
    } else if (flag == "--size") {
      o.size = parse_count(flag, take(), 4096);
    } else if (flag == "--reps") {
      o.reps = static_cast<int>(std::min<int64_t>(parse_count(flag, take(), 1), 1 << 20));
    } else if (flag == "--device") {
      std::string v = take();
      try {
        o.device = tj::Device(v);
      } catch (const std::exception&) {
        throw UsageError(fmt::format("--device takes cpu, cuda or cuda:N, got '{}'", v));
      }
    } else if (flag == "--only") {
      std::string v = take();
      for (size_t b = 0, e; b <= v.size(); b = e + 1) {
        e = std::min(v.find(',', b), v.size());
        if (e > b) o.only.push_back(v.substr(b, e - b));
      }
      if (o.only.empty()) throw UsageError("--only needs at least one workload name");
    } else if (flag == "--json") {
      o.json = take();
    } else if (flag == "--csv") {
      o.csv = take();
    } else if (flag == "--chart") {
      o.chart = take();
    } else {
      throw UsageError(fmt::format("unknown argument '{}'", args[i]));
    }
  }
  return o;
}

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
double cuda_copy_gbps(int dev, size_t bytes, int reps) {
  namespace cu = tj::rt::cuda;
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

// The CPU's model name as /proc/cpuinfo gives it ("AMD EPYC 9654 96-Core Processor").
std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      std::string m = line.substr(line.find(':') + 1);
      m.erase(0, m.find_first_not_of(" \t"));
      if (!m.empty()) return m;
    }
  return "unknown CPU";
}

std::string today() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[16];
  return std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm) ? buf : "";
}

// Names on the command line may spell a space as '_' ("narrow_rows").
std::string normalized(std::string s) {
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

// Fails before the run, not after minutes of it, when an output file's folder is missing.
void check_output_path(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir))
    throw tj::Error(fmt::format("{} {}: no directory '{}'", flag, path, dir.string()));
}

void write_output(const std::string& path, const Report& r,
                  void (*writer)(const Report&, std::ostream&)) {
  if (path.empty()) return;
  std::ofstream f(path);
  if (f) writer(r, f);
  f.close();
  if (!f) throw tj::Error(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
}

// A workload: the name --only selects and the progress shows, its shape, and the code that
// times it and adds its rows to the report.
struct Workload {
  std::string name, shape;
  std::function<void()> run;
};

int bench(const Options& o) {
  for (const auto& [flag, path] :
       {std::pair{"--json", o.json}, std::pair{"--csv", o.csv}, std::pair{"--chart", o.chart}})
    check_output_path(flag, path);
  const tj::Device device = o.device;
  const bool gpu = device.is_cuda();
  const int reps = o.reps;
  const int64_t n = o.size ? o.size : gpu ? int64_t{1} << 28 : int64_t{1} << 24;
  // The matrices of the strided workloads: 4096 x 4096 at the default size, smaller for a small
  // --size (a power of two whose square is at most n).
  int64_t s = 4096;
  while (s > 64 && s * s > n)
    s /= 2;

  Report report;
  report.device = device.str();
  report.date = today();
  report.reps = reps;
  report.size = n;
  report.threads = tj::config().num_threads > 0
                       ? tj::config().num_threads
                       : static_cast<int>(std::thread::hardware_concurrency());
  const int gpu_index = device.index() < 0 ? 0 : device.index();
  if (gpu) {
    // Throws "CUDA is not available: ..." where there is no GPU.
    const auto& info = tj::rt::cuda::device(gpu_index);
    report.machine =
        fmt::format("{} (sm_{}{}, {} SMs)", info.name, info.sm_major, info.sm_minor, info.sm_count);
  } else {
    report.machine = fmt::format("{} ({} cores)", cpu_model(), std::thread::hardware_concurrency());
  }

  const double bytes = 2.0 * static_cast<double>(n) * sizeof(float); // read once, write once
  // Materializes `t` and waits for the device.
  auto run = [&](const tj::Tensor& t) {
    t.eval();
    if (gpu) tj::cuda::synchronize();
  };
  const tj::TensorOptions on = tj::TensorOptions().device(device);
  auto& rows = report.rows;
  auto fused_unfused = [&](Row row, const std::function<tj::Tensor()>& fn) {
    row.variants.push_back(
        {"fused", Role::Fused, 1e3 * time_median(reps, [&] { run(fn()); }), reps});
    tj::config().fusion = false;
    const int unfused_reps = std::max(3, reps / 3);
    row.variants.push_back({"unfused", Role::Unfused,
                            1e3 * time_median(unfused_reps, [&] { run(fn()); }), unfused_reps});
    tj::config().fusion = true;
    rows.push_back(std::move(row));
  };

  tj::Tensor x;
  // Row workloads run over half the elements (4096 x 2048 and 8192 x 1024 at the default size).
  const int64_t half = n / 2;
  const double in_bytes = static_cast<double>(n) * sizeof(float);
  const double mat_bytes = 2.0 * double(s) * double(s) * sizeof(float);
  const int64_t feats = 24; // narrow rows: shorter than the main vector loop's step
  const int64_t gathered = s * s / (feats * 11);
  const int64_t batch = 128;
  std::vector<Workload> all;
  // The generated kernel closest to the copy: what every elementwise kernel's memory costs.
  all.push_back({"copy", count_text(n), [&] {
                   rows.push_back({"copy", count_text(n), Kind::Memory, bytes, {}});
                   rows.back().variants.push_back({"clone (generated kernel)", Role::Fused,
                                                   1e3 * time_median(reps, [&] { run(x.clone()); }),
                                                   reps});
                 }});
  all.push_back({"gelu_tanh", count_text(n), [&] {
                   fused_unfused({"gelu_tanh", count_text(n), Kind::Memory, bytes, {}},
                                 [&] { return gelu_tanh(x); });
                   if (gpu) return;
                   std::vector<float> in = x.to_vector<float>(), out(in.size());
                   const int loop_reps = std::max(3, reps / 3);
                   double t = time_median(loop_reps, [&] {
                     for (size_t i = 0; i < in.size(); ++i) {
                       float v = in[i];
                       out[i] = 0.5f * v *
                                (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
                     }
                   });
                   rows.back().variants.push_back(
                       {"c++ loop (1 thread)", Role::Baseline, 1e3 * t, loop_reps});
                 }});
  // Reductions: bytes are the input read once (and the output written once).
  all.push_back(
      {"sum", count_text(n), [&] {
         fused_unfused({"sum", count_text(n), Kind::Memory, in_bytes, {}}, [&] { return x.sum(); });
       }});
  const std::string wide_shape = fmt::format("{}x2048", half / 2048);
  const std::string m_shape = fmt::format("{}x1024", half / 1024);
  all.push_back({"softmax", wide_shape, [&] {
                   tj::Tensor wide = x.narrow(0, 0, half).reshape({-1, 2048});
                   fused_unfused({"softmax", wide_shape, Kind::Memory, in_bytes, {}},
                                 [&] { return tj::nn::functional::softmax(wide, 1); });
                 }});
  all.push_back({"layer_norm", m_shape, [&] {
                   tj::Tensor m = x.narrow(0, 0, half).reshape({-1, 1024});
                   tj::Tensor w = tj::rand({1024}, on), b = tj::rand({1024}, on);
                   tj::eval({w, b});
                   fused_unfused({"layer_norm", m_shape, Kind::Memory, in_bytes, {}},
                                 [&] { return tj::nn::functional::layer_norm(m, {1024}, w, b); });
                 }});
  all.push_back({"cumsum", m_shape, [&] {
                   tj::Tensor m = x.narrow(0, 0, half).reshape({-1, 1024});
                   fused_unfused({"cumsum", m_shape, Kind::Memory, in_bytes, {}},
                                 [&] { return m.cumsum(1); });
                 }});
  // One long row of floats: in segments over the threads (passes/split_scans), their totals
  // read first: three passes over memory where a copy makes two.
  const std::string v_shape = fmt::format("{}", half);
  all.push_back({"cumsum 1-d", v_shape, [&] {
                   tj::Tensor v = x.narrow(0, 0, half);
                   fused_unfused({"cumsum 1-d", v_shape, Kind::Memory, in_bytes, {}},
                                 [&] { return v.cumsum(0); });
                 }});
  all.push_back({"cumsum cols", m_shape, [&] {
                   tj::Tensor m = x.narrow(0, 0, half).reshape({-1, 1024});
                   fused_unfused({"cumsum cols", m_shape, Kind::Memory, in_bytes, {}},
                                 [&] { return m.cumsum(0); });
                 }});
  // Complex numbers: z * conj(w) + z over complex64, which kernels compute as pairs of floats
  // (bytes: two reads and a write of 8-byte numbers), against the same arithmetic on the parts in
  // a plain loop.
  const int64_t nc = n / 2;
  all.push_back(
      {"complex", count_text(nc), [&] {
         tj::Tensor z = tj::randn({nc}, on.dtype(tj::kComplex64));
         tj::Tensor w = tj::randn({nc}, on.dtype(tj::kComplex64));
         tj::eval({z, w});
         fused_unfused({"complex", count_text(nc), Kind::Memory, 3.0 * double(nc) * 8, {}},
                       [&] { return z * w.conj() + z; });
         if (gpu) return;
         const std::complex<float>* a = z.data_ptr<std::complex<float>>();
         const std::complex<float>* b = w.data_ptr<std::complex<float>>();
         std::vector<std::complex<float>> out(static_cast<size_t>(nc));
         const int loop_reps = std::max(3, reps / 3);
         double t = time_median(loop_reps, [&] {
           for (int64_t i = 0; i < nc; ++i) {
             const float ar = a[i].real(), ai = a[i].imag();
             const float br = b[i].real(), bi = b[i].imag();
             out[static_cast<size_t>(i)] = {ar * br + ai * bi + ar, ai * br - ar * bi + ai};
           }
         });
         rows.back().variants.push_back(
             {"c++ loop (1 thread)", Role::Baseline, 1e3 * t, loop_reps});
       }});
  // Strided access: an elementwise op over a transposed matrix (strided reads, contiguous
  // writes), of floats, then of 8-, 2- and 1-byte elements (each element size has its own
  // transposition in registers).
  const std::string square = fmt::format("{}x{}", s, s);
  all.push_back({"transposed", square, [&] {
                   tj::Tensor big = tj::rand({s, s}, on);
                   run(big);
                   fused_unfused({"transposed", square, Kind::Memory, mat_bytes, {}},
                                 [&] { return big.t() * 2 + 1; });
                   for (auto [dtype, name] : {std::pair{tj::kFloat64, "transposed f64"},
                                              {tj::kFloat16, "transposed f16"},
                                              {tj::kInt8, "transposed i8"}}) {
                     tj::Tensor typed = (big * 100).to(dtype);
                     run(typed);
                     const double typed_bytes =
                         mat_bytes / sizeof(float) * double(tj::itemsize(dtype));
                     fused_unfused({name, square, Kind::Memory, typed_bytes, {}},
                                   [&] { return typed.t() * 2 + 1; });
                   }
                 }});
  // Narrow rows: a bias over 24 features, so that every kernel call runs a row of 24 (shorter
  // than the main vector loop's step: the vector epilogue and the remainder do the work).
  const std::string narrow_shape = fmt::format("{}x{}", s * s / feats, feats);
  all.push_back({"narrow rows", narrow_shape, [&] {
                   tj::Tensor narrow = tj::rand({s * s / feats, feats}, on);
                   tj::Tensor bias = tj::rand({feats}, on);
                   tj::eval({narrow, bias});
                   fused_unfused({"narrow rows", narrow_shape, Kind::Memory, mat_bytes, {}},
                                 [&] { return tj::exp(narrow) * 2 + bias; });
                 }});
  // Gathered rows: an embedding lookup of random rows of a table, scaled (a Gather node fused
  // with the scale; unfused, the selection and the product are a kernel each); then its
  // gradient: the rows' gradients added into a zero table (a Scatter that accumulates; repeated
  // ids add up), through backward.
  const std::string gather_shape = fmt::format("{} of {}x{}", gathered, 4 * s, feats * 11);
  tj::Tensor table, ids;
  auto gather_inputs = [&] {
    if (table.defined()) return;
    table = tj::rand({4 * s, feats * 11}, on);
    ids = tj::randint(0, 4 * s, {gathered}, on);
    tj::eval({table, ids});
  };
  all.push_back({"gather rows", gather_shape, [&] {
                   gather_inputs();
                   fused_unfused({"gather rows", gather_shape, Kind::Memory, mat_bytes, {}},
                                 [&] { return tj::index_select(table, 0, ids) * 2; });
                 }});
  all.push_back({"scatter add", gather_shape, [&] {
                   gather_inputs();
                   tj::Tensor weights = table.detach().requires_grad_();
                   fused_unfused({"scatter add", gather_shape, Kind::Memory, mat_bytes, {}}, [&] {
                     weights.set_grad(tj::Tensor());
                     (tj::index_select(weights, 0, ids) * 2).sum().backward();
                     return weights.grad();
                   });
                 }});
  // An in-place add_ into a column slice of a matrix, read and written in place through the
  // view: half the columns of a matrix whose half is as large as the copy's buffers.
  const std::string slice_shape = fmt::format("{}x{}[:, :{}]", 2 * s, s, s / 2);
  all.push_back({"slice add_", slice_shape, [&] {
                   tj::Tensor target = tj::zeros({2 * s, s}, on);
                   run(target);
                   double t = time_median(reps, [&] {
                     target.narrow(1, 0, s / 2).add_(1);
                     run(target);
                   });
                   rows.push_back({"slice add_", slice_shape, Kind::Memory, mat_bytes, {}});
                   rows.back().variants.push_back({"in place", Role::Fused, 1e3 * t, reps});
                 }});
  // Products as a linear layer computes them, y = x @ w.t(), against the FMA peak (CPU) and the
  // GEMMs of OpenBLAS and oneDNN on the same data and threads where the libraries load; the 1024^3
  // float32 row first, which the MLP step is compared with.
  all.push_back(
      {"matmul",
       gpu ? "1024x1024x1024, 8192x8192x8192"
           : "square 256-2048, the MLP's, tall-thin, float64, bfloat16, a fused linear layer",
       [&] {
         if (gpu) {
           auto product = [&](int64_t k, const std::string& name, int runs) {
             tj::Tensor a = tj::rand({k, k}, on), c = tj::rand({k, k}, on);
             tj::eval({a, c});
             double t = time_median(runs, [&] { run(tj::matmul(a, c)); });
             rows.push_back({"matmul",
                             fmt::format("{0}x{0}x{0} float32", k),
                             Kind::Compute,
                             2.0 * k * k * k,
                             {}});
             rows.back().variants.push_back({name, Role::Fused, 1e3 * t, runs});
           };
           product(1024, "tensorjit", 3);
           product(8192, "cuBLAS, no TF32", reps);
           return;
         }
         report.fma_isa = fma_peak_isa();
         report.fma_peak_f32 = fma_peak_gflops(false, report.threads, 3);
         report.fma_peak_f64 = fma_peak_gflops(true, report.threads, 3);
         report.dot_peak_bf16 = bf16_dot_peak_gflops(report.threads, 3);
         std::vector<const Blas*> peers;
         for (const Blas* peer : {openblas(report.threads), onednn(report.threads)})
           if (peer) peers.push_back(peer);
         const int runs = std::max(3, reps / 3);
         // m x k times (n x k)^T, then (layers) a bias and an activation: relu(x @ w.t() + b), or
         // gelu(x @ w.t() + b) + r with a residual r, which tensorjit runs as the GEMM's
         // epilogue. Dims scale with the matrices of the strided workloads (a small --size,
         // small products).
         enum class Layer { None, Relu, GeluResidual };
         auto scaled = [&](int64_t d) { return std::max<int64_t>(16, d * s / 4096); };
         auto linear = [&](int64_t m, int64_t k, int64_t n, tj::DType dt, const std::string& what,
                           Layer layer = Layer::None) {
           m = scaled(m), k = scaled(k), n = scaled(n);
           const bool fused = layer != Layer::None;
           const char* after =
               layer == Layer::Relu ? ", then bias and relu" : ", then bias, gelu and residual";
           const auto opts = on.dtype(dt);
           tj::Tensor x = tj::randn({m, k}, opts), w = tj::randn({n, k}, opts),
                      bias = tj::randn({n}, opts),
                      res = layer == Layer::GeluResidual ? tj::randn({m, n}, opts) : tj::Tensor();
           tj::eval({x, w, bias});
           if (res.defined()) res.eval();
           auto activation = [&](const tj::Tensor& y) {
             return layer == Layer::Relu ? tj::relu(y + bias)
                                         : tj::nn::functional::gelu(y + bias) + res;
           };
           Row row{"matmul",
                   fmt::format("{}x{}x{} {}{}", m, k, n, tj::short_dtype_name(dt), what),
                   Kind::Compute,
                   2.0 * m * n * k,
                   {},
                   dt == tj::kFloat64                                ? report.fma_peak_f64
                   : dt == tj::kBFloat16 && report.dot_peak_bf16 > 0 ? report.dot_peak_bf16
                                                                     : report.fma_peak_f32};
           auto product = [&] {
             return fused ? activation(tj::matmul(x, w.t())) : tj::matmul(x, w.t());
           };
           row.variants.push_back(
               {"tensorjit", Role::Fused, 1e3 * time_median(runs, [&] { run(product()); }), runs});
           // The same without the GEMM's epilogue: the product, then the rest as a pass of its
           // own.
           if (fused)
             row.variants.push_back({std::string("tensorjit") + after, Role::Unfused,
                                     1e3 * time_median(runs,
                                                       [&] {
                                                         tj::Tensor y = tj::matmul(x, w.t());
                                                         run(y);
                                                         run(activation(y));
                                                       }),
                                     runs});
           // Each library's product, then (the relu layer) the bias and ReLU in one pass on as
           // many threads. The gelu layer has no peer: a loop calling std::erf would time the
           // loop (8 times the product), not the library.
           auto epilogue = [&](auto* y, const auto* b) {
             std::vector<std::thread> pool;
             const int64_t per = (m + report.threads - 1) / report.threads;
             for (int t = 0; t < report.threads; ++t)
               pool.emplace_back([&, t] {
                 for (int64_t i = t * per; i < std::min(m, (t + 1) * per); ++i)
                   for (int64_t j = 0; j < n; ++j)
                     y[i * n + j] = std::max(y[i * n + j] + b[j], decltype(b[j])(0));
               });
             for (auto& th : pool)
               th.join();
           };
           std::vector<char> c(size_t(m * n) * tj::itemsize(dt));
           for (const Blas* peer : peers) {
             if (layer == Layer::GeluResidual) break;
             if (!(dt == tj::kFloat32 || (dt == tj::kFloat64 && peer->dgemm_nt))) continue;
             const double t = time_median(runs, [&] {
               if (dt == tj::kFloat32) {
                 auto* y = reinterpret_cast<float*>(c.data());
                 peer->sgemm_nt(int(m), int(n), int(k), x.data_ptr<float>(), w.data_ptr<float>(),
                                y);
                 if (fused) epilogue(y, bias.data_ptr<float>());
               } else {
                 auto* y = reinterpret_cast<double*>(c.data());
                 peer->dgemm_nt(int(m), int(n), int(k), x.data_ptr<double>(), w.data_ptr<double>(),
                                y);
                 if (fused) epilogue(y, bias.data_ptr<double>());
               }
             });
             row.variants.push_back(
                 {peer->name + (fused ? after : ""), Role::Baseline, 1e3 * t, runs});
             // The libraries' idle threads spin a while before they sleep (OpenBLAS about 2^28
             // cycles, OpenMP's teams a few hundred ms): the next timing waits until they do,
             // not to share the cores with them.
             std::this_thread::sleep_for(std::chrono::milliseconds(300));
           }
           rows.push_back(std::move(row));
         };
         for (int64_t k : {1024, 256, 512, 2048})
           linear(k, k, k, tj::kFloat32, "");
         linear(2048, 512, 2048, tj::kFloat32, "");
         linear(128, 784, 512, tj::kFloat32, " (the MLP's first layer)");
         linear(8192, 256, 64, tj::kFloat32, " (tall-thin)");
         linear(1024, 1024, 1024, tj::kFloat64, "");
         linear(1024, 1024, 1024, tj::kBFloat16, "");
         linear(4096, 1024, 1024, tj::kFloat32, " relu(x @ w.t() + b)", Layer::Relu);
         linear(8192, 64, 1024, tj::kFloat32, " gelu(x @ w.t() + b) + r", Layer::GeluResidual);
       }});
  // Batched factorizations (LAPACK's, on the pool) against a plain loop over the batch calling
  // LAPACK on one thread, each matrix copied column-major as tensorjit copies it. Work is the
  // usual operation count: LU and the solve 2/3 n^3 + 2 n^2 k, the SVD with its vectors 22 n^3
  // (Golub and Van Loan's count for the R-SVD of a square matrix).
  all.push_back(
      {"linalg", "solve and svd of batches of 64x64 and 256x256 float64", [&] {
         const int runs = std::max(3, reps / 3);
         auto batch_of = [&](int64_t b, int64_t m, int64_t k, bool svd) {
           const auto opts = on.dtype(tj::kFloat64);
           tj::Tensor A = tj::randn({b, m, m}, opts) + tj::eye(m, opts) * double(m);
           tj::Tensor B = tj::randn({b, m, k}, opts);
           tj::eval({A, B});
           const double md = double(m);
           Row row{"linalg",
                   fmt::format("{} {} x {}x{} float64", svd ? "svd" : "solve", b, m, m),
                   Kind::Compute,
                   double(b) * (svd ? 22 * md * md * md : 2 * md * md * md / 3 + 2 * md * md * k),
                   {}};
           auto ours = [&] {
             if (svd) {
               auto r = tj::linalg::svd(A);
               tj::eval({r.U, r.S, r.Vh});
               if (gpu) tj::cuda::synchronize();
             } else {
               run(tj::linalg::solve(A, B));
             }
           };
           row.variants.push_back({"tensorjit", Role::Fused, 1e3 * time_median(runs, ours), runs});
           if (!gpu) {
             const double* a = A.data_ptr<double>();
             const double* rhs = B.data_ptr<double>();
             const double t = time_median(runs, [&] { lapack_loop(svd, b, m, k, a, rhs); });
             row.variants.push_back({"LAPACK loop", Role::Baseline, 1e3 * t, runs});
           }
           rows.push_back(std::move(row));
         };
         batch_of(256, 64, 8, false);
         batch_of(16, 256, 8, false);
         batch_of(64, 64, 0, true);
         batch_of(4, 256, 0, true);
       }});
  // One training step of a 784-512-10 MLP (ReLU, MSE, SGD): forward, backward and update, with
  // fusion and without.
  const std::string mlp_shape = fmt::format("784-512-10, batch {}", batch);
  all.push_back(
      {"mlp step", mlp_shape, [&] {
         namespace F = tj::nn::functional;
         tj::Tensor xb = tj::randn({batch, 784}, on), yb = tj::randn({batch, 10}, on);
         tj::Tensor w1 = (tj::randn({512, 784}, on) * 0.05).requires_grad_();
         tj::Tensor b1 = tj::zeros({512}, on).requires_grad_();
         tj::Tensor w2 = (tj::randn({10, 512}, on) * 0.05).requires_grad_();
         tj::Tensor b2 = tj::zeros({10}, on).requires_grad_();
         tj::eval({xb, yb, w1, b1, w2, b2});
         tj::optim::SGD opt({w1, b1, w2, b2}, 1e-3);
         // The products computed: the forward pass's two, both weights' gradients, and the
         // gradient of the hidden layer (the input's is not asked for).
         const double flops = 2.0 * batch * (2 * (784.0 * 512 + 512.0 * 10) + 512.0 * 10);
         auto step = [&] {
           opt.zero_grad();
           tj::Tensor loss = F::mse_loss(F::linear(F::relu(F::linear(xb, w1, b1)), w2, b2), yb);
           loss.backward();
           opt.step();
           if (gpu) tj::cuda::synchronize();
         };
         Row row{"mlp step", mlp_shape, Kind::Compute, flops, {}};
         row.variants.push_back({"fused", Role::Fused, 1e3 * time_median(reps, step), reps});
         tj::config().fusion = false;
         const int unfused_reps = std::max(3, reps / 3);
         row.variants.push_back(
             {"unfused", Role::Unfused, 1e3 * time_median(unfused_reps, step), unfused_reps});
         tj::config().fusion = true;
         rows.push_back(std::move(row));
       }});
  // Compile latency: each kernel below has a structure not seen before, and the disk cache is
  // off so that none comes from an earlier run.
  all.push_back({"compile", "1024 elements", [&] {
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
                   rows.push_back({"compile", "1024 elements", Kind::Latency, 0, {}});
                   rows.back().variants.push_back({"median", Role::Fused,
                                                   compile_ms.empty() ? 0.0 : median(compile_ms),
                                                   static_cast<int>(compile_ms.size())});
                 }});
  // A cache hit: the same structure on new data, end to end (build, schedule, look up, run).
  all.push_back({"cache hit", "16 elements", [&] {
                   tj::Tensor tiny = tj::rand({16}, on);
                   run(tiny);
                   const int hit_reps = std::max(25, reps);
                   double t = time_median(hit_reps, [&] { run(tj::exp(tiny) * tiny + 1); });
                   rows.push_back({"cache hit", "16 elements", Kind::Latency, 0, {}});
                   rows.back().variants.push_back({"median", Role::Fused, 1e3 * t, hit_reps});
                 }});
  // Fixed costs of small graphs (16 elements): a chain of 200 elementwise ops read by
  // sum().item() (one fused kernel: building, simplifying and scheduling 200 nodes), and the
  // same chain with every op materialized (the time per op). PyTorch eager takes about 3.7 us
  // per op on these machines (docs/performance.md).
  auto chain = [&](const tj::Tensor& x, bool each) {
    tj::Tensor y = x;
    for (int i = 0; i < 200; ++i) {
      y = i % 2 ? y * 1.0001 : y + 0.5;
      if (each) run(y);
    }
    return y.sum().item<double>();
  };
  all.push_back({"op chain", "200 ops on 16 elements, then sum().item()", [&] {
                   tj::Tensor tiny = tj::rand({16}, on);
                   run(tiny);
                   chain(tiny, false);
                   const int chain_reps = std::max(25, reps);
                   double t = time_median(chain_reps, [&] { chain(tiny, false); });
                   rows.push_back({"op chain", "200 ops", Kind::Latency, 0, {}});
                   rows.back().variants.push_back({"median", Role::Fused, 1e3 * t, chain_reps});
                 }});
  all.push_back({"materialized op", "16 elements, each op evaluated", [&] {
                   tj::Tensor tiny = tj::rand({16}, on);
                   run(tiny);
                   chain(tiny, true);
                   const int chain_reps = std::max(9, reps);
                   double t = time_median(chain_reps, [&] { chain(tiny, true); }) / 200;
                   rows.push_back({"materialized op", "per op", Kind::Latency, 0, {}});
                   rows.back().variants.push_back({"median", Role::Fused, 1e3 * t, chain_reps});
                 }});

  std::vector<const Workload*> selected;
  for (const auto& name : o.only) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Workload& w) {
      return normalized(w.name) == normalized(name);
    });
    if (it == all.end()) throw UsageError(fmt::format("--only: no workload '{}'", name));
  }
  for (const auto& w : all)
    if (o.only.empty() || std::any_of(o.only.begin(), o.only.end(), [&](const std::string& name) {
          return normalized(name) == normalized(w.name);
        }))
      selected.push_back(&w);

  if (gpu) {
    report.copy_gbps = cuda_copy_gbps(gpu_index, static_cast<size_t>(bytes / 2), reps);
  } else {
    report.copy_gbps_before =
        bytes / copy_seconds(static_cast<size_t>(bytes / 2), report.threads, reps) / 1e9;
  }
  x = tj::rand({n}, on);
  run(x);
  for (size_t k = 0; k < selected.size(); ++k) {
    fmt::print(stderr, "[{}/{}] {} {} ...\n", k + 1, selected.size(), selected[k]->name,
               selected[k]->shape);
    selected[k]->run();
  }
  if (!gpu) {
    // The copy again, after the workloads: a neighbour's burst during one measurement of a noisy
    // machine would otherwise flatter every fraction. The faster of the two is the roofline.
    report.copy_gbps_after =
        bytes / copy_seconds(static_cast<size_t>(bytes / 2), report.threads, reps) / 1e9;
    report.copy_gbps = std::max(report.copy_gbps_before, report.copy_gbps_after);
  }

  print_table(report, std::cout);
  std::cout.flush();
  write_output(o.json, report, write_json);
  write_output(o.csv, report, write_csv);
  write_output(o.chart, report, write_svg);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // Every failure is one line on stderr and an exit status, never an abort.
  try {
    Options o = parse_args(std::vector<std::string>(argv + 1, argv + argc));
    if (o.help) {
      fmt::print("{}", kUsage);
      return 0;
    }
    return bench(o);
  } catch (const UsageError& e) {
    fmt::print(stderr, "tj-bench: {} (see tj-bench --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tj-bench: {}\n", e.what());
    return 1;
  } catch (...) {
    fmt::print(stderr, "tj-bench: unknown error\n");
    return 1;
  }
}
