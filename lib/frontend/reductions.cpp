// Reductions of the public API and nn::functional's softmax, log_softmax and
// layer_norm, decomposed into the four Reduce primitives.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "lib/autograd/formulas.h"
#include "lib/core/warning.h"
#include "lib/frontend/graph_builders.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "runtime/machine.h"
#include "tensorjit/functions.h"
#include "tensorjit/indexing.h"

namespace tj {

using detail::node_of;
using detail::wrap;
using fe::NodePtr;
using ir::Op;
namespace ag = autograd;

namespace {

using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

// Sorted, unique, non-negative axes; empty means every axis.
std::vector<int64_t> normalize_dims(IntArrayRef dims, int64_t ndim) {
  std::vector<int64_t> axes;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d)
      axes.push_back(d);
    return axes;
  }
  for (int64_t d : dims) {
    int64_t a = ir::wrap_dim(d, ndim);
    if (std::find(axes.begin(), axes.end(), a) != axes.end())
      throw Error(fmt::format("dim {} appears multiple times in the list of dims", a));
    axes.push_back(a);
  }
  if (ndim == 0) axes.clear();
  std::sort(axes.begin(), axes.end());
  return axes;
}

ir::Shape kept_shape(const ir::Shape& s, const std::vector<int64_t>& axes) {
  ir::Shape out = s;
  for (int64_t a : axes)
    out[a] = 1;
  return out;
}

ir::Shape dropped_shape(const ir::Shape& s, const std::vector<int64_t>& axes) {
  ir::Shape out;
  for (size_t d = 0; d < s.size(); ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end())
      out.push_back(s[d]);
  return out;
}

// The value a reduction over no elements gives: the identity of its combining op.
Scalar reduce_identity(Op op, DType t) {
  if (op == Op::ReduceSum) return Scalar(int64_t{0});
  if (op == Op::ReduceProd) return Scalar(int64_t{1});
  const bool lowest = op == Op::ReduceMax;
  if (is_floating_point(t))
    return Scalar(lowest ? -std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::infinity());
  if (t == kBool) return Scalar(!lowest);
  const int bits = static_cast<int>(itemsize(t)) * 8;
  if (t == kUInt8) return Scalar(int64_t{lowest ? 0 : 255});
  const int64_t top =
      bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  return Scalar(lowest ? -top - 1 : top);
}

// A reduction over no axes: each output is its one input, added to the accumulator's start as
// PyTorch's loop does (a float sum of -0. is +0.).
NodePtr reduce_nothing(Op op, const NodePtr& x) {
  if (op == Op::ReduceSum && (is_floating_point(x->dtype) || is_complex(x->dtype)))
    return fe::binary(Op::Add, x, fe::constant(0, x->dtype));
  return x;
}

NodePtr reduce_node(Op op, const NodePtr& x, const std::vector<int64_t>& axes) {
  if (is_complex(x->dtype) && op != Op::ReduceSum)
    throw Error(fmt::format("{}(): does not support complex input", op == Op::ReduceProd  ? "prod"
                                                                    : op == Op::ReduceMax ? "max"
                                                                                          : "min"));
  if (axes.empty()) return reduce_nothing(op, x);
  ir::Shape kept = kept_shape(x->shape, axes);
  // Nothing to reduce: no kernel reads the (empty) input.
  for (int64_t a : axes)
    if (x->shape[a] == 0)
      return fe::constant(reduce_identity(op, x->dtype), x->dtype, kept, x->device);
  return ir::make_node(op, x->dtype, std::move(kept), {x}, axes);
}

// Reduces over `axes` (keepdim). Runs of adjacent axes are one reduction loop
// each; a large reduction into few outputs is split in two stages so that all
// threads work and float sums are blocked (pairwise-level error).
NodePtr reduce(Op op, const NodePtr& x, std::vector<int64_t> axes) {
  if (axes.empty()) return reduce_nothing(op, x);
  // Non-adjacent axes: reduce the last run first.
  for (size_t i = axes.size() - 1; i > 0; --i)
    if (axes[i] != axes[i - 1] + 1) {
      std::vector<int64_t> tail(axes.begin() + i, axes.end()), head(axes.begin(), axes.begin() + i);
      return reduce(op, reduce(op, x, tail), head);
    }
  int64_t r = 1;
  for (int64_t a : axes)
    r *= x->shape[a];
  int64_t outputs = x->numel() / std::max<int64_t>(r, 1);
  // The device's parallelism (runtime/machine.h).
  const rt::ReductionSplit split = rt::reduction_split(x->device);
  const int64_t threads = split.busy_outputs;
  if (outputs >= 4 * threads || r < (int64_t{1} << 16)) return reduce_node(op, x, axes);
  if (axes.size() > 1 && x->shape[axes[0]] >= 4 * threads) {
    std::vector<int64_t> inner(axes.begin() + 1, axes.end());
    return reduce_node(op, reduce_node(op, x, inner), {axes[0]});
  }
  if (split.flatten_whole && outputs == 1 && x->ndim() > 1 && r % split.blocks == 0 &&
      (r / split.blocks) % x->shape.back() == 0) {
    // Everything into one value, the outer dim too short to split on: reduced as one long
    // axis, split below. Each block's share is whole rows, so the reshape maps affinely onto
    // the input (a transposed read stays fused).
    NodePtr flat = reduce(op, fe::reshape(x, {r}), {0});
    return fe::reshape(flat, kept_shape(x->shape, axes));
  }
  if (axes.size() == 1 && x->ndim() == 1) {
    // One long axis: (P, q) blocks plus a remainder, each reduced in parallel.
    const int64_t P = split.blocks, q = r / P;
    NodePtr main = fe::reshape(fe::slice(x, 0, 0, P * q, 1), {P, q});
    NodePtr part = fe::reshape(reduce_node(op, main, {1}), {P});
    NodePtr total = reduce_node(op, part, {0});
    if (P * q < r)
      total =
          fe::binary(ir::combine_op(op), total, reduce_node(op, fe::slice(x, 0, P * q, r, 1), {0}));
    return total;
  }
  return reduce_node(op, x, axes);
}

