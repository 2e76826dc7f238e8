// Differentiable building blocks the backward formulas share.
#pragma once
#include "lib/autograd/node.h"

namespace tj::autograd {

// g summed over the dims that broadcasting added or stretched to reach its
// shape from `shape`: the gradient of an input that was broadcast.
Tensor sum_to(const Tensor& g, const Shape& shape);

// A tensor of `sizes`, zero but for the strided view (strides, offset; in
// elements of its row-major layout) that holds g: the gradient of the input
// of a view op. The view must not overlap itself.
Tensor embed(const Tensor& g, const Shape& sizes, const std::vector<int64_t>& strides,
             int64_t offset);

// Records that `view` reads x's row-major layout through (strides, offset):
// its gradient is embedded there in zeros of x's shape.
void record_strided(const char* name, const Tensor& x, const Tensor& view,
                    const std::vector<int64_t>& strides, int64_t offset);

// The strided view (sizes, strides, offset) of x's row-major layout, as a
// new tensor: embed's adjoint.
Tensor strided_read(const Tensor& x, const Shape& sizes, const std::vector<int64_t>& strides,
                    int64_t offset);

// t's elements along d where idx says: a Gather node (ops.def). idx is int64, of t's rank, on
// t's device, and its values are known to lie in [0, t.size(d)). The gradient adds g where the
// elements came from; the node saves idx (freed by a backward without retain_graph).
Tensor gather_at(const Tensor& t, int64_t d, const Tensor& idx, const char* name);

// base with value (of idx's shape) written where idx says along d, or added there with
// `accumulate`: a Scatter node (ops.def), idx as gather_at's. The written places take value's
// gradient (gathered); base's gradient is g, but zero where values were written over. The node
// saves idx, as gather_at's does.
Tensor scatter_at(const Tensor& base, int64_t d, const Tensor& idx, const Tensor& value,
                  bool accumulate, const char* name);

// Records `out` as computed from `inputs` under `name` with no gradient: zeros of each input's
// shape and options flow back (a rounded quotient, an in-place comparison).
void record_zero_grads(const char* name, const std::vector<Tensor>& inputs, const Tensor& out);

// g of a reduced tensor (reduced dims dropped unless keepdim) brought back
// to the input's shape by broadcasting.
Tensor unreduce(const Tensor& g, const Shape& in, const std::vector<int64_t>& axes, bool keepdim);

} // namespace tj::autograd
