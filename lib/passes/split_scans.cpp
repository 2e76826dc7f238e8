// split_scans: a long scan over few rows, split into segments that the CPU's threads scan apart.
#include "lib/passes/split_scans.h"

#include <fmt/format.h>

#include <limits>
#include <unordered_map>

#include "lib/frontend/graph_builders.h"
#include "tensorjit/config.h"
#include "tensorjit/error.h"

namespace tj::passes {
namespace {

using ir::Node;
using ir::NodePtr;
using ir::Op;

// A scan this long in this few rows leaves threads idle: one row is one thread's loop.
constexpr int64_t kLongScan = int64_t{1} << 18;
constexpr int64_t kFewRows = 8;
// Segments of 4096 to 65536 elements: long enough that the totals' pass and the scan of them
// cost little, short enough that a 16M-element vector makes 256 segments.
constexpr int64_t kMinSegment = int64_t{1} << 12, kMaxSegment = int64_t{1} << 16;

// The total of each segment of x along dim `inner` (kept, of length 1) under the scan's
// combination: a reduction, or for logcumsumexp log(sum(exp(x - m))) + m with m the segment's
// maximum where it is finite (0 where it is not: an all -inf segment sums to 0 and totals -inf,
// one holding +inf sums to inf; a NaN propagates either way).
NodePtr segment_totals(Op scan, DType t, const NodePtr& x, int64_t inner, const ir::Shape& shape) {
  auto reduce = [&](Op op, const NodePtr& v) { return ir::make_node(op, t, shape, {v}, {inner}); };
  switch (scan) {
  case Op::ScanSum:
    return reduce(Op::ReduceSum, x);
  case Op::ScanProd:
    return reduce(Op::ReduceProd, x);
  case Op::ScanMax:
    return reduce(Op::ReduceMax, x);
  case Op::ScanMin:
    return reduce(Op::ReduceMin, x);
  case Op::ScanLogSumExp: {
    const NodePtr m = reduce(Op::ReduceMax, x);
    const NodePtr inf = fe::constant(std::numeric_limits<double>::infinity(), t, {}, x->device);
    const NodePtr shift = fe::where(fe::binary(Op::CmpLt, fe::unary(Op::Abs, m), inf), m,
                                    fe::constant(0.0, t, {}, x->device));
    const NodePtr sum = reduce(Op::ReduceSum, fe::unary(Op::Exp, fe::binary(Op::Sub, x, shift)));
    return fe::binary(Op::Add, fe::unary(Op::Log, sum), shift);
  }
  default:
    throw Error(fmt::format("split_scans: {} is not a scan", ir::info(scan).name));
  }
}

class Splitter {
public:
  NodePtr rewrite(const NodePtr& in) {
    NodePtr n = ir::resolve(in);
    if (ir::is_leaf(n->op) || !n->loops) return n; // no scan below
    if (auto it = done_.find(n.get()); it != done_.end()) return it->second;
    std::vector<NodePtr> src;
    bool changed = false;
    for (const auto& s : n->src) {
      src.push_back(rewrite(s));
      changed |= src.back() != s;
    }
    NodePtr out = lifted(*n, src);
    if (!out) out = changed ? ir::with_sources(*n, std::move(src)) : n;
    if (ir::is_scan(n->op) && splits(*n)) {
      NodePtr y = split(out);
      if (y != out) {
        out = fe::reshape(y, n->shape);
        split_[out.get()] = y;
      }
    }
    // A rewritten node keeps the place the program built the original at, as simplify's do.
    ir::Site none = nullptr;
    if (out != n) out->site.compare_exchange_strong(none, n->site.load(std::memory_order_relaxed));
    return done_[n.get()] = out;
  }

private:
  // An elementwise op on split values (and constants) computed in their split shape, then
  // reshaped back: the kernel scanning the segments computes it too (a reshape between them
  // would make it a kernel of its own). Null where n is not one.
  NodePtr lifted(const Node& n, const std::vector<NodePtr>& src) {
    if (!ir::is_alu(n.op)) return nullptr;
    const ir::Shape* shape = nullptr;
    for (const auto& s : src) {
      auto it = split_.find(s.get());
      if (it != split_.end()) {
        if (shape && *shape != it->second->shape) return nullptr;
        shape = &it->second->shape;
      } else if (s->op != Op::Const || s->shape != n.shape) {
        return nullptr;
      }
    }
    if (!shape) return nullptr;
    std::vector<NodePtr> parts;
    for (const auto& s : src) {
      auto it = split_.find(s.get());
      parts.push_back(it != split_.end() ? it->second
                                         : fe::constant(s->value, s->dtype, *shape, s->device));
    }
    NodePtr y = ir::make_node(n.op, n.dtype, *shape, std::move(parts), n.args);
    NodePtr out = fe::reshape(y, n.shape);
    split_[out.get()] = y;
    return out;
  }