Tensor finish(const NodePtr& kept, const ir::Shape& in_shape, const std::vector<int64_t>& axes,
              bool keepdim, std::optional<DType> out = std::nullopt) {
  NodePtr n = kept;
  if (!keepdim) n = fe::reshape(n, dropped_shape(in_shape, axes));
  if (out) n = fe::cast(n, *out);
  return wrap(n);
}

// As PyTorch (self.to(dtype)), a complex input asked for a real dtype is reduced as its real
// part, with PyTorch's warning; the gradient flows back through that part.
bool discards_imag(const Tensor& t, std::optional<DType> dtype) {
  if (!dtype || !t.is_complex() || is_complex(*dtype)) return false;
  static core::WarnOnce warn;
  warn("Casting complex values to real discards the imaginary part");
  return true;
}

// sum and prod accumulate integers in int64 and 16-bit floats in float32.
DType accumulate_type(DType t, std::optional<DType> requested) {
  if (requested) return *requested;
  if (is_integral(t, true)) return kInt64;
  return t;
}

// The complex product along d (kept as size 1): a kernel's reduction combines reals, so the
// elements are multiplied pairwise, halving the axis each step, each a complex multiplication.
Tensor complex_product(Tensor z, int64_t d) {
  int64_t n = z.size(d);
  if (n == 0) {
    std::vector<int64_t> one = z.sizes();
    one[static_cast<size_t>(d)] = 1;
    return ones(one, z.options());
  }
  while (n > 1) {
    const int64_t h = n / 2;
    Tensor p = z.narrow(d, 0, h) * z.narrow(d, h, h);
    z = n % 2 ? cat({p, z.narrow(d, 2 * h, 1)}, d) : p;
    n -= h;
  }
  return z;
}

// The product of the other elements along d: the products before each element times those after
// it (PyTorch's prod_safe_zeros_backward), right with zeros, where y / x is not.
Tensor exclusive_products(const Tensor& v, int64_t d) {
  const int64_t n = v.size(d);
  if (n <= 1) return ones_like(v);
  std::vector<int64_t> one = v.sizes();
  one[static_cast<size_t>(d)] = 1;
  Tensor start = ones(one, v.options());
  Tensor before = cat({start, v.narrow(d, 0, n - 1)}, d).cumprod(d);
  Tensor after = cat({start, v.narrow(d, 1, n - 1).flip({d})}, d).cumprod(d).flip({d});
  return before * after;
}

Tensor sum_prod(Op op, const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<DType> dtype,
                const char* grad_name) {
  if (discards_imag(t, dtype)) return sum_prod(op, t.real(), dims, keepdim, dtype, grad_name);
  NodePtr x = node_of(t);
  DType out = accumulate_type(x->dtype, dtype);
  DType acc = fe::float_accumulator(out);
  auto axes = normalize_dims(dims, x->ndim());
  Tensor y;
  if (op == Op::ReduceProd && is_complex(out)) {
    NoGradGuard no_grad; // the gradient is the whole product's, recorded below
    Tensor z = t.to(out);
    for (int64_t a : axes)
      z = complex_product(z, a);
    y = finish(node_of(z), x->shape, axes, keepdim);
  } else {
    // As PyTorch, the input is first taken to the requested dtype (a float32 tensor summed as
    // float16 adds float16 values), then accumulated.
    y = finish(reduce(op, fe::cast(fe::cast(x, out), acc), axes), x->shape, axes, keepdim, out);
  }
  if (op == Op::ReduceSum) {
    ag::record(grad_name, {t}, {y}, {},
               [in = x->shape, axes, keepdim](const Grads& g, const Saved&) {
                 return Grads{ag::unreduce(g[0], in, axes, keepdim)};
               });
  } else {
    // The product of the other elements, as PyTorch's prod_backward: y / x without zeros, else
    // the exclusive products (a NaN or inf elsewhere reaches the zero's gradient, and a zero
    // makes the others' 0 or NaN). Over every element two zeros or more give 0; along a dim, a
    // zero anywhere takes every slice to the exclusive products. Conjugated for complex values.
    ag::record(
        grad_name, {t}, {y}, {t, y},
        [in = x->shape, axes, keepdim, every = dims.empty()](const Grads& g, const Saved& s) {
          const Tensor& v = s[0];
          Tensor gi = ag::unreduce(g[0], in, axes, keepdim);
          if (v.dim() == 0) return Grads{gi};
          Tensor quotient = ag::unreduce(s[1], in, axes, keepdim) / v;
          Tensor zeros_n = (v == 0).sum();
          Tensor d;
          if (every) {
            Tensor others = exclusive_products(v.reshape({-1}), 0).reshape(in);
            d = where(zeros_n == 0, quotient, where(zeros_n == 1, others, zeros_like(v)));
          } else {
            d = where(zeros_n == 0, quotient, exclusive_products(v, axes[0]));
          }
          return Grads{gi * d.conj()};
        });
  }
  return y;
}

