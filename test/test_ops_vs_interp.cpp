// Every elementwise op against the reference interpreter: all dtypes, layouts and special values.
//
// Each op of the public API runs on every dtype PyTorch accepts it for, with special values, on
// contiguous, broadcast, transposed, sliced, 0-d and empty inputs; results must match the
// interpreter (support/tolerance.h says how closely), result dtypes PyTorch's promotion, errors
// PyTorch's messages, and a table of tricky cases the values PyTorch computes.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "lib/frontend/graph_builders.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/interp/interpreter.h"
#include "tensorjit/tensorjit.h"
#include "test/support/callable.h"
#include "test/support/dtypes.h"
#include "test/support/tolerance.h"

namespace {

using tj::DType;
using tj::Scalar;
using tj::Shape;
using tj::Tensor;
using tj::test::Accuracy;
using tj::test::cpp_name;
using tj::test::dname;
using tj::test::kDTypes;
using tj::test::OracleBatch;
using tj::test::Tolerance;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool is_float(DType t) { return tj::is_floating_point(t); }

void check_dtype(const Tensor& t, DType want, const std::string& what) {
  INFO(what << ": dtype " << dname(t.dtype()) << ", PyTorch gives " << dname(want));
  CHECK(t.dtype() == want);
}

// ---- PyTorch's type promotion, written out independently of the library ----------------------

int category(DType t) { return t == tj::kBool ? 0 : is_float(t) ? 2 : 1; }

// torch.promote_types.
DType ref_promote(DType a, DType b) {
  if (a == b) return a;
  if (a == tj::kBool) return b;
  if (b == tj::kBool) return a;
  if (is_float(a) || is_float(b)) {
    if (!is_float(a)) return b;
    if (!is_float(b)) return a;
    if (tj::itemsize(a) == 2 && tj::itemsize(b) == 2) return tj::kFloat32; // half with bfloat16
    return tj::itemsize(a) >= tj::itemsize(b) ? a : b;
  }
  if (a == tj::kUInt8 || b == tj::kUInt8) {
    DType other = a == tj::kUInt8 ? b : a;
    return other == tj::kInt8 ? tj::kInt16 : other;
  }
  return tj::itemsize(a) >= tj::itemsize(b) ? a : b;
}

// An operand of torch.result_type: a dimensioned tensor, a 0-d tensor or a Python scalar.
enum class Kind { Dim, ZeroDim, Wrapped };
struct Opnd {
  DType t;
  Kind kind;
};
Opnd dim(DType t) { return {t, Kind::Dim}; }
Opnd zero_dim(DType t) { return {t, Kind::ZeroDim}; }
Opnd wrapped(const Scalar& s) { return {s.dtype(), Kind::Wrapped}; }

// Dimensioned tensors over 0-d tensors over scalars, except that an operand of a higher
// category (bool < integer < floating) lifts the result; float scalars count as the default dtype.
DType ref_result_type(std::initializer_list<Opnd> ops) {
  std::optional<DType> slot[3];
  for (const Opnd& o : ops) {
    DType t = o.kind == Kind::Wrapped && is_float(o.t) ? tj::default_dtype() : o.t;
    auto& s = slot[static_cast<int>(o.kind)];
    s = s ? ref_promote(*s, t) : t;
  }
  auto combine = [](std::optional<DType> hi, std::optional<DType> lo) -> std::optional<DType> {
    if (!hi) return lo;
    if (!lo) return hi;
    return category(*lo) > category(*hi) ? ref_promote(*hi, *lo) : *hi;
  };
  return *combine(slot[0], combine(slot[1], slot[2]));
}

DType float_of(DType t) { return is_float(t) ? t : tj::default_dtype(); }

// ---- inputs ----------------------------------------------------------------------------------

// Host values of one dtype: doubles for floating dtypes, int64 for the others.
struct Values {
  DType dtype;
  std::vector<double> f;
  std::vector<int64_t> i;
  size_t size() const { return is_float(dtype) ? f.size() : i.size(); }
};

int64_t min_of(DType t) {
  switch (t) {
  case tj::kInt8:
    return INT8_MIN;
  case tj::kInt16:
    return INT16_MIN;
  case tj::kInt32:
    return INT32_MIN;
  case tj::kInt64:
    return INT64_MIN;
  default:
    return 0;
  }
}
int64_t max_of(DType t) {
  switch (t) {
  case tj::kBool:
    return 1;
  case tj::kUInt8:
    return UINT8_MAX;
  case tj::kInt8:
    return INT8_MAX;
  case tj::kInt16:
    return INT16_MAX;
  case tj::kInt32:
    return INT32_MAX;
  default:
    return INT64_MAX;
  }
}

// Sixteen values of dtype t: zeros of both signs, +-1, halves (round to even), NaN, infinities,
// huge and subnormal magnitudes; integer extremes (wraparound) and -1 (INT_MIN / -1).
// `nonzero` replaces integer zeros, for divisors.
Values special_values(DType t, bool nonzero = false) {
  Values v{t, {}, {}};
  switch (t) {
  case tj::kBool:
    v.i = {0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0};
    break;
  case tj::kUInt8:
    v.i = {0, 1, 2, 3, 7, 100, 127, 128, 200, 254, 255, 42, 5, 64, 250, 9};
    break;
  case tj::kFloat16:
  case tj::kBFloat16:
  case tj::kFloat32:
  case tj::kFloat64: {
    double big = t == tj::kFloat64 ? 1e300 : t == tj::kFloat16 ? 60000.0 : 3e38;
    double tiny = t == tj::kFloat64   ? 5e-324
                  : t == tj::kFloat32 ? 1e-45
                  : t == tj::kFloat16 ? 6e-8
                                      : 1e-40;
    v.f = {0.0, -0.0, 1, -1, 0.5, -1.5, 2.5, -3, 7.75, 100, -1000, kNaN, kInf, -kInf, big, tiny};
    break;
  }
  default: {
    int64_t lo = min_of(t), hi = max_of(t);
    v.i = {0, 1, -1, 2, -2, 3, 7, -7, 100, -100, lo, hi, lo + 1, hi - 1, 42, -42};
  }
  }
  if (nonzero)
    for (int64_t& x : v.i)
      if (x == 0) x = 5;
  return v;
}

// 128 ordinary values for the accuracy of math functions: 96 over [-6, 6] and 32 over [-90, 90]
// (argument reduction, overflow and underflow), truncated for integral dtypes.
Values dense_values(DType t) {
  Values v{t, {}, {}};
  for (int k = 0; k < 96; ++k)
    v.f.push_back(-6.0 + 12.0 * k / 95.0);
  for (int k = 0; k < 32; ++k)
    v.f.push_back(-90.0 + 180.0 * k / 31.0);
  if (!is_float(t)) {
    for (double x : v.f)
      v.i.push_back(static_cast<int64_t>(x));
    v.f.clear();
  }
  return v;
}

// A subset of values (by index).
Values take(const Values& v, std::initializer_list<size_t> idx) {
  Values out{v.dtype, {}, {}};
  for (size_t k : idx) {
    if (is_float(v.dtype))
      out.f.push_back(v.f[k]);
    else
      out.i.push_back(v.i[k]);
  }
  return out;
}

Tensor make(const Values& v, const Shape& shape) {
  if (is_float(v.dtype)) return tj::tensor<double>(v.f, shape, tj::dtype(v.dtype));
  return tj::tensor<int64_t>(v.i, shape, tj::dtype(v.dtype));
}

// How an operand's elements sit in memory.
enum class Layout {
  Contiguous,
  Transposed,    // .t() of a buffer holding the transpose
  Permuted,      // .unsqueeze(0).permute({2, 0, 1}).reshape(...) of the transpose
  StridedSlice,  // every other column of a wider buffer (a view with stride 2)
  ReversedSlice, // every other row, last first (a view with a negative stride)
  SliceOfCast,   // every other column of a computed tensor (a Slice node)
  PermuteOfCast, // the transpose of a computed tensor (a Permute node)
  ReshapeOfCast, // a computed (r * c,) tensor split into (r, c) (a Reshape node)
  MergedView,    // (r/2, 2, c) permuted from memory (r/2, c, 2), merged into (r, c): no view can
                 // express that, so it is a Reshape node
  MergedCast,    // the same of a computed tensor
};
constexpr std::array<Layout, 10> kLayouts = {
    Layout::Contiguous,    Layout::Transposed,  Layout::Permuted,   Layout::StridedSlice,
    Layout::ReversedSlice, Layout::SliceOfCast, Layout::MergedView, Layout::PermuteOfCast,
    Layout::ReshapeOfCast, Layout::MergedCast};

const char* layout_name(Layout l) {
  switch (l) {
  case Layout::Contiguous:
    return "contiguous";
  case Layout::Transposed:
    return "transposed";
  case Layout::Permuted:
    return "permuted";
  case Layout::StridedSlice:
    return "strided slice";
  case Layout::ReversedSlice:
    return "reversed slice";
  case Layout::SliceOfCast:
    return "slice of a computed tensor";
  case Layout::PermuteOfCast:
    return "transpose of a computed tensor";
  case Layout::ReshapeOfCast:
    return "reshape of a computed tensor";
  case Layout::MergedView:
    return "merging reshape of a permuted buffer";
  case Layout::MergedCast:
    return "merging reshape of a permuted computed tensor";
  }
  return "?";
}

// `idx[k]` is the element of m at position k, or -1 for a filler value the view skips.
Values gather(const Values& m, const std::vector<int64_t>& idx, DType as) {
  Values out{as, {}, {}};
  for (int64_t k : idx) {
    if (is_float(as))
      out.f.push_back(k < 0 ? 12345.0 : m.f[k]);
    else if (is_float(m.dtype))
      out.i.push_back(k < 0 ? 77 : static_cast<int64_t>(m.f[k]));
    else
      out.i.push_back(k < 0 ? (as == tj::kBool ? 1 : 77) : m.i[k]);
  }
  return out;
}

// A dtype that holds every value of t exactly, for computed (Cast) operands.
DType wider(DType t) {
  return t == tj::kBool ? tj::kUInt8 : is_float(t) ? tj::kFloat64 : tj::kInt64;
}

// The row-major (r, c) values m as a tensor laid out as l.
Tensor laid_out(const Values& m, int64_t r, int64_t c, Layout l) {
  const DType t = m.dtype;
  auto slice = [](const Tensor& x, int64_t d, int64_t start, int64_t stop, int64_t step) {
    return tj::detail::wrap(tj::fe::slice(tj::detail::node_of(x), d, start, stop, step));
  };
  auto cast = [](const Tensor& x, DType to) {
    return tj::detail::wrap(tj::fe::cast(tj::detail::node_of(x), to));
  };
  std::vector<int64_t> transposed(static_cast<size_t>(r * c));
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j)
      transposed[j * r + i] = i * c + j;
  std::vector<int64_t> every_other_col(static_cast<size_t>(r * 2 * c), -1);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j)
      every_other_col[i * 2 * c + 2 * j] = i * c + j;
  switch (l) {
  case Layout::Contiguous:
    return make(m, {r, c});
  case Layout::Transposed:
    return make(gather(m, transposed, t), {c, r}).t();
  case Layout::Permuted:
    return make(gather(m, transposed, t), {c, r}).unsqueeze(0).permute({2, 0, 1}).reshape({r, c});
  case Layout::StridedSlice:
    return slice(make(gather(m, every_other_col, t), {r, 2 * c}), 1, 0, 2 * c, 2);
  case Layout::ReversedSlice: {
    std::vector<int64_t> idx(static_cast<size_t>(2 * r * c), -1);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j)
        idx[(2 * r - 1 - 2 * i) * c + j] = i * c + j;
    return slice(make(gather(m, idx, t), {2 * r, c}), 0, 2 * r - 1, -1, -2);
  }
  case Layout::SliceOfCast:
    return slice(cast(make(gather(m, every_other_col, wider(t)), {r, 2 * c}), t), 1, 0, 2 * c, 2);
  case Layout::PermuteOfCast:
    return cast(make(gather(m, transposed, wider(t)), {c, r}), t).t();
  case Layout::ReshapeOfCast: {
    std::vector<int64_t> identity(static_cast<size_t>(r * c));
    for (size_t k = 0; k < identity.size(); ++k)
      identity[k] = static_cast<int64_t>(k);
    return cast(make(gather(m, identity, wider(t)), {r * c}), t).reshape({r, c});
  }
  case Layout::MergedView:
  case Layout::MergedCast: {
    // Memory (r/2, c, 2) holds m[2a + b][j] at [a][j][b].
    std::vector<int64_t> idx(static_cast<size_t>(r * c));
    for (int64_t a = 0; a < r / 2; ++a)
      for (int64_t j = 0; j < c; ++j)
        for (int64_t b = 0; b < 2; ++b)
          idx[(a * c + j) * 2 + b] = (2 * a + b) * c + j;
    Tensor mem = l == Layout::MergedView ? make(gather(m, idx, t), {r / 2, c, 2})
                                         : cast(make(gather(m, idx, wider(t)), {r / 2, c, 2}), t);
    return mem.permute({0, 2, 1}).reshape({r, c});
  }
  }
  return {};
}

