// Elementwise ops of the public API: promotion, dtype checks, and the
// decomposition of composite ops into the primitives of ops.def.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "lib/autograd/derivatives.h"
#include "lib/autograd/formulas.h"
#include "lib/frontend/graph_builders.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "tensorjit/functions.h"

namespace tj {

using detail::node_of;
using detail::wrap;
using fe::NodePtr;
using fe::Operand;
using fe::operand;
using ir::Op;
namespace ag = autograd;

namespace {

using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

NodePtr bin(Op op, const Operand& a, const Operand& b, DType t) {
  return fe::binary_as(op, a.node, b.node, t);
}

void check_integral(const Operand& a, const Operand& b, DType t, const char* name) {
  if (!is_integral(t, true))
    throw Error(fmt::format("\"{}_cpu\" not implemented for '{}'", name, fe::cpp_type_name(t)));
}

// The dtype a floating-point op computes in: floats keep theirs, others go to the default.
DType float_type(DType t) { return is_floating_point(t) || is_complex(t) ? t : default_dtype(); }

// PyTorch's alpha_check for add and sub.
void check_alpha(DType t, const Scalar& alpha) {
  if (alpha.is_bool() && t != kBool)
    throw Error("Boolean alpha only supported for Boolean results.");
  if (!is_floating_point(t) && !is_complex(t) && !alpha.is_integral() && !alpha.is_bool())
    throw Error("For integral input tensors, argument alpha must not be a floating point number.");
  if (!is_complex(t) && alpha.is_complex())
    throw Error("For non-complex input tensors, argument alpha must not be a complex number.");
}

Scalar negated(const Scalar& v) {
  return v.is_complex() ? Scalar(-v.to_complex()) : Scalar(-v.to_double());
}

Scalar conjugated(const Scalar& v) {
  return v.is_complex() ? Scalar(std::conj(v.to_complex())) : v;
}

// PyTorch's "<kernel>" not implemented for 'Bool', for ops without a bool kernel.
void reject_bool(DType t, const char* kernel) {
  if (t == kBool) throw Error(fmt::format("\"{}\" not implemented for 'Bool'", kernel));
}

// The same for ops without a complex kernel, named as PyTorch's kernel rather than the
// primitive the op is built of.
void reject_complex(DType t, const char* kernel) {
  if (is_complex(t))
    throw Error(fmt::format("\"{}\" not implemented for '{}'", kernel, fe::cpp_type_name(t)));
}

// --- arithmetic over operands (tensor or scalar on either side) ---

// a + alpha * b: the gradients are g and conj(alpha) * g, summed back over broadcasting.
void record_add_sub(const char* name, const Operand& a, const Operand& b, const Tensor& out,
                    const Scalar& alpha) {
  if (!ag::any_requires_grad(a.tensor, b.tensor)) return;
  ag::record(name, {a.tensor, b.tensor}, {out}, {},
             [alpha, sa = a.node->shape, sb = b.node->shape](const Grads& g, const Saved&) {
               Tensor gb = alpha == Scalar(1) ? g[0] : g[0] * conjugated(alpha);
               return Grads{ag::sum_to(g[0], sa), ag::sum_to(gb, sb)};
             });
}

// A binary primitive's result, recorded with the primitive's gradient.
Tensor recorded(Op op, const Operand& a, const Operand& b, Tensor out, const char* name = nullptr) {
  if (ag::any_requires_grad(a.tensor, b.tensor))
    ag::record_binary(op, a.as_tensor(), b.as_tensor(), out, name);
  return out;
}

Tensor add_impl(const Operand& a, const Operand& b, const Scalar& alpha) {
  DType t = fe::result_type({a, b});
  check_alpha(t, alpha);
  if (t == kBool) // PyTorch: bool + bool is logical or (a + alpha * b, alpha as a bool)
    return wrap(alpha.to_bool() ? bin(Op::Or, a, b, t) : fe::cast(a.node, t));
  NodePtr y = b.node;
  if (!(alpha == Scalar(1))) y = fe::binary(Op::Mul, fe::cast(y, t), fe::constant(alpha, t));
  Tensor out = wrap(fe::binary_as(Op::Add, a.node, y, t));
  record_add_sub("AddBackward0", a, b, out, alpha);
  return out;
}

Tensor sub_impl(const Operand& a, const Operand& b, const Scalar& alpha) {
  DType t = fe::result_type({a, b});
  if (a.node->dtype == kBool && b.node->dtype == kBool)
    throw Error("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                "`^` or `logical_xor()` operator instead.");
  if (a.node->dtype == kBool || b.node->dtype == kBool)
    throw Error("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  check_alpha(t, alpha);
  NodePtr y = fe::cast(b.node, t);
  if (!(alpha == Scalar(1))) y = fe::binary(Op::Mul, y, fe::constant(alpha, t));
  Tensor out = wrap(fe::binary(Op::Sub, fe::cast(a.node, t), y));
  record_add_sub(a.wrapped ? "RsubBackward1" : "SubBackward0", a, b, out, negated(alpha));
  return out;
}

// Whether a 16-bit float result of a product or quotient by `s` is computed as PyTorch 2's CPU
// kernels compute one by a scalar (a number, or a 0-d tensor of another dtype): in float32, with
// s's own value rather than s rounded to 16 bits, then rounded once. In float16, 7 * (1 / 3) is
// then 2.334, not 2.332.
bool by_scalar_in_float32(DType t, const Operand& s) {
  return (t == kFloat16 || t == kBFloat16) && s.node->shape.empty() && s.node->dtype != t;
}

// op(a, b) in float32 (b the scalar), rounded to t.
NodePtr in_float32(Op op, const Operand& a, const Operand& b, DType t) {
  return fe::cast(fe::binary(op, fe::cast(a.node, kFloat32), fe::cast(b.node, kFloat32)), t);
}

Tensor mul_impl(const Operand& a, const Operand& b) {
  DType t = fe::result_type({a, b});
  // A number multiplies from either side (PyTorch's s * t is t.mul(s)).
  if (by_scalar_in_float32(t, b))
    return recorded(Op::Mul, a, b, wrap(in_float32(Op::Mul, a, b, t)));
  if (a.wrapped && by_scalar_in_float32(t, a))
    return recorded(Op::Mul, a, b, wrap(in_float32(Op::Mul, b, a, t)));
  return recorded(Op::Mul, a, b, wrap(bin(t == kBool ? Op::And : Op::Mul, a, b, t)));
}

Tensor div_impl(const Operand& a, const Operand& b) {
  DType t = float_type(fe::result_type({a, b}));
  if (by_scalar_in_float32(t, b))
    return recorded(Op::Div, a, b, wrap(in_float32(Op::Div, a, b, t)));
  return recorded(Op::Div, a, b, wrap(bin(Op::Div, a, b, t)));
}

// Python's floor division.
NodePtr floor_div_nodes(NodePtr x, NodePtr y, DType t) {
  if (is_integral(t, true)) {
    // Truncating quotient, corrected down when the signs differ and it was inexact.
    NodePtr q = fe::binary(Op::Div, x, y);
    NodePtr r = fe::binary(Op::Fmod, x, y);
    NodePtr zero = fe::constant(0, t);
    NodePtr inexact = fe::binary(Op::CmpNe, r, zero);
    NodePtr signs_differ =
        fe::binary(Op::Xor, fe::binary(Op::CmpLt, r, zero), fe::binary(Op::CmpLt, y, zero));
    NodePtr fix = fe::binary(Op::And, inexact, signs_differ);
    return fe::binary(Op::Sub, q, fe::cast(fix, t));
  }
  // As PyTorch's div_floor: exact quotient of (x - fmod(x, y)) / y, then floor with rounding fix.
  NodePtr mod = fe::binary(Op::Fmod, x, y);
  NodePtr div = fe::binary(Op::Div, fe::binary(Op::Sub, x, mod), y);
  NodePtr zero = fe::constant(0, t);
  NodePtr fix = fe::binary(
      Op::And, fe::binary(Op::CmpNe, mod, zero),
      fe::binary(Op::Xor, fe::binary(Op::CmpLt, y, zero), fe::binary(Op::CmpLt, mod, zero)));
  div = fe::where(fix, fe::binary(Op::Sub, div, fe::constant(1, t)), div);
  NodePtr fl = fe::unary(Op::Floor, div);
  NodePtr up = fe::binary(Op::CmpLt, fe::constant(0.5, t), fe::binary(Op::Sub, div, fl));
  fl = fe::where(up, fe::binary(Op::Add, fl, fe::constant(1, t)), fl);
  // A zero quotient takes the sign of x / y; division by zero gives x / y itself.
  NodePtr plain = fe::binary(Op::Div, x, y);
  NodePtr signed_zero = fe::binary(Op::Mul, fe::unary(Op::Abs, zero), plain);
  NodePtr res = fe::where(fe::binary(Op::CmpEq, div, zero), signed_zero, fl);
  return fe::where(fe::binary(Op::CmpEq, y, zero), plain, res);
}

// Integer division by a zero known now fails now, as in PyTorch, before any
// write; by a zero computed later, when the graph is materialized.
// An empty result divides nothing and does not throw, as in PyTorch.
void check_divisor(DType t, const Operand& a, const Operand& b) {
  if (is_integral(t, true) && b.node->op == Op::Const && b.node->value.to_int() == 0 &&
      ir::numel(ir::broadcast_shapes(a.node->shape, b.node->shape)) > 0)
    throw Error("ZeroDivisionError");
}

Tensor floor_divide_impl(const Operand& a, const Operand& b) {
  DType t = fe::result_type({a, b});
  reject_bool(t, "div_floor_cpu");
  reject_complex(t, "div_floor_cpu");
  check_divisor(t, a, b);
  if (by_scalar_in_float32(t, b))
    return wrap(fe::cast(
        floor_div_nodes(fe::cast(a.node, kFloat32), fe::cast(b.node, kFloat32), kFloat32), t));
  return wrap(floor_div_nodes(fe::cast(a.node, t), fe::cast(b.node, t), t));
}

// div(a, b, rounding_mode): "trunc" rounds the quotient toward zero (integers divide as C
// does), "floor" is floor_divide. Neither has a gradient: PyTorch's DivBackward2 (a tensor
// divisor) and DivBackward3 (a number) pass zeros.
Tensor div_mode_impl(const Operand& a, const Operand& b, std::optional<std::string_view> mode) {
  if (!mode) return div_impl(a, b);
  if (*mode != "trunc" && *mode != "floor")
    throw Error(fmt::format("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                            "but found '{}'",
                            *mode));
  Tensor out;
  if (*mode == "floor") {
    out = floor_divide_impl(a, b);
  } else {
    const DType t = fe::result_type({a, b});
    reject_bool(t, "div_trunc_cpu");
    reject_complex(t, "div_trunc_cpu");
    check_divisor(t, a, b);
    if (is_integral(t, true))
      out = wrap(bin(Op::Div, a, b, t)); // integer division truncates
    else if (by_scalar_in_float32(t, b))
      out = wrap(fe::cast(fe::unary(Op::Trunc, fe::binary(Op::Div, fe::cast(a.node, kFloat32),
                                                          fe::cast(b.node, kFloat32))),
                          t));
    else
      out = wrap(fe::unary(Op::Trunc, bin(Op::Div, a, b, t)));
  }
  if (!ag::any_requires_grad(a.tensor, b.tensor)) return out;
  std::vector<Tensor> inputs{a.tensor};
  if (b.tensor.defined()) inputs.push_back(b.tensor);
  ag::record_zero_grads(b.tensor.defined() ? "DivBackward2" : "DivBackward3", inputs, out);
  return out;
}

Tensor remainder_impl(const Operand& a, const Operand& b) {
  DType t = fe::result_type({a, b});
  reject_bool(t, "remainder_cpu");
  reject_complex(t, "remainder_cpu");
  check_divisor(t, a, b);
  NodePtr x = fe::cast(a.node, t), y = fe::cast(b.node, t);
  NodePtr r = fe::binary(Op::Fmod, x, y);
  NodePtr zero = fe::constant(0, t);
  NodePtr fix = fe::binary(
      Op::And, fe::binary(Op::CmpNe, r, zero),
      fe::binary(Op::Xor, fe::binary(Op::CmpLt, r, zero), fe::binary(Op::CmpLt, y, zero)));
  Tensor out = wrap(fe::where(fix, fe::binary(Op::Add, r, y), r));
  // a - floor(a / b) * b
  ag::record("RemainderBackward0", {a.tensor, b.tensor}, {out}, {a.as_tensor(), b.as_tensor()},
             [sa = a.node->shape, sb = b.node->shape](const Grads& g, const Saved& s) {
               return Grads{ag::sum_to(g[0], sa), ag::sum_to(-g[0] * (s[0] / s[1]).floor(), sb)};
             });
  return out;
}

Tensor fmod_impl(const Operand& a, const Operand& b) {
  DType t = fe::result_type({a, b});
  reject_bool(t, "fmod_cpu");
  check_divisor(t, a, b);
  return recorded(Op::Fmod, a, b, wrap(bin(Op::Fmod, a, b, t)));
}

// 1 / sqrt(x) as PyTorch's rsqrt: 16-bit floats in float32, rounded once.
NodePtr reciprocal_sqrt(const NodePtr& x) {
  const DType wide = fe::float_accumulator(x->dtype);
  return fe::cast(fe::unary(Op::Recip, fe::unary(Op::Sqrt, fe::cast(x, wide))), x->dtype);
}

Tensor pow_impl(const Operand& a, const Operand& b) {
  DType t = fe::result_type({a, b});
  reject_bool(t, "pow");
  if (b.wrapped && is_integral(t) && b.node->value.is_integral() && b.node->value.to_int() < 0)
    throw Error("Integers to negative integer powers are not allowed.");
  if (b.wrapped) {
    // An integer power's exponent is taken to the base's dtype, checked as PyTorch's kernel
    // takes it.
    if (is_integral(t)) fe::check_scalar_fits(b.node->value, t);
    // The exponents PyTorch's kernel computes otherwise than by pow, for float32, float64,
    // bfloat16 and complex (float16 takes std::pow, whose results for 2 and -1 a product and a
    // reciprocal give as well): 0.5 a square root, -0.5 its reciprocal
    // (pow(-0., -0.5) is -inf, pow(-inf, 0.5) NaN), -1 a reciprocal, 2 and 3 products, -2 the
    // reciprocal of the square, each step rounded (bfloat16's too). An exponent with an
    // imaginary part is none of them.
    const Scalar& exponent = b.node->value;
    const double e =
        exponent.imag() == 0.0 ? exponent.to_double() : std::numeric_limits<double>::quiet_NaN();
    NodePtr x = fe::cast(a.node, t);
    const bool special = t == kFloat32 || t == kFloat64 || t == kBFloat16 || is_complex(t);
    Tensor out;
    if (e == 1.0)
      out = wrap(x);
    else if (e == 2.0)
      out = wrap(fe::binary(Op::Mul, x, x));
    else if (special && e == 3.0)
      out = wrap(fe::binary(Op::Mul, fe::binary(Op::Mul, x, x), x));
    else if (special && e == -2.0)
      out = wrap(fe::unary(Op::Recip, fe::binary(Op::Mul, x, x)));
    else if (special && e == 0.5)
      out = wrap(fe::unary(Op::Sqrt, x));
    else if (special && e == -0.5)
      out = wrap(reciprocal_sqrt(x));
    else if (is_floating_point(t) && e == -1.0)
      out = wrap(fe::unary(Op::Recip, x));
    else
      out = wrap(bin(Op::Pow, a, b, t));
    // conj(e * x^(e - 1)); zero for e == 0.
    ag::record("PowBackward0", {a.tensor}, {out}, {a.tensor},
               [e, exponent](const Grads& g, const Saved& s) {
                 if (e == 0.0) return Grads{zeros_like(g[0])};
                 if (e == 1.0) return Grads{g[0]};
                 if (e == 2.0) return Grads{g[0] * s[0].conj() * 2};
                 if (exponent.is_complex()) {
                   const std::complex<double> w = exponent.to_complex();
                   return Grads{g[0] * (s[0].pow(Scalar(w - 1.0)) * Scalar(w)).conj()};
                 }
                 return Grads{g[0] * e * s[0].pow(e - 1).conj()};
               });
    return out;
  }
  return recorded(Op::Pow, a, b, wrap(bin(Op::Pow, a, b, t)),
                  a.wrapped ? "PowBackward2" : "PowBackward1");
}

Tensor compare(Op op, const Operand& a, const Operand& b, bool swap) {
  DType t = fe::result_type({a, b});
  // gt and ge are lt and le of the swapped operands, but refuse complex in their own names.
  if (swap) reject_complex(t, op == Op::CmpLt ? "gt_cpu" : "ge_cpu");
  return swap ? wrap(bin(op, b, a, t)) : wrap(bin(op, a, b, t));
}

Tensor bitwise(Op op, const Operand& a, const Operand& b, const char* name) {
  DType t = fe::result_type({a, b});
  check_integral(a, b, t, name);
  return wrap(bin(op, a, b, t));
}

NodePtr truthy(const NodePtr& x) {
  return x->dtype == kBool ? x : fe::binary(Op::CmpNe, x, fe::constant(0, x->dtype));
}

// A unary primitive's result, recorded with the primitive's gradient.
Tensor recorded(Op op, const Tensor& a, Tensor out) {
  ag::record_unary(op, a, out);
  return out;
}

// Unary float functions promote integers to the default float dtype.
Tensor float_unary(Op op, const Tensor& a) {
  NodePtr x = node_of(a);
  return recorded(op, a, wrap(fe::unary(op, fe::cast(x, float_type(x->dtype)))));
}

} // namespace

// --- binary API ---
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha, Caller caller) {
  detail::CallSite site(caller, "add");
  return add_impl(operand(a), operand(b), alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha, Caller caller) {
  detail::CallSite site(caller, "sub");
  return sub_impl(operand(a), operand(b), alpha);
}
Tensor mul(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "mul");
  return mul_impl(operand(a), operand(b));
}
Tensor div(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "div");
  return div_impl(operand(a), operand(b));
}
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode,
           Caller caller) {
  detail::CallSite site(caller, "div");
  return div_mode_impl(operand(a), operand(b), rounding_mode);
}
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string_view> rounding_mode,
           Caller caller) {
  detail::CallSite site(caller, "div");
  return div_mode_impl(operand(a), operand(b), rounding_mode);
}
Tensor pow(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "pow");
  return pow_impl(operand(a), operand(b));
}
Tensor pow(const Tensor& a, const Scalar& b, Caller caller) {
  detail::CallSite site(caller, "pow");
  return pow_impl(operand(a), operand(b));
}
Tensor pow(const Scalar& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "pow");
  return pow_impl(operand(a), operand(b));
}
Tensor floor_divide(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "floor_divide");
  return floor_divide_impl(operand(a), operand(b));
}
Tensor remainder(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "remainder");
  return remainder_impl(operand(a), operand(b));
}
Tensor fmod(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "fmod");
  return fmod_impl(operand(a), operand(b));
}
Tensor maximum(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "maximum");
  DType t = fe::result_type({operand(a), operand(b)});
  if (is_complex(t)) throw Error("maximum not implemented for complex tensors.");
  return recorded(Op::Max, operand(a), operand(b), wrap(bin(Op::Max, operand(a), operand(b), t)));
}
Tensor minimum(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "minimum");
  DType t = fe::result_type({operand(a), operand(b)});
  if (is_complex(t)) throw Error("minimum not implemented for complex tensors.");
  return recorded(Op::Min, operand(a), operand(b), wrap(bin(Op::Min, operand(a), operand(b), t)));
}
Tensor logaddexp(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "logaddexp");
  DType t = fe::result_type({operand(a), operand(b)});
  if (!is_floating_point(t))
    throw Error(fmt::format("\"logaddexp_cpu\" not implemented for '{}'", fe::cpp_type_name(t)));
  return recorded(Op::LogAddExp, operand(a), operand(b),
                  wrap(bin(Op::LogAddExp, operand(a), operand(b), t)));
}
// The C math library's two-argument functions (elementwise_functions.def): in the default float
// dtype for integer operands, or an error for them, as the row says.
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints)                                              \
  Tensor name(const Tensor& a, const Tensor& b, Caller caller) {                                   \
    detail::CallSite site(caller, #name);                                                          \
    DType t = fe::result_type({operand(a), operand(b)});                                           \
    if (!(promotes_ints) && !is_floating_point(t))                                                 \
      throw Error(                                                                                 \
          fmt::format("\"{}_cpu\" not implemented for '{}'", #name, fe::cpp_type_name(t)));        \
    t = float_type(t);                                                                             \
    return recorded(Op::op, operand(a), operand(b), wrap(bin(Op::op, operand(a), operand(b), t))); \
  }
#include "tensorjit/elementwise_functions.def"
Tensor eq(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "eq");
  return compare(Op::CmpEq, operand(a), operand(b), false);
}
Tensor ne(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "ne");
  return compare(Op::CmpNe, operand(a), operand(b), false);
}
Tensor lt(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "lt");
  return compare(Op::CmpLt, operand(a), operand(b), false);
}
Tensor le(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "le");
  return compare(Op::CmpLe, operand(a), operand(b), false);
}
Tensor gt(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "gt");
  return compare(Op::CmpLt, operand(a), operand(b), true);
}
Tensor ge(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "ge");
  return compare(Op::CmpLe, operand(a), operand(b), true);
}
Tensor logical_and(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "logical_and");
  return wrap(fe::binary(Op::And, truthy(node_of(a)), truthy(node_of(b))));
}
Tensor logical_or(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "logical_or");
  return wrap(fe::binary(Op::Or, truthy(node_of(a)), truthy(node_of(b))));
}
Tensor logical_xor(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "logical_xor");
  return wrap(fe::binary(Op::Xor, truthy(node_of(a)), truthy(node_of(b))));
}
Tensor logical_not(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "logical_not");
  return wrap(fe::unary(Op::Not, truthy(node_of(a))));
}
Tensor bitwise_and(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "bitwise_and");
  return bitwise(Op::And, operand(a), operand(b), "bitwise_and");
}
Tensor bitwise_or(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "bitwise_or");
  return bitwise(Op::Or, operand(a), operand(b), "bitwise_or");
}
Tensor bitwise_xor(const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "bitwise_xor");
  return bitwise(Op::Xor, operand(a), operand(b), "bitwise_xor");
}
Tensor bitwise_not(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "bitwise_not");
  NodePtr x = node_of(a);
  if (!is_integral(x->dtype, true))
    throw Error(
        fmt::format("\"bitwise_not_cpu\" not implemented for '{}'", fe::cpp_type_name(x->dtype)));
  return wrap(fe::unary(x->dtype == kBool ? Op::Not : Op::BitNot, x));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "where");
  NodePtr c = node_of(cond);
  if (c->dtype != kBool)
    throw Error(fmt::format(
        "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
        fe::cpp_type_name(c->dtype)));
  DType t = fe::result_type({operand(a), operand(b)});
  Tensor out = wrap(fe::where(c, fe::cast(node_of(a), t), fe::cast(node_of(b), t)));
  ag::record("WhereBackward0", {a, b}, {out}, {cond},
             [sa = a.sizes(), sb = b.sizes()](const Grads& g, const Saved& s) {
               Tensor zero = zeros_like(g[0]);
               return Grads{ag::sum_to(where(s[0], g[0], zero), sa),
                            ag::sum_to(where(s[0], zero, g[0]), sb)};
             });
  return out;
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b, Caller caller) {
  detail::CallSite site(caller, "where");
  DType t = fe::result_type({operand(a), operand(b)});
  return where(cond, a.to(t), wrap(fe::constant(b, t)));
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b, Caller caller) {
  detail::CallSite site(caller, "where");
  DType t = fe::result_type({operand(a), operand(b)});
  return where(cond, wrap(fe::constant(a, t)), b.to(t));
}

