// Complex numbers lowered to pairs of reals (docs/architecture.md, "Complex numbers").
#include "lib/passes/lower_complex.h"

#include <fmt/format.h>

#include <limits>
#include <numbers>
#include <unordered_map>

#include "lib/frontend/graph_builders.h"
#include "tensorjit/error.h"

namespace tj::passes {

using ir::NodePtr;
using ir::Op;
using ir::Shape;

namespace {

Shape paired(Shape s) {
  s.push_back(2);
  return s;
}

// A complex value as its two real parts, each of the complex node's shape.
struct Parts {
  NodePtr re, im;
};

class Lowering {
public:
  // The parts lowered pairs `p` were made of, where this pass paired them.
  RootParts made_of(const NodePtr& p) const {
    auto it = paired_.find(p.get());
    if (it == paired_.end()) return {};
    return {it->second.re, it->second.im};
  }

  NodePtr run(const NodePtr& in) {
    NodePtr n = ir::resolve(in);
    if (!n->complex) return n;
    if (auto it = memo_.find(n.get()); it != memo_.end()) return it->second;
    NodePtr out = is_complex(n->dtype) ? lower_complex_node(*n) : lower_real_node(*n);
    ir::Site none = nullptr;
    out->site.compare_exchange_strong(none, n->site.load(std::memory_order_relaxed));
    memo_.emplace(n.get(), out);
    keep_.push_back(n); // memo keys stay alive (and distinct) while the pass runs
    return out;
  }

private:
  // The pairs of an operand of a complex op: a real operand gets a zero imaginary part.
  NodePtr pairs(const NodePtr& x, DType part) {
    if (is_complex(x->dtype)) return run(x);
    NodePtr re = fe::cast(run(x), part);
    return pair({re, fe::constant(0, part, re->shape, re->device)});
  }

  // The parts of an operand: those it was paired from where this pass paired it (taking them
  // back out of the pairs would compute both at every element), else views of its pairs.
  Parts parts(const NodePtr& x, DType part) {
    NodePtr p = pairs(x, part);
    if (auto it = paired_.find(p.get()); it != paired_.end()) return it->second;
    return {component(p, 0), component(p, 1)};
  }

  // Part k (0 real, 1 imaginary) of pairs `p`: a view, so a Buffer's parts stay Buffers.
  NodePtr component(const NodePtr& p, int64_t k) {
    const int64_t last = p->ndim() - 1;
    NodePtr c =
        fe::reshape(fe::slice(p, last, k, k + 1, 1), Shape(p->shape.begin(), p->shape.end() - 1));
    components_[c.get()] = {p, k};
    keep_.push_back(c);
    return c;
  }

  // The pairs of two real parts of equal shape.
  NodePtr pair(const Parts& v) {
    auto a = components_.find(v.re.get()), b = components_.find(v.im.get());
    if (a != components_.end() && b != components_.end() && a->second.first == b->second.first &&
        a->second.second == 0 && b->second.second == 1)
      return a->second.first; // the parts of one value, paired again
    NodePtr p = fe::interleave(v.re, v.im);
    paired_[p.get()] = v;
    keep_.push_back(p);
    return p;
  }

  static NodePtr spread(const NodePtr& x) { return along_pairs(x); }

  static NodePtr bin(Op op, const NodePtr& a, const NodePtr& b) { return fe::binary(op, a, b); }
  static NodePtr un(Op op, const NodePtr& a) { return fe::unary(op, a); }
  static NodePtr num(double v, const NodePtr& like) { return fe::constant(v, like->dtype); }

  // re^2 + im^2 of float32 parts, in float64: no overflow or underflow.
  static NodePtr squares_in_double(const Parts& z) {
    NodePtr re = fe::cast(z.re, kFloat64), im = fe::cast(z.im, kFloat64);
    return bin(Op::Add, bin(Op::Mul, re, re), bin(Op::Mul, im, im));
  }