// The (n, n) matrices a[i] (rows) and b[j] (columns) of all pairs of two value lists.
Values rows_of(const Values& a, size_t n) {
  std::vector<int64_t> idx;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      idx.push_back(static_cast<int64_t>(i));
  return gather(a, idx, a.dtype);
}
Values cols_of(const Values& b, size_t n) {
  std::vector<int64_t> idx;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      idx.push_back(static_cast<int64_t>(j));
  return gather(b, idx, b.dtype);
}

// The special values followed by the first 112 ordinary values: 128 in all.
Values with_ordinary(const Values& special) {
  Values v = special, d = dense_values(special.dtype);
  v.f.insert(v.f.end(), d.f.begin(), d.f.begin() + (is_float(v.dtype) ? 112 : 0));
  v.i.insert(v.i.end(), d.i.begin(), d.i.begin() + (is_float(v.dtype) ? 0 : 112));
  return v;
}

// The sixteen special values as an input of variant `k` (modulo 12): the layouts of a (4, 4),
// a (1, 4) expanded to (4, 4), or one value as a 0-d tensor.
Tensor special_input(const Values& sv, size_t k, std::string* what) {
  k %= kLayouts.size() + 2;
  if (k < kLayouts.size()) {
    *what = fmt::format("{} (4, 4)", layout_name(kLayouts[k]));
    return laid_out(sv, 4, 4, kLayouts[k]);
  }
  if (k == kLayouts.size()) {
    *what = "(1, 4) expanded to (4, 4)";
    return make(take(sv, {1, 4, 11, 13}), {1, 4}).expand({4, 4});
  }
  *what = "0-d";
  return make(take(sv, {11}), {});
}

// ---- the ops ---------------------------------------------------------------------------------

enum class Result { Same, Float, Bool, Promoted, Square };

using UnaryFn = std::function<Tensor(const Tensor&)>;
using RejectFn = std::function<std::string(DType)>;

struct UnaryOp {
  const char* name;
  UnaryFn fn;
  Result result;
  Accuracy acc;
  RejectFn rejects; // PyTorch's error for an input dtype; empty: accepted
  double scale = 1; // tolerance multiplier for ops composed of several rounded steps
};

RejectFn accepts_all() {
  return [](DType) { return std::string(); };
}
RejectFn rejects_bool(std::string msg) {
  return [msg](DType t) { return t == tj::kBool ? msg : std::string(); };
}
std::string not_implemented(const std::string& kernel, DType t) {
  return fmt::format("\"{}\" not implemented for '{}'", kernel, cpp_name(t));
}

std::vector<UnaryOp> unary_ops() {
  using A = Accuracy;
  using R = Result;
  const std::string neg_msg =
      "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
      "a mask, use the `~` or `logical_not()` operator instead.";
  auto rounding = [](const char* kernel) {
    return rejects_bool(not_implemented(kernel, tj::kBool));
  };
  auto math = [](const char* name, Tensor (*fn)(const Tensor&)) {
    return UnaryOp{name, fn, R::Float, A::Transcendental, accepts_all()};
  };
  return {
      {"neg", TJ_FN(tj::neg), R::Same, A::Exact, rejects_bool(neg_msg)},
      {"operator-", [](const Tensor& x) { return -x; }, R::Same, A::Exact, rejects_bool(neg_msg)},
      {"abs", TJ_FN(tj::abs), R::Same, A::Exact,
       rejects_bool(not_implemented("abs_cpu", tj::kBool))},
      {"sign", TJ_FN(tj::sign), R::Same, A::Exact, accepts_all()},
      {"ceil", TJ_FN(tj::ceil), R::Same, A::Exact, rounding("ceil_vml_cpu")},
      {"floor", TJ_FN(tj::floor), R::Same, A::Exact, rounding("floor_vml_cpu")},
      {"round", TJ_FN(tj::round), R::Same, A::Exact, rounding("round_vml_cpu")},
      {"trunc", TJ_FN(tj::trunc), R::Same, A::Exact, rounding("trunc_vml_cpu")},
      {"sqrt", TJ_FN(tj::sqrt), R::Float, A::Exact, accepts_all()},
      {"rsqrt", TJ_FN(tj::rsqrt), R::Float, A::Exact, accepts_all()},
      {"reciprocal", TJ_FN(tj::reciprocal), R::Float, A::Exact, accepts_all()},
      {"square", TJ_FN(tj::square), R::Square, A::Exact, accepts_all()},
  // Every function of the C math library (tensorjit/elementwise_functions.def).
#define TJ_MATH_FN(name, op, grad_fn) math(#name, TJ_FN(tj::name)),
#include "tensorjit/elementwise_functions.def"
      // exp, + and reciprocal each round: a few ulps of the dtype.
      {"sigmoid", TJ_FN(tj::sigmoid), R::Float, A::Transcendental, accepts_all(), 4},
      {"relu", TJ_FN(tj::relu), R::Same, A::Exact,
       rejects_bool("Boolean inputs not supported for relu")},
      {"isnan", TJ_FN(tj::isnan), R::Bool, A::Exact, accepts_all()},
      {"isinf", TJ_FN(tj::isinf), R::Bool, A::Exact, accepts_all()},
      {"isfinite", TJ_FN(tj::isfinite), R::Bool, A::Exact, accepts_all()},
      {"logical_not", TJ_FN(tj::logical_not), R::Bool, A::Exact, accepts_all()},
      {"bitwise_not", TJ_FN(tj::bitwise_not), R::Same, A::Exact,
       [](DType t) { return is_float(t) ? not_implemented("bitwise_not_cpu", t) : std::string(); }},
      {"operator~", [](const Tensor& x) { return ~x; }, R::Same, A::Exact,
       [](DType t) { return is_float(t) ? not_implemented("bitwise_not_cpu", t) : std::string(); }},
  };
}

DType unary_result(Result r, DType t) {
  switch (r) {
  case Result::Float:
    return float_of(t);
  case Result::Bool:
    return tj::kBool;
  case Result::Square:
    return t == tj::kBool ? tj::kInt64 : t;
  default:
    return t;
  }
}

// gelu = x/2 (1 + erf(x / sqrt 2)): for x < 0 the sum cancels, so erf's few ulps of error become
// an absolute error of about |x| ulps; beyond |x| ~ 8 erf is +-1 in every dtype and exact again.
Tolerance gelu_tolerance(DType t) {
  Tolerance tol = tj::test::tolerance(t, Accuracy::Transcendental).scaled(4);
  tol.atol = 16 * tj::test::epsilon(t);
  return tol;
}

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using TensorScalarFn = std::function<Tensor(const Tensor&, const Scalar&)>;
using ScalarTensorFn = std::function<Tensor(const Scalar&, const Tensor&)>;
// PyTorch's error for operand dtypes (a, b) whose result type is `result`; empty: accepted.
using BinaryRejectFn = std::function<std::string(DType result, DType a, DType b)>;

