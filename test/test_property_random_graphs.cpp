// Seeded random property test: elementwise DAGs, fused and unfused, against the interpreter.
//
// Each graph is a program of steps over a pool of values: inputs (random dtypes and broadcastable
// shapes, some in permuted or strided memory) and values built from earlier ones by a random op
// (arithmetic with tensors or scalars on either side, comparisons, logic, integer division, where,
// clamp, casts, math functions on safe domains, and movement ops on computed values). Values are
// reused, so a program is a DAG. Its outputs are materialized (several together with tj::eval,
// or one by one) and compared with the interpreter; a subset of programs is replayed on fresh
// copies of the inputs with tj::config().fusion = false and compared with the fused results too.
//
// Exactness: everything but the libm functions is bit-exact (see support/tolerance.h). A value
// computed by a libm function carries a bound on its relative error; it only flows into ops that
// keep relative errors bounded (neg, abs, mul, div, max, min, clamp, where's branches, float
// casts, movement). Before any other op uses it (a sum could cancel, a comparison or a cast to an
// integer could flip), the program materializes it (a checkpoint, itself compared with the
// interpreter), after which the JIT and the interpreter read the same memory.
//
// The seed is printed on failure; TJ_TEST_SEED=<n> reruns with another.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "lib/frontend/graph_builders.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/interp/interpreter.h"
#include "tensorjit/tensorjit.h"
#include "test/support/callable.h"
#include "test/support/dtypes.h"
#include "test/support/seed.h"
#include "test/support/tolerance.h"

namespace {

using tj::DType;
using tj::Scalar;
using tj::Shape;
using tj::Tensor;
using tj::test::dname;
using tj::test::Tolerance;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxDepth = 8;

constexpr DType kDTypes[] = {tj::kBool,  tj::kUInt8,   tj::kInt8,     tj::kInt16,   tj::kInt32,
                             tj::kInt64, tj::kFloat16, tj::kBFloat16, tj::kFloat32, tj::kFloat64};

uint64_t test_seed() { return tj::test::test_seed(20240611); }

bool is_float(DType t) { return tj::is_floating_point(t); }

// The relative error of one libm function (4 ulps in the dtype it computes in, float32 for the
// 16-bit floats) plus the final rounding, with a factor 2 for functions composed of a few
// correctly rounded steps (sigmoid, log(|x| + 1), ...).
double libm_error(DType t) {
  DType compute = tj::itemsize(t) == 2 ? tj::kFloat32 : t;
  return 2 * (4 * tj::test::epsilon(compute) + tj::test::epsilon(t));
}

// The tolerance of a value with relative error bound `rel` (0: bit-exact).
Tolerance tolerance_for(double rel, DType t) {
  if (rel == 0.0 || !is_float(t)) return tj::test::tolerance(t, tj::test::Accuracy::Exact);
  double rtol = 4 * rel;
  return {rtol, rtol * tj::test::min_normal(t), false, true};
}

// ---- inputs ------------------------------------------------------------------------------------

struct InputSpec {
  DType dtype;
  Shape shape;               // logical shape
  std::vector<int64_t> perm; // memory holds the permuted shape; empty: contiguous
  bool strided = false;      // every other element of a buffer twice as long in the last dim
  std::vector<double> f;     // memory contents, floats
  std::vector<int64_t> i;    // memory contents, integers and bool
};

// A fresh tensor over new memory holding the spec's values.
Tensor make_input(const InputSpec& s) {
  Shape mem = s.shape;
  if (!s.perm.empty())
    for (size_t k = 0; k < s.perm.size(); ++k)
      mem[k] = s.shape[s.perm[k]];
  if (s.strided) mem.back() *= 2;
  Tensor t = is_float(s.dtype) ? tj::tensor<double>(s.f, mem, tj::dtype(s.dtype))
                               : tj::tensor<int64_t>(s.i, mem, tj::dtype(s.dtype));
  if (s.strided)
    t = tj::detail::wrap(tj::fe::slice(tj::detail::node_of(t), static_cast<int64_t>(mem.size()) - 1,
                                       1, mem.back(), 2));
  if (!s.perm.empty()) {
    std::vector<int64_t> inverse(s.perm.size());
    for (size_t k = 0; k < s.perm.size(); ++k)
      inverse[s.perm[k]] = static_cast<int64_t>(k);
    t = t.permute(inverse);
  }
  return t;
}

// ---- programs
// ------------------------------------------------------------------------------------

using Pool = std::vector<Tensor>;

// One step: a new value built from earlier ones, or the materialization of an earlier one.
struct Step {
  std::string text;
  std::function<Tensor(const Pool&)> build; // null for a checkpoint
  size_t checkpoint = 0;                    // the value a checkpoint materializes
  double rel = 0.0;                         // and its relative error bound
};

// What the generator knows of a value.
struct Info {
  double rel = 0.0;     // relative error bound against the interpreter; 0: exact
  bool tainted = false; // depends on a materialized approximate value (fused and unfused runs
                        // may then differ by more than rounding)
  int depth = 0;
};

struct Program {
  std::vector<InputSpec> inputs;
  std::vector<Step> steps;
  std::vector<std::vector<size_t>> output_groups; // each group is one tj::eval
  std::vector<Info> info;                         // per value
  std::string listing() const {
    std::string s;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const InputSpec& in = inputs[k];
      s += fmt::format("  v{} = input {} {}{}{}\n", k, dname(in.dtype),
                       tj::test::shape_str(in.shape),
                       in.perm.empty() ? "" : " permuted " + tj::test::shape_str(in.perm),
                       in.strided ? " strided" : "");
    }
    for (const Step& st : steps)
      s += "  " + st.text + "\n";
    for (const auto& g : output_groups) {
      s += "  eval";
      for (size_t v : g)
        s += fmt::format(" v{}", v);
      s += "\n";
    }
    return s;
  }
};

