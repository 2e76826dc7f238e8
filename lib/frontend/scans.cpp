// cumsum, cumprod, cummax and cummin: the Scan primitives (ops.def), which a kernel computes in
// its loop over the scanned dim, in order, with the elementwise work before and after them.
//
// As PyTorch's CPU kernels, a sum or product computes in the accumulation dtype (float64 for
// float32 and float64 on the CPU, float32 on a GPU and for 16-bit floats, int64 for integers),
// one element after the other from the identity: the same operations in the same order (but a
// long float64 scan over few rows, which passes/split_scans runs in segments unless
// config().ordered_scans).
#include <fmt/format.h>

#include "lib/autograd/formulas.h"
#include "lib/autograd/node.h"
#include "lib/frontend/graph_builders.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/ir/shape.h"
#include "tensorjit/autograd.h"
#include "tensorjit/functions.h"
#include "tensorjit/indexing.h"

namespace tj {

using detail::node_of;
using detail::wrap;
using fe::NodePtr;
using ir::Op;
namespace ag = autograd;

namespace {

// The scan of x along dim d (of a tensor of rank >= 1); a 0-d x scans as a vector of one.
NodePtr scan(Op op, const NodePtr& x, int64_t d) {
  if (x->ndim() == 0) return fe::reshape(scan(op, fe::reshape(x, {1}), 0), {});
  return ir::make_node(op, x->dtype, x->shape, {x}, {d});
}

// The dim a scan of t runs along (PyTorch's range check): a 0-d tensor scans as a vector of one.
int64_t scan_dim(const Tensor& t, int64_t dim) {
  return ir::wrap_dim(dim, std::max<int64_t>(t.dim(), 1));
}

// The sums g_k + g_(k+1) + ... along d: the adjoint of a prefix sum.
Tensor reverse_cumsum(const Tensor& g, int64_t d) { return flip(cumsum(flip(g, {d}), d), {d}); }

// The gradient of y = cumprod(x) along d, zeros included. Before a row's first zero, each
// x_k's gradient is the reverse sum of g * y divided by x_k; at the first zero z it is the
// reverse sum of g times the products that skip x_z (the cumprod with x_z replaced by 1, equal
// to y before z); after it, every product holds x_z: zero.
Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& y, int64_t d) {
  Tensor zero = x == 0;
  Tensor zeros_so_far = cumsum(zero, d);
  Tensor before = zeros_so_far == 0;
  Tensor first = zero.bitwise_and(zeros_so_far == 1);
  Tensor one = ones_like(x);
  Tensor early = reverse_cumsum(g * y, d) / where(before, x, one);
  Tensor at_zero = reverse_cumsum(g * cumprod(where(first, one, x), d), d);
  return where(before, early, where(first, at_zero, zeros_like(x)));
}

Tensor cumulative(const Tensor& t, int64_t dim, std::optional<DType> dtype, bool prod) {
  detail::check_defined(t, prod ? "cumprod" : "cumsum");
  const int64_t d = scan_dim(t, dim);
  const DType out = dtype ? *dtype : is_integral(t.dtype(), true) ? kInt64 : t.dtype();
  if (is_complex(out)) {
    Tensor z = t.to(out);
    if (!prod) return complex(cumsum(z.real(), d), cumsum(z.imag(), d));
    // A kernel's scan carries one real: complex products double their span log2(n) times, each
    // step multiplying by the products s places before (ones before the start), so that each
    // is a complex multiplication as PyTorch's, and the gradient is theirs.
    if (z.dim() == 0) return z;
    const int64_t n = z.size(d);
    for (int64_t s = 1; s < n; s *= 2) {
      Shape front = z.sizes();
      front[static_cast<size_t>(d)] = s;
      z = z * cat({ones(front, z.options()), z.narrow(d, 0, n - s)}, d);
    }
    return z;
  }
  const DType acc = !is_floating_point(out)               ? kInt64
                    : out == kFloat16 || out == kBFloat16 ? kFloat32
                    : t.device().type() == kCUDA          ? out
                                                          : kFloat64;
  Tensor x = t.to(out).to(acc);
  Tensor y = wrap(scan(prod ? Op::ScanProd : Op::ScanSum, node_of(x), d));
  return y.to(out);
}

// cummax and cummin: the running extremum, and where it was last reached (a NaN counts as the
// extremum, and stays it), as PyTorch's loop gives them.
std::tuple<Tensor, Tensor> running_extremum(const Tensor& t, int64_t dim, bool max) {
  const char* fn = max ? "cummax" : "cummin";
  detail::check_defined(t, fn);
  if (t.is_complex())
    throw Error(
        fmt::format("\"{}_cpu\" not implemented for '{}'", fn, fe::cpp_type_name(t.dtype())));
  const int64_t d = scan_dim(t, dim);
  if (t.dim() == 0) {
    auto [v, i] = running_extremum(t.reshape({1}), 0, max);
    return {v.reshape({}), i.reshape({})};
  }
  // x is read by two scans and the values' gather: the same values each time.
  t.eval();
  NodePtr x = node_of(t);
  if (x->dtype == kBool) x = fe::cast(x, kUInt8);
  NodePtr m = scan(max ? Op::ScanMax : Op::ScanMin, x, d);
  NodePtr hit = fe::binary(Op::CmpEq, x, m);
  if (is_floating_point(x->dtype)) hit = fe::binary(Op::Or, hit, fe::binary(Op::CmpNe, x, x));
  ir::View along{std::vector<int64_t>(x->shape.size(), 0), 0};
  along.strides[static_cast<size_t>(d)] = 1;
  NodePtr pos = ir::make_node(Op::Iota, kInt64, x->shape, {}, {}, {}, nullptr, along, x->device);
  Tensor indices = wrap(scan(Op::ScanMax, fe::where(hit, pos, fe::constant(-1, kInt64)), d));
  // The values where the extremum was reached: a zero's sign and a NaN's bits as they are. The
  // gradient adds g there.
  Tensor values = ag::gather_at(t, d, indices, max ? "CummaxBackward0" : "CumminBackward0");
  return {values, indices};
}

// The sums over k' >= k of g_k' * exp(x_k - y_k') for y = logcumsumexp(x): logcumsumexp's
// adjoint, computed as reversed logcumsumexps of log|g| - y for g's positive and negative parts,
// so that no exponential overflows.
Tensor logcumsumexp_backward(const Tensor& g, const Tensor& x, const Tensor& y, int64_t d) {
  auto reversed = [d](const Tensor& v) { return flip(flip(v, {d}).logcumsumexp(d), {d}); };
  // log|g| where g has the part's sign, else the lowest finite value: no -inf, whose gradient
  // would be 0 / 0.
  Tensor log_abs = g.abs().log();
  Tensor lowest = full_like(g, fe::finite_range(g.dtype()).first);
  Tensor pos = (x + reversed(where(g > 0, log_abs, lowest) - y)).exp();
  Tensor neg = (x + reversed(where(g < 0, log_abs, lowest) - y)).exp();
  return pos - neg;
}

} // namespace

