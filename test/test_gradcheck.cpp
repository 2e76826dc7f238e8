// gradcheck: for every differentiable op, the analytic gradient (and, for
// elementwise ops and reductions, the Hessian-vector product through
// create_graph) agrees with central finite differences in float64.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cmath>
#include <functional>
#include <random>

#include "test/support/callable.h"
#include "test/support/seed.h"

using namespace tj;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
const TensorOptions f64 = dtype(kFloat64);

std::mt19937_64& rng() {
  static std::mt19937_64 r(tj::test::test_seed(20261123));
  return r;
}

// Uniform values in [lo, hi], kept `gap` away from the integers when asked
// (for functions with kinks or steps there).
Tensor uniform(const Shape& shape, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v)
    x = u(rng());
  return tensor(v, shape, f64);
}
Tensor with_sign(const Shape& shape, double lo, double hi) { // |x| in [lo, hi], random signs
  Tensor m = uniform(shape, lo, hi);
  Tensor s = uniform(shape, -1, 1).sign();
  return (m * s).contiguous();
}

double loss_value(const Fn& f, const std::vector<Tensor>& xs, const Tensor& w) {
  NoGradGuard no_grad;
  return (f(xs).to(kFloat64) * w).sum().item<double>();
}

// Central differences of a scalar function of the inputs' elements.
std::vector<std::vector<double>> numeric_grad(const std::function<double(std::vector<Tensor>&)>& L,
                                              const std::vector<Tensor>& xs, double eps) {
  std::vector<std::vector<double>> out;
  for (size_t i = 0; i < xs.size(); ++i) {
    std::vector<double> base = xs[i].to_vector<double>(), d(base.size());
    for (size_t j = 0; j < base.size(); ++j) {
      auto at = [&](double delta) {
        std::vector<double> v = base;
        v[j] += delta;
        std::vector<Tensor> ys = xs;
        ys[i] = tensor(v, xs[i].sizes(), f64).requires_grad_();
        return L(ys);
      };
      d[j] = (at(eps) - at(-eps)) / (2 * eps);
    }
    out.push_back(d);
  }
  return out;
}

void close(const std::vector<double>& got, const std::vector<double>& want, double tol,
           const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (size_t j = 0; j < got.size(); ++j) {
    INFO(what << " element " << j << ": analytic " << got[j] << ", numeric " << want[j]);
    CHECK(std::abs(got[j] - want[j]) <= tol * (1 + std::abs(want[j])));
  }
}

// Checks f's gradients at `inputs` (float64), and its second derivatives when `second`.
void gradcheck(const std::string& name, const Fn& f, std::vector<Tensor> inputs,
               bool second = false) {
  INFO("op: " << name);
  for (auto& x : inputs)
    x = x.detach().clone().requires_grad_();
  Tensor out = f(inputs);
  Tensor w = uniform(out.sizes(), -1, 1);
  auto L = [&](std::vector<Tensor>& xs) { return loss_value(f, xs, w); };
  Tensor loss = (out.to(kFloat64) * w).sum();
  std::vector<Tensor> g =
      autograd::grad({loss}, inputs, {}, std::nullopt, second, /*allow_unused=*/true);
  auto num = numeric_grad(L, inputs, 1e-6);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<double> got =
        g[i].defined() ? g[i].to_vector<double>() : std::vector<double>(num[i].size(), 0.0);
    close(got, num[i], 1e-5, "gradient of input " + std::to_string(i));
  }
  if (!second) return;
  // H v: the gradient of <grad, v>, against differences of the analytic gradient.
  std::vector<Tensor> vs;
  Tensor gv = zeros({}, f64);
  for (size_t i = 0; i < inputs.size(); ++i) {
    vs.push_back(uniform(inputs[i].sizes(), -1, 1));
    if (g[i].defined() && g[i].requires_grad()) gv = gv + (g[i] * vs[i]).sum();
  }
  std::vector<Tensor> hv;
  if (gv.requires_grad())
    hv = autograd::grad({gv}, inputs, {}, std::nullopt, false, true);
  else
    hv.resize(inputs.size());
  auto G = [&](std::vector<Tensor>& xs) {
    Tensor l = (f(xs).to(kFloat64) * w).sum();
    std::vector<Tensor> gr = autograd::grad({l}, xs, {}, std::nullopt, false, true);
    double s = 0;
    for (size_t i = 0; i < xs.size(); ++i)
      if (gr[i].defined()) s += (gr[i] * vs[i]).sum().item<double>();
    return s;
  };
  auto num2 = numeric_grad(G, inputs, 1e-5);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<double> got =
        hv[i].defined() ? hv[i].to_vector<double>() : std::vector<double>(num2[i].size(), 0.0);
    close(got, num2[i], 1e-4, "Hessian-vector product of input " + std::to_string(i));
  }
}