namespace {
// x where it is not below `lo`, else lo: as PyTorch's clamp_min (and so relu), a tie keeps x
// (relu(-0.) is -0.) and NaN stays NaN; Max would give +0 for -0.
NodePtr bounded_below(const NodePtr& x, const NodePtr& lo) {
  return fe::where(fe::binary(Op::CmpLt, x, lo), lo, x);
}
// The same above `hi` (clamp_max): a tie keeps x.
NodePtr bounded_above(const NodePtr& x, const NodePtr& hi) {
  return fe::where(fe::binary(Op::CmpLt, hi, x), hi, x);
}
} // namespace

Tensor clamp(const Tensor& a, std::optional<Scalar> lo, std::optional<Scalar> hi, Caller caller) {
  detail::CallSite site(caller, "clamp");
  if (!lo && !hi) throw Error("torch.clamp: At least one of 'min' or 'max' must not be None");
  if (a.is_complex()) throw Error("clamp is not supported for complex types");
  Operand x = operand(a);
  DType t = lo && hi ? fe::result_type({x, operand(*lo), operand(*hi)})
            : lo     ? fe::result_type({x, operand(*lo)})
                     : fe::result_type({x, operand(*hi)});
  reject_bool(t, lo && hi ? "clamp_scalar_cpu" : lo ? "clamp_min_cpu" : "clamp_max_scalar_cpu");
  if (lo) fe::check_scalar_fits(*lo, t);
  if (hi) fe::check_scalar_fits(*hi, t);
  NodePtr r = fe::cast(x.node, t);
  // Both bounds given and one of them NaN: every element is NaN, as PyTorch's clamp fills it.
  auto nan = [](const std::optional<Scalar>& s) { return std::isnan(s->to_double()); };
  if (lo && hi && (nan(lo) || nan(hi))) {
    r = fe::constant(std::numeric_limits<double>::quiet_NaN(), t, r->shape, r->device);
  } else {
    if (lo) r = bounded_below(r, fe::constant(*lo, t));
    if (hi) r = bounded_above(r, fe::constant(*hi, t));
  }
  Tensor out = wrap(r);
  // The gradient passes where the input is within the bounds.
  ag::record(lo && hi ? "ClampBackward1"
             : lo     ? "ClampMinBackward0"
                      : "ClampMaxBackward0",
             {a}, {out}, {a}, [lo, hi](const Grads& g, const Saved& s) {
               Tensor pass = ones_like(s[0], dtype(kBool));
               if (lo) pass = logical_and(pass, s[0] >= *lo);
               if (hi) pass = logical_and(pass, s[0] <= *hi);
               return Grads{where(pass, g[0], zeros_like(g[0]))};
             });
  return out;
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan,
               Caller caller) {
  detail::CallSite site(caller, "isclose");
  if (a.dtype() != b.dtype())
    throw Error(fmt::format("{} did not match {}", fe::cpp_type_name(a.dtype()),
                            fe::cpp_type_name(b.dtype())));
  if (a.is_complex() && equal_nan)
    throw Error("isclose with equal_nan=True is not supported for complex inputs.");
  if (rtol < 0)
    throw Error(fmt::format("rtol must be greater than or equal to zero, but got {}", rtol));
  if (atol < 0)
    throw Error(fmt::format("atol must be greater than or equal to zero, but got {}", atol));
  // PyTorch's isclose: equal, or (NaN and NaN with equal_nan), or a finite |a - b| within
  // atol + |rtol b|, for every dtype (integers' tolerance is a float, bools count as floats).
  Tensor close = a == b;
  if (equal_nan && a.is_floating_point())
    close = logical_or(close, logical_and(a.isnan(), b.isnan()));
  if (rtol == 0 && atol == 0) return close;
  const Tensor sa = a.dtype() == kBool ? a.to(default_dtype()) : a;
  const Tensor sb = b.dtype() == kBool ? b.to(default_dtype()) : b;
  const Tensor allowed = (sb * rtol).abs() + atol, actual = (sa - sb).abs();
  return logical_or(close, logical_and(actual.isfinite(), actual <= allowed));
}

