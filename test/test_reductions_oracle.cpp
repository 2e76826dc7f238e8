// Every reduction against the reference interpreter, on every dtype PyTorch takes it for,
// over 0-d, 1-d and transposed-and-sliced 3-d inputs, reduced over every dim, one, two and
// negative dims, with and without keepdim; result dtypes by PyTorch's rules; and what PyTorch
// 1.13 gives for NaN, ties and empty inputs and dims, with its values and messages.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "lib/core/warning.h"
#include "tensorjit/tensorjit.h"
#include "test/support/dtypes.h"
#include "test/support/stderr_of.h"
#include "test/support/tolerance.h"

using namespace tj;
using tj::test::Accuracy;
using tj::test::cpp_name;
using tj::test::dname;
using tj::test::kDTypes;
using tj::test::OracleBatch;
using tj::test::stderr_of;
using tj::test::Tolerance;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// `n` deterministic values for dtype t: floats on a 1/8 grid in [-2, 4) (sums of them are exact,
// and equal values make ties), small integers, or 0/1. For products, values near 1 that cannot
// overflow over a whole input.
Tensor values(DType t, const Shape& shape, bool for_prod, uint64_t seed) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<double> v(n);
  uint64_t s = seed * 2654435761u + 1;
  for (double& x : v) {
    s = s * 6364136223846793005u + 1442695040888963407u;
    const uint64_t r = s >> 33;
    if (t == kBool)
      x = double(r % 2);
    else if (is_floating_point(t))
      x = for_prod ? 0.75 + double(r % 33) / 64 : -2 + double(r % 48) / 8;
    else if (for_prod)
      x = t == kUInt8 ? (r % 8 == 0 ? 2 : 1) : std::array{1, -1, 2, 1, 1, -1, 1, 1}[r % 8];
    else
      x = t == kUInt8 ? double(r % 9) : double(int64_t(r % 9) - 3);
  }
  Tensor x = tensor(v, shape, dtype(kFloat64)).to(t);
  x.eval();
  return x;
}

// The inputs of dtype t: a 0-d tensor, a vector, and a 3-d view read across memory (transposed
// and sliced, at an offset).
std::vector<std::pair<std::string, Tensor>> inputs(DType t, bool for_prod) {
  return {{"0-d", values(t, {}, for_prod, 1)},
          {"(9)", values(t, {9}, for_prod, 2)},
          {"(6, 5, 8).transpose(0, 2).narrow(1, 1, 3)",
           values(t, {6, 5, 8}, for_prod, 3).transpose(0, 2).narrow(1, 1, 3)}};
}

// How a reduction is asked for: over every dim (no dims given), or over `dims`.
struct Over {
  bool every = false;
  std::vector<int64_t> dims;
  bool keepdim = false;
  std::string str() const {
    if (every) return "all";
    std::string s;
    for (int64_t d : dims)
      s += (s.empty() ? "" : ", ") + std::to_string(d);
    return fmt::format("dims ({}) keepdim {}", s, keepdim);
  }
};

// The reductions each input meets: over every dim, and over one, two and negative dims. The 3-d
// input meets a rotating selection (by `k`) of its many choices, so that every choice meets
// every op on some dtypes without compiling every combination.
std::vector<Over> overs(int64_t ndim, size_t k) {
  std::vector<Over> out{{true, {}, false}};
  if (ndim == 0) {
    out.push_back({false, {0}, false});
    out.push_back({false, {-1}, true});
    return out;
  }
  if (ndim == 1) {
    out.push_back({false, {0}, true});
    out.push_back({false, {-1}, false});
    return out;
  }
  const std::vector<Over> one{
      {false, {1}, false}, {false, {-1}, true}, {false, {0}, true}, {false, {-3}, false}};
  const std::vector<Over> two{{false, {0, 2}, false},
                              {false, {-1, -2}, true},
                              {false, {2, 0}, true},
                              {false, {0, 1}, false}};
  out.push_back(one[k % one.size()]);
  out.push_back(two[k % two.size()]);
  return out;
}

bool is_float(DType t) { return is_floating_point(t); }

// Close enough to the interpreter for a reduction that accumulates: a few roundings of the
// result's dtype, relative to the inputs' scale (the values are at most 4 in magnitude).
Tolerance accumulated(DType t) {
  if (!is_float(t)) return tj::test::tolerance(t, Accuracy::Exact);
  Tolerance tol = tj::test::tolerance(t, Accuracy::Transcendental);
  if (t == kFloat16 || t == kBFloat16) tol = tol.scaled(2);
  tol.atol = 16 * tol.rtol;
  return tol;
}