struct BinaryOp {
  const char* name;
  BinaryFn fn;
  TensorScalarFn tensor_scalar; // x op s, when the API has it
  ScalarTensorFn scalar_tensor; // s op x, when the API has it
  Result result;                // Promoted, Float or Bool
  Accuracy acc;
  bool divides = false; // integer divisors must not be zero
  BinaryRejectFn rejects = [](DType, DType, DType) { return std::string(); };
};

BinaryRejectFn bool_result_rejected(const char* kernel) {
  return [kernel](DType r, DType, DType) {
    return r == tj::kBool ? not_implemented(kernel, r) : std::string();
  };
}
BinaryRejectFn int_result_rejected(const char* kernel) {
  return [kernel](DType r, DType, DType) {
    return is_float(r) ? std::string() : not_implemented(kernel, r);
  };
}
BinaryRejectFn no_rejection() {
  return [](DType, DType, DType) { return std::string(); };
}
BinaryRejectFn float_result_rejected(const char* kernel) {
  return [kernel](DType r, DType, DType) {
    return is_float(r) ? not_implemented(kernel, r) : std::string();
  };
}

std::vector<BinaryOp> binary_ops() {
  using A = Accuracy;
  using R = Result;
  using T = const Tensor&;
  using S = const Scalar&;
  BinaryRejectFn sub_rejects = [](DType, DType a, DType b) -> std::string {
    if (a == tj::kBool && b == tj::kBool)
      return "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
             "or `logical_xor()` operator instead.";
    if (a == tj::kBool || b == tj::kBool)
      return "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
             "trying to invert a mask, use the `~` or `logical_not()` operator instead.";
    return "";
  };
  return {
      {"add", [](T a, T b) { return a + b; }, [](T a, S s) { return a + s; },
       [](S s, T a) { return s + a; }, R::Promoted, A::Exact},
      {"sub", [](T a, T b) { return a - b; }, [](T a, S s) { return a - s; },
       [](S s, T a) { return s - a; }, R::Promoted, A::Exact, false, sub_rejects},
      {"mul", [](T a, T b) { return a * b; }, [](T a, S s) { return a * s; },
       [](S s, T a) { return s * a; }, R::Promoted, A::Exact},
      {"div", [](T a, T b) { return a / b; }, [](T a, S s) { return a / s; },
       [](S s, T a) { return s / a; }, R::Float, A::Exact},
      {"pow", [](T a, T b) { return tj::pow(a, b); }, [](T a, S s) { return a.pow(s); },
       [](S s, T a) { return tj::pow(s, a); }, R::Promoted, A::Transcendental, false,
       bool_result_rejected("pow")},
      {"floor_divide", [](T a, T b) { return tj::floor_divide(a, b); },
       [](T a, S s) { return a.floor_divide(s); }, nullptr, R::Promoted, A::Exact, true,
       bool_result_rejected("div_floor_cpu")},
      {"remainder", [](T a, T b) { return tj::remainder(a, b); },
       [](T a, S s) { return a.remainder(s); }, nullptr, R::Promoted, A::Exact, true,
       bool_result_rejected("remainder_cpu")},
      {"fmod", [](T a, T b) { return tj::fmod(a, b); }, [](T a, S s) { return a.fmod(s); }, nullptr,
       R::Promoted, A::Exact, true, bool_result_rejected("fmod_cpu")},
      {"maximum", [](T a, T b) { return tj::maximum(a, b); }, nullptr, nullptr, R::Promoted,
       A::Exact},
      {"minimum", [](T a, T b) { return tj::minimum(a, b); }, nullptr, nullptr, R::Promoted,
       A::Exact},
  // The C math library's two-argument functions (tensorjit/elementwise_functions.def).
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints)                                              \
  {#name,    [](T a, T b) { return tj::name(a, b); },                                                                     \
   nullptr,  nullptr,                                                                              \
   R::Float, A::Transcendental,                                                                    \
   false,    promotes_ints ? no_rejection() : int_result_rejected(#name "_cpu")},
#include "tensorjit/elementwise_functions.def"
      {"eq", [](T a, T b) { return a == b; }, [](T a, S s) { return a == s; }, nullptr, R::Bool,
       A::Exact},
      {"ne", [](T a, T b) { return a != b; }, [](T a, S s) { return a != s; }, nullptr, R::Bool,
       A::Exact},
      {"lt", [](T a, T b) { return a < b; }, [](T a, S s) { return a < s; }, nullptr, R::Bool,
       A::Exact},
      {"le", [](T a, T b) { return a <= b; }, [](T a, S s) { return a <= s; }, nullptr, R::Bool,
       A::Exact},
      {"gt", [](T a, T b) { return a > b; }, [](T a, S s) { return a > s; }, nullptr, R::Bool,
       A::Exact},
      {"ge", [](T a, T b) { return a >= b; }, [](T a, S s) { return a >= s; }, nullptr, R::Bool,
       A::Exact},
      {"logical_and", [](T a, T b) { return tj::logical_and(a, b); }, nullptr, nullptr, R::Bool,
       A::Exact},
      {"logical_or", [](T a, T b) { return tj::logical_or(a, b); }, nullptr, nullptr, R::Bool,
       A::Exact},
      {"logical_xor", [](T a, T b) { return tj::logical_xor(a, b); }, nullptr, nullptr, R::Bool,
       A::Exact},
      {"bitwise_and", [](T a, T b) { return a & b; }, nullptr, nullptr, R::Promoted, A::Exact,
       false, float_result_rejected("bitwise_and_cpu")},
      {"bitwise_or", [](T a, T b) { return a | b; }, nullptr, nullptr, R::Promoted, A::Exact, false,
       float_result_rejected("bitwise_or_cpu")},
      {"bitwise_xor", [](T a, T b) { return a ^ b; }, nullptr, nullptr, R::Promoted, A::Exact,
       false, float_result_rejected("bitwise_xor_cpu")},
  };
}

DType binary_result(const BinaryOp& op, DType promoted) {
  switch (op.result) {
  case Result::Float:
    return float_of(promoted);
  case Result::Bool:
    return tj::kBool;
  default:
    return promoted;
  }
}

// The scalars each binary op meets on either side: bool, integers (some that wrap in narrow
// dtypes), floats with both zeros, NaN and an infinity. None is an integer zero in any dtype, so
// integer division is defined.
const std::vector<Scalar>& test_scalars() {
  static const std::vector<Scalar> s = {
      Scalar(true), Scalar(int64_t{3}), Scalar(int64_t{-1}), Scalar(1000), Scalar(2.5),
      Scalar(-0.0), Scalar(kNaN),       Scalar(-kInf),       Scalar(0.0),  Scalar(-129)};
  return s;
}

// ---- PyTorch reference values ----------------------------------------------------------------

// Checks values computed by PyTorch 1.13.1 (torch.<op> on float64 / int64 tensors).
void check_golden(const Tensor& t, const std::vector<double>& want, const Tolerance& tol,
                  const std::string& what) {
  tj::interp::HostArray e{t.dtype(), {static_cast<int64_t>(want.size())}, want, {}};
  tj::interp::HostArray a = tj::test::read_back(t);
  a.shape = e.shape;
  std::string msg = tj::test::compare(a, e, tol, what, "PyTorch");
  INFO(msg);
  CHECK(msg.empty());
}
void check_golden(const Tensor& t, const std::vector<int64_t>& want, const std::string& what) {
  tj::interp::HostArray e{t.dtype(), {static_cast<int64_t>(want.size())}, {}, want};
  tj::interp::HostArray a = tj::test::read_back(t);
  a.shape = e.shape;
  std::string msg = tj::test::compare(a, e, {}, what, "PyTorch");
  INFO(msg);
  CHECK(msg.empty());
}

} // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("promote_types and result types follow PyTorch", "[oracle][promotion]") {
  for (DType a : kDTypes)
    for (DType b : kDTypes) {
      INFO("promote_types(" << dname(a) << ", " << dname(b) << ")");
      CHECK(tj::promote_types(a, b) == ref_promote(a, b));
    }

  auto ints = [](DType t) { return tj::tensor<int64_t>({1, 2, 3}, tj::dtype(t)); };
  auto floats = [](DType t) { return tj::tensor<double>({1.5, -2.0, 4.0}, tj::dtype(t)); };
  Tensor i32 = ints(tj::kInt32), i64 = ints(tj::kInt64), u8 = ints(tj::kUInt8),
         i8 = ints(tj::kInt8);
  Tensor f32 = floats(tj::kFloat32), f64 = floats(tj::kFloat64), f16 = floats(tj::kFloat16);
  Tensor b = tj::tensor<bool>({true, false, true});
  Tensor d0 = tj::scalar_tensor(2.5, tj::dtype(tj::kFloat64));

  check_dtype(i32 + 2.5, tj::kFloat32, "int32 tensor + 2.5");
  check_dtype(i64 + f32, tj::kFloat32, "int64 tensor + float32 tensor");
  check_dtype(f32 + f64, tj::kFloat64, "float32 + float64");
  check_dtype(b + b, tj::kBool, "bool + bool");
  check_dtype(u8 + i8, tj::kInt16, "uint8 + int8");
  check_dtype(i32 / i32, tj::kFloat32, "int tensor / int tensor");
  check_dtype(tj::sin(i64), tj::kFloat32, "sin(int tensor)");
  check_dtype(i8 + 1000, tj::kInt8, "int8 tensor + 1000");
  check_dtype(d0 + f32, tj::kFloat32, "0-d float64 tensor + float32 1-D tensor");
  check_dtype(d0 + i32, tj::kFloat64, "0-d float64 tensor + int32 1-D tensor");
  check_dtype(tj::scalar_tensor(int64_t{7}, tj::kInt64) + i8, tj::kInt8,
              "0-d int64 tensor + int8 1-D tensor");
  check_dtype(tj::scalar_tensor(true, tj::kBool) + u8, tj::kUInt8,
              "0-d bool tensor + uint8 1-D tensor");
  check_dtype(f16 * d0, tj::kFloat16, "float16 tensor * 0-d float64 tensor");
  check_dtype(b + 2.5, tj::kFloat32, "bool tensor + 2.5");
  check_dtype(b + true, tj::kBool, "bool tensor + True");
  check_dtype(i32 + true, tj::kInt32, "int32 tensor + True");
  check_dtype(tj::pow(2.5, i32), tj::kFloat32, "pow(2.5, int32 tensor)");
  check_dtype(tj::pow(2, i8), tj::kInt8, "pow(2, int8 tensor)");
  check_dtype(tj::clamp(i8, 0.5, 2), tj::kFloat32, "clamp(int8 tensor, 0.5, 2)");
  check_dtype(tj::maximum(u8, i8), tj::kInt16, "maximum(uint8, int8)");
  // The values wrap as PyTorch's do: 1 + 1000 in int8 is -23.
  CHECK((i8 + 1000).to_vector<int64_t>() == std::vector<int64_t>{-23, -22, -21});

  // The default dtype decides where integers go for true division and math functions.
  tj::set_default_dtype(tj::kFloat64);
  DType div_dtype = (i32 / i32).dtype(), sin_dtype = tj::sin(i32).dtype();
  DType scalar_dtype = (i32 + 2.5).dtype();
  tj::set_default_dtype(tj::kFloat32);
  CHECK(div_dtype == tj::kFloat64);
  CHECK(sin_dtype == tj::kFloat64);
  CHECK(scalar_dtype == tj::kFloat64);
}

