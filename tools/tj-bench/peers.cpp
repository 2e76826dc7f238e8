#include "tools/tj-bench/peers.h"

#include <dlfcn.h>
#include <fmt/format.h>
#if defined(__x86_64__)
#include <immintrin.h>
#include <lapacke.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

namespace tj::bench {
namespace {

constexpr int64_t kIters = 20'000'000;

// 12 independent chains: enough in flight for two FMA units of 4 cycles' latency. The empty asm
// keeps the chains in registers and the loop from being folded. Returns FMAs per lane. A macro,
// since each instruction set's function must hold the loop itself (a lambda or template would
// not take the function's target).
#define TJ_FMA_CHAINS(V, x, y, fma)                                                                \
  V a0 = y, a1 = y, a2 = y, a3 = y, a4 = y, a5 = y, a6 = y, a7 = y, a8 = y, a9 = y, a10 = y,       \
    a11 = y;                                                                                       \
  for (int64_t i = 0; i < kIters; ++i) {                                                           \
    a0 = fma(a0, x, y), a1 = fma(a1, x, y), a2 = fma(a2, x, y), a3 = fma(a3, x, y);                \
    a4 = fma(a4, x, y), a5 = fma(a5, x, y), a6 = fma(a6, x, y), a7 = fma(a7, x, y);                \
    a8 = fma(a8, x, y), a9 = fma(a9, x, y), a10 = fma(a10, x, y), a11 = fma(a11, x, y);            \
    asm volatile(""                                                                                \
                 : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7), \
                   "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));                                      \
  }                                                                                                \
  return 12.0 * kIters

#if defined(__x86_64__)
__attribute__((target("avx512f"))) double avx512_f32() {
  TJ_FMA_CHAINS(__m512, _mm512_set1_ps(0.999f), _mm512_set1_ps(1e-3f), _mm512_fmadd_ps);
}
__attribute__((target("avx512f"))) double avx512_f64() {
  TJ_FMA_CHAINS(__m512d, _mm512_set1_pd(0.999), _mm512_set1_pd(1e-3), _mm512_fmadd_pd);
}
__attribute__((target("avx2,fma"))) double avx2_f32() {
  TJ_FMA_CHAINS(__m256, _mm256_set1_ps(0.999f), _mm256_set1_ps(1e-3f), _mm256_fmadd_ps);
}
__attribute__((target("avx2,fma"))) double avx2_f64() {
  TJ_FMA_CHAINS(__m256d, _mm256_set1_pd(0.999), _mm256_set1_pd(1e-3), _mm256_fmadd_pd);
}
// 12 chains of bfloat16 dot products (vdpbf16ps: 16 lanes, each two products and their sum):
// the roofline of bfloat16 products where the CPU has AVX512_BF16. Named accumulators (an array
// went through memory each step). Returns instructions per lane.
__attribute__((target("avx512f,avx512bf16"))) double avx512_bf16_dot() {
  const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.999f), _mm512_set1_ps(0.999f)),
                 y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512 z = _mm512_set1_ps(1e-3f);
  __m512 a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z, a8 = z, a9 = z, a10 = z,
         a11 = z;
  for (int64_t i = 0; i < kIters; ++i) {
    a0 = _mm512_dpbf16_ps(a0, x, y), a1 = _mm512_dpbf16_ps(a1, x, y);
    a2 = _mm512_dpbf16_ps(a2, x, y), a3 = _mm512_dpbf16_ps(a3, x, y);
    a4 = _mm512_dpbf16_ps(a4, x, y), a5 = _mm512_dpbf16_ps(a5, x, y);
    a6 = _mm512_dpbf16_ps(a6, x, y), a7 = _mm512_dpbf16_ps(a7, x, y);
    a8 = _mm512_dpbf16_ps(a8, x, y), a9 = _mm512_dpbf16_ps(a9, x, y);
    a10 = _mm512_dpbf16_ps(a10, x, y), a11 = _mm512_dpbf16_ps(a11, x, y);
    asm volatile(""
                 : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7),
                   "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  return 12.0 * kIters;
}
#endif
double scalar_f32() { TJ_FMA_CHAINS(float, 0.999f, 1e-3f, std::fma); }
double scalar_f64() { TJ_FMA_CHAINS(double, 0.999, 1e-3, std::fma); }
#undef TJ_FMA_CHAINS

// FMAs (per lane times lanes) one thread did.
double run_one(bool f64) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f"))
    return (f64 ? 8 : 16) * (f64 ? avx512_f64() : avx512_f32());
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return (f64 ? 4 : 8) * (f64 ? avx2_f64() : avx2_f32());
#endif
  return f64 ? scalar_f64() : scalar_f32();
}

// cblas's enums: row-major 101, no transpose 111, transpose 112.
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                         int, double, double*, int);
SgemmFn g_sgemm = nullptr;
DgemmFn g_dgemm = nullptr;

