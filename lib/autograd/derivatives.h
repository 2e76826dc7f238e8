// The vector-Jacobian products of the elementwise primitives (ops.def), and
// the recording of the ops that compute them.
#pragma once
#include <utility>

#include "lib/autograd/node.h"
#include "lib/ir/op.h"

namespace tj::autograd {

// g * dy/dx for y = op(x).
Tensor unary_vjp(ir::Op op, const Tensor& g, const Tensor& x, const Tensor& y);
// The gradients of a and b for y = op(a, b), all of y's shape (broadcast).
std::pair<Tensor, Tensor> binary_vjp(ir::Op op, const Tensor& g, const Tensor& a, const Tensor& b,
                                     const Tensor& y);

// Records y = op(x) under the op table's grad_fn name (or `name`).
void record_unary(ir::Op op, const Tensor& x, const Tensor& y, const char* name = nullptr);
// Records y = op(a, b); a wrapped scalar operand is an undefined tensor's
// place taken by its constant (it never requires grad).
void record_binary(ir::Op op, const Tensor& a, const Tensor& b, const Tensor& y,
                   const char* name = nullptr);

} // namespace tj::autograd