struct ReduceOp {
  std::string name;
  bool multi_dim; // takes a list of dims; else one dim
  // The result for input x reduced as `o` (the k-th case, for choices that rotate).
  std::function<Tensor(const Tensor& x, const Over& o, size_t k)> fn;
  // PyTorch's result dtype for an input dtype.
  std::function<DType(DType)> result;
  // PyTorch's error for an input dtype; empty: accepted.
  std::function<std::string(DType)> rejects;
  bool exact; // selects an element (max, argmax, all): equal, not close
};

DType same(DType t) { return t; }
DType int64_for_ints(DType t) { return is_float(t) ? t : kInt64; }
std::string accepts(DType) { return {}; }
std::string floats_only(DType t, const std::string& msg) { return is_float(t) ? "" : msg; }

std::vector<ReduceOp> reduce_ops() {
  using O = const Over&;
  std::vector<ReduceOp> ops;
  ops.push_back(
      {"sum", true,
       [](const Tensor& x, O o, size_t) { return o.every ? x.sum() : x.sum(o.dims, o.keepdim); },
       int64_for_ints, accepts, false});
  ops.push_back({"prod", false,
                 [](const Tensor& x, O o, size_t) {
                   return o.every ? x.prod() : x.prod(o.dims[0], o.keepdim);
                 },
                 int64_for_ints, accepts, false});
  ops.push_back(
      {"mean", true,
       [](const Tensor& x, O o, size_t) { return o.every ? x.mean() : x.mean(o.dims, o.keepdim); },
       same,
       [](DType t) {
         return floats_only(t, "mean(): could not infer output dtype. Input dtype must be "
                               "either a floating point or complex dtype. Got: " +
                                   cpp_name(t));
       },
       false});
  for (bool mx : {true, false}) {
    ops.push_back({mx ? "max" : "min", false,
                   [mx](const Tensor& x, O o, size_t) {
                     if (o.every) return mx ? x.max() : x.min();
                     return std::get<0>(mx ? x.max(o.dims[0], o.keepdim)
                                           : x.min(o.dims[0], o.keepdim));
                   },
                   same, accepts, true});
    ops.push_back({mx ? "max(dim).indices" : "min(dim).indices", false,
                   [mx](const Tensor& x, O o, size_t) {
                     const int64_t d = o.every ? 0 : o.dims[0];
                     return std::get<1>(mx ? x.max(d, o.keepdim) : x.min(d, o.keepdim));
                   },
                   [](DType) { return kInt64; }, accepts, true});
    ops.push_back({mx ? "amax" : "amin", true,
                   [mx](const Tensor& x, O o, size_t) {
                     const std::vector<int64_t> d = o.every ? std::vector<int64_t>{} : o.dims;
                     return mx ? x.amax(d, o.keepdim) : x.amin(d, o.keepdim);
                   },
                   same, accepts, true});
    ops.push_back({mx ? "argmax" : "argmin", false,
                   [mx](const Tensor& x, O o, size_t) {
                     std::optional<int64_t> d;
                     if (!o.every) d = o.dims[0];
                     return mx ? x.argmax(d, o.keepdim) : x.argmin(d, o.keepdim);
                   },
                   [](DType) { return kInt64; },
                   [mx](DType t) {
                     return t == kBool ? fmt::format("\"{}_cpu\" not implemented for 'Bool'",
                                                     mx ? "argmax" : "argmin")
                                       : std::string();
                   },
                   true});
  }
  for (bool is_std : {false, true})
    ops.push_back(
        {is_std ? "std" : "var", true,
         [is_std](const Tensor& x, O o, size_t k) {
           const int64_t correction = int64_t(k % 3);
           const std::vector<int64_t> d = o.every ? std::vector<int64_t>{} : o.dims;
           return is_std ? x.std(d, correction, o.keepdim) : x.var(d, correction, o.keepdim);
         },
         same,
         [](DType t) {
           return floats_only(t, "std and var only support floating point and complex dtypes");
         },
         false});
  ops.push_back({"norm", true,
                 [](const Tensor& x, O o, size_t k) {
                   const double p = std::array{2.0, 1.0, kInf, 3.0, -kInf, 0.0}[k % 6];
                   return o.every ? x.norm(p) : x.norm(p, o.dims, o.keepdim);
                 },
                 same,
                 [](DType t) {
                   return floats_only(t, "linalg.vector_norm: Expected a floating point or "
                                         "complex tensor as input. Got " +
                                             cpp_name(t));
                 },
                 false});
  ops.push_back({"logsumexp", true,
                 [](const Tensor& x, O o, size_t) {
                   std::vector<int64_t> d = o.dims;
                   if (o.every)
                     for (int64_t i = 0; i < x.dim(); ++i)
                       d.push_back(i);
                   return x.logsumexp(d, o.keepdim);
                 },
                 [](DType t) { return is_float(t) ? t : kFloat32; }, accepts, false});
  for (bool is_all : {true, false})
    ops.push_back({is_all ? "all" : "any", false,
                   [is_all](const Tensor& x, O o, size_t) {
                     if (o.every) return is_all ? x.all() : x.any();
                     return is_all ? x.all(o.dims[0], o.keepdim) : x.any(o.dims[0], o.keepdim);
                   },
                   [](DType t) { return t == kUInt8 ? kUInt8 : kBool; }, accepts, true});
  return ops;
}