TEST_CASE("unary ops match the interpreter on every dtype and layout", "[oracle][unary]") {
  // Each (op, dtype) runs on all its special and ordinary values at once, contiguous, and on the
  // special values in one of the other layouts (rotating, so every layout meets every op and
  // dtype family without compiling every combination), and on an empty tensor.
  OracleBatch batch, empty;
  const std::vector<UnaryOp> ops = unary_ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const UnaryOp& op = ops[i];
    for (size_t j = 0; j < kDTypes.size(); ++j) {
      const DType t = kDTypes[j];
      const std::string reject = op.rejects(t);
      if (!reject.empty()) {
        INFO(op.name << " on " << dname(t));
        CHECK_THROWS_WITH(op.fn(make(special_values(t), {4, 4})), reject);
        continue;
      }
      const DType rt = unary_result(op.result, t);
      auto add = [&](OracleBatch& b, const Tensor& y, const std::string& what) {
        check_dtype(y, rt, what);
        b.add(y, tj::test::tolerance(y.dtype(), op.acc).scaled(op.scale), what);
      };
      const Values sv = special_values(t);
      add(batch, op.fn(make(with_ordinary(sv), {8, 16})),
          fmt::format("{}({} special and ordinary values (8, 16))", op.name, dname(t)));
      std::string variant;
      const Tensor x = special_input(sv, i + j, &variant);
      add(batch, op.fn(x), fmt::format("{}({} {})", op.name, dname(t), variant));
      add(empty, op.fn(make(Values{t, {}, {}}, {0, 3})),
          fmt::format("{}({} empty (0, 3))", op.name, dname(t)));
    }
  }
  TJ_CHECK_BATCH(batch);
  TJ_CHECK_BATCH(empty);
}

TEST_CASE("gelu matches the interpreter on floating dtypes and rejects others", "[oracle][unary]") {
  OracleBatch batch;
  for (size_t j = 0; j < kDTypes.size(); ++j) {
    const DType t = kDTypes[j];
    const Values sv = special_values(t);
    if (!is_float(t)) {
      CHECK_THROWS_WITH(tj::gelu(make(sv, {4, 4})), not_implemented("GeluKernelImpl", t));
      continue;
    }
    batch.add(make(with_ordinary(sv), {8, 16}).gelu(), gelu_tolerance(t),
              fmt::format("gelu({} special and ordinary values)", dname(t)));
    std::string variant;
    const Tensor x = special_input(sv, 3 * j, &variant);
    batch.add(tj::gelu(x), gelu_tolerance(t), fmt::format("gelu({} {})", dname(t), variant));
  }
  TJ_CHECK_BATCH(batch);
}

TEST_CASE("binary ops match the interpreter on every dtype, layout and broadcast",
          "[oracle][binary]") {
  // All pairs of special values: a (16, 1) with b (1, 16), and the same pairs as two (16, 16)
  // operands in two layouts (rotating over the (op, dtype) combinations).
  const std::vector<BinaryOp> ops = binary_ops();
  OracleBatch batch;
  for (size_t i = 0; i < ops.size(); ++i) {
    const BinaryOp& op = ops[i];
    for (size_t j = 0; j < kDTypes.size(); ++j) {
      const DType t = kDTypes[j];
      const DType promoted = ref_result_type({dim(t), dim(t)});
      const Values a = special_values(t);
      const Values b = special_values(t, op.divides);
      const std::string reject = op.rejects(promoted, t, t);
      if (!reject.empty()) {
        INFO(op.name << " on " << dname(t));
        CHECK_THROWS_WITH(op.fn(make(a, {16, 1}), make(b, {1, 16})), reject);
        continue;
      }
      const DType rt = binary_result(op, promoted);
      auto add = [&](const Tensor& y, const std::string& what) {
        check_dtype(y, rt, what);
        batch.add(y, op.acc, what);
      };
      add(op.fn(make(a, {16, 1}), make(b, {1, 16})),
          fmt::format("{}({} (16, 1), (1, 16))", op.name, dname(t)));
      const Layout la = kLayouts[(i + j) % kLayouts.size()];
      const Layout lb = kLayouts[(i + 3 * j + 1) % kLayouts.size()];
      add(op.fn(laid_out(rows_of(a, 16), 16, 16, la), laid_out(cols_of(b, 16), 16, 16, lb)),
          fmt::format("{}({} {}, {} (16, 16))", op.name, dname(t), layout_name(la),
                      layout_name(lb)));
    }
  }
  TJ_CHECK_BATCH(batch);
}

TEST_CASE("binary ops with a scalar on either side match the interpreter", "[oracle][binary]") {
  const std::vector<BinaryOp> ops = binary_ops();
  const std::vector<Scalar>& scalars = test_scalars();
  OracleBatch batch;
  for (size_t i = 0; i < ops.size(); ++i) {
    const BinaryOp& op = ops[i];
    if (!op.tensor_scalar && !op.scalar_tensor) continue;
    for (size_t j = 0; j < kDTypes.size(); ++j) {
      const DType t = kDTypes[j];
      const Tensor x = laid_out(special_values(t, op.divides), 4, 4, Layout::Transposed);
      for (size_t k = 0; k < 3; ++k) {
        const Scalar& s = scalars[(i + j + 3 * k) % scalars.size()];
        const DType promoted = ref_result_type({dim(t), wrapped(s)});
        const DType rt = binary_result(op, promoted);
        auto one = [&](bool scalar_first) {
          const std::string what =
              scalar_first ? fmt::format("{}({}, {} tensor)", op.name, s.str(), dname(t))
                           : fmt::format("{}({} tensor, {})", op.name, dname(t), s.str());
          std::string reject = scalar_first ? op.rejects(promoted, s.dtype(), t)
                                            : op.rejects(promoted, t, s.dtype());
          if (std::string(op.name) == "pow" && !scalar_first && reject.empty() &&
              !is_float(promoted) && s.is_integral() && s.to_int() < 0)
            reject = "Integers to negative integer powers are not allowed.";
          auto compute = [&] {
            return scalar_first ? op.scalar_tensor(s, x) : op.tensor_scalar(x, s);
          };
          if (!reject.empty()) {
            INFO(what);
            CHECK_THROWS_WITH(compute(), reject);
            return;
          }
          Tensor y = compute();
          check_dtype(y, rt, what);
          batch.add(y, op.acc, what);
        };
        if (op.tensor_scalar) one(false);
        if (op.scalar_tensor) one(true);
      }
    }
  }
  TJ_CHECK_BATCH(batch);
}

TEST_CASE("pow's exponent shortcuts and scalar bases match the interpreter", "[oracle][binary]") {
  // Exponents 2, 0.5, -1 and 1 become mul, sqrt, reciprocal and a copy; others call pow.
  const std::vector<Scalar> exponents = {Scalar(int64_t{2}), Scalar(0.5),        Scalar(-1.0),
                                         Scalar(int64_t{1}), Scalar(int64_t{3}), Scalar(2.5),
                                         Scalar(int64_t{0}), Scalar(-0.5),       Scalar(2.0)};
  const std::vector<Scalar> bases = {Scalar(int64_t{2}), Scalar(2.5), Scalar(int64_t{-1}),
                                     Scalar(int64_t{0}), Scalar(-0.5)};
  OracleBatch batch;
  for (DType t : kDTypes) {
    if (t == tj::kBool) continue;
    const Tensor x = make(special_values(t), {4, 4});
    for (const Scalar& e : exponents) {
      Tensor y = x.pow(e);
      check_dtype(y, ref_result_type({dim(t), wrapped(e)}), "pow(x, " + e.str() + ")");
      batch.add(y, Accuracy::Transcendental, fmt::format("pow({}, {})", dname(t), e.str()));
    }
    for (const Scalar& b : bases) {
      Tensor y = tj::pow(b, x);
      check_dtype(y, ref_result_type({wrapped(b), dim(t)}), "pow(" + b.str() + ", x)");
      batch.add(y, Accuracy::Transcendental, fmt::format("pow({}, {})", b.str(), dname(t)));
    }
  }
  TJ_CHECK_BATCH(batch);
  CHECK_THROWS_WITH(tj::tensor<int64_t>({1, 2}).pow(-2),
                    "Integers to negative integer powers are not allowed.");
}

