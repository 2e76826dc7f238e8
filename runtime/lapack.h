// Factorizations of batches of matrices through LAPACK (OpenBLAS's, through LAPACKE), for the
// Call routines of ir/routine.h. Each matrix is copied into a column-major workspace (so that
// any strides, transposed and broadcast ones included, are read where they lie), factored, and
// its parts written row-major, end to end, into one row of the output per batch entry.
// Batch entries run in parallel on the thread pool.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensorjit/dtype.h"

namespace tj::rt::lapack {

// A batch of strided matrices, in elements: entry b (row-major over `batch`) at
// data + offset + sum(b_d * batch_strides[d]) + i * row + j * col.
struct Matrices {
  const void* data = nullptr;
  int64_t offset = 0;
  std::vector<int64_t> batch, batch_strides;
  int64_t rows = 0, cols = 0, row = 0, col = 0;
};
// The matrices of a strided view (batch..., rows, cols) of `data`.
Matrices strided(const void* data, const std::vector<int64_t>& shape,
                 const std::vector<int64_t>& strides, int64_t offset);

// The first batch entry (row-major) whose LAPACK call reported an error, and the error (the
// routine's `info`); entry -1: none did.
struct Failure {
  int64_t entry = -1;
  int64_t info = 0;
  explicit operator bool() const { return entry >= 0; }
};
// Failure::info of a matrix with non-finite values that the routine refuses: an svd's with a NaN
// (LAPACK 3.10's gesdd says argument 4, A, instead of failing to converge), an eig's with a NaN
// or an infinity (checked before geev).
constexpr int64_t kNonFinite = -4;

// The routines, float32, float64, complex64 or complex128 (`dtype`; a real singular value,
// eigenvalue or rank is written as a complex number); `out` holds a row of `out_row` elements per
// batch entry (the sum of the parts' sizes, ir::routine_parts), contiguous.
Failure lu(DType dtype, const Matrices& a, void* out, int64_t out_row);
Failure solve(DType dtype, const Matrices& a, const Matrices& b, void* out, int64_t out_row);
Failure inv(DType dtype, const Matrices& a, void* out, int64_t out_row);
Failure cholesky(DType dtype, const Matrices& a, bool upper, void* out, int64_t out_row);
Failure qr(DType dtype, const Matrices& a, int mode, void* out, int64_t out_row);
Failure svd(DType dtype, const Matrices& a, bool full, bool vectors, void* out, int64_t out_row);
Failure eigh(DType dtype, const Matrices& a, bool upper, bool vectors, void* out, int64_t out_row);
// geev: the eigenvalues' real and imaginary parts (n each) and, with vectors, the right
// eigenvectors' real and imaginary parts (n x n each, row-major), a conjugate pair's vectors
// unpacked from LAPACK's two real columns (complex matrices: the parts as complex numbers).
Failure eig(DType dtype, const Matrices& a, bool vectors, void* out, int64_t out_row);
// Singular values below `rcond` times the largest count as zero (ir/routine.h's Lstsq).
Failure lstsq(DType dtype, const Matrices& a, const Matrices& b, int driver, double rcond,
              void* out, int64_t out_row);

} // namespace tj::rt::lapack