// The shape PyTorch gives `shape` reduced as `o` (argmax without a dim keeps every dim too).
Shape reduced_shape(const Shape& shape, const Over& o) {
  const int64_t n = int64_t(shape.size());
  Shape out;
  for (int64_t d = 0; d < n; ++d) {
    bool reduced = o.every;
    for (int64_t r : o.dims)
      reduced |= (r < 0 ? r + n : r) == d;
    if (!reduced)
      out.push_back(shape[d]);
    else if (o.keepdim)
      out.push_back(1);
  }
  return out;
}

} // namespace

TEST_CASE("reductions match the interpreter on every dtype, layout and choice of dims",
          "[oracle][reduce][sweep]") {
  // Every op reduces one input the same way in one batch: they share a kernel, and the table
  // costs one compilation per (dtype, input, dims).
  const std::vector<ReduceOp> ops = reduce_ops();
  size_t k = 0;
  for (size_t ti = 0; ti < kDTypes.size(); ++ti) {
    const DType t = kDTypes[ti];
    const auto plain = inputs(t, false), for_prod = inputs(t, true);
    for (size_t n = 0; n < plain.size(); ++n) {
      for (const Over& o : overs(plain[n].second.dim(), ti)) {
        OracleBatch batch(64);
        for (const ReduceOp& op : ops) {
          if (!op.multi_dim && o.dims.size() > 1) continue;
          const auto& [name, x] = op.name == "prod" ? for_prod[n] : plain[n];
          ++k;
          const std::string what =
              fmt::format("{}({} {}) over {} (case {})", op.name, dname(t), name, o.str(), k);
          INFO(what);
          const std::string reject = op.rejects(t);
          if (!reject.empty()) {
            CHECK_THROWS_WITH(op.fn(x, o, k), reject);
            continue;
          }
          Tensor y = op.fn(x, o, k);
          CHECK(y.dtype() == op.result(t));
          // max(dim).indices over every dim stands for max(0): keepdim then keeps dim 0.
          Over shaped = o;
          if (o.every && op.name.find("indices") != std::string::npos && x.dim() > 0)
            shaped = {false, {0}, o.keepdim};
          CHECK(y.sizes() == reduced_shape(x.sizes(), shaped));
          batch.add(y,
                    op.exact ? tj::test::tolerance(y.dtype(), Accuracy::Exact)
                             : accumulated(y.dtype()),
                    what);
        }
        TJ_CHECK_BATCH(batch);
      }
    }
  }
}

TEST_CASE("reductions propagate NaN as PyTorch 1.13", "[reduce][nan]") {
  for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    INFO(dname(t));
    Tensor x = tensor({{1., kNaN, 3.}, {kNaN, 2., kNaN}, {4., 5., 6.}}, dtype(t));
    auto [v1, i1] = x.max(1);
    CHECK(v1.to(kFloat64).isnan().to_vector<bool>() == std::vector<bool>{true, true, false});
    CHECK(v1[2].item<double>() == 6.0);
    CHECK(i1.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 2});
    auto [v0, i0] = x.min(0);
    CHECK(v0.isnan().all().item<bool>());
    CHECK(i0.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1});
    CHECK(std::get<1>(x.min(1)).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
    CHECK(x.amax({1}).isnan().to_vector<bool>() == std::vector<bool>{true, true, false});
    CHECK(x.amin({0}).isnan().all().item<bool>());
    CHECK(std::isnan(x.amax().item<double>()));
    CHECK(std::isnan(x.max().item<double>()));
    CHECK(std::isnan(x.min().item<double>()));
    // The first NaN is the index, along a dim and over every element.
    CHECK(x.argmax(1).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 2});
    CHECK(x.argmin(1).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
    CHECK(x.argmin(0).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1});
    CHECK(x.argmax().item<int64_t>() == 1);
    CHECK(x.argmin().item<int64_t>() == 1);
    CHECK(x.norm(kInf, {1}).isnan().to_vector<bool>() == std::vector<bool>{true, true, false});
    CHECK(x.sum({1}).isnan().to_vector<bool>() == std::vector<bool>{true, true, false});
    CHECK(x.logsumexp({1}).isnan().to_vector<bool>() == std::vector<bool>{true, true, false});
  }
  Tensor x = tensor({{1., kNaN, 3.}, {kNaN, 2., kNaN}, {4., 5., 6.}});
  CHECK(x.logsumexp({1}).str() == "tensor([   nan,    nan, 6.4076])");
  // Infinities are ordinary values.
  Tensor y = tensor({{kInf, 1., kInf}, {-kInf, -kInf, 0.}});
  CHECK(y.logsumexp({1}).to_vector<float>() == std::vector<float>{INFINITY, 0.0f});
  CHECK(y.argmax(1).to_vector<int64_t>() == std::vector<int64_t>{0, 2});
  CHECK(y.argmin(1).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
}

