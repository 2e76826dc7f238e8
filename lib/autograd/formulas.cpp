// Differentiable building blocks the backward formulas share.
#include "lib/autograd/formulas.h"

#include <algorithm>
#include <numeric>

#include "lib/frontend/graph_builders.h"
#include "lib/ir/shape.h"
#include "tensorjit/functions.h"

namespace tj::autograd {

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.sizes() == shape) return g;
  const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < g.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.size(d) != 1)) dims.push_back(d);
  Tensor s = dims.empty() ? g : g.sum(dims, true);
  return s.reshape(shape);
}

namespace {
// The dims of a view in memory order when it covers all `numel` elements of
// its row-major layout exactly once from offset 0 (a permutation of a
// reshape); empty otherwise.
std::optional<std::vector<int64_t>> dense_order(const Shape& sizes,
                                                const std::vector<int64_t>& strides, int64_t offset,
                                                int64_t numel) {
  if (offset != 0 || ir::numel(sizes) != numel) return std::nullopt;
  std::vector<int64_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  int64_t expect = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (sizes[*it] == 1) continue;
    if (strides[*it] != expect) return std::nullopt;
    expect *= sizes[*it];
  }
  return order;
}
} // namespace

Tensor embed(const Tensor& g, const Shape& sizes, const std::vector<int64_t>& strides,
             int64_t offset) {
  // A permutation and a reshape (view, transpose, squeeze, ...) move no element off its place.
  if (auto order = dense_order(g.sizes(), strides, offset, ir::numel(sizes)))
    return g.permute(*order).reshape(sizes);
  ir::NodePtr v = detail::node_of(g);
  std::vector<int64_t> args(strides);
  args.push_back(offset);
  args.push_back(0); // into a copy of the zeros
  ir::NodePtr zero = fe::constant(0, v->dtype, sizes, v->device);
  Tensor out = detail::wrap(ir::make_node(ir::Op::Assign, v->dtype, sizes, {zero, v}, args));
  record("AsStridedScatterBackward0", {g}, {out}, {},
         [vs = g.sizes(), strides, offset](const std::vector<Tensor>& grads,
                                           const std::vector<Tensor>&) {
           return std::vector<Tensor>{strided_read(grads[0], vs, strides, offset)};
         });
  return out;
}

void record_strided(const char* name, const Tensor& x, const Tensor& view,
                    const std::vector<int64_t>& strides, int64_t offset) {
  record(name, {x}, {view}, {},
         [in = x.sizes(), strides, offset](const std::vector<Tensor>& grads,
                                           const std::vector<Tensor>&) {
           return std::vector<Tensor>{embed(grads[0], in, strides, offset)};
         });
}

Tensor strided_read(const Tensor& x, const Shape& sizes, const std::vector<int64_t>& strides,
                    int64_t offset) {
  Tensor out = detail::wrap(fe::as_strided(detail::node_of(x), sizes, strides, offset));
  record_strided("AsStridedBackward0", x, out, strides, offset);
  return out;
}

Tensor gather_at(const Tensor& t, int64_t d, const Tensor& idx, const char* name) {
  Tensor out = detail::wrap(ir::make_node(ir::Op::Gather, t.dtype(), idx.sizes(),
                                          {detail::node_of(t), detail::node_of(idx)}, {d}));
  // The index is saved, as PyTorch saves it: a backward without retain_graph frees it.
  record(name, {t}, {out}, {idx},
         [in = t.sizes(), d](const std::vector<Tensor>& g, const std::vector<Tensor>& saved) {
           return std::vector<Tensor>{scatter_at(zeros(in, g[0].options()), d, saved[0], g[0], true,
                                                 "ScatterAddBackward0")};
         });
  return out;
}

Tensor scatter_at(const Tensor& base, int64_t d, const Tensor& idx, const Tensor& value,
                  bool accumulate, const char* name) {
  Tensor out = detail::wrap(
      ir::make_node(ir::Op::Scatter, base.dtype(), base.sizes(),
                    {detail::node_of(base), detail::node_of(idx), detail::node_of(value)},
                    {d, accumulate ? 1 : 0}));
  record(name, {base, value}, {out}, {idx},
         [d, accumulate](const std::vector<Tensor>& g, const std::vector<Tensor>& saved) {
           const Tensor& idx = saved[0];
           Tensor kept = accumulate ? g[0]
                                    : scatter_at(g[0], d, idx, zeros(idx.sizes(), g[0].options()),
                                                 false, "ScatterBackward0");
           return std::vector<Tensor>{kept, gather_at(g[0], d, idx, "GatherBackward0")};
         });
  return out;
}

void record_zero_grads(const char* name, const std::vector<Tensor>& inputs, const Tensor& out) {
  std::vector<std::pair<Shape, TensorOptions>> like;
  for (const Tensor& x : inputs)
    like.emplace_back(x.sizes(), x.options());
  record(name, inputs, {out}, {}, [like](const std::vector<Tensor>&, const std::vector<Tensor>&) {
    std::vector<Tensor> zero;
    for (const auto& [shape, options] : like)
      zero.push_back(zeros(shape, options));
    return zero;
  });
}

Tensor unreduce(const Tensor& g, const Shape& in, const std::vector<int64_t>& axes, bool keepdim) {
  Tensor k = g;
  if (!keepdim) {
    Shape kept = in;
    for (int64_t a : axes)
      kept[a] = 1;
    k = g.reshape(kept);
  }
  return k.expand(in);
}

} // namespace tj::autograd
