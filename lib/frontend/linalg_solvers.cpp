// tj::linalg's solves, inverses, determinants and factorizations: checks in PyTorch's words,
// batch dims broadcast, then the LAPACK routines of linalg_factor.h read through views.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <ostream>

#include "lib/autograd/formulas.h"
#include "lib/frontend/linalg_factor.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "tensorjit/functions.h"
#include "tensorjit/indexing.h"
#include "tensorjit/linalg.h"

namespace tj::linalg {

using detail::factor;
using ir::Routine;

namespace {

using Grads = std::vector<Tensor>;

void check_matrix(const Tensor& A, const char* f, const char* arg = "A") {
  if (A.dim() < 2)
    throw Error(fmt::format("{}: The input tensor {} must have at least 2 dimensions.", f, arg));
}

void check_square(const Tensor& A, const char* f, const char* arg = "A") {
  check_matrix(A, f, arg);
  if (A.size(-1) != A.size(-2))
    throw Error(fmt::format("{}: {} must be batches of square matrices, but they are {} by {} "
                            "matrices",
                            f, arg, A.size(-2), A.size(-1)));
}

// LAPACK computes float32, float64, complex64 and complex128.
void check_float(const Tensor& A, const char* f) {
  const DType t = A.dtype();
  if (is_complex(t)) return;
  if (!is_floating_point(t))
    throw Error(fmt::format("{}: Expected a floating point or complex tensor as input. Got {}", f,
                            fe::cpp_type_name(t)));
  if (t != kFloat32 && t != kFloat64)
    throw Error(
        fmt::format("{}: Low precision dtypes not supported. Got {}", f, fe::cpp_type_name(t)));
}

Shape batch_of(const Tensor& A) { return Shape(A.sizes().begin(), A.sizes().end() - 2); }

// A's batch dims and then `last`.
Shape with_batch(const Shape& batch, std::initializer_list<int64_t> last) {
  Shape s = batch;
  s.insert(s.end(), last);
  return s;
}

// A (batch..., n, n) and B (batch..., n, k) with their batch dims broadcast.
std::pair<Tensor, Tensor> broadcast_batch(const Tensor& A, const Tensor& B) {
  const Shape batch = ir::broadcast_shapes(batch_of(A), batch_of(B));
  return {A.expand(with_batch(batch, {A.size(-2), A.size(-1)})),
          B.expand(with_batch(batch, {B.size(-2), B.size(-1)}))};
}

// The LU factors of A and the sign of its row permutation (real), without a gradient.
std::pair<Tensor, Tensor> lu_and_sign(const Tensor& A) {
  NoGradGuard no_grad;
  std::vector<Tensor> parts = factor(Routine::Lu, {A}, {});
  const int64_t n = A.size(-1);
  const DType real = real_part_dtype(A.dtype());
  Tensor steps = arange(1, n + 1, TensorOptions(real).device(A.device()));
  Tensor sign = (parts[1].real().ne(steps).to(real) * -2 + 1).prod(-1);
  return {parts[0], sign};
}

// The product over the last dim. Complex numbers multiply in a tree of elementwise products
// (a reduction combines reals only).
Tensor product_last(Tensor x) {
  if (!x.is_complex()) return x.prod(-1);
  while (x.size(-1) > 1) {
    if (x.size(-1) % 2) {
      Shape one = x.sizes();
      one.back() = 1;
      x = tj::cat({x, ones(one, TensorOptions(x.dtype()).device(x.device()))}, -1);
    }
    const int64_t n = x.size(-1);
    x = x.slice(-1, 0, n, 2) * x.slice(-1, 1, n, 2);
  }
  if (x.size(-1) == 0)
    return ones(Shape(x.sizes().begin(), x.sizes().end() - 1),
                TensorOptions(x.dtype()).device(x.device()));
  return x.squeeze(-1);
}

// Machine epsilon of float32 or float64: PyTorch's cutoffs for small singular values scale it.
double epsilon(DType t) {
  return real_part_dtype(t) == kFloat64 ? std::numeric_limits<double>::epsilon()
                                        : std::numeric_limits<float>::epsilon();
}

// The inverse's transpose times g (batch...), as det's and slogdet's gradients take it.
Tensor scaled_inverse_t(const Tensor& A, const Tensor& g) {
  return inv(A).mH() * g.unsqueeze(-1).unsqueeze(-1);
}

} // namespace

Tensor solve(const Tensor& A, const Tensor& B, bool left, Caller caller) {
  detail::CallSite site(caller, "linalg.solve");
  check_float(A, "linalg.solve");
  if (A.dtype() != B.dtype())
    throw Error(fmt::format("linalg.solve: Expected A and B to have the same dtype, but found A "
                            "of type {} and B of type {} instead",
                            fe::cpp_type_name(A.dtype()), fe::cpp_type_name(B.dtype())));
  // NumPy's rule: B is a vector (or a batch of them) when it has A's shape without the last dim.
  Shape a_rows(A.sizes().begin(), A.sizes().end() - std::min<int64_t>(A.dim(), 1));
  const bool vector = B.dim() == 1 || (A.dim() - 1 == B.dim() && B.sizes() == a_rows);
  Tensor B2 = vector ? B.unsqueeze(-1) : B;
  check_square(A, "linalg.solve");
  check_matrix(B2, "linalg.solve", "B");
  const int64_t want = left ? A.size(-2) : A.size(-1), got = left ? B2.size(-2) : B2.size(-1);
  if (want != got)
    throw Error(fmt::format("linalg.solve: Incompatible shapes of A and B for the equation {} "
                            "({}x{} and {}x{})",
                            left ? "AX = B" : "XA = B", A.size(-2), A.size(-1), B2.size(-2),
                            B2.size(-1)));
  if (!left && vector)
    throw Error("linalg.solve: Vector broadcasting of the left hand side is not supported for "
                "left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)");
  Tensor X;
  {
    NoGradGuard no_grad; // one op, with PyTorch's gradient, whatever the form of B
    // XA = B is A^T X^T = B^T.
    auto [a, b] = left ? broadcast_batch(A, B2) : broadcast_batch(A.mT(), B2.mT());
    X = factor(Routine::Solve, {a, b}, {})[0];
    if (!left) X = X.mT();
    if (vector) X = X.squeeze(-1);
  }
  // left: gB = A^-H gX, gA = -gB X^H; right: gB = gX A^-H, gA = -X^H gB; each summed over the
  // batch dims that broadcast.
  autograd::record(
      "LinalgSolveExBackward0", {A, B}, {X}, {A, X},
      [left, vector, a_shape = A.sizes(), b_shape = B.sizes()](const Grads& g, const Grads& s) {
        const Tensor& a = s[0];
        const Tensor x = vector ? s[1].unsqueeze(-1) : s[1];
        const Tensor gX = vector ? g[0].unsqueeze(-1) : g[0];
        Tensor gB = solve(a.mH(), gX, left);
        Tensor gA = left ? -gB.matmul(x.mH()) : -x.mH().matmul(gB);
        return Grads{autograd::sum_to(gA, a_shape),
                     autograd::sum_to(vector ? gB.squeeze(-1) : gB, b_shape)};
      });
  return X;
}

Tensor inv(const Tensor& A, Caller caller) {
  detail::CallSite site(caller, "linalg.inv");
  check_square(A, "linalg.inv");
  check_float(A, "linalg.inv");
  return factor(Routine::Inv, {A}, {0})[0];
}

Tensor det(const Tensor& A, Caller caller) {
  detail::CallSite site(caller, "linalg.det");
  check_square(A, "linalg.det");
  check_float(A, "linalg.det");
  auto [lu, sign] = lu_and_sign(A);
  Tensor d;
  {
    NoGradGuard no_grad;
    d = product_last(lu.diagonal(0, -2, -1)) * sign;
  }
  // d(det A) = tr(adj(A) dA): gA = g conj(adj(A)^T), the cofactors' conjugates, which exist for a
  // singular A too. With A = U diag(S) Vh they are conj(det(U) det(Vh)) U diag(prod of the other
  // S) Vh: no division.
  autograd::record("LinalgDetBackward0", {A}, {d}, {A}, [](const Grads& g, const Grads& s) {
    auto [U, S, Vh] = svd(s[0]);
    Tensor sign;
    {
      NoGradGuard no_grad; // +-1, locally constant
      sign = det(U) * det(Vh);
    }
    Tensor I = eye(S.size(-1), TensorOptions(S.dtype()).device(S.device()));
    Tensor others = (S.unsqueeze(-2) * (1 - I) + I).prod(-1);
    return Grads{(U * (others * (sign.conj() * g[0]).unsqueeze(-1)).unsqueeze(-2)).matmul(Vh)};
  });
  return d;
}

SlogdetResult slogdet(const Tensor& A, Caller caller) {
  detail::CallSite site(caller, "linalg.slogdet");
  check_square(A, "linalg.slogdet");
  check_float(A, "linalg.slogdet");
  auto [lu, perm] = lu_and_sign(A);
  Tensor sign, logabsdet;
  {
    NoGradGuard no_grad;
    Tensor diag = lu.diagonal(0, -2, -1);
    // A complex diagonal's sign is each entry over its magnitude (0 for a zero entry).
    Tensor unit = diag.is_complex()
                      ? diag / where(diag.abs().eq(0), ones_like(diag.abs()), diag.abs())
                      : diag.sign();
    sign = product_last(unit) * perm;
    logabsdet = diag.abs().log().sum(-1);
  }
  // A complex sign moves with A: its gradient turns the phase, i Im(g_sign conj(sign)).
  autograd::record("LinalgSlogdetBackward0", {A}, {sign, logabsdet}, {A, sign},
                   [](const Grads& g, const Grads& s) {
                     Tensor c = g[1];
                     if (s[1].is_complex()) c = complex(g[1], (g[0] * s[1].conj()).imag());
                     return Grads{scaled_inverse_t(s[0], c)};
                   });
  return {sign, logabsdet};
}

Tensor cholesky(const Tensor& A, bool upper, Caller caller) {
  detail::CallSite site(caller, "linalg.cholesky");
  check_square(A, "linalg.cholesky");
  check_float(A, "linalg.cholesky");
  return factor(Routine::Cholesky, {A}, {upper ? 1 : 0})[0];
}

QrResult qr(const Tensor& A, const std::string& mode, Caller caller) {
  detail::CallSite site(caller, "linalg.qr");
  check_matrix(A, "linalg.qr");
  check_float(A, "linalg.qr");
  const int64_t m = mode == "reduced" ? 0 : mode == "complete" ? 1 : mode == "r" ? 2 : -1;
  if (m < 0)
    throw Error(fmt::format("qr received unrecognized mode '{}' but expected one of 'reduced' "
                            "(default), 'r', or 'complete'",
                            mode));
  std::vector<Tensor> parts = factor(Routine::Qr, {A}, {m});
  if (m == 2) return {empty({0}, TensorOptions(A.dtype()).device(A.device())), parts[1]};
  return {parts[0], parts[1]};
}

SvdResult svd(const Tensor& A, bool full_matrices, Caller caller) {
  detail::CallSite site(caller, "linalg.svd");
  check_matrix(A, "linalg.svd");
  check_float(A, "linalg.svd");
  std::vector<Tensor> parts = factor(Routine::Svd, {A}, {full_matrices ? 1 : 0, 1});
  return {parts[0], parts[1].real(), parts[2]};
}

Tensor svdvals(const Tensor& A, Caller caller) {
  detail::CallSite site(caller, "linalg.svdvals");
  check_matrix(A, "linalg.svdvals");
  check_float(A, "linalg.svdvals");
  // The gradient needs the vectors.
  if (autograd::any_requires_grad({A})) return svd(A, false).S;
  return factor(Routine::Svd, {A}, {0, 0})[0].real();
}

namespace {
int64_t upper_of(const std::string& uplo) {
  if (uplo != "L" && uplo != "U" && uplo != "l" && uplo != "u")
    throw Error(fmt::format("Expected UPLO argument to be 'L' or 'U', but got {}", uplo));
  return uplo == "U" || uplo == "u" ? 1 : 0;
}
} // namespace

EighResult eigh(const Tensor& A, const std::string& UPLO, Caller caller) {
  detail::CallSite site(caller, "linalg.eigh");
  check_square(A, "linalg.eigh");
  check_float(A, "linalg.eigh");
  std::vector<Tensor> parts = factor(Routine::Eigh, {A}, {upper_of(UPLO), 1});
  return {parts[0].real(), parts[1]};
}

Tensor eigvalsh(const Tensor& A, const std::string& UPLO, Caller caller) {
  detail::CallSite site(caller, "linalg.eigvalsh");
  check_square(A, "linalg.eigvalsh");
  check_float(A, "linalg.eigvalsh");
  if (autograd::any_requires_grad({A})) return eigh(A, UPLO).eigenvalues;
  return factor(Routine::Eigh, {A}, {upper_of(UPLO), 0})[0].real();
}

namespace {
// The eigenvalues and (with `vectors`) eigenvectors of A, complex: the routine's parts (of a
// complex A's routine, complex numbers with no imaginary part) paired.
std::vector<Tensor> eig_values(const Tensor& A, bool vectors, const char* name) {
  check_square(A, name);
  check_float(A, name);
  NoGradGuard no_grad; // eig records its gradient itself
  std::vector<Tensor> p = factor(Routine::Eig, {A}, {vectors ? 1 : 0});
  std::vector<Tensor> out{tj::complex(p[0].real(), p[1].real())};
  if (vectors) out.push_back(tj::complex(p[2].real(), p[3].real()));
  return out;
}

// PyTorch's linalg_eig_backward for eigenvectors of norm 1: gA = V^-H (diag(gL) + (V^H gV -
// V^H V diag(Re(diag(V^H gV)))) / conj(E)) V^H, E_ij = L_j - L_i (1 on the diagonal). The
// eigenvectors are determined up to a phase each: a loss must not depend on it. A real A takes
// the real part (the engine casts it).
Grads eig_backward(const Grads& g, const Grads& s) {
  const Tensor &L = s[0], &V = s[1];
  const Tensor Vh = V.mH();
  const Tensor I = eye(L.size(-1), TensorOptions(L.dtype()).device(L.device()));
  Tensor VhgV = Vh.matmul(g[1]);
  VhgV = VhgV - Vh.matmul(V * VhgV.diagonal(0, -2, -1).real().unsqueeze(-2));
  const Tensor Lc = L.conj();
  const Tensor E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + I;
  const Tensor inner = VhgV / E + g[0].unsqueeze(-1) * I;
  return {solve(Vh, inner.matmul(Vh))};
}
} // namespace

EigResult eig(const Tensor& A, Caller caller) {
  detail::CallSite site(caller, "linalg.eig");
  std::vector<Tensor> p = eig_values(A, true, "linalg.eig");
  autograd::record("LinalgEigBackward0", {A}, {p[0], p[1]}, {p[0], p[1]}, eig_backward);
  return {p[0], p[1]};
}

Tensor eigvals(const Tensor& A, Caller caller) {
  detail::CallSite site(caller, "linalg.eigvals");
  if (autograd::any_requires_grad({A})) return eig(A).eigenvalues; // the vectors' gradient
  return eig_values(A, false, "linalg.eigvals")[0];
}

LstsqResult lstsq(const Tensor& A, const Tensor& B, std::optional<std::string> driver,
                  Caller caller) {
  return lstsq(A, B, std::nullopt, std::move(driver), caller);
}

LstsqResult lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond,
                  std::optional<std::string> driver, Caller caller) {
  detail::CallSite site(caller, "linalg.lstsq");
  if (A.dim() < 2) throw Error("torch.linalg.lstsq: input must have at least 2 dimensions.");
  if (B.dim() < 1) throw Error("torch.linalg.lstsq: other must have at least 1 dimension.");
  if (A.dtype() != B.dtype())
    throw Error(fmt::format("torch.linalg.lstsq: Expected input and other to have the same dtype, "
                            "but got input's dtype {} and other's dtype {}",
                            fe::cpp_type_name(A.dtype()), fe::cpp_type_name(B.dtype())));
  const int64_t diff = A.dim() - B.dim();
  if (diff < 0 || diff > 1)
    throw Error("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                "(input.dim() - other.dim()) <= 1");
  Tensor B2 = diff ? B.unsqueeze(-1) : B;
  if (A.size(-2) != B2.size(-2))
    throw Error(diff ? "torch.linalg.lstsq: input.size(-2) should match other.size(-1)"
                     : "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
  check_float(A, "torch.linalg.lstsq");
  const std::string name = driver.value_or("gelsy");
  if (name != "gelsy" && name != "gels" && name != "gelsd" && name != "gelss")
    throw Error("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, "
                "gelss)");
  auto [a, b] = broadcast_batch(A, B2);
  const int64_t d = name == "gelsy" ? 0 : name == "gels" ? 1 : name == "gelsd" ? 2 : 3;
  const int64_t m = A.size(-2), n = A.size(-1);
  // PyTorch's default cutoff: the dtype's epsilon times the larger dim.
  const double cutoff =
      rcond.value_or(epsilon(A.dtype()) * static_cast<double>(std::max<int64_t>({m, n, 1})));
  std::vector<Tensor> parts = factor(Routine::Lstsq, {a, b}, {d}, Scalar(cutoff));
  // Residuals and singular values are real, of a complex A too; the rank is an integer.
  const TensorOptions opts = TensorOptions(real_part_dtype(A.dtype())).device(A.device());
  Tensor none = empty({0}, opts), no_rank = empty({0}, opts.dtype(kInt64));
  Tensor x = diff ? parts[0].squeeze(-1) : parts[0];
  if (d == 0) return {x, none, parts[1].squeeze(-1).real().to(kInt64), none};
  if (d == 1) return {x, m > n ? parts[1].real() : none, no_rank, none};
  // The SVD drivers have residuals only where every matrix has full rank (PyTorch asks the rank
  // at once, as this does).
  Tensor rank = parts[1].squeeze(-1).real().to(kInt64);
  const bool residuals = m > n && (rank.numel() == 0 || rank.eq(n).all().item<bool>());
  return {x, residuals ? parts[3].real() : none, rank, parts[2].real()};
}

namespace {
// pinv(A): the reciprocals of the singular values (of the eigenvalues' magnitudes when
// `hermitian`) above eps * max(m, n) times the largest (PyTorch's rtol), the others zero.
Tensor pinv_value(const Tensor& A, bool hermitian) {
  const int64_t m = A.size(-2), n = A.size(-1);
  if (A.numel() == 0) {
    Shape s = batch_of(A);
    s.insert(s.end(), {n, m});
    return zeros(s, TensorOptions(A.dtype()).device(A.device()));
  }
  const double rtol = epsilon(A.dtype()) * static_cast<double>(std::max(m, n));
  if (hermitian) {
    auto [L, U] = eigh(A);
    Tensor tol = L.abs().amax(-1, true) * rtol;
    Tensor Linv = where(L.abs() > tol, L.reciprocal(), zeros_like(L));
    return (U * Linv.unsqueeze(-2)).matmul(U.mH());
  }
  auto [U, S, Vh] = svd(A, false);
  Tensor tol = S.narrow(-1, 0, 1) * rtol;
  Tensor Sinv = where(S > tol, S.reciprocal(), zeros_like(S));
  return (Vh.mH() * Sinv.unsqueeze(-2)).matmul(U.mH());
}
} // namespace

Tensor pinv(const Tensor& A, bool hermitian, Caller caller) {
  detail::CallSite site(caller, "linalg.pinv");
  check_matrix(A, "linalg.pinv");
  check_float(A, "linalg.pinv");
  Tensor P;
  {
    NoGradGuard no_grad; // one op, with PyTorch's gradient, however it is computed
    P = pinv_value(A, hermitian);
  }
  autograd::record("LinalgPinvBackward0", {A}, {P}, {A, P}, [](const Grads& g, const Grads& s) {
    return Grads{detail::pinv_backward(g[0], s[1], s[0])};
  });
  return P;
}

Tensor matrix_rank(const Tensor& A, bool hermitian, Caller caller) {
  detail::CallSite site(caller, "linalg.matrix_rank");
  check_matrix(A, "linalg.matrix_rank", "input");
  check_float(A, "linalg.matrix_rank");
  const int64_t m = A.size(-2), n = A.size(-1);
  const double eps = epsilon(A.dtype());
  NoGradGuard no_grad;
  Tensor S = hermitian ? eigvalsh(A).abs() : svdvals(A);
  if (S.size(-1) == 0) return zeros(batch_of(A), TensorOptions(kInt64).device(A.device()));
  Tensor tol = S.amax(-1, true) * (eps * static_cast<double>(std::max(m, n)));
  return (S > tol).sum(-1);
}

Tensor tensorsolve(const Tensor& A, const Tensor& B, IntArrayRef dims, Caller caller) {
  detail::CallSite site(caller, "linalg.tensorsolve");
  Tensor a = A;
  if (!dims.empty()) { // the dims named move to the end, in order
    std::vector<int64_t> perm, moved;
    for (int64_t d : dims)
      moved.push_back(ir::wrap_dim(d, A.dim()));
    for (int64_t d = 0; d < A.dim(); ++d)
      if (std::find(moved.begin(), moved.end(), d) == moved.end()) perm.push_back(d);
    perm.insert(perm.end(), moved.begin(), moved.end());
    a = A.permute(perm);
  }
  const Shape rest(a.sizes().begin() + std::min<int64_t>(B.dim(), a.dim()), a.sizes().end());
  const int64_t rows = ir::numel(rest), cols = B.numel();
  if (rows != cols)
    throw Error(
        fmt::format("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                    "== prod(self.shape[:other.ndim]), but got {} != {}",
                    rows, cols));
  return solve(a.reshape({rows, rows}), B.flatten()).reshape(rest);
}

Tensor tensorinv(const Tensor& A, int64_t ind, Caller caller) {
  detail::CallSite site(caller, "linalg.tensorinv");
  if (ind <= 0)
    throw Error(fmt::format("Expected a strictly positive integer for 'ind', but got {}", ind));
  const Shape s = A.sizes();
  const size_t cut = static_cast<size_t>(std::min<int64_t>(ind, A.dim()));
  const Shape front(s.begin(), s.begin() + static_cast<ptrdiff_t>(cut)),
      back(s.begin() + static_cast<ptrdiff_t>(cut), s.end());
  const int64_t p = ir::numel(front), q = ir::numel(back);
  if (p != q)
    throw Error(fmt::format("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                            "prod(self.shape[:ind]), but got {} != {}",
                            q, p));
  Shape out = back;
  out.insert(out.end(), front.begin(), front.end());
  const Tensor a = A.reshape({p, p});
  check_float(a, "linalg.inv");
  return factor(Routine::Inv, {a}, {1})[0].reshape(out);
}

} // namespace tj::linalg