  // Whether the scan's steps may be combined in another order: integers, whose sums and
  // products wrap to the same bits in any order, and extrema; float64 sums, products and
  // logcumsumexps (float32's run in float64) unless config().ordered_scans keeps PyTorch's
  // order. A float32 cumsum adds in float64, whose
  // segment sums round to the same float32 as the running sum nearly always (all of 2^24
  // random normals); a float64 one may differ in its last bits (a cumprod of 2^20 factors near
  // 1: 5.7e-14 relative), and where partial results cancel, by more ([1, 1e17, -1e17] scans to
  // 1, 1e17, 0 in order; 1 + (1e17 - 1e17) is 1). Float32 accumulators (of 16-bit floats) stay
  // in order: their segment sums round to the next float16 too often (0.4% of a cumsum's).
  static bool reorderable(const Node& n) {
    return n.op == Op::ScanMax || n.op == Op::ScanMin || is_integral(n.dtype, true) ||
           (n.dtype == kFloat64 && !config().ordered_scans);
  }

  bool splits(const Node& n) const {
    if (!n.device.is_cpu() || is_complex(n.dtype)) return false;
    const int64_t len = n.shape[static_cast<size_t>(n.args[0])];
    return len >= kLongScan && n.numel() / len < kFewRows && reorderable(n);
  }

  // y = scan(x) along d, of length T * L, in the shape with d split into (T, L): the segments'
  // scans, the first as it is and each later one combined with the scan of the totals up to the
  // segment before it. n itself where d has no divisor in range.
  NodePtr split(const NodePtr& n) {
    const size_t d = static_cast<size_t>(n->args[0]);
    const int64_t len = n->shape[d];
    int64_t seg_len = kMaxSegment;
    while (seg_len >= kMinSegment && len % seg_len != 0)
      --seg_len;
    if (seg_len < kMinSegment) return n; // no divisor in range (a prime length)
    const int64_t segments = len / seg_len;
    ir::Shape split_shape = n->shape;
    split_shape[d] = segments;
    split_shape.insert(split_shape.begin() + static_cast<std::ptrdiff_t>(d) + 1, seg_len);
    const NodePtr x = fe::reshape(n->src[0], split_shape);
    const auto inner = static_cast<int64_t>(d) + 1;
    NodePtr seg = ir::make_node(n->op, n->dtype, split_shape, {x}, {inner});
    ir::Shape totals_shape = split_shape;
    totals_shape[d + 1] = 1;
    NodePtr totals = segment_totals(n->op, n->dtype, x, inner, totals_shape);
    NodePtr upto = ir::make_node(n->op, n->dtype, totals_shape, {totals}, {n->args[0]});
    // upto at the segment before: index max(t - 1, 0) along d, segment 0 taking its own scan.
    ir::View along{std::vector<int64_t>(totals_shape.size(), 0), 0};
    along.strides[d] = 1;
    NodePtr t =
        ir::make_node(Op::Iota, kInt64, totals_shape, {}, {}, {}, nullptr, along, n->device);
    auto int_const = [&](int64_t v) { return fe::constant(v, kInt64, {}, n->device); };
    NodePtr before = fe::binary(Op::Max, fe::binary(Op::Sub, t, int_const(1)), int_const(0));
    NodePtr carry = ir::make_node(Op::Gather, n->dtype, totals_shape, {upto, before}, {n->args[0]});
    return fe::where(fe::binary(Op::CmpEq, t, int_const(0)), seg,
                     fe::binary(ir::combine_op(n->op), carry, seg));
  }

  std::unordered_map<const Node*, NodePtr> done_;
  // Values computed split (scans, and elementwise ops of them): the reshape back, and the value
  // in the split shape.
  std::unordered_map<const Node*, NodePtr> split_;
};

} // namespace

std::vector<NodePtr> split_long_scans(const std::vector<NodePtr>& roots) {
  // Most graphs hold no scan: nothing to walk.
  bool any = false;
  for (const auto& r : roots)
    any |= r->loops;
  if (!any) return roots;
  Splitter s;
  std::vector<NodePtr> out;
  for (const auto& r : roots)
    out.push_back(s.rewrite(r));
  return out;
}

} // namespace tj::passes