Fn unary(Tensor (*op)(const Tensor&)) {
  return [op](const std::vector<Tensor>& x) { return op(x[0]); };
}

} // namespace

TEST_CASE("gradcheck: unary elementwise ops, first and second order", "[autograd][gradcheck]") {
  const Shape s{2, 3};
  struct Case {
    const char* name;
    Tensor (*op)(const Tensor&);
    double lo, hi;
    bool signed_input;
  };
  const Case cases[] = {
      {"neg", TJ_FN(tj::neg), -2, 2, false},
      {"abs", TJ_FN(tj::abs), 0.2, 2, true},
      {"sqrt", TJ_FN(tj::sqrt), 0.5, 2, false},
      {"rsqrt", TJ_FN(tj::rsqrt), 0.5, 2, false},
      {"exp", TJ_FN(tj::exp), -1, 1, false},
      {"exp2", TJ_FN(tj::exp2), -1, 1, false},
      {"expm1", TJ_FN(tj::expm1), -1, 1, false},
      {"log", TJ_FN(tj::log), 0.5, 2, false},
      {"log2", TJ_FN(tj::log2), 0.5, 2, false},
      {"log10", TJ_FN(tj::log10), 0.5, 2, false},
      {"log1p", TJ_FN(tj::log1p), -0.5, 2, false},
      {"sin", TJ_FN(tj::sin), -2, 2, false},
      {"cos", TJ_FN(tj::cos), -2, 2, false},
      {"tan", TJ_FN(tj::tan), -1, 1, false},
      {"asin", TJ_FN(tj::asin), -0.8, 0.8, false},
      {"acos", TJ_FN(tj::acos), -0.8, 0.8, false},
      {"atan", TJ_FN(tj::atan), -2, 2, false},
      {"sinh", TJ_FN(tj::sinh), -1, 1, false},
      {"cosh", TJ_FN(tj::cosh), -1, 1, false},
      {"tanh", TJ_FN(tj::tanh), -1, 1, false},
      {"asinh", TJ_FN(tj::asinh), -2, 2, false},
      {"acosh", TJ_FN(tj::acosh), 1.2, 3, false},
      {"atanh", TJ_FN(tj::atanh), -0.8, 0.8, false},
      {"erfc", TJ_FN(tj::erfc), -1.5, 1.5, false},
      {"sigmoid", TJ_FN(tj::sigmoid), -2, 2, false},
      {"relu", TJ_FN(tj::relu), 0.2, 2, true},
      {"gelu", TJ_FN(tj::gelu), -2, 2, false},
      {"erf", TJ_FN(tj::erf), -1.5, 1.5, false},
      {"reciprocal", TJ_FN(tj::reciprocal), 0.5, 2, true},
      {"square", TJ_FN(tj::square), -2, 2, false},
      {"sign", TJ_FN(tj::sign), 0.2, 2, true},
      {"floor", TJ_FN(tj::floor), 0.1, 0.9, false},
      {"ceil", TJ_FN(tj::ceil), 0.1, 0.9, false},
      {"round", TJ_FN(tj::round), 0.1, 0.4, false},
      {"trunc", TJ_FN(tj::trunc), 0.1, 0.9, false},
  };
  for (const Case& c : cases) {
    Tensor x = c.signed_input ? with_sign(s, c.lo, c.hi) : uniform(s, c.lo, c.hi);
    gradcheck(c.name, unary(c.op), {x}, true);
  }
  gradcheck(
      "clamp", [](const auto& x) { return x[0].clamp(-0.5, 0.5); }, {with_sign(s, 0.1, 0.4) * 2},
      true);
  gradcheck(
      "clamp_min", [](const auto& x) { return x[0].clamp_min(0.3); }, {uniform(s, -1, 1) + 0.05},
      true);
  gradcheck(
      "to(float64)", [](const auto& x) { return x[0].to(kFloat64) * 2; }, {uniform(s, -1, 1)},
      true);
}

