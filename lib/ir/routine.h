// The routines a Call node (ops.def) names: what each computes from which operands. The
// routine is a fact of the graph; which library performs it (cuBLAS, a model in the tests,
// kernels of our own) is the pipeline's choice (pipeline/library_calls.h).
#pragma once
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/ir/node.h"

namespace tj::ir {

enum class Routine : uint8_t {
  // (batch..., n, k) @ (batch..., k, m) -> (batch..., n, m): equal batch dims (a broadcast
  // batch is an Expand of the operand), float32 or float64, both operands of the result's dtype.
  Gemm,
};

struct RoutineInfo {
  std::string_view name; // in the text form: "%3 = Call gemm %1, %2 : ..."
  int arity;
  std::string_view grad_fn; // the frontend op's, for dumps; empty: not differentiable
};

inline constexpr RoutineInfo kRoutineInfo[] = {
    {"gemm", 2, "BmmBackward0"},
};
inline constexpr int kNumRoutines = static_cast<int>(std::size(kRoutineInfo));

constexpr const RoutineInfo& info(Routine r) { return kRoutineInfo[static_cast<int>(r)]; }
constexpr std::string_view name(Routine r) { return info(r).name; }
std::optional<Routine> routine_named(std::string_view name);

// The routine of a Call node.
inline Routine routine(const Node& call) { return static_cast<Routine>(call.args.at(0)); }

// Why `r` cannot take `src` to a result of dtype `t` and shape `s` (empty when it can): the
// rules the frontend follows, checked by the parser and the verifier.
std::string call_mismatch(Routine r, const std::vector<NodePtr>& src, DType t, const Shape& s);

// A Call of `r` on `src`: the result's dtype and shape follow from the operands, which must
// satisfy the routine's rules (an internal error otherwise).
NodePtr make_call(Routine r, std::vector<NodePtr> src);

// The grad_fn name of a node's op (or of its routine, for a Call): empty where no gradient
// flows.
std::string_view grad_fn(const Node& n);

} // namespace tj::ir
