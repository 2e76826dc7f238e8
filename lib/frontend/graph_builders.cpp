// Node builders: broadcasting, casts, and movement ops folded into leaf views.
#include "lib/frontend/graph_builders.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "tensorjit/error.h"

namespace tj::fe {
namespace {

NodePtr with_view(const NodePtr& leaf, Shape shape, ir::View view) {
  return ir::make_node(leaf->op, leaf->dtype, std::move(shape), {}, leaf->args, leaf->value,
                       leaf->storage, std::move(view), leaf->device);
}

// Puts the operands of one op on one device. A 0-d CPU value (a scalar
// operand, or a 0-d tensor) joins a computation on another device as a kernel
// parameter, as in PyTorch; any other mix is PyTorch's error.
void align_devices(std::initializer_list<NodePtr*> operands) {
  auto movable = [](const NodePtr& n) { return n->device.is_cpu() && n->shape.empty(); };
  std::optional<Device> target;
  for (NodePtr* p : operands)
    if (!movable(*p)) {
      if (target && *target != (*p)->device) throw_device_mismatch(*target, (*p)->device);
      target = (*p)->device;
    }
  if (!target) return; // all on the CPU
  for (NodePtr* p : operands) {
    const NodePtr& n = *p;
    if (n->device == *target) continue;
    Scalar v = n->op == Op::Const ? n->value : detail::wrap(n).item();
    *p = constant(v, n->dtype, n->shape, *target);
  }
}

} // namespace

void throw_device_mismatch(Device a, Device b) {
  if (a.is_cpu()) std::swap(a, b); // PyTorch names the accelerator first
  throw Error(fmt::format("Expected all tensors to be on the same device, but found at least two "
                          "devices, {} and {}!",
                          a.str(), b.str()));
}

NodePtr constant(const Scalar& v, DType t, const Shape& shape, Device device) {
  return ir::make_const(v, t, shape, device);
}

NodePtr cast(const NodePtr& x, DType t, bool discard_imag) {
  if (x->dtype == t) return x;
  if (is_complex(x->dtype) && !is_complex(t) && !discard_imag)
    throw Error(fmt::format("not implemented for '{}': the op takes real values (take real(), "
                            "imag() or abs() of a complex tensor first)",
                            cpp_type_name(x->dtype)));
  if (x->op == Op::Const) return constant(x->value, t, x->shape, x->device);
  return ir::make_node(Op::Cast, t, x->shape, {x});
}

void check_complex_op(Op op, DType t) {
  if (!is_complex(t) || ir::takes_complex(op)) return;
  std::string kernel(ir::name(op));
  for (char& c : kernel)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (kernel.starts_with("cmp")) kernel.erase(0, 3); // CmpLt: PyTorch's lt_cpu
  throw Error(fmt::format("\"{}_cpu\" not implemented for '{}'", kernel, cpp_type_name(t)));
}

NodePtr unary(Op op, const NodePtr& x) {
  check_complex_op(op, x->dtype);
  // A complex value's Abs is its magnitude, a real number.
  DType out = op == Op::Not ? kBool : op == Op::Abs ? real_part_dtype(x->dtype) : x->dtype;
  return ir::make_node(op, out, x->shape, {x});
}

namespace {

// binary() of operands on one device, to their broadcast shape.
NodePtr binary_to(Op op, NodePtr a, NodePtr b, Shape shape) {
  a = expand(a, shape);
  b = expand(b, shape);
  DType out = ir::is_comparison(op) ? kBool : a->dtype;
  // Moved in, not copied from an initializer list: no reference counts taken and dropped.
  std::vector<NodePtr> src;
  src.reserve(2);
  src.push_back(std::move(a));
  src.push_back(std::move(b));
  return ir::make_node(op, out, std::move(shape), std::move(src));
}

} // namespace

NodePtr binary(Op op, NodePtr a, NodePtr b) {
  check_complex_op(op, a->dtype);
  align_devices({&a, &b});
  Shape shape = ir::broadcast_shapes(a->shape, b->shape);
  return binary_to(op, std::move(a), std::move(b), std::move(shape));
}

NodePtr binary_as(Op op, const NodePtr& a, const NodePtr& b, DType t) {
  if (a->op != Op::Const && b->op != Op::Const) return binary(op, cast(a, t), cast(b, t));
  if (a->device != b->device || is_complex(a->dtype) != is_complex(t) ||
      is_complex(b->dtype) != is_complex(t))
    return binary(op, cast(a, t), cast(b, t)); // the checks and errors of the long way
  check_complex_op(op, t);                     // before the shapes, as binary() checks
  Shape shape = ir::broadcast_shapes(a->shape, b->shape);
  auto operand = [&](const NodePtr& x) {
    return x->op == Op::Const ? constant(x->value, t, shape, x->device) : cast(x, t);
  };
  NodePtr x = operand(a), y = operand(b);
  return binary_to(op, std::move(x), std::move(y), std::move(shape));
}

NodePtr where(NodePtr cond, NodePtr a, NodePtr b) {
  align_devices({&cond, &a, &b});
  // Operands of one shape or of none (scalars: relu's where(x < 0, 0, x)) broadcast to that
  // shape; others as PyTorch checks them, the condition's and a's shapes first.
  const Shape* one = nullptr;
  bool alike = true;
  for (const NodePtr* x : {&cond, &a, &b}) {
    const Shape& s = (*x)->shape;
    if (s.empty()) continue;
    if (!one) one = &s;
    alike &= *one == s;
  }
  Shape shape = !alike ? ir::broadcast_shapes(ir::broadcast_shapes(cond->shape, a->shape), b->shape)
                : one  ? *one
                       : Shape{};
  cond = expand(cond, shape);
  a = expand(a, shape);
  b = expand(b, shape);
  DType out = a->dtype;
  return ir::make_node(Op::Where, out, std::move(shape),
                       {std::move(cond), std::move(a), std::move(b)});
}

NodePtr reshape(const NodePtr& x, const Shape& shape) {
  if (x->shape == shape) return x;
  if (x->op == Op::Const) return constant(x->value, x->dtype, shape, x->device);
  if (ir::has_view(x->op)) {
    if (auto st = ir::view_strides(x->shape, x->view.strides, shape))
      return with_view(x, shape, ir::View{*st, x->view.offset});
  }
  if (x->op == Op::Reshape) return reshape(x->src[0], shape); // reshape of reshape
  return ir::make_node(Op::Reshape, x->dtype, shape, {x}, shape);
}

NodePtr permute(const NodePtr& x, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity &= perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  Shape shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    shape[i] = x->shape[perm[i]];
  if (x->op == Op::Const) return constant(x->value, x->dtype, shape, x->device);
  if (ir::has_view(x->op)) {
    ir::View v{std::vector<int64_t>(perm.size()), x->view.offset};
    for (size_t i = 0; i < perm.size(); ++i)
      v.strides[i] = x->view.strides[perm[i]];
    return with_view(x, shape, v);
  }
  return ir::make_node(Op::Permute, x->dtype, shape, {x}, perm);
}

Shape expanded_shape(const Shape& have, const Shape& want, DType t) {
  if (want.size() < have.size())
    throw Error(fmt::format("expand({}{{[{}]}}, size=[{}]): the number of sizes provided ({}) "
                            "must be greater or equal to the number of dimensions in the tensor "
                            "({})",
                            legacy_type_name(t), fmt::join(have, ", "), fmt::join(want, ", "),
                            want.size(), have.size()));
  size_t lead = want.size() - have.size();
  Shape target(want);
  for (size_t i = 0; i < want.size(); ++i) {
    if (i < lead) {
      if (want[i] < 0)
        throw Error(fmt::format("The expanded size of the tensor ({}) isn't allowed in a leading, "
                                "non-existing dimension {}",
                                want[i], i));
      continue;
    }
    int64_t h = have[i - lead];
    if (want[i] == -1)
      target[i] = h;
    else if (h != want[i] && h != 1)
      throw Error(fmt::format("The expanded size of the tensor ({}) must match the existing size "
                              "({}) at non-singleton dimension {}.  Target sizes: [{}].  Tensor "
                              "sizes: [{}]",
                              want[i], h, i, fmt::join(want, ", "), fmt::join(have, ", ")));
    else if (want[i] < 0)
      throw Error(fmt::format("Trying to create tensor with negative dimension {}: {}", want[i],
                              ir::shape_str(want)));
  }
  return target;
}

NodePtr expand(const NodePtr& x, const Shape& shape) {
  if (x->shape == shape) return x;
  // A scalar constant taken into a shape (where(c, x, 0)): the shape as it is, without the
  // checks' copy of it, when it holds no -1 or negative size for them to reject or replace.
  if (x->op == Op::Const && x->shape.empty() &&
      std::none_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; }))
    return constant(x->value, x->dtype, shape, x->device);
  Shape target = expanded_shape(x->shape, shape, x->dtype);
  size_t lead = target.size() - x->shape.size();
  if (x->shape == target) return x;
  if (x->op == Op::Const) return constant(x->value, x->dtype, target, x->device);
  if (ir::has_view(x->op)) {
    ir::View v{std::vector<int64_t>(target.size(), 0), x->view.offset};
    for (size_t i = 0; i < x->shape.size(); ++i)
      v.strides[lead + i] = x->shape[i] == target[lead + i] ? x->view.strides[i] : 0;
    return with_view(x, target, v);
  }
  NodePtr src = x;
  if (lead) {
    Shape padded(lead, 1);
    padded.insert(padded.end(), x->shape.begin(), x->shape.end());
    src = reshape(x, padded);
  }
  if (src->shape == target) return src;
  return ir::make_node(Op::Expand, x->dtype, target, {src}, target);
}

