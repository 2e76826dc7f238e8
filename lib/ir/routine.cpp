#include "lib/ir/routine.h"

#include <fmt/format.h>

#include <algorithm>

#include "tensorjit/error.h"

namespace tj::ir {
namespace {

// The result of a Gemm on operands of these shapes, or why there is none.
std::string gemm_mismatch(const NodePtr& a, const NodePtr& b, DType t, const Shape& s) {
  if (a->dtype != b->dtype || a->dtype != t)
    return fmt::format("operands are {} and {}, the result {}: all must agree",
                       short_dtype_name(a->dtype), short_dtype_name(b->dtype), short_dtype_name(t));
  if (t != kFloat32 && t != kFloat64) return "multiplies float32 or float64";
  if (a->ndim() < 2 || a->ndim() != b->ndim())
    return fmt::format("operands of ranks {} and {}: both must be the same, at least 2", a->ndim(),
                       b->ndim());
  const size_t r = a->shape.size();
  if (!std::equal(a->shape.begin(), a->shape.end() - 2, b->shape.begin()))
    return fmt::format("operands {} and {} differ in their batch dims", shape_str(a->shape),
                       shape_str(b->shape));
  if (a->shape[r - 1] != b->shape[r - 2])
    return fmt::format("operands {} and {}: the shared dims differ", shape_str(a->shape),
                       shape_str(b->shape));
  Shape want = a->shape;
  want.back() = b->shape.back();
  if (s != want) return fmt::format("the result's shape is {}", shape_str(want));
  return "";
}

} // namespace

std::optional<Routine> routine_named(std::string_view name) {
  for (int i = 0; i < kNumRoutines; ++i)
    if (kRoutineInfo[i].name == name) return static_cast<Routine>(i);
  return std::nullopt;
}

std::string call_mismatch(Routine r, const std::vector<NodePtr>& src, DType t, const Shape& s) {
  const int arity = info(r).arity;
  if (static_cast<int>(src.size()) != arity)
    return fmt::format("{} takes {} operands, got {}", name(r), arity, src.size());
  switch (r) {
  case Routine::Gemm:
    return gemm_mismatch(src[0], src[1], t, s);
  }
  return "an unknown routine";
}

NodePtr make_call(Routine r, std::vector<NodePtr> src) {
  DType t = src.at(0)->dtype;
  Shape s = src.at(0)->shape;
  switch (r) {
  case Routine::Gemm:
    if (src.size() == 2 && !s.empty() && !src[1]->shape.empty()) s.back() = src[1]->shape.back();
    break;
  }
  if (std::string why = call_mismatch(r, src, t, s); !why.empty())
    throw Error(fmt::format("internal error: Call {}: {}", name(r), why));
  return make_node(Op::Call, t, std::move(s), std::move(src), {static_cast<int64_t>(r)});
}

std::string_view grad_fn(const Node& n) {
  return n.op == Op::Call ? info(routine(n)).grad_fn : info(n.op).grad_fn;
}

} // namespace tj::ir