namespace {
bool all_true(const Tensor& t) {
  for (bool v : t.to_vector<bool>())
    if (!v) return false;
  return true;
}
} // namespace

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return all_true(isclose(a, b, rtol, atol, equal_nan));
}

bool equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  return all_true(eq(a, b));
}

// --- unary API ---
Tensor neg(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "neg");
  if (a.dtype() == kBool)
    throw Error("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead.");
  return recorded(Op::Neg, a, wrap(fe::unary(Op::Neg, node_of(a))));
}
Tensor abs(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "abs");
  if (a.dtype() == kBool) throw Error("\"abs_cpu\" not implemented for 'Bool'");
  return recorded(Op::Abs, a, wrap(fe::unary(Op::Abs, node_of(a)))); // complex: the magnitude
}
Tensor sign(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "sign");
  if (a.is_complex())
    throw Error("Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                "torch.sgn instead.");
  NodePtr x = node_of(a);
  if (x->dtype == kBool) return a;
  DType t = x->dtype;
  NodePtr zero = fe::constant(0, t);
  // PyTorch's (0 < x) - (x < 0): sign(nan) is 0, sign(-0.0) is +0.
  NodePtr s = fe::binary(Op::Sub, fe::cast(fe::binary(Op::CmpLt, zero, x), t),
                         fe::cast(fe::binary(Op::CmpLt, x, zero), t));
  Tensor out = wrap(s);
  ag::record("SignBackward0", {a}, {out}, {},
             [](const Grads& g, const Saved&) { return Grads{zeros_like(g[0])}; });
  return out;
}
#define TJ_ROUNDING(name, op)                                                                      \
  Tensor name(const Tensor& a, Caller caller) {                                                    \
    detail::CallSite site(caller, #name);                                                          \
    reject_bool(a.dtype(), #name "_vml_cpu");                                                      \
    if (a.is_complex()) throw Error(#name " is not supported for complex inputs");                 \
    return is_floating_point(a.dtype()) ? recorded(op, a, wrap(fe::unary(op, node_of(a))))         \
                                        : a.clone();                                               \
  }
TJ_ROUNDING(ceil, Op::Ceil)
TJ_ROUNDING(floor, Op::Floor)
TJ_ROUNDING(round, Op::Round)
TJ_ROUNDING(trunc, Op::Trunc)
#undef TJ_ROUNDING

// round(x, decimals): x * 10^d rounded half to even, then divided back (d < 0: x / 10^-d rounded,
// then multiplied), in float32 for 16-bit floats, as PyTorch's kernel computes it (opmath).
Tensor round(const Tensor& a, int64_t decimals, Caller caller) {
  detail::CallSite site(caller, "round");
  if (!is_floating_point(a.dtype()))
    throw Error(
        fmt::format("\"round_cpu\" not implemented for '{}'", fe::cpp_type_name(a.dtype())));
  const DType t = a.dtype(), math = itemsize(t) == 2 ? kFloat32 : t;
  NodePtr x = fe::cast(node_of(a), math);
  NodePtr p = fe::constant(std::pow(10.0, static_cast<double>(std::abs(decimals))), math);
  NodePtr r = decimals < 0
                  ? fe::binary(Op::Mul, fe::unary(Op::Round, fe::binary(Op::Div, x, p)), p)
                  : fe::binary(Op::Div, fe::unary(Op::Round, fe::binary(Op::Mul, x, p)), p);
  Tensor out = wrap(fe::cast(r, t));
  ag::record("RoundBackward1", {a}, {out}, {},
             [](const Grads& g, const Saved&) { return Grads{zeros_like(g[0])}; });
  return out;
}
#define TJ_FLOAT_UNARY(name, op)                                                                   \
  Tensor name(const Tensor& a, Caller caller) {                                                    \
    detail::CallSite site(caller, #name);                                                          \
    return float_unary(op, a);                                                                     \
  }
TJ_FLOAT_UNARY(sqrt, Op::Sqrt)
TJ_FLOAT_UNARY(reciprocal, Op::Recip)
#define TJ_MATH_FN(name, op, grad_fn) TJ_FLOAT_UNARY(name, Op::op)
#include "tensorjit/elementwise_functions.def"
#undef TJ_FLOAT_UNARY

Tensor rsqrt(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "rsqrt");
  NodePtr x = node_of(a);
  Tensor out = wrap(reciprocal_sqrt(fe::cast(x, float_type(x->dtype))));
  // -0.5 y^3
  ag::record("RsqrtBackward0", {a}, {out}, {out}, [](const Grads& g, const Saved& s) {
    return Grads{g[0] * (s[0] * s[0] * s[0]).conj() * -0.5};
  });
  return out;
}
Tensor square(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "square");
  return pow(a, 2);
} // bool squares to int64, as in PyTorch
Tensor sigmoid(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "sigmoid");
  // 1 / (1 + exp(-x)); 16-bit floats in float32, rounded once, as PyTorch's kernel.
  NodePtr x = node_of(a);
  const DType t = float_type(x->dtype), w = fe::float_accumulator(t);
  x = fe::cast(x, w);
  Tensor out =
      wrap(fe::cast(fe::unary(Op::Recip, fe::binary(Op::Add, fe::constant(1, w),
                                                    fe::unary(Op::Exp, fe::unary(Op::Neg, x)))),
                    t));
  ag::record("SigmoidBackward0", {a}, {out}, {out}, [](const Grads& g, const Saved& s) {
    return Grads{g[0] * s[0].conj() * (1 - s[0]).conj()};
  });
  return out;
}
Tensor relu(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "relu");
  if (a.dtype() == kBool) throw Error("Boolean inputs not supported for relu");
  // PyTorch's relu is clamp_min(x, 0), whose check speaks.
  if (a.is_complex()) throw Error("clamp is not supported for complex types");
  NodePtr x = node_of(a);
  Tensor out = wrap(bounded_below(x, fe::constant(0, x->dtype)));
  // PyTorch's threshold_backward: zero where the result is <= 0, the gradient elsewhere (a NaN
  // result passes it).
  ag::record("ReluBackward0", {a}, {out}, {out}, [](const Grads& g, const Saved& s) {
    return Grads{where(s[0] <= 0, zeros_like(g[0]), g[0])};
  });
  return out;
}
Tensor gelu(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "gelu");
  // PyTorch's default (approximate='none'): x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
  NodePtr x = node_of(a);
  if (!is_floating_point(x->dtype))
    throw Error(
        fmt::format("\"GeluKernelImpl\" not implemented for '{}'", fe::cpp_type_name(x->dtype)));
  // 16-bit floats in float32 (1/sqrt(2) in bfloat16 would be 0.707), rounded once.
  const DType t = x->dtype, w = fe::float_accumulator(t);
  x = fe::cast(x, w);
  NodePtr e = fe::unary(Op::Erf, fe::binary(Op::Mul, x, fe::constant(M_SQRT1_2, w)));
  Tensor out = wrap(fe::cast(fe::binary(Op::Mul, fe::binary(Op::Mul, x, fe::constant(0.5, w)),
                                        fe::binary(Op::Add, fe::constant(1, w), e)),
                             t));
  // Phi(x) + x phi(x), with Phi the normal CDF and phi its density.
  ag::record("GeluBackward0", {a}, {out}, {a}, [](const Grads& g, const Saved& s) {
    const Tensor& v = s[0];
    Tensor cdf = 0.5 * (1 + (v * M_SQRT1_2).erf());
    Tensor pdf = (v * v * -0.5).exp() * (0.5 * M_2_SQRTPI * M_SQRT1_2);
    return Grads{g[0] * (cdf + v * pdf)};
  });
  return out;
}
namespace {
// A complex number is NaN or infinite where a part is, finite where both are.
Tensor either_part(const Tensor& a, Tensor (*test)(const Tensor&, Caller)) {
  return logical_or(test(real(a, {}), {}), test(imag(a, {}), {}));
}
} // namespace