TEST_CASE("gradcheck: binary elementwise ops with broadcasting", "[autograd][gradcheck]") {
  Tensor a = uniform({3, 1}, 0.5, 2), b = uniform({1, 4}, 0.5, 2), c = uniform({3, 4}, -2, 2);
  gradcheck(
      "add", [](const auto& x) { return x[0] + x[1]; }, {a, b}, true);
  gradcheck(
      "add alpha", [](const auto& x) { return x[0].add(x[1], 2.5); }, {a, c}, true);
  gradcheck(
      "sub", [](const auto& x) { return x[0] - x[1]; }, {c, b}, true);
  gradcheck(
      "rsub", [](const auto& x) { return 3 - x[0]; }, {c}, true);
  gradcheck(
      "mul", [](const auto& x) { return x[0] * x[1]; }, {a, c}, true);
  gradcheck(
      "div", [](const auto& x) { return x[0] / x[1]; }, {c, b}, true);
  gradcheck(
      "scalar / t", [](const auto& x) { return 2 / x[0]; }, {b}, true);
  gradcheck(
      "pow tensor", [](const auto& x) { return x[0].pow(x[1]); }, {a, c}, true);
  gradcheck(
      "pow scalar exponent", [](const auto& x) { return x[0].pow(2.5); }, {b}, true);
  gradcheck(
      "pow 2", [](const auto& x) { return x[0].pow(2); }, {c}, true);
  gradcheck(
      "pow -1", [](const auto& x) { return x[0].pow(-1); }, {b}, true);
  gradcheck(
      "pow 0.5", [](const auto& x) { return x[0].pow(0.5); }, {b}, true);
  gradcheck(
      "pow scalar base", [](const auto& x) { return pow(1.7, x[0]); }, {c}, true);
  gradcheck(
      "maximum", [](const auto& x) { return maximum(x[0], x[1]); }, {c, uniform({3, 4}, -2, 2)},
      true);
  gradcheck(
      "minimum", [](const auto& x) { return minimum(x[0], x[1]); }, {c, uniform({3, 4}, -2, 2)},
      true);
  gradcheck(
      "atan2", [](const auto& x) { return atan2(x[0], x[1]); }, {c, b}, true);
  gradcheck(
      "hypot", [](const auto& x) { return hypot(x[0], x[1]); }, {c, b}, true);
  gradcheck("fmod", [](const auto& x) { return fmod(x[0], x[1]); },
            {uniform({3, 4}, 0.1, 0.9) + 2, tensor({0.7, 1.3, 1.9, 0.45}, f64)});
  gradcheck("remainder", [](const auto& x) { return remainder(x[0], x[1]); },
            {uniform({3, 4}, 0.1, 0.9) - 2, tensor({0.7, 1.3, 1.9, 0.45}, f64)});
  Tensor cond = uniform({3, 4}, -1, 1) > 0;
  gradcheck(
      "where", [cond](const auto& x) { return where(cond, x[0], x[1]); }, {a, b}, true);
  gradcheck(
      "composite", [](const auto& x) { return (x[0] * x[1]).sin() / (x[0] + 3).log(); }, {a, c},
      true);
}

