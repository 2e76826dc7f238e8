// Planning a strided batched product for a column-major BLAS (cuBLAS).
//
// Tensors are row-major views: element (b..., i, j) of an operand sits at
// offset + sum(index * stride). A column-major library computes
// C = op(A) op(B) with op(X) = X or X^T, a leading dimension per matrix and one
// stride between the matrices of a batch. Row-major C = A B is column-major
// C^T = B^T A^T, so the library's first operand is our B and its second our A;
// whether each needs the library's transpose follows from which of its two
// matrix strides is 1. Batch dims must collapse to one stride per operand
// (broadcast dims have stride 0); those that do not are looped over as separate
// calls. A layout no call can express (neither matrix stride 1, a leading
// dimension the library rejects, or too many calls) asks for a contiguous copy.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace tj::rt {

// A row-major strided view, in elements: shape (batch..., rows, cols).
struct GemmOperand {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// One call of cuBLAS's gemmStridedBatched with alpha = 1 and beta = 0, its
// arguments exactly as the library takes them (column-major). The offsets are
// in elements from each operand's storage start.
struct GemmCall {
  bool transa = false, transb = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 1, ldb = 1, ldc = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int64_t batch = 1;
  int64_t offset_a = 0, offset_b = 0, offset_c = 0; // into the library's A, B and C
};

// Work a library of our own does on C as it computes it: called with a run of `count` elements
// of one of C's rows once they hold their final values, from whichever thread computed them,
// each element exactly once (the CPU GEMM's epilogue).
using GemmEpilogue = std::function<void(void* run, int64_t count)>;

struct GemmPlan {
  // Empty when a copy is asked for, or when there is nothing to compute.
  std::vector<GemmCall> calls;
  // Operands whose layout no call expresses: copy them contiguous, then plan again.
  bool copy_a = false, copy_b = false;
};

// The calls computing c = a @ b, where a is (batch..., n, k), b is (batch..., k, m) and
// c is (batch..., n, m) with equal batch dims (already broadcast; stride 0 where
// broadcast). c must have unit stride along its last dim (the output is written in a
// layout the library can address). Sizes past what the library's 32-bit arguments hold
// ask for copies that cannot help: callers check sizes first (gemm_sizes_fit).
GemmPlan plan_gemm(const GemmOperand& a, const GemmOperand& b, const GemmOperand& c,
                   int64_t max_calls = 16);

// Whether n, m, k and the batch count fit the library's 32-bit arguments.
bool gemm_sizes_fit(int64_t n, int64_t m, int64_t k, int64_t batch);

} // namespace tj::rt