  // |z| without overflow or underflow in the squares: float32 parts square in float64; float64
  // parts scale by the larger magnitude first. An infinite part makes it infinite, even beside
  // a NaN (as hypot).
  static NodePtr magnitude(const Parts& z) {
    const DType t = z.re->dtype;
    NodePtr a = un(Op::Abs, z.re), b = un(Op::Abs, z.im);
    NodePtr r;
    if (t != kFloat64) {
      r = fe::cast(un(Op::Sqrt, squares_in_double(z)), t);
    } else {
      NodePtr hi = bin(Op::Max, a, b), lo = bin(Op::Min, a, b);
      NodePtr q = bin(Op::Div, lo, hi);
      r = bin(Op::Mul, hi, un(Op::Sqrt, bin(Op::Add, num(1, q), bin(Op::Mul, q, q))));
      r = fe::where(bin(Op::CmpEq, hi, num(0, hi)), num(0, hi), r);
    }
    const double inf = std::numeric_limits<double>::infinity();
    NodePtr infinite = bin(Op::Or, bin(Op::CmpEq, a, num(inf, a)), bin(Op::CmpEq, b, num(inf, b)));
    return fe::where(infinite, num(inf, r), r);
  }

  // Whether x's sign bit is set (-0 included).
  static NodePtr sign_bit(const NodePtr& x) {
    NodePtr negative_zero =
        bin(Op::And, bin(Op::CmpEq, x, num(0, x)), bin(Op::CmpLt, un(Op::Recip, x), num(0, x)));
    return bin(Op::Or, bin(Op::CmpLt, x, num(0, x)), negative_zero);
  }

  static Parts where(const NodePtr& cond, const Parts& a, const Parts& b) {
    return {fe::where(cond, a.re, b.re), fe::where(cond, a.im, b.im)};
  }

  static Parts scaled(const Parts& z, double k) {
    return {bin(Op::Mul, z.re, num(k, z.re)), bin(Op::Mul, z.im, num(k, z.im))};
  }

  static Parts cast(const Parts& z, DType t) { return {fe::cast(z.re, t), fe::cast(z.im, t)}; }

  static Parts exponential(const Parts& z) {
    NodePtr e = un(Op::Exp, z.re);
    return {bin(Op::Mul, e, un(Op::Cos, z.im)), bin(Op::Mul, e, un(Op::Sin, z.im))};
  }

  static Parts logarithm(const Parts& z) { return {log_magnitude(z), bin(Op::Atan2, z.im, z.re)}; }

  // z^w = exp(w log z); z^0 is 1 and 0^w 0 for Re w > 0, where log 0 would give NaN.
  static Parts power(const Parts& z, const Parts& w) {
    Parts p = exponential(multiply(w, logarithm(z)));
    auto is_zero = [](const Parts& x) {
      return bin(Op::And, bin(Op::CmpEq, x.re, num(0, x.re)), bin(Op::CmpEq, x.im, num(0, x.im)));
    };
    NodePtr zero_base = bin(Op::And, is_zero(z), bin(Op::CmpLt, num(0, w.re), w.re));
    p = where(zero_base, {num(0, p.re), num(0, p.im)}, p);
    return where(is_zero(w), {num(1, p.re), num(0, p.im)}, p);
  }

  // tanh(a + ib) by Kahan's formula, finite for large |a| where sinh and cosh overflow; past
  // |a| = 20 it is sign(a) + 4i sin b cos b e^(-2|a|) to the precision of a double.
  static Parts hyperbolic_tangent(const Parts& z) {
    NodePtr t = un(Op::Tan, z.im), s = un(Op::Sinh, z.re);
    NodePtr beta = bin(Op::Add, num(1, t), bin(Op::Mul, t, t));
    NodePtr ss = bin(Op::Mul, s, s);
    NodePtr rho = un(Op::Sqrt, bin(Op::Add, num(1, ss), ss));
    NodePtr den = bin(Op::Add, num(1, ss), bin(Op::Mul, beta, ss));
    Parts near = {bin(Op::Div, bin(Op::Mul, bin(Op::Mul, beta, rho), s), den),
                  bin(Op::Div, t, den)};
    NodePtr a = un(Op::Abs, z.re);
    NodePtr tiny = un(Op::Exp, bin(Op::Mul, a, num(-2, a)));
    NodePtr sin_cos = bin(Op::Mul, un(Op::Sin, z.im), un(Op::Cos, z.im));
    Parts far = {fe::where(sign_bit(z.re), num(-1, a), num(1, a)),
                 bin(Op::Mul, bin(Op::Mul, sin_cos, tiny), num(4, tiny))};
    return where(bin(Op::CmpLt, num(20, a), a), far, near);
  }