// PyTorch's errors for a reduction with no identity (max, min, amax, amin and the arg forms)
// over no elements: of an empty input when no dim is given (argmax's and argmin's words add no
// advice), or along a given dim of size 0, checked in the order given (before repeated dims).
// amax and amin name that dim as given, the others wrapped.
void check_nonempty(const NodePtr& x, IntArrayRef dims, bool every_dim, const char* fn) {
  const std::string_view f(fn);
  if (every_dim && x->numel() == 0)
    throw Error(fmt::format(
        "{}(): Expected reduction dim to be specified for input.numel() == 0.{}", fn,
        f.starts_with("arg") ? "" : " Specify the reduction dim with the 'dim' argument."));
  for (int64_t d : dims) {
    const int64_t a = ir::wrap_dim(d, x->ndim());
    if (x->ndim() > 0 && x->shape[a] == 0)
      throw Error(fmt::format("{}(): Expected reduction dim {} to have non-zero size.", fn,
                              f.starts_with("am") ? d : a));
  }
}

// The gradient of a max/min/amax/amin shared evenly by the elements equal to the result, as
// PyTorch's formulas give it. All-element max and min (evenly_distribute_backward): g / n at
// each hit, a NaN result hitting the NaNs. amax and amin (scale_grad_by_count): (g / n) * hit,
// which a NaN result, equal to nothing, makes NaN throughout.
Grads evenly_distributed(const Tensor& g, const Tensor& x, const Tensor& y,
                         const std::vector<int64_t>& axes, bool keepdim, bool scaled_by_count) {
  Tensor at = ag::unreduce(y, x.sizes(), axes, keepdim);
  Tensor hit = x == at;
  if (!scaled_by_count && x.is_floating_point())
    hit = logical_or(hit, logical_and(x.isnan(), at.isnan()));
  Tensor n = ag::unreduce(hit.sum(axes, true), x.sizes(), axes, true);
  Tensor share = ag::unreduce(g, x.sizes(), axes, keepdim) / n;
  if (scaled_by_count) return Grads{share * hit};
  return Grads{where(hit, share, zeros_like(x))};
}

// amax/amin (`scaled_by_count`) and max/min share their gradient by different formulas
// (evenly_distributed).
Tensor extremum(Op op, const Tensor& t, IntArrayRef dims, bool keepdim, const char* fn,
                const char* grad_name, bool scaled_by_count) {
  NodePtr x = node_of(t);
  check_nonempty(x, dims, dims.empty(), fn);
  auto axes = normalize_dims(dims, x->ndim());
  // PyTorch's kernels for these take no complex dtype: max() and min() name theirs (max_all),
  // amax and amin theirs (max_values_cpu); max(dim) and min(dim) refuse it in their words.
  if (is_complex(x->dtype)) {
    const char* kernel = op == Op::ReduceMax ? "max" : "min";
    if (!grad_name) throw Error(fmt::format("{}(): does not support complex input", kernel));
    throw Error(fmt::format("\"{}_{}\" not implemented for '{}'", kernel,
                            scaled_by_count ? "values_cpu" : "all", fe::cpp_type_name(x->dtype)));
  }
  // bool reduces as 0/1 bytes.
  NodePtr src = x->dtype == kBool ? fe::cast(x, kUInt8) : x;
  DType out = x->dtype;
  Tensor y = finish(reduce(op, src, axes), x->shape, axes, keepdim, out);
  if (grad_name)
    ag::record(grad_name, {t}, {y}, {t, y},
               [axes, keepdim, scaled_by_count](const Grads& g, const Saved& s) {
                 return evenly_distributed(g[0], s[0], s[1], axes, keepdim, scaled_by_count);
               });
  return y;
}

// Index of the first maximum (or minimum) along `axes`; a NaN counts as the extremum.
// argmax and argmin reject bool, as PyTorch has no kernel for it (max(dim) takes it).
Tensor arg_extremum(Op op, const Tensor& t, std::optional<int64_t> dim, bool keepdim,
                    const char* fn, bool bool_ok) {
  std::vector<int64_t> given = dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
  check_nonempty(node_of(t), given, !dim, fn);
  std::vector<int64_t> axes = normalize_dims(given, t.dim());
  if ((t.dtype() == kBool && !bool_ok) || t.is_complex())
    throw Error(
        fmt::format("\"{}_cpu\" not implemented for '{}'", fn, fe::cpp_type_name(t.dtype())));
  // x is read twice (for its extremum, then to find where it is): it must be the same
  // values both times, so it is computed once. (A libm function can round differently in
  // two kernels, one vectorized and one not, and then no element would equal the maximum.)
  t.eval();
  NodePtr x = node_of(t);
  if (x->dtype == kBool) x = fe::cast(x, kUInt8);
  NodePtr m = reduce(op, x, axes);
  NodePtr hit = fe::binary(Op::CmpEq, x, m);
  if (is_floating_point(x->dtype)) hit = fe::binary(Op::Or, hit, fe::binary(Op::CmpNe, x, x));
  // Positions: the index along `dim`, or the flat index over every axis (0 for a 0-d input,
  // whose dim reduces nothing).
  ir::View view{std::vector<int64_t>(x->shape.size(), 0), 0};
  if (dim && !axes.empty())
    view.strides[axes[0]] = 1;
  else
    view.strides = ir::contiguous_strides(x->shape);
  NodePtr pos = ir::make_node(Op::Iota, kInt64, x->shape, {}, {}, {}, nullptr, view, x->device);
  NodePtr cand = fe::where(hit, pos, fe::constant(std::numeric_limits<int64_t>::max(), kInt64));
  NodePtr idx = reduce(Op::ReduceMin, cand, axes);
  // With no dim, keepdim keeps every dim (as size 1).
  return finish(idx, x->shape, axes, keepdim);
}