TEST_CASE("binary ops with 0-d and empty operands match the interpreter", "[oracle][binary]") {
  const std::array<DType, 4> zero_dtypes = {tj::kBool, tj::kInt64, tj::kFloat16, tj::kFloat64};
  const std::vector<BinaryOp> ops = binary_ops();
  OracleBatch batch;
  for (size_t i = 0; i < ops.size(); ++i) {
    const BinaryOp& op = ops[i];
    for (size_t j = 0; j < kDTypes.size(); ++j) {
      const DType t = kDTypes[j];
      const DType z = zero_dtypes[(i + 2 * j) % zero_dtypes.size()];
      const Values v = special_values(t, op.divides);
      const Tensor one_d = make(v, {16});
      const Tensor zd = make(take(special_values(z, op.divides), {3}), {});
      const Tensor zd2 = make(take(v, {6}), {});
      struct Case {
        Tensor a, b;
        Opnd oa, ob;
        const char* shapes;
      };
      const std::vector<Case> cases = {
          {zd, one_d, zero_dim(z), dim(t), "0-d, (16,)"},
          {one_d, zd, dim(t), zero_dim(z), "(16,), 0-d"},
          {zd, zd2, zero_dim(z), zero_dim(t), "0-d, 0-d"},
          {make(Values{t, {}, {}}, {0, 3}), make(take(v, {1, 2, 3}), {3}), dim(t), dim(t),
           "(0, 3), (3,)"},
          {make(Values{z, {}, {}}, {0, 1}), make(take(v, {1, 2, 3}), {1, 3}), dim(z), dim(t),
           "(0, 1), (1, 3)"}};
      // Every empty case, and one of the others (rotating).
      for (size_t c = 0; c < cases.size(); ++c) {
        if (c < 3 && c != (i + j) % 3) continue;
        const Case& cs = cases[c];
        const DType promoted = ref_result_type({cs.oa, cs.ob});
        const std::string what =
            fmt::format("{}({}, {}: {})", op.name, dname(cs.oa.t), dname(cs.ob.t), cs.shapes);
        const std::string reject = op.rejects(promoted, cs.oa.t, cs.ob.t);
        if (!reject.empty()) {
          INFO(what);
          CHECK_THROWS_WITH(op.fn(cs.a, cs.b), reject);
          continue;
        }
        Tensor y = op.fn(cs.a, cs.b);
        check_dtype(y, binary_result(op, promoted), what);
        batch.add(y, op.acc, what);
      }
    }
  }
  TJ_CHECK_BATCH(batch);
}

TEST_CASE("binary ops on mixed dtypes promote as PyTorch and match the interpreter",
          "[oracle][binary][promotion]") {
  // Every op on every pair of dtypes is checked for its result dtype or error; a rotating fifth
  // of them is also computed.
  const std::vector<BinaryOp> ops = binary_ops();
  OracleBatch batch;
  size_t pair = 0;
  for (DType ta : kDTypes)
    for (DType tb : kDTypes) {
      if (ta == tb) continue;
      ++pair;
      for (size_t i = 0; i < ops.size(); ++i) {
        const BinaryOp& op = ops[i];
        const DType promoted = ref_result_type({dim(ta), dim(tb)});
        const Values a = take(special_values(ta), {0, 2, 3, 5, 9, 10, 11, 12});
        const Values b = take(special_values(tb, op.divides), {0, 2, 3, 5, 6, 10, 11, 14});
        const Tensor x = make(a, {8, 1}), y = make(b, {1, 8});
        const std::string what = fmt::format("{}({}, {})", op.name, dname(ta), dname(tb));
        const std::string reject = op.rejects(promoted, ta, tb);
        if (!reject.empty()) {
          INFO(what);
          CHECK_THROWS_WITH(op.fn(x, y), reject);
          continue;
        }
        Tensor r = op.fn(x, y);
        check_dtype(r, binary_result(op, promoted), what);
        if ((i + pair) % 5 == 0) batch.add(r, op.acc, what);
      }
    }
  TJ_CHECK_BATCH(batch);
}

TEST_CASE("where matches the interpreter on every dtype, with tensors and scalars",
          "[oracle][where]") {
  const Tensor cond = tj::tensor<bool>({true, false, false, true, true, true, false, false, true,
                                        false, true, false, false, true, false, true},
                                       {16, 1});
  // A computed, transposed condition.
  const Tensor cond_t =
      laid_out(rows_of(special_values(tj::kBool), 16), 16, 16, Layout::PermuteOfCast).logical_not();
  OracleBatch batch;
  size_t pair = 0;
  for (DType ta : kDTypes)
    for (DType tb : kDTypes) {
      const Tensor a = make(special_values(ta), {1, 16});
      const Tensor b = laid_out(rows_of(special_values(tb), 16), 16, 16, Layout::Transposed);
      const DType rt = ref_result_type({dim(ta), dim(tb)});
      const std::string what = fmt::format("where(cond, {}, {})", dname(ta), dname(tb));
      Tensor r = ++pair % 2 ? tj::where(cond, a, b) : a.where(cond_t, b);
      check_dtype(r, rt, what);
      batch.add(r, Accuracy::Exact, what);
    }
  const std::vector<Scalar>& scalars = test_scalars();
  for (size_t j = 0; j < kDTypes.size(); ++j) {
    const DType t = kDTypes[j];
    const Tensor x = make(special_values(t), {1, 16});
    for (size_t k = 0; k < 2; ++k) {
      const Scalar& s = scalars[(j + 5 * k) % scalars.size()];
      const DType rt = ref_result_type({dim(t), wrapped(s)});
      Tensor r1 = tj::where(cond, x, s), r2 = tj::where(cond, s, x);
      check_dtype(r1, rt, "where(cond, tensor, scalar)");
      check_dtype(r2, rt, "where(cond, scalar, tensor)");
      batch.add(r1, Accuracy::Exact, fmt::format("where(cond, {}, {})", dname(t), s.str()));
      batch.add(r2, Accuracy::Exact, fmt::format("where(cond, {}, {})", s.str(), dname(t)));
    }
  }
  TJ_CHECK_BATCH(batch);
  const Tensor ints = tj::tensor<int64_t>({1, 0});
  CHECK_THROWS_WITH(tj::where(ints, ints, ints),
                    "where expected condition to be a boolean tensor, but got a tensor with dtype "
                    "Long");
}

TEST_CASE("clamp matches the interpreter on every dtype", "[oracle][clamp]") {
  struct Bounds {
    std::optional<Scalar> lo, hi;
  };
  OracleBatch batch;
  for (DType t : kDTypes) {
    // Integer bounds in range of the dtype (PyTorch rejects ones that overflow it).
    const Scalar ilo = t == tj::kUInt8 ? Scalar(int64_t{2}) : Scalar(int64_t{-2});
    const Scalar ihi = t == tj::kUInt8 ? Scalar(int64_t{100}) : Scalar(int64_t{3});
    const std::vector<Bounds> bounds = {{ilo, std::nullopt},
                                        {std::nullopt, ihi},
                                        {ilo, ihi},
                                        {ihi, ilo},
                                        {Scalar(-1.5), Scalar(2.5)},
                                        {std::nullopt, Scalar(-0.0)},
                                        {Scalar(true), std::nullopt}};
    const Tensor x = laid_out(special_values(t), 4, 4, Layout::SliceOfCast);
    for (const Bounds& bd : bounds) {
      const std::string what =
          fmt::format("clamp({}, {}, {})", dname(t), bd.lo ? bd.lo->str() : "None",
                      bd.hi ? bd.hi->str() : "None");
      DType rt = bd.lo && bd.hi ? ref_result_type({dim(t), wrapped(*bd.lo), wrapped(*bd.hi)})
                 : bd.lo        ? ref_result_type({dim(t), wrapped(*bd.lo)})
                                : ref_result_type({dim(t), wrapped(*bd.hi)});
      if (rt == tj::kBool) {
        const char* kernel = bd.lo && bd.hi ? "clamp_scalar_cpu"
                             : bd.lo        ? "clamp_min_cpu"
                                            : "clamp_max_scalar_cpu";
        INFO(what);
        CHECK_THROWS_WITH(tj::clamp(x, bd.lo, bd.hi), not_implemented(kernel, tj::kBool));
        continue;
      }
      Tensor r = tj::clamp(x, bd.lo, bd.hi);
      check_dtype(r, rt, what);
      batch.add(r, Accuracy::Exact, what);
    }
    if (t != tj::kBool) {
      batch.add(x.clamp_min(int64_t{1}), Accuracy::Exact,
                fmt::format("clamp_min({}, 1)", dname(t)));
      batch.add(x.clamp_max(int64_t{1}), Accuracy::Exact,
                fmt::format("clamp_max({}, 1)", dname(t)));
    }
  }
  TJ_CHECK_BATCH(batch);
  CHECK_THROWS_WITH(tj::clamp(tj::tensor<double>({1.0}), std::nullopt, std::nullopt),
                    "torch.clamp: At least one of 'min' or 'max' must not be None");
}

