// Builders of tensor-graph nodes with broadcasting and view folding.
//
// These work on nodes, below the Tensor API: operands already have the dtype
// the op computes in. Movement ops on leaves fold into the leaf's view, so a
// chain of views over memory is one Buffer node, as PyTorch's views are.
#pragma once
#include <optional>

#include "lib/ir/node.h"

namespace tj::fe {

using ir::NodePtr;
using ir::Op;
using ir::Shape;

// A constant on `device`; binary() and where() move constants to their other
// operands' device, so a constant combined with a value needs no device.
NodePtr constant(const Scalar& v, DType t, const Shape& shape = {}, Device device = kCPU);
// PyTorch's error for operands on two devices.
[[noreturn]] void throw_device_mismatch(Device a, Device b);
// To a complex dtype from a real one: a zero imaginary part. A complex value to a real dtype
// only with `discard_imag` (Tensor::to, a copy into real memory): its real part, as PyTorch
// does; otherwise that is an op given a complex tensor where it takes real ones, an error.
NodePtr cast(const NodePtr& x, DType t, bool discard_imag = false);
// PyTorch's "<op>_cpu" not implemented for 'ComplexFloat' where `t` is complex and `op` has no
// complex meaning in passes/lower_complex.
void check_complex_op(Op op, DType t);
NodePtr unary(Op op, const NodePtr& x);
// Broadcasts the operands; comparison ops give bool, others the operands' dtype.
NodePtr binary(Op op, NodePtr a, NodePtr b);
// binary(op, cast(a, t), cast(b, t)), a constant operand (a scalar) made in t and the result's
// shape at once: one node where the cast and the broadcast would make two more.
NodePtr binary_as(Op op, const NodePtr& a, const NodePtr& b, DType t);
NodePtr where(NodePtr cond, NodePtr a, NodePtr b);

NodePtr reshape(const NodePtr& x, const Shape& shape);
NodePtr permute(const NodePtr& x, const std::vector<int64_t>& perm);
// The sizes expand(`want`) gives a tensor of sizes `have` (-1 keeps a size),
// with PyTorch's errors.
Shape expanded_shape(const Shape& have, const Shape& want, DType t);
// Broadcasts to `shape` (leading dims may be added); PyTorch's expand errors.
NodePtr expand(const NodePtr& x, const Shape& shape);
// The strided view (sizes, strides, offset) of x seen as contiguous storage:
// folds into a leaf's view, else an AsStrided node.
NodePtr as_strided(const NodePtr& x, const Shape& sizes, const std::vector<int64_t>& strides,
                   int64_t offset);
// x[start:stop:step] along one dim; start/stop already clamped, step != 0.
NodePtr slice(const NodePtr& x, int64_t dim, int64_t start, int64_t stop, int64_t step);
// Movement node `n` (ops.def) applied to `src` in its operand's place, through the builders
// above: a view of a leaf stays a leaf.
NodePtr moved(const ir::Node& n, const NodePtr& src);
// The real values `re` and `im` (one shape S, one dtype) interleaved: shape S + [2], (re, im)
// at each element, as complex memory lays out a complex value's parts.
NodePtr interleave(const NodePtr& re, const NodePtr& im);

} // namespace tj::fe