// max(dim)/min(dim): the gradient goes to the index returned.
std::tuple<Tensor, Tensor> extremum_at(Op op, const Tensor& t, int64_t dim, bool keepdim,
                                       const char* fn) {
  Tensor values = extremum(op, t, {dim}, keepdim, fn, nullptr, false);
  Tensor indices = arg_extremum(op, t, dim, keepdim, fn, true);
  const int64_t d = t.dim() == 0 ? 0 : ir::wrap_dim(dim, t.dim());
  ag::record(op == Op::ReduceMax ? "MaxBackward0" : "MinBackward0", {t}, {values}, {indices},
             [in = t.sizes(), d, keepdim](const Grads& g, const Saved& s) {
               if (in.empty()) return Grads{g[0].reshape(in)};
               Shape pos_shape(in.size(), 1);
               pos_shape[d] = in[d];
               Tensor pos = arange(in[d], TensorOptions().device(g[0].device())).view(pos_shape);
               Tensor at = ag::unreduce(s[0], in, {d}, keepdim);
               Tensor gi = ag::unreduce(g[0], in, {d}, keepdim);
               return Grads{where(pos == at, gi, zeros_like(gi))};
             });
  return {values, indices};
}

NodePtr float_input(const Tensor& t) {
  NodePtr x = node_of(t);
  return is_floating_point(x->dtype) ? x : fe::cast(x, default_dtype());
}

int64_t count(const ir::Shape& s, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= s[a];
  return n;
}

NodePtr mean_node(const NodePtr& x, const std::vector<int64_t>& axes) {
  DType acc = fe::float_accumulator(x->dtype);
  NodePtr s = reduce(Op::ReduceSum, fe::cast(x, acc), axes);
  return fe::cast(
      fe::binary(Op::Div, s, fe::constant(static_cast<double>(count(x->shape, axes)), acc)),
      x->dtype);
}

// The dtype var and std accumulate in: PyTorch's CPU kernel runs Welford's recurrence in
// float64 for every float dtype (std_var_kernel_impl), a GPU's in float32 (float64 in float64).
// In float32, two passes over a row of 1e7, 1e7 + 1, 1e7 + 1 gave a variance of 1, not 1/3: the
// mean's rounding error, squared, stays in the sum.
DType moments_accumulator(const NodePtr& x) {
  return x->device.is_cpu() ? kFloat64 : fe::float_accumulator(x->dtype);
}

// The variance of x over `axes` in x's dtype, computed in `acc` (two passes: the mean, then the
// squared deviations from it).
NodePtr var_node(const NodePtr& x, const std::vector<int64_t>& axes, int64_t correction,
                 DType acc) {
  NodePtr xc = fe::cast(x, acc);
  NodePtr d = fe::binary(Op::Sub, xc, mean_node(xc, axes));
  NodePtr ss = reduce(Op::ReduceSum, fe::binary(Op::Mul, d, d), axes);
  double denom = std::max<double>(0.0, static_cast<double>(count(x->shape, axes) - correction));
  return fe::cast(fe::binary(Op::Div, ss, fe::constant(denom, acc)), x->dtype);
}

// PyTorch's var_backward: 2 (x - mean) / (N - correction) times g, the count unclamped (a
// correction past it flips the sign). Over every element (no dims, or a 0-d input) with
// N <= correction, g times NaN where x is the mean and inf elsewhere.
Tensor var_backward(const Tensor& g, const Tensor& v, const std::vector<int64_t>& axes, bool every,
                    int64_t correction, bool keepdim) {
  Tensor gi = ag::unreduce(g, v.sizes(), axes, keepdim);
  Tensor mean = v.mean(axes, true);
  const double dof = static_cast<double>(count(v.sizes(), axes) - correction);
  if ((every || v.dim() == 0) && dof <= 0)
    return gi * where(v == mean, std::numeric_limits<double>::quiet_NaN(),
                      full_like(v, std::numeric_limits<double>::infinity()));
  return gi * (v - mean) * (2.0 / dof);
}

// Throws `msg`, its {} the dtype's C++ name, when x is not floating.
void check_float(const NodePtr& x, fmt::format_string<const char*> msg) {
  if (!is_floating_point(x->dtype)) throw Error(fmt::format(msg, fe::cpp_type_name(x->dtype)));
}

} // namespace

Tensor sum(const Tensor& t, std::optional<DType> dtype, Caller caller) {
  detail::CallSite site(caller, "sum");
  return sum_prod(Op::ReduceSum, t, {}, false, dtype, "SumBackward0");
}
Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<DType> dtype,
           Caller caller) {
  detail::CallSite site(caller, "sum");
  return sum_prod(Op::ReduceSum, t, dims, keepdim, dtype, "SumBackward1");
}
Tensor prod(const Tensor& t, std::optional<DType> dtype, Caller caller) {
  detail::CallSite site(caller, "prod");
  return sum_prod(Op::ReduceProd, t, {}, false, dtype, "ProdBackward0");
}