  // log|z|: float32 parts through float64, where the squares neither overflow nor underflow.
  static NodePtr log_magnitude(const Parts& z) {
    const DType t = z.re->dtype;
    if (t == kFloat64) return un(Op::Log, magnitude(z));
    NodePtr sq = squares_in_double(z);
    return fe::cast(bin(Op::Mul, num(0.5, sq), un(Op::Log, sq)), t);
  }

  static Parts multiply(const Parts& a, const Parts& b) {
    return {bin(Op::Sub, bin(Op::Mul, a.re, b.re), bin(Op::Mul, a.im, b.im)),
            bin(Op::Add, bin(Op::Mul, a.re, b.im), bin(Op::Mul, a.im, b.re))};
  }

  // a / b scaled by b's larger part (Smith's method), as PyTorch's c10::complex divides.
  static Parts divide(const Parts& a, const Parts& b) {
    NodePtr abs_c = un(Op::Abs, b.re), abs_d = un(Op::Abs, b.im);
    NodePtr one = num(1, b.re);
    // |c| >= |d|
    NodePtr rat1 = bin(Op::Div, b.im, b.re);
    NodePtr scl1 = bin(Op::Div, one, bin(Op::Add, b.re, bin(Op::Mul, b.im, rat1)));
    NodePtr re1 = bin(Op::Mul, bin(Op::Add, a.re, bin(Op::Mul, a.im, rat1)), scl1);
    NodePtr im1 = bin(Op::Mul, bin(Op::Sub, a.im, bin(Op::Mul, a.re, rat1)), scl1);
    // |c| < |d|
    NodePtr rat2 = bin(Op::Div, b.re, b.im);
    NodePtr scl2 = bin(Op::Div, one, bin(Op::Add, b.im, bin(Op::Mul, b.re, rat2)));
    NodePtr re2 = bin(Op::Mul, bin(Op::Add, bin(Op::Mul, a.re, rat2), a.im), scl2);
    NodePtr im2 = bin(Op::Mul, bin(Op::Sub, bin(Op::Mul, a.im, rat2), a.re), scl2);
    // Division by zero: an infinity or NaN in each part.
    NodePtr zero =
        bin(Op::And, bin(Op::CmpEq, abs_c, num(0, abs_c)), bin(Op::CmpEq, abs_d, num(0, abs_d)));
    re1 = fe::where(zero, bin(Op::Div, a.re, abs_c), re1);
    im1 = fe::where(zero, bin(Op::Div, a.im, abs_d), im1);
    NodePtr first = bin(Op::CmpLe, abs_d, abs_c);
    return {fe::where(first, re1, re2), fe::where(first, im1, im2)};
  }