TEST_CASE("maximum, minimum, clamp and relu propagate NaN in vectorized loops",
          "[oracle][binary]") {
  // Long rows, each op in a kernel of its own, NaN in either operand: LLVM 19 lowers
  // llvm.maximum on <16 x half> without NaN propagation, which float16 max once hit.
  OracleBatch batch(1);
  for (DType t : {tj::kFloat16, tj::kBFloat16, tj::kFloat32, tj::kFloat64}) {
    std::vector<double> a(64), b(64);
    for (size_t k = 0; k < a.size(); ++k) {
      a[k] = k % 3 == 0 ? kNaN : k % 5 == 0 ? -0.0 : static_cast<double>(k % 7) - 3;
      b[k] = k % 4 == 1 ? kNaN : k % 5 == 0 ? 0.0 : static_cast<double>(k % 6) - 2;
    }
    const Tensor x = tj::tensor<double>(a, tj::dtype(t)), y = tj::tensor<double>(b, tj::dtype(t));
    const Tensor row = tj::tensor<double>(a, {1, 64}, tj::dtype(t));
    const Tensor col =
        tj::tensor<double>(std::vector<double>{0.0, kNaN, -0.0, 1.0}, {4, 1}, tj::dtype(t));
    const std::string d = dname(t);
    batch.add(tj::maximum(x, y), Accuracy::Exact, "maximum(x, y) " + d);
    batch.add(tj::maximum(y, x), Accuracy::Exact, "maximum(y, x) " + d);
    batch.add(tj::minimum(x, y), Accuracy::Exact, "minimum(x, y) " + d);
    batch.add(tj::minimum(y, x), Accuracy::Exact, "minimum(y, x) " + d);
    batch.add(tj::maximum(col, row), Accuracy::Exact, "maximum((4, 1), (1, 64)) " + d);
    batch.add(tj::minimum(row, col), Accuracy::Exact, "minimum((1, 64), (4, 1)) " + d);
    batch.add(y.relu(), Accuracy::Exact, "relu(y) " + d);
    batch.add(x.clamp(-1, 1), Accuracy::Exact, "clamp(x, -1, 1) " + d);
    batch.add(tj::maximum(x.to(tj::kInt16), y), Accuracy::Exact, "maximum(int16, y) " + d);
  }
  TJ_CHECK_BATCH(batch);
}

TEST_CASE("add and sub with alpha match the interpreter and PyTorch's checks", "[oracle][binary]") {
  const char* float_alpha =
      "For integral input tensors, argument alpha must not be a floating point number.";
  OracleBatch batch;
  for (DType t : kDTypes) {
    const Tensor a = make(special_values(t), {16, 1}), b = make(special_values(t), {1, 16});
    if (t == tj::kBool) {
      batch.add(tj::add(a, b, true), Accuracy::Exact, "add(bool, bool, alpha=True)");
      batch.add(tj::add(a, b, false), Accuracy::Exact, "add(bool, bool, alpha=False)");
      batch.add(tj::add(a, b, 2), Accuracy::Exact, "add(bool, bool, alpha=2)");
      CHECK_THROWS_WITH(tj::add(a, b, 0.5), float_alpha);
      continue;
    }
    for (const Scalar& alpha : {Scalar(int64_t{2}), Scalar(int64_t{-3}), Scalar(0.5)}) {
      const std::string what = fmt::format("({}, alpha={})", dname(t), alpha.str());
      if (!is_float(t) && alpha.is_floating_point()) {
        CHECK_THROWS_WITH(tj::add(a, b, alpha), float_alpha);
        CHECK_THROWS_WITH(tj::sub(a, b, alpha), float_alpha);
        continue;
      }
      batch.add(tj::add(a, b, alpha), Accuracy::Exact, "add" + what);
      batch.add(tj::sub(a, b, alpha), Accuracy::Exact, "sub" + what);
      batch.add(a.add(Scalar(int64_t{7}), alpha), Accuracy::Exact, "add(x, 7)" + what);
    }
    CHECK_THROWS_WITH(tj::add(a, b, true), "Boolean alpha only supported for Boolean results.");
  }
  TJ_CHECK_BATCH(batch);
}

TEST_CASE("casts between all dtypes match the interpreter", "[oracle][cast]") {
  // Values around every conversion's edges: halves (rounding), integer ranges, float16's largest
  // and overflow threshold, NaN, infinities, subnormals, and 1 + 2^-11 + 2^-30, which float64 ->
  // float32 -> float16 rounds twice (as PyTorch does).
  const std::vector<double> fvals = {0.0,
                                     -0.0,
                                     1.0,
                                     -1.0,
                                     0.5,
                                     -0.5,
                                     1.5,
                                     2.5,
                                     -2.5,
                                     127.5,
                                     128.0,
                                     -128.5,
                                     -129.0,
                                     255.0,
                                     255.9,
                                     256.0,
                                     300.7,
                                     -300.7,
                                     32767.5,
                                     32768.0,
                                     -32769.0,
                                     65504.0,
                                     65520.0,
                                     1e10,
                                     -1e10,
                                     3.4e38,
                                     kNaN,
                                     kInf,
                                     -kInf,
                                     1e-40,
                                     1.0 + 0x1p-11 + 0x1p-30,
                                     6e-8};
  std::vector<int64_t> ivals = {0,
                                1,
                                -1,
                                127,
                                128,
                                -128,
                                -129,
                                255,
                                256,
                                32767,
                                32768,
                                -32769,
                                65504,
                                65520,
                                (1 << 24) + 1,
                                INT32_MAX,
                                INT32_MIN,
                                1LL << 40,
                                -(1LL << 40) - 1,
                                (1LL << 53) + 1,
                                INT64_MAX,
                                INT64_MIN,
                                INT64_MIN + 1,
                                7,
                                -7,
                                100,
                                -100,
                                42,
                                1000000,
                                -1000000,
                                3,
                                99};
  OracleBatch batch;
  for (size_t i = 0; i < kDTypes.size(); ++i) {
    const DType from = kDTypes[i];
    Values v{from, {}, {}};
    if (is_float(from))
      v.f = fvals;
    else
      v.i = ivals;
    for (size_t j = 0; j < kDTypes.size(); ++j) {
      const DType to = kDTypes[j];
      // Contiguous, and one other layout (rotating).
      for (Layout l : {Layout::Contiguous, kLayouts[1 + (i + j) % (kLayouts.size() - 1)]}) {
        Tensor y = laid_out(v, 4, 8, l).to(to);
        check_dtype(y, to, "to");
        batch.add(y, Accuracy::Exact,
                  fmt::format("{} {} .to({})", dname(from), layout_name(l), dname(to)));
      }
    }
  }
  TJ_CHECK_BATCH(batch);
}

TEST_CASE("isclose, allclose and equal match the interpreter", "[oracle][isclose]") {
  OracleBatch batch;
  for (DType t : kDTypes) {
    const Tensor a = make(special_values(t), {16, 1});
    const Values sv = special_values(t);
    Values near = sv;
    for (double& x : near.f)
      x = x * (1 + 1e-6) + 1e-9;
    const Tensor b = make(is_float(t) ? near : sv, {1, 16});
    for (auto [rtol, atol, equal_nan] :
         {std::tuple{1e-5, 1e-8, false}, std::tuple{0.0, 0.0, true}, std::tuple{1e-2, 1.0, true}}) {
      Tensor r = tj::isclose(a, b, rtol, atol, equal_nan);
      check_dtype(r, tj::kBool, "isclose");
      batch.add(r, Accuracy::Exact,
                fmt::format("isclose({}, rtol={}, atol={}, equal_nan={})", dname(t), rtol, atol,
                            equal_nan));
    }
  }
  TJ_CHECK_BATCH(batch);
  const Tensor x = tj::tensor<double>({1.0, kNaN, kInf});
  const Tensor y = tj::tensor<double>({1.0 + 1e-6, kNaN, kInf});
  CHECK(x.isclose(y).to_vector<bool>() == std::vector<bool>{true, false, true}); // PyTorch
  CHECK(tj::allclose(x, y, 1e-5, 1e-8, true));
  CHECK_FALSE(tj::allclose(x, y));
  CHECK_FALSE(tj::equal(x, x)); // NaN != NaN
  CHECK(tj::equal(tj::tensor<int64_t>({1, 2}), tj::tensor<int64_t>({1, 2})));
  CHECK_FALSE(tj::equal(tj::tensor<int64_t>({1, 2}), tj::tensor<int64_t>({1, 2, 3})));
  CHECK_THROWS_WITH(tj::isclose(x, tj::tensor<float>({1.f, 2.f, 3.f})),
                    "Double did not match Float");
}

TEST_CASE("integer division by zero throws ZeroDivisionError", "[oracle][errors]") {
  for (DType t : {tj::kUInt8, tj::kInt8, tj::kInt16, tj::kInt32, tj::kInt64}) {
    const Tensor x = make(special_values(t), {4, 4});
    const Tensor zero_somewhere = make(special_values(t), {4, 4}).t(); // has one 0
    const Tensor ok = make(special_values(t, true), {4, 4});
    for (auto [name, f] : std::initializer_list<std::pair<const char*, BinaryFn>>{
             {"floor_divide",
              [](const Tensor&a, const Tensor&b) { return tj::floor_divide(a, b); }},
             {"remainder", [](const Tensor&a, const Tensor&b) { return tj::remainder(a, b); }},
             {"fmod", [](const Tensor&a, const Tensor&b) { return tj::fmod(a, b); }}}) {
      INFO(name << " on " << dname(t));
      Tensor bad = f(x, zero_somewhere);
      CHECK_THROWS_WITH(tj::interp::evaluate(tj::detail::node_of(bad)),
                        Catch::StartsWith("ZeroDivisionError"));
      CHECK_THROWS_WITH(bad.eval(), Catch::StartsWith("ZeroDivisionError"));
      CHECK_THROWS_WITH(bad.eval(), Catch::StartsWith("ZeroDivisionError")); // still not computed
      CHECK_THROWS_WITH(f(x, tj::zeros({1}, tj::dtype(t))).eval(),
                        Catch::StartsWith("ZeroDivisionError"));
      // Constant operands fold at simplification time, with the same error.
      CHECK_THROWS_WITH(f(tj::full({3}, 7, tj::dtype(t)), tj::zeros({3}, tj::dtype(t))).eval(),
                        Catch::StartsWith("ZeroDivisionError"));
      // Both branches of where are computed, as in PyTorch.
      CHECK_THROWS_WITH(tj::where(zero_somewhere != 0, f(x, zero_somewhere), x).eval(),
                        Catch::StartsWith("ZeroDivisionError"));
      // A joint materialization fails whole; its other tensors compute afterwards.
      Tensor good = f(x, ok) + 1;
      CHECK_THROWS_WITH(tj::eval({good, bad}), Catch::StartsWith("ZeroDivisionError"));
      OracleBatch batch;
      batch.add(good, Accuracy::Exact, std::string(name) + " after a failed joint eval");
      TJ_CHECK_BATCH(batch);
    }
    CHECK_THROWS_WITH(x.floor_divide(int64_t{0}).eval(), Catch::StartsWith("ZeroDivisionError"));
    CHECK_THROWS_WITH(x.remainder(int64_t{0}).eval(), Catch::StartsWith("ZeroDivisionError"));
    CHECK_THROWS_WITH(x.fmod(int64_t{0}).eval(), Catch::StartsWith("ZeroDivisionError"));
    // True division and float operands do not throw.
    CHECK_NOTHROW((x / zero_somewhere).eval());
    CHECK_NOTHROW(x.floor_divide(0.0).eval());
    // An empty tensor divides nothing.
    CHECK_NOTHROW(make(Values{t, {}, {}}, {0, 3}).floor_divide(int64_t{0}).eval());
  }
}