TEST_CASE("gradcheck: reductions", "[autograd][gradcheck]") {
  Tensor x = uniform({3, 4}, -2, 2), p = uniform({3, 4}, 0.5, 1.5);
  gradcheck(
      "sum", [](const auto& t) { return t[0].sum(); }, {x}, true);
  gradcheck(
      "sum dim", [](const auto& t) { return t[0].sum({1}); }, {x}, true);
  gradcheck(
      "sum keepdim", [](const auto& t) { return t[0].sum({0}, true) * t[0]; }, {x}, true);
  gradcheck(
      "mean", [](const auto& t) { return t[0].mean(); }, {x}, true);
  gradcheck(
      "mean dims",
      [](const auto& t) {
        return t[0].mean({0, 1}, true);
      },
      {x}, true);
  gradcheck(
      "prod", [](const auto& t) { return t[0].prod(); }, {p}, true);
  gradcheck(
      "prod dim", [](const auto& t) { return t[0].prod(1); }, {x}, true);
  Tensor one_zero = x.clone();
  one_zero[1][2] = 0;
  gradcheck("prod with a zero", [](const auto& t) { return t[0].prod(1); }, {one_zero});
  Tensor two_zeros = one_zero.clone();
  two_zeros[1][0] = 0;
  gradcheck("prod with two zeros", [](const auto& t) { return t[0].prod(1); }, {two_zeros});
  gradcheck("prod of all with a zero", [](const auto& t) { return t[0].prod(); }, {one_zero});
  gradcheck("prod of all with two zeros", [](const auto& t) { return t[0].prod(); }, {two_zeros});
  gradcheck(
      "cumsum", [](const auto& t) { return t[0].cumsum(1); }, {x}, true);
  gradcheck(
      "cumsum dim 0", [](const auto& t) { return t[0].cumsum(0) * t[0]; }, {x}, true);
  gradcheck(
      "cumprod", [](const auto& t) { return t[0].cumprod(1); }, {x}, true);
  gradcheck("cumprod with a zero", [](const auto& t) { return t[0].cumprod(1); }, {one_zero});
  gradcheck("cumprod with two zeros", [](const auto& t) { return t[0].cumprod(-1); }, {two_zeros});
  // Rows of 70, down columns, and gradients of both signs through logcumsumexp's two parts.
  Tensor row = uniform({2, 70}, 0.8, 1.2);
  gradcheck(
      "cumsum of 70", [](const auto& t) { return t[0].cumsum(1); }, {row}, true);
  gradcheck(
      "cumprod of 70", [](const auto& t) { return t[0].cumprod(1); }, {row}, true);
  gradcheck(
      "cummax", [](const auto& t) { return std::get<0>(t[0].cummax(1)); }, {x}, true);
  gradcheck(
      "cummin dim 0", [](const auto& t) { return std::get<0>(t[0].cummin(0)); }, {x}, true);
  gradcheck(
      "logcumsumexp", [](const auto& t) { return t[0].logcumsumexp(1) * t[0]; }, {x}, true);
  gradcheck(
      "logcumsumexp dim 0", [](const auto& t) { return t[0].logcumsumexp(0).sin(); }, {x}, true);
  gradcheck(
      "logaddexp", [](const auto& t) { return logaddexp(t[0], t[1] * 3); }, {x, x.flip({1})}, true);
  gradcheck(
      "max", [](const auto& t) { return t[0].max(); }, {x}, true);
  gradcheck(
      "min", [](const auto& t) { return t[0].min(); }, {x}, true);
  gradcheck(
      "max dim", [](const auto& t) { return std::get<0>(t[0].max(1)); }, {x}, true);
  gradcheck(
      "min dim keepdim", [](const auto& t) { return std::get<0>(t[0].min(0, true)); }, {x}, true);
  gradcheck(
      "amax", [](const auto& t) { return t[0].amax({0}); }, {x}, true);
  gradcheck(
      "amin", [](const auto& t) { return t[0].amin({1}, true); }, {x}, true);
  gradcheck(
      "var", [](const auto& t) { return t[0].var(); }, {x}, true);
  gradcheck(
      "var dim", [](const auto& t) { return t[0].var({1}, 0, true); }, {x}, true);
  gradcheck(
      "std", [](const auto& t) { return t[0].std({0}); }, {x}, true);
  gradcheck(
      "norm 2", [](const auto& t) { return t[0].norm(); }, {x}, true);
  gradcheck(
      "norm 1", [](const auto& t) { return t[0].norm(1, {1}); }, {x}, true);
  gradcheck(
      "norm 3", [](const auto& t) { return t[0].norm(3, {0}); }, {x}, true);
  gradcheck("norm inf", [](const auto& t) { return t[0].norm(INFINITY, {1}); }, {x});
  gradcheck(
      "logsumexp", [](const auto& t) { return t[0].logsumexp({1}); }, {x}, true);
  gradcheck(
      "softmax", [](const auto& t) { return nn::functional::softmax(t[0], 1); }, {x}, true);
  gradcheck(
      "softmax dim 0", [](const auto& t) { return nn::functional::softmax(t[0], 0); }, {x}, true);
  gradcheck(
      "log_softmax", [](const auto& t) { return nn::functional::log_softmax(t[0], -1); }, {x},
      true);
  gradcheck(
      "layer_norm", [](const auto& t) { return nn::functional::layer_norm(t[0], {4}, t[1], t[2]); },
      {x, uniform({4}, 0.5, 1.5), uniform({4}, -1, 1)}, true);
  gradcheck(
      "layer_norm 2 dims",
      [](const auto& t) {
        return nn::functional::layer_norm(t[0], {3, 4});
      },
      {x}, true);
}

