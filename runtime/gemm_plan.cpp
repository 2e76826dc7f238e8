// Planning a strided batched product for a column-major BLAS.
#include "runtime/gemm_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "tensorjit/error.h"

namespace tj::rt {
namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();

// How the library addresses an r x c matrix X (its op form) whose element (i, j) sits at
// i * si + j * sj: stored as is (column-major, X[i, j] at i + j * ld) or transposed (the
// stored c x r matrix is X^T, X[i, j] at j + i * ld).
struct MatrixArg {
  bool trans = false;
  int64_t ld = 1;
};

// A dim of size 1 takes any stride: it is never stepped along.
std::optional<MatrixArg> matrix_arg(int64_t r, int64_t c, int64_t si, int64_t sj) {
  if (r == 0 || c == 0) return MatrixArg{false, std::max<int64_t>(r, 1)}; // nothing is read
  if (r <= 1) si = 1;
  if (c <= 1) sj = std::max<int64_t>(r, 1);
  if (si == 1 && sj >= std::max<int64_t>(r, 1) && sj <= kMaxInt) return MatrixArg{false, sj};
  if (r > 1 || c > 1) { // the transposed form: unit steps along the op form's columns
    if (c <= 1) sj = 1;
    if (r <= 1) si = std::max<int64_t>(c, 1);
    if (sj == 1 && si >= std::max<int64_t>(c, 1) && si <= kMaxInt) return MatrixArg{true, si};
  }
  return std::nullopt;
}

// The one stride that walks dims [from, to) of `strides` (sizes `shape`) in row-major
// order as a single index, if there is one: each kept dim steps by the next kept dim's
// stride times its size. Dims of size 1 are skipped.
std::optional<int64_t> collapsed_stride(const std::vector<int64_t>& shape,
                                        const std::vector<int64_t>& strides, size_t from,
                                        size_t to) {
  std::optional<int64_t> inner; // stride of the innermost kept dim
  int64_t expect = 0;           // what the next dim out must step by
  for (size_t d = to; d-- > from;) {
    if (shape[d] == 1) continue;
    if (!inner) {
      inner = strides[d];
    } else if (strides[d] != expect) {
      return std::nullopt;
    }
    expect = strides[d] * shape[d];
  }
  return inner.value_or(0);
}

} // namespace

bool gemm_sizes_fit(int64_t n, int64_t m, int64_t k, int64_t batch) {
  return n <= kMaxInt && m <= kMaxInt && k <= kMaxInt && batch <= kMaxInt;
}

GemmPlan plan_gemm(const GemmOperand& a, const GemmOperand& b, const GemmOperand& c,
                   int64_t max_calls) {
  const size_t nd = a.shape.size();
  if (nd < 2 || b.shape.size() != nd || c.shape.size() != nd || a.strides.size() != nd ||
      b.strides.size() != nd || c.strides.size() != nd)
    throw Error("internal error: plan_gemm needs operands of equal rank, at least 2");
  const size_t nb = nd - 2;
  const int64_t n = a.shape[nb], k = a.shape[nb + 1], m = b.shape[nb + 1];
  if (b.shape[nb] != k || c.shape[nb] != n || c.shape[nb + 1] != m ||
      !std::equal(a.shape.begin(), a.shape.begin() + int64_t(nb), b.shape.begin()) ||
      !std::equal(a.shape.begin(), a.shape.begin() + int64_t(nb), c.shape.begin()))
    throw Error("internal error: plan_gemm's operand shapes do not match");
  int64_t batch = 1;
  for (size_t d = 0; d < nb; ++d)
    batch *= a.shape[d];
  GemmPlan plan;
  if (n == 0 || m == 0 || batch == 0) return plan;

  // Column-major C^T (m x n) = B^T (m x k) A^T (k x n): the library's A is our b.
  const auto lib_a = matrix_arg(m, k, b.strides[nb + 1], b.strides[nb]);
  const auto lib_b = matrix_arg(k, n, a.strides[nb + 1], a.strides[nb]);
  const auto lib_c = matrix_arg(m, n, c.strides[nb + 1], c.strides[nb]);
  if (!lib_c || lib_c->trans)
    throw Error("internal error: plan_gemm's output has no unit stride along its rows");
  plan.copy_a = !lib_b;
  plan.copy_b = !lib_a;

  // The longest run of trailing batch dims that each operand walks with one stride; the
  // dims before it are looped over, one call each.
  size_t split = nb;
  while (split > 0 && collapsed_stride(a.shape, a.strides, split - 1, nb) &&
         collapsed_stride(b.shape, b.strides, split - 1, nb) &&
         collapsed_stride(c.shape, c.strides, split - 1, nb))
    --split;
  int64_t outer = 1;
  for (size_t d = 0; d < split; ++d)
    outer *= a.shape[d];
  if (outer > max_calls) {
    // Copies (contiguous, batch dims included) collapse whatever they replace.
    plan.copy_a = plan.copy_a || !collapsed_stride(a.shape, a.strides, 0, nb);
    plan.copy_b = plan.copy_b || !collapsed_stride(b.shape, b.strides, 0, nb);
    if (!plan.copy_a && !plan.copy_b)
      throw Error("internal error: plan_gemm's output batch does not collapse");
  }
  if (plan.copy_a || plan.copy_b) return plan;

  GemmCall call;
  call.transa = lib_a->trans;
  call.transb = lib_b->trans;
  call.m = m, call.n = n, call.k = k;
  call.lda = lib_a->ld, call.ldb = lib_b->ld, call.ldc = lib_c->ld;
  call.stride_a = *collapsed_stride(b.shape, b.strides, split, nb);
  call.stride_b = *collapsed_stride(a.shape, a.strides, split, nb);
  call.stride_c = *collapsed_stride(c.shape, c.strides, split, nb);
  call.batch = batch / outer;
  // One call per index of the looped dims, offsets stepped by their strides.
  std::vector<int64_t> index(split, 0);
  for (int64_t i = 0; i < outer; ++i) {
    call.offset_a = b.offset, call.offset_b = a.offset, call.offset_c = c.offset;
    for (size_t d = 0; d < split; ++d) {
      call.offset_a += index[d] * b.strides[d];
      call.offset_b += index[d] * a.strides[d];
      call.offset_c += index[d] * c.strides[d];
    }
    plan.calls.push_back(call);
    for (size_t d = split; d-- > 0;) {
      if (++index[d] < a.shape[d]) break;
      index[d] = 0;
    }
  }
  return plan;
}

} // namespace tj::rt
