#include "lib/ir/routine.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "tensorjit/error.h"

namespace tj::ir {
namespace {

// The result of a Gemm on operands of these shapes, or why there is none.
std::string gemm_mismatch(const NodePtr& a, const NodePtr& b, DType t, const Shape& s) {
  if (a->ndim() < 2 || a->ndim() != b->ndim())
    return fmt::format("operands of ranks {} and {}: both must be the same, at least 2", a->ndim(),
                       b->ndim());
  const size_t r = a->shape.size();
  if (a->shape[r - 1] != b->shape[r - 2])
    return fmt::format("operands {} and {}: the shared dims differ", shape_str(a->shape),
                       shape_str(b->shape));
  Shape want = a->shape;
  want.back() = b->shape.back();
  if (s != want) return fmt::format("the result's shape is {}", shape_str(want));
  (void)t;
  return "";
}

// Why the operands of a factorization do not fit it (empty when they do).
std::string factor_mismatch(Routine r, const std::vector<Shape>& src) {
  const Shape& a = src[0];
  const int64_t m = a[a.size() - 2], n = a.back();
  const bool square = r == Routine::Lu || r == Routine::Solve || r == Routine::Inv ||
                      r == Routine::Cholesky || r == Routine::Eigh || r == Routine::Eig;
  if (square && m != n) return fmt::format("takes square matrices, got {}", shape_str(a));
  if (src.size() == 2 && src[1][src[1].size() - 2] != m)
    return fmt::format("operands {} and {}: the rows differ", shape_str(a), shape_str(src[1]));
  return "";
}

} // namespace

std::optional<Routine> routine_named(std::string_view name) {
  for (int i = 0; i < kNumRoutines; ++i)
    if (kRoutineInfo[i].name == name) return static_cast<Routine>(i);
  return std::nullopt;
}

Shape routine_batch(const Shape& first_operand) {
  return Shape(first_operand.begin(), first_operand.end() - 2);
}

std::vector<Shape> routine_parts(Routine r, const std::vector<Shape>& src,
                                 const std::vector<int64_t>& params) {
  const Shape& a = src.at(0);
  const int64_t m = a[a.size() - 2], n = a.back(), k = std::min(m, n);
  const int64_t rhs = src.size() > 1 ? src[1].back() : 0;
  switch (r) {
  case Routine::Gemm:
    return {};
  case Routine::Lu:
    return {{n, n}, {n}};
  case Routine::Solve:
    return {{n, rhs}};
  case Routine::Inv:
  case Routine::Cholesky:
    return {{n, n}};
  case Routine::Qr:
    if (params[0] == 1) return {{m, m}, {m, n}};
    if (params[0] == 2) return {{0}, {k, n}};
    return {{m, k}, {k, n}};
  case Routine::Svd:
    if (!params[1]) return {{k}};
    return params[0] ? std::vector<Shape>{{m, m}, {k}, {n, n}}
                     : std::vector<Shape>{{m, k}, {k}, {k, n}};
  case Routine::Eigh:
    return params[1] ? std::vector<Shape>{{n}, {n, n}} : std::vector<Shape>{{n}};
  case Routine::Eig:
    return params[0] ? std::vector<Shape>{{n}, {n}, {n, n}, {n, n}} : std::vector<Shape>{{n}, {n}};
  case Routine::Lstsq:
    if (params[0] == 0) return {{n, rhs}, {1}};
    if (params[0] == 1) return {{n, rhs}, {m > n ? rhs : 0}};
    return {{n, rhs}, {1}, {k}, {m > n ? rhs : 0}};
  }
  return {};
}

std::string call_mismatch(Routine r, const std::vector<NodePtr>& src,
                          const std::vector<int64_t>& params, DType t, const Shape& s) {
  const int arity = info(r).arity;
  if (static_cast<int>(src.size()) != arity)
    return fmt::format("{} takes {} operands, got {}", name(r), arity, src.size());
  if (params.size() != num_params(r))
    return fmt::format("{} takes {} attributes, got {}", name(r), num_params(r), params.size());
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i] < 0 || params[i] > info(r).limits[i])
      return fmt::format("'{}' is 0..{}, got {}", info(r).params[i], info(r).limits[i], params[i]);
  // A product of bfloat16 operands into float32 (a library's dot products) is the one exception.
  const bool pairs = r == Routine::Gemm && t == kFloat32 && src.at(0)->dtype == kBFloat16;
  for (const auto& x : src)
    if (x->dtype != (pairs ? kBFloat16 : t))
      return fmt::format("an operand is {}, the result {}: all must agree{}",
                         short_dtype_name(x->dtype), short_dtype_name(t),
                         r == Routine::Gemm ? " (or be bfloat16 for float32)" : "");
  // Complex matrices factor as LAPACK's c/z routines do (a complex product is four real ones).
  const bool complex_ok = r != Routine::Gemm;
  if (t != kFloat32 && t != kFloat64 && !(complex_ok && is_complex(t)))
    return complex_ok ? "computes in float32, float64, complex64 or complex128"
                      : "computes in float32 or float64";
  for (const auto& x : src)
    if (x->ndim() < 2 || x->ndim() != src[0]->ndim())
      return fmt::format("operands of ranks {} and {}: both must be the same, at least 2",
                         src[0]->ndim(), x->ndim());
  const Shape batch = routine_batch(src[0]->shape);
  for (const auto& x : src)
    if (routine_batch(x->shape) != batch)
      return fmt::format("operands {} and {} differ in their batch dims", shape_str(src[0]->shape),
                         shape_str(x->shape));
  if (r == Routine::Gemm) return gemm_mismatch(src[0], src[1], t, s);
  std::vector<Shape> shapes;
  for (const auto& x : src)
    shapes.push_back(x->shape);
  if (std::string why = factor_mismatch(r, shapes); !why.empty()) return why;
  int64_t total = 0;
  for (const Shape& p : routine_parts(r, shapes, params))
    total += numel(p);
  Shape want = batch;
  want.push_back(total);
  if (s != want) return fmt::format("the result's shape is {}", shape_str(want));
  return "";
}

NodePtr make_call(Routine r, std::vector<NodePtr> src, std::vector<int64_t> params, Scalar value) {
  const DType t = r == Routine::Gemm && src.at(0)->dtype == kBFloat16 ? kFloat32 : src.at(0)->dtype;
  Shape s;
  if (r == Routine::Gemm) {
    s = src[0]->shape;
    if (src.size() == 2 && !s.empty() && !src[1]->shape.empty()) s.back() = src[1]->shape.back();
  } else if (src[0]->ndim() >= 2 && params.size() == num_params(r)) {
    std::vector<Shape> shapes;
    for (const auto& x : src)
      shapes.push_back(x->shape);
    s = routine_batch(src[0]->shape);
    int64_t total = 0;
    if (factor_mismatch(r, shapes).empty())
      for (const Shape& p : routine_parts(r, shapes, params))
        total += numel(p);
    s.push_back(total);
  }
  if (std::string why = call_mismatch(r, src, params, t, s); !why.empty())
    throw Error(fmt::format("internal error: Call {}: {}", name(r), why));
  std::vector<int64_t> args{static_cast<int64_t>(r)};
  args.insert(args.end(), params.begin(), params.end());
  return make_node(Op::Call, t, std::move(s), std::move(src), std::move(args), value);
}

std::string_view grad_fn(const Node& n) {
  return n.op == Op::Call ? info(routine(n)).grad_fn : info(n.op).grad_fn;
}

} // namespace tj::ir
