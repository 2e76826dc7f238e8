// Differentiable building blocks the backward formulas share.
#pragma once
#include "autograd/node.h"

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

// g of a reduced tensor (reduced dims dropped unless keepdim) brought back
// to the input's shape by broadcasting.
Tensor unreduce(const Tensor& g, const Shape& in, const std::vector<int64_t>& axes, bool keepdim);

} // namespace tj::autograd
