// Complex numbers in the API: parts, pairs, conjugates and polar forms. The graph carries
// complex nodes; passes/lower_complex turns them into pairs of reals before scheduling.
#include <fmt/format.h>

#include <numbers>

#include "lib/autograd/node.h"
#include "lib/frontend/graph_builders.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "tensorjit/functions.h"

namespace tj {

using detail::node_of;
using detail::wrap;
using fe::NodePtr;
using ir::Op;

namespace {

NodePtr part(Op op, const NodePtr& z) {
  return ir::make_node(op, real_part_dtype(z->dtype), z->shape, {z});
}

// torch.complex's checks: float parts of one dtype, on one device.
void check_parts(const Tensor& re, const Tensor& im) {
  const DType a = re.dtype(), b = im.dtype();
  auto floating = [](DType t) { return t == kFloat16 || t == kFloat32 || t == kFloat64; };
  if (!floating(a) || !floating(b))
    throw Error(fmt::format("Expected both inputs to be Half, Float or Double tensors but got {} "
                            "and {}",
                            fe::cpp_type_name(a), fe::cpp_type_name(b)));
  if (a != b)
    throw Error(fmt::format("Expected object of scalar type {} but got scalar type {} for second "
                            "argument",
                            fe::cpp_type_name(a), fe::cpp_type_name(b)));
  if (a == kFloat16) throw Error("complex32 (ComplexHalf) is not supported");
}

using Grads = std::vector<Tensor>;

// The real (k = 0) or imaginary (1) parts of complex `z`: a view of its memory, as PyTorch's, so
// that writes through it change z.
Tensor real_or_imag(const Tensor& z, int64_t k) {
  std::vector<int64_t> strides;
  for (int64_t s : z.stride())
    strides.push_back(2 * s);
  return detail::make_parts_view(z, z.sizes(), std::move(strides), 2 * z.storage_offset() + k);
}

NodePtr pair(NodePtr re, NodePtr im) {
  ir::Shape shape = ir::broadcast_shapes(re->shape, im->shape);
  re = fe::expand(re, shape);
  im = fe::expand(im, shape);
  if (re->device != im->device) fe::throw_device_mismatch(re->device, im->device);
  return ir::make_node(Op::Complex, complex_dtype(re->dtype), shape, {re, im});
}

} // namespace

// The gradients below follow derivatives.cpp's convention (dL/dx + i dL/dy); a real gradient
// reaching a complex input is cast to it by the engine.
Tensor real(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "real");
  if (!a.is_complex()) return a;
  Tensor out = real_or_imag(a, 0);
  autograd::record("RealBackward0", {a}, {out}, {},
                   [](const Grads& g, const Grads&) { return Grads{g[0]}; });
  return out;
}

Tensor imag(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "imag");
  if (!a.is_complex()) throw Error("imag is not implemented for tensors with non-complex dtypes.");
  Tensor out = real_or_imag(a, 1);
  autograd::record("ImagBackward0", {a}, {out}, {}, [](const Grads& g, const Grads&) {
    return Grads{tj::complex(zeros_like(g[0]), g[0])}; // i g
  });
  return out;
}

Tensor conj(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "conj");
  if (!a.is_complex()) return a;
  NodePtr z = node_of(a);
  Tensor out = wrap(pair(part(Op::Real, z), fe::unary(Op::Neg, part(Op::Imag, z))));
  autograd::record("ConjBackward0", {a}, {out}, {},
                   [](const Grads& g, const Grads&) { return Grads{g[0].conj()}; });
  return out;
}

Tensor angle(const Tensor& a, Caller caller) {
  detail::CallSite site(caller, "angle");
  NodePtr x = node_of(a);
  if (a.is_complex()) {
    Tensor out = wrap(fe::binary(Op::Atan2, part(Op::Imag, x), part(Op::Real, x)));
    // i g z / |z|^2, 0 at 0 (PyTorch's).
    autograd::record("AngleBackward0", {a}, {out}, {a}, [](const Grads& g, const Grads& s) {
      const Tensor& z = s[0];
      Tensor r2 = z.real() * z.real() + z.imag() * z.imag();
      Tensor iz = tj::complex(-z.imag(), z.real());
      return Grads{where(r2 == 0, zeros_like(z), g[0] * iz / r2)};
    });
    return out;
  }
  if (a.dtype() == kBool) throw Error("\"angle_cpu\" not implemented for 'Bool'");
  // A real number's angle: pi below zero, else 0; NaN stays NaN.
  const DType t = is_floating_point(a.dtype()) ? a.dtype() : default_dtype();
  x = fe::cast(x, t);
  NodePtr r = fe::where(fe::binary(Op::CmpLt, x, fe::constant(0, t)),
                        fe::constant(std::numbers::pi, t), fe::constant(0, t));
  Tensor out = wrap(fe::where(fe::binary(Op::CmpNe, x, x), x, r));
  // Piecewise constant: a zero gradient, recorded as PyTorch's.
  autograd::record("AngleBackward0", {a}, {out}, {},
                   [](const Grads& g, const Grads&) { return Grads{zeros_like(g[0])}; });
  return out;
}

Tensor complex(const Tensor& re, const Tensor& im, Caller caller) {
  detail::CallSite site(caller, "complex");
  check_parts(re, im);
  Tensor out = wrap(pair(node_of(re), node_of(im)));
  autograd::record("ComplexBackward0", {re, im}, {out}, {}, [](const Grads& g, const Grads&) {
    return Grads{g[0].real(), g[0].imag()};
  });
  return out;
}

Tensor polar(const Tensor& abs, const Tensor& angle, Caller caller) {
  detail::CallSite site(caller, "polar");
  check_parts(abs, angle);
  NodePtr r = node_of(abs), t = node_of(angle);
  Tensor out = wrap(pair(fe::binary(Op::Mul, r, fe::unary(Op::Cos, t)),
                         fe::binary(Op::Mul, r, fe::unary(Op::Sin, t))));
  // z = r e^(it): dz/dr = e^(it), dz/dt = i z; a real input's gradient is Re(g conj(dz)). (At
  // r = 0 PyTorch's takes e^(it) as z's sign, 0; here it is e^(it), the derivative.)
  autograd::record("PolarBackward0", {abs, angle}, {out}, {out, angle},
                   [](const Grads& g, const Grads& s) {
                     const Tensor &z = s[0], &t = s[1];
                     Tensor gr = (g[0] * tj::complex(t.cos(), -t.sin())).real();
                     Tensor gt = (g[0] * tj::complex(-z.imag(), z.real()).conj()).real();
                     return Grads{gr, gt};
                   });
  return out;
}

Tensor Tensor::real(Caller caller) const { return tj::real(*this, caller); }
Tensor Tensor::imag(Caller caller) const { return tj::imag(*this, caller); }
Tensor Tensor::conj(Caller caller) const { return tj::conj(*this, caller); }
Tensor Tensor::angle(Caller caller) const { return tj::angle(*this, caller); }

} // namespace tj