  // The principal square root: Re >= 0, the imaginary part with the sign bit of z's
  // (sqrt(-1 - 0j) is -1j). float32 parts go through float64; float64 parts near the largest
  // double take 2 sqrt(z / 4), exactly, so that neither |z| nor |Re z| + |z| overflows.
  static Parts square_root(const Parts& z) {
    const DType part = z.re->dtype;
    if (part != kFloat64) return cast(square_root(cast(z, kFloat64)), part);
    NodePtr hi = bin(Op::Max, un(Op::Abs, z.re), un(Op::Abs, z.im));
    NodePtr big = bin(Op::CmpLt, num(0x1p1020, hi), hi);
    Parts x = where(big, scaled(z, 0.25), z);
    NodePtr r = magnitude(x);
    NodePtr t = un(Op::Sqrt, bin(Op::Mul, bin(Op::Add, un(Op::Abs, x.re), r), num(0.5, r)));
    NodePtr u = bin(Op::Div, x.im, bin(Op::Mul, t, num(2, t))); // im / 2t
    NodePtr nonneg = bin(Op::CmpLe, num(0, x.re), x.re);
    NodePtr re = fe::where(nonneg, t, un(Op::Abs, u));
    NodePtr signed_t = fe::where(sign_bit(x.im), un(Op::Neg, t), t);
    NodePtr im = fe::where(nonneg, u, signed_t);
    NodePtr is_zero = bin(Op::CmpEq, r, num(0, r));
    Parts root = {fe::where(is_zero, num(0, r), re), fe::where(is_zero, x.im, im)};
    return where(big, scaled(root, 2), root);
  }

  static Parts sum(const Parts& a, const Parts& b) {
    return {bin(Op::Add, a.re, b.re), bin(Op::Add, a.im, b.im)};
  }

  // i z, and -i z: a quarter turn each way (the signs of zeros turn with it, as C's catan).
  static Parts times_i(const Parts& z) { return {un(Op::Neg, z.im), z.re}; }
  static Parts times_minus_i(const Parts& z) { return {z.im, un(Op::Neg, z.re)}; }

  // acosh z = log(z + sqrt(z + 1) sqrt(z - 1)): the product of roots, not sqrt(z^2 - 1), keeps
  // the principal branch.
  static Parts inverse_cosh(const Parts& z) {
    Parts above = square_root({bin(Op::Add, z.re, num(1, z.re)), z.im});
    Parts below = square_root({bin(Op::Sub, z.re, num(1, z.re)), z.im});
    return logarithm(sum(z, multiply(above, below)));
  }

  // a with the sign bit of s, for a >= 0 (there is no copysign op).
  static NodePtr signed_like(const NodePtr& a, const NodePtr& s) {
    return fe::where(sign_bit(s), un(Op::Neg, a), a);
  }

