// What tj-bench holds products to, measured in the same run: the FMA peak of the CPU's threads,
// and OpenBLAS's GEMM where the machine has the library (loaded at run time: tj-bench runs
// where it does not, without that peer).
#pragma once
#include <cstdint>
#include <string>

namespace tj::bench {

// Floating-point operations per second (an FMA is two) of independent FMA chains on `threads`
// threads, in the widest vectors the CPU has (AVX-512, AVX2+FMA, else scalar fma): the roofline
// of products. `float64`: in doubles. The faster of `reps` timings.
double fma_peak_gflops(bool float64, int threads, int reps);

// The vector instructions fma_peak_gflops used: "AVX-512", "AVX2", "scalar".
std::string fma_peak_isa();

// Row-major C = A B^T (a linear layer's product; B is n x k), through cblas_?gemm.
struct Blas {
  std::string name; // "OpenBLAS (Zen)": the kernels it chose
  void (*sgemm_nt)(int m, int n, int k, const float* a, const float* b, float* c);
  void (*dgemm_nt)(int m, int n, int k, const double* a, const double* b, double* c);
};
// Null where libopenblas cannot be loaded. Its threads are set to `threads`.
const Blas* openblas(int threads);

// A plain loop over a batch of b row-major m x m float64 matrices `a`: each copied
// column-major, then LAPACK's dgesv against its m x k right-hand sides `rhs` (svd: dgesdd with
// all vectors, `rhs` unread), one matrix after the other, as a user's loop would call it.
void lapack_loop(bool svd, int64_t b, int64_t m, int64_t k, const double* a, const double* rhs);

} // namespace tj::bench
