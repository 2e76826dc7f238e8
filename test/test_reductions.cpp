// Reductions: values against the interpreter and PyTorch's printed results,
// result dtypes, fusion of producers and consumers, and errors.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cmath>

#include "lib/frontend/tensor_impl.h"
#include "lib/interp/interpreter.h"

using namespace tj;

namespace {
// Materializes `t` and compares it with the interpreter's value of the same graph.
void check_vs_interp(const Tensor& t, double rel = 1e-5) {
  auto node = detail::node_of(t);
  auto ref = interp::evaluate(node);
  auto got = t.to_vector<double>();
  REQUIRE(got.size() == (ref.is_float() ? ref.f.size() : ref.i.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    double want = ref.as_double(i);
    INFO("element " << i);
    if (std::isnan(want))
      CHECK(std::isnan(got[i]));
    else
      CHECK(got[i] == Approx(want).epsilon(rel).margin(1e-6));
  }
}
} // namespace

TEST_CASE("examples: reduction ops print as PyTorch", "[reduce][examples]") {
  Tensor d = tensor({{1., 2.}, {3., 4.}});
  CHECK(max(d).str() == "tensor(4.)");
  CHECK(max(d).item<double>() == 4.0);
  CHECK(mean(d).str() == "tensor(2.5000)");
  CHECK(d.std().str() == "tensor(1.2910)");
  CHECK(prod(d).str() == "tensor(24.)");
}

TEST_CASE("sum, mean, prod over dims with keepdim and dtypes", "[reduce]") {
  Tensor x = arange(24).reshape({2, 3, 4});
  CHECK(x.sum().dtype() == kInt64);
  CHECK(x.sum().item<int64_t>() == 276);
  CHECK(x.sum({1}).sizes() == Shape{2, 4});
  CHECK(x.sum({1}, true).sizes() == Shape{2, 1, 4});
  CHECK(x.sum({0, 2}).to_vector<int64_t>() == std::vector<int64_t>{60, 92, 124});
  CHECK(x.sum({-1}).to_vector<int64_t>() == std::vector<int64_t>{6, 22, 38, 54, 70, 86});
  CHECK(ones({3}, dtype(kInt8)).sum().dtype() == kInt64);
  CHECK(tensor({true, true, false}).sum().item<int64_t>() == 2);
  CHECK(ones({4}, dtype(kFloat16)).sum().dtype() == kFloat16);
  Tensor f = x.to(kFloat32);
  check_vs_interp(f.mean({1}));
  check_vs_interp((f * 0.01 + 1).prod({2}));
  check_vs_interp(f.permute({2, 0, 1}).sum({0, 1}));
  // One dim may be given as an integer, as libtorch's IntArrayRef takes it.
  CHECK(equal(x.sum(1), x.sum({1})));
  CHECK(equal(f.mean(-1, true), f.mean({-1}, true)));
  CHECK(equal(f.amax(0), f.amax({0})));
  CHECK(equal(f.logsumexp(2), f.logsumexp({2})));
  CHECK(equal(f.var(1), f.var({1})));
  CHECK(x.view(-1).sizes() == Shape{24});
  CHECK(equal(flip(x, 0), flip(x, {0})));
  CHECK(equal(roll(x, 1, 2), roll(x, {1}, {2})));
  const Shape dims{0, 2};
  CHECK(equal(x.sum(dims), x.sum({0, 2})));
  // Only integers: libtorch's var(false) or a double would silently pick a dim.
  static_assert(std::is_convertible_v<int, DimList> && std::is_convertible_v<int64_t, DimList>);
  static_assert(!std::is_convertible_v<bool, DimList> && !std::is_convertible_v<double, DimList>);
}

TEST_CASE("large float sums are accurate and parallel", "[reduce]") {
  const int64_t n = 16 * 1024 * 1024;
  CHECK(ones({n}).sum().item<double>() == 16777216.0);
  CHECK(ones({4096, 4096}).sum().item<double>() == 16777216.0);
  CHECK(full({n + 3}, 0.1).sum().item<double>() == Approx(0.1 * (n + 3)).epsilon(1e-5));
  Tensor r = rand({1000003}, dtype(kFloat64));
  check_vs_interp(r.sum(), 1e-12);
}

TEST_CASE("max, min, argmax, argmin", "[reduce]") {
  Tensor x = tensor({{1., 5., 5.}, {7., -1., 7.}});
  auto [v, i] = x.max(1);
  CHECK(v.to_vector<float>() == std::vector<float>{5, 7});
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, 0}); // first of the ties
  CHECK(i.dtype() == kInt64);
  auto [mv, mi] = x.min(0, true);
  CHECK(mv.sizes() == Shape{1, 3});
  CHECK(mi.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 0});
  CHECK(x.argmax().item<int64_t>() == 3);
  CHECK(x.argmin().item<int64_t>() == 4);
  CHECK(x.amax({0, 1}).item<double>() == 7);
  Tensor n = tensor({1., NAN, 3.});
  CHECK(std::isnan(n.max().item<double>()));
  CHECK(n.argmax().item<int64_t>() == 1);
  CHECK(tensor({true, false}).max().dtype() == kBool);
  CHECK_THROWS_WITH(zeros({0, 3}).amax({0}),
                    "amax(): Expected reduction dim 0 to have non-zero size.");
  CHECK(zeros({0, 3}).sum({0}).to_vector<float>() == std::vector<float>{0, 0, 0});
}