// The values a run ends with, and its comparisons with the interpreter.
struct RunResult {
  std::vector<tj::interp::HostArray> outputs; // flattened over output_groups
  std::vector<tj::test::Verdict> verdicts;
};

// Compares a tensor with the interpreter (taken before materializing) and records a failure.
struct Check {
  Tensor t;
  tj::interp::HostArray want;
  Tolerance tol;
  std::string what;
};

Check expect_now(const Tensor& t, const Tolerance& tol, std::string what) {
  tj::ir::NodePtr node = tj::detail::node_of(t);
  return {t, tj::interp::evaluate(node), tol, std::move(what)};
}

// Runs a program on fresh inputs: every step, checkpoints compared and materialized, outputs
// materialized in their groups and compared with the interpreter.
RunResult run(const Program& p, const std::string& label) {
  RunResult r;
  Pool pool;
  for (const InputSpec& in : p.inputs)
    pool.push_back(make_input(in));
  for (const Step& st : p.steps) {
    if (st.build) {
      pool.push_back(st.build(pool));
      continue;
    }
    const Tensor& v = pool[st.checkpoint];
    Check c = expect_now(v, tolerance_for(st.rel, v.dtype()),
                         fmt::format("{}: v{} (checkpoint)", label, st.checkpoint));
    v.eval();
    std::string msg = tj::test::compare(tj::test::read_back(v), c.want, c.tol, c.what);
    r.verdicts.push_back({msg.empty(), msg});
  }
  for (const auto& group : p.output_groups) {
    std::vector<Check> checks;
    std::vector<Tensor> tensors;
    for (size_t v : group) {
      checks.push_back(expect_now(pool[v], tolerance_for(p.info[v].rel, pool[v].dtype()),
                                  fmt::format("{}: v{}", label, v)));
      tensors.push_back(pool[v]);
    }
    tj::eval(tensors);
    for (const Check& c : checks) {
      tj::interp::HostArray got = tj::test::read_back(c.t);
      std::string msg = tj::test::compare(got, c.want, c.tol, c.what);
      r.verdicts.push_back({msg.empty(), msg});
      r.outputs.push_back(std::move(got));
    }
  }
  return r;
}

// ---- the generator ---------------------------------------------------------------------------

