// In-place writes and out= arguments: a write into the storage, seen through every alias, with
// its autograd history (the value written becomes the tensor's, and its base's for a view).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <optional>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <utility>

#include "lib/autograd/formulas.h"
#include "lib/autograd/node.h"
#include "lib/frontend/graph_builders.h"
#include "lib/frontend/overlap.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/ir/scalar_semantics.h"
#include "lib/print/tensor_print.h"
#include "tensorjit/config.h"
#include "tensorjit/functions.h"
#include "tensorjit/indexing.h"

namespace tj {

using detail::node_of;
using detail::wrap;
using fe::NodePtr;
using ir::Op;

namespace detail {

void check_inplace_grad(const Tensor& self, const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return;
  const detail::TensorImpl& impl = *self.impl();
  // PyTorch's handle_view_on_rebase, for a view whose write autograd would track (self, its base
  // or another input requires grad).
  const bool tracked = self.requires_grad() || (impl.base && Tensor(impl.base).requires_grad()) ||
                       autograd::any_requires_grad(inputs);
  if (impl.is_view && tracked && (impl.multi_output >= 0 || impl.made_without_grad)) {
    const std::string what =
        impl.grad_fn ? fmt::format("Output {} of {} is a view and is being modified inplace.",
                                   std::max(impl.multi_output, 0), impl.grad_fn->name())
                     : "A view was created in no_grad mode and is being modified inplace with "
                       "grad mode enabled.";
    if (impl.multi_output >= 0)
      throw Error(what + " This view is the output of a function that returns multiple views. "
                         "Such functions do not allow the output views to be modified inplace. "
                         "You should replace the inplace operation by an out-of-place one.");
    throw Error(what + " Given that this use case is ambiguous and error-prone, it is forbidden. "
                       "You can clarify your code by moving both the view and the inplace either "
                       "both inside the no_grad block (if you don't want the inplace to be "
                       "tracked) or both outside (if you want the inplace to be tracked).");
  }
  if (self.is_leaf() && impl.requires_grad)
    throw Error("a leaf Variable that requires grad is being used in an in-place operation.");
  if (impl.is_view && impl.base && impl.base->requires_grad && !impl.base->grad_fn)
    throw Error("a view of a leaf Variable that requires grad is being used in an in-place "
                "operation.");
}

} // namespace detail

// --- in-place: a write into the storage, seen through every alias ---
namespace {

// PyTorch's rule for results written into an existing tensor: no float into
// integers, nothing but bool into bool.
bool can_cast(DType from, DType to) {
  if (tj::is_complex(from) && !tj::is_complex(to)) return false;
  if (tj::is_floating_point(from) && !tj::is_floating_point(to) && !tj::is_complex(to))
    return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

// Autograd of an in-place write of `value` into `self`: `self` (and, for a
// view, its base) takes the history of the value written. Called with the
// value already broadcast and cast; returns the tensor whose node is written.
// `plain_write` names the node of a plain write (zero_, fill_, copy_: PyTorch names them
// after the op), which passes the gradient to the value as it is.
Tensor record_inplace(const Tensor& self, Tensor value, const char* plain_write) {
  using Grads = std::vector<Tensor>;
  using Saved = std::vector<Tensor>;
  if (!GradMode::is_enabled() ||
      (!self.requires_grad() && !value.requires_grad() &&
       !(self.impl()->is_view && Tensor(self.impl()->base).requires_grad())))
    return value;
  // The written value needs a backward node of its own (not a leaf's, nor
  // another tensor's handle to change): a constant gets one that passes no
  // gradient to the old value, a leaf one that passes it the gradient.
  if (!value.requires_grad()) {
    value = detail::alias(value);
    autograd::record(plain_write ? plain_write : "FillBackward0", {self}, {value}, {},
                     [](const Grads& g, const Saved&) { return Grads{zeros_like(g[0])}; });
  } else if (plain_write || value.is_leaf()) {
    Tensor from = value;
    value = detail::alias(value);
    autograd::record(plain_write ? plain_write : "CopyBackwards", {from}, {value}, {},
                     [](const Grads& g, const Saved&) { return g; });
  }
  const detail::TensorImpl& impl = *self.impl();
  if (impl.parts)
    throw Error("an in-place operation through real() or imag() is not supported with autograd: "
                "write into the complex tensor, or into a clone of the parts");
  if (impl.is_view) {
    Tensor base(impl.base);
    if (!base.impl()->covers_cell())
      throw Error("an in-place operation through this view is not supported with autograd: its "
                  "base tensor does not cover its storage in row-major order");
    // CopySlices: the base's new value is its old one with the view's
    // region replaced; the gradient splits along that region.
    autograd::record(
        "CopySlices", {base, value}, {base}, {},
        [sizes = impl.sizes, strides = impl.strides, offset = impl.offset,
         in = base.sizes()](const Grads& g, const Saved&) {
          Tensor region = autograd::embed(ones(sizes, g[0].options()), in, strides, offset);
          return Grads{g[0] * (1 - region), autograd::strided_read(g[0], sizes, strides, offset)};
        });
    ++base.impl()->version; // the other views of the base are stale now
    autograd::refresh_view(self);
    return value;
  }
  autograd::set_history(self, value.impl()->grad_fn, value.impl()->output_nr);
  ++self.impl()->version; // views of self are stale now
  return value;
}

// The tensors among an op's operands.
std::vector<Tensor> tensors_in(const Tensor& t) { return {t}; }
std::vector<Tensor> tensors_in(const Scalar&) { return {}; }

// Writes the tensor `make_value()` returns into `self`, broadcast to its shape. `inputs` are
// the tensors the value reads, held to PyTorch's overlap rules (frontend/overlap.h).
// `plain_write` is set for zero_, fill_ and copy_: the name of the write's backward node
// (record_inplace). Such a write takes a value of any dtype; an op's result must cast safely.
template <typename F>
Tensor& mutate(Tensor& self, const std::vector<Tensor>& inputs, F&& make_value,
               const char* plain_write = nullptr) {
  const bool any_cast = plain_write != nullptr;
  detail::check_defined(self, "in-place operation");
  detail::assert_no_internal_overlap(self);
  for (const Tensor& in : inputs)
    if (in.defined()) detail::assert_no_partial_overlap(self, in);
  detail::check_inplace_grad(self, inputs);
  bool exclusive = detail::storage_exclusive(self);
  Tensor value = make_value();
  // A recorded op may have saved the current value for its backward: it must
  // survive the write.
  if (value.requires_grad() && GradMode::is_enabled()) exclusive = false;
  if (value.requires_grad() && GradMode::is_enabled()) {
    // Broadcast and cast as recorded ops, so the history covers them.
    if (value.sizes() != self.sizes()) {
      ir::Shape b = ir::broadcast_shapes(self.sizes(), value.sizes());
      if (b == self.sizes()) value = value.expand(self.sizes());
    }
    if (value.device() == self.device() && (any_cast || can_cast(value.dtype(), self.dtype())))
      value = value.to(self.dtype());
  }
  NodePtr v = node_of(value);
  // An in-place result cannot leave its tensor's device.
  if (v->device != self.device()) fe::throw_device_mismatch(v->device, self.device());
  if (v->shape != self.sizes()) {
    ir::Shape b = ir::broadcast_shapes(self.sizes(), v->shape);
    if (b != self.sizes())
      throw Error(fmt::format("output with shape {} doesn't match the broadcast shape {}",
                              ir::shape_str(self.sizes()), ir::shape_str(b)));
  }
  if (!any_cast && !can_cast(v->dtype, self.dtype()))
    throw Error(fmt::format("result type {} can't be cast to the desired output type {}",
                            fe::cpp_type_name(v->dtype), fe::cpp_type_name(self.dtype())));
  // A value that may fail to compute (an integer division by a tensor) is computed now, before
  // it is broadcast, as PyTorch would: if it fails, nothing was written and no alias sees a write
  // that cannot happen.
  if (v->may_fail && !v->realized) detail::realize({v});
  if (v->shape != self.sizes()) v = fe::expand(v, self.sizes());
  Tensor written =
      record_inplace(self, value.sizes() == self.sizes() ? value : wrap(v), plain_write);
  if (written.impl() != value.impl()) v = node_of(written);
  detail::write(self, fe::cast(v, self.dtype(), /*discard_imag=*/true), exclusive);
  // A parameter updated in place (an optimizer step) is computed now: the
  // next step's graph then reads it, rather than every earlier step's graph.
  if (self.impl()->requires_grad && self.is_leaf()) detail::realize({self.impl()->cell->node});
  return self;
}

} // namespace

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha, Caller caller) {
  detail::CallSite site(caller, "add_");
  return mutate(*this, {o}, [&] { return add(o, alpha); });
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha, Caller caller) {
  detail::CallSite site(caller, "add_");
  return mutate(*this, {}, [&] { return add(o, alpha); });
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha, Caller caller) {
  detail::CallSite site(caller, "sub_");
  return mutate(*this, {o}, [&] { return sub(o, alpha); });
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha, Caller caller) {
  detail::CallSite site(caller, "sub_");
  return mutate(*this, {}, [&] { return sub(o, alpha); });
}
namespace {
// One value for every element is defined however many elements share a location: an
// expanded tensor is filled through the locations it views, each once.
Tensor& fill_with(Tensor& self, const Scalar& v, const char* grad_fn_name) {
  fe::check_scalar_fits(v, self.dtype());
  if (detail::has_internal_overlap(self)) {
    Tensor distinct = detail::distinct_locations(self);
    fill_with(distinct, v, grad_fn_name);
    return self;
  }
  return mutate(
      self, {}, [&] { return wrap(fe::constant(v, self.dtype(), self.sizes(), self.device())); },
      grad_fn_name);
}
} // namespace

Tensor& Tensor::zero_(Caller caller) {
  detail::CallSite site(caller, "zero_");
  return fill_with(*this, 0, "ZeroBackward0");
}
Tensor& Tensor::fill_(const Scalar& v, Caller caller) {
  detail::CallSite site(caller, "fill_");
  return fill_with(*this, v, "FillBackward0");
}
Tensor& Tensor::fill_(const Tensor& v, Caller caller) {
  detail::CallSite site(caller, "fill_");
  if (v.dim() != 0)
    throw Error(fmt::format("fill_ only supports 0-dimension value tensor but got tensor with {} "
                            "dimensions.",
                            v.dim()));
  if (detail::has_internal_overlap(*this)) {
    detail::distinct_locations(*this).fill_(v);
    return *this;
  }
  // PyTorch reads the value first (item()): it may share memory with the tensor.
  return mutate(
      *this, {}, [&] { return v.to(device()); }, "FillBackward1");
}
Tensor& Tensor::copy_(const Tensor& src, Caller caller) {
  detail::CallSite site(caller, "copy_");
  // Copies may cross devices: the values come to this tensor's device.
  return mutate(
      *this, {src}, [&] { return src.device() == device() ? src : src.to(device()); },
      "CopyBackwards");
}
Tensor& Tensor::operator=(const Scalar& v) && { return fill_(v); }
Tensor& Tensor::operator=(const Tensor& v) && { return copy_(v); }

// In-place forms: each is its op's result written back through mutate().
// (abs of a complex tensor is real: it cannot be written back, as in PyTorch.)
#define TJ_INPLACE_UNARY(name)                                                                     \
  Tensor& Tensor::name##_(Caller caller) {                                                         \
    detail::CallSite site(caller, #name "_");                                                      \
    if (std::string_view(#name) == "abs" && is_complex())                                          \
      throw Error("In-place abs is not supported for complex tensors.");                           \
    return mutate(*this, {}, [&] { return name(); });                                              \
  }
#define TJ_INPLACE_UNARY_0(name)
#define TJ_INPLACE_UNARY_1(name) TJ_INPLACE_UNARY(name)
#define TJ_UNARY_FN(name, has_inplace) TJ_INPLACE_UNARY_##has_inplace(name)
#define TJ_MATH_FN(name, op, grad_fn) TJ_INPLACE_UNARY(name)
#include "tensorjit/elementwise_functions.def"
#undef TJ_INPLACE_UNARY_1
#undef TJ_INPLACE_UNARY_0
#undef TJ_INPLACE_UNARY

namespace {
// What an in-place binary op writes: its result, except a comparison's. That is bool, which has
// no gradient: where self or other requires grad it is taken to self's dtype under PyTorch's node
// for the in-place comparison (EqBackward0 for a Scalar other, EqBackward1 for a Tensor), which
// passes zeros to both, so that self keeps a history (x.eq_(1).sum().backward() works).
template <typename Other>
Tensor inplace_result(std::string_view name, const Tensor& self, const Other& o, Tensor r) {
  static constexpr std::pair<std::string_view, std::array<const char*, 2>> kComparisons[] = {
      {"eq", {"EqBackward0", "EqBackward1"}}, {"ne", {"NeBackward0", "NeBackward1"}},
      {"lt", {"LtBackward0", "LtBackward1"}}, {"le", {"LeBackward0", "LeBackward1"}},
      {"gt", {"GtBackward0", "GtBackward1"}}, {"ge", {"GeBackward0", "GeBackward1"}}};
  // Most in-place ops are no comparison: they leave first, before any list is built.
  const auto* comparison = std::find_if(std::begin(kComparisons), std::end(kComparisons),
                                        [&](const auto& c) { return c.first == name; });
  if (comparison == std::end(kComparisons)) return r;
  constexpr bool tensor_other = std::is_same_v<Other, Tensor>;
  std::vector<Tensor> inputs{self};
  if constexpr (tensor_other) inputs.push_back(o);
  if (!GradMode::is_enabled() || !autograd::any_requires_grad(inputs)) return r;
  Tensor value;
  {
    NoGradGuard no_grad;
    value = r.to(self.dtype());
  }
  autograd::record_zero_grads(comparison->second[tensor_other], inputs, value);
  return value;
}
} // namespace

#define TJ_INPLACE_BINARY(name, Other)                                                             \
  Tensor& Tensor::name##_(const Other& o, Caller caller) {                                         \
    detail::CallSite site(caller, #name "_");                                                      \
    return mutate(*this, tensors_in(o), [&] { return inplace_result(#name, *this, o, name(o)); }); \
  }
#define TJ_INPLACE_BINARY_BOTH(name)                                                               \
  TJ_INPLACE_BINARY(name, Tensor)                                                                  \
  TJ_INPLACE_BINARY(name, Scalar)
TJ_INPLACE_BINARY_BOTH(pow)
#define TJ_INPLACE_BINARY_00(name)
#define TJ_INPLACE_BINARY_01(name) TJ_INPLACE_BINARY(name, Tensor)
#define TJ_INPLACE_BINARY_11(name) TJ_INPLACE_BINARY_BOTH(name)
#define TJ_INPLACE_BINARY_OF(name, s, i) TJ_INPLACE_BINARY_##s##i(name)
#define TJ_BINARY_FN(name, with_scalar, has_inplace)                                               \
  TJ_INPLACE_BINARY_OF(name, with_scalar, has_inplace)
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints) TJ_INPLACE_BINARY(name, Tensor)
#include "tensorjit/elementwise_functions.def"
#undef TJ_INPLACE_BINARY_OF
#undef TJ_INPLACE_BINARY_11
#undef TJ_INPLACE_BINARY_01
#undef TJ_INPLACE_BINARY_00
#undef TJ_INPLACE_BINARY_BOTH
#undef TJ_INPLACE_BINARY

// PyTorch's scatter and index_add kernels refuse any memory shared with their inputs, even all
// of it (x.add_(x) is fine, x.scatter_add_(0, i, x) is not).
namespace {
void refuse_overlap(const Tensor& self, std::initializer_list<Tensor> inputs) {
  for (const Tensor& in : inputs)
    if (in.defined()) detail::assert_no_overlap(self, in);
}
} // namespace
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src, Caller caller) {
  detail::CallSite site(caller, "scatter_");
  refuse_overlap(*this, {index, src});
  return mutate(*this, {index, src}, [&] { return tj::scatter(*this, dim, index, src); });
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value, Caller caller) {
  detail::CallSite site(caller, "scatter_");
  refuse_overlap(*this, {index});
  return mutate(*this, {index}, [&] { return tj::scatter(*this, dim, index, value); });
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src, Caller caller) {
  detail::CallSite site(caller, "scatter_add_");
  refuse_overlap(*this, {index, src});
  return mutate(*this, {index, src}, [&] { return tj::scatter_add(*this, dim, index, src); });
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                           const Scalar& alpha, Caller caller) {
  detail::CallSite site(caller, "index_add_");
  refuse_overlap(*this, {index, source});
  return mutate(*this, {index, source},
                [&] { return tj::index_add(*this, dim, index, source, alpha); });
}

Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max, Caller caller) {
  detail::CallSite site(caller, "clamp_");
  return mutate(*this, {}, [&] { return clamp(min, max); });
}

namespace {
// masked_fill_ into a tensor whose elements share locations: a location is written when any
// element that names it is selected, as PyTorch's loop over the elements would leave it.
template <typename V> Tensor& masked_fill_shared(Tensor& self, const Tensor& mask, const V& value) {
  Tensor m = mask.expand(self.sizes());
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.stride(d) == 0 && self.size(d) > 1) m = m.any(d, /*keepdim=*/true);
  detail::distinct_locations(self).masked_fill_(m, value);
  return self;
}
} // namespace

Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value, Caller caller) {
  detail::CallSite site(caller, "masked_fill_");
  detail::assert_no_partial_overlap(*this, mask);
  if (detail::has_internal_overlap(*this)) return masked_fill_shared(*this, mask, value);
  return mutate(*this, {}, [&] { return tj::masked_fill(*this, mask, value); });
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value, Caller caller) {
  detail::CallSite site(caller, "masked_fill_");
  detail::assert_no_partial_overlap(*this, mask);
  if (detail::has_internal_overlap(*this) && value.dim() == 0)
    return masked_fill_shared(*this, mask, value);
  return mutate(*this, {}, [&] { return tj::masked_fill(*this, mask, value); });
}

Tensor& sin_(Tensor& a, Caller caller) {
  detail::CallSite site(caller, "sin_");
  return a.sin_();
}

namespace {
// Writes `result`, computed from `inputs`, into `out` by PyTorch's rules for out= arguments.
Tensor& write_out(Tensor& out, const Tensor& result, const char* op,
                  const std::vector<Tensor>& inputs = {}) {
  detail::check_defined(out, "out");
  if (GradMode::is_enabled() && (result.requires_grad() || out.requires_grad()))
    throw Error(fmt::format("{}(): functions with out=... arguments don't support automatic "
                            "differentiation, but one of the arguments requires grad.",
                            op));
  if (out.sizes() == result.sizes()) return mutate(out, inputs, [&] { return result; });
  if (!can_cast(result.dtype(), out.dtype()))
    throw Error(fmt::format("result type {} can't be cast to the desired output type {}",
                            fe::cpp_type_name(result.dtype()), fe::cpp_type_name(out.dtype())));
  if (result.device() != out.device()) fe::throw_device_mismatch(result.device(), out.device());
  // resize_: the tensor (every handle on it) moves to fresh storage of the
  // result's shape; other views of its old storage keep it.
  Tensor fresh = result.to(out.dtype()).contiguous();
  detail::TensorImpl& impl = *out.impl();
  impl.cell = fresh.impl()->cell;
  impl.sizes = fresh.sizes();
  impl.strides = fresh.stride();
  impl.offset = fresh.storage_offset();
  impl.is_view = false;
  return out;
}
} // namespace

Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, Caller caller) {
  detail::CallSite site(caller, "add_out");
  return write_out(out, add(a, b, alpha), "add", {a, b});
}
Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, Caller caller) {
  detail::CallSite site(caller, "sub_out");
  return write_out(out, sub(a, b, alpha), "sub", {a, b});
}
Tensor& mul_out(Tensor& out, const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "mul_out");
  return write_out(out, mul(a, b), "mul", {a, b});
}
Tensor& div_out(Tensor& out, const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "div_out");
  return write_out(out, div(a, b), "div", {a, b});
}
Tensor& matmul_out(Tensor& out, const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "matmul_out");
  return write_out(out, matmul(a, b), "matmul");
}
Tensor& zeros_out(Tensor& out, IntArrayRef size, Caller caller) {
  detail::CallSite site(caller, "zeros_out");
  return write_out(out, zeros(size, out.options()), "zeros");
}
Tensor& ones_out(Tensor& out, IntArrayRef size, Caller caller) {
  detail::CallSite site(caller, "ones_out");
  return write_out(out, ones(size, out.options()), "ones");
}
Tensor& full_out(Tensor& out, IntArrayRef size, const Scalar& value, Caller caller) {
  detail::CallSite site(caller, "full_out");
  return write_out(out, full(size, value, out.options()), "full");
}
Tensor& arange_out(Tensor& out, const Scalar& end, Caller caller) {
  detail::CallSite site(caller, "arange_out");
  return arange_out(out, 0, end, 1);
}
Tensor& arange_out(Tensor& out, const Scalar& start, const Scalar& end, const Scalar& step,
                   Caller caller) {
  detail::CallSite site(caller, "arange_out");
  return write_out(out, arange(start, end, step, out.options()), "arange");
}
Tensor& rand_out(Tensor& out, IntArrayRef size, Caller caller) {
  detail::CallSite site(caller, "rand_out");
  return write_out(out, rand(size, out.options()), "rand");
}
Tensor& randn_out(Tensor& out, IntArrayRef size, Caller caller) {
  detail::CallSite site(caller, "randn_out");
  return write_out(out, randn(size, out.options()), "randn");
}

} // namespace tj