TEST_CASE("var, std, norm, logsumexp, all, any", "[reduce]") {
  Tensor x = tensor({{1., 2., 3., 4.}, {2., 4., 6., 9.}});
  CHECK(x.var({1}).to_vector<float>()[0] == Approx(1.6666666f));
  CHECK(x.var({1}, 0).to_vector<float>()[0] == Approx(1.25f));
  CHECK(x.std().item<double>() == Approx(2.5877458).epsilon(1e-6));
  CHECK(x.norm().item<double>() == Approx(std::sqrt(167.0)));
  CHECK(x.norm(1).item<double>() == Approx(31.0));
  check_vs_interp(x.logsumexp({1}));
  CHECK(tensor({-INFINITY, -INFINITY}).logsumexp({0}).item<double>() == -INFINITY);
  CHECK(tensor({1, 2, 0}).all().item<bool>() == false);
  CHECK(tensor({1, 2, 0}).any().item<bool>() == true);
  CHECK(tensor({{true, false}, {true, true}}).all(1).to_vector<bool>() ==
        std::vector<bool>{false, true});
  CHECK_THROWS_WITH(arange(3).mean(), Catch::StartsWith("mean(): could not infer output dtype."));
}

TEST_CASE("softmax, log_softmax, layer_norm", "[reduce]") {
  manual_seed(3);
  Tensor x = randn({5, 17});
  Tensor s = nn::functional::softmax(x, 1);
  check_vs_interp(s);
  auto rows = s.sum({1}).to_vector<float>();
  for (float r : rows)
    CHECK(r == Approx(1.0f));
  check_vs_interp(nn::functional::log_softmax(x, 0));
  Tensor w = rand({17}), b = rand({17});
  Tensor y = nn::functional::layer_norm(x, {17}, w, b);
  check_vs_interp(y, 1e-4);
  CHECK_THROWS_WITH(
      nn::functional::layer_norm(x, {3}),
      "Given normalized_shape=[3], expected input with shape [*, 3], but got input of size[5, 17]");
}

TEST_CASE("reductions accumulate where PyTorch's CPU kernels do", "[reduce]") {
  // var and std in float64 (PyTorch's Welford runs in double): in float32 the mean of 1e7,
  // 1e7 + 1, 1e7 + 1 rounds, and its error squared made the variance 1.
  Tensor x = tensor({{1e7, 1e7 + 1, 1e7 + 1}, {1e7, 1e7 + 1, 1e7 + 1}});
  CHECK(x.var({1}).to_vector<float>() == std::vector<float>(2, float(1.0 / 3)));
  CHECK(x.std({1}).to_vector<float>() == std::vector<float>(2, float(std::sqrt(1.0 / 3))));
  CHECK(x.var().item<float>() == float(4.0 / 15));
  // Over rows far from zero, against a float64 reference.
  manual_seed(21);
  Tensor r = (randn({64, 512}) * 0.25 + 1e6).eval();
  std::vector<float> got = r.var({1}).to_vector<float>(),
                     want = r.to(kFloat64).var({1}).to(kFloat32).to_vector<float>();
  CHECK(got == want);
  // The trace of a float32 matrix adds in float64, in order.
  CHECK(tensor({{1e8, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, -1e8}}).trace().item<float>() == 1);
  // A sum in a narrower dtype than the input's rounds each element to it first.
  CHECK(full({1536}, 1.0004).sum(kFloat16).item<double>() == 1536);
  // layer_norm of 16-bit floats normalizes in float32 and rounds once: the deviations from a
  // mean of 100.015625 and the reciprocal square root are not rounded to float16 on the way.
  for (DType t : {kFloat16, kBFloat16}) {
    INFO(dtype_name(t));
    const double top = t == kFloat16 ? 100.0625 : 100.5;
    Tensor v = tensor({{100.0, 100.0, 100.0, top}}, TensorOptions().dtype(t));
    Tensor w = tensor({1.0, 2.0, 1.0, 0.5}, TensorOptions().dtype(t)),
           b = tensor({0.0, 0.0, 1.0, 0.0}, TensorOptions().dtype(t));
    const double mean = (300 + top) / 4, dev = top - mean;
    const double var = (3 * (mean - 100) * (mean - 100) + dev * dev) / 4;
    const double rstd = 1 / std::sqrt(var + 1e-5);
    std::vector<double> want{(100 - mean) * rstd, (100 - mean) * rstd * 2, (100 - mean) * rstd + 1,
                             dev * rstd * 0.5};
    std::vector<double> want_t = tensor(want).to(t).to_vector<double>(); // rounded once
    CHECK(nn::functional::layer_norm(v, {4}, w, b).to_vector<double>() == want_t);
  }
}