Tensor isnan(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "isnan");
  if (a.is_complex()) return either_part(a, tj::isnan);
  NodePtr x = node_of(a);
  if (!is_floating_point(x->dtype)) return wrap(fe::constant(false, kBool, x->shape, x->device));
  return wrap(fe::binary(Op::CmpNe, x, x));
}
Tensor isinf(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "isinf");
  if (a.is_complex()) return either_part(a, tj::isinf);
  NodePtr x = node_of(a);
  if (!is_floating_point(x->dtype)) return wrap(fe::constant(false, kBool, x->shape, x->device));
  return wrap(fe::binary(Op::CmpEq, fe::unary(Op::Abs, x),
                         fe::constant(std::numeric_limits<double>::infinity(), x->dtype)));
}
Tensor isfinite(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "isfinite");
  if (a.is_complex()) return logical_and(isfinite(real(a, {}), {}), isfinite(imag(a, {}), {}));
  NodePtr x = node_of(a);
  if (!is_floating_point(x->dtype)) return wrap(fe::constant(true, kBool, x->shape, x->device));
  return wrap(fe::binary(Op::CmpLt, fe::unary(Op::Abs, x),
                         fe::constant(std::numeric_limits<double>::infinity(), x->dtype)));
}

// --- Tensor members and operators, in terms of the functions above ---
Tensor Tensor::add(const Tensor& o, const Scalar& alpha, Caller caller) const {
  detail::CallSite site(caller, "add");
  return add_impl(operand(*this), operand(o), alpha);
}
Tensor Tensor::add(const Scalar& o, const Scalar& alpha, Caller caller) const {
  detail::CallSite site(caller, "add");
  return add_impl(operand(*this), operand(o), alpha);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha, Caller caller) const {
  detail::CallSite site(caller, "sub");
  return sub_impl(operand(*this), operand(o), alpha);
}
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha, Caller caller) const {
  detail::CallSite site(caller, "sub");
  return sub_impl(operand(*this), operand(o), alpha);
}
Tensor Tensor::mul(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "mul");
  return mul_impl(operand(*this), operand(o));
}
Tensor Tensor::mul(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "mul");
  return mul_impl(operand(*this), operand(o));
}
Tensor Tensor::div(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "div");
  return div_impl(operand(*this), operand(o));
}
Tensor Tensor::div(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "div");
  return div_impl(operand(*this), operand(o));
}
Tensor Tensor::pow(const Tensor& e, Caller caller) const {
  detail::CallSite site(caller, "pow");
  return pow_impl(operand(*this), operand(e));
}
Tensor Tensor::pow(const Scalar& e, Caller caller) const {
  detail::CallSite site(caller, "pow");
  return pow_impl(operand(*this), operand(e));
}
Tensor Tensor::div(const Tensor& o, std::optional<std::string_view> rounding_mode,
                   Caller caller) const {
  detail::CallSite site(caller, "div");
  return div_mode_impl(operand(*this), operand(o), rounding_mode);
}
Tensor Tensor::div(const Scalar& o, std::optional<std::string_view> rounding_mode,
                   Caller caller) const {
  detail::CallSite site(caller, "div");
  return div_mode_impl(operand(*this), operand(o), rounding_mode);
}
Tensor Tensor::round(int64_t decimals, Caller caller) const {
  return tj::round(*this, decimals, caller);
}
Tensor Tensor::floor_divide(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "floor_divide");
  return floor_divide_impl(operand(*this), operand(o));
}
Tensor Tensor::floor_divide(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "floor_divide");
  return floor_divide_impl(operand(*this), operand(o));
}
Tensor Tensor::remainder(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "remainder");
  return remainder_impl(operand(*this), operand(o));
}
Tensor Tensor::remainder(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "remainder");
  return remainder_impl(operand(*this), operand(o));
}
Tensor Tensor::fmod(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "fmod");
  return fmod_impl(operand(*this), operand(o));
}
Tensor Tensor::fmod(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "fmod");
  return fmod_impl(operand(*this), operand(o));
}
Tensor Tensor::maximum(const Tensor& o, Caller caller) const {
  return tj::maximum(*this, o, caller);
}
Tensor Tensor::minimum(const Tensor& o, Caller caller) const {
  return tj::minimum(*this, o, caller);
}
Tensor Tensor::logaddexp(const Tensor& o, Caller caller) const {
  return tj::logaddexp(*this, o, caller);
}
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints)                                              \
  Tensor Tensor::name(const Tensor& o, Caller caller) const { return tj::name(*this, o, caller); }
