// The products a GPU computes through cuBLAS, checked without a GPU: the planning code's calls
// (runtime/gemm_plan.h) run through a CPU model of cuBLAS's column-major semantics
// (support/blas_model.h), over every operand layout the products take (transposed, strided,
// sliced, broadcast batches, vectors, k = 0), against the CPU's own product.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <fmt/format.h>

#include "runtime/gemm_plan.h"
#include "test/support/blas_model.h"

using namespace tj;
using tj::indexing::None;
using tj::indexing::Slice;
using tj::test::ModelBlas;

namespace {

// The product through the model equals the generic CPU product.
void check_product(const std::string& what, const std::function<Tensor()>& product, double tol) {
  Tensor want = product();
  want.eval();
  ModelBlas model;
  Tensor got = product();
  got.eval();
  INFO(what << "\nwant: " << want.str().substr(0, 400) << "\ngot: " << got.str().substr(0, 400));
  CHECK(model.calls > 0);
  CHECK(got.sizes() == want.sizes());
  CHECK(got.dtype() == want.dtype());
  CHECK(allclose(got, want, tol, tol));
}

rt::GemmOperand operand(std::vector<int64_t> shape, std::vector<int64_t> strides,
                        int64_t offset = 0) {
  return {std::move(shape), std::move(strides), offset};
}

} // namespace

TEST_CASE("cuBLAS plan: transposes and leading dims follow the operands' strides", "[blas]") {
  // c (4x5) = a (4x3) @ b (3x5), all row-major contiguous: C^T = B^T A^T with no transpose.
  auto c = operand({4, 5}, {5, 1});
  rt::GemmPlan p = rt::plan_gemm(operand({4, 3}, {3, 1}), operand({3, 5}, {5, 1}), c);
  REQUIRE(p.calls.size() == 1);
  CHECK(!p.copy_a);
  CHECK(!p.copy_b);
  const rt::GemmCall& g = p.calls[0];
  CHECK((!g.transa && !g.transb));
  CHECK((g.m == 5 && g.n == 4 && g.k == 3));
  CHECK((g.lda == 5 && g.ldb == 3 && g.ldc == 5));

  // b = n.t() for a contiguous n of 5x3: strides (1, 3): the library transposes its A.
  p = rt::plan_gemm(operand({4, 3}, {3, 1}), operand({3, 5}, {1, 3}), c);
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].transa);
  CHECK(p.calls[0].lda == 3);
  // a = m.t() for m of 3x4: strides (1, 4).
  p = rt::plan_gemm(operand({4, 3}, {1, 4}), operand({3, 5}, {5, 1}), c);
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].transb);
  CHECK(p.calls[0].ldb == 4);
  // Rows of a sliced out of a wider matrix: a leading dim larger than the row, an offset.
  p = rt::plan_gemm(operand({4, 3}, {10, 1}, 7), operand({3, 5}, {5, 1}), c);
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].ldb == 10);
  CHECK(p.calls[0].offset_b == 7);
  // Every other column: neither stride is 1, so the operand is copied.
  p = rt::plan_gemm(operand({4, 3}, {6, 2}), operand({3, 5}, {5, 1}), c);
  CHECK(p.calls.empty());
  CHECK(p.copy_a);
  CHECK(!p.copy_b);
  // A broadcast along k (stride 0 within the matrix) cannot be a leading dim.
  p = rt::plan_gemm(operand({4, 3}, {1, 0}), operand({3, 5}, {5, 1}), c);
  CHECK(p.copy_a);
}