// oneDNN's C API without its headers: row-major, op 'N' or 'T', dims int64 (dnnl_dim_t); returns
// a dnnl_status_t (0: success).
using DnnlSgemmFn = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t,
                            const float*, int64_t, float, float*, int64_t);
DnnlSgemmFn g_dnnl_sgemm = nullptr;

} // namespace

namespace {

// The best of `reps` timings of `one` (multiply-adds a thread did) on `threads` threads, in
// floating-point operations per second.
template <class F> double peak_gflops(const F& one, int threads, int reps) {
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    std::vector<double> fmas(static_cast<size_t>(threads));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { fmas[size_t(t)] = one(); });
    for (auto& th : pool)
      th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double total = 0;
    for (double f : fmas)
      total += f;
    best = std::max(best, 2 * total / s / 1e9);
  }
  return best;
}

} // namespace

double fma_peak_gflops(bool float64, int threads, int reps) {
  return peak_gflops([&] { return run_one(float64); }, threads, reps);
}

double bf16_dot_peak_gflops(int threads, int reps) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512bf16"))
    return peak_gflops([] { return 32 * avx512_bf16_dot(); }, threads, reps);
#endif
  return 0;
}

std::string fma_peak_isa() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return "AVX-512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "AVX2";
#endif
  return "scalar";
}

const Blas* openblas(int threads) {
  static const Blas* blas = []() -> const Blas* {
    void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    g_sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "cblas_sgemm"));
    g_dgemm = reinterpret_cast<DgemmFn>(dlsym(lib, "cblas_dgemm"));
    if (!g_sgemm || !g_dgemm) return nullptr;
    auto* core = reinterpret_cast<const char* (*)()>(dlsym(lib, "openblas_get_corename"));
    static Blas b{core ? fmt::format("OpenBLAS ({})", core()) : "OpenBLAS",
                  [](int m, int n, int k, const float* a, const float* w, float* c) {
                    g_sgemm(101, 111, 112, m, n, k, 1.0f, a, k, w, k, 0.0f, c, n);
                  },
                  [](int m, int n, int k, const double* a, const double* w, double* c) {
                    g_dgemm(101, 111, 112, m, n, k, 1.0, a, k, w, k, 0.0, c, n);
                  }};
    return &b;
  }();
  if (blas) {
    static void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (auto* set = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads")))
      set(threads);
  }
  return blas;
}

const Blas* onednn(int threads) {
  static const Blas* blas = []() -> const Blas* {
    void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libdnnl.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    g_dnnl_sgemm = reinterpret_cast<DnnlSgemmFn>(dlsym(lib, "dnnl_sgemm"));
    if (!g_dnnl_sgemm) return nullptr;
    static Blas b{"oneDNN",
                  [](int m, int n, int k, const float* a, const float* w, float* c) {
                    g_dnnl_sgemm('N', 'T', m, n, k, 1.0f, a, k, w, k, 0.0f, c, n);
                  },
                  nullptr};
    return &b;
  }();
  // Debian's oneDNN runs on OpenMP (libgomp, loaded with it): its team size is the library's.
  if (blas)
    if (void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD))
      if (auto* set = reinterpret_cast<void (*)(int)>(dlsym(gomp, "omp_set_num_threads")))
        set(threads);
  return blas;
}

void lapack_loop(bool svd, int64_t b, int64_t m, int64_t k, const double* a, const double* rhs) {
  const auto n = static_cast<lapack_int>(m), nrhs = static_cast<lapack_int>(k);
  std::vector<double> w(static_cast<size_t>(m * m)),
      x(static_cast<size_t>(m * std::max<int64_t>(k, 1)));
  std::vector<double> s(static_cast<size_t>(m)), u(w.size()), vt(w.size());
  std::vector<lapack_int> piv(static_cast<size_t>(m));
  for (int64_t e = 0; e < b; ++e) {
    const double* ae = a + e * m * m;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j)
        w[static_cast<size_t>(i + j * m)] = ae[i * m + j];
    if (svd) {
      LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'A', n, n, w.data(), n, s.data(), u.data(), n, vt.data(), n);
      continue;
    }
    const double* be = rhs + e * m * k;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j)
        x[static_cast<size_t>(i + j * m)] = be[i * k + j];
    LAPACKE_dgesv(LAPACK_COL_MAJOR, n, nrhs, w.data(), n, piv.data(), x.data(), n);
  }
}

} // namespace tj::bench