TEST_CASE("gradcheck: views, joins and selection", "[autograd][gradcheck]") {
  Tensor x = uniform({3, 4}, -2, 2);
  using indexing::Slice;
  gradcheck("view", [](const auto& t) { return t[0].view({4, 3}); }, {x});
  gradcheck("reshape of transpose", [](const auto& t) { return t[0].t().reshape({12}); }, {x});
  gradcheck("t", [](const auto& t) { return t[0].t(); }, {x});
  gradcheck("permute", [](const auto& t) { return t[0].unsqueeze(1).permute({2, 0, 1}); }, {x});
  gradcheck("squeeze", [](const auto& t) { return t[0].unsqueeze(0).squeeze(); }, {x});
  gradcheck("expand", [](const auto& t) { return t[0].unsqueeze(0).expand({2, 3, 4}) * 1.5; }, {x});
  gradcheck("expand_as", [](const auto& t) { return t[0].narrow(0, 0, 1).expand_as(t[0]); }, {x});
  gradcheck("narrow", [](const auto& t) { return t[0].narrow(1, 1, 2); }, {x});
  gradcheck("select", [](const auto& t) { return t[0].select(1, 2); }, {x});
  gradcheck("slice step", [](const auto& t) { return t[0].slice(1, 0, 4, 2); }, {x});
  gradcheck("index", [](const auto& t) { return t[0].index({Slice(1), 2}); }, {x});
  gradcheck("diagonal", [](const auto& t) { return t[0].diagonal(1); }, {x});
  gradcheck("views of views", [](const auto& t) { return t[0].t().narrow(0, 1, 2)[1] * 2; }, {x});
  gradcheck("flatten", [](const auto& t) { return t[0].flatten(); }, {x});
  gradcheck("clone", [](const auto& t) { return t[0].t().clone(); }, {x});
  gradcheck("contiguous", [](const auto& t) { return t[0].t().contiguous(); }, {x});
  gradcheck("cat",
            [](const auto& t) {
              return cat({t[0], t[1], t[0]}, 1);
            },
            {x, uniform({3, 2}, -1, 1)});
  gradcheck("stack",
            [](const auto& t) {
              return stack({t[0], t[1]}, 2);
            },
            {x, uniform({3, 4}, -1, 1)});
  gradcheck("split",
            [](const auto& t) { return split(t[0], 3, 1)[1] * split(t[0], 3, 1)[0].sum(); }, {x});
  gradcheck("chunk", [](const auto& t) { return chunk(t[0], 2, 0)[0]; }, {x});
  gradcheck("flip", [](const auto& t) { return flip(t[0], {0, 1}); }, {x});
  gradcheck("roll", [](const auto& t) { return roll(t[0], {1, -1}, {0, 1}); }, {x});
  gradcheck("repeat", [](const auto& t) { return repeat(t[0], {2, 1, 2}); }, {x});
  gradcheck("diag of vector", [](const auto& t) { return diag(t[0].select(0, 0), 1); }, {x});
  gradcheck("diag of matrix", [](const auto& t) { return diag(t[0], -1); }, {x});
  gradcheck("trace", [](const auto& t) { return trace(t[0]); }, {x});
  gradcheck("triu", [](const auto& t) { return triu(t[0], 1); }, {x});
  gradcheck("tril", [](const auto& t) { return tril(t[0]); }, {x});
  Tensor idx = tensor({2, 0, 2}, dtype(kInt64));
  gradcheck(
      "index_select", [idx](const auto& t) { return index_select(t[0], 1, idx); }, {x}, true);
  gradcheck("advanced index", [idx](const auto& t) { return t[0].index({idx, Slice(1, 3)}); }, {x});
  Tensor grid = tensor({{1, -1}, {0, 1}}, dtype(kInt64));
  gradcheck("advanced index by a 2-d index",
            [grid](const auto& t) {
              return (t[0] * t[0]).index({Slice(), grid});
            },
            {x});
  gradcheck("advanced index over two dims",
            [grid](const auto& t) {
              return t[0].index({grid, grid});
            },
            {x});
  Tensor gi = tensor({{0, 3}, {1, 1}, {2, 0}}, dtype(kInt64));
  gradcheck(
      "gather", [gi](const auto& t) { return gather(t[0], 1, gi); }, {x}, true);
  Tensor si = tensor({{0, 3}, {1, 2}}, dtype(kInt64));
  gradcheck("scatter", [si](const auto& t) { return scatter(t[0], 1, si, t[1]); },
            {x, uniform({2, 2}, -1, 1)});
  Tensor mask = uniform({3, 4}, -1, 1) > 0;
  gradcheck("masked_select", [mask](const auto& t) { return masked_select(t[0], mask); }, {x});
  gradcheck("masked_fill", [mask](const auto& t) { return (t[0] * t[0]).masked_fill(mask, 0.5); },
            {x});
}