TEST_CASE("cuBLAS plan: batch dims collapse, broadcast, or loop", "[blas]") {
  // (2,3) batches of contiguous operands: one call of 6.
  rt::GemmPlan p =
      rt::plan_gemm(operand({2, 3, 4, 5}, {60, 20, 5, 1}), operand({2, 3, 5, 6}, {90, 30, 6, 1}),
                    operand({2, 3, 4, 6}, {72, 24, 6, 1}));
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].batch == 6);
  CHECK((p.calls[0].stride_a == 30 && p.calls[0].stride_b == 20 && p.calls[0].stride_c == 24));
  // A matrix broadcast over the batch: stride 0.
  p = rt::plan_gemm(operand({3, 4, 5}, {0, 5, 1}), operand({3, 5, 6}, {30, 6, 1}),
                    operand({3, 4, 6}, {24, 6, 1}));
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].stride_b == 0);
  // (2,1,5,7) @ (3,7,4): batches (2,3) with strides (35,0) and (0,28) do not collapse; the
  // inner dim does, so two calls of 3.
  p = rt::plan_gemm(operand({2, 3, 5, 7}, {35, 0, 7, 1}), operand({2, 3, 7, 4}, {0, 28, 4, 1}),
                    operand({2, 3, 5, 4}, {60, 20, 4, 1}));
  REQUIRE(p.calls.size() == 2);
  CHECK(p.calls[0].batch == 3);
  CHECK((p.calls[0].stride_a == 28 && p.calls[0].stride_b == 0 && p.calls[0].stride_c == 20));
  CHECK((p.calls[1].offset_a == 0 && p.calls[1].offset_b == 35 && p.calls[1].offset_c == 60));
  // Past the bound on calls, the operands that do not collapse are copied.
  p = rt::plan_gemm(operand({2, 3, 5, 7}, {35, 0, 7, 1}), operand({2, 3, 7, 4}, {0, 28, 4, 1}),
                    operand({2, 3, 5, 4}, {60, 20, 4, 1}), /*max_calls=*/1);
  CHECK(p.calls.empty());
  CHECK((p.copy_a && p.copy_b));
  // Nothing to compute.
  p = rt::plan_gemm(operand({0, 4, 5}, {20, 5, 1}), operand({0, 5, 6}, {30, 6, 1}),
                    operand({0, 4, 6}, {24, 6, 1}));
  CHECK(p.calls.empty());
  CHECK((!p.copy_a && !p.copy_b));
}

TEST_CASE("cuBLAS model: rejects what the library rejects, reads only its memory", "[blas]") {
  std::vector<double> a(6, 1), b(6, 1), c(4, 0);
  rt::GemmCall g;
  g.m = 2, g.n = 2, g.k = 3, g.lda = 2, g.ldb = 3, g.ldc = 2;
  test::gemm_model<double>(g, a.data(), a.size(), b.data(), b.size(), c.data(), c.size());
  CHECK(c == std::vector<double>{3, 3, 3, 3});
  g.lda = 1; // < m
  CHECK_THROWS_WITH(
      test::gemm_model<double>(g, a.data(), a.size(), b.data(), b.size(), c.data(), c.size()),
      Catch::Contains("lda"));
  g.lda = 2, g.offset_a = 1; // the last element of A lies past its memory
  CHECK_THROWS_WITH(
      test::gemm_model<double>(g, a.data(), a.size(), b.data(), b.size(), c.data(), c.size()),
      Catch::Contains("outside"));
}