namespace {
Tensor mean_impl(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<DType> dtype,
                 const char* grad_name) {
  if (discards_imag(t, dtype)) return mean_impl(t.real(), dims, keepdim, dtype, grad_name);
  NodePtr x = node_of(t);
  // PyTorch checks, and names, the requested dtype ("Optional") or else the input's.
  const DType out = dtype.value_or(x->dtype);
  if (!is_floating_point(out) && !is_complex(out))
    throw Error(fmt::format(
        "mean(): could not infer output dtype. {} dtype must be either a floating point or "
        "complex dtype. Got: {}",
        dtype ? "Optional" : "Input", fe::cpp_type_name(out)));
  x = fe::cast(x, out);
  auto axes = normalize_dims(dims, x->ndim());
  Tensor y = finish(mean_node(x, axes), x->shape, axes, keepdim);
  ag::record(
      grad_name, {t}, {y}, {},
      [in = x->shape, axes, keepdim, n = count(x->shape, axes)](const Grads& g, const Saved&) {
        return Grads{ag::unreduce(g[0], in, axes, keepdim) / static_cast<double>(n)};
      });
  return y;
}
} // namespace

Tensor mean(const Tensor& t, std::optional<DType> dtype, Caller caller) {
  detail::CallSite site(caller, "mean");
  return mean_impl(t, {}, false, dtype, "MeanBackward0");
}
Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<DType> dtype,
            Caller caller) {
  detail::CallSite site(caller, "mean");
  return mean_impl(t, dims, keepdim, dtype, "MeanBackward1");
}

Tensor max(const Tensor& t, Caller caller) {
  detail::CallSite site(caller, "max");
  return extremum(Op::ReduceMax, t, {}, false, "max", "MaxBackward1", false);
}
Tensor min(const Tensor& t, Caller caller) {
  detail::CallSite site(caller, "min");
  return extremum(Op::ReduceMin, t, {}, false, "min", "MinBackward1", false);
}
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "max");
  return extremum_at(Op::ReduceMax, t, dim, keepdim, "max");
}
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "min");
  return extremum_at(Op::ReduceMin, t, dim, keepdim, "min");
}
Tensor amax(const Tensor& t, IntArrayRef dims, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "amax");
  return extremum(Op::ReduceMax, t, dims, keepdim, "amax", "AmaxBackward0", true);
}
Tensor amin(const Tensor& t, IntArrayRef dims, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "amin");
  return extremum(Op::ReduceMin, t, dims, keepdim, "amin", "AminBackward0", true);
}
Tensor argmax(const Tensor& t, std::optional<int64_t> dim, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "argmax");
  return arg_extremum(Op::ReduceMax, t, dim, keepdim, "argmax", false);
}
Tensor argmin(const Tensor& t, std::optional<int64_t> dim, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "argmin");
  return arg_extremum(Op::ReduceMin, t, dim, keepdim, "argmin", false);
}

Tensor var(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "var");
  NodePtr x = node_of(t);
  auto axes = normalize_dims(dims, x->ndim());
  Tensor y;
  if (t.is_complex()) {
    // A complex variance is the mean squared magnitude of the deviations: the parts' sum. Its
    // gradient is the whole's, recorded below.
    NoGradGuard no_grad;
    y = var(t.real(), dims, correction, keepdim) + var(t.imag(), dims, correction, keepdim);
  } else {
    if (!is_floating_point(x->dtype))
      throw Error("std and var only support floating point and complex dtypes");
    y = finish(var_node(x, axes, correction, moments_accumulator(x)), x->shape, axes, keepdim);
  }
  ag::record("VarBackward0", {t}, {y}, {t},
             [axes, keepdim, correction, every = dims.empty()](const Grads& g, const Saved& s) {
               return Grads{var_backward(g[0], s[0], axes, every, correction, keepdim)};
             });
  return y;
}
Tensor std(const Tensor& t, IntArrayRef dims, int64_t correction, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "std");
  NodePtr x = node_of(t);
  auto axes = normalize_dims(dims, x->ndim());
  Tensor y;
  if (t.is_complex()) {
    NoGradGuard no_grad; // the gradient is the whole's, recorded below
    y = var(t, dims, correction, keepdim).sqrt();
  } else {
    if (!is_floating_point(x->dtype))
      throw Error("std and var only support floating point and complex dtypes");
    // The square root taken in the accumulator's dtype, then rounded once.
    const DType acc = moments_accumulator(x);
    y = finish(
        fe::cast(fe::unary(Op::Sqrt, var_node(fe::cast(x, acc), axes, correction, acc)), x->dtype),
        x->shape, axes, keepdim);
  }
  // The variance's gradient times g / (2 std), 0 where std is 0 (PyTorch's std_backward).
  ag::record("StdBackward0", {t}, {y}, {t, y},
             [axes, keepdim, correction, every = dims.empty()](const Grads& g, const Saved& s) {
               Tensor g_var = where(s[1] == 0, 0.0, g[0] / (s[1] * 2.0));
               return Grads{var_backward(g_var, s[0], axes, every, correction, keepdim)};
             });
  return y;
}