  // asin and acos of u + iv for u, v >= 0, after Hull, Fairgrieve and Tang (1997), in float64:
  // each part has its own formula that neither cancels near 1 nor overflows or underflows in a
  // square. Returns Re asin (p), Re acos (r) and Im asin = -Im acos (q).
  struct Arcsine {
    NodePtr p, r, q;
  };
  static Arcsine arcsine(const NodePtr& u, const NodePtr& v) {
    NodePtr one = num(1, u), half = num(0.5, u);
    NodePtr up1 = bin(Op::Add, u, one), um1 = bin(Op::Sub, u, one), omu = bin(Op::Sub, one, u);
    NodePtr r = bin(Op::Hypot, up1, v), s = bin(Op::Hypot, um1, v);
    NodePtr a = bin(Op::Add, bin(Op::Mul, half, r), bin(Op::Mul, half, s)); // (|w+1| + |w-1|)/2
    NodePtr b = bin(Op::Div, u, a);
    NodePtr rp = bin(Op::Add, r, up1); // r + u + 1
    NodePtr below = bin(Op::CmpLt, u, one);
    // A - 1 without cancellation; below 1 its root is v sqrt(...) so that v^2 may underflow.
    NodePtr vv = bin(Op::Mul, v, v);
    NodePtr sm = bin(Op::Add, s, omu), sp = bin(Op::Add, s, um1);
    NodePtr am1_below = bin(Op::Mul, bin(Op::Mul, half, vv),
                            bin(Op::Add, bin(Op::Div, one, rp), bin(Op::Div, one, sm)));
    NodePtr root_below =
        bin(Op::Mul, v,
            un(Op::Sqrt, bin(Op::Mul, bin(Op::Mul, half, bin(Op::Add, a, one)),
                             bin(Op::Add, bin(Op::Div, one, rp), bin(Op::Div, one, sm)))));
    NodePtr am1_above = bin(Op::Mul, half, bin(Op::Add, bin(Op::Div, vv, rp), sp));
    NodePtr root_above = un(Op::Sqrt, bin(Op::Mul, am1_above, bin(Op::Add, a, one)));
    NodePtr near_q = un(Op::Log1p, fe::where(below, bin(Op::Add, am1_below, root_below),
                                             bin(Op::Add, am1_above, root_above)));
    NodePtr far_q =
        un(Op::Log, bin(Op::Add, a, un(Op::Sqrt, bin(Op::Sub, bin(Op::Mul, a, a), one))));
    NodePtr q = fe::where(bin(Op::CmpLe, a, num(1.5, a)), near_q, far_q);
    // Where B = u / A is near 1, asin B and acos B lose its digits: atan of a quotient instead,
    // with sqrt(1 - B^2) A found without cancellation.
    NodePtr apu = bin(Op::Add, a, u);
    NodePtr c_below =
        un(Op::Sqrt, bin(Op::Mul, bin(Op::Mul, half, apu), bin(Op::Add, bin(Op::Div, vv, rp), sm)));
    NodePtr c_above =
        bin(Op::Mul, v,
            un(Op::Sqrt,
               bin(Op::Mul, half, bin(Op::Add, bin(Op::Div, apu, rp), bin(Op::Div, apu, sp)))));
    NodePtr c = fe::where(bin(Op::CmpLe, u, one), c_below, c_above);
    NodePtr steep = bin(Op::CmpLt, num(0.6417, b), b);
    NodePtr p = fe::where(steep, bin(Op::Atan2, u, c), un(Op::Asin, b));
    NodePtr ra = fe::where(steep, bin(Op::Atan2, c, u), un(Op::Acos, b));
    // Past 1e10 the terms in 1/w^2 are below a double's precision: asin w = pi/2 - arg w -
    // i log 2|w|, whose squares would overflow.
    NodePtr far = bin(Op::CmpLt, num(1e10, u), bin(Op::Max, u, v));
    NodePtr log2w = bin(Op::Add, un(Op::Log, bin(Op::Hypot, u, v)), num(std::numbers::ln2, u));
    return {fe::where(far, bin(Op::Atan2, u, v), p), fe::where(far, bin(Op::Atan2, v, u), ra),
            fe::where(far, log2w, q)};
  }

  enum class Arc { Asin, Acos, Asinh };

  // asin, acos or asinh of z from the arcsine of the first quadrant and the symmetries of C's
  // casin, cacos and casinh (signed zeros pick the side of a cut). float32 parts go through
  // float64.
  static Parts inverse_sine(const Parts& z, Arc which) {
    const DType part = z.re->dtype;
    if (part != kFloat64) return cast(inverse_sine(cast(z, kFloat64), which), part);
    NodePtr x = z.re, y = z.im, ax = un(Op::Abs, x), ay = un(Op::Abs, y);
    if (which == Arc::Asinh) { // asinh z = -i asin(iz): asin's parts of |Im z| + i|Re z|, swapped
      Arcsine a = arcsine(ay, ax);
      return {signed_like(a.q, x), signed_like(a.p, y)};
    }
    Arcsine a = arcsine(ax, ay);
    if (which == Arc::Asin) return {signed_like(a.p, x), signed_like(a.q, y)};
    NodePtr re = fe::where(sign_bit(x), bin(Op::Sub, num(std::numbers::pi, a.r), a.r), a.r);
    return {re, un(Op::Neg, signed_like(a.q, y))};
  }