TEST_CASE("reductions pick the first of tied extrema as PyTorch 1.13", "[reduce][ties]") {
  for (DType t : {kInt64, kInt8, kUInt8, kFloat32, kFloat16}) {
    INFO(dname(t));
    Tensor x = tensor({{3, 1, 3, 1}, {2, 2, 2, 2}}, dtype(t));
    CHECK(x.argmax(1).to_vector<int64_t>() == std::vector<int64_t>{0, 0});
    CHECK(x.argmin(1).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
    CHECK(x.argmax().item<int64_t>() == 0);
    CHECK(x.argmin().item<int64_t>() == 1);
    CHECK(std::get<1>(x.max(1)).to_vector<int64_t>() == std::vector<int64_t>{0, 0});
    CHECK(std::get<1>(x.min(1)).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
    CHECK(std::get<1>(x.max(0)).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 0, 1});
    // Read across memory: the order is the logical one.
    CHECK(x.t().contiguous().t().argmin(1).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  }
  Tensor b = tensor({{true, false, true}, {false, false, false}});
  auto [bv, bi] = b.max(1);
  CHECK(bv.to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(bi.to_vector<int64_t>() == std::vector<int64_t>{0, 0});
  CHECK(std::get<1>(b.min(1)).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  // keepdim without a dim keeps every dim.
  CHECK(tensor({{1., 2.}, {3., 5.}}).argmax(std::nullopt, true).str() == "tensor([[3]])");
  CHECK(ones({2, 3, 4}).argmin(std::nullopt, true).sizes() == Shape{1, 1, 1});
  CHECK(tensor(5.).argmax(0, true).sizes() == Shape{});
}

TEST_CASE("reductions of empty inputs follow PyTorch 1.13", "[reduce][empty]") {
  Tensor e = zeros({0, 3});
  e.eval();
  for (const char* fn : {"max", "min"})
    CHECK_THROWS_WITH(std::string(fn) == "max" ? e.max() : e.min(),
                      std::string(fn) +
                          "(): Expected reduction dim to be specified for input.numel() == 0. "
                          "Specify the reduction dim with the 'dim' argument.");
  CHECK_THROWS_WITH(e.amax(), "amax(): Expected reduction dim to be specified for input.numel() "
                              "== 0. Specify the reduction dim with the 'dim' argument.");
  CHECK_THROWS_WITH(e.amin({}), "amin(): Expected reduction dim to be specified for input.numel() "
                                "== 0. Specify the reduction dim with the 'dim' argument.");
  CHECK_THROWS_WITH(e.argmax(),
                    "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  CHECK_THROWS_WITH(e.argmin(),
                    "argmin(): Expected reduction dim to be specified for input.numel() == 0.");
  CHECK_THROWS_WITH(e.argmax(0), "argmax(): Expected reduction dim 0 to have non-zero size.");
  CHECK_THROWS_WITH(e.argmin(-2), "argmin(): Expected reduction dim 0 to have non-zero size.");
  CHECK_THROWS_WITH(e.max(0), "max(): Expected reduction dim 0 to have non-zero size.");
  CHECK_THROWS_WITH(e.min(0), "min(): Expected reduction dim 0 to have non-zero size.");
  CHECK_THROWS_WITH(e.amax({0}), "amax(): Expected reduction dim 0 to have non-zero size.");
  CHECK_THROWS_WITH(zeros({2, 0}).amax({0, 1}),
                    "amax(): Expected reduction dim 1 to have non-zero size.");
  // amax and amin name the dim as given, in the order given; max(dim) and argmax wrap it.
  CHECK_THROWS_WITH(zeros({2, 0}).amax({-1}),
                    "amax(): Expected reduction dim -1 to have non-zero size.");
  CHECK_THROWS_WITH(zeros({2, 0}).amin({0, -1}),
                    "amin(): Expected reduction dim -1 to have non-zero size.");
  CHECK_THROWS_WITH(zeros({0, 2, 0}).amin({2, 0}),
                    "amin(): Expected reduction dim 2 to have non-zero size.");
  CHECK_THROWS_WITH(zeros({2, 0}).amax({-1, 1}),
                    "amax(): Expected reduction dim -1 to have non-zero size.");
  CHECK_THROWS_WITH(zeros({2, 0}).max(-1),
                    "max(): Expected reduction dim 1 to have non-zero size.");
  // The emptiness errors come before bool's.
  CHECK_THROWS_WITH(zeros({2, 0}, dtype(kBool)).argmax(1),
                    "argmax(): Expected reduction dim 1 to have non-zero size.");
  CHECK_THROWS_WITH(zeros({2, 0}, dtype(kBool)).argmax(),
                    "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  // Along a dim that is not empty the result is empty.
  CHECK(e.argmax(1).sizes() == Shape{0});
  CHECK(std::get<1>(e.max(1)).sizes() == Shape{0});
  CHECK(e.amax({1}).sizes() == Shape{0});
  CHECK(zeros({2, 0, 3}).amax({0, 2}).sizes() == Shape{0});
  // Along an empty dim: each has its value.
  CHECK(e.sum({0}).str() == "tensor([0., 0., 0.])");
  CHECK(e.prod(0).str() == "tensor([1., 1., 1.])");
  CHECK(e.mean({0}).str() == "tensor([nan, nan, nan])");
  CHECK(e.var({0}).str() == "tensor([nan, nan, nan])");
  CHECK(e.std({0}, 0).str() == "tensor([nan, nan, nan])");
  CHECK(e.var({0}, 2).str() == "tensor([nan, nan, nan])");
  CHECK(e.logsumexp({0}).str() == "tensor([-inf, -inf, -inf])");
  for (double p : {2.0, 1.0, 0.0, 3.0, 0.5}) {
    INFO("p " << p);
    CHECK(e.norm(p, {0}).str() == "tensor([0., 0., 0.])");
    CHECK(e.norm(p).str() == "tensor(0.)");
  }
  // Max, min and negative powers have no identity: linalg.vector_norm refuses them over no
  // elements (its words lack a space before "because").
  const std::vector<std::pair<double, std::string>> no_identity{
      {kInf, "inf"}, {-kInf, "-inf"}, {-1.0, "-1"}, {-0.5, "-0.5"}};
  for (const auto& [p, name] : no_identity) {
    INFO("p " << p);
    CHECK_THROWS_WITH(e.norm(p), fmt::format("linalg.vector_norm cannot compute the {} norm on an "
                                             "empty tensor because the operation does not have "
                                             "an identity",
                                             name));
    CHECK_THROWS_WITH(e.norm(p, {1, -2}),
                      fmt::format("linalg.vector_norm cannot compute the {} norm on the dimension "
                                  "-2because this dimension is empty and the operation does not "
                                  "have an identity",
                                  name));
    CHECK_THROWS_WITH(zeros({2, 0}).norm(p, {1}),
                      fmt::format("linalg.vector_norm cannot compute the {} norm on the dimension "
                                  "1because this dimension is empty and the operation does not "
                                  "have an identity",
                                  name));
    // Along a dim that is not empty the result is empty.
    CHECK(e.norm(p, {1}).sizes() == Shape{0});
  }
  CHECK(e.all(0).str() == "tensor([True, True, True])");
  CHECK(e.any(0).str() == "tensor([False, False, False])");
  CHECK(e.to(kUInt8).all().str() == "tensor(1, dtype=torch.uint8)");
  CHECK(e.to(kUInt8).any(0).str() == "tensor([0, 0, 0], dtype=torch.uint8)");
  CHECK(e.to(kInt64).sum({0}).str() == "tensor([0, 0, 0])");
  CHECK(e.to(kInt64).prod(0).str() == "tensor([1, 1, 1])");
  // Over every dim.
  CHECK(e.sum().str() == "tensor(0.)");
  CHECK(e.prod().str() == "tensor(1.)");
  CHECK(e.mean().str() == "tensor(nan)");
  CHECK(e.var().str() == "tensor(nan)");
  CHECK(e.std().str() == "tensor(nan)");
  CHECK(e.logsumexp({0, 1}).str() == "tensor(-inf)");
  CHECK(e.all().str() == "tensor(True)");
  CHECK(e.any().str() == "tensor(False)");
  // Along an empty dim the result is empty.
  CHECK(e.sum({1}).sizes() == Shape{0});
  CHECK(e.var({1}).sizes() == Shape{0});
}

TEST_CASE("reductions of 0-d inputs and their dims follow PyTorch 1.13", "[reduce]") {
  Tensor s = tensor(5.);
  auto [v, i] = s.max(0);
  CHECK(v.str() == "tensor(5.)");
  CHECK(i.str() == "tensor(0)");
  CHECK(std::get<1>(s.max(-1, true)).sizes() == Shape{});
  CHECK(s.argmax(0).str() == "tensor(0)");
  CHECK(s.sum({-1}, true).str() == "tensor(5.)");
  CHECK(s.var().str() == "tensor(nan)");
  CHECK(s.var({0}, 0).str() == "tensor(0.)");
  CHECK(s.std({0}).str() == "tensor(nan)");
  CHECK(s.logsumexp({0}).str() == "tensor(5.)");
  CHECK(s.norm(2, {0}).str() == "tensor(5.)");
  CHECK(s.all(0).str() == "tensor(True)");
  CHECK_THROWS_WITH(s.max(1),
                    "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  CHECK_THROWS_WITH(s.amax({0, -1}), "dim 0 appears multiple times in the list of dims");
  Tensor x = tensor({{1., 2.}, {3., 5.}});
  CHECK_THROWS_WITH(x.sum({1, -1}), "dim 1 appears multiple times in the list of dims");
  CHECK_THROWS_WITH(x.argmax(2),
                    "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  // A correction past the count divides by zero.
  CHECK(x.var({1}, 2).str() == "tensor([inf, inf])");
  CHECK(x.std({1}, 3).str() == "tensor([inf, inf])");
  CHECK(ones({2, 2}).var({1}, 2).str() == "tensor([nan, nan])");
}

TEST_CASE("reduction result dtypes and dtype errors follow PyTorch 1.13", "[reduce][dtype]") {
  for (DType t : kDTypes) {
    INFO(dname(t));
    Tensor x = ones({2, 3}, dtype(t));
    const bool fl = is_float(t);
    CHECK(x.sum().dtype() == (fl ? t : kInt64));
    CHECK(x.sum({1}).dtype() == (fl ? t : kInt64));
    CHECK(x.prod(1).dtype() == (fl ? t : kInt64));
    CHECK(x.max().dtype() == t);
    CHECK(x.amin({1}).dtype() == t);
    CHECK(std::get<1>(x.min(1)).dtype() == kInt64);
    CHECK(x.logsumexp({1}).dtype() == (fl ? t : kFloat32));
    CHECK(x.all().dtype() == (t == kUInt8 ? kUInt8 : kBool));
    CHECK(x.any(1).dtype() == (t == kUInt8 ? kUInt8 : kBool));
    if (fl) continue;
    CHECK_THROWS_WITH(x.mean(), "mean(): could not infer output dtype. Input dtype must be either "
                                "a floating point or complex dtype. Got: " +
                                    cpp_name(t));
    // A dtype= is checked, and named, in place of the input's.
    CHECK_THROWS_WITH(ones({2}).mean(t), "mean(): could not infer output dtype. Optional dtype "
                                         "must be either a floating point or complex dtype. Got: " +
                                             cpp_name(t));
    CHECK_THROWS_WITH(ones({2}).mean({0}, false, t),
                      "mean(): could not infer output dtype. Optional dtype must be either a "
                      "floating point or complex dtype. Got: " +
                          cpp_name(t));
    CHECK(x.mean(kFloat64).str() == "tensor(1., dtype=torch.float64)");
    CHECK_THROWS_WITH(x.var(), "std and var only support floating point and complex dtypes");
    CHECK_THROWS_WITH(x.std({1}), "std and var only support floating point and complex dtypes");
    // norm is linalg.vector_norm, as PyTorch's torch.norm routes it.
    CHECK_THROWS_WITH(x.norm(), "linalg.vector_norm: Expected a floating point or complex tensor "
                                "as input. Got " +
                                    cpp_name(t));
    CHECK_THROWS_WITH(x.norm(kInf, {1}), "linalg.vector_norm: Expected a floating point or "
                                         "complex tensor as input. Got " +
                                             cpp_name(t));
  }
  CHECK_THROWS_WITH(ones({2}, dtype(kBool)).argmax(), "\"argmax_cpu\" not implemented for 'Bool'");
  CHECK_THROWS_WITH(ones({2}, dtype(kBool)).argmin(0), "\"argmin_cpu\" not implemented for 'Bool'");
  CHECK_THROWS_WITH(nn::functional::layer_norm(ones({2, 3}, dtype(kInt64)), {3}),
                    "\"LayerNormKernelImpl\" not implemented for 'Long'");
  // Wide integer results, as PyTorch's.
  CHECK(tensor({100, 100, 100}, dtype(kInt8)).sum().str() == "tensor(300)");
  CHECK(tensor({100, 100, 100}, dtype(kInt8)).prod().str() == "tensor(1000000)");
  CHECK(tensor({1, 2, 3}).logsumexp({0}).str() == "tensor(3.4076)");
  CHECK(tensor({{1, 0}, {2, 3}}, dtype(kUInt8)).all(1).str() ==
        "tensor([0, 1], dtype=torch.uint8)");
  CHECK(tensor({{1, 0}, {2, 3}}, dtype(kInt8)).all(1).str() == "tensor([False,  True])");
}

TEST_CASE("reductions of different strided sources computed together", "[reduce][schedule]") {
  // Their reduced dims do not merge into one loop, so each source is computed into row-major
  // memory first, each once (the scheduler used to copy the first source again and again).
  Tensor a = randn({6, 5, 8}), b = randn({6, 5, 8});
  eval({a, b});
  Tensor x = a.transpose(0, 2).narrow(1, 1, 3), y = b.transpose(0, 2).narrow(1, 1, 3);
  reset_stats();
  Tensor s = x.sum(), p = y.prod(), m = x.amax({1, 2});
  eval({s, p, m});
  CHECK(stats().kernels_launched <= 4);
  CHECK(s.item<double>() == Approx(x.contiguous().sum().item<double>()).epsilon(1e-5));
  CHECK(p.item<double>() == Approx(y.contiguous().prod().item<double>()).epsilon(1e-5));
  CHECK(equal(m, x.contiguous().amax({1, 2})));
}

TEST_CASE("a reduction of a view computed with its source", "[reduce][schedule]") {
  // The view reads the source's memory through a leaf made for it at scheduling time: the view,
  // not that leaf, is what gets computed when its dims do not merge (the scheduler used to copy
  // a new leaf on every retry, without end).
  Tensor a = randn({6, 5, 8}) * 2;
  Tensor m = a.transpose(0, 2).amax({1, 2});
  eval({a, m});
  CHECK(equal(m, a.transpose(0, 2).contiguous().amax({1, 2})));
  Tensor b = randn({6, 5, 8}) * 2;
  Tensor n = b.transpose(0, 2).sum({1, 2});
  b.eval();
  CHECK(allclose(n, b.transpose(0, 2).contiguous().sum({1, 2})));
}

namespace {
// The gradient of f(x).sum() at float64 values `x`.
std::vector<double> grad_of(const std::vector<double>& x, const Shape& shape,
                            const std::function<Tensor(const Tensor&)>& f) {
  Tensor t = tensor(x, shape, dtype(kFloat64)).requires_grad_();
  f(t).sum().backward();
  return t.grad().to_vector<double>();
}

// Elementwise equal, NaN equal to NaN.
void check_same(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK((std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i]));
  }
}
} // namespace

TEST_CASE("std, var and prod gradients at degenerate inputs follow PyTorch's formulas",
          "[reduce][grad]") {
  // std_backward: no gradient where std is 0 (a NaN std, of one element, stays NaN).
  check_same(grad_of({2, 2, 2}, {3}, [](const Tensor& x) { return x.std(); }), {0, 0, 0});
  check_same(grad_of({2, 2, 2, 1, 2, 3}, {2, 3}, [](const Tensor& x) { return x.std({1}); }),
             {0, 0, 0, -0.5, 0, 0.5});
  check_same(grad_of({1, 1}, {2}, [](const Tensor& x) { return x.std({}, 0); }), {0, 0});
  check_same(grad_of({3}, {1}, [](const Tensor& x) { return x.std(); }), {kNaN});
  // var_backward (PyTorch 2) with the correction at or past the count: along a dim, 2 / (N -
  // correction) unclamped; over every element, NaN where x is the mean and inf elsewhere.
  check_same(grad_of({1, 3}, {2}, [](const Tensor& x) { return x.var({0}, 3); }), {2, -2});
  check_same(grad_of({1, 3}, {1, 2}, [](const Tensor& x) { return x.var({1}, 2); }), {-kInf, kInf});
  check_same(grad_of({1, 3}, {2}, [](const Tensor& x) { return x.var({}, 3); }), {kInf, kInf});
  check_same(grad_of({1, 3, 2}, {3}, [](const Tensor& x) { return x.var({}, 3); }),
             {kInf, kInf, kNaN});
  check_same(grad_of({3}, {1}, [](const Tensor& x) { return x.var(); }), {kNaN});
  check_same(grad_of({3}, {1}, [](const Tensor& x) { return x.var({}, 2); }), {kNaN});
  check_same(grad_of({5}, {}, [](const Tensor& x) { return x.var({0}, 0); }), {0});
  check_same(grad_of({1, 3}, {2}, [](const Tensor& x) { return x.std({0}, 3); }), {0, 0});
  // The values keep the count clamped at 0.
  CHECK(tensor({1.0, 3.0}).var({}, 3).str() == "tensor(inf)");
  CHECK(tensor({1.0, 3.0}).var({0}, 3).str() == "tensor(inf)");
  // prod_backward: with a zero, the products of the others (prefix times suffix), so a NaN or
  // inf elsewhere reaches the zero's neighbours too; along a dim, every slice takes them once
  // any slice has a zero. Over every element two zeros give 0.
  auto prod = [](const Tensor& x) { return x.prod(); };
  auto prod1 = [](const Tensor& x) { return x.prod(1); };
  check_same(grad_of({kNaN, 0, 2}, {3}, prod), {0, kNaN, kNaN});
  check_same(grad_of({kInf, 0, 2}, {3}, prod), {0, kInf, kNaN});
  check_same(grad_of({kInf, 2, 0, 3}, {2, 2}, prod1), {2, kInf, 3, 0});
  check_same(grad_of({kInf, 0, 0}, {1, 3}, prod1), {0, kNaN, kNaN});
  check_same(grad_of({kInf, 0, 0}, {3}, prod), {0, 0, 0});
  check_same(grad_of({kInf, 2}, {2}, prod), {kNaN, kInf});
  check_same(grad_of({kInf, 2, 1, 3}, {2, 2}, prod1), {kNaN, kInf, 3, 1});
  // Finite values: the product of the others, 0 beside two zeros.
  check_same(grad_of({2, 0, 3}, {3}, prod), {0, 6, 0});
  check_same(grad_of({2, 0, 0}, {3}, prod), {0, 0, 0});
  check_same(grad_of({2, 4, 0, 3, 5, 0}, {2, 3}, prod1), {0, 0, 8, 0, 0, 15});
  check_same(grad_of({2, 4, 0, 3, 0, 0}, {2, 3}, prod1), {0, 0, 8, 0, 0, 0});
  check_same(grad_of({7}, {}, prod), {1});
  check_same(grad_of({7}, {}, [](const Tensor& x) { return x.prod(0); }), {1});
}

TEST_CASE("complex inputs to reductions as PyTorch 1.13 takes or refuses them", "[reduce]") {
  Tensor z = complex(tensor({3.0, 1.0}), tensor({4.0, -2.0}));
  // A real dtype= takes the real parts, with PyTorch's warning (once).
  core::reset_warnings();
  Tensor s;
  CHECK(stderr_of([&] { s = z.sum(kFloat32); }) ==
        "UserWarning: Casting complex values to real discards the imaginary part\n");
  CHECK(s.str() == "tensor(4.)");
  CHECK(stderr_of([&] { s = z.mean(kFloat32); }).empty());
  CHECK(s.str() == "tensor(2.)");
  CHECK(z.sum({0}, false, kFloat64).str() == "tensor(4., dtype=torch.float64)");
  CHECK(z.mean({0}, true, kFloat64).str() == "tensor([2.], dtype=torch.float64)");
  CHECK_THROWS_WITH(z.mean(kInt64), "mean(): could not infer output dtype. Optional dtype must be "
                                    "either a floating point or complex dtype. Got: Long");
  // The gradient reaches the real parts.
  Tensor w = z.detach().requires_grad_();
  w.sum(kFloat64).backward();
  CHECK(w.grad().str() == "tensor([1.+0.j, 1.+0.j])");
  // prod of the real parts: each one's gradient is the other real part.
  Tensor p = complex(tensor({3.0, 1.0}), tensor({4.0, -2.0})).requires_grad_();
  CHECK(p.prod(kFloat64).item<double>() == 3.0);
  p.prod(kFloat64).backward();
  CHECK(p.grad().str() == "tensor([1.+0.j, 3.+0.j])");
  // Each kernel's refusal in its words.
  CHECK_THROWS_WITH(z.max(), "\"max_all\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(z.min(), "\"min_all\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(z.amax(), "\"max_values_cpu\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(z.amin({0}), "\"min_values_cpu\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(z.argmax(), "\"argmax_cpu\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(z.argmin(0), "\"argmin_cpu\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(z.max(0), "max(): does not support complex input");
  CHECK_THROWS_WITH(z.min(0), "min(): does not support complex input");
  CHECK_THROWS_WITH(z.logsumexp({0}), "logsumexp(): Expected floating point type for result "
                                      "tensor, but got: ComplexFloat");
  CHECK_THROWS_WITH(z.to(kComplex128).argmax(),
                    "\"argmax_cpu\" not implemented for 'ComplexDouble'");
  // Emptiness is checked first.
  CHECK_THROWS_WITH(zeros({0}, kComplex64).amax(),
                    "amax(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument.");
}
