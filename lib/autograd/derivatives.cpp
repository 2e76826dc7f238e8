// The vector-Jacobian products of the elementwise primitives. Written with
// the public ops, so a backward with create_graph records them in turn.
// Complex values follow PyTorch's convention: the gradient of a real loss L
// at z = x + iy is dL/dx + i dL/dy, so a holomorphic f passes g * conj(f'(z))
// back. conj() of a real tensor is the tensor itself: the real formulas are
// unchanged.
#include "lib/autograd/derivatives.h"

#include <fmt/format.h>

#include <cmath>

#include "lib/autograd/formulas.h"
#include "tensorjit/functions.h"

namespace tj::autograd {

using ir::Op;

Tensor unary_vjp(Op op, const Tensor& g, const Tensor& x, const Tensor& y) {
  switch (op) {
  case Op::Neg:
    return -g;
  case Op::Abs: // complex: the magnitude's gradient, g * z / |z| (0 at 0)
    if (x.is_complex()) return g * where(x == 0, zeros_like(x), x / y);
    return g * x.sign();
  case Op::Floor:
  case Op::Ceil:
  case Op::Round:
  case Op::Trunc:
    return zeros_like(g);
  case Op::Sqrt:
    return g / (2 * y.conj());
  case Op::Recip:
    return -g * y.conj() * y.conj();
  case Op::Exp:
    return g * y.conj();
  case Op::Exp2:
    return g * y * M_LN2;
  case Op::Expm1:
    return g * (y + 1);
  case Op::Log:
    return g / x.conj();
  case Op::Log2:
    return g / (x.conj() * M_LN2);
  case Op::Log10:
    return g / (x.conj() * M_LN10);
  case Op::Log1p:
    return g / (x + 1);
  case Op::Sin:
    return g * x.cos().conj();
  case Op::Cos:
    return -g * x.sin().conj();
  case Op::Tan:
    return g * (1 + y * y).conj();
  case Op::Asin:
    return g * (1 - x * x).rsqrt().conj();
  case Op::Acos:
    return -g * (1 - x * x).rsqrt().conj();
  case Op::Atan:
    return g / (1 + x * x).conj();
  case Op::Sinh:
    return g * x.cosh().conj();
  case Op::Cosh:
    return g * x.sinh().conj();
  case Op::Tanh:
    return g * (1 - y * y).conj();
  case Op::Asinh:
    return g * (x * x + 1).rsqrt().conj();
  case Op::Acosh: // complex: the product of roots, on acosh's branch
    if (x.is_complex()) return g * ((x + 1).rsqrt() * (x - 1).rsqrt()).conj();
    return g * (x * x - 1).rsqrt();
  case Op::Atanh:
    return g / (1 - x * x).conj();
  case Op::Erf:
    return g * (M_2_SQRTPI * (-x * x).exp());
  case Op::Erfc:
    return g * (-M_2_SQRTPI * (-x * x).exp());
  default:
    throw Error(fmt::format("the derivative for '{}' is not implemented.", ir::name(op)));
  }
}

std::pair<Tensor, Tensor> binary_vjp(Op op, const Tensor& g, const Tensor& a, const Tensor& b,
                                     const Tensor& y) {
  switch (op) {
  case Op::Add:
    return {g, g};
  case Op::Sub:
    return {g, -g};
  case Op::Mul:
    return {g * b.conj(), g * a.conj()};
  case Op::Div:
    return {g / b.conj(), -g * a.conj() / (b * b).conj()};
  case Op::Pow: {
    // As PyTorch: 0 where the exponent is 0 (base) or the base is 0 with a
    // non-negative real exponent (exponent).
    Tensor da = where(b == 0, zeros_like(g), g * (b * a.pow(b - 1)).conj());
    Tensor real_exp = b.is_complex() ? logical_and(b.imag() == 0, b.real() >= 0) : b >= 0;
    Tensor db =
        where(logical_and(a == 0, real_exp), zeros_like(g), g * (y * a.to(y.dtype()).log()).conj());
    return {da, db};
  }
  case Op::Max:
  case Op::Min: {
    // Ties split the gradient evenly, as PyTorch's maximum/minimum.
    Tensor half = where(a == b, g / 2, g);
    Tensor a_wins = op == Op::Max ? a > b : a < b;
    Tensor b_wins = op == Op::Max ? b > a : b < a;
    return {where(b_wins, zeros_like(g), half), where(a_wins, zeros_like(g), half)};
  }
  case Op::Atan2: {
    Tensor r = a * a + b * b;
    return {g * b / r, -g * a / r};
  }
  case Op::LogAddExp: // each operand's share of the sum of exponentials
    return {g * (a - y).exp(), g * (b - y).exp()};
  case Op::Hypot: // PyTorch's: NaN where both are 0
    return {g * a / y, g * b / y};
  case Op::Fmod: // fmod: a - trunc(a / b) * b
    return {g, -g * (a / b).trunc()};
  default:
    throw Error(fmt::format("the derivative for '{}' is not implemented.", ir::name(op)));
  }
}

void record_unary(Op op, const Tensor& x, const Tensor& y, const char* name) {
  if (!any_requires_grad({x})) return; // before the backward's closure is built
  // Ops whose gradient reads no value save nothing, as in PyTorch: a second backward through
  // them needs no retain_graph.
  const bool reads =
      op != Op::Neg && op != Op::Floor && op != Op::Ceil && op != Op::Round && op != Op::Trunc;
  std::vector<Tensor> save;
  if (reads) save = {x, y};
  record(name ? name : ir::info(op).grad_fn.data(), {x}, {y}, save,
         [op](const std::vector<Tensor>& grads, const std::vector<Tensor>& saved) {
           const Tensor& g = grads[0];
           return std::vector<Tensor>{saved.empty() ? unary_vjp(op, g, g, g)
                                                    : unary_vjp(op, g, saved[0], saved[1])};
         });
}

void record_binary(Op op, const Tensor& a, const Tensor& b, const Tensor& y, const char* name) {
  if (!any_requires_grad(a, b)) return; // before the saved list and the closure's sizes are built
  // Add and Sub read no values: nothing is saved, as in PyTorch.
  const bool reads = op != Op::Add && op != Op::Sub;
  std::vector<Tensor> save;
  if (reads) save = {a, b, y};
  record(name ? name : ir::info(op).grad_fn.data(), {a, b}, {y}, save,
         [op, sa = a.sizes(), sb = b.sizes()](const std::vector<Tensor>& grads,
                                              const std::vector<Tensor>& saved) {
           const Tensor& g = grads[0];
           auto [da, db] = saved.empty() ? binary_vjp(op, g, g, g, g)
                                         : binary_vjp(op, g, saved[0], saved[1], saved[2]);
           return std::vector<Tensor>{sum_to(da, sa), sum_to(db, sb)};
         });
}

} // namespace tj::autograd
