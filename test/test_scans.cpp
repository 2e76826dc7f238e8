// Scans (cumsum, cumprod, cummax, cummin): kernels against the reference interpreter, bit for
// bit, over dims, layouts, lengths and dtypes; PyTorch's running extrema with NaN, ties and signed
// zeros; fusion; gradients.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lib/frontend/tensor_impl.h"
#include "lib/interp/interpreter.h"
#include "tensorjit/tensorjit.h"

namespace {

using namespace tj;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// t's graph, evaluated by the interpreter before t is computed, equals t to the bit (a NaN
// equals a NaN; zeros keep their sign): a scan adds in the same order in both. Where t also
// reads a reduction (whose float sums are blocked) or our exp and log1p, to a float32 rounding
// of the larger of the value and 1 (`exact` false).
// Returns the kernels computing t took.
int64_t check_vs_interp(const Tensor& t, const std::string& what, bool exact = true) {
  INFO(what);
  interp::HostArray want = interp::evaluate(detail::node_of(t));
  reset_stats();
  t.eval();
  const int64_t kernels = stats().kernels_launched;
  REQUIRE(t.numel() == static_cast<int64_t>(want.is_float() ? want.f.size() : want.i.size()));
  if (want.is_float()) {
    std::vector<double> got = t.to(kFloat64).to_vector<double>();
    int bad = 0;
    for (size_t k = 0; k < got.size() && bad < 5; ++k) {
      const double a = got[k], b = want.f[k];
      const bool same = (std::isnan(a) && std::isnan(b)) ||
                        (exact ? a == b && std::signbit(a) == std::signbit(b)
                               : a == b || std::abs(a - b) <= 1e-6 * (std::abs(b) + 1));
      if (!same) {
        ++bad;
        FAIL_CHECK(fmt::format("element {}: {} where the interpreter gives {}", k, a, b));
      }
    }
  } else {
    std::vector<int64_t> got = t.to(kInt64).to_vector<int64_t>();
    CHECK(got == want.i);
  }
  return kernels;
}

// Inputs of every layout a scan reads: contiguous, transposed, every other element.
std::vector<std::pair<std::string, Tensor>> layouts(const Shape& shape, DType t) {
  Tensor x = randn(shape, TensorOptions().dtype(kFloat64)) * 3;
  if (t == kBool)
    x = x > 0;
  else if (!is_floating_point(t))
    x = x.round().to(t);
  else
    x = x.to(t);
  std::vector<std::pair<std::string, Tensor>> out{{"contiguous", x}};
  if (x.dim() >= 2) out.push_back({"transposed", x.transpose(0, -1).contiguous().transpose(0, -1)});
  if (x.size(-1) >= 2) out.push_back({"every other", x.slice(-1, 0, x.size(-1), 2)});
  for (auto& [name, v] : out)
    v.eval();
  return out;
}

TEST_CASE("scans match the interpreter over every dim, layout and dtype", "[scan][oracle]") {
  manual_seed(11);
  // {2, 600}: rows of several of the vectorized scans' blocks, the last one partial.
  const std::vector<Shape> shapes{{13},   {4, 37}, {3, 5, 70}, {2, 1, 9},
                                  {1, 1}, {0, 3},  {3, 0},     {2, 600}};
  for (DType t : {kFloat32, kFloat64, kFloat16, kInt32, kInt64, kUInt8, kBool})
    for (const Shape& shape : shapes)
      for (const auto& [layout, x] : layouts(shape, t))
        for (int64_t d = -x.dim(); d < x.dim(); ++d) {
          const std::string at =
              fmt::format("{} {} {} dim {}", dtype_name(t), fmt::join(x.sizes(), "x"), layout, d);
          check_vs_interp(x.cumsum(d), "cumsum of " + at);
          if (t == kBool) continue;
          // Products of values near 1 (or small integers) stay in range.
          Tensor near_one = is_floating_point(t) ? x / 8 + 1 : x.remainder(3);
          check_vs_interp(near_one.cumprod(d), "cumprod of " + at);
          auto [mv, mi] = x.cummax(d);
          check_vs_interp(mv, "cummax of " + at);
          check_vs_interp(mi, "cummax indices of " + at);
          auto [nv, ni] = x.cummin(d);
          check_vs_interp(ni, "cummin indices of " + at);
          // Our exp and log1p may round differently from the C library's.
          if (is_floating_point(t))
            check_vs_interp(x.logcumsumexp(d), "logcumsumexp of " + at, false);
        }
}

TEST_CASE("scans fuse with the elementwise work before and after them", "[scan][fusion]") {
  manual_seed(12);
  Tensor x = randn({64, 300}), m = rand({64, 300}) > 0.3;
  x.eval();
  m.eval();
  // cumsum(x * m) / n: one kernel, whichever dim.
  for (int64_t d : {0, 1})
    CHECK(check_vs_interp((x * m).cumsum(d) / 300.0,
                          fmt::format("cumsum(x * m) / n along {}", d)) == 1);
  // With a reduction of the same rows: the row's sum in one loop, the scan in the next.
  CHECK(check_vs_interp(x.exp().cumsum(1) / x.exp().sum({1}, true), "cumsum over the row's sum",
                        false) == 1);
  // cummax's maxima, their indices and the values there: one kernel.
  auto [mv, mi] = x.cummax(1);
  reset_stats();
  eval({mv, mi});
  CHECK(stats().kernels_launched == 1);
  // An integer division by zero inside a scan's kernel, along rows or down columns.
  Tensor k = arange(6).reshape({2, 3});
  for (int64_t d : {0, 1})
    CHECK_THROWS_WITH(floor_divide(k, zeros_like(k)).cumsum(d).eval(), "ZeroDivisionError");
  // Only in rows that run side by side (the first four of five), with a float scan, which runs
  // rows in groups of four, then the rest one at a time.
  Tensor five = arange(40).reshape({5, 8});
  Tensor divisor = (arange(5).reshape({5, 1}) >= 4).to(kInt64).expand({5, 8});
  CHECK_THROWS_WITH(floor_divide(five, divisor).to(kFloat32).cumsum(1).eval(),
                    Catch::StartsWith("ZeroDivisionError"));
  // Two scans of different dims: each its own kernel, their sum in one of them.
  CHECK(check_vs_interp(x.cumsum(0) + x.cumsum(1), "scans along both dims") == 2);
  // A scan read reversed, or reduced, is computed into memory first, and still right.
  check_vs_interp(flip(x.cumsum(1), {1}) * 2, "a flipped scan");
  check_vs_interp((x.abs() / 8 + 1).cumprod(1).sum({1}), "a reduced scan", false);
  check_vs_interp(x.cumsum(1).narrow(1, 5, 100).cumsum(1), "a scan of a slice of a scan");
  check_vs_interp(x.cumsum(1).t().cumsum(1), "a scan of a transposed scan");
  // Rows side by side (64 of them: 16 groups of four, or eight of eight): a float scan of a
  // float scan, each in its buffer in turn; two float scans; logcumsumexp through vector exp.
  check_vs_interp(x.cumsum(1).cumsum(1) * 2, "a cumsum of a cumsum");
  check_vs_interp(x.cumsum(1) + (x.abs() / 8 + 1).cumprod(1), "a cumsum and a cumprod");
  check_vs_interp((x / 4).logcumsumexp(1) - x.to(kFloat64).cumsum(1), "logcumsumexp", false);
  // Scans of reductions and of row-local kernels along other dims: the reductions first.
  check_vs_interp(x.sum({1}).cumsum(0), "a scan of a sum", false);
  check_vs_interp(nn::functional::softmax(x, 1).cumsum(0), "a scan of a softmax", false);
  check_vs_interp((x - x.amax({1}, true)).cumprod(0), "a scan of x - max");
  check_vs_interp(arange(60.0).reshape({3, 4, 5}).sum({2}).cumsum(1), "a scan of a 3-d sum");
}

TEST_CASE("long rows: a scan carries across a streaming store and many threads' rows", "[scan]") {
  manual_seed(13);
  // Rows longer than a page, in outputs larger than the cache: the store loop writes its head
  // through the cache and the rest around it, with the scan carried from one to the other.
  Tensor x = rand({3, 700001});
  x.eval();
  check_vs_interp(x.cumsum(1), "long rows");
  check_vs_interp((x - 0.5).cumsum(0) * 2, "short columns of long rows");
  Tensor v = rand({2000000});
  v.eval();
  Tensor s = v.cumsum(0);
  check_vs_interp(s, "a long vector");
  // float64 accumulation: a million uniform values sum to their float64 sum, rounded once.
  double want = 0;
  for (double e : v.to(kFloat64).to_vector<double>())
    want += e;
  CHECK(s[-1].item<float>() == static_cast<float>(want));
}

TEST_CASE("scans stream their rows from any offset", "[scan][streaming]") {
  // Every output written around the cache: each row's elements before its 64-byte boundary are a
  // block of their own (1 to 15 floats at these row lengths), which the next blocks carry on
  // from.
  const int64_t saved = config().stream_store_bytes;
  config().stream_store_bytes = 1;
  manual_seed(16);
  // Rows of 1024 and 1040 floats start on a 64-byte boundary each: a group of rows side by side
  // streams all of them from the same element. The others' groups go through the cache.
  for (int64_t len : {int64_t{1025}, int64_t{1031}, int64_t{700}, int64_t{1024}, int64_t{1040}}) {
    Tensor x = randn({5, len});
    x.eval();
    const std::string at = fmt::format("5x{}", len);
    check_vs_interp(x.cumsum(1), "cumsum " + at);
    Tensor k = (x * 10).round().to(kInt32);
    check_vs_interp(k.cumsum(1), "int32 cumsum " + at);
    auto [mv, mi] = x.cummax(1);
    check_vs_interp(mv, "cummax " + at);
    check_vs_interp(mi, "cummax indices " + at);
    check_vs_interp(x.to(kFloat64).cumsum(1), "float64 cumsum " + at);
    check_vs_interp((x * 0.01 + 1).cumprod(1) - 1, "cumprod " + at);
  }
  // Rows that share their offset from a 64-byte boundary (a stride of 1056 floats) and start 3
  // floats past one: the group's first 13 elements through the cache, the rest streamed. The
  // same bits as the rows computed on their own, which start on a boundary.
  Tensor x = randn({9, 1040});
  Tensor big = zeros({9, 1056});
  eval({x, big});
  Tensor part = big.narrow(1, 3, 1040);
  part.copy_(x.cumsum(1) * 3);
  Tensor want = x.cumsum(1) * 3;
  CHECK(equal(part, want));
  CHECK(equal(big.narrow(1, 0, 3), zeros({9, 3})));
  CHECK(equal(big.narrow(1, 1043, 13), zeros({9, 13})));
  config().stream_store_bytes = saved;
}

TEST_CASE("long scans over few rows run in segments on every thread", "[scan]") {
  // The default (float sums in segments) whatever TJ_ORDERED_SCANS says, restored on the way out.
  struct OrderedScans {
    bool saved = config().ordered_scans;
    explicit OrderedScans(bool on) { config().ordered_scans = on; }
    ~OrderedScans() { config().ordered_scans = saved; }
  } segments(false);
  manual_seed(15);
  // 2^20 elements in one row: the segments' totals, their scan, then the segments (3 kernels).
  Tensor v = randn({int64_t{1} << 20});
  Tensor k = (v * 100).round().to(kInt32);
  eval({v, k});
  CHECK(check_vs_interp(k.cumsum(0), "an int32 cumsum (an int64 root)") == 3);
  check_vs_interp((k.remainder(3) + 1).cumprod(0), "an integer cumprod, wrapping");
  auto [mv, mi] = v.cummax(0);
  check_vs_interp(mv, "cummax values");
  check_vs_interp(mi, "cummax indices");
  auto [nv, ni] = cummin(k, 0);
  check_vs_interp(nv, "cummin of integers");
  check_vs_interp(ni, "cummin indices of integers");
  // After the scan, elementwise work in the same kernel as the segments.
  CHECK(check_vs_interp((k * 2).cumsum(0) / 7.0, "cumsum(2 k) / 7") == 3);
  // Float sums too: a float32 cumsum adds in float64, whose segment sums round to the same
  // float32 as PyTorch's running sum here; a float64 one within its last bits.
  CHECK(check_vs_interp(v.cumsum(0), "a float32 cumsum") == 3);
  CHECK(check_vs_interp(v.to(kFloat64).cumsum(0), "a float64 cumsum", false) == 3);
  CHECK(check_vs_interp((v * 0.001 + 1).cumprod(0), "a float32 cumprod", false) == 3);
  // config().ordered_scans keeps PyTorch's order, one element after the other: one kernel, the
  // interpreter's bits even where partial results cancel (1e17 - 1e17 after a segment's 1).
  Tensor cancel = zeros({int64_t{1} << 20}, TensorOptions().dtype(kFloat64));
  cancel.index_put_({0}, 1.0);
  cancel.index_put_({65536}, 1e17);
  cancel.index_put_({65537}, -1e17);
  cancel.eval();
  CHECK(cancel.cumsum(0)[65537].item<double>() == 1.0); // 1 + (1e17 - 1e17): segments
  config().ordered_scans = true;
  CHECK(check_vs_interp(v.to(kFloat64).cumsum(0), "a float64 cumsum in order") == 1);
  CHECK(check_vs_interp(cancel.cumsum(0), "cancelling, in order") == 1);
  CHECK(cancel.cumsum(0)[65537].item<double>() == 0.0); // (1 + 1e17) - 1e17, as PyTorch
  config().ordered_scans = false;
  // 16-bit floats add in float32, whose segment sums would round to another float16 too often:
  // in order, one kernel.
  CHECK(check_vs_interp(v.to(kFloat16).cumsum(0), "a float16 cumsum") == 1);
  // logcumsumexp in float64 (float32's too, which PyTorch runs in float64): the segments'
  // totals (their maximum, then the sum of exponentials below it), their scan, the segments:
  // 4 kernels.
  CHECK(check_vs_interp(v.logcumsumexp(0), "a float32 logcumsumexp", false) == 4);
  CHECK(check_vs_interp(v.to(kFloat64).logcumsumexp(0), "a float64 logcumsumexp", false) == 4);
  // Segments of -inf (the first, whose total is -inf), then +inf and NaN, which stay.
  Tensor special = v.to(kFloat64).clone();
  special.narrow(0, 0, 65536).fill_(-INFINITY);
  special.index_put_({70000}, INFINITY);
  special.index_put_({200000}, NAN);
  special.eval();
  check_vs_interp(special.logcumsumexp(0), "-inf, inf and NaN", false);
  std::vector<double> ends = special.logcumsumexp(0).to_vector<double>();
  CHECK(ends[65535] == -INFINITY);
  CHECK(ends[65536] == v[65536].item<double>());
  CHECK(ends[199999] == INFINITY);
  CHECK(std::isnan(ends.back()));
  // A few long rows, along either dim; a length with no divisor in [4096, 65536] (2^18 + 3),
  // which runs as one row.
  Tensor few = randint(-50, 50, {3, int64_t{1} << 18});
  few.eval();
  check_vs_interp(few.cumsum(1) * 2, "3 long rows");
  check_vs_interp(few.t().contiguous().cumsum(0), "3 long columns");
  Tensor odd = randint(-50, 50, {(int64_t{1} << 18) + 3});
  odd.eval();
  check_vs_interp(odd.cumsum(0), "a length of 2^18 + 3");
}

// PyTorch's loop: a NaN, or a value at least (at most) the running extremum, takes its place.
std::pair<std::vector<double>, std::vector<int64_t>> running(const std::vector<double>& x,
                                                             bool max) {
  std::vector<double> v;
  std::vector<int64_t> i;
  double out = x[0];
  int64_t idx = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    if (std::isnan(x[k]) || (!std::isnan(out) && (max ? x[k] >= out : x[k] <= out))) {
      out = x[k];
      idx = static_cast<int64_t>(k);
    }
    v.push_back(out);
    i.push_back(idx);
  }
  return {v, i};
}

