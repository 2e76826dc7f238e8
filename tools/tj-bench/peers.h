// What tj-bench holds products to, measured in the same run: the FMA peak of the CPU's threads,
// and the GEMMs of OpenBLAS and oneDNN where the machine has the libraries (loaded at run time:
// tj-bench runs where they are not, without those peers).
#pragma once
#include <cstdint>
#include <string>

namespace tj::bench {

// Floating-point operations per second (an FMA is two) of independent FMA chains on `threads`
// threads, in the widest vectors the CPU has (AVX-512, AVX2+FMA, else scalar fma): the roofline
// of products. `float64`: in doubles. The faster of `reps` timings.
double fma_peak_gflops(bool float64, int threads, int reps);

// The same of bfloat16 dot products (AVX512_BF16's vdpbf16ps: two multiply-adds per float32
// lane), the roofline of bfloat16 products there; 0 where the CPU lacks them.
double bf16_dot_peak_gflops(int threads, int reps);

// The vector instructions fma_peak_gflops used: "AVX-512", "AVX2", "scalar".
std::string fma_peak_isa();

// Row-major C = A B^T (a linear layer's product; B is n x k) by a library's GEMM.
struct Blas {
  std::string name; // "OpenBLAS (Zen)": the kernels it chose
  void (*sgemm_nt)(int m, int n, int k, const float* a, const float* b, float* c);
  // Null where the library has no float64 GEMM (oneDNN).
  void (*dgemm_nt)(int m, int n, int k, const double* a, const double* b, double* c);
};
// cblas_?gemm. Null where libopenblas cannot be loaded. Its threads are set to `threads`.
const Blas* openblas(int threads);
// dnnl_sgemm (oneDNN's own x86 kernels, JIT-generated for the CPU). Null where libdnnl cannot be
// loaded. Its OpenMP threads are set to `threads`.
const Blas* onednn(int threads);

// A plain loop over a batch of b row-major m x m float64 matrices `a`: each copied
// column-major, then LAPACK's dgesv against its m x k right-hand sides `rhs` (svd: dgesdd with
// all vectors, `rhs` unread), one matrix after the other, as a user's loop would call it.
void lapack_loop(bool svd, int64_t b, int64_t m, int64_t k, const double* a, const double* rhs);

} // namespace tj::bench
