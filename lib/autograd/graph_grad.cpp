// ir::differentiate: gradients of a loaded graph. The graph is rebuilt
// through the differentiable ops from the storages asked for, so that the
// gradients come from the same rules as everywhere else.
#include <fmt/format.h>

#include <unordered_map>

#include "lib/autograd/formulas.h"
#include "lib/frontend/linalg_factor.h"
#include "lib/ir/routine.h"
#include "lib/ir/text.h"
#include "tensorjit/functions.h"
#include "tensorjit/indexing.h"
#include "tensorjit/ir.h"

namespace tj::ir {
namespace {

// A strided view of x's row-major layout that may broadcast (stride 0): the
// dims it broadcasts are read once and expanded, so that the read's adjoint
// (an embedding, which needs a view without overlaps) sums over them.
Tensor broadcast_read(const Tensor& x, const Shape& shape, const std::vector<int64_t>& strides,
                      int64_t offset) {
  Shape once = shape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (strides[d] == 0) once[d] = std::min<int64_t>(shape[d], 1);
  return autograd::strided_read(x, once, strides, offset).expand(shape);
}

// The op of node `n` applied to tensors (at least one requires grad).
Tensor apply_op(const Node& n, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  switch (n.op) {
  case Op::Neg:
    return x.neg();
  case Op::Abs:
    return x.abs();
  case Op::Floor:
    return x.floor();
  case Op::Ceil:
    return x.ceil();
  case Op::Round:
    return x.round();
  case Op::Trunc:
    return x.trunc();
  case Op::Sqrt:
    return x.sqrt();
  case Op::Recip:
    return x.reciprocal();
#define TJ_MATH_FN(name, op, grad_fn)                                                              \
  case Op::op:                                                                                     \
    return tj::name(x);
#include "tensorjit/elementwise_functions.def"
  case Op::Add:
    return x + in[1];
  case Op::Sub:
    return x - in[1];
  case Op::Mul:
    return x * in[1];
  case Op::Div:
    return x / in[1];
  case Op::Fmod:
    return fmod(x, in[1]);
  case Op::Pow:
    return pow(x, in[1]);
  case Op::Max:
    return maximum(x, in[1]);
  case Op::Min:
    return minimum(x, in[1]);
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints)                                              \
  case Op::op:                                                                                     \
    return tj::name(x, in[1]);
#include "tensorjit/elementwise_functions.def"
  case Op::Where:
    return where(x, in[1], in[2]);
  case Op::Cast:
    return x.to(n.dtype);
  case Op::ReduceSum:
    return x.sum(n.args, true);
  case Op::ReduceProd: {
    Tensor r = x;
    for (int64_t a : n.args)
      r = r.prod(a, true);
    return r;
  }
  case Op::ReduceMax:
    return x.amax(n.args, true);
  case Op::ReduceMin:
    return x.amin(n.args, true);
  case Op::ScanSum:
    return x.cumsum(n.args[0]);
  case Op::ScanProd:
    return x.cumprod(n.args[0]);
  case Op::ScanMax:
    return std::get<0>(x.cummax(n.args[0]));
  case Op::ScanMin:
    return std::get<0>(x.cummin(n.args[0]));
  case Op::ScanLogSumExp:
    return x.logcumsumexp(n.args[0]);
  case Op::LogAddExp:
    return logaddexp(x, in[1]);
  case Op::Reshape:
    return x.reshape(n.shape);
  case Op::Permute:
    return x.permute(n.args);
  case Op::Expand:
    return x.expand(n.shape);
  case Op::Slice: {
    Tensor r = x;
    for (size_t d = 0; d < n.shape.size(); ++d) {
      int64_t start = n.args[2 * d], step = n.args[2 * d + 1];
      const auto dim = static_cast<int64_t>(d);
      if (step < 0) { // a reversed walk: flip, then walk forward
        r = flip(r, {dim});
        start = x.size(dim) - 1 - start;
        step = -step;
      }
      r = r.slice(dim, start, start + std::max<int64_t>(n.shape[d] - 1, 0) * step + 1, step);
      if (n.shape[d] == 0) r = r.narrow(dim, 0, 0);
    }
    return r;
  }
  case Op::AsStrided:
    return broadcast_read(x, n.shape, {n.args.begin(), n.args.end() - 1}, n.args.back());
  case Op::Assign: {
    const size_t nd = static_cast<size_t>(in[1].dim());
    std::vector<int64_t> strides(n.args.begin(), n.args.begin() + static_cast<ptrdiff_t>(nd));
    int64_t offset = n.args[nd];
    Tensor mask = autograd::embed(ones_like(in[1]), n.shape, strides, offset).ne(0);
    return where(mask, autograd::embed(in[1], n.shape, strides, offset), x);
  }
  case Op::Gather:
    return gather(x, n.args[0], in[1]);
  case Op::Call: {
    const Routine r = routine(n);
    if (r == Routine::Gemm) return matmul(x.to(n.dtype), in[1].to(n.dtype)); // bfloat16: exact
    // lu: its frontend ops (det, slogdet) differentiate themselves; eig's results are complex
    if (r == Routine::Lu || r == Routine::Eig)
      throw Error(fmt::format("differentiate: Call {} has no gradient", name(r)));
    // The parts, each flattened after the batch dims, end to end: the Call's layout.
    std::vector<Tensor> flat;
    const int64_t batch = x.dim() - 2;
    for (const Tensor& p : detail::factor(r, in, routine_params(n), n.value)) {
      const Shape ps = p.sizes();
      Shape s(ps.begin(), ps.begin() + batch);
      s.push_back(numel(Shape(ps.begin() + batch, ps.end())));
      flat.push_back(p.reshape(s));
    }
    return cat(flat, batch);
  }
  case Op::Scatter:
    return autograd::scatter_at(x, n.args[0], in[1], in[2], n.args[1] != 0, "ScatterBackward0");
  default: // comparisons and logical ops: no gradient flows through them
    throw Error(fmt::format("differentiate: {} has no gradient", name(n.op)));
  }
}

} // namespace