#include "tensorjit/elementwise_functions.def"
Tensor Tensor::eq(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "eq");
  return compare(Op::CmpEq, operand(*this), operand(o), false);
}
Tensor Tensor::eq(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "eq");
  return compare(Op::CmpEq, operand(*this), operand(o), false);
}
Tensor Tensor::ne(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "ne");
  return compare(Op::CmpNe, operand(*this), operand(o), false);
}
Tensor Tensor::ne(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "ne");
  return compare(Op::CmpNe, operand(*this), operand(o), false);
}
Tensor Tensor::lt(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "lt");
  return compare(Op::CmpLt, operand(*this), operand(o), false);
}
Tensor Tensor::lt(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "lt");
  return compare(Op::CmpLt, operand(*this), operand(o), false);
}
Tensor Tensor::le(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "le");
  return compare(Op::CmpLe, operand(*this), operand(o), false);
}
Tensor Tensor::le(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "le");
  return compare(Op::CmpLe, operand(*this), operand(o), false);
}
Tensor Tensor::gt(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "gt");
  return compare(Op::CmpLt, operand(*this), operand(o), true);
}
Tensor Tensor::gt(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "gt");
  return compare(Op::CmpLt, operand(*this), operand(o), true);
}
Tensor Tensor::ge(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "ge");
  return compare(Op::CmpLe, operand(*this), operand(o), true);
}
Tensor Tensor::ge(const Scalar& o, Caller caller) const {
  detail::CallSite site(caller, "ge");
  return compare(Op::CmpLe, operand(*this), operand(o), true);
}
Tensor Tensor::logical_and(const Tensor& o, Caller caller) const {
  return tj::logical_and(*this, o, caller);
}
Tensor Tensor::logical_or(const Tensor& o, Caller caller) const {
  return tj::logical_or(*this, o, caller);
}
Tensor Tensor::logical_xor(const Tensor& o, Caller caller) const {
  return tj::logical_xor(*this, o, caller);
}
Tensor Tensor::bitwise_and(const Tensor& o, Caller caller) const {
  return tj::bitwise_and(*this, o, caller);
}
Tensor Tensor::bitwise_or(const Tensor& o, Caller caller) const {
  return tj::bitwise_or(*this, o, caller);
}
Tensor Tensor::bitwise_xor(const Tensor& o, Caller caller) const {
  return tj::bitwise_xor(*this, o, caller);
}
#define TJ_MEMBER_UNARY(name)                                                                      \
  Tensor Tensor::name(Caller caller) const { return tj::name(*this, caller); }
