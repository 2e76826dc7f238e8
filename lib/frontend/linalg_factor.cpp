// The factorizations as tensors, and their gradients (PyTorch's formulas, real case).
#include "lib/frontend/linalg_factor.h"

#include <fmt/format.h>

#include "lib/autograd/formulas.h"
#include "lib/frontend/graph_builders.h"
#include "lib/frontend/tensor_impl.h"
#include "tensorjit/functions.h"
#include "tensorjit/indexing.h"
#include "tensorjit/linalg.h"

namespace tj::detail {
namespace {

using Grads = std::vector<Tensor>;

Tensor eye_like(int64_t k, const Tensor& like) {
  return eye(k, TensorOptions(like.dtype()).device(like.device()));
}

// (..., k) -> (..., k, k) with v on the diagonal.
Tensor diag_embed(const Tensor& v) { return v.unsqueeze(-2) * eye_like(v.size(-1), v); }

// X M^-1, as (M^-T X^T)^T.
Tensor solve_right(const Tensor& X, const Tensor& M) { return linalg::solve(M.mT(), X.mT()).mT(); }

// X = A^-1 B: gB = A^-H gX, gA = -gB X^H.
Grads solve_backward(const Grads& g, const Grads& s) {
  Tensor gB = linalg::solve(s[0].mH(), g[0]);
  return {-gB.matmul(s[2].mH()), gB};
}

// gA = -A^-H g A^-H.
Grads inv_backward(const Grads& g, const Grads& s) {
  Tensor t = s[1].mH();
  return {-t.matmul(g[0]).matmul(t)};
}

// A = L L^H: gA = L^-H Phi(L^H gL) L^-1, Phi making the lower triangle with half the diagonal
// Hermitian (PyTorch's; the diagonal's imaginary part drops).
Grads cholesky_backward(const Grads& g, const Grads& s, bool upper) {
  Tensor L = upper ? s[1].mH() : s[1], gL = upper ? g[0].mH() : g[0];
  Tensor P = L.mH().matmul(gL).tril();
  Tensor S;
  if (P.is_complex()) {
    Tensor phi = P.tril(-1) + diag_embed(P.diagonal(0, -2, -1) * 0.5);
    S = (phi + phi.mH()) * 0.5;
  } else {
    S = (P + P.tril(-1).mT()) * 0.5;
  }
  return {solve_right(linalg::solve(L.mH(), S), L)};
}

// A = QR with m >= n (Q m x n, R n x n, R's diagonal real as LAPACK makes it): gA = (gQ + Q
// copyltu(M)) R^-H, M = R gR^H - gQ^H Q, copyltu(M) M's strict lower triangle mirrored
// (conjugated) into its upper one, with the real part of M's diagonal.
Tensor qr_deep_backward(const Tensor& Q, const Tensor& R, const Tensor& gQ, const Tensor& gR) {
  Tensor M = R.matmul(gR.mH()) - gQ.mH().matmul(Q);
  Tensor lower = M.tril(-1);
  Tensor sym = lower + lower.mH() + diag_embed(M.diagonal(0, -2, -1).real().to(M.dtype()));
  return solve_right(gQ + Q.matmul(sym), R.mH());
}

Grads qr_backward(const Grads& g, const Grads& s, int64_t mode) {
  if (mode == 2)
    throw Error("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                "through linalg.qr.");
  const Tensor &A = s[0], &Q = s[1], &R = s[2];
  const int64_t m = A.size(-2), n = A.size(-1);
  if (mode == 1 && m > n)
    throw Error("The QR decomposition is not differentiable when mode='complete' and nrows > "
                "ncols.");
  if (m >= n) return {qr_deep_backward(Q, R, g[0], g[1])};
  // A = Q [U | V] with U square: X = A's first m columns as above, with Y = the rest feeding Q's
  // gradient through V; gY = Q gV.
  Tensor gV = g[1].narrow(-1, m, n - m);
  Tensor gQ = g[0] + A.narrow(-1, m, n - m).matmul(gV.mH());
  Tensor gX = qr_deep_backward(Q, R.narrow(-1, 0, m), gQ, g[1].narrow(-1, 0, m));
  return {cat({gX, Q.matmul(gV)}, -1)};
}

// PyTorch's svd_backward, on the reduced factors. Complex singular vectors are determined up to
// a phase each: a loss that depends on it has no gradient (not checked).
Grads svd_backward(const Grads& g, const Grads& s, bool full) {
  const Tensor& A = s[0];
  Tensor U = s[1], S = s[2], Vh = s[3], gU = g[0], gS = g[1], gVh = g[2];
  const int64_t m = A.size(-2), n = A.size(-1), k = S.size(-1);
  if (full) { // the columns past k are not determined by A: they take no gradient
    U = U.narrow(-1, 0, k), gU = gU.narrow(-1, 0, k);
    Vh = Vh.narrow(-2, 0, k), gVh = gVh.narrow(-2, 0, k);
  }
  auto skew = [](const Tensor& X) { return X - X.mH(); };
  Tensor UhgU = skew(U.mH().matmul(gU)), VhgV = skew(Vh.matmul(gVh.mH()));
  Tensor S2 = S * S;
  Tensor E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye_like(k, S);
  Tensor gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E + diag_embed(gS);
  if (A.is_complex()) gA = gA + diag_embed(UhgU.diagonal(0, -2, -1) / (2 * S));
  if (m > n) {
    gA = U.matmul(gA);
    Tensor gUSinv = gU / S.unsqueeze(-2);
    gA = gA + gUSinv - U.matmul(U.mH().matmul(gUSinv));
    return {gA.matmul(Vh)};
  }
  if (m < n) {
    gA = gA.matmul(Vh);
    Tensor SinvgVh = gVh / S.unsqueeze(-1);
    gA = gA + SinvgVh - SinvgVh.matmul(Vh.mH()).matmul(Vh);
    return {U.matmul(gA)};
  }
  return {U.matmul(gA).matmul(Vh)};
}

// A = V diag(L) V^H: gA = V (diag(gL) + skew(V^H gV) / E) V^H, E_ij = L_j - L_i off the
// diagonal, skew(X) = (X - X^H) / 2: only a skew-Hermitian change keeps V unitary (PyTorch's
// projection), and it makes gA Hermitian. Complex eigenvectors are determined up to a phase each,
// as the singular vectors.
Grads eigh_backward(const Grads& g, const Grads& s) {
  const Tensor &L = s[1], &V = s[2];
  const int64_t n = L.size(-1);
  Tensor I = eye_like(n, L);
  Tensor E = L.unsqueeze(-2) - L.unsqueeze(-1) + I;
  Tensor VhgV = V.mH().matmul(g[1]);
  Tensor inner = (VhgV - VhgV.mH()) * 0.5 / E * (1 - I) + diag_embed(g[0]);
  return {V.matmul(inner).matmul(V.mH())};
}

// X = pinv(A) B: gB = pinv(A)^T gX, gA through pinv.
Grads lstsq_backward(const Grads& g, const Grads& s) {
  const Tensor &A = s[0], &B = s[1];
  Tensor P = linalg::pinv(A);
  return {pinv_backward(g[0].matmul(B.mT()), P, A), P.mT().matmul(g[0])};
}

} // namespace

Tensor pinv_backward(const Tensor& g, const Tensor& P, const Tensor& A) {
  const Tensor Ph = P.mH(), gh = g.mH();
  if (A.size(-2) <= A.size(-1)) {
    Tensor K = gh.matmul(P), KPh = K.matmul(Ph);
    return -P.matmul(K).mH() + KPh - A.matmul(P).matmul(KPh) +
           Ph.matmul(P).matmul(gh - K.matmul(A));
  }
  Tensor K = P.matmul(gh), PhK = Ph.matmul(K);
  return -K.matmul(P).mH() + (gh - A.matmul(K)).matmul(P).matmul(Ph) + PhK -
         PhK.matmul(P).matmul(A);
}

std::vector<Tensor> factor(ir::Routine r, const std::vector<Tensor>& operands,
                           const std::vector<int64_t>& params, Scalar value) {
  const Device device = operands.at(0).device();
  if (device.is_cuda()) { // LAPACK reads host memory
    std::vector<Tensor> host;
    for (const Tensor& x : operands)
      host.push_back(x.to(kCPU));
    std::vector<Tensor> parts = factor(r, host, params, value);
    for (Tensor& p : parts)
      p = p.to(device);
    return parts;
  }
  std::vector<ir::NodePtr> src;
  std::vector<Shape> shapes;
  for (const Tensor& x : operands) {
    src.push_back(node_of(x));
    shapes.push_back(x.sizes());
  }
  ir::NodePtr call = ir::make_call(r, src, params, value);
  const Shape batch = ir::routine_batch(shapes[0]);
  const int64_t last = static_cast<int64_t>(batch.size());
  std::vector<Tensor> parts;
  int64_t at = 0;
  for (const Shape& p : ir::routine_parts(r, shapes, params)) {
    Shape s = batch;
    s.insert(s.end(), p.begin(), p.end());
    const int64_t size = ir::numel(p);
    const bool whole = size == call->shape.back(); // the one part: no slice to take
    parts.push_back(wrap(fe::reshape(whole ? call : fe::slice(call, last, at, at + size, 1), s)));
    at += size;
  }
  std::vector<Tensor> saved = operands;
  saved.insert(saved.end(), parts.begin(), parts.end());
  const char* grad_fn = ir::info(r).grad_fn.data();
  switch (r) {
  case ir::Routine::Solve:
    autograd::record(grad_fn, operands, parts, saved, solve_backward);
    break;
  case ir::Routine::Inv:
    autograd::record(grad_fn, operands, parts, saved, inv_backward);
    break;
  case ir::Routine::Cholesky:
    autograd::record(grad_fn, operands, parts, saved,
                     [upper = params[0] != 0](const Grads& g, const Grads& s) {
                       return cholesky_backward(g, s, upper);
                     });
    break;
  case ir::Routine::Qr:
    autograd::record(
        grad_fn, operands, parts, saved,
        [mode = params[0]](const Grads& g, const Grads& s) { return qr_backward(g, s, mode); });
    break;
  case ir::Routine::Svd:
    if (params[1])
      autograd::record(grad_fn, operands, parts, saved,
                       [full = params[0] != 0](const Grads& g, const Grads& s) {
                         return svd_backward(g, s, full);
                       });
    break;
  case ir::Routine::Eigh:
    if (params[1]) autograd::record(grad_fn, operands, parts, saved, eigh_backward);
    break;
  case ir::Routine::Lstsq: // the solution alone has a gradient
    autograd::record(grad_fn, operands, {parts[0]}, operands, lstsq_backward);
    break;
  default: // Lu: its frontend ops (det, slogdet) record their own
    break;
  }
  return parts;
}

} // namespace tj::detail