NodePtr slice(const NodePtr& x, int64_t dim, int64_t start, int64_t stop, int64_t step) {
  Shape shape = x->shape;
  int64_t len = step > 0 ? std::max<int64_t>(0, (stop - start + step - 1) / step)
                         : std::max<int64_t>(0, (start - stop - step - 1) / -step);
  shape[dim] = len;
  if (x->op == Op::Const) return constant(x->value, x->dtype, shape, x->device);
  if (ir::has_view(x->op)) {
    ir::View v = x->view;
    v.offset += start * v.strides[dim];
    v.strides[dim] *= step;
    return with_view(x, shape, v);
  }
  std::vector<int64_t> args;
  for (int64_t d = 0; d < x->ndim(); ++d) {
    args.push_back(d == dim ? start : 0);
    args.push_back(d == dim ? step : 1);
  }
  return ir::make_node(Op::Slice, x->dtype, shape, {x}, args);
}

NodePtr as_strided(const NodePtr& x, const Shape& sizes, const std::vector<int64_t>& strides,
                   int64_t offset) {
  bool contiguous = offset == 0 && ir::is_contiguous(sizes, strides);
  if (contiguous && sizes == x->shape) return x;
  if (x->op == Op::Const) return constant(x->value, x->dtype, sizes, x->device);
  if (ir::has_view(x->op))
    if (auto v = ir::compose_strided(x->shape, x->view, sizes, strides, offset))
      return with_view(x, sizes, *v);
  if (contiguous && ir::numel(sizes) == x->numel()) return reshape(x, sizes);
  std::vector<int64_t> args(strides);
  args.push_back(offset);
  return ir::make_node(Op::AsStrided, x->dtype, sizes, {x}, std::move(args));
}