Tensor norm(const Tensor& t, double p, IntArrayRef dims, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "norm");
  if (t.is_complex()) return norm(t.abs(), p, dims, keepdim); // the magnitudes' norm
  NodePtr x = node_of(t);
  // PyTorch's norm is linalg.vector_norm: its checks and words.
  check_float(x,
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}");
  auto axes = normalize_dims(dims, x->ndim());
  // Over no elements, max, min and negative powers have no identity (the norm of nothing is 0
  // only for p in [0, inf)). p prints as C++ streams a double.
  if (x->numel() == 0 && (p < 0 || p == std::numeric_limits<double>::infinity())) {
    if (dims.empty())
      throw Error(fmt::format("linalg.vector_norm cannot compute the {:g} norm on an empty tensor "
                              "because the operation does not have an identity",
                              p));
    for (int64_t d : dims)
      if (x->shape[ir::wrap_dim(d, x->ndim())] == 0)
        throw Error(fmt::format("linalg.vector_norm cannot compute the {:g} norm on the dimension "
                                "{}because this dimension is empty and the operation does not "
                                "have an identity",
                                p, d));
  }
  const DType out = x->dtype, dt = fe::float_accumulator(out);
  x = fe::cast(x, dt);
  NodePtr a = fe::unary(Op::Abs, x), r;
  if (count(x->shape, axes) == 0) // the norm of no elements is 0 (p checked above)
    r = fe::constant(0, dt, kept_shape(x->shape, axes), x->device);
  else if (p == 2)
    r = fe::unary(Op::Sqrt, reduce(Op::ReduceSum, fe::binary(Op::Mul, x, x), axes));
  else if (p == 1)
    r = reduce(Op::ReduceSum, a, axes);
  else if (std::isinf(p))
    r = reduce(p > 0 ? Op::ReduceMax : Op::ReduceMin, a, axes);
  else if (p == 0)
    r = reduce(Op::ReduceSum, fe::cast(fe::binary(Op::CmpNe, x, fe::constant(0, dt)), dt), axes);
  else
    r = fe::binary(Op::Pow,
                   reduce(Op::ReduceSum, fe::binary(Op::Pow, a, fe::constant(p, dt)), axes),
                   fe::constant(1.0 / p, dt));
  Tensor y = finish(r, x->shape, axes, keepdim, out);
  ag::record("LinalgVectorNormBackward0", {t}, {y}, {t, y},
             [p, axes, keepdim](const Grads& g, const Saved& s) {
               const Tensor& v = s[0];
               Tensor gi = ag::unreduce(g[0], v.sizes(), axes, keepdim);
               Tensor yi = ag::unreduce(s[1], v.sizes(), axes, keepdim);
               Tensor zero = zeros_like(v);
               // PyTorch's norm_backward, case by case.
               if (p == 0) return Grads{zero};
               if (p == 1) return Grads{gi * v.sign()};
               if (std::isinf(p)) { // shared by the elements at the extremum, or NaN
                 Tensor a = v.abs();
                 Tensor hit = logical_or(a == yi, a.isnan());
                 Tensor n = ag::unreduce(hit.sum(axes, true), v.sizes(), axes, true);
                 return Grads{v.sign() * ((gi / n) * hit)};
               }
               if (p == 2) return Grads{where(yi == 0, zero, gi * v / yi)};
               if (p < 1) // sgn(x) |x|^(p-1), 0 at 0, times g y^(1-p)
                 return Grads{where(v == 0, zero, v.sign() * v.abs().pow(p - 1)) * gi *
                              yi.pow(1 - p)};
               // sgn(x) |x|^(p-1) for p < 2 (0 at 0), x |x|^(p-2) above; times g / y^(p-1),
               // 0 where y is.
               Tensor scaled = p < 2 ? v.sign() * v.abs().pow(p - 1) : v * v.abs().pow(p - 2);
               return Grads{scaled * where(yi == 0, zero, gi / yi.pow(p - 1))};
             });
  return y;
}

Tensor logsumexp(const Tensor& t, IntArrayRef dims, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "logsumexp");
  // PyTorch 1.13's logsumexp takes real values only.
  if (t.is_complex())
    throw Error(
        fmt::format("logsumexp(): Expected floating point type for result tensor, but got: {}",
                    fe::cpp_type_name(t.dtype())));
  NodePtr x = float_input(t);
  auto axes = normalize_dims(dims, x->ndim());
  const DType out = x->dtype, dt = fe::float_accumulator(out);
  x = fe::cast(x, dt);
  NodePtr m = reduce(Op::ReduceMax, x, axes);
  NodePtr inf = fe::constant(std::numeric_limits<double>::infinity(), dt);
  m = fe::where(fe::binary(Op::CmpEq, fe::unary(Op::Abs, m), inf), fe::constant(0, dt), m);
  NodePtr s = reduce(Op::ReduceSum, fe::unary(Op::Exp, fe::binary(Op::Sub, x, m)), axes);
  Tensor y = finish(fe::binary(Op::Add, fe::unary(Op::Log, s), m), x->shape, axes, keepdim, out);
  ag::record("LogsumexpBackward0", {t}, {y}, {t, y},
             [axes, keepdim](const Grads& g, const Saved& s) {
               const Tensor& v = s[0];
               return Grads{ag::unreduce(g[0], v.sizes(), axes, keepdim) *
                            (v - ag::unreduce(s[1], v.sizes(), axes, keepdim)).exp()};
             });
  return y;
}

Tensor all(const Tensor& t, Caller caller) {
  detail::CallSite site(caller, "all");
  return t.all();
}
Tensor any(const Tensor& t, Caller caller) {
  detail::CallSite site(caller, "any");
  return t.any();
}

namespace {
// A bool result, except uint8 for a uint8 input (as PyTorch keeps it).
Tensor all_any(const Tensor& t, std::optional<int64_t> dim, bool keepdim, Op op) {
  NodePtr x = node_of(t);
  NodePtr b = x->dtype == kBool ? x : fe::binary(Op::CmpNe, x, fe::constant(0, x->dtype));
  auto axes = dim ? normalize_dims({*dim}, x->ndim()) : normalize_dims({}, x->ndim());
  // Through bool: all() of no elements is the 255 that starts a uint8 min.
  NodePtr r = fe::cast(reduce(op, fe::cast(b, kUInt8), axes), kBool);
  return finish(r, x->shape, axes, dim ? keepdim : false, x->dtype == kUInt8 ? kUInt8 : kBool);
}
} // namespace