class Generator {
public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  Program generate();

private:
  size_t uniform(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T> const T& pick(const std::vector<T>& v) { return v[uniform(v.size())]; }

  InputSpec random_input(const Shape& shape);
  size_t pick_value();
  size_t pick_where(const std::function<bool(size_t)>& ok);
  Scalar random_scalar(bool divisor = false);
  DType dtype(size_t v) const { return pool_[v].dtype(); }

  // Adds a step building a value with relative error bound `rel` from `operands`.
  void add(std::string text, std::vector<size_t> operands, double rel,
           std::function<Tensor(const Pool&)> build);
  // Materializes approximate operands first, so that the op sees exact values.
  void make_exact(const std::vector<size_t>& operands);
  bool step();

  std::mt19937_64 rng_;
  Program p_;
  Pool pool_;
  Shape full_;
};

InputSpec Generator::random_input(const Shape& shape) {
  InputSpec s{
      pick(std::vector<DType>(std::begin(kDTypes), std::end(kDTypes))), shape, {}, false, {}, {}};
  if (shape.size() >= 2 && chance(0.3)) {
    s.perm.resize(shape.size());
    for (size_t k = 0; k < shape.size(); ++k)
      s.perm[k] = static_cast<int64_t>(k);
    std::shuffle(s.perm.begin(), s.perm.end(), rng_);
  } else if (!shape.empty() && chance(0.2)) {
    s.strided = true;
  }
  int64_t n = tj::ir::numel(shape) * (s.strided ? 2 : 1);
  for (int64_t k = 0; k < n; ++k) {
    if (is_float(s.dtype)) {
      static const std::vector<double> specials = {0.0, -0.0, kNaN, kInf,  -kInf,
                                                   0.5, -2.5, 1e30, 65504, 1e-40};
      double x = chance(0.12)
                     ? pick(specials)
                     : std::round(std::uniform_real_distribution<double>(-8, 8)(rng_) * 64) / 64;
      s.f.push_back(x);
    } else if (s.dtype == tj::kBool) {
      s.i.push_back(chance(0.5));
    } else {
      static const std::vector<int64_t> specials = {INT64_MIN, INT64_MAX, -1, 0, 127, -128, 255};
      int64_t x =
          chance(0.1) ? pick(specials) : std::uniform_int_distribution<int64_t>(-20, 20)(rng_);
      s.i.push_back(x); // wraps to the dtype
    }
  }
  return s;
}

size_t Generator::pick_value() {
  return pick_where([](size_t) { return true; });
}

// A random value satisfying `ok`, preferring recent ones (deep graphs) but reaching back (DAGs),
// and never one at the maximum depth. Returns SIZE_MAX when none qualifies.
size_t Generator::pick_where(const std::function<bool(size_t)>& ok) {
  std::vector<size_t> cands;
  for (size_t v = 0; v < pool_.size(); ++v)
    if (p_.info[v].depth < kMaxDepth && ok(v)) cands.push_back(v);
  if (cands.empty()) return SIZE_MAX;
  if (chance(0.5)) return cands[cands.size() - 1 - uniform(std::min<size_t>(3, cands.size()))];
  return pick(cands);
}

// Scalars of every kind: zeros, integers that wrap in narrow dtypes, floats. Divisors are odd
// integers (odd in every dtype they wrap to, so never an integer zero) or floats.
Scalar Generator::random_scalar(bool divisor) {
  static const std::vector<Scalar> divisors = {
      Scalar(int64_t{1}),    Scalar(int64_t{3}), Scalar(int64_t{-1}), Scalar(int64_t{7}),
      Scalar(int64_t{1001}), Scalar(-129),       Scalar(2.5),         Scalar(-0.0)};
  static const std::vector<Scalar> all = {
      Scalar(true),        Scalar(false),        Scalar(int64_t{0}), Scalar(int64_t{2}),
      Scalar(int64_t{-7}), Scalar(int64_t{100}), Scalar(1000),       Scalar(0.0),
      Scalar(-0.0),        Scalar(0.5),          Scalar(-2.5),       Scalar(3.75),
      Scalar(1e-3),        Scalar(kInf)};
  return divisor ? pick(divisors) : pick(all);
}

void Generator::add(std::string text, std::vector<size_t> operands, double rel,
                    std::function<Tensor(const Pool&)> build) {
  Tensor t = build(pool_); // may throw tj::Error: PyTorch rejects the combination
  Info info{rel, false, 0};
  for (size_t v : operands) {
    info.tainted |= p_.info[v].tainted;
    info.depth = std::max(info.depth, p_.info[v].depth + 1);
  }
  if (rel > 0.0 && !is_float(t.dtype())) info.rel = 0.0; // cannot happen; keeps the bound honest
  const size_t id = pool_.size();
  pool_.push_back(t);
  p_.info.push_back(info);
  p_.steps.push_back(
      {fmt::format("v{} = {}  [{} {}{}]", id, text, dname(t.dtype()),
                   tj::test::shape_str(t.sizes()), rel > 0 ? fmt::format(", rel {:.1e}", rel) : ""),
       std::move(build), 0, 0.0});
}

void Generator::make_exact(const std::vector<size_t>& operands) {
  for (size_t v : operands) {
    if (p_.info[v].rel == 0.0) continue;
    // Materialized (and compared) when the program runs; the generator's own values only serve
    // for dtypes and shapes.
    p_.steps.push_back({fmt::format("checkpoint v{}", v), nullptr, v, p_.info[v].rel});
    p_.info[v].rel = 0.0;
    p_.info[v].tainted = true;
  }
}

bool Generator::step() {
  const size_t a = pick_value();
  if (a == SIZE_MAX) return false;
  const DType ta = dtype(a);
  const double ra = p_.info[a].rel;
  auto fmt_s = [](const Scalar& s) { return s.str(); };
  switch (uniform(12)) {
  case 0: { // arithmetic between two values
    const size_t b = pick_value();
    const double rb = p_.info[b].rel;
    switch (uniform(6)) {
    case 0:
      make_exact({a, b});
      add(fmt::format("v{} + v{}", a, b), {a, b}, 0, [a, b](const Pool& q) { return q[a] + q[b]; });
      return true;
    case 1:
      make_exact({a, b});
      add(fmt::format("v{} - v{}", a, b), {a, b}, 0, [a, b](const Pool& q) { return q[a] - q[b]; });
      return true;
    case 2: {
      Tensor probe = pool_[a] * pool_[b];
      double rel = ra + rb > 0 ? ra + rb + tj::test::epsilon(probe.dtype()) : 0;
      add(fmt::format("v{} * v{}", a, b), {a, b}, rel,
          [a, b](const Pool& q) { return q[a] * q[b]; });
      return true;
    }
    case 3: {
      Tensor probe = pool_[a] / pool_[b];
      double rel = ra + rb > 0 ? ra + rb + tj::test::epsilon(probe.dtype()) : 0;
      add(fmt::format("v{} / v{}", a, b), {a, b}, rel,
          [a, b](const Pool& q) { return q[a] / q[b]; });
      return true;
    }
    case 4:
      add(fmt::format("maximum(v{}, v{})", a, b), {a, b}, std::max(ra, rb),
          [a, b](const Pool& q) { return tj::maximum(q[a], q[b]); });
      return true;
    default:
      add(fmt::format("minimum(v{}, v{})", a, b), {a, b}, std::max(ra, rb),
          [a, b](const Pool& q) { return tj::minimum(q[a], q[b]); });
      return true;
    }
  }
  case 1: { // arithmetic with a scalar on either side
    const Scalar s = random_scalar();
    Tensor probe = pool_[a] * s;
    const double mul_rel = ra > 0 ? ra + tj::test::epsilon(probe.dtype()) : 0;
    switch (uniform(5)) {
    case 0:
      make_exact({a});
      add(fmt::format("v{} + {}", a, fmt_s(s)), {a}, 0, [a, s](const Pool& q) { return q[a] + s; });
      return true;
    case 1:
      make_exact({a});
      add(fmt::format("{} - v{}", fmt_s(s), a), {a}, 0, [a, s](const Pool& q) { return s - q[a]; });
      return true;
    case 2:
      add(fmt::format("{} * v{}", fmt_s(s), a), {a}, mul_rel,
          [a, s](const Pool& q) { return s * q[a]; });
      return true;
    case 3:
      add(fmt::format("v{} / {}", a, fmt_s(s)), {a}, mul_rel,
          [a, s](const Pool& q) { return q[a] / s; });
      return true;
    default:
      add(fmt::format("{} / v{}", fmt_s(s), a), {a}, mul_rel,
          [a, s](const Pool& q) { return s / q[a]; });
      return true;
    }
  }
  case 2: { // unary ops that keep relative errors
    switch (uniform(4)) {
    case 0:
      add(fmt::format("neg(v{})", a), {a}, ra, [a](const Pool& q) { return tj::neg(q[a]); });
      return true;
    case 1:
      add(fmt::format("abs(v{})", a), {a}, ra, [a](const Pool& q) { return tj::abs(q[a]); });
      return true;
    case 2:
      add(fmt::format("relu(v{})", a), {a}, ra, [a](const Pool& q) { return tj::relu(q[a]); });
      return true;
    default: {
      Tensor probe = pool_[a].reciprocal();
      add(fmt::format("reciprocal(v{})", a), {a},
          ra > 0 ? ra + tj::test::epsilon(probe.dtype()) : 0,
          [a](const Pool& q) { return q[a].reciprocal(); });
      return true;
    }
    }
  }
  case 3: { // exact unary ops
    make_exact({a});
    using Fn = Tensor (*)(const Tensor&);
    static const std::vector<std::pair<const char*, Fn>> fns = {
        {"floor", TJ_FN(tj::floor)},
        {"ceil", TJ_FN(tj::ceil)},
        {"round", TJ_FN(tj::round)},
        {"trunc", TJ_FN(tj::trunc)},
        {"sign", TJ_FN(tj::sign)},
        {"square", TJ_FN(tj::square)},
        {"isnan", TJ_FN(tj::isnan)},
        {"isinf", TJ_FN(tj::isinf)},
        {"isfinite", TJ_FN(tj::isfinite)},
        {"logical_not", TJ_FN(tj::logical_not)},
        {"bitwise_not", TJ_FN(tj::bitwise_not)},
        {"sqrt", TJ_FN(tj::sqrt)},
        {"rsqrt", TJ_FN(tj::rsqrt)}};
    const auto& [name, fn] = pick(fns);
    add(fmt::format("{}(v{})", name, a), {a}, 0, [a, fn = fn](const Pool& q) { return fn(q[a]); });
    return true;
  }
  case 4: { // comparisons
    make_exact({a});
    const bool with_scalar = chance(0.3);
    const size_t b = with_scalar ? a : pick_value();
    make_exact({b});
    const Scalar s = random_scalar();
    const size_t op = uniform(6);
    static const char* names[] = {"==", "!=", "<", "<=", ">", ">="};
    auto cmp = [op](const Tensor& x, const auto& y) {
      switch (op) {
      case 0:
        return x == y;
      case 1:
        return x != y;
      case 2:
        return x < y;
      case 3:
        return x <= y;
      case 4:
        return x > y;
      default:
        return x >= y;
      }
    };
    if (with_scalar)
      add(fmt::format("v{} {} {}", a, names[op], fmt_s(s)), {a}, 0,
          [a, s, cmp](const Pool& q) { return cmp(q[a], s); });
    else
      add(fmt::format("v{} {} v{}", a, names[op], b), {a, b}, 0,
          [a, b, cmp](const Pool& q) { return cmp(q[a], q[b]); });
    return true;
  }
  case 5: { // logical and bitwise ops
    const size_t b = pick_value();
    make_exact({a, b});
    const size_t op = uniform(6);
    static const char* names[] = {"logical_and", "logical_or", "logical_xor", "&", "|", "^"};
    add(fmt::format("{}(v{}, v{})", names[op], a, b), {a, b}, 0, [a, b, op](const Pool& q) {
      switch (op) {
      case 0:
        return tj::logical_and(q[a], q[b]);
      case 1:
        return tj::logical_or(q[a], q[b]);
      case 2:
        return tj::logical_xor(q[a], q[b]);
      case 3:
        return q[a] & q[b];
      case 4:
        return q[a] | q[b];
      default:
        return q[a] ^ q[b];
      }
    });
    return true;
  }
  case 6: { // floor_divide, remainder, fmod with divisors that are never an integer 0
    const bool with_scalar = chance(0.3);
    const size_t b = with_scalar ? a : pick_value();
    make_exact({a, b});
    const Scalar s = random_scalar(true);
    const size_t op = uniform(3);
    static const char* names[] = {"floor_divide", "remainder", "fmod"};
    auto f = [op](const Tensor& x, const auto& y) {
      return op == 0 ? x.floor_divide(y) : op == 1 ? x.remainder(y) : x.fmod(y);
    };
    if (with_scalar) {
      add(fmt::format("{}(v{}, {})", names[op], a, fmt_s(s)), {a}, 0,
          [a, s, f](const Pool& q) { return f(q[a], s); });
    } else {
      // An integer divisor is made odd (2 b + 1 stays odd when it wraps); floats keep theirs.
      add(fmt::format("{}(v{}, odd(v{}))", names[op], a, b), {a, b}, 0, [a, b, f](const Pool& q) {
        Tensor d = is_float(q[b].dtype()) ? q[b] : q[b] * 2 + 1;
        return f(q[a], d);
      });
    }
    return true;
  }
  case 7: { // where
    const size_t c = pick_where([this](size_t v) { return dtype(v) == tj::kBool; });
    if (c == SIZE_MAX) return false;
    make_exact({c});
    const size_t b = pick_value();
    const double rel = std::max(ra, p_.info[b].rel);
    if (chance(0.25)) {
      const Scalar s = random_scalar();
      add(fmt::format("where(v{}, v{}, {})", c, a, fmt_s(s)), {c, a}, ra,
          [c, a, s](const Pool& q) { return tj::where(q[c], q[a], s); });
    } else {
      add(fmt::format("where(v{}, v{}, v{})", c, a, b), {c, a, b}, rel,
          [c, a, b](const Pool& q) { return tj::where(q[c], q[a], q[b]); });
    }
    return true;
  }
  case 8: { // clamp
    if (ta == tj::kBool) return false;
    static const std::vector<std::pair<std::optional<Scalar>, std::optional<Scalar>>> bounds = {
        {Scalar(int64_t{1}), Scalar(int64_t{5})},
        {std::nullopt, Scalar(int64_t{2})},
        {Scalar(-1.5), Scalar(2.25)},
        {Scalar(0.5), std::nullopt},
        {Scalar(int64_t{3}), Scalar(int64_t{1})}};
    const auto [lo, hi] = pick(bounds);
    add(fmt::format("clamp(v{}, {}, {})", a, lo ? lo->str() : "None", hi ? hi->str() : "None"), {a},
        ra, [a, lo = lo, hi = hi](const Pool& q) { return tj::clamp(q[a], lo, hi); });
    return true;
  }
  case 9: { // casts
    const DType to = pick(std::vector<DType>(std::begin(kDTypes), std::end(kDTypes)));
    if (!is_float(to)) make_exact({a});
    const double rel = p_.info[a].rel > 0 ? p_.info[a].rel + tj::test::epsilon(to) : 0;
    add(fmt::format("v{}.to({})", a, dname(to)), {a}, rel,
        [a, to](const Pool& q) { return q[a].to(to); });
    return true;
  }
  case 10: { // libm functions on safe domains; their inputs exact
    make_exact({a});
    static const char* names[] = {"exp(clamp(x, -10, 10))",
                                  "log(|x| + 1)",
                                  "sin(clamp(x, -100, 100))",
                                  "cos(x)",
                                  "tanh(x)",
                                  "atan(x)",
                                  "erf(x)",
                                  "sigmoid(x)",
                                  "expm1(clamp(x, -10, 10))",
                                  "log1p(|x|)",
                                  "pow(|x| + 0.5, 1.5)",
                                  "atan2(x, y)"};
    const size_t op = uniform(12);
    const size_t b = op == 11 ? pick_value() : a;
    make_exact({b});
    auto f = [op, a, b](const Pool& q) {
      const Tensor& x = q[a];
      const Tensor xf = is_float(x.dtype()) ? x : x.to(tj::kFloat32); // for clamp's float bounds
      switch (op) {
      case 0:
        return xf.clamp(-10, 10).exp();
      case 1:
        return (x.abs() + 1).log();
      case 2:
        return xf.clamp(-100, 100).sin();
      case 3:
        return x.cos();
      case 4:
        return x.tanh();
      case 5:
        return x.atan();
      case 6:
        return x.erf();
      case 7:
        return x.sigmoid();
      case 8:
        return xf.clamp(-10, 10).expm1();
      case 9:
        return x.abs().log1p();
      case 10:
        return (x.abs() + 0.5).pow(1.5);
      default:
        return tj::atan2(x, q[b]);
      }
    };
    Tensor probe = f(pool_);
    add(fmt::format("{} [x = v{}, y = v{}]", names[op], a, b), {a, b}, libm_error(probe.dtype()),
        f);
    return true;
  }
  default: { // movement ops on computed values
    const Shape& sh = pool_[a].sizes();
    switch (uniform(5)) {
    case 0: { // permute, an op, permute back
      if (sh.size() < 2) return false;
      std::vector<int64_t> perm(sh.size()), inverse(sh.size());
      for (size_t k = 0; k < perm.size(); ++k)
        perm[k] = static_cast<int64_t>(k);
      std::shuffle(perm.begin(), perm.end(), rng_);
      for (size_t k = 0; k < perm.size(); ++k)
        inverse[perm[k]] = static_cast<int64_t>(k);
      add(fmt::format("neg_or_not(v{}.permute({})).permute({})", a, tj::test::shape_str(perm),
                      tj::test::shape_str(inverse)),
          {a}, ra, [a, perm, inverse](const Pool& q) {
            Tensor x = q[a].permute(perm);
            x = x.dtype() == tj::kBool ? x.logical_not() : -x;
            return x.permute(inverse);
          });
      return true;
    }
    case 1:
      if (!sh.empty() && sh[0] == 1) {
        add(fmt::format("v{}.squeeze(0)", a), {a}, ra,
            [a](const Pool& q) { return q[a].squeeze(0); });
      } else {
        add(fmt::format("v{}.unsqueeze(0)", a), {a}, ra,
            [a](const Pool& q) { return q[a].unsqueeze(0); });
      }
      return true;
    case 2: { // broadcast to the full shape
      Shape target = tj::ir::broadcast_shapes(sh, full_);
      add(fmt::format("v{}.expand({})", a, tj::test::shape_str(target)), {a}, ra,
          [a, target](const Pool& q) { return q[a].expand(target); });
      return true;
    }
    case 4: { // flatten (a merge no view can express for computed or permuted values), back
      const size_t last = sh.size() - 1;
      if (sh.size() < 2) return false;
      Shape turned = sh;
      std::swap(turned[0], turned[last]);
      add(fmt::format("neg_or_not(v{}.transpose(0, {}).flatten()).reshape({}).transpose(0, {})", a,
                      last, tj::test::shape_str(turned), last),
          {a}, ra, [a, last, turned](const Pool& q) {
            Tensor x = q[a].transpose(0, static_cast<int64_t>(last)).flatten();
            x = x.dtype() == tj::kBool ? x.logical_not() : -x;
            return x.reshape(turned).transpose(0, static_cast<int64_t>(last));
          });
      return true;
    }
    default: { // reverse one dim (a Slice with step -1)
      std::vector<int64_t> dims;
      for (size_t d = 0; d < sh.size(); ++d)
        if (sh[d] > 1) dims.push_back(static_cast<int64_t>(d));
      if (dims.empty()) return false;
      const int64_t d = pick(dims);
      add(fmt::format("flip(v{}, {})", a, d), {a}, ra, [a, d](const Pool& q) {
        const tj::ir::NodePtr& n = tj::detail::node_of(q[a]);
        return tj::detail::wrap(tj::fe::slice(n, d, n->shape[d] - 1, -1, -1));
      });
      return true;
    }
    }
  }
  }
}

Program Generator::generate() {
  static const std::vector<std::vector<Shape>> universes = {
      {{4, 5, 3}, {4, 1, 3}, {1, 5, 3}, {3}, {}, {5, 3}, {5, 1}, {4, 1, 1}},
      {{6, 7}, {6, 1}, {1, 7}, {7}, {}},
      {{2, 3, 4, 5}, {3, 1, 5}, {1, 4, 1}, {5}, {}, {2, 1, 1, 1}}};
  const std::vector<Shape>& shapes = pick(universes);
  full_ = shapes[0];
  const size_t n_inputs = 2 + uniform(4);
  for (size_t k = 0; k < n_inputs; ++k) {
    p_.inputs.push_back(random_input(pick(shapes)));
    pool_.push_back(make_input(p_.inputs.back()));
    p_.info.push_back({});
  }
  const size_t n_steps = 5 + uniform(12);
  for (size_t made = 0, tries = 0; made < n_steps && tries < 10 * n_steps; ++tries) {
    try {
      if (step()) ++made;
    } catch (const tj::Error&) {
      // PyTorch rejects this combination of dtypes (e.g. bitwise ops on floats): pick another.
    }
  }
  if (pool_.size() == n_inputs) // no step succeeded: still compute something
    add("v0 * v0", {0}, 0, [](const Pool& q) { return q[0] * q[0]; });
  // Outputs: the last value and a few others, materialized together, alone, or in two groups.
  std::vector<size_t> outs = {pool_.size() - 1};
  for (size_t k = 0, extra = uniform(4); k < extra; ++k) {
    size_t v = n_inputs + uniform(pool_.size() - n_inputs);
    if (std::find(outs.begin(), outs.end(), v) == outs.end()) outs.push_back(v);
  }
  switch (uniform(3)) {
  case 0:
    p_.output_groups = {outs};
    break;
  case 1:
    for (size_t v : outs)
      p_.output_groups.push_back({v});
    break;
  default: {
    size_t half = (outs.size() + 1) / 2;
    p_.output_groups.push_back({outs.begin(), outs.begin() + half});
    if (half < outs.size()) p_.output_groups.push_back({outs.begin() + half, outs.end()});
  }
  }
  return std::move(p_);
}

// Restores tj::config().fusion when it goes out of scope.
struct FusionGuard {
  bool saved = tj::config().fusion;
  explicit FusionGuard(bool on) { tj::config().fusion = on; }
  ~FusionGuard() { tj::config().fusion = saved; }
  FusionGuard(const FusionGuard&) = delete;
  FusionGuard& operator=(const FusionGuard&) = delete;
};

// Fused and unfused outputs: bit-exact for exact values, within both tolerances otherwise.
std::string compare_runs(const Program& p, const RunResult& fused, const RunResult& unfused) {
  std::string out;
  size_t k = 0;
  for (const auto& group : p.output_groups)
    for (size_t v : group) {
      const Info& info = p.info[v];
      const size_t idx = k++;
      if (info.tainted || idx >= fused.outputs.size() || idx >= unfused.outputs.size()) continue;
      Tolerance tol = tolerance_for(info.rel, fused.outputs[idx].dtype);
      std::string msg = tj::test::compare(unfused.outputs[idx], fused.outputs[idx], tol.scaled(2),
                                          fmt::format("v{} unfused vs fused", v));
      if (!msg.empty()) out += msg + "\n";
    }
  return out;
}

} // namespace

