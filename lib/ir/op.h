// The Op enum and its properties, all generated from ops.def.
#pragma once
#include <cstdint>
#include <string_view>

namespace tj::ir {

enum class Op : uint8_t {
#define TJ_OP(name, arity, cat, grad) name,
#include "lib/ir/ops.def"
#undef TJ_OP
};

enum class OpCategory : uint8_t {
  Leaf,
  Unary,
  Binary,
  Ternary,
  Cast,
  Reduce,
  Scan,
  Movement,
  Gather,
  Scatter,
  Mutation,
  Call,
  Complex
};

inline constexpr int kNumOps = 0
#define TJ_OP(name, arity, cat, grad) +1
#include "lib/ir/ops.def"
#undef TJ_OP
    ;

struct OpInfo {
  std::string_view name;
  int arity;
  OpCategory category;
  std::string_view grad_fn;
};

inline constexpr OpInfo kOpInfo[] = {
#define TJ_OP(name, arity, cat, grad) {#name, arity, OpCategory::cat, grad},
#include "lib/ir/ops.def"
#undef TJ_OP
};
static_assert(std::size(kOpInfo) == kNumOps);

constexpr const OpInfo& info(Op op) { return kOpInfo[static_cast<int>(op)]; }
constexpr std::string_view name(Op op) { return info(op).name; }
constexpr OpCategory category(Op op) { return info(op).category; }
constexpr bool is_leaf(Op op) { return category(op) == OpCategory::Leaf; }
constexpr bool is_movement(Op op) { return category(op) == OpCategory::Movement; }
constexpr bool is_reduce(Op op) { return category(op) == OpCategory::Reduce; }
constexpr bool is_scan(Op op) { return category(op) == OpCategory::Scan; }
constexpr bool is_alu(Op op) {
  auto c = category(op);
  return c == OpCategory::Unary || c == OpCategory::Binary || c == OpCategory::Ternary ||
         c == OpCategory::Cast;
}
// A write into a copy of its first input (or into that input's memory): performed by
// materialization before the kernels that read its result are scheduled.
constexpr bool is_write(Op op) {
  return category(op) == OpCategory::Scatter || category(op) == OpCategory::Mutation;
}
constexpr bool is_call(Op op) { return category(op) == OpCategory::Call; }
// Ops that materialization performs on their own, operands first, before scheduling the
// kernels that read them: writes and library calls. The scheduler never lowers them.
constexpr bool is_performed(Op op) { return is_write(op) || is_call(op); }
constexpr bool is_comparison(Op op) {
  return op == Op::CmpEq || op == Op::CmpNe || op == Op::CmpLt || op == Op::CmpLe;
}
// The binary op that combines two partial results of a reduction or a scan.
constexpr Op combine_op(Op reduce) {
  switch (reduce) {
  case Op::ReduceSum:
  case Op::ScanSum:
    return Op::Add;
  case Op::ReduceProd:
  case Op::ScanProd:
    return Op::Mul;
  case Op::ReduceMax:
  case Op::ScanMax:
    return Op::Max;
  case Op::ScanLogSumExp:
    return Op::LogAddExp;
  default:
    return Op::Min;
  }
}
// The C math library's name of a one- or two-argument float function (the
// double version: "exp"; float32 appends "f"), or null for other ops. Both
// backends call these under these names.
constexpr const char* libm_name(Op op) {
  switch (op) {
#define TJ_MATH_FN(name, op, grad_fn)                                                              \
  case Op::op:                                                                                     \
    return #name;
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints)                                              \
  case Op::op:                                                                                     \
    return #name;
#include "tensorjit/elementwise_functions.def"
  case Op::Pow:
    return "pow";
  default:
    return nullptr;
  }
}
// The ALU ops that take complex operands: the ones passes/lower_complex turns into real
// arithmetic on the parts (Abs of a complex value is its real magnitude; Where selects).
constexpr bool takes_complex(Op op) {
  switch (op) {
  case Op::Neg:
  case Op::Abs:
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
  case Op::Recip:
  case Op::Exp:
  case Op::Log:
  case Op::Log2:
  case Op::Log10:
  case Op::Pow:
  case Op::Sqrt:
  case Op::Sin:
  case Op::Cos:
  case Op::Tan:
  case Op::Sinh:
  case Op::Cosh:
  case Op::Tanh:
  case Op::Asin:
  case Op::Acos:
  case Op::Atan:
  case Op::Asinh:
  case Op::Acosh:
  case Op::Atanh:
  case Op::CmpEq:
  case Op::CmpNe:
  case Op::Where:
  case Op::Cast:
    return true;
  default:
    return false;
  }
}
// Leaves that are read through a strided view (Buffer, Iota, Philox).
constexpr bool has_view(Op op) { return op == Op::Buffer || op == Op::Iota || op == Op::Philox; }

} // namespace tj::ir