TEST_CASE("gradcheck: matmul in all its cases", "[autograd][gradcheck]") {
  Tensor v3 = uniform({3}, -1, 1), v4 = uniform({4}, -1, 1), m34 = uniform({3, 4}, -1, 1),
         m45 = uniform({4, 5}, -1, 1), b234 = uniform({2, 3, 4}, -1, 1),
         b245 = uniform({2, 4, 5}, -1, 1);
  auto mat = [](const auto& t) { return matmul(t[0], t[1]); };
  gradcheck("dot", mat, {v4, v4 * 2}, true);
  gradcheck("mv", mat, {m34, v4}, true);
  gradcheck("vm", mat, {v3, m34}, true);
  gradcheck("mm", mat, {m34, m45}, true);
  gradcheck(
      "bmm", [](const auto& t) { return bmm(t[0], t[1]); }, {b234, b245}, true);
  gradcheck("batched broadcast", mat, {b234, m45}, true);
  gradcheck("broadcast batch of one", mat, {uniform({1, 3, 4}, -1, 1), b245}, true);
  gradcheck("batched @ vector", mat, {b234, v4}, true);
  gradcheck("vector @ batched", mat, {v4, b245}, true);
  gradcheck("tensordot",
            [](const auto& t) {
              return tensordot(t[0], t[1], {2, 1}, {0, 1});
            },
            {b245.permute({2, 1, 0}).contiguous(), uniform({2, 4, 3}, -1, 1)});
}

TEST_CASE("gradcheck: linear algebra", "[autograd][gradcheck][linalg]") {
  // Inputs kept well-conditioned (and symmetric where the function reads one triangle) by the
  // functions themselves; functions of singular vectors only through sign-free products.
  auto I = [](int64_t n) { return eye(n, dtype(kFloat64)); };
  Tensor a33 = uniform({3, 3}, -1, 1), b234 = uniform({2, 3, 4}, -1, 1),
         b233 = uniform({2, 3, 3}, -1, 1), m32 = uniform({3, 2}, -1, 1);
  auto flat = [](std::vector<Tensor> ts) {
    for (auto& t : ts)
      t = t.flatten();
    return cat(ts);
  };
  gradcheck(
      "solve", [&](const auto& t) { return linalg::solve(t[0] + I(3) * 3, t[1]); },
      {b233, uniform({2, 3, 2}, -1, 1)}, true);
  gradcheck("solve, vector and left=false",
            [&](const auto& t) {
              return flat({linalg::solve(t[0] + I(3) * 3, t[1].select(-1, 0)),
                           linalg::solve(t[0] + I(3) * 3, t[1].mT(), false)});
            },
            {a33, m32});
  gradcheck(
      "inv", [&](const auto& t) { return linalg::inv(t[0] + I(3) * 3); }, {b233}, true);
  gradcheck(
      "det", [&](const auto& t) { return linalg::det(t[0] + I(3) * 2); }, {b233}, true);
  // A singular matrix's gradient: its cofactors.
  Tensor singular = tensor({{1., 2.}, {2., 4.}}, dtype(kFloat64)).requires_grad_();
  linalg::det(singular).backward();
  CHECK(allclose(singular.grad(), tensor({{4., -2.}, {-2., 1.}}, dtype(kFloat64)), 1e-12, 1e-12));
  gradcheck("slogdet", [&](const auto& t) { return linalg::slogdet(t[0] - I(3) * 2).logabsdet; },
            {b233});
  for (bool upper : {false, true})
    gradcheck(upper ? "cholesky upper" : "cholesky",
              [&, upper](const auto& t) {
                return linalg::cholesky(t[0].matmul(t[0].mT()) + I(3), upper);
              },
              {b233});
  for (Shape s : {Shape{4, 3}, Shape{3, 3}, Shape{2, 3, 4}}) {
    INFO("qr of " << s.size());
    gradcheck("qr",
              [&](const auto& t) {
                auto [Q, R] = linalg::qr(t[0]);
                return flat({Q, R});
              },
              {uniform(s, -1, 1)});
  }
  gradcheck("qr complete, wide",
            [&](const auto& t) {
              auto [Q, R] = linalg::qr(t[0], "complete");
              return flat({Q, R});
            },
            {uniform({3, 5}, -1, 1)});
  for (bool full : {false, true})
    for (Shape s : {Shape{4, 3}, Shape{3, 4}, Shape{2, 3, 3}}) {
      INFO("svd full " << full);
      gradcheck("svd",
                [&, full](const auto& t) {
                  auto [U, S, Vh] = linalg::svd(t[0], full);
                  const int64_t k = S.size(-1);
                  return flat({S, U.narrow(-1, 0, k).matmul(Vh.narrow(-2, 0, k))});
                },
                {uniform(s, -1, 1)});
    }
  gradcheck("svdvals", [&](const auto& t) { return linalg::svdvals(t[0]); }, {b234});
  gradcheck("eigh",
            [&](const auto& t) {
              auto [L, V] = linalg::eigh(t[0] + t[0].mT());
              Tensor w = arange(1, 4, dtype(kFloat64));
              return flat({L, (V * w).matmul(V.mT())});
            },
            {b233});
  gradcheck("eigvalsh", [&](const auto& t) { return linalg::eigvalsh(t[0] + t[0].mT(), "U"); },
            {b233});
  gradcheck("pinv", [&](const auto& t) { return linalg::pinv(t[0]); }, {b234});
  gradcheck("lstsq", [&](const auto& t) { return linalg::lstsq(t[0], t[1]).solution; },
            {uniform({2, 5, 3}, -1, 1), uniform({2, 5, 2}, -1, 1)});
  gradcheck("lstsq, wide",
            [&](const auto& t) { return linalg::lstsq(t[0], t[1], "gelsd").solution; },
            {uniform({3, 5}, -1, 1), uniform({3}, -1, 1)});
  gradcheck(
      "matrix_power", [&](const auto& t) { return linalg::matrix_power(t[0], 3); }, {b233}, true);
  gradcheck("matrix_power -2",
            [&](const auto& t) { return linalg::matrix_power(t[0] + I(3) * 3, -2); }, {a33});
  gradcheck(
      "multi_dot",
      [&](const auto& t) {
        return linalg::multi_dot({t[0], t[1], t[2]});
      },
      {uniform({4}, -1, 1), uniform({4, 3}, -1, 1), m32}, true);
  gradcheck(
      "cross", [&](const auto& t) { return linalg::cross(t[0], t[1], 1); },
      {uniform({2, 3, 4}, -1, 1), uniform({2, 3, 4}, -1, 1)}, true);
  gradcheck("vector_norm",
            [&](const auto& t) {
              return flat({linalg::vector_norm(t[0]), linalg::vector_norm(t[0], 3, {1}),
                           linalg::vector_norm(t[0], 1, {0, 2})});
            },
            {b234});
  gradcheck("matrix_norm",
            [&](const auto& t) {
              return flat({linalg::matrix_norm(t[0]), linalg::matrix_norm(t[0], "nuc"),
                           linalg::matrix_norm(t[0], 2), linalg::matrix_norm(t[0], -2)});
            },
            {b234});
}