TEST_CASE("random elementwise graphs match the interpreter, fused and unfused",
          "[oracle][property]") {
  const uint64_t seed = test_seed();
  CAPTURE(seed);
  constexpr int kGraphs = 200;
  constexpr int kUnfusedEvery = 5; // every fifth program is replayed without fusion
  int checked = 0, unfused_runs = 0;
  for (int g = 0; g < kGraphs; ++g) {
    const uint64_t graph_seed = seed * 1000003u + static_cast<uint64_t>(g);
    Program p = Generator(graph_seed).generate();
    INFO("graph " << g << " (seed " << seed << ", TJ_TEST_SEED=" << seed << " reproduces it)\n"
                  << p.listing());
    RunResult fused;
    REQUIRE_NOTHROW(fused = run(p, "fused"));
    for (const tj::test::Verdict& v : fused.verdicts) {
      INFO(v.message);
      CHECK(v.ok);
    }
    ++checked;
    if (g % kUnfusedEvery != 0) continue;
    RunResult unfused;
    {
      FusionGuard off(false);
      REQUIRE_NOTHROW(unfused = run(p, "unfused"));
    }
    CHECK(tj::config().fusion);
    for (const tj::test::Verdict& v : unfused.verdicts) {
      INFO(v.message);
      CHECK(v.ok);
    }
    const std::string diff = compare_runs(p, fused, unfused);
    INFO(diff);
    CHECK(diff.empty());
    ++unfused_runs;
  }
  CHECK(checked == kGraphs);
  CHECK(unfused_runs == (kGraphs + kUnfusedEvery - 1) / kUnfusedEvery);
}
