// tj::linalg: each function against the identities its result satisfies, for random
// well-conditioned batches in float32 and float64; the LAPACK Calls against the reference
// interpreter; PyTorch's printed results and errors; the graph and dump views of the calls.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>

#include "lib/frontend/tensor_impl.h"
#include "lib/interp/interpreter.h"
#include "test/support/tolerance.h"

using namespace tj;
using Catch::Contains;

namespace {

Shape with(Shape batch, std::initializer_list<int64_t> last) {
  batch.insert(batch.end(), last);
  return batch;
}

// Random matrices far from singular: a Gaussian matrix plus n on the diagonal.
Tensor well(const Shape& batch, int64_t n, DType dt) {
  return randn(with(batch, {n, n}), dtype(dt)) + eye(n, dtype(dt)) * double(n);
}
// Symmetric positive-definite.
Tensor spd(const Shape& batch, int64_t n, DType dt) {
  Tensor x = randn(with(batch, {n, n}), dtype(dt));
  return x.matmul(x.mT()) + eye(n, dtype(dt)) * double(n);
}

double tol(DType dt) { return dt == kFloat64 ? 1e-10 : 2e-4; }
bool near(const Tensor& a, const Tensor& b, DType dt) { return allclose(a, b, tol(dt), tol(dt)); }
Tensor eye_as(const Tensor& A) { return eye(A.size(-1), dtype(A.dtype())).expand(A.sizes()); }
std::string printed(const auto& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

using Loss = std::function<Tensor(const Tensor&)>;

// The gradient of the scalar loss f at x (float64) by autograd.
Tensor analytic_grad(const Loss& f, const Tensor& x) {
  Tensor leaf = x.detach().clone().requires_grad_();
  f(leaf).backward();
  return leaf.grad();
}

// Its central differences, along each element or, for a function of symmetric matrices
// (`symmetric`, x n x n), along the symmetric (E_ij + E_ji) / 2.
Tensor numeric_grad(const Loss& f, const Tensor& x, bool symmetric = false) {
  const double eps = 1e-6;
  const std::vector<double> base = x.to_vector<double>();
  const size_t n = static_cast<size_t>(x.size(-1));
  std::vector<double> out(base.size());
  for (size_t k = 0; k < base.size(); ++k) {
    auto at = [&](double d) {
      std::vector<double> v = base;
      if (symmetric) {
        v[k] += d / 2;
        v[k % n * n + k / n] += d / 2;
      } else {
        v[k] += d;
      }
      NoGradGuard no_grad;
      return f(tensor(v, x.sizes(), dtype(kFloat64))).item<double>();
    };
    out[k] = (at(eps) - at(-eps)) / (2 * eps);
  }
  return tensor(out, x.sizes(), dtype(kFloat64));
}

std::string grad_fn_of(const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : "None"; }

const DType kDtypes[] = {kFloat32, kFloat64};
const Shape kBatches[] = {{}, {3}, {2, 2}};

} // namespace

TEST_CASE("linalg: solve, inv and their batches", "[linalg]") {
  manual_seed(1);
  for (DType dt : kDtypes)
    for (const Shape& batch : kBatches) {
      INFO(short_dtype_name(dt) << " batch " << test::shape_str(batch));
      Tensor A = well(batch, 5, dt), B = randn(with(batch, {5, 3}), dtype(dt));
      Tensor X = linalg::solve(A, B);
      CHECK(X.sizes() == with(batch, {5, 3}));
      CHECK(near(A.matmul(X), B, dt));
      Tensor Y = linalg::solve(A, B.mT(), /*left=*/false); // Y A = B^T
      CHECK(near(Y.matmul(A), B.mT(), dt));
      Tensor b = randn(with(batch, {5}), dtype(dt)); // a vector (or a batch of them)
      Tensor x = linalg::solve(A, b);
      CHECK(x.sizes() == b.sizes());
      CHECK(near(A.matmul(x.unsqueeze(-1)).squeeze(-1), b, dt));
      Tensor Ai = linalg::inv(A);
      CHECK(near(A.matmul(Ai), eye_as(A), dt));
      CHECK(near(Ai.matmul(A), eye_as(A), dt));
    }
  // Batch dims broadcast, and a transposed (strided) A is read where it lies.
  Tensor A = well({2, 1}, 4, kFloat64), B = randn({3, 4, 2}, dtype(kFloat64));
  Tensor X = linalg::solve(A, B);
  CHECK(X.sizes() == Shape{2, 3, 4, 2});
  CHECK(near(A.matmul(X), B.expand({2, 3, 4, 2}), kFloat64));
  Tensor At = A.mT();
  CHECK(near(At.matmul(linalg::solve(At, B)), B.expand({2, 3, 4, 2}), kFloat64));
  // Empty batches and 0x0 matrices.
  CHECK(linalg::solve(well({0}, 3, kFloat32), randn({0, 3, 2})).sizes() == Shape{0, 3, 2});
  CHECK(linalg::inv(zeros({2, 0, 0})).sizes() == Shape{2, 0, 0});
  CHECK(linalg::det(zeros({0, 0})).item<float>() == 1.0f);
}

TEST_CASE("linalg: det and slogdet", "[linalg]") {
  manual_seed(2);
  Tensor A = tensor({{2., 3., -1.}, {1., -2., 8.}, {6., 1., -3.}});
  CHECK(linalg::det(A).item<float>() == 136.0f);
  Tensor P = tensor({{0., 1.}, {1., 0.}}); // a row swap: -1
  CHECK(linalg::det(P).item<float>() == -1.0f);
  CHECK(linalg::det(tensor({{1., 2.}, {2., 4.}})).item<float>() == 0.0f);
  auto [sign0, log0] = linalg::slogdet(tensor({{1., 2.}, {2., 4.}}));
  CHECK(sign0.item<float>() == 0.0f);
  CHECK(std::isinf(log0.item<float>()));
  for (DType dt : kDtypes) {
    Tensor M = well({4}, 6, dt) * -1; // an even size: positive and negative dets both likely
    Tensor d = linalg::det(M);
    auto [sign, logabsdet] = linalg::slogdet(M);
    CHECK(near(sign * logabsdet.exp(), d, dt));
    // det of a triangular matrix: the product of its diagonal.
    Tensor T = M.triu();
    CHECK(near(linalg::det(T), T.diagonal(0, -2, -1).prod(-1), dt));
    // det(AB) = det(A) det(B)
    Tensor N = well({4}, 6, dt);
    CHECK(allclose(linalg::det(M.matmul(N)), d * linalg::det(N), 1e-3, 0));
  }
}

TEST_CASE("linalg: cholesky, qr, svd, eigh", "[linalg]") {
  manual_seed(3);
  for (DType dt : kDtypes)
    for (const Shape& batch : kBatches) {
      INFO(short_dtype_name(dt) << " batch " << test::shape_str(batch));
      Tensor S = spd(batch, 5, dt);
      Tensor L = linalg::cholesky(S);
      CHECK(near(L.matmul(L.mT()), S, dt));
      CHECK(near(L, L.tril(), dt));
      Tensor U = linalg::cholesky(S, /*upper=*/true);
      CHECK(near(U.mT().matmul(U), S, dt));
      CHECK(near(U, U.triu(), dt));

      for (auto [m, n] : {std::pair{6, 4}, {4, 6}, {5, 5}}) {
        INFO(m << "x" << n);
        Tensor A = randn(with(batch, {m, n}), dtype(dt));
        const int64_t k = std::min(m, n);
        auto [Q, R] = linalg::qr(A);
        CHECK(Q.sizes() == with(batch, {m, k}));
        CHECK(R.sizes() == with(batch, {k, n}));
        CHECK(near(Q.matmul(R), A, dt));
        CHECK(near(Q.mT().matmul(Q), eye(k, dtype(dt)).expand(with(batch, {k, k})), dt));
        CHECK(near(R, R.triu(), dt));
        auto [Qc, Rc] = linalg::qr(A, "complete");
        CHECK(Qc.sizes() == with(batch, {m, m}));
        CHECK(near(Qc.matmul(Rc), A, dt));
        auto [Qr, Rr] = linalg::qr(A, "r");
        CHECK(Qr.sizes() == Shape{0});
        CHECK(near(Rr, R, dt));

        auto [Us, Ss, Vh] = linalg::svd(A, /*full_matrices=*/false);
        CHECK(Ss.sizes() == with(batch, {k}));
        CHECK(near((Us * Ss.unsqueeze(-2)).matmul(Vh), A, dt));
        CHECK(near(Us.mT().matmul(Us), eye(k, dtype(dt)).expand(with(batch, {k, k})), dt));
        CHECK((Ss.narrow(-1, 0, k - 1) >= Ss.narrow(-1, 1, k - 1)).all().item<bool>());
        CHECK(near(linalg::svdvals(A), Ss, dt));
        auto [Uf, Sf, Vf] = linalg::svd(A);
        CHECK(Uf.sizes() == with(batch, {m, m}));
        CHECK(Vf.sizes() == with(batch, {n, n}));
        CHECK(near(Vf.matmul(Vf.mT()), eye(n, dtype(dt)).expand(with(batch, {n, n})), dt));
      }

      Tensor H = S - eye(5, dtype(dt)) * 8.0; // symmetric, indefinite
      auto [ev, V] = linalg::eigh(H);
      CHECK(near(H.matmul(V), V * ev.unsqueeze(-2), dt));
      CHECK((ev.narrow(-1, 0, 4) <= ev.narrow(-1, 1, 4)).all().item<bool>());
      CHECK(near(linalg::eigvalsh(H), ev, dt));
      // The triangle read: "U" reads the upper one.
      Tensor mixed = H.tril() + H.triu(1) * 7;
      CHECK(near(linalg::eigvalsh(mixed, "L"), ev, dt));
      CHECK(near(linalg::eigvalsh(mixed.mT(), "U"), ev, dt));
    }
}

TEST_CASE("linalg: lstsq, pinv, matrix_rank", "[linalg]") {
  manual_seed(4);
  for (DType dt : kDtypes) {
    INFO(short_dtype_name(dt));
    Tensor A = randn({2, 7, 4}, dtype(dt)), B = randn({2, 7, 3}, dtype(dt));
    auto r = linalg::lstsq(A, B);
    CHECK(r.solution.sizes() == Shape{2, 4, 3});
    // The normal equations: A^T (A X - B) = 0.
    Tensor res = A.matmul(r.solution) - B;
    CHECK(allclose(A.mT().matmul(res), zeros({2, 4, 3}, dtype(dt)), 0, 10 * tol(dt)));
    CHECK(r.rank.dtype() == kInt64);
    CHECK(r.rank.to_vector<int64_t>() == std::vector<int64_t>{4, 4});
    CHECK(r.residuals.sizes() == Shape{0});
    auto g = linalg::lstsq(A, B, "gels");
    CHECK(near(g.solution, r.solution, dt));
    CHECK(allclose(g.residuals, (res * res).sum(-2), 10 * tol(dt), 10 * tol(dt)));
    CHECK(g.rank.sizes() == Shape{0});
    for (const char* svd_driver : {"gelsd", "gelss"}) {
      auto d = linalg::lstsq(A, B, svd_driver);
      CHECK(near(d.solution, r.solution, dt));
      CHECK(allclose(d.residuals, g.residuals, 10 * tol(dt), 10 * tol(dt)));
      CHECK(d.rank.to_vector<int64_t>() == std::vector<int64_t>{4, 4});
      CHECK(near(d.singular_values, linalg::svdvals(A), dt));
    }
    // Rank-deficient: gelsy and gelsd find the rank, and the minimum-norm solution.
    Tensor deficient = randn({7, 2}, dtype(dt)).matmul(randn({2, 4}, dtype(dt)));
    auto lr = linalg::lstsq(deficient, B.select(0, 0), "gelsd");
    CHECK(lr.rank.item<int64_t>() == 2);
    CHECK(lr.residuals.sizes() == Shape{0});
    CHECK(linalg::lstsq(deficient, B.select(0, 0)).rank.item<int64_t>() == 2);
    CHECK(allclose(lr.solution, linalg::pinv(deficient).matmul(B.select(0, 0)), 100 * tol(dt),
                   100 * tol(dt)));
    // A user's rcond: singular values 10, 1 and 1e-3; a cutoff of 1e-2 drops the last (the
    // truncated SVD's solution), one of 1e-5 keeps it.
    {
      Tensor U = linalg::qr(randn({7, 3}, dtype(dt))).Q, V = linalg::qr(randn({3, 3}, dtype(dt))).Q;
      Tensor s = tensor({10.0, 1.0, 1e-3}, dtype(dt));
      Tensor M = (U * s).matmul(V.mT()), b = B.select(0, 0);
      Tensor kept = tensor({0.1, 1.0, 0.0}, dtype(dt)); // 1/s where s is kept
      Tensor truncated = (V * kept).matmul(U.mT()).matmul(b);
      for (const char* driver : {"gelsy", "gelsd", "gelss"}) {
        INFO(driver);
        auto cut = linalg::lstsq(M, b, 1e-2, driver);
        CHECK(cut.rank.item<int64_t>() == 2);
        CHECK(linalg::lstsq(M, b, 1e-5, driver).rank.item<int64_t>() == 3);
        if (std::string(driver) != "gelsy") // gelsy's rank comes from its own QR's estimate
          CHECK(allclose(cut.solution, truncated, 100 * tol(dt), 100 * tol(dt)));
      }
      // The cutoff is an attribute of the Call, printed and parsed back.
      const std::string text = ir::print({linalg::lstsq(M, b, 0.25).solution});
      CHECK_THAT(text, Contains("rcond=0.25"));
      CHECK(ir::print(ir::parse(text).outputs) == text);
    }
    Tensor x = linalg::lstsq(A, B.select(-1, 0)).solution; // a vector right-hand side
    CHECK(near(x, r.solution.select(-1, 0), dt));

    Tensor Ap = linalg::pinv(A);
    CHECK(Ap.sizes() == Shape{2, 4, 7});
    CHECK(near(A.matmul(Ap).matmul(A), A, dt));
    CHECK(near(Ap.matmul(B), r.solution, dt));
    Tensor S = spd({}, 4, dt) - eye(4, dtype(dt)) * 6;
    CHECK(near(linalg::pinv(S, /*hermitian=*/true), linalg::inv(S), dt));

    Tensor low = randn({3, 6, 2}, dtype(dt)).matmul(randn({3, 2, 5}, dtype(dt))); // rank 2
    CHECK(linalg::matrix_rank(low).to_vector<int64_t>() == std::vector<int64_t>{2, 2, 2});
    CHECK(linalg::matrix_rank(spd({}, 4, dt), true).item<int64_t>() == 4);
  }
}

TEST_CASE("linalg: products, powers, tensor solves and norms", "[linalg]") {
  manual_seed(5);
  Tensor v1 = tensor({1., 0., 0.}), v2 = tensor({0., 1., 0.});
  CHECK(printed(linalg::cross(v2, v1)) == "tensor([ 0.,  0., -1.])");
  Tensor a = randn({4, 3, 2}, dtype(kFloat64)), b = randn({4, 3, 2}, dtype(kFloat64));
  Tensor c = linalg::cross(a, b, 1);
  CHECK(near((c * a).sum(1), zeros({4, 2}, dtype(kFloat64)), kFloat64)); // orthogonal to both
  CHECK(near((c * b).sum(1), zeros({4, 2}, dtype(kFloat64)), kFloat64));

  Tensor A = well({2}, 4, kFloat64) / 4;
  CHECK(near(linalg::matrix_power(A, 0), eye_as(A), kFloat64));
  CHECK(near(linalg::matrix_power(A, 1), A, kFloat64));
  CHECK(near(linalg::matrix_power(A, 5), A.matmul(A).matmul(A).matmul(A).matmul(A), kFloat64));
  CHECK(near(linalg::matrix_power(A, -2), linalg::inv(A.matmul(A)), kFloat64));
  CHECK(linalg::matrix_power(tensor({{1, 1}, {1, 0}}), 10).to_vector<int64_t>() ==
        std::vector<int64_t>{89, 55, 55, 34});

  Tensor m1 = randn({10, 40}, dtype(kFloat64)), m2 = randn({40, 3}, dtype(kFloat64)),
         m3 = randn({3, 50}, dtype(kFloat64)), m4 = randn({50}, dtype(kFloat64));
  CHECK(near(linalg::multi_dot({m1, m2, m3, m4}), m1.matmul(m2).matmul(m3).matmul(m4), kFloat64));
  CHECK(linalg::multi_dot({m1.select(0, 0), m2, m3, m4}).dim() == 0);

  // torch.linalg.tensorsolve's and tensorinv's documented examples.
  Tensor T = eye(2 * 3 * 4, dtype(kFloat64)).reshape({2 * 3, 4, 2, 3, 4});
  Tensor Bt = randn({2 * 3, 4}, dtype(kFloat64));
  Tensor Xt = linalg::tensorsolve(T, Bt);
  CHECK(Xt.sizes() == Shape{2, 3, 4});
  CHECK(near(tensordot(T, Xt, {2, 3, 4}, {0, 1, 2}), Bt, kFloat64));
  Tensor I = eye(4 * 6, dtype(kFloat64)).reshape({4, 6, 8, 3});
  Tensor Iinv = linalg::tensorinv(I, 2);
  CHECK(Iinv.sizes() == Shape{8, 3, 4, 6});
  Tensor Bi = randn({4, 6}, dtype(kFloat64));
  CHECK(near(tensordot(Iinv, Bi, {2, 3}, {0, 1}), linalg::tensorsolve(I, Bi), kFloat64));

  Tensor M = tensor({{1., -2., 3.}, {-4., 5., -6.}});
  CHECK(linalg::vector_norm(M).item<float>() == Approx(std::sqrt(91.0)));
  CHECK(linalg::vector_norm(M, 1).item<float>() == 21.0f);
  CHECK(linalg::vector_norm(M, INFINITY).item<float>() == 6.0f);
  CHECK(linalg::vector_norm(M, 0).item<float>() == 6.0f);
  CHECK(linalg::vector_norm(M, 2, {1}).to_vector<float>()[0] == Approx(std::sqrt(14.0)));
  CHECK(linalg::matrix_norm(M).item<float>() == Approx(std::sqrt(91.0)));
  CHECK(linalg::matrix_norm(M, 1).item<float>() == 9.0f);         // largest column sum
  CHECK(linalg::matrix_norm(M, -1).item<float>() == 5.0f);        // smallest column sum
  CHECK(linalg::matrix_norm(M, INFINITY).item<float>() == 15.0f); // largest row sum
  CHECK(linalg::matrix_norm(M, -INFINITY).item<float>() == 6.0f);
  Tensor sv = linalg::svdvals(M);
  CHECK(linalg::matrix_norm(M, 2).item<float>() == Approx(sv.max().item<float>()));
  CHECK(linalg::matrix_norm(M, -2).item<float>() == Approx(sv.min().item<float>()));
  CHECK(linalg::matrix_norm(M, "nuc").item<float>() == Approx(sv.sum().item<float>()));
  CHECK(linalg::matrix_norm(M.unsqueeze(0), "fro", {-1, -2}, true).sizes() == Shape{1, 1, 1});
  CHECK(linalg::norm(M).item<float>() == Approx(std::sqrt(91.0)));
  CHECK(linalg::norm(M, "nuc").item<float>() == Approx(sv.sum().item<float>()));
  CHECK(linalg::norm(M, 1).item<float>() == 9.0f); // a matrix norm: 2-D and an ord
  CHECK(linalg::norm(M, 1, {1}).to_vector<float>() == std::vector<float>{6, 15});
}

TEST_CASE("linalg: the seed tutorials' results, printed", "[linalg][examples]") {
  Tensor A = tensor({{2., 3., -1.}, {1., -2., 8.}, {6., 1., -3.}});
  Tensor b = tensor({5., 21., -1.});
  Tensor x = linalg::solve(A, b);
  CHECK(printed(x) == "tensor([1., 2., 3.])");
  CHECK(allclose(A.matmul(x), b));
  Tensor A4 = tensor({{1.5091, 2.0820, 1.7067, 2.3804},
                      {-1.1256, -0.3170, -1.0925, -0.0852},
                      {0.3276, -0.7607, -1.5991, 0.0185},
                      {-0.7504, 0.1854, 0.6211, 0.6382}});
  Tensor b4 = tensor({-1.0886, -0.2666, 0.1894, -0.2190});
  Tensor x4 = linalg::solve(A4, b4);
  CHECK(printed(x4) == "tensor([ 0.1992, -0.7011,  0.2541, -0.1526])");
  CHECK(allclose(A4.matmul(x4), b4));
  // m3 = m1 @ (3 I), m1 random in the seed: these values print as the seed's m1, m3 and svd(m3)
  // all do (the seed's printed m1 itself rounds too much for the last digits of the rest).
  Tensor m1 = tensor({{0.7375, 0.83283}, {0.84441, 0.29407}});
  CHECK(printed(m1) == "tensor([[0.7375, 0.8328],\n        [0.8444, 0.2941]])");
  Tensor m3 = linalg::matmul(m1, tensor({{3., 0.}, {0., 3.}}));
  CHECK(printed(m3) == "tensor([[2.2125, 2.4985],\n        [2.5332, 0.8822]])");
  CHECK(printed(linalg::svd(m3)) == "torch.return_types.linalg_svd(\n"
                                    "U=tensor([[-0.7889, -0.6145],\n"
                                    "        [-0.6145,  0.7889]]),\n"
                                    "S=tensor([4.1498, 1.0548]),\n"
                                    "Vh=tensor([[-0.7957, -0.6056],\n"
                                    "        [ 0.6056, -0.7957]]))");
  auto [U, S, Vh] = linalg::svd(m3); // structured bindings
  CHECK(near((U * S.unsqueeze(-2)).matmul(Vh), m3, kFloat32));
  CHECK(printed(linalg::slogdet(A)) ==
        "torch.return_types.linalg_slogdet(\nsign=tensor(1.),\nlogabsdet=tensor(4.9127))");
}

TEST_CASE("linalg: errors in PyTorch's words", "[linalg][errors]") {
  auto fails = [](auto&& f, const auto& message) { CHECK_THROWS_WITH(f(), message); };
  Tensor singular = tensor({{1., 2.}, {2., 4.}});
  fails([&] { return linalg::inv(singular).sum().item<float>(); },
        Contains("linalg.inv: The diagonal element 2 is zero, the inversion could not be "
                 "completed because the input matrix is singular."));
  fails(
      [&] {
        return linalg::inv(stack({eye(2), singular})).sum().item<float>();
      },
      Contains("linalg.inv: (Batch element 1): The diagonal element 2 is zero"));
  fails([&] { return linalg::solve(singular, ones({2})).sum().item<float>(); },
        Contains("torch.linalg.solve: The solver failed because the input matrix is singular."));
  fails(
      [&] {
        return linalg::cholesky(tensor({{1., 2.}, {2., 1.}})).sum().item<float>();
      },
      Contains("linalg.cholesky: The factorization could not be completed because the input is "
               "not positive-definite (the leading minor of order 2 is not positive-definite)."));
  fails(
      [&] {
        return linalg::inv(ones({2, 3}));
      },
      "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices");
  fails([&] { return linalg::det(ones({3})); },
        "linalg.det: The input tensor A must have at least 2 dimensions.");
  fails(
      [&] {
        return linalg::inv(ones({2, 2}, dtype(kInt64)));
      },
      "linalg.inv: Expected a floating point or complex tensor as input. Got Long");
  fails(
      [&] {
        return linalg::svd(ones({2, 2}, dtype(kFloat16))).S;
      },
      "linalg.svd: Low precision dtypes not supported. Got Half");
  fails(
      [&] {
        return linalg::solve(eye(3), ones({4, 2}));
      },
      "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x2)");
  fails([&] { return linalg::solve(eye(3), ones({3}, dtype(kFloat64))); },
        "linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B "
        "of type Double instead");
  fails([&] { return linalg::qr(eye(3), "full").Q; },
        "qr received unrecognized mode 'full' but expected one of 'reduced' (default), 'r', or "
        "'complete'");
  fails([&] { return linalg::eigh(eye(3), "X").eigenvalues; },
        "Expected UPLO argument to be 'L' or 'U', but got X");
  fails([&] { return linalg::lstsq(eye(3), ones({3}), "gelsx").solution; },
        "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  fails(
      [&] {
        return linalg::cross(ones({2, 3}), ones({2, 4}));
      },
      "linalg.cross: inputs dimension -1 must have length 3. Got 3 and 4");
  fails(
      [&] {
        return linalg::multi_dot({ones({2, 3})});
      },
      "multi_dot(): expected at least 2 tensors but got 1");
  fails(
      [&] {
        return linalg::multi_dot({ones({2, 3}), ones({4, 2})});
      },
      "multi_dot(): tensors 0 and 1 with shapes [2, 3] and [4, 2] cannot be multiplied");
  fails([&] { return linalg::matrix_norm(eye(3), "abc"); },
        "linalg.matrix_norm: Order abc not supported.");
  fails([&] { return linalg::matrix_norm(eye(3), 3); },
        "linalg.matrix_norm: Order 3 not supported.");
  fails(
      [&] {
        return linalg::norm(ones({2, 2, 2}), 2);
      },
      "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D.");
  fails(
      [&] {
        return linalg::tensorinv(ones({2, 3}), 1);
      },
      "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
      "prod(self.shape[:ind]), but got 3 != 2");
  fails(
      [&] {
        return linalg::tensorinv(zeros({6, 2, 3}), 1).sum().item<float>();
      },
      Contains("Failed to invert the input tensor, because it is singular."));
  // Nothing was left half-computed: the same tensor fails again, and a good one computes.
  Tensor bad = linalg::inv(singular);
  CHECK_THROWS(bad.sum().item<float>());
  CHECK_THROWS(bad.sum().item<float>());
  CHECK(linalg::inv(eye(2)).sum().item<float>() == 2.0f);
}

TEST_CASE("linalg: LAPACK calls against the reference interpreter, and in dumps",
          "[linalg][interp]") {
  manual_seed(6);
  for (DType dt : kDtypes) {
    Tensor A = well({3}, 5, dt), B = randn({3, 5, 2}, dtype(dt)), R = randn({3, 6, 4}, dtype(dt));
    Tensor S = spd({3}, 5, dt);
    const std::pair<const char*, Tensor> cases[] = {
        {"solve", linalg::solve(A, B) * 2 + 1},
        {"inv", linalg::inv(A)},
        {"det", linalg::det(A)},
        {"cholesky", linalg::cholesky(S)},
        {"qr R", linalg::qr(R).R.abs()}, // signs are LAPACK's choice: compare magnitudes
        {"svdvals", linalg::svdvals(R)},
        {"eigvalsh", linalg::eigvalsh(S)},
        {"lstsq", linalg::lstsq(R.mT().matmul(R), B.narrow(-2, 0, 4)).solution},
    };
    for (const auto& [what, t] : cases) {
      INFO(what << " " << short_dtype_name(dt));
      const interp::HostArray ref = interp::evaluate(detail::node_of(t));
      const double rel = dt == kFloat64 ? 1e-11 : 1e-4;
      const std::string diff = test::compare(test::read_back(t), ref, {rel, rel}, what);
      INFO(diff);
      CHECK(diff.empty());
    }
  }
  // The text form carries the routines and their attributes, and parses back.
  Tensor E = linalg::eigh(spd({}, 3, kFloat64), "U").eigenvectors;
  const std::string text = ir::dump({E}, "graph");
  CHECK_THAT(text, Contains("Call eigh") && Contains("upper=1 vectors=1"));
  const std::string schedule = ir::dump({linalg::svd(eye(4)).U + 1}, "schedule");
  CHECK_THAT(schedule, Contains("call svd by LAPACK"));
}

TEST_CASE("linalg: a parsed graph computes and differentiates its factorizations",
          "[linalg][calls]") {
  manual_seed(8);
  Tensor A = well({2}, 3, kFloat64);
  eval({A});
  auto f = [](const Tensor& a) {
    auto [U, S, Vh] = linalg::svd(a * 2);
    return (S * S).sum() + U.matmul(Vh).sum() + linalg::inv(a).sum() + linalg::det(a).sum();
  };
  auto h = [](const Tensor& a) {
    auto [U, S, Vh] = linalg::svd(a * 2);
    auto [L, V] = linalg::eigh(a + a.mT());
    return (S * S).sum() + U.matmul(Vh).sum() + linalg::inv(a).sum() + L.sum() +
           linalg::cholesky(a.matmul(a.mT())).sum() + linalg::qr(a).R.sum();
  };
  // Printed before anything is computed: a computed node prints as the memory holding it.
  const std::string text_h = ir::print({h(A)});
  Tensor y = f(A);
  const std::string text = ir::print({y});
  INFO(text);
  CHECK_THAT(text, Contains("= Call svd %") && Contains("= Call inv %") && Contains("= Call lu %"));
  ir::Graph g = ir::parse(text);
  CHECK(ir::print(g.outputs) == text);
  CHECK(allclose(g.outputs.at(0), y, 1e-12, 1e-12));
  // Through det's LU, which has no gradient of its own in a graph, no gradient can flow.
  ir::Graph fresh = ir::parse(text); // g's nodes are computed now: a fresh graph to replay
  CHECK_THROWS_WITH(ir::differentiate(fresh, fresh.output_names.at(0), {"s0"}),
                    Contains("Call lu has no gradient"));
  ir::Graph gh = ir::parse(text_h);
  ir::Graph d = ir::differentiate(gh, gh.output_names.at(0), {"s0"});
  Tensor leaf = A.detach().requires_grad_();
  h(leaf).backward();
  CHECK(allclose(d.outputs.back(), leaf.grad().reshape({-1}), 1e-10, 1e-10));
}

TEST_CASE("linalg: a batch computes the same bits on any number of threads", "[linalg]") {
  manual_seed(7);
  Tensor A = well({16}, 12, kFloat64), B = randn({16, 12, 3}, dtype(kFloat64));
  const int saved = config().num_threads;
  std::vector<double> first;
  for (int threads : {1, 2, 5}) {
    config().num_threads = threads;
    std::vector<double> x = (linalg::solve(A, B) + linalg::svdvals(A).sum()).to_vector<double>();
    if (first.empty()) first = x;
    CHECK(x == first);
  }
  config().num_threads = saved;
}

// Inputs of the gradient tests: losses are sum(f(x) * W) (wsum).
struct GradInputs {
  const TensorOptions f64 = dtype(kFloat64);
  const Tensor A = tensor({{2., 1., 0.3}, {1., 3., -0.5}, {0.2, -0.4, 1.5}}, f64);
  const Tensor W =
      tensor({{0.3, -1.2, 0.7}, {1.1, 0.4, -0.5}, {0.2, 0.9, 1.3}}, f64); // not symmetric
  const Tensor H = A + A.mT();
  const Tensor leaf = H.detach().requires_grad_();
  Tensor wsum(const Tensor& t) const { return (t * W).sum(); }
};

TEST_CASE_METHOD(GradInputs, "linalg: eigh's, pinv's and solve's gradients as PyTorch's",
                 "[linalg][grad]") {
  // An eigenvector's gradient is projected as PyTorch's is: symmetric, the derivative along
  // symmetric changes of A.
  Loss through_vector = [&](const Tensor& x) {
    Tensor v = linalg::eigh(x).eigenvectors.narrow(-1, 0, 1);
    return wsum(v.matmul(v.mT()));
  };
  Tensor g = analytic_grad(through_vector, H);
  CHECK(allclose(g, g.mT(), 1e-12, 1e-12));
  CHECK(allclose(g, numeric_grad(through_vector, H, true), 1e-6, 1e-6));

  // pinv is one op whatever computes it, with PyTorch's gradient on all matrices.
  CHECK(grad_fn_of(linalg::pinv(leaf, true)) == "LinalgPinvBackward0");
  CHECK(grad_fn_of(linalg::pinv(leaf)) == "LinalgPinvBackward0");
  CHECK(allclose(analytic_grad([&](const Tensor& x) { return wsum(linalg::pinv(x, true)); }, H),
                 numeric_grad([&](const Tensor& x) { return wsum(linalg::pinv(x)); }, H), 1e-6,
                 1e-6));
  CHECK(linalg::pinv(zeros({0, 2}, f64).requires_grad_()).sizes() == Shape{2, 0});
  // A complex A's pinv differentiates through its factorization.
  Tensor Ac = A.to(kComplex128).requires_grad_();
  linalg::pinv(Ac).abs().sum().backward();
  CHECK(allclose(Ac.grad().real(),
                 analytic_grad([](const Tensor& x) { return linalg::pinv(x).abs().sum(); }, A),
                 1e-10, 1e-10));

  // solve of a vector, and from the right, is one op.
  Tensor b = tensor({1., 2., 3.}, f64);
  CHECK(grad_fn_of(linalg::solve(leaf, b)) == "LinalgSolveExBackward0");
  CHECK(grad_fn_of(linalg::solve(leaf, W, false)) == "LinalgSolveExBackward0");
  Loss right = [&](const Tensor& x) { return wsum(linalg::solve(A + x, W.mT(), false)); };
  CHECK(allclose(analytic_grad(right, A), numeric_grad(right, A), 1e-6, 1e-6));
  Loss vec = [&](const Tensor& x) {
    return (linalg::solve(A.expand({2, 3, 3}), x) * W.narrow(0, 0, 2)).sum();
  };
  CHECK(allclose(analytic_grad(vec, b), numeric_grad(vec, b), 1e-6, 1e-6)); // broadcast
}

TEST_CASE_METHOD(GradInputs, "linalg: products and norms record as PyTorch does",
                 "[linalg][grad]") {
  // matrix_power: the power 0 stays in A's graph; -1 is the inverse; 3 is (AA)A.
  Tensor p0 = linalg::matrix_power(leaf, 0);
  CHECK(grad_fn_of(p0) == "CopyBackwards");
  CHECK(near(p0, eye(3, f64), kFloat64));
  CHECK(analytic_grad([](const Tensor& x) { return linalg::matrix_power(x, 0).sum(); }, A)
            .eq(0)
            .all()
            .item<bool>());
  CHECK(grad_fn_of(linalg::matrix_power(leaf, -1)) == "LinalgInvExBackward0");
  auto next = linalg::matrix_power(leaf, 3).grad_fn()->next_functions();
  REQUIRE(next.size() == 2);
  CHECK(next[0].first->name() == "MmBackward0"); // A A first
  CHECK(next[1].first->name() == "AccumulateGrad");
  // The lowest power's magnitude does not fit an int64.
  CHECK(near(linalg::matrix_power(eye(2, f64), INT64_MIN), eye(2, f64), kFloat64));
  CHECK(near(linalg::matrix_power(eye(2, f64), INT64_MAX), eye(2, f64), kFloat64));

  // cross is one op; its inputs' gradients are summed over the batch dims that broadcast.
  Tensor c = tensor({{-1., 0.5, 2.}}, f64);
  CHECK(grad_fn_of(linalg::cross(leaf, c)) == "LinalgCrossBackward0");
  Loss crossed = [&](const Tensor& x) { return wsum(linalg::cross(A, x)); };
  CHECK(allclose(analytic_grad(crossed, c), numeric_grad(crossed, c), 1e-6, 1e-6));
  Loss crossed_a = [&](const Tensor& x) { return wsum(linalg::cross(x, c)); };
  CHECK(allclose(analytic_grad(crossed_a, A), numeric_grad(crossed_a, A), 1e-6, 1e-6));
  Tensor ac = A.to(kComplex128).requires_grad_(); // through the products' own gradients
  linalg::cross(ac, c.to(kComplex128)).abs().sum().backward();
  CHECK(allclose(ac.grad().real(),
                 analytic_grad([&](const Tensor& x) { return linalg::cross(x, c).abs().sum(); }, A),
                 1e-10, 1e-10));

  // matrix_norm of order 1 and inf ends in amax or amin, keepdim as asked.
  CHECK(grad_fn_of(linalg::matrix_norm(leaf, 1)) == "AmaxBackward0");
  CHECK(grad_fn_of(linalg::matrix_norm(leaf, -INFINITY, {0, 1}, true)) == "AminBackward0");
  CHECK(linalg::matrix_norm(leaf.expand({2, 3, 3}), INFINITY, {0, 2}).sizes() == Shape{3});

  // multi_dot ends in a view; three matrices of equal costs multiply as (AB)C.
  Tensor md = linalg::multi_dot({leaf, leaf, leaf});
  CHECK(grad_fn_of(md) == "ViewBackward0");
  std::shared_ptr<autograd::Node> last = md.grad_fn();
  if (last->name() == "ViewBackward0") last = last->next_functions().at(0).first;
  auto last_inputs = last->next_functions();
  REQUIRE(last_inputs.size() == 2);
  CHECK(last_inputs[0].first->name() == "MmBackward0"); // AB
  CHECK(last_inputs[1].first->name() == "AccumulateGrad");
}

TEST_CASE("linalg: empty and non-finite inputs", "[linalg][errors]") {
  // An empty matrix's full SVD has identities for U and Vh.
  auto [U, S, Vh] = linalg::svd(zeros({2, 3, 0}));
  CHECK(near(U, eye(3).expand({2, 3, 3}), kFloat32));
  CHECK(S.sizes() == Shape{2, 0});
  CHECK(Vh.sizes() == Shape{2, 0, 0});
  CHECK(near(linalg::svd(zeros({0, 2})).Vh, eye(2), kFloat32));
  CHECK(linalg::svd(zeros({0, 2}), false).Vh.sizes() == Shape{0, 2});

  Tensor nan = tensor({{1., NAN}, {0., 1.}});
  const std::string svd_nan = "linalg.svd: The algorithm failed to converge because the input "
                              "matrix contained non-finite values.";
  CHECK_THROWS_WITH(linalg::svd(nan).S.sum().item<float>(), svd_nan);
  CHECK_THROWS_WITH(linalg::svdvals(nan).sum().item<float>(), svd_nan);
  CHECK_THROWS_WITH(linalg::pinv(nan).sum().item<float>(), svd_nan);
  CHECK_THROWS_WITH(linalg::matrix_rank(nan).item<int64_t>(), svd_nan);
  CHECK_THROWS_WITH(linalg::matrix_norm(nan, "nuc").item<float>(), svd_nan);
  CHECK_THROWS_WITH(linalg::svdvals(stack({eye(2), nan})).sum().item<float>(),
                    "linalg.svd: (Batch element 1): The algorithm failed to converge because the "
                    "input matrix contained non-finite values.");

  // eig refuses non-finite values before LAPACK sees them.
  const std::string eig_nan = "torch.linalg.eig: input tensor should not contain infs or NaNs.";
  CHECK_THROWS_WITH(linalg::eig(nan).eigenvalues.real().sum().item<float>(), eig_nan);
  CHECK_THROWS_WITH(
      linalg::eigvals(tensor({{INFINITY, 1.}, {0., 1.}}).to(kComplex64)).real().sum().item<float>(),
      eig_nan);

  // Norms without an identity have no value over nothing.
  CHECK_THROWS_WITH(linalg::vector_norm(zeros({0}), INFINITY),
                    "linalg.vector_norm cannot compute the inf norm on an empty tensor because "
                    "the operation does not have an identity");
  CHECK_THROWS_WITH(linalg::vector_norm(zeros({2, 0}), -1, {1}),
                    "linalg.vector_norm cannot compute the -1 norm on the dimension 1because this "
                    "dimension is empty and the operation does not have an identity");
  CHECK_THROWS_WITH(linalg::vector_norm(zeros({2, 0}), -INFINITY, {-1}),
                    Contains("the -inf norm on the dimension -1because"));
  CHECK(linalg::vector_norm(zeros({2, 0}), INFINITY, {0}).sizes() == Shape{0});
  CHECK(linalg::vector_norm(zeros({0}), 2).item<float>() == 0.0f);
}

TEST_CASE("linalg: products' and norms' checks in PyTorch's order and words", "[linalg][errors]") {
  CHECK_THROWS_WITH(linalg::multi_dot({ones({2, 3}), ones({3, 3}, dtype(kFloat64))}),
                    "multi_dot(): all tensors must have be the same dtype but tensor 0 is float "
                    "and tensor 1 double");
  CHECK_THROWS_WITH(linalg::multi_dot({ones({3}), ones({4, 2})}),
                    "multi_dot(): tensors 0 and 1 with shapes [3] and [4, 2] cannot be multiplied");
  CHECK_THROWS_WITH(linalg::multi_dot({ones({2, 2}), ones({2}), ones({2, 2, 2})}),
                    "multi_dot(): the last tensor must be 1D or 2D but got 3D");
  CHECK_THROWS_WITH(linalg::matrix_norm(ones({3, 3}), "fro", {1, -1}),
                    "linalg.matrix_norm: dims must be different. Got (1, 1)");
  CHECK_THROWS_WITH(linalg::matrix_norm(ones({3, 3}, dtype(kFloat16)), 2),
                    "linalg.matrix_norm: Low precision dtypes not supported. Got Half");
  CHECK_THROWS_WITH(linalg::matrix_norm(ones({3}), 3),
                    "linalg.matrix_norm: Order 3 not supported.");
  CHECK_THROWS_WITH(linalg::norm(ones({3}), "fro"),
                    "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  CHECK_THROWS_WITH(linalg::norm(ones({3, 3}), "nuc", {1}),
                    "linalg.matrix_norm: dim must be a 2-tuple. Got [1]");
}