TEST_CASE("gradcheck: in-place ops and writes through views", "[autograd][gradcheck]") {
  Tensor x = uniform({3, 4}, 0.5, 1.5), y = uniform({3, 4}, -1, 1);
  gradcheck(
      "mul_ add_",
      [](const auto& t) {
        Tensor z = t[0] * 1;
        z.mul_(t[1]);
        z.add_(t[0], 2);
        z.sin_();
        return z;
      },
      {x, y}, true);
  gradcheck("write through a view",
            [](const auto& t) {
              Tensor z = t[0].exp();
              z.narrow(1, 1, 2).mul_(t[1].narrow(1, 0, 2));
              z[0].copy_(t[1][2]);
              return z * z;
            },
            {x, y});
  gradcheck("fill_ and index_put_ with a mask",
            [](const auto& t) {
              Tensor z = t[0] * t[1];
              z.narrow(0, 0, 1).fill_(3);
              return z;
            },
            {x, y});
}

TEST_CASE("gradcheck: index_put_, linear and the losses", "[autograd][gradcheck]") {
  Tensor x = uniform({3, 4}, -2, 2);
  Tensor rows = tensor({0, 2}, dtype(kInt64));
  gradcheck("index_put_",
            [rows](const auto& t) {
              Tensor z = t[0] * 1;
              z.index_put_({rows}, t[1]);
              return z;
            },
            {x, uniform({2, 4}, -1, 1)});
  gradcheck(
      "linear", [](const auto& t) { return nn::functional::linear(t[0], t[1], t[2]); },
      {x, uniform({5, 4}, -1, 1), uniform({5}, -1, 1)}, true);
  gradcheck(
      "mse_loss", [](const auto& t) { return nn::functional::mse_loss(t[0], t[1]); },
      {x, uniform({3, 4}, -1, 1)}, true);
  Tensor target = tensor({3, 0, 1}, dtype(kInt64));
  gradcheck(
      "cross_entropy",
      [target](const auto& t) { return nn::functional::cross_entropy(t[0], target); }, {x}, true);
}