#define TJ_UNARY_FN(name, has_inplace) TJ_MEMBER_UNARY(name)
#define TJ_MATH_FN(name, op, grad_fn) TJ_MEMBER_UNARY(name)
#include "tensorjit/elementwise_functions.def"
#undef TJ_MEMBER_UNARY
Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi, Caller caller) const {
  return tj::clamp(*this, lo, hi, caller);
}
Tensor Tensor::where(const Tensor& cond, const Tensor& other, Caller caller) const {
  return tj::where(cond, *this, other, caller);
}
bool Tensor::allclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  return tj::allclose(*this, o, rtol, atol, equal_nan);
}
Tensor Tensor::isclose(const Tensor& o, double rtol, double atol, bool equal_nan,
                       Caller caller) const {
  return tj::isclose(*this, o, rtol, atol, equal_nan, caller);
}
bool Tensor::equal(const Tensor& o) const { return tj::equal(*this, o); }

Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return a.add(b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add_impl(operand(a), operand(b), 1); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return a.sub(b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub_impl(operand(a), operand(b), 1); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return a.mul(b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul_impl(operand(a), operand(b)); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return a.div(b); }
// Python's s / t: t.reciprocal() * s (its values and MulBackward0), as s - t is Python's rsub.
Tensor operator/(const Scalar& a, const Tensor& b) { return reciprocal(b) * a; }
Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return a.eq(b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return a.ne(b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return a.lt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return a.le(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return a.gt(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return a.ge(b); }
Tensor operator&(const Tensor& a, const Tensor& b) { return a.bitwise_and(b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return a.bitwise_or(b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }
Tensor operator~(const Tensor& a) { return a.bitwise_not(); }

} // namespace tj