Tensor Tensor::sum(std::optional<DType> dtype, Caller caller) const {
  return tj::sum(*this, dtype, caller);
}
Tensor Tensor::sum(IntArrayRef dims, bool keepdim, std::optional<DType> dtype,
                   Caller caller) const {
  return tj::sum(*this, dims, keepdim, dtype, caller);
}
Tensor Tensor::mean(std::optional<DType> dtype, Caller caller) const {
  return tj::mean(*this, dtype, caller);
}
Tensor Tensor::mean(IntArrayRef dims, bool keepdim, std::optional<DType> dtype,
                    Caller caller) const {
  return tj::mean(*this, dims, keepdim, dtype, caller);
}
Tensor Tensor::prod(std::optional<DType> dtype, Caller caller) const {
  return tj::prod(*this, dtype, caller);
}
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<DType> dtype, Caller caller) const {
  detail::CallSite site(caller, "prod");
  return sum_prod(Op::ReduceProd, *this, {dim}, keepdim, dtype, "ProdBackward1");
}
Tensor Tensor::max(Caller caller) const { return tj::max(*this, caller); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim, Caller caller) const {
  return tj::max(*this, dim, keepdim, caller);
}
Tensor Tensor::min(Caller caller) const { return tj::min(*this, caller); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim, Caller caller) const {
  return tj::min(*this, dim, keepdim, caller);
}
Tensor Tensor::amax(IntArrayRef dims, bool keepdim, Caller caller) const {
  return tj::amax(*this, dims, keepdim, caller);
}
Tensor Tensor::amin(IntArrayRef dims, bool keepdim, Caller caller) const {
  return tj::amin(*this, dims, keepdim, caller);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim, Caller caller) const {
  return tj::argmax(*this, dim, keepdim, caller);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim, Caller caller) const {
  return tj::argmin(*this, dim, keepdim, caller);
}
Tensor Tensor::var(IntArrayRef dims, int64_t correction, bool keepdim, Caller caller) const {
  return tj::var(*this, dims, correction, keepdim, caller);
}
Tensor Tensor::std(IntArrayRef dims, int64_t correction, bool keepdim, Caller caller) const {
  return tj::std(*this, dims, correction, keepdim, caller);
}
Tensor Tensor::norm(double p, IntArrayRef dims, bool keepdim, Caller caller) const {
  return tj::norm(*this, p, dims, keepdim, caller);
}
Tensor Tensor::logsumexp(IntArrayRef dims, bool keepdim, Caller caller) const {
  return tj::logsumexp(*this, dims, keepdim, caller);
}
Tensor Tensor::all(Caller caller) const {
  detail::CallSite site(caller, "all");
  return all_any(*this, std::nullopt, false, Op::ReduceMin);
}
Tensor Tensor::all(int64_t dim, bool keepdim, Caller caller) const {
  detail::CallSite site(caller, "all");
  return all_any(*this, dim, keepdim, Op::ReduceMin);
}
Tensor Tensor::any(Caller caller) const {
  detail::CallSite site(caller, "any");
  return all_any(*this, std::nullopt, false, Op::ReduceMax);
}
Tensor Tensor::any(int64_t dim, bool keepdim, Caller caller) const {
  detail::CallSite site(caller, "any");
  return all_any(*this, dim, keepdim, Op::ReduceMax);
}

namespace nn::functional {

// PyTorch's CPU softmax kernels take real floats only; their names say which kernel refused.
// The dim is checked first, on a 0-d tensor too.
void check_softmax_input(const Tensor& t, int64_t dim, const char* fn) {
  const int64_t d = ir::wrap_dim(dim, t.dim());
  if (t.is_floating_point()) return;
  const bool last = t.dim() == 0 || d == t.dim() - 1;
  throw Error(fmt::format("\"{}_{}kernel_impl\" not implemented for '{}'", fn,
                          last ? "lastdim_" : "", fe::cpp_type_name(t.dtype())));
}

Tensor softmax(const Tensor& t, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "softmax");
  check_softmax_input(t, dim, "softmax");
  NodePtr x = float_input(t);
  std::vector<int64_t> axes{ir::wrap_dim(dim, x->ndim())};
  const DType out = x->dtype;
  Tensor y;
  if (x->ndim() == 0) {
    y = wrap(fe::constant(1.0, out, {}, x->device));
  } else {
    // e * (1 / sum e), as PyTorch's CPU kernel computes it: one division per row, not one per
    // element (a vector division costs as much as the rest of the row's work).
    x = fe::cast(x, fe::float_accumulator(out));
    NodePtr e = fe::unary(Op::Exp, fe::binary(Op::Sub, x, reduce(Op::ReduceMax, x, axes)));
    y = wrap(fe::cast(fe::binary(Op::Mul, e, fe::unary(Op::Recip, reduce(Op::ReduceSum, e, axes))),
                      out));
  }
  // y (g - sum(g y)): the backward reads the forward's output, not its exp.
  ag::record("SoftmaxBackward0", {t}, {y}, {y}, [axes](const Grads& g, const Saved& s) {
    if (s[0].dim() == 0) return Grads{zeros_like(g[0])};
    return Grads{s[0] * (g[0] - (g[0] * s[0]).sum(axes, true))};
  });
  return y;
}