  // atanh of the first quadrant, u, v >= 0, signed as C's catanh: Re = log|(1+z)/(1-z)| / 4 as
  // log1p(4u / |1-z|^2) / 4, which neither cancels for small z nor rounds 1 + z; Im = arg of
  // (1+z)(1-conj z) / 2. Past 1e18 atanh z = 1/z + i pi/2 to a double's precision. In float64.
  static Parts inverse_tanh(const Parts& z) {
    const DType part = z.re->dtype;
    if (part != kFloat64) return cast(inverse_tanh(cast(z, kFloat64)), part);
    NodePtr u = un(Op::Abs, z.re), v = un(Op::Abs, z.im), one = num(1, u);
    NodePtr omu = bin(Op::Sub, one, u), vv = bin(Op::Mul, v, v);
    NodePtr den = bin(Op::Add, bin(Op::Mul, omu, omu), vv);
    NodePtr re =
        bin(Op::Mul, num(0.25, u), un(Op::Log1p, bin(Op::Div, bin(Op::Mul, num(4, u), u), den)));
    // At u = 1, |1-z|^2 = v^2 may underflow: log(4 / v^2) / 4 exactly.
    NodePtr at_one =
        bin(Op::Mul, num(0.5, u), bin(Op::Sub, num(std::numbers::ln2, u), un(Op::Log, v)));
    re = fe::where(bin(Op::And, bin(Op::CmpEq, u, one), bin(Op::CmpLt, v, num(1e-100, v))), at_one,
                   re);
    NodePtr im = bin(Op::Mul, num(0.5, u),
                     bin(Op::Atan2, bin(Op::Mul, num(2, v), v),
                         bin(Op::Sub, bin(Op::Mul, omu, bin(Op::Add, one, u)), vv)));
    NodePtr h = bin(Op::Hypot, u, v);
    NodePtr far = bin(Op::CmpLt, num(1e18, h), h);
    re = fe::where(far, bin(Op::Div, bin(Op::Div, u, h), h), re);
    im = fe::where(far, num(std::numbers::pi / 2, u), im);
    return {signed_like(re, z.re), signed_like(im, z.im)};
  }