Graph differentiate(const Graph& g, const std::string& output,
                    const std::vector<std::string>& wrt) {
  size_t out_index = g.output_names.size();
  for (size_t i = 0; i < g.output_names.size(); ++i)
    if (g.output_names[i] == output) out_index = i;
  if (out_index == g.output_names.size())
    throw Error(fmt::format("differentiate: no output named '{}' (outputs: {})", output,
                            fmt::join(g.output_names, ", ")));
  // The storages to differentiate, as leaves that require grad.
  std::unordered_map<const rt::Storage*, Tensor> leaves;
  std::vector<Tensor> inputs;
  for (const auto& name : wrt) {
    auto it = g.storages.find(name);
    if (it == g.storages.end())
      throw Error(fmt::format("differentiate: no storage named '{}'", name));
    if (!is_floating_point(it->second.scalar_type()))
      throw Error(fmt::format("differentiate: storage '{}' is {}; only floating point tensors "
                              "require gradients",
                              name, dtype_name(it->second.scalar_type())));
    Tensor leaf = it->second.detach().requires_grad_();
    leaves[resolve(detail::node_of(it->second))->storage.get()] = leaf;
    inputs.push_back(leaf);
  }

  std::unordered_map<const Node*, Tensor> value;
  std::vector<NodePtr> order = topological_order({detail::node_of(g.outputs[out_index])});
  for (const auto& n : order) {
    std::vector<Tensor> in;
    bool needs = false;
    for (const auto& s : n->src) {
      in.push_back(value.at(resolve(s).get()));
      needs |= in.back().requires_grad();
    }
    if (n->op == Op::Buffer && leaves.count(n->storage.get()))
      value[n.get()] =
          broadcast_read(leaves[n->storage.get()], n->shape, n->view.strides, n->view.offset);
    else if (!needs || grad_fn(*n).empty())
      // Nothing to differentiate (comparisons and logic have no gradient):
      // the replayed inputs hold the same values, so the node stands as it is.
      value[n.get()] = detail::wrap(n);
    else
      value[n.get()] = apply_op(*n, in);
  }
  Tensor y = value.at(resolve(detail::node_of(g.outputs[out_index])).get());
  if (!y.requires_grad())
    throw Error(fmt::format("differentiate: output '{}' does not depend on {}", output,
                            fmt::join(wrt, ", ")));
  if (y.dim() != 0) y = y.sum();
  std::vector<Tensor> grads = autograd::grad({y}, inputs, {}, true, false, true);
  Graph out = g;
  for (size_t i = 0; i < wrt.size(); ++i) {
    out.output_names.push_back("grad_" + wrt[i]);
    out.outputs.push_back(grads[i].defined() ? grads[i] : zeros_like(inputs[i]));
  }
  return out;
}

} // namespace tj::ir