NodePtr moved(const ir::Node& n, const NodePtr& src) {
  switch (n.op) {
  case Op::Reshape:
    return reshape(src, n.shape);
  case Op::Permute:
    return permute(src, n.args);
  case Op::Expand:
    return expand(src, n.shape);
  case Op::AsStrided:
    return as_strided(src, n.shape, {n.args.begin(), n.args.end() - 1}, n.args.back());
  case Op::Slice:
    if (ir::has_view(src->op)) {
      ir::View v = src->view;
      for (size_t d = 0; d < v.strides.size(); ++d) {
        v.offset += n.args[2 * d] * v.strides[d];
        v.strides[d] *= n.args[2 * d + 1];
      }
      return with_view(src, n.shape, v);
    }
    return ir::make_node(Op::Slice, n.dtype, n.shape, {src}, n.args);
  default:
    throw Error(fmt::format("internal error: {} is not a movement", ir::name(n.op)));
  }
}

NodePtr interleave(const NodePtr& re, const NodePtr& im) {
  Shape s1 = re->shape, s2 = re->shape;
  s1.push_back(1);
  s2.push_back(2);
  std::vector<int64_t> strides(s2.size(), 0);
  strides.back() = 1; // the index of the part: 0 real, 1 imaginary
  NodePtr which =
      ir::make_node(Op::Iota, kInt64, s2, {}, {}, {}, nullptr, ir::View{strides, 0}, re->device);
  auto spread = [&](const NodePtr& x) { return expand(reshape(x, s1), s2); };
  return where(binary(Op::CmpEq, which, constant(0, kInt64)), spread(re), spread(im));
}

} // namespace tj::fe