Tensor log_softmax(const Tensor& t, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "log_softmax");
  check_softmax_input(t, dim, "log_softmax");
  NodePtr x = float_input(t);
  const DType out = x->dtype;
  Tensor y;
  std::vector<int64_t> axes;
  if (x->ndim() == 0) {
    y = wrap(fe::constant(0.0, out, {}, x->device));
  } else {
    axes = {ir::wrap_dim(dim, x->ndim())};
    x = fe::cast(x, fe::float_accumulator(out));
    NodePtr shifted = fe::binary(Op::Sub, x, reduce(Op::ReduceMax, x, axes));
    NodePtr lse = fe::unary(Op::Log, reduce(Op::ReduceSum, fe::unary(Op::Exp, shifted), axes));
    y = wrap(fe::cast(fe::binary(Op::Sub, shifted, lse), out));
  }
  ag::record("LogSoftmaxBackward0", {t}, {y}, {y}, [axes](const Grads& g, const Saved& s) {
    if (s[0].dim() == 0) return Grads{zeros_like(g[0])};
    return Grads{g[0] - s[0].exp() * g[0].sum(axes, true)};
  });
  return y;
}

Tensor layer_norm(const Tensor& t, IntArrayRef normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps, Caller caller) {
  detail::CallSite site(caller, "layer_norm");
  NodePtr x = node_of(t);
  size_t n = normalized_shape.size();
  // PyTorch's checks, in its order: the normalized shape, then weight and bias against it, then
  // the input.
  if (n == 0)
    throw Error("Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                "least one element, but got normalized_shape = []");
  const Shape normalized(normalized_shape.begin(), normalized_shape.end());
  for (const auto& [p, name] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
    if (p->defined() && p->sizes() != normalized)
      throw Error(fmt::format("Expected {0} to be of same shape as normalized_shape, but got {0} "
                              "of shape {1} and normalized_shape = {2}",
                              name, ir::shape_str(p->sizes()), ir::shape_str(normalized)));
  bool ok = n <= x->shape.size() && std::equal(normalized_shape.begin(), normalized_shape.end(),
                                               x->shape.end() - static_cast<int64_t>(n));
  if (!ok) {
    std::string expect = "[*";
    for (int64_t d : normalized_shape)
      expect += ", " + std::to_string(d);
    throw Error(fmt::format(
        "Given normalized_shape={}, expected input with shape {}], but got input of size{}",
        ir::shape_str(normalized_shape), expect, ir::shape_str(x->shape)));
  }
  check_float(x, "\"LayerNormKernelImpl\" not implemented for '{}'");
  std::vector<int64_t> axes;
  for (size_t i = x->shape.size() - n; i < x->shape.size(); ++i)
    axes.push_back(static_cast<int64_t>(i));
  // As PyTorch's kernel: 16-bit floats normalized in float32 (their weight and bias too) and
  // rounded once; float32 in float32 (its moments too, as PyTorch's), float64 in float64.
  const DType dt = x->dtype, op = fe::float_accumulator(dt);
  NodePtr xo = fe::cast(x, op);
  NodePtr mu = mean_node(xo, axes);
  NodePtr var = var_node(xo, axes, 0, op);
  NodePtr y = fe::binary(
      Op::Mul, fe::binary(Op::Sub, xo, mu),
      fe::unary(Op::Recip, fe::unary(Op::Sqrt, fe::binary(Op::Add, var, fe::constant(eps, op)))));
  if (weight.defined()) y = fe::binary(Op::Mul, y, fe::cast(node_of(weight), op));
  if (bias.defined()) y = fe::binary(Op::Add, y, fe::cast(node_of(bias), op));
  Tensor out = wrap(fe::cast(y, dt));
  // With xhat = (x - mean) rstd and d = g * weight:
  // dx = rstd (d - mean(d) - xhat mean(d xhat)); dweight = sum(g xhat); dbias = sum(g),
  // the sums over the leading (batch) dims.
  ag::record("NativeLayerNormBackward0", {t, weight, bias}, {out}, {t, weight},
             [axes, eps, bt = bias.defined() ? bias.dtype() : dt](const Grads& g, const Saved& s) {
               // In float32 for 16-bit floats, as the forward, each gradient rounded once.
               const DType dt = s[0].dtype(), op = fe::float_accumulator(dt);
               const Tensor v = s[0].to(op), go = g[0].to(op);
               Tensor rstd = (v.var(axes, 0, true) + eps).rsqrt();
               Tensor xhat = (v - v.mean(axes, true)) * rstd;
               Tensor d = s[1].defined() ? go * s[1].to(op) : go;
               Tensor dx = rstd * (d - d.mean(axes, true) - xhat * (d * xhat).mean(axes, true));
               Shape wshape(v.sizes().end() - static_cast<int64_t>(axes.size()), v.sizes().end());
               const DType wt = s[1].defined() ? s[1].dtype() : dt;
               return Grads{dx.to(dt), ag::sum_to(go * xhat, wshape).to(wt),
                            ag::sum_to(go, wshape).to(bt)};
             });
  return out;
}

Tensor relu(const Tensor& t, Caller caller) { return tj::relu(t, caller); }
Tensor gelu(const Tensor& t, Caller caller) { return tj::gelu(t, caller); }

// The composites below record through their parts; their last node takes
// PyTorch's name for the op.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Caller caller) {
  detail::CallSite site(caller, "linear");
  Tensor y = x.matmul(weight.t());
  if (!bias.defined()) return y;
  y = y + bias;
  if (x.dim() == 2) ag::rename(y, "AddmmBackward0");
  return y;
}

} // namespace nn::functional
Tensor Tensor::softmax(int64_t dim, Caller caller) const {
  return nn::functional::softmax(*this, dim, caller);
}
Tensor Tensor::log_softmax(int64_t dim, Caller caller) const {
  return nn::functional::log_softmax(*this, dim, caller);
}

} // namespace tj