TEST_CASE("cummax and cummin follow PyTorch's loop: NaN, ties and signed zeros", "[scan]") {
  const std::vector<std::vector<double>> rows{{1, 3, 2, kNaN, 5, kNaN, 0},
                                              {0, -0.0, 0, -1, 4, 4, 2},
                                              {-0.0, 0, -0.0, -0.0},
                                              {kNaN, 1, kNaN},
                                              {2, 2, 2},
                                              {-1, -3, -2, -3, 7}};
  for (const auto& r : rows)
    for (bool max : {true, false}) {
      Tensor x = tensor(r, TensorOptions().dtype(kFloat64));
      auto [v, i] = max ? x.cummax(0) : x.cummin(0);
      auto [wv, wi] = running(r, max);
      INFO((max ? "cummax of " : "cummin of ") << x.str());
      CHECK(i.to_vector<int64_t>() == wi);
      std::vector<double> got = v.to_vector<double>();
      for (size_t k = 0; k < got.size(); ++k) {
        INFO("element " << k);
        CHECK(std::isnan(got[k]) == std::isnan(wv[k]));
        if (!std::isnan(wv[k])) {
          CHECK(got[k] == wv[k]);
          CHECK(std::signbit(got[k]) == std::signbit(wv[k]));
        }
      }
    }
  // Long rows, which the vectorized scans take a vector and a block at a time (as integer keys
  // that order as the floats do): NaNs of both signs, ties, zeros of both signs, infinities and
  // subnormals at every lane.
  std::vector<double> long_row;
  const double tiny = std::ldexp(1.0, -140); // subnormal in float32
  for (int k = 0; k < 1500; ++k)
    long_row.push_back(k % 97 == 50   ? kNaN
                       : k % 89 == 7  ? -kNaN
                       : k % 83 == 11 ? (k % 2 ? -HUGE_VAL : HUGE_VAL)
                       : k % 79 == 3  ? (k % 2 ? -tiny : tiny)
                       : k % 5 == 0   ? (k % 2 ? -0.0 : 0.0)
                                      : (k * 37 % 23) - 11);
  for (DType t : {kFloat32, kFloat64})
    for (bool max : {true, false})
      for (size_t len : {size_t(49), size_t(700), size_t(1500)}) {
        std::vector<double> r(long_row.begin(), long_row.begin() + long(len));
        if (len == 700) // no NaN: the running extremum moves to the end
          for (double& e : r)
            if (std::isnan(e)) e = 3;
        Tensor x = tensor(r, TensorOptions().dtype(kFloat64)).to(t);
        auto [v, i] = max ? x.cummax(0) : x.cummin(0);
        auto [wv, wi] = running(r, max);
        INFO(dtype_name(t) << (max ? " cummax" : " cummin") << " of a row of " << len);
        CHECK(i.to_vector<int64_t>() == wi);
        std::vector<double> got = v.to(kFloat64).to_vector<double>();
        for (size_t k = 0; k < got.size(); ++k) {
          INFO("element " << k);
          REQUIRE(std::isnan(got[k]) == std::isnan(wv[k]));
          if (!std::isnan(wv[k]))
            CHECK((got[k] == wv[k] && std::signbit(got[k]) == std::signbit(wv[k])));
        }
      }
  // PyTorch's printing and types.
  Tensor m = tensor({{1, 3, 2}, {0, 5, 5}});
  auto [v, i] = m.cummax(1);
  CHECK(v.str() == "tensor([[1, 3, 3],\n        [0, 5, 5]])");
  CHECK(i.str() == "tensor([[0, 1, 1],\n        [0, 1, 2]])");
  auto [bv, bi] = cummin(tensor({true, false, true}), 0);
  CHECK(bv.str() == "tensor([ True, False, False])");
  CHECK(bi.str() == "tensor([0, 1, 1])");
  auto [sv, si] = tensor(2.5).cummax(0);
  CHECK(sv.str() == "tensor(2.5000)");
  CHECK(si.str() == "tensor(0)");
  CHECK_THROWS_WITH(cummax(ones({2, 3}), 2),
                    "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  CHECK_THROWS_WITH(cummax(complex(ones({2}), ones({2})), 0),
                    "\"cummax_cpu\" not implemented for 'ComplexFloat'");
}