Tensor logcumsumexp(const Tensor& t, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "logcumsumexp");
  detail::check_defined(t, "logcumsumexp");
  if (!is_floating_point(t.dtype()))
    throw Error(fmt::format("\"logcumsumexp_out_cpu\" not implemented for '{}'",
                            fe::cpp_type_name(t.dtype())));
  const int64_t d = scan_dim(t, dim);
  // As current PyTorch: float32 in float64 on the CPU (1.13 kept a float32 running value, which
  // stops growing once exp(x - 15) falls below half its last place: 1.3% low after 2^22 random
  // normals), 16-bit floats in float32, a GPU's floats in their own dtype.
  const DType acc = t.dtype() == kFloat16 || t.dtype() == kBFloat16 ? kFloat32
                    : t.device().type() == kCUDA                    ? t.dtype()
                                                                    : kFloat64;
  Tensor y;
  {
    NoGradGuard no_grad;
    y = wrap(scan(Op::ScanLogSumExp, node_of(t.to(acc)), d)).to(t.dtype());
  }
  ag::record("LogcumsumexpBackward0", {t}, {y}, {t, y},
             [d](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
               if (g[0].dim() == 0) return std::vector<Tensor>{g[0]};
               return std::vector<Tensor>{logcumsumexp_backward(g[0], s[0], s[1], d)};
             });
  return y;
}

Tensor Tensor::logcumsumexp(int64_t dim, Caller caller) const {
  return tj::logcumsumexp(*this, dim, caller);
}

Tensor cumsum(const Tensor& t, int64_t dim, std::optional<DType> dtype, Caller caller) {
  detail::CallSite site(caller, "cumsum");
  Tensor y;
  {
    NoGradGuard no_grad;
    y = cumulative(t, dim, dtype, false);
  }
  // The gradient of a prefix sum is the suffix sum of the gradient.
  const DType in = t.dtype();
  const int64_t d = scan_dim(t, dim);
  ag::record("CumsumBackward0", {t}, {y}, {},
             [in, d](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
               if (g[0].dim() == 0) return std::vector<Tensor>{g[0].to(in)};
               return std::vector<Tensor>{reverse_cumsum(g[0], d).to(in)};
             });
  return y;
}

Tensor cumprod(const Tensor& t, int64_t dim, std::optional<DType> dtype, Caller caller) {
  detail::CallSite site(caller, "cumprod");
  Tensor y;
  {
    NoGradGuard no_grad;
    y = cumulative(t, dim, dtype, true);
  }
  const DType in = t.dtype();
  const int64_t d = scan_dim(t, dim);
  ag::record("CumprodBackward0", {t}, {y}, {t, y},
             [in, d](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
               if (g[0].dim() == 0) return std::vector<Tensor>{g[0].to(in)};
               const DType acc = s[1].dtype();
               return std::vector<Tensor>{
                   cumprod_backward(g[0].to(acc), s[0].to(acc).conj(), s[1].conj(), d).to(in)};
             });
  return y;
}

std::tuple<Tensor, Tensor> cummax(const Tensor& t, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "cummax");
  return running_extremum(t, dim, true);
}

std::tuple<Tensor, Tensor> cummin(const Tensor& t, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "cummin");
  return running_extremum(t, dim, false);
}

Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype, Caller caller) const {
  return tj::cumsum(*this, dim, dtype, caller);
}

Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype, Caller caller) const {
  return tj::cumprod(*this, dim, dtype, caller);
}

std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim, Caller caller) const {
  return tj::cummax(*this, dim, caller);
}

std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim, Caller caller) const {
  return tj::cummin(*this, dim, caller);
}

} // namespace tj
