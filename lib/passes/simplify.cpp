// Constant folding and algebraic identities, bottom-up with memoization.
#include "lib/passes/simplify.h"

#include <cmath>
#include <unordered_map>

#include "lib/ir/scalar_semantics.h"
#include "tensorjit/error.h"

namespace tj::passes {

using ir::NodePtr;
using ir::Op;
using ir::Site;

namespace {

// A constant zero that leaves x unchanged when added (negative) or subtracted.
bool is_zero(const NodePtr& n, DType t, bool negative) {
  if (is_complex(t)) return false; // the imaginary part's zero has a sign too
  if (n->op != Op::Const || n->value.is_bool() || n->value.to_double() != 0.0) return false;
  return !is_floating_point(t) || std::signbit(n->value.to_double()) == negative;
}

bool is_const(const NodePtr& n, double v) {
  return n->op == Op::Const && !n->value.is_bool() && n->value.to_double() == v &&
         n->value.imag() == 0.0;
}

class Simplifier {
public:
  NodePtr run(const NodePtr& in) {
    NodePtr n = ir::resolve(in);
    if (auto it = memo_.find(n.get()); it != memo_.end()) return it->second;
    NodePtr out = rewrite(n);
    // A rewritten node keeps the place the program built the original at.
    Site none = nullptr;
    out->site.compare_exchange_strong(none, n->site.load(std::memory_order_relaxed));
    memo_.emplace(n.get(), out);
    return out;
  }

private:
  NodePtr rewrite(const NodePtr& n) {
    if (ir::is_leaf(n->op)) return n;
    std::vector<NodePtr> src;
    bool changed = false, all_const = true;
    for (const auto& s : n->src) {
      src.push_back(run(s));
      changed |= src.back() != s;
      all_const &= src.back()->op == Op::Const;
    }
    // Movement of a constant is the constant at the new shape.
    if (ir::is_movement(n->op) && all_const)
      return ir::make_const(src[0]->value, n->dtype, n->shape, n->device);
    // Complex arithmetic is folded as pairs, after passes/lower_complex.
    if (ir::is_alu(n->op) && all_const && !n->complex)
      return ir::make_const(fold_constant(n->op, n->dtype, src), n->dtype, n->shape, n->device);
    if (NodePtr id = identity(n, src)) return id;
    if (!changed) return n;
    return ir::with_sources(*n, std::move(src));
  }

  // The simpler equal node for algebraic identities, or null.
  NodePtr identity(const NodePtr& n, const std::vector<NodePtr>& s) {
    switch (n->op) {
    case Op::Add:
      // For floats only -0 is additive identity: -0 + +0 is +0.
      if (is_zero(s[1], n->dtype, true)) return s[0];
      if (is_zero(s[0], n->dtype, true)) return s[1];
      break;
    case Op::Sub:
      if (is_zero(s[1], n->dtype, false)) return s[0];
      break;
    case Op::Mul:
      // Complex products and quotients by 1 or 0 are not identities: (inf + 0j) * 1 is
      // inf + nanj, as the parts' arithmetic gives it.
      if (is_complex(n->dtype)) break;
      if (is_const(s[1], 1)) return s[0];
      if (is_const(s[0], 1)) return s[1];
      if (!is_floating_point(n->dtype) && (is_const(s[0], 0) || is_const(s[1], 0)))
        return ir::make_const(0, n->dtype, n->shape, n->device);
      break;
    case Op::Div:
      if (!is_complex(n->dtype) && is_const(s[1], 1)) return s[0];
      break;
    case Op::Neg:
      if (s[0]->op == Op::Neg) return run(s[0]->src[0]);
      break;
    case Op::Not:
      if (s[0]->op == Op::Not) return run(s[0]->src[0]);
      break;
    case Op::Where:
      if (s[0]->op == Op::Const) return s[0]->value.to_bool() ? s[1] : s[2];
      if (s[1] == s[2]) return s[1];
      break;
    case Op::Cast:
      if (s[0]->dtype == n->dtype) return s[0];
      break;
    default:
      break;
    }
    return nullptr;
  }

  std::unordered_map<const ir::Node*, NodePtr> memo_;
};

} // namespace

Scalar fold_constant(Op op, DType out, const std::vector<NodePtr>& src) {
  const Scalar& a = src[0]->value;
  DType in = src[0]->dtype;
  if (op == Op::Cast) return ir::to_dtype(a, out);
  if (op == Op::Where) return src[0]->value.to_bool() ? src[1]->value : src[2]->value;
  const Scalar& b = src.size() > 1 ? src[1]->value : a;
  if (ir::is_comparison(op)) {
    return is_floating_point(in) ? Scalar(ir::eval_compare_float(op, a.to_double(), b.to_double()))
                                 : Scalar(ir::eval_compare_int(op, a.to_int(), b.to_int()));
  }
  if (is_floating_point(out))
    return Scalar(ir::round_to_dtype(ir::eval_float(op, a.to_double(), b.to_double()), out));
  bool div0 = false;
  int64_t r = ir::eval_int(op, out, a.to_int(), b.to_int(), &div0);
  if (div0) throw Error("ZeroDivisionError");
  return out == kBool ? Scalar(r != 0) : Scalar(r);
}

std::vector<NodePtr> simplify(const std::vector<NodePtr>& roots) {
  Simplifier s;
  std::vector<NodePtr> out;
  out.reserve(roots.size());
  for (const auto& r : roots)
    out.push_back(s.run(r));
  return out;
}

} // namespace tj::passes