TEST_CASE("float and integer semantics match values computed by PyTorch", "[oracle][pytorch]") {
  const Tolerance exact = tj::test::tolerance(tj::kFloat64, Accuracy::Exact);
  const Tolerance approx = tj::test::tolerance(tj::kFloat64, Accuracy::Transcendental);
  const Tensor x = tj::tensor<double>(
      {5.0, -5.0, 0.0, -0.0, 1.0, -1.0, kInf, 3.0, -7.0, 7.0, 2.5, -2.5, kNaN, 1e+300});
  const Tensor y = tj::tensor<double>(
      {kInf, kInf, 5.0, 5.0, 0.0, 0.0, 5.0, -5.0, 2.0, -2.0, 0.5, -0.75, 1.0, 3e-300});
  check_golden(tj::floor_divide(x, y),
               {0.0, -1.0, 0.0, -0.0, kInf, -kInf, kNaN, -1.0, -4.0, -4.0, 5.0, 3.0, kNaN, kInf},
               exact, "floor_divide");
  check_golden(tj::remainder(x, y),
               {5.0, kInf, 0.0, -0.0, kNaN, kNaN, kNaN, -2.0, 1.0, -1.0, 0.0, -0.25, kNaN,
                9.626317689605992e-301},
               exact, "remainder");
  check_golden(tj::fmod(x, y),
               {5.0, -5.0, 0.0, -0.0, kNaN, kNaN, kNaN, 3.0, -1.0, 1.0, 0.0, -0.25, kNaN,
                9.626317689605992e-301},
               exact, "fmod");
  check_golden(tj::atan2(x, y),
               {0.0, -0.0, 0.0, -0.0, 1.5707963267948966, -1.5707963267948966, 1.5707963267948966,
                2.601173153319209, -1.2924966677897853, 1.849095985800008, 1.373400766945016,
                -1.8622531212727638, kNaN, 1.5707963267948966},
               approx, "atan2");
  check_golden(tj::pow(x, y),
               {kInf, kInf, 0.0, -0.0, 1.0, 1.0, kInf, 0.00411522633744856, 49.0,
                0.02040816326530612, 1.5811388300841898, kNaN, kNaN, 1.0},
               approx, "pow");
  check_golden(tj::maximum(x, y),
               {kInf, kInf, 5.0, 5.0, 1.0, 0.0, kInf, 3.0, 2.0, 7.0, 2.5, -0.75, kNaN, 1e+300},
               exact, "maximum");
  check_golden(tj::minimum(x, y),
               {5.0, -5.0, 0.0, -0.0, 0.0, -1.0, 5.0, -5.0, -7.0, -2.0, 0.5, -2.5, kNaN, 3e-300},
               exact, "minimum");

  const Tensor u = tj::tensor<double>(
      {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, kNaN, kInf, -kInf, 3.7, -3.7, 1e-310, -1000.0});
  check_golden(u.round(),
               {-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, -0.0, kNaN, kInf, -kInf, 4.0, -4.0, 0.0, -1000.0},
               exact, "round");
  check_golden(u.trunc(),
               {-2.0, -1.0, -0.0, 0.0, 1.0, 2.0, -0.0, kNaN, kInf, -kInf, 3.0, -3.0, 0.0, -1000.0},
               exact, "trunc");
  check_golden(u.floor(),
               {-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, -0.0, kNaN, kInf, -kInf, 3.0, -4.0, 0.0, -1000.0},
               exact, "floor");
  check_golden(u.ceil(),
               {-2.0, -1.0, -0.0, 1.0, 2.0, 3.0, -0.0, kNaN, kInf, -kInf, 4.0, -3.0, 1.0, -1000.0},
               exact, "ceil");
  // PyTorch's sign is (0 < x) - (x < 0): 0 for NaN, +0 for -0.
  check_golden(u.sign(),
               {-1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0}, exact,
               "sign");
  check_golden(u.sigmoid(),
               {0.07585818002124355, 0.18242552380635635, 0.3775406687981454, 0.6224593312018546,
                0.8175744761936437, 0.9241418199787566, 0.5, kNaN, 1.0, 0.0, 0.9758729785823308,
                0.024127021417669196, 0.5, 0.0},
               approx, "sigmoid");
  check_golden(u.rsqrt(),
               {kNaN, kNaN, kNaN, 1.414213562373095, 0.8164965809277261, 0.6324555320336759, -kInf,
                kNaN, 0.0, kNaN, 0.5198752449100363, kNaN, 1.0000000000000014e+155, kNaN},
               approx, "rsqrt");
  // relu(-0.0) is -0.0 in PyTorch's scalar loop but +0.0 in its vectorized one: zeros' signs
  // are not compared.
  check_golden(u.relu(),
               {0.0, 0.0, 0.0, 0.5, 1.5, 2.5, -0.0, kNaN, kInf, 0.0, 3.7, 0.0, 1e-310, 0.0},
               {0.0, 0.0, false, false}, "relu");
  check_golden(u.abs(),
               {2.5, 1.5, 0.5, 0.5, 1.5, 2.5, 0.0, kNaN, kInf, kInf, 3.7, 3.7, 1e-310, 1000.0},
               exact, "abs");
  check_golden(u.erf(),
               {-0.999593047982555, -0.9661051464753108, -0.5204998778130465, 0.5204998778130465,
                0.9661051464753108, 0.999593047982555, -0.0, kNaN, 1.0, -1.0, 0.9999998328489421,
                -0.9999998328489421, 1.1283791670955e-310, -1.0},
               approx, "erf");
  check_golden(u.tanh(),
               {-0.9866142981514303, -0.9051482536448664, -0.46211715726000974, 0.46211715726000974,
                0.9051482536448664, 0.9866142981514303, -0.0, kNaN, 1.0, -1.0, 0.9987782412811312,
                -0.9987782412811312, 1e-310, -1.0},
               approx, "tanh");
  check_golden(u.expm1(),
               {-0.9179150013761012, -0.7768698398515702, -0.3934693402873666, 0.6487212707001282,
                3.481689070338065, 11.182493960703473, -0.0, kNaN, kInf, -1.0, 39.4473043600674,
                -0.9752764735296606, 1e-310, -1.0},
               approx, "expm1");
  check_golden(u.log1p(),
               {kNaN, kNaN, -0.6931471805599453, 0.4054651081081644, 0.9162907318741551,
                1.252762968495368, -0.0, kNaN, kInf, kNaN, 1.547562508716013, kNaN,
                1.00000000000005e-310, kNaN},
               approx, "log1p");
  check_golden(u.exp2(),
               {0.1767766952966369, 0.3535533905932738, 0.7071067811865476, 1.4142135623730951,
                2.8284271247461903, 5.656854249492381, 1.0, kNaN, kInf, 0.0, 12.99603834169977,
                0.07694652583405726, 1.0, 9.332636185032189e-302},
               approx, "exp2");
  check_golden(u.reciprocal(),
               {-0.4, -0.6666666666666666, -2.0, 2.0, 0.6666666666666666, 0.4, -kInf, kNaN, 0.0,
                -0.0, 0.27027027027027023, -0.27027027027027023, kInf, -0.001},
               exact, "reciprocal");
  check_golden(u.gelu(),
               {-0.015524163314440398, -0.10021080190328704, -0.15426876936299344,
                0.34573123063700656, 1.399789198096713, 2.4844758366855597, -0.0, kNaN, kInf, kNaN,
                3.699601140986134, -0.000398859013866415, 5e-311, -0.0},
               gelu_tolerance(tj::kFloat64), "gelu");
  check_golden(u.clamp(-1, 2),
               {-1.0, -1.0, -0.5, 0.5, 1.5, 2.0, -0.0, kNaN, 2.0, -1.0, 2.0, -1.0, 1e-310, -1.0},
               exact, "clamp(-1, 2)");

  const Tensor i = tj::tensor<int64_t>({7, -7, 7, -7, 0, 1, INT64_MIN, INT64_MAX, 100, -100});
  const Tensor j = tj::tensor<int64_t>({2, 2, -2, -2, 3, -1, 3, -3, -7, 7});
  check_golden(tj::floor_divide(i, j),
               std::vector<int64_t>{3, -4, -4, 3, 0, -1, -3074457345618258603, -3074457345618258603,
                                    -15, -15},
               "int64 floor_divide");
  check_golden(tj::remainder(i, j), std::vector<int64_t>{1, 1, -1, -1, 0, 0, 1, -2, -5, 5},
               "int64 remainder");
  check_golden(tj::fmod(i, j), std::vector<int64_t>{1, -1, 1, -1, 0, 0, -2, 1, 2, -2},
               "int64 fmod");
  check_golden(i / j,
               {3.5, -3.5, -3.5, 3.5, 0.0, -1.0, -3.0744574372442276e+18, -3.0744574372442276e+18,
                -14.285714149475098, -14.285714149475098},
               exact, "int64 true division (in float32)");
  check_golden(i & j, std::vector<int64_t>{2, 0, 6, -8, 0, 1, 0, 9223372036854775805, 96, 4},
               "int64 bitwise_and");
  check_golden(i ^ j,
               std::vector<int64_t>{5, -5, -7, 7, 3, -2, -9223372036854775805, -9223372036854775806,
                                    -99, -101},
               "int64 bitwise_xor");
  check_golden(tj::pow(tj::tensor<int64_t>({2, -2, 3, 0, 1, -1, -1, 5, 2}),
                       tj::tensor<int64_t>({10, 3, 40, 0, -5, -5, -4, -1, 63})),
               std::vector<int64_t>{1024, -8, -6289078614652622815, 1, 1, -1, 1, 0, INT64_MIN},
               "int64 pow");
  const Tensor i8 = tj::tensor<int64_t>({100, -100, 127, -128, 0, 5}, tj::dtype(tj::kInt8));
  check_golden(i8 + 1000, std::vector<int64_t>{76, -124, 103, 104, -24, -19}, "int8 + 1000");
  check_golden(i8 * 3, std::vector<int64_t>{44, -44, 125, -128, 0, 15}, "int8 * 3");
  check_golden(i8.floor_divide(int64_t{-1}), std::vector<int64_t>{-100, 100, -127, -128, 0, -5},
               "int8 // -1");
  check_golden(i8.abs(), std::vector<int64_t>{100, 100, 127, -128, 0, 5}, "abs(int8)");
  const Tensor u8 = tj::tensor<int64_t>({0, 1, 200, 255}, tj::dtype(tj::kUInt8));
  check_golden(u8 - 1, std::vector<int64_t>{255, 0, 199, 254}, "uint8 - 1");
  check_golden(u8 * 2, std::vector<int64_t>{0, 2, 144, 254}, "uint8 * 2");
  check_golden(-u8, std::vector<int64_t>{0, 255, 56, 1}, "-uint8");
  check_golden(~u8, std::vector<int64_t>{255, 254, 55, 0}, "~uint8");
  check_golden(u8.floor_divide(int64_t{7}), std::vector<int64_t>{0, 0, 28, 36}, "uint8 // 7");
  check_golden(u8.remainder(int64_t{7}), std::vector<int64_t>{0, 1, 4, 3}, "uint8 % 7");
  check_golden(u8 < -1, std::vector<int64_t>{1, 1, 1, 0}, "uint8 < -1 (-1 wraps to 255)");
  check_golden(u8 - tj::tensor<int64_t>({1, 2, -3, 100}, tj::dtype(tj::kInt8)),
               std::vector<int64_t>{-1, -1, 203, 155}, "uint8 - int8 (in int16)");
}