TEST_CASE("cuBLAS products through the model equal the CPU's, every layout", "[blas]") {
  manual_seed(5);
  for (DType t : {kFloat32, kFloat64}) {
    const double tol = t == kFloat32 ? 1e-5 : 1e-12;
    auto r = [t](Shape s) { return rand(s, t) - 0.5; };
    Tensor m = r({6, 4}), n = r({5, 4}), w = r({4, 5});
    Tensor wide = r({9, 12}), v = r({4}), v5 = r({5});
    Tensor b3 = r({3, 6, 4}), c3 = r({3, 4, 5}), d3 = r({3, 5, 4});
    Tensor a4 = r({2, 1, 5, 7}), b4 = r({3, 7, 4});
    Tensor p4 = r({4, 2, 3, 5}), q4 = r({2, 4, 5, 3});
    // Operands in memory, so that their views reach the plan (a lazy view is computed
    // contiguous, which the "lazy operands" case covers).
    eval({m, n, w, wide, v, v5, b3, c3, d3, a4, b4, p4, q4});
    std::vector<std::pair<std::string, std::function<Tensor()>>> cases = {
        {"plain", [&] { return matmul(m, w); }},
        {"m @ n.t()", [&] { return matmul(m, n.t()); }},
        {"m.t().t() @ n.t()", [&] { return matmul(m.t().t(), n.t()); }},
        {"w.t() @ m.t()", [&] { return matmul(w.t(), m.t()); }},
        {"op suite: m @ m.t()", [&] { return matmul(m, m.t()); }},
        {"op suite: bmm with a transposed batch", [&] { return matmul(b3, b3.transpose(1, 2)); }},
        {"bmm", [&] { return bmm(b3, c3); }},
        {"bmm, second transposed", [&] { return bmm(b3, d3.transpose(1, 2)); }},
        {"bmm, both transposed", [&] { return bmm(c3.transpose(1, 2), b3.transpose(1, 2)); }},
        {"sliced rows (offset, wider leading dim)",
         [&] {
           return matmul(wide.index({Slice(2, 8), Slice(3, 7)}), w);
         }},
        {"every other row",
         [&] {
           return matmul(wide.index({Slice(None, None, 2), Slice(0, 4)}), w);
         }},
        {"every other column (copied)",
         [&] {
           return matmul(wide.index({Slice(0, 6), Slice(None, 8, 2)}), w);
         }},
        {"broadcast batches (2,1,5,7) @ (3,7,4)", [&] { return matmul(a4, b4); }},
        {"broadcast batches, transposed second",
         [&] { return matmul(a4, b4.transpose(1, 2).contiguous().transpose(1, 2)); }},
        {"batch @ matrix", [&] { return matmul(b3, w); }},
        {"matrix @ batch", [&] { return matmul(m, c3); }},
        {"permuted batch dims",
         [&] {
           return matmul(p4.permute({1, 0, 2, 3}), q4);
         }},
        {"expanded batch",
         [&] {
           return matmul(m.expand({3, 6, 4}), c3);
         }},
        {"mv", [&] { return mv(m, v); }},
        {"mv, transposed matrix", [&] { return mv(n.t(), v5); }},
        {"dot", [&] { return dot(v, v); }},
        {"vector @ matrix.t()", [&] { return matmul(v, n.t()); }},
        {"batch @ vector", [&] { return matmul(b3, v); }},
        {"vector @ batch", [&] { return matmul(v, c3); }},
        {"n = 1", [&] { return matmul(m.narrow(0, 2, 1), w); }},
        {"m = 1", [&] { return matmul(m, w.narrow(1, 3, 1)); }},
        {"k = 1", [&] { return matmul(m.narrow(1, 1, 1), w.narrow(0, 1, 1)); }},
        {"column of a transposed", [&] { return matmul(n.t().narrow(1, 2, 1).t(), w); }},
        {"lazy operands", [&] { return matmul(exp(m) * 2, (n + 1).t()); }},
    };
    for (const auto& [what, product] : cases)
      check_product(fmt::format("{} ({})", what, dtype_name(t)), product, tol);
    // k = 0 makes zeros without a call.
    ModelBlas model;
    Tensor z = matmul(rand({3, 0}, t), rand({0, 2}, t));
    CHECK(equal(z, zeros({3, 2}, t)));
    CHECK(model.calls == 0);
  }
}

TEST_CASE("cuBLAS plan: transposed and broadcast operands are read in place", "[blas]") {
  Tensor m = rand({6, 4}), n = rand({5, 4}), a = rand({2, 1, 5, 7}), b = rand({3, 7, 4});
  eval({m, n, a, b});
  {
    ModelBlas model;
    matmul(m, n.t()).eval();
    REQUIRE(model.seen.size() == 1);
    CHECK(model.seen[0].transa);
  }
  {
    ModelBlas model;
    matmul(a, b).eval();
    CHECK(model.seen.size() == 2); // two calls of 3, no copy of a broadcast batch
  }
}

TEST_CASE("cuBLAS products through the model: gradients equal the CPU's", "[blas]") {
  manual_seed(8);
  Tensor a = rand({3, 5, 4}, kFloat64).requires_grad_(),
         b = rand({4, 6}, kFloat64).requires_grad_();
  auto grads = [&] {
    a.set_grad(Tensor());
    b.set_grad(Tensor());
    matmul(a.transpose(1, 2).transpose(1, 2), b).sum().backward();
    std::pair g{a.grad().clone(), b.grad().clone()};
    eval({g.first, g.second}); // the gradients are lazy products too
    return g;
  };
  auto [ga, gb] = grads();
  ModelBlas model;
  auto [ma, mb] = grads();
  CHECK(model.calls > 0);
  CHECK(allclose(ma, ga, 1e-12, 1e-12));
  CHECK(allclose(mb, gb, 1e-12, 1e-12));
}
