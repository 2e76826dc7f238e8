// Call nodes (ops.def): a product that a library computes is a lazy graph node like any other.
// Built under a CPU model of the library (support/blas_model.h), it is computed only when its
// value is needed, its lazy operands first; kernels that read it fuse around it; every dump
// shows it; its text form parses back; the reference interpreter and ir::differentiate know it;
// and a parsed Call with no library at hand is computed by kernels.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include "lib/frontend/tensor_impl.h"
#include "lib/interp/interpreter.h"
#include "test/support/blas_model.h"

using namespace tj;
using tj::test::ModelBlas;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("Call: a library's product is lazy, its operands computed first", "[calls]") {
  manual_seed(3);
  Tensor x = rand({6, 4}), y = rand({5, 4});
  Tensor want = matmul(exp(x) * 2, y.t());
  want.eval();
  ModelBlas model;
  reset_stats();
  Tensor c = matmul(exp(x) * 2, y.t());
  CHECK(model.calls == 0);
  CHECK(contains(ir::dump({c}, "graph"), "= Call gemm %"));
  c.eval();
  CHECK(model.calls == 1);
  CHECK(stats().library_calls == 1);
  CHECK(model.seen.at(0).transa); // y.t() read in place
  CHECK(allclose(c, want, 1e-5, 1e-5));
  c.eval(); // computed once
  CHECK(model.calls == 1);
}

TEST_CASE("Call: kernels fuse around a product", "[calls]") {
  manual_seed(4);
  Tensor x = rand({8, 16}), w = rand({12, 16}), b = rand({12});
  eval({w, b}); // weights in memory, read in place
  auto layer = [&] { return relu(matmul(x * 0.5, w.t()) + b).sum(1); };
  Tensor want = layer();
  want.eval();
  ModelBlas model;
  Tensor got = layer();
  const std::string schedule = ir::dump({got}, "schedule");
  CHECK(model.calls == 0); // a dump computes nothing
  INFO(schedule);
  // The scaled input is one kernel, the call reads it and w as it lies, and bias, relu and sum
  // are one more kernel.
  CHECK(contains(schedule, "call gemm by model"));
  CHECK(contains(schedule, "gemm TN m=12 n=8 k=16"));
  CHECK(schedule.find("kernel 0") < schedule.find("call gemm"));
  CHECK(schedule.find("call gemm") < schedule.find("kernel 1"));
  CHECK(!contains(schedule, "kernel 2"));
  CHECK(allclose(got, want, 1e-5, 1e-5));
  CHECK(model.calls == 1);
}

TEST_CASE("Call: a broadcast operand is computed once and read with stride 0", "[calls]") {
  manual_seed(5);
  Tensor m = rand({6, 4}), c3 = rand({3, 4, 5});
  c3.eval();
  Tensor want = matmul(exp(m), c3);
  want.eval();
  ModelBlas model;
  reset_stats();
  Tensor got = matmul(exp(m), c3);
  got.eval();
  REQUIRE(model.seen.size() == 1);
  CHECK(model.seen[0].batch == 3);
  CHECK(model.seen[0].stride_b == 0); // the library's B is our a: one (6, 4) matrix for all
  CHECK(stats().bytes_allocated == (6 * 4 + 3 * 6 * 5) * 4);
  CHECK(allclose(got, want, 1e-5, 1e-5));
}

TEST_CASE("Call: a product keeps the value its operand had when it was built", "[calls]") {
  Tensor x = ones({3, 3}), y = eye(3);
  ModelBlas model;
  Tensor c = matmul(x, y);
  x.add_(1);
  Tensor d = matmul(x, y);
  CHECK(equal(c, ones({3, 3})));
  CHECK(equal(d, full({3, 3}, 2.0)));
  CHECK(model.calls == 2);
}

TEST_CASE("Call: the text form parses back; without a library kernels compute it", "[calls]") {
  manual_seed(6);
  Tensor a = rand({2, 3, 4}, kFloat64), b = rand({4, 5}, kFloat64);
  eval({a, b});
  std::string text;
  Tensor want;
  {
    ModelBlas model;
    Tensor c = matmul(a.transpose(1, 2).transpose(1, 2) * 2, b) + 1;
    text = ir::print({c});
    want = c.clone();
    want.eval();
    CHECK(model.calls == 1);
  }
  INFO(text);
  CHECK(contains(text, "= Call gemm %"));
  ir::Graph g = ir::parse(text);
  CHECK(ir::print(g.outputs) == text);
  reset_stats();
  Tensor got = g.outputs.at(0);
  CHECK(allclose(got, want, 1e-12, 1e-12));
  CHECK(stats().library_calls == 0);
  // The reference interpreter agrees.
  interp::HostArray ref = interp::evaluate(detail::node_of(ir::parse(text).outputs.at(0)));
  Tensor flat = want.reshape({-1});
  for (int64_t k = 0; k < flat.numel(); ++k)
    CHECK(ref.f.at(static_cast<size_t>(k)) == Approx(flat[k].item<double>()).epsilon(1e-12));
  // Gradients of a parsed graph flow through the Call as through matmul.
  ir::Graph fresh = ir::parse(text);
  ir::Graph d = ir::differentiate(fresh, fresh.output_names.at(0), {"s0"});
  Tensor leaf = a.detach().requires_grad_();
  (matmul(leaf * 2, b) + 1).sum().backward();
  CHECK(allclose(d.outputs.back(), leaf.grad().reshape({-1}), 1e-12, 1e-12));
}