// ---- bugs these tests found, kept as regression tests ------------------------------------------

// A reshape that merges dimensions of a computed tensor, or of a permuted buffer, inside a larger
// expression once sent Scheduler::realize_group into an endless loop (it realized the Reshape's
// source and retried lowering the same Reshape, forever, allocating as it went). The checks run
// in child processes killed after a few seconds, so that a regression fails instead of hanging.
TEST_CASE("a reshape merging dims of a computed or permuted tensor inside an expression",
          "[oracle]") {
  auto body = [](std::function<Tensor()> build, std::string what,
                 Accuracy accuracy = Accuracy::Exact) {
    return [build, what, accuracy]() -> std::string {
      OracleBatch batch;
      batch.add(build(), accuracy, what);
      std::string msg;
      for (const auto& v : batch.run())
        if (!v.ok) msg += v.message + "\n";
      return msg;
    };
  };
  std::vector<float> v(60);
  for (size_t k = 0; k < v.size(); ++k)
    v[k] = static_cast<float>(k) * 0.5f - 7.0f;
  const Tensor x = tj::tensor<float>(v, {4, 5, 3});
  std::vector<std::function<std::string()>> bodies = {
      body([x] { return (x + 1).reshape({60}) * 2; }, "(x + 1).reshape({60}) * 2"),
      body(
          [x] {
            return x.permute({1, 0, 2}).reshape({20, 3}) + 1;
          },
          "x.permute({1, 0, 2}).reshape({20, 3}) + 1"),
      body([x] { return tj::sin(x).transpose(0, 2).reshape({-1}) - x.flatten(); },
           "sin(x).transpose(0, 2).reshape({-1}) - x.flatten()", Accuracy::Transcendental),
  };
  const auto outcomes = tj::test::run_isolated(bodies, 1.5);
  for (size_t k = 0; k < outcomes.size(); ++k) {
    INFO("case " << k << ": " << outcomes[k].message);
    CHECK(outcomes[k].ok());
  }
}

// The interpreter once converted int64 to float32/bfloat16 through double, which rounds twice:
// 2^60 + 2^36 + 1 becomes 2^60 + 2^36 in double, a tie that float32 rounds to even (2^60).
// PyTorch (static_cast<float>(int64_t)) and the JIT (sitofp) round once, to 2^60 + 2^37.
TEST_CASE("int64 to float32 rounds once in the interpreter", "[oracle][cast]") {
  const int64_t big = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
  const double want = static_cast<double>(static_cast<float>(big)); // 2^60 + 2^37
  const Tensor x = tj::tensor<int64_t>({big, -big}).to(tj::kFloat32);
  const tj::interp::HostArray e = tj::interp::evaluate(tj::detail::node_of(x));
  CHECK(x.to_vector<double>() == std::vector<double>{want, -want});
  CHECK(e.f == std::vector<double>{want, -want});
}

// Integer constants converted to a float dtype were once stored as double first, so an int64
// scalar above 2^53 rounded twice on its way to float32: float32_tensor + (2^60 + 2^36 + 1) gave
// 2^60 where PyTorch gives 2^60 + 2^37 (the interpreter agreed: both read the rounded constant).
TEST_CASE("int64 scalars convert to float32 with one rounding", "[oracle][cast]") {
  const int64_t big = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
  const double want = static_cast<double>(static_cast<float>(big));
  CHECK((tj::zeros({1}) + big).to_vector<double>() == std::vector<double>{want});
  CHECK(tj::full({1}, big, tj::dtype(tj::kInt64)).to(tj::kFloat32).to_vector<double>() ==
        std::vector<double>{want});
}

// Constants once kept the value they were given, not the value of their dtype (1000 for an int8
// constant, 0.1 for a float16 one), and the constant folder computed on those raw values while
// the interpreter and the kernels' parameters converted them first. int8_tensor.floor_divide(1000)
// (1000 is -24 in int8, as PyTorch wraps it) folded the decomposition's "divisor < 0" to false and
// computed 5 // -24 as 0 instead of -1; uint8_tensor.remainder(-1) (255) likewise; and
// full({2}, 0.1, float16) + 0.2 folded 0.1 + 0.2 in double (0.300048828125 in float16) where
// PyTorch and the interpreter add the float16 values (0.2998046875).
TEST_CASE("constants are folded as values of their dtype", "[oracle]") {
  const Tensor i8 = tj::tensor<int64_t>({5, -5, 100, 0}, tj::dtype(tj::kInt8));
  const Tensor u8 = tj::tensor<int64_t>({5, 0, 200, 255}, tj::dtype(tj::kUInt8));
  OracleBatch batch;
  batch.add(i8.floor_divide(int64_t{1000}), Accuracy::Exact, "int8 // 1000");
  batch.add(i8.remainder(int64_t{1000}), Accuracy::Exact, "int8 % 1000");
  batch.add(u8.floor_divide(int64_t{-1}), Accuracy::Exact, "uint8 // -1");
  batch.add(u8.remainder(int64_t{-1}), Accuracy::Exact, "uint8 % -1");
  batch.add(tj::full({2}, 0.1, tj::dtype(tj::kFloat16)) + 0.2, Accuracy::Exact,
            "full(0.1, float16) + 0.2");
  TJ_CHECK_BATCH(batch);
  check_golden(i8.floor_divide(int64_t{1000}), std::vector<int64_t>{-1, 0, -5, 0}, "int8 // 1000");
  check_golden(tj::full({2}, 0.1, tj::dtype(tj::kFloat16)) + 0.2, {0.2998046875, 0.2998046875},
               tj::test::tolerance(tj::kFloat16, Accuracy::Exact), "full(0.1, float16) + 0.2");
}

// The simplifier once rewrote x + 0 and x - c for any constant c equal to zero to x, but
// -0.0 + 0.0 and -0.0 - (-0.0) are +0.0 (PyTorch gives 0.). Only x + (-0.0) and x - (+0.0) are
// identities.
TEST_CASE("adding zero keeps IEEE signed zeros", "[oracle]") {
  const Tensor x = tj::tensor<double>({-0.0, 0.0, 1.5}, tj::dtype(tj::kFloat32));
  OracleBatch batch;
  batch.add(x + 0, Accuracy::Exact, "x + 0");
  batch.add(x + 0.0, Accuracy::Exact, "x + 0.0");
  batch.add(x - (-0.0), Accuracy::Exact, "x - (-0.0)");
  batch.add(0.0 + x, Accuracy::Exact, "0.0 + x");
  batch.add(x + (-0.0), Accuracy::Exact, "x + (-0.0)");
  batch.add(x - 0.0, Accuracy::Exact, "x - 0.0");
  TJ_CHECK_BATCH(batch);
  check_golden(x + 0, {0.0, 0.0, 1.5}, tj::test::tolerance(tj::kFloat32, Accuracy::Exact), "x + 0");
}