TEST_CASE("cumsum and cumprod match a sequential scan in every dtype and length",
          "[reduce][scan]") {
  // PyTorch's CPU kernels: one running value in double (float for 16-bit floats, int64 for
  // integers), each output rounded once.
  auto reference = [](const std::vector<double>& x, const Shape& s, int64_t d, bool prod) {
    std::vector<double> out(x.size());
    int64_t inner = 1;
    for (size_t k = d + 1; k < s.size(); ++k)
      inner *= s[k];
    const int64_t n = s[d],
                  outer = static_cast<int64_t>(x.size()) / std::max<int64_t>(1, n * inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double acc = prod ? 1 : 0;
        for (int64_t j = 0; j < n; ++j) {
          size_t at = (o * n + j) * inner + i;
          acc = prod ? acc * x[at] : acc + x[at];
          out[at] = acc;
        }
      }
    return out;
  };
  manual_seed(7);
  for (int64_t n : {0, 1, 5, 16, 17, 33, 256, 300, 4099}) {
    for (DType t : {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool, kFloat16}) {
      for (bool prod : {false, true}) {
        INFO("n " << n << " " << dtype_name(t) << (prod ? " cumprod" : " cumsum"));
        const Shape s{3, n, 2};
        Tensor x = prod ? (rand(s, kFloat64) * 0.4 + 0.8) : randn(s, kFloat64) * 3;
        if (is_integral(t, true)) x = prod ? (rand(s) * 2).floor() : (rand(s) * 7).floor() - 2;
        x = x.to(t).eval();
        for (int64_t dim : {1, -1, 0}) {
          Tensor y = prod ? x.cumprod(dim) : cumsum(x, dim);
          CHECK(y.dtype() == (is_integral(t, true) ? kInt64 : t));
          CHECK(y.sizes() == s);
          CHECK(y.is_contiguous());
          std::vector<double> want =
              reference(x.to_vector<double>(), s, dim < 0 ? dim + 3 : dim, prod);
          std::vector<double> got = y.to_vector<double>();
          REQUIRE(got.size() == want.size());
          const double rel = t == kFloat16 ? 2e-3 : t == kFloat32 ? 1e-6 : 1e-12;
          for (size_t i = 0; i < got.size(); ++i)
            if (got[i] != Approx(want[i]).epsilon(rel).margin(t == kFloat16 ? 1e-3 : 1e-9)) {
              FAIL_CHECK("element " << i << ": " << got[i] << " != " << want[i]);
              break;
            }
        }
      }
    }
  }
  // As printed by PyTorch.
  CHECK(cumsum(tensor({1, 2, 3}), 0).str() == "tensor([1, 3, 6])");
  CHECK(tensor({{1., 2., 0.5}, {3., 0., 4.}}).cumprod(1).str() ==
        "tensor([[1., 2., 1.],\n        [3., 0., 0.]])");
  CHECK(cumsum(tensor({true, true, false}), 0).str() == "tensor([1, 2, 2])");
  CHECK(cumsum(tensor(5), 0).str() == "tensor(5)");
  CHECK(cumsum(tensor({1, 2}), 0, kFloat64).str() == "tensor([1., 3.], dtype=torch.float64)");
  CHECK(arange(6).view({2, 3}).t().cumsum(0).str() ==
        "tensor([[ 0,  3],\n        [ 1,  7],\n        [ 3, 12]])");
  CHECK_THROWS_WITH(cumsum(ones({2, 3}), 2),
                    "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  // A sum starts from +0, as PyTorch's: negative zeros alone sum to +0.0, in every lane.
  for (int64_t n : {1, 7, 8, 9, 64})
    for (double v : full({n}, -0.0, kFloat64).cumsum(0).to_vector<double>())
      CHECK_FALSE(std::signbit(v));
  // A float32 sum of a million ones is exact, as the accumulation is wide.
  CHECK(ones({1 << 20}).cumsum(0)[-1].item<double>() == double(1 << 20));
  Tensor w = tensor({1.0, 2.0, 3.0}).requires_grad_();
  CHECK(w.cumsum(0).grad_fn()->name() == "CumsumBackward0");
  CHECK(w.cumprod(0).grad_fn()->name() == "CumprodBackward0");
}

TEST_CASE("a reduction fuses its producers and consumers", "[reduce][fusion]") {
  Tensor x = rand({64, 256});
  x.eval();
  reset_stats();
  Tensor y = (exp(x) * 2).sum({1}).sqrt() + 1;
  y.eval();
  CHECK(stats().kernels_launched == 1);
  check_vs_interp((exp(x) * 2).sum({1}).sqrt() + 1);
  // mean and sum of squares of one input over the same axes: one kernel.
  reset_stats();
  Tensor a = x.sum({1}), b = (x * x).sum({1});
  eval({a, b});
  CHECK(stats().kernels_launched == 1);
}

// Materializes `t` on its own and returns the number of kernels that took.
int64_t kernels_for(const Tensor& t) {
  reset_stats();
  t.eval();
  return stats().kernels_launched;
}

TEST_CASE("a row's reductions and the elements that use them are one kernel", "[reduce][rows]") {
  namespace F = nn::functional;
  manual_seed(11);
  // Rows of one element, of a few, of more than a reduction block, and as long as the CPU computes
  // in one kernel (16384).
  const int64_t cols = GENERATE(1, 3, 1000, 2049, 16384);
  const int64_t rows = cols > 2000 ? 3 : 9;
  INFO("rows of " << cols);
  Tensor x = randn({rows, cols}) * 3, w = rand({cols}), b = rand({cols});
  eval({x, w, b});
  CHECK(kernels_for(F::softmax(x, 1)) == 1);
  check_vs_interp(F::softmax(x, 1));
  CHECK(kernels_for(F::log_softmax(x, -1)) == 1);
  check_vs_interp(F::log_softmax(x, -1));
  CHECK(kernels_for(F::layer_norm(x, {cols}, w, b)) == 1);
  check_vs_interp(F::layer_norm(x, {cols}, w, b), 1e-4);
  // A variance: its mean and its sum of squares are two loops over the row, one kernel.
  CHECK(kernels_for(x.var({1})) == 1);
  check_vs_interp(x.var({1}), 1e-4);
  CHECK(kernels_for(x.std({1}, 0, true)) == 1);
  check_vs_interp(x.std({1}, 0, true), 1e-4);
  // Several roots of the row's shape, and a row's max stored beside its softmax.
  Tensor m = x.amax({1}, true), c = x - m;
  reset_stats();
  eval({m, c, F::softmax(x, 1)});
  CHECK(stats().kernels_launched == (cols == 1 ? 1 : 2)); // the [rows, 1] max, and the rows
  check_vs_interp(c);
  // Integer rows, with an integer division that fails in the store loop.
  Tensor k = randint(-50, 50, {rows, cols});
  check_vs_interp(k - k.sum({1}, true));
  Tensor zero = zeros_like(k);
  zero.eval();
  CHECK_THROWS_WITH(floor_divide(k - std::get<0>(k.max(1, true)), zero).eval(),
                    Catch::Contains("ZeroDivisionError"));
}

TEST_CASE("rows in other shapes and layouts", "[reduce][rows]") {
  namespace F = nn::functional;
  manual_seed(12);
  Tensor x = randn({4, 6, 10});
  x.eval();
  // Several trailing dims are one row; a row of 16385 is longer than one kernel loops over again.
  CHECK(kernels_for(F::layer_norm(x, {6, 10})) == 1);
  check_vs_interp(F::layer_norm(x, {6, 10}), 1e-4);
  Tensor longer = randn({2, 16385});
  longer.eval();
  CHECK(kernels_for(F::softmax(longer, 1)) == 3);
  check_vs_interp(F::softmax(longer, 1));
  // Over a leading dim, or an input read across memory along the row: a kernel per reduction,
  // whose loops walk memory once each.
  CHECK(kernels_for(F::softmax(x, 1)) == 3);
  check_vs_interp(F::softmax(x, 1));
  Tensor xt = x.transpose(1, 2);
  CHECK(kernels_for(F::softmax(xt, 2)) == 3);
  check_vs_interp(F::softmax(xt, 2));
  // A broadcast row (every row the same memory) and a row of a sliced input.
  Tensor bcast = x[0][0].expand({5, 10});
  CHECK(kernels_for(F::softmax(bcast, 1)) == 1);
  check_vs_interp(F::softmax(bcast, 1));
  Tensor sliced = x.narrow(2, 2, 7);
  CHECK(kernels_for(F::log_softmax(sliced, 2)) == 1);
  check_vs_interp(F::log_softmax(sliced, 2));
  // Half precision computes in float32; float64 stays float64.
  Tensor h = x.to(kFloat16);
  check_vs_interp(F::softmax(h, 2), 2e-3);
  check_vs_interp(F::layer_norm(x.to(kFloat64), {10}), 1e-10);
  // Many rows, split over the threads; a softmax written over its own input, and into a
  // transposed destination (whose rows are not one run of memory: one loop per kernel).
  Tensor many = randn({4096, 96});
  many.eval();
  check_vs_interp(F::softmax(many, 1));
  Tensor self = many.clone();
  self.copy_(F::softmax(self, 1));
  CHECK(allclose(self, F::softmax(many, 1)));
  Tensor dest = zeros({96, 4096});
  dest.t().copy_(F::softmax(many, 1));
  CHECK(allclose(dest.t(), F::softmax(many, 1)));
  // A 1-d row, and rows written in place into a view.
  check_vs_interp(F::softmax(x[1][2], 0));
  Tensor out = zeros({4, 6, 10});
  out.eval();
  out.narrow(1, 1, 3).copy_(F::softmax(x.narrow(1, 1, 3), 2));
  check_vs_interp(out);
}

TEST_CASE("reductions over an empty dim of a tensor in memory give the identity", "[reductions]") {
  Tensor a = randn({4, 4, 0});
  a.eval(); // realized: no kernel may read its (absent) elements
  CHECK(a.sum({2}).str() == zeros({4, 4}).str());
  CHECK(a.prod({2}).sum().item<double>() == 16.0);
  CHECK(a.all(2).all().item<bool>());
  CHECK_FALSE(a.any(2).any().item<bool>());
  CHECK(std::isnan(a.mean({2})[0][0].item<double>()));
  Tensor b = randn({0, 3}).to(kInt32);
  b.eval();
  CHECK(b.sum({0}).str() == "tensor([0, 0, 0])");
  CHECK(b.prod(0).str() == "tensor([1, 1, 1])");
}

TEST_CASE("row kernels prefetch the next row from their last reduction loop", "[reduce][llvm]") {
  // Softmax and layer_norm: the exp (or squares) loop after the first one, in blocks of a float32
  // sum, prefetches what the first loop reads of the next row.
  namespace F = nn::functional;
  Tensor x = randn({64, 2048}), w = randn({2048}), b = randn({2048});
  CHECK_THAT(ir::dump({F::softmax(x, 1)}, "llvm"), Catch::Contains("@llvm.prefetch"));
  CHECK_THAT(ir::dump({F::log_softmax(x, 1)}, "llvm"), Catch::Contains("@llvm.prefetch"));
  CHECK_THAT(ir::dump({F::layer_norm(x, {2048}, w, b)}, "llvm"), Catch::Contains("@llvm.prefetch"));
  // Not the first loop itself, which reads the row, nor the long blocks of other reductions.
  CHECK_THAT(ir::dump({x - x.amax({1}, true)}, "llvm"), !Catch::Contains("@llvm.prefetch"));
  CHECK_THAT(ir::dump({F::softmax(x.to(kFloat64), 1)}, "llvm"), !Catch::Contains("@llvm.prefetch"));
  // And the values are those of the interpreter.
  Tensor s = F::softmax(x, 1);
  auto ref = interp::evaluate(detail::node_of(s));
  auto got = s.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - ref.as_double(i)) / ref.as_double(i));
  CHECK(worst < 1e-6);
}