TEST_CASE("gradcheck: nn losses with every reduction and activations", "[autograd][gradcheck]") {
  namespace F = nn::functional;
  Tensor x = with_sign({3, 4}, 0.1, 2), y = with_sign({3, 4}, 0.1, 2);
  for (const char* r : {"mean", "sum", "none"}) {
    INFO("reduction " << r);
    gradcheck(
        "mse_loss", [r](const auto& t) { return F::mse_loss(t[0], t[1], r); }, {x, y}, true);
    // Broadcast targets: the engine sums their gradients back.
    gradcheck("mse_loss broadcast", [r](const auto& t) { return F::mse_loss(t[0], t[1], r); },
              {x, uniform({4}, -1, 1)});
    gradcheck("smooth_l1_loss",
              [r](const auto& t) { return F::smooth_l1_loss(t[0], t[1], r, 0.5); }, {x, y});
    gradcheck("huber_loss", [r](const auto& t) { return F::huber_loss(t[0], t[1], r, 0.7); },
              {x, y});
    gradcheck(
        "binary_cross_entropy",
        [r](const auto& t) { return F::binary_cross_entropy(t[0], t[1], r); },
        {uniform({3, 4}, 0.05, 0.95), uniform({3, 4}, 0, 1)}, true);
    gradcheck(
        "binary_cross_entropy_with_logits",
        [r](const auto& t) { return F::binary_cross_entropy_with_logits(t[0], t[1], r); },
        {x, uniform({3, 4}, 0, 1)}, true);
    gradcheck(
        "binary_cross_entropy_with_logits pos_weight",
        [r](const auto& t) { return F::binary_cross_entropy_with_logits(t[0], t[1], r, t[2]); },
        {x, uniform({3, 4}, 0, 1), uniform({4}, 0.5, 2)});
    Tensor target = tensor({3, -100, 1}, dtype(kInt64));
    gradcheck("nll_loss", [r, target](const auto& t) { return F::nll_loss(t[0], target, r); }, {x});
    gradcheck(
        "cross_entropy probabilities",
        [r](const auto& t) { return F::cross_entropy(t[0], t[1], r); }, {x, F::softmax(y, 1)},
        true);
    // Class weights and label smoothing, with an ignored target.
    const Tensor w = tensor({0.5, 2.0, 1.0, 3.0}, dtype(kFloat64));
    gradcheck("nll_loss weight",
              [r, target, w](const auto& t) { return F::nll_loss(t[0], target, r, -100, w); }, {x});
    gradcheck("cross_entropy weight label_smoothing",
              [r, target, w](const auto& t) {
                return F::cross_entropy(
                    t[0], target,
                    F::CrossEntropyFuncOptions().reduction(r).weight(w).label_smoothing(0.2));
              },
              {x});
    gradcheck("cross_entropy probabilities weight label_smoothing",
              [r, w](const auto& t) { return F::cross_entropy(t[0], t[1], r, -100, w, 0.3); },
              {x, F::softmax(y, 1)});
    gradcheck("binary_cross_entropy weight",
              [r, w](const auto& t) { return F::binary_cross_entropy(t[0], t[1], r, w); },
              {uniform({3, 4}, 0.05, 0.95), uniform({3, 4}, 0, 1)});
    gradcheck("binary_cross_entropy_with_logits weight",
              [r, w](const auto& t) {
                return F::binary_cross_entropy_with_logits(t[0], t[1], r, t[2], w);
              },
              {x, uniform({3, 4}, 0, 1), uniform({4}, 0.5, 2)});
    for (const char* kr : {"mean", "sum", "none", "batchmean"}) {
      gradcheck(
          "kl_div", [kr](const auto& t) { return F::kl_div(t[0], t[1], kr); },
          {x, uniform({3, 4}, 0.1, 1)}, true);
      gradcheck(
          "kl_div log_target", [kr](const auto& t) { return F::kl_div(t[0], t[1], kr, true); },
          {x, y}, true);
    }
  }
  gradcheck(
      "leaky_relu", [](const auto& t) { return F::leaky_relu(t[0], 0.2); }, {x}, true);
  gradcheck(
      "elu", [](const auto& t) { return F::elu(t[0], 1.5); }, {x}, true);
  gradcheck(
      "silu", [](const auto& t) { return F::silu(t[0]); }, {x}, true);
  gradcheck(
      "softplus", [](const auto& t) { return F::softplus(t[0], 2.0, 3.0); }, {x}, true);
  gradcheck(
      "hardtanh", [](const auto& t) { return F::hardtanh(t[0], -0.5, 1.0); }, {x}, true);
  gradcheck("embedding",
            [](const auto& t) {
              return F::embedding(tensor({{2, 0}, {2, 1}}, dtype(kInt64)), t[0]);
            },
            {x});
}