TEST_CASE("Call: the parser checks a routine's operands", "[calls]") {
  const std::string head = "storage a : float32[6] = [1, 2, 3, 4, 5, 6]\n"
                           "storage b : float32[6] = [1, 2, 3, 4, 5, 6]\n"
                           "%0 = Buffer a strides=[3, 1] offset=0 : float32[2, 3]\n"
                           "%1 = Buffer b strides=[2, 1] offset=0 : float32[3, 2]\n";
  CHECK_NOTHROW(ir::parse(head + "%2 = Call gemm %0, %1 : float32[2, 2]\noutput %2\n"));
  CHECK_THROWS_WITH(ir::parse(head + "%2 = Call gemm %0, %0 : float32[2, 2]\noutput %2\n"),
                    Catch::Contains("the shared dims differ"));
  CHECK_THROWS_WITH(ir::parse(head + "%2 = Call gemm %0, %1 : float32[2, 3]\noutput %2\n"),
                    Catch::Contains("the result's shape is [2, 2]"));
  CHECK_THROWS_WITH(ir::parse(head + "%2 = Call gemm %0 : float32[2, 2]\noutput %2\n"),
                    Catch::Contains("gemm takes 2 operands, got 1"));
  CHECK_THROWS_WITH(ir::parse(head + "%2 = Call lu_solve %0 : float32[2, 2]\noutput %2\n"),
                    Catch::Contains("unknown routine 'lu_solve'"));
  // Factorizations: their attributes, and their parts end to end in the last dim.
  CHECK_NOTHROW(ir::parse(head + "%2 = Call svd %0 full=0 vectors=1 : float32[12]\noutput %2\n"));
  CHECK_THROWS_WITH(ir::parse(head + "%2 = Call svd %0 full=0 vectors=1 : float32[2, 2]\n"
                                     "output %2\n"),
                    Catch::Contains("the result's shape is [12]"));
  CHECK_THROWS_WITH(ir::parse(head + "%2 = Call svd %0 full=0 : float32[12]\noutput %2\n"),
                    Catch::Contains("missing attribute 'vectors'"));
  CHECK_THROWS_WITH(ir::parse(head + "%2 = Call qr %0 mode=3 : float32[12]\noutput %2\n"),
                    Catch::Contains("'mode' is 0..2, got 3"));
  CHECK_THROWS_WITH(ir::parse(head + "%2 = Call inv %0 tensor=0 : float32[4]\noutput %2\n"),
                    Catch::Contains("takes square matrices, got [2, 3]"));
  // lstsq's cutoff, the one attribute that is a float.
  CHECK_THROWS_WITH(ir::parse(head + "%2 = Call lstsq %0, %0 driver=0 : float32[4]\noutput %2\n"),
                    Catch::Contains("missing attribute 'rcond'"));
  CHECK_THROWS_WITH(
      ir::parse(head + "%2 = Call svd %0 full=0 vectors=0 rcond=0.5 : float32[2]\noutput %2\n"),
      Catch::Contains("Call has no attribute 'rcond'"));
}

TEST_CASE("Call: a write into a product's result does not reach an equal product", "[calls]") {
  Tensor x = ones({3, 3}), w = eye(3);
  eval({x, w});
  ModelBlas model;
  Tensor y = matmul(x, w);
  y.select(0, 0).fill_(5);
  Tensor z = matmul(x, w); // the same node as y's before the write
  CHECK(equal(y.select(0, 0), full({3}, 5.0)));
  CHECK(equal(z, ones({3, 3})));
}

TEST_CASE("products with k = 0 and batch dims, and of 16-bit floats", "[calls][matmul]") {
  CHECK(equal(bmm(zeros({2, 3, 0}), zeros({2, 0, 4})), zeros({2, 3, 4})));
  CHECK(equal(matmul(zeros({3, 1, 0}), zeros({3, 0, 4})), zeros({3, 1, 4})));
  CHECK(matmul(zeros({5, 0}), zeros({2, 0, 4})).sizes() == Shape{2, 5, 4});
  manual_seed(9);
  Tensor a = rand({4, 64}), b = rand({64, 3});
  for (DType t : {kFloat16, kBFloat16}) {
    Tensor got = matmul(a.to(t), b.to(t));
    CHECK(got.scalar_type() == t);
    // Summed in float32 and rounded once: as close as the rounded operands allow.
    Tensor want = matmul(a.to(t).to(kFloat32), b.to(t).to(kFloat32));
    CHECK(allclose(got.to(kFloat32), want, 1e-2, 1e-2));
  }
}
