// The routines a Call node (ops.def) names: what each computes from which operands. The
// routine is a fact of the graph; which library performs it (cuBLAS, LAPACK, a model in the
// tests, kernels of our own) is the pipeline's choice (pipeline/library_calls.h).
#pragma once
#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/ir/node.h"

namespace tj::ir {

// Operands are float32 or float64 (or complex64, complex128, except for gemm; a real part such
// as a singular value is then a complex number with a zero imaginary part), all
// of the result's dtype (a gemm of float32 may take bfloat16 operands: exact products added in
// float32, where a library multiplies them as such), with equal batch dims (a broadcast
// batch is an Expand of the operand). A factorization's outputs are laid end to end in the
// result's last dim, one batch entry per row: (batch..., sum of the parts' sizes), each part a
// row-major matrix or vector (routine_parts); the frontend reads them as views.
enum class Routine : uint8_t {
  // (batch..., n, k) @ (batch..., k, m) -> (batch..., n, m): the one routine whose result is
  // its single part's shape.
  Gemm,
  // LU with partial pivoting of a square A (getrf): parts LU (n, n), pivots (n) as LAPACK
  // numbers them (from 1). A singular A is no error.
  Lu,
  // X with A X = B, A (n, n), B (n, k) (getrf, getrs): part X (n, k).
  Solve,
  // A^-1 (a solve against the identity): part (n, n). tensor = 1: the matrix is a tensor's
  // (linalg.tensorinv), which a singular one's error names.
  Inv,
  // L with A = L L^T from A's lower triangle, or U with A = U^T U from its upper one
  // (upper = 1) (potrf): part (n, n), zeros in the other triangle.
  Cholesky,
  // A = QR, A (m, n), k = min(m, n) (geqrf, orgqr). mode 0 (reduced): Q (m, k), R (k, n);
  // 1 (complete): Q (m, m), R (m, n); 2 (r): Q empty (0), R (k, n).
  Qr,
  // A = U diag(S) Vh (gesdd). full = 1: U (m, m), S (k), Vh (n, n); full = 0: U (m, k), S,
  // Vh (k, n); vectors = 0: S alone.
  Svd,
  // The eigenvalues (ascending) and, with vectors = 1, the eigenvectors (columns) of a
  // symmetric A read from its lower triangle, or its upper one with upper = 1 (syevd):
  // parts L (n), V (n, n).
  Eigh,
  // The least-squares solution X of A X = B, A (m, n), B (m, k), by LAPACK's driver: 0 gelsy
  // (rank-revealing QR): X (n, k), rank (1); 1 gels (QR, A of full rank): X (n, k), residuals
  // (k when m > n, else 0); 2 gelsd, 3 gelss (SVD): X, rank, singular values (min(m, n)),
  // residuals. The residuals are the squared norms of B - A X's columns. The Call's value is
  // rcond (a float64, printed "rcond=1e-07"): gelsy, gelsd and gelss take singular values (or
  // gelsy's condition estimates) below rcond times the largest as zero; negative: the dtype's
  // epsilon (LAPACK's rule). gels reads none.
  Lstsq,
  // The eigenvalues and, with vectors = 1, the right eigenvectors (columns, each of norm 1) of a
  // general square A (geev), complex numbers as their parts: real and imaginary parts of the
  // eigenvalues (n), (n), then of the eigenvectors (n, n), (n, n).
  Eig,
};

struct RoutineInfo {
  std::string_view name; // in the text form: "%3 = Call gemm %1, %2 : ..."
  int arity;
  std::string_view grad_fn; // the frontend op's, for dumps; empty: not differentiable
  // The attributes after the routine in a Call's args, in order, and the largest value of each
  // (all are flags or small enumerations from 0).
  std::array<std::string_view, 2> params{};
  std::array<int64_t, 2> limits{};
};

inline constexpr RoutineInfo kRoutineInfo[] = {
    {"gemm", 2, "BmmBackward0"},
    {"lu", 1, "LinalgDetBackward0"},
    {"solve", 2, "LinalgSolveExBackward0"},
    {"inv", 1, "LinalgInvExBackward0", {"tensor"}, {1}},
    {"cholesky", 1, "LinalgCholeskyExBackward0", {"upper"}, {1}},
    {"qr", 1, "LinalgQrBackward0", {"mode"}, {2}},
    {"svd", 1, "LinalgSvdBackward0", {"full", "vectors"}, {1, 1}},
    {"eigh", 1, "LinalgEighBackward0", {"upper", "vectors"}, {1, 1}},
    {"lstsq", 2, "LinalgLstsqBackward0", {"driver"}, {3}},
    {"eig", 1, "LinalgEigBackward0", {"vectors"}, {1}},
};
inline constexpr int kNumRoutines = static_cast<int>(std::size(kRoutineInfo));

constexpr const RoutineInfo& info(Routine r) { return kRoutineInfo[static_cast<int>(r)]; }
constexpr std::string_view name(Routine r) { return info(r).name; }
// How many attributes a routine takes.
constexpr size_t num_params(Routine r) {
  size_t k = 0;
  while (k < info(r).params.size() && !info(r).params[k].empty())
    ++k;
  return k;
}
std::optional<Routine> routine_named(std::string_view name);

// The routine of a Call node, and its attributes.
inline Routine routine(const Node& call) { return static_cast<Routine>(call.args.at(0)); }
inline std::vector<int64_t> routine_params(const Node& call) {
  return {call.args.begin() + 1, call.args.end()};
}

// The parts a factorization lays end to end, per batch entry (enum Routine), for operands of
// these shapes; Gemm has none.
std::vector<Shape> routine_parts(Routine r, const std::vector<Shape>& src,
                                 const std::vector<int64_t>& params);
// The batch dims of a Call's operands.
Shape routine_batch(const Shape& first_operand);

// Why `r` with `params` cannot take `src` to a result of dtype `t` and shape `s` (empty when it
// can): the rules the frontend follows, checked by the parser and the verifier.
std::string call_mismatch(Routine r, const std::vector<NodePtr>& src,
                          const std::vector<int64_t>& params, DType t, const Shape& s);

// A Call of `r` on `src`: the result's dtype and shape follow from the operands, which must
// satisfy the routine's rules (an internal error otherwise).
NodePtr make_call(Routine r, std::vector<NodePtr> src, std::vector<int64_t> params = {},
                  Scalar value = {});

// The grad_fn name of a node's op (or of its routine, for a Call): empty where no gradient
// flows.
std::string_view grad_fn(const Node& n);

} // namespace tj::ir