TEST_CASE("logcumsumexp and logaddexp neither overflow nor lose the small terms", "[scan]") {
  // Spreads far beyond exp's range, infinities and NaN, against PyTorch's formula in double.
  const std::vector<double> v{-1000, 0, 1000, 1000, -1e300, 5, -INFINITY, 700, 710, 3};
  Tensor x = tensor(v, TensorOptions().dtype(kFloat64));
  std::vector<double> got = x.logcumsumexp(0).to_vector<double>();
  double acc = -INFINITY;
  for (size_t k = 0; k < v.size(); ++k) {
    const double m = std::max(acc, v[k]);
    acc = std::isinf(acc) && acc == v[k] ? acc : m + std::log1p(std::exp(-std::abs(acc - v[k])));
    INFO("element " << k);
    CHECK(got[k] == Approx(acc).epsilon(1e-14));
  }
  CHECK(tensor({-INFINITY, -INFINITY}).logcumsumexp(0).str() == "tensor([-inf, -inf])");
  CHECK(tensor({1.f, NAN, 2.f}).logcumsumexp(0).str() == "tensor([1., nan, nan])");
  CHECK(logaddexp(tensor({1.f, INFINITY, -INFINITY, 0.f}), tensor({2.f, INFINITY, -INFINITY, NAN}))
            .str() == "tensor([2.3133,    inf,   -inf,    nan])");
  CHECK(logcumsumexp(tensor(3.5), 0).str() == "tensor(3.5000)");
  // A long float32 row runs in float64, as PyTorch's: log(k + 1) for zeros within a unit in
  // the last place, where a float32 running value would stop taking in terms below half its
  // last place (in order, one row).
  {
    struct InOrder {
      bool saved = config().ordered_scans;
      InOrder() { config().ordered_scans = true; }
      ~InOrder() { config().ordered_scans = saved; }
    } in_order;
    std::vector<float> logs = zeros({int64_t{1} << 20}).logcumsumexp(0).to_vector<float>();
    int64_t off = 0;
    for (size_t k = 0; k < logs.size(); ++k)
      off += std::abs(logs[k] - std::log(double(k + 1))) > 0x1p-23 * std::log(double(k + 2));
    CHECK(off == 0);
  }
  // The vectorized elementwise loop against the reference, both float dtypes.
  manual_seed(14);
  for (DType t : {kFloat32, kFloat64}) {
    Tensor a = (randn({1000}) * 50).to(t), b = (randn({1000}) * 50).to(t);
    check_vs_interp(logaddexp(a, b), fmt::format("logaddexp in {}", dtype_name(t)), false);
  }
  CHECK(x.to(kFloat32).logcumsumexp(-1).dtype() == kFloat32);
  CHECK_THROWS_WITH(logcumsumexp(tensor({1, 2}), 0),
                    "\"logcumsumexp_out_cpu\" not implemented for 'Long'");
  CHECK_THROWS_WITH(logaddexp(tensor({1, 2}), tensor({1, 2})),
                    "\"logaddexp_cpu\" not implemented for 'Long'");
  CHECK_THROWS_WITH(logcumsumexp(ones({2}), 1),
                    "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

TEST_CASE("complex cumprod multiplies as PyTorch, with the gradient of its products",
          "[scan][complex]") {
  Tensor z = complex(tensor({0.f, 1.f, 2.f}), tensor({1.f, 1.f, 1.f}));
  CHECK(z.cumprod(0).str() == "tensor([ 0.+1.j, -1.+1.j, -3.+1.j])");
  // Through a zero: each product's gradient, not the magnitude's (zero at 0).
  Tensor x = tensor({1., 0., 2.}, TensorOptions().requires_grad(true));
  (complex(x, zeros_like(x)).cumprod(0) + 5).abs().sum().backward();
  CHECK(x.grad().str() == "tensor([1., 3., 0.])");
  Tensor w = complex(randn({3, 9}), randn({3, 9}));
  Tensor p = w.cumprod(1);
  Tensor want = w.select(1, 0);
  for (int64_t k = 0; k < 9; ++k) {
    if (k) want = want * w.select(1, k);
    CHECK(allclose(p.select(1, k), want, 1e-5, 1e-6));
  }
}

TEST_CASE("gradients of cummax and cummin reach the extremum's place", "[scan][autograd]") {
  Tensor x = tensor({{1., 3., 2., 3.}, {4., 0., 5., -1.}}, TensorOptions().requires_grad(true));
  auto [v, i] = x.cummax(1);
  CHECK(v.grad_fn()->name() == "CummaxBackward0");
  (v * tensor({1., 2., 3., 4.})).sum().backward();
  // Row 0's maxima sit at 0, 1, 1, 3; row 1's at 0, 0, 2, 2.
  CHECK(x.grad().str() == "tensor([[1., 5., 0., 4.],\n        [3., 0., 7., 0.]])");
  Tensor y = tensor({3., 1., 2.}, TensorOptions().requires_grad(true));
  auto [w, j] = y.cummin(0);
  CHECK(w.grad_fn()->name() == "CumminBackward0");
  w.sum().backward();
  CHECK(y.grad().str() == "tensor([1., 2., 0.])");
}

} // namespace