  NodePtr lower_complex_node(const ir::Node& n) {
    const DType part = real_part_dtype(n.dtype);
    const Shape s2 = paired(n.shape);
    auto operand = [&](size_t i) { return parts(n.src[i], part); };
    switch (n.op) {
    case Op::Buffer:
      return ir::make_node(Op::Buffer, part, s2, {}, n.args, {}, n.storage, pairs_view(n.view),
                           n.device);
    case Op::Const:
      return pair({fe::constant(n.value.to_double(), part, n.shape, n.device),
                   fe::constant(n.value.imag(), part, n.shape, n.device)});
    case Op::Neg:
    case Op::Add:
    case Op::Sub: {
      // Part by part where an operand's parts are values of this pass (so that the result's
      // are too, and a kernel computes each once); the pairs themselves otherwise (of memory).
      std::vector<NodePtr> src;
      bool made = false;
      for (const auto& s : n.src) {
        src.push_back(pairs(s, part));
        made |= paired_.count(src.back().get()) > 0;
      }
      if (made) {
        Parts a = operand(0);
        if (n.op == Op::Neg) return pair({un(Op::Neg, a.re), un(Op::Neg, a.im)});
        Parts b = operand(1);
        return pair({bin(n.op, a.re, b.re), bin(n.op, a.im, b.im)});
      }
      return ir::make_node(n.op, part, s2, std::move(src));
    }
    case Op::Mul:
      return pair(multiply(operand(0), operand(1)));
    case Op::Div:
      return pair(divide(operand(0), operand(1)));
    case Op::Recip: {
      Parts z = operand(0);
      return pair(divide({num(1, z.re), num(0, z.im)}, z));
    }
    case Op::Exp:
      return pair(exponential(operand(0)));
    case Op::Log:
      return pair(logarithm(operand(0)));
    case Op::Log2: // both parts divided by ln 2, as PyTorch's vectorized kernel
      return pair(scaled(logarithm(operand(0)), 1 / std::numbers::ln2));
    case Op::Log10:
      return pair(scaled(logarithm(operand(0)), 1 / std::numbers::ln10));
    case Op::Pow:
      return pair(power(operand(0), operand(1)));
    case Op::Sqrt:
      return pair(square_root(operand(0)));
    case Op::Sin: { // sin a cosh b + i cos a sinh b
      Parts z = operand(0);
      return pair({bin(Op::Mul, un(Op::Sin, z.re), un(Op::Cosh, z.im)),
                   bin(Op::Mul, un(Op::Cos, z.re), un(Op::Sinh, z.im))});
    }
    case Op::Cos: { // cos a cosh b - i sin a sinh b
      Parts z = operand(0);
      return pair({bin(Op::Mul, un(Op::Cos, z.re), un(Op::Cosh, z.im)),
                   un(Op::Neg, bin(Op::Mul, un(Op::Sin, z.re), un(Op::Sinh, z.im)))});
    }
    case Op::Sinh: { // sinh a cos b + i cosh a sin b
      Parts z = operand(0);
      return pair({bin(Op::Mul, un(Op::Sinh, z.re), un(Op::Cos, z.im)),
                   bin(Op::Mul, un(Op::Cosh, z.re), un(Op::Sin, z.im))});
    }
    case Op::Cosh: { // cosh a cos b + i sinh a sin b
      Parts z = operand(0);
      return pair({bin(Op::Mul, un(Op::Cosh, z.re), un(Op::Cos, z.im)),
                   bin(Op::Mul, un(Op::Sinh, z.re), un(Op::Sin, z.im))});
    }
    case Op::Tanh:
      return pair(hyperbolic_tangent(operand(0)));
    case Op::Tan: { // -i tanh(iz)
      Parts z = operand(0);
      Parts t = hyperbolic_tangent({un(Op::Neg, z.im), z.re});
      return pair({t.im, un(Op::Neg, t.re)});
    }
    case Op::Asinh:
      return pair(inverse_sine(operand(0), Arc::Asinh));
    case Op::Acosh:
      return pair(inverse_cosh(operand(0)));
    case Op::Atanh:
      return pair(inverse_tanh(operand(0)));
    case Op::Asin:
      return pair(inverse_sine(operand(0), Arc::Asin));
    case Op::Atan: // -i atanh(iz)
      return pair(times_minus_i(inverse_tanh(times_i(operand(0)))));
    case Op::Acos:
      return pair(inverse_sine(operand(0), Arc::Acos));
    case Op::Where:
      return fe::where(spread(run(n.src[0])), pairs(n.src[1], part), pairs(n.src[2], part));
    case Op::Cast:
      return is_complex(n.src[0]->dtype) ? fe::cast(run(n.src[0]), part) : pairs(n.src[0], part);
    case Op::ReduceSum:
      return ir::make_node(Op::ReduceSum, part, s2, {pairs(n.src[0], part)}, n.args);
    case Op::Reshape:
      return fe::reshape(pairs(n.src[0], part), s2);
    case Op::Expand:
      return fe::expand(pairs(n.src[0], part), s2);
    case Op::Permute: {
      std::vector<int64_t> perm = n.args;
      perm.push_back(static_cast<int64_t>(perm.size()));
      return fe::permute(pairs(n.src[0], part), perm);
    }
    case Op::Slice: {
      std::vector<int64_t> args = n.args;
      args.insert(args.end(), {0, 1});
      NodePtr x = pairs(n.src[0], part);
      return fe::moved(*ir::make_node(Op::Slice, part, s2, {x}, args), x);
    }
    case Op::AsStrided: {
      std::vector<int64_t> strides;
      for (size_t i = 0; i + 1 < n.args.size(); ++i)
        strides.push_back(n.args[i] * 2);
      strides.push_back(1);
      return fe::as_strided(pairs(n.src[0], part), s2, strides, n.args.back() * 2);
    }
    case Op::Gather:
      return ir::make_node(Op::Gather, part, s2, {pairs(n.src[0], part), spread(run(n.src[1]))},
                           n.args);
    case Op::Scatter:
      return ir::make_node(Op::Scatter, part, s2,
                           {pairs(n.src[0], part), spread(run(n.src[1])), pairs(n.src[2], part)},
                           n.args);
    case Op::Assign: {
      // args: the value's strides in the base, its offset, whether in place.
      const size_t nd = static_cast<size_t>(n.src[1]->ndim());
      std::vector<int64_t> args;
      for (size_t i = 0; i < nd; ++i)
        args.push_back(n.args[i] * 2);
      args.push_back(1);
      args.push_back(n.args[nd] * 2);
      args.push_back(n.args[nd + 1]);
      return ir::make_node(Op::Assign, part, s2, {pairs(n.src[0], part), pairs(n.src[1], part)},
                           args);
    }
    case Op::Complex:
      return pair({run(n.src[0]), run(n.src[1])});
    default:
      throw Error(
          fmt::format("internal error: {} of a complex value has no lowering", ir::name(n.op)));
    }
  }

  // A real node with complex values below.
  NodePtr lower_real_node(const ir::Node& n) {
    const bool from_complex = !n.src.empty() && is_complex(n.src[0]->dtype);
    if (from_complex) {
      const DType part = real_part_dtype(n.src[0]->dtype);
      switch (n.op) {
      case Op::Real:
      case Op::Imag: {
        Parts z = parts(n.src[0], part);
        return n.op == Op::Real ? z.re : z.im;
      }
      case Op::Abs:
        return magnitude(parts(n.src[0], part));
      case Op::CmpEq:
      case Op::CmpNe: {
        Parts a = parts(n.src[0], part), b = parts(n.src[1], part);
        NodePtr re = bin(n.op, a.re, b.re), im = bin(n.op, a.im, b.im);
        return bin(n.op == Op::CmpEq ? Op::And : Op::Or, re, im);
      }
      case Op::Cast: {
        Parts z = parts(n.src[0], part);
        if (n.dtype == kBool)
          return bin(Op::Or, bin(Op::CmpNe, z.re, num(0, z.re)),
                     bin(Op::CmpNe, z.im, num(0, z.im)));
        return fe::cast(z.re, n.dtype); // the imaginary part is discarded, as PyTorch does
      }
      default:
        break;
      }
    }
    if (ir::category(n.op) == ir::OpCategory::Complex || from_complex)
      throw Error(
          fmt::format("internal error: {} of a complex value has no lowering", ir::name(n.op)));
    std::vector<NodePtr> src;
    for (const auto& s : n.src)
      src.push_back(run(s));
    return ir::with_sources(n, std::move(src));
  }

  std::unordered_map<const ir::Node*, NodePtr> memo_;
  std::unordered_map<const ir::Node*, std::pair<NodePtr, int64_t>> components_;
  std::unordered_map<const ir::Node*, Parts> paired_; // pairs made here -> their parts
  std::vector<NodePtr> keep_;
};

} // namespace

ir::View pairs_view(const ir::View& complex_view) {
  ir::View v{{}, complex_view.offset * 2};
  for (int64_t s : complex_view.strides)
    v.strides.push_back(s * 2);
  v.strides.push_back(1);
  return v;
}

NodePtr along_pairs(const NodePtr& x) {
  Shape s1 = x->shape;
  s1.push_back(1);
  return fe::expand(fe::reshape(x, s1), paired(x->shape));
}

std::vector<NodePtr> lower_complex(const std::vector<NodePtr>& roots,
                                   std::vector<RootParts>* parts) {
  if (parts) parts->assign(roots.size(), {});
  bool any = false;
  for (const auto& r : roots)
    any |= ir::resolve(r)->complex;
  if (!any) return roots;
  Lowering l;
  std::vector<NodePtr> out;
  out.reserve(roots.size());
  for (size_t i = 0; i < roots.size(); ++i) {
    out.push_back(l.run(roots[i]));
    if (parts && is_complex(roots[i]->dtype)) (*parts)[i] = l.made_of(out.back());
  }
  return out;
}

} // namespace tj::passes
