// Creation functions: constants, ranges, identity, host data, and Philox random numbers.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <mutex>

#include "lib/frontend/graph_builders.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/ir/scalar_semantics.h"
#include "tensorjit/functions.h"

namespace tj {

using detail::node_of;
using detail::wrap;
using fe::NodePtr;
using ir::Op;

namespace {

// The options' device, checked to exist ("cuda" means cuda:0).
Device check_device(const TensorOptions& o) { return rt::checked_device(o.device()); }

// requires_grad from the options, with the words PyTorch's factories use for an integer dtype
// (Tensor::requires_grad_ has Python's shorter ones).
void set_requires_grad(Tensor& t, const TensorOptions& o) {
  if (!o.requires_grad()) return;
  if (!t.is_floating_point() && !t.is_complex())
    throw Error("Only Tensors of floating point and complex dtype can require gradients");
  t.requires_grad_(true);
}

Tensor finish(NodePtr n, const TensorOptions& o) {
  Tensor t = wrap(std::move(n));
  set_requires_grad(t, o);
  return t;
}

// The Philox generator's state: a key (the seed) and the next unused counter.
// Every random op takes a fresh range of counters, so results depend only on
// the seed and the order of calls, never on threads or devices.
struct Generator {
  std::mutex mu;
  uint64_t seed = 67280421310721ULL; // PyTorch's default seed
  uint64_t offset = 0;
};
Generator& generator() {
  static Generator g;
  return g;
}

// A leaf producing word `word` of Philox at counter offset + (linear index).
NodePtr philox_word(const Shape& shape, uint64_t seed, uint64_t offset, int word, Device dev) {
  return ir::make_node(Op::Philox, kInt64, shape, {},
                       {static_cast<int64_t>(seed), static_cast<int64_t>(offset), word}, {},
                       nullptr, ir::View{ir::contiguous_strides(shape), 0}, dev);
}

NodePtr iota(const Shape& shape, std::vector<int64_t> strides, Device dev) {
  return ir::make_node(Op::Iota, kInt64, shape, {}, {}, {}, nullptr,
                       ir::View{std::move(strides), 0}, dev);
}

std::pair<uint64_t, uint64_t> take_counters(int64_t n) {
  auto& g = generator();
  std::lock_guard lock(g.mu);
  uint64_t off = g.offset;
  g.offset += static_cast<uint64_t>(std::max<int64_t>(n, 1));
  return {g.seed, off};
}

// Uniform [0, 1) in float type `t` from Philox words, exactly representable: the top bits of a
// word that the type's mantissa holds, scaled by 2^-32. The bits are masked, not shifted down by a
// division: integer division by a kernel parameter is a scalar idiv per element.
NodePtr uniform(const Shape& shape, DType t, uint64_t seed, uint64_t off, int w0, Device dev) {
  NodePtr a = philox_word(shape, seed, off, w0, dev);
  auto top_bits = [](NodePtr word, int bits) {
    uint32_t mask = ~((uint32_t{1} << (32 - bits)) - 1);
    return fe::binary(Op::And, std::move(word), fe::constant(int64_t{mask}, kInt64));
  };
  if (t == kFloat64) {
    // 53 random bits: all of a, then the top 21 of b, 2^-32 below it. Both terms and their
    // sum are exact.
    NodePtr b = philox_word(shape, seed, off, w0 + 1, dev);
    NodePtr hi = fe::binary(Op::Mul, fe::cast(a, kFloat64), fe::constant(0x1p-32, kFloat64));
    NodePtr lo =
        fe::binary(Op::Mul, fe::cast(top_bits(b, 21), kFloat64), fe::constant(0x1p-64, kFloat64));
    return fe::binary(Op::Add, hi, lo);
  }
  int mant = t == kFloat16 ? 11 : t == kBFloat16 ? 8 : 24;
  NodePtr f =
      fe::binary(Op::Mul, fe::cast(top_bits(a, mant), kFloat32), fe::constant(0x1p-32, kFloat32));
  return fe::cast(f, t);
}

DType float_dtype(const TensorOptions& o, const char* fn) {
  DType t = o.dtype_or(default_dtype());
  if (!is_floating_point(t))
    throw Error(fmt::format("\"{}\" not implemented for '{}'", fn, fe::cpp_type_name(t)));
  return t;
}

DType dtype_for_value(const Scalar& v, const TensorOptions& o) {
  if (o.has_dtype()) return *o.dtype_opt();
  if (v.is_complex()) return complex_dtype(default_dtype());
  return v.is_bool() ? kBool : v.is_integral() ? kInt64 : default_dtype();
}

} // namespace

void manual_seed(uint64_t seed) {
  auto& g = generator();
  std::lock_guard lock(g.mu);
  g.seed = seed;
  g.offset = 0;
}

Tensor empty(IntArrayRef size, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "empty");
  ir::check_sizes(size);
  Device dev = check_device(o);
  return finish(ir::make_empty(o.dtype_or(default_dtype()), size, dev), o);
}
Tensor full(IntArrayRef size, const Scalar& v, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "full");
  ir::check_sizes(size);
  Device dev = check_device(o);
  const DType t = dtype_for_value(v, o);
  fe::check_scalar_fits(v, t);
  return finish(fe::constant(v, t, size, dev), o);
}
Tensor zeros(IntArrayRef size, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "zeros");
  return full(size, 0.0, o.dtype(o.dtype_or(default_dtype())));
}
Tensor ones(IntArrayRef size, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "ones");
  return full(size, 1.0, o.dtype(o.dtype_or(default_dtype())));
}
Tensor scalar_tensor(const Scalar& v, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "scalar_tensor");
  // The default dtype whatever the value's kind (torch.scalar_tensor(3) is tensor(3.)), unlike
  // full's inference; a complex value its complex counterpart.
  const DType t = v.is_complex() ? complex_dtype(default_dtype()) : default_dtype();
  return full({}, v, o.dtype(o.dtype_or(t)));
}

namespace {
// A complex random tensor: its real, then its imaginary parts drawn by `draw` in the parts'
// dtype, scaled.
template <class Draw>
Tensor complex_random(IntArrayRef size, const TensorOptions& o, Draw draw, double scale) {
  const DType t = o.dtype_or(default_dtype());
  TensorOptions part = TensorOptions(real_part_dtype(t)).device(o.device());
  Tensor re = draw(part), im = draw(part);
  Tensor out = complex(re * scale, im * scale);
  set_requires_grad(out, o);
  return out;
}
} // namespace

Tensor rand(IntArrayRef size, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "rand");
  ir::check_sizes(size);
  Device dev = check_device(o);
  if (is_complex(o.dtype_or(default_dtype()))) // both parts uniform on [0, 1)
    return complex_random(
        size, o, [&](TensorOptions p) { return rand(size, p); }, 1.0);
  DType t = float_dtype(o, "check_uniform_bounds");
  auto [seed, off] = take_counters(ir::numel(size));
  return finish(uniform(size, t, seed, off, 0, dev), o);
}

Tensor randn(IntArrayRef size, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "randn");
  ir::check_sizes(size);
  Device dev = check_device(o);
  if (is_complex(o.dtype_or(default_dtype()))) // E|z|^2 = 1: each part of variance 1/2
    return complex_random(
        size, o, [&](TensorOptions p) { return randn(size, p); }, M_SQRT1_2);
  DType t = float_dtype(o, dev.is_cuda() ? "normal_kernel_cuda" : "normal_kernel_cpu");
  auto [seed, off] = take_counters(ir::numel(size));
  // Box-Muller on two independent uniforms from the same counter (words 0-1 and 2-3).
  DType c = t == kFloat64 ? kFloat64 : kFloat32;
  NodePtr u1 =
      fe::binary(Op::Sub, fe::constant(1.0, c), uniform(size, c, seed, off, 0, dev)); // (0, 1]
  NodePtr u2 = uniform(size, c, seed, off, 2, dev);
  NodePtr r =
      fe::unary(Op::Sqrt, fe::binary(Op::Mul, fe::constant(-2.0, c), fe::unary(Op::Log, u1)));
  NodePtr th = fe::unary(Op::Cos, fe::binary(Op::Mul, fe::constant(2.0 * M_PI, c), u2));
  // Computed now, unlike rand: its log, sqrt and cos, recomputed in each consumer's kernel,
  // could round differently in the last place from one kernel to another, and a tensor must
  // hold the same values wherever it is used.
  Tensor out = finish(fe::cast(fe::binary(Op::Mul, r, th), t), o);
  out.eval();
  return out;
}

// PyTorch's check_from_to_in_range: both ends of a random integer range must be values of the
// dtype; its words name the dtype as C++ does ("unsigned char").
void check_random_range(int64_t from, int64_t to_inc, DType t) {
  // Only these dtypes' ranges can an int64 leave.
  if (t != kBool && t != kUInt8 && t != kInt8 && t != kInt16 && t != kInt32 && t != kFloat16)
    return;
  const char* name = fe::type_meta_name(t);
  const auto [lo, hi] = fe::finite_range(t);
  if (double(from) < lo || double(from) > hi)
    throw Error(fmt::format("from is out of bounds for {}", name));
  if (double(to_inc) < lo || double(to_inc) > hi)
    throw Error(fmt::format("to - 1 is out of bounds for {}", name));
}

Tensor randint(int64_t low, int64_t high, IntArrayRef size, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "randint");
  ir::check_sizes(size);
  Device dev = check_device(o);
  if (low >= high)
    throw Error(fmt::format("random_ expects 'from' to be less than 'to', but got from={} >= to={}",
                            low, high));
  DType t = o.dtype_or(kInt64);
  check_random_range(low, high - 1, t);
  auto [seed, off] = take_counters(ir::numel(size));
  // 63 random bits reduced modulo the range (bias below 2^-31 for 32-bit ranges).
  NodePtr a = fe::binary(Op::And, philox_word(size, seed, off, 0, dev),
                         fe::constant(int64_t{0x7fffffff}, kInt64));
  NodePtr b = philox_word(size, seed, off, 1, dev);
  NodePtr bits =
      fe::binary(Op::Add, fe::binary(Op::Mul, a, fe::constant(int64_t{1} << 32, kInt64)), b);
  NodePtr v = fe::binary(Op::Add, fe::binary(Op::Fmod, bits, fe::constant(high - low, kInt64)),
                         fe::constant(low, kInt64));
  return finish(fe::cast(v, t), o);
}
Tensor randint(int64_t high, IntArrayRef size, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "randint");
  return randint(0, high, size, o);
}

Tensor randperm(int64_t n, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "randperm");
  if (n < 0) throw Error(fmt::format("n must be non-negative, got{}", n));
  // PyTorch's checks: n - 1 must fit the dtype, and a float dtype must hold every integer below n.
  const DType t = o.dtype_or(kInt64);
  fe::check_scalar_fits(Scalar(n > 0 ? n - 1 : n), t);
  if (t == kFloat16 && n > 2049) throw Error("n cannot be greater than 2049 for Half type.");
  if (t == kFloat32 && n > (int64_t{1} << 24) + 1)
    throw Error("n cannot be greater than 2^24+1 for Float type.");
  if (t == kFloat64 && n > (int64_t{1} << 53) + 1)
    throw Error("n cannot be greater than 2^53+1 for Double type.");
  if (t == kBool || t == kBFloat16 || is_complex(t))
    throw Error(fmt::format("\"randperm\" not implemented for '{}'", fe::cpp_type_name(t)));
  // Sort random keys: a permutation drawn from the same Philox stream.
  std::vector<int64_t> keys = randint(0, int64_t{1} << 62, {n}).to_vector<int64_t>();
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    perm[i] = i;
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
  return tensor<int64_t>(perm, {n}, o.dtype(t));
}

Tensor arange(const Scalar& end, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "arange");
  return arange(0, end, 1, o);
}
Tensor arange(const Scalar& start, const Scalar& end, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "arange");
  return arange(start, end, 1, o);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions o,
              Caller caller) {
  detail::CallSite site(caller, "arange");
  Device dev = check_device(o);
  bool floating = start.is_floating_point() || end.is_floating_point() || step.is_floating_point();
  DType t = o.dtype_or(floating ? default_dtype() : kInt64);
  if (t == kBool || is_complex(t))
    throw Error(fmt::format("\"arange_cpu\" not implemented for '{}'", fe::cpp_type_name(t)));
  // PyTorch checks the bounds in the dtype's accumulate type: an integer dtype's is int64, so a
  // fractional start, end or step is truncated first (a step of 0.5 is zero).
  const bool integral = is_integral(t, true);
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  int64_t is = 0, ie = 0, ist = 0;
  if (integral) {
    for (const Scalar* v : {&start, &end, &step})
      fe::check_scalar_fits(*v, kInt64);
    is = start.to_int(), ie = end.to_int(), ist = step.to_int();
    s = static_cast<double>(is), e = static_cast<double>(ie), st = static_cast<double>(ist);
  }
  if (st == 0) throw Error("step must be nonzero");
  if (!std::isfinite(s) || !std::isfinite(e))
    throw Error(fmt::format("unsupported range: {} -> {}", start.str(), end.str()));
  if ((st > 0 && e < s) || (st < 0 && e > s))
    throw Error("upper bound and larger bound inconsistent with step sign");
  // The length is counted in double from the values as given, except for int64, whose length
  // comes from the truncated ones, their difference taken exactly.
  int64_t span = 0;
  const double size =
      t != kInt64 ? std::ceil((end.to_double() - start.to_double()) / step.to_double())
      : __builtin_sub_overflow(ie, is, &span) ? std::ceil((e - s) / st)
                                              : std::ceil(static_cast<double>(span) / st);
  // The largest double below 2^63 converts to int64 exactly.
  if (!(size >= 0 && size < 9.2233720368547748e18)) throw Error("invalid size, possible overflow?");
  const auto n = static_cast<int64_t>(size);
  NodePtr idx = iota({n}, {1}, dev);
  NodePtr v;
  if (integral) {
    // In the accumulate type, int64: start and step truncated (a step of 1.5 is 1).
    v = fe::binary(Op::Add, fe::constant(is, kInt64),
                   fe::binary(Op::Mul, idx, fe::constant(ist, kInt64)));
  } else {
    // Computed in double and rounded once, as PyTorch's accumulate type does.
    v = fe::binary(Op::Add, fe::constant(s, kFloat64),
                   fe::binary(Op::Mul, fe::cast(idx, kFloat64), fe::constant(st, kFloat64)));
  }
  return finish(fe::cast(v, t), o);
}

namespace {

// linspace's and logspace's bounds as PyTorch's kernels take them: converted to the dtype first
// (checked; an integer dtype truncates them, a narrower float rounds them), then to double for
// the step.
std::pair<double, double> range_in(const Scalar& start, const Scalar& end, DType t) {
  auto in = [t](const Scalar& v) {
    if (is_complex(t)) return v.to_double();
    fe::check_scalar_fits(v, t);
    return ir::to_dtype(v, t).to_double();
  };
  return {in(start), in(end)};
}

// `steps` values from s to e (float64), PyTorch's symmetric form: the first half counts up from
// s, the second down from e, so that both ends are exact.
NodePtr symmetric_range(double s, double e, int64_t steps, Device dev) {
  const double step = steps > 1 ? (e - s) / static_cast<double>(steps - 1) : 0.0;
  NodePtr idx = fe::cast(iota({steps}, {1}, dev), kFloat64);
  NodePtr up = fe::binary(Op::Add, fe::constant(s, kFloat64),
                          fe::binary(Op::Mul, idx, fe::constant(step, kFloat64)));
  NodePtr down = fe::binary(
      Op::Sub, fe::constant(e, kFloat64),
      fe::binary(Op::Mul, fe::binary(Op::Sub, fe::constant(double(steps - 1), kFloat64), idx),
                 fe::constant(step, kFloat64)));
  NodePtr first_half = fe::binary(Op::CmpLt, idx, fe::constant(double(steps / 2), kFloat64));
  return fe::where(first_half, up, down);
}

} // namespace

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions o,
                Caller caller) {
  detail::CallSite site(caller, "linspace");
  Device dev = check_device(o);
  if (steps < 0) throw Error("number of steps must be non-negative");
  DType t = o.dtype_or(default_dtype());
  if (steps == 1) return full({1}, start, o.dtype(t));
  if (t == kBool && steps > 1) throw Error("\"linspace_cpu\" not implemented for 'Bool'");
  auto [s, e] = range_in(start, end, t);
  return finish(fe::cast(symmetric_range(s, e, steps, dev), t), o);
}

Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base, TensorOptions o,
                Caller caller) {
  detail::CallSite site(caller, "logspace");
  Device dev = check_device(o);
  if (steps < 0) throw Error("number of steps must be non-negative");
  DType t = o.dtype_or(default_dtype());
  if (t == kBool && steps > 1) throw Error("\"logspace_cpu\" not implemented for 'Bool'");
  // One step is base ** start, start as given; more take start and end in the dtype first.
  auto [s, e] =
      steps == 1 ? std::pair{start.to_double(), start.to_double()} : range_in(start, end, t);
  NodePtr exps = symmetric_range(s, e, steps, dev);
  return finish(fe::cast(fe::binary(Op::Pow, fe::constant(base, kFloat64), exps), t), o);
}

Tensor eye(int64_t n, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "eye");
  return eye(n, n, o);
}
Tensor eye(int64_t n, int64_t m, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "eye");
  Device dev = check_device(o);
  if (n < 0) throw Error(fmt::format("n must be greater or equal to 0, got {}", n));
  if (m < 0) throw Error(fmt::format("m must be greater or equal to 0, got {}", m));
  NodePtr row = iota({n, m}, {1, 0}, dev);
  NodePtr col = iota({n, m}, {0, 1}, dev);
  return finish(fe::cast(fe::binary(Op::CmpEq, row, col), o.dtype_or(default_dtype())), o);
}

// The options of a *_like function: the tensor's dtype and device unless given.
static TensorOptions like(const Tensor& t, const TensorOptions& o) {
  return o.dtype(o.dtype_or(t.dtype())).device(o.device_opt().value_or(t.device()));
}

// PyTorch's preserve_format: the result of make(sizes, options) laid out as t is (see
// detail::preserved_layout), its elements made in memory order.
template <typename Make> Tensor like_layout(const Tensor& t, const TensorOptions& o, Make make) {
  const auto layout = detail::preserved_layout(t);
  if (!layout) return make(t.sizes(), like(t, o));
  Shape in_memory_order;
  for (int64_t d : layout->order)
    in_memory_order.push_back(t.size(d));
  Tensor out =
      detail::with_layout(make(in_memory_order, like(t, o).requires_grad(false)), t, *layout);
  set_requires_grad(out, o);
  return out;
}

Tensor empty_like(const Tensor& t, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "empty_like");
  return like_layout(t, o, [](const Shape& s, TensorOptions p) { return empty(s, p); });
}
Tensor zeros_like(const Tensor& t, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "zeros_like");
  return like_layout(t, o, [](const Shape& s, TensorOptions p) { return zeros(s, p); });
}
Tensor ones_like(const Tensor& t, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "ones_like");
  return like_layout(t, o, [](const Shape& s, TensorOptions p) { return ones(s, p); });
}
Tensor full_like(const Tensor& t, const Scalar& v, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "full_like");
  return like_layout(t, o, [&v](const Shape& s, TensorOptions p) { return full(s, v, p); });
}
Tensor rand_like(const Tensor& t, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "rand_like");
  return like_layout(t, o, [](const Shape& s, TensorOptions p) { return rand(s, p); });
}
Tensor randn_like(const Tensor& t, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "randn_like");
  return like_layout(t, o, [](const Shape& s, TensorOptions p) { return randn(s, p); });
}

// --- over user memory ---
namespace {
Tensor blob(void* data, const Shape& sizes, std::vector<int64_t> strides,
            std::function<void(void*)> deleter, const TensorOptions& o) {
  ir::check_sizes(sizes);
  Device dev = check_device(o);
  if (strides.size() != sizes.size())
    throw Error(fmt::format("from_blob: sizes has {} dims but strides has {}", sizes.size(),
                            strides.size()));
  DType t = o.dtype_or(default_dtype());
  int64_t extent = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (strides[d] < 0) throw Error("from_blob: negative strides are not supported");
    if (sizes[d] == 0)
      extent = 0;
    else if (extent)
      extent += (sizes[d] - 1) * strides[d];
  }
  if (!data && extent > 0) throw Error("from_blob: the data pointer is null");
  auto storage =
      rt::Storage::wrap(data, static_cast<size_t>(extent) * itemsize(t), dev, std::move(deleter));
  // The user's memory is the storage, a flat block; the tensor views it with
  // the given strides. Writes to it happen in place, at once.
  Tensor flat = wrap(ir::make_buffer(storage, t, {extent}, ir::View{{1}, 0}));
  storage->pin(flat.impl()->cell);
  Tensor out = detail::make_view(flat, sizes, std::move(strides), 0);
  set_requires_grad(out, o);
  return out;
}
} // namespace

Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions o) {
  return blob(data, sizes, ir::contiguous_strides(sizes), nullptr, o);
}
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions o) {
  return blob(data, sizes, strides, nullptr, o);
}
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter,
                 TensorOptions o) {
  return blob(data, sizes, ir::contiguous_strides(sizes), std::move(deleter), o);
}

// --- from host data ---
namespace {

void infer_shape(const NestedList& l, size_t depth, Shape& shape, bool& any_float, bool& any_int,
                 bool& all_bool) {
  if (l.is_scalar()) {
    if (depth != shape.size() && !(shape.empty() && depth == 0))
      throw Error("expected sequence of length " +
                  std::to_string(shape.empty() ? 0 : shape[depth]) + " at dim " +
                  std::to_string(depth) + " (got scalar)");
    any_float |= l.scalar().is_floating_point();
    any_int |= l.scalar().is_integral();
    all_bool &= l.scalar().is_bool();
    return;
  }
  int64_t n = static_cast<int64_t>(l.children().size());
  if (depth == shape.size())
    shape.push_back(n);
  else if (shape[depth] != n)
    throw Error(
        fmt::format("expected sequence of length {} at dim {} (got {})", shape[depth], depth, n));
  for (const auto& c : l.children())
    infer_shape(c, depth + 1, shape, any_float, any_int, all_bool);
}

void flatten(const NestedList& l, std::vector<Scalar>& out) {
  if (l.is_scalar())
    out.push_back(l.scalar());
  else
    for (const auto& c : l.children())
      flatten(c, out);
}

// A new tensor of `shape` and dtype t whose host memory `fill` writes, on o's device.
template <typename F>
Tensor from_host(const Shape& shape, DType t, const TensorOptions& o, F&& fill) {
  Device dev = check_device(o);
  NodePtr buf = ir::make_empty(t, shape);
  fill(static_cast<char*>(buf->storage->data()));
  if (dev.is_cuda())
    buf = ir::make_buffer(rt::copy_to_device(buf->storage, dev), t, shape, buf->view);
  return finish(buf, o);
}

Tensor from_scalars(const std::vector<Scalar>& vals, const Shape& shape, DType t,
                    const TensorOptions& o) {
  return from_host(shape, t, o, [&](char* p) {
    for (size_t i = 0; i < vals.size(); ++i)
      ir::store_scalar(p + i * itemsize(t), vals[i], t);
  });
}

} // namespace

Tensor tensor(const NestedList& data, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "tensor");
  Shape shape;
  bool any_float = false, any_int = false, all_bool = true;
  infer_shape(data, 0, shape, any_float, any_int, all_bool);
  std::vector<Scalar> vals;
  flatten(data, vals);
  DType t = o.dtype_or(any_float                     ? default_dtype()
                       : (all_bool && !vals.empty()) ? kBool
                       : vals.empty()                ? default_dtype()
                                                     : kInt64);
  return from_scalars(vals, shape, t, o);
}

template <typename T>
Tensor tensor(const std::vector<T>& data, IntArrayRef shape, TensorOptions o, Caller caller) {
  detail::CallSite site(caller, "tensor");
  ir::check_sizes(shape);
  if (ir::numel(shape) != static_cast<int64_t>(data.size()))
    throw Error(fmt::format("shape '{}' is invalid for input of size {}", ir::shape_str(shape),
                            data.size()));
  DType natural = std::is_same_v<T, bool>       ? kBool
                  : std::is_floating_point_v<T> ? (sizeof(T) == 8 ? kFloat64 : kFloat32)
                                                : kInt64;
  if constexpr (std::is_same_v<T, int32_t>) natural = kInt32;
  if constexpr (std::is_same_v<T, int16_t>) natural = kInt16;
  if constexpr (std::is_same_v<T, int8_t>) natural = kInt8;
  if constexpr (std::is_same_v<T, uint8_t>) natural = kUInt8;
  const DType t = o.dtype_or(natural);
  if constexpr (!std::is_same_v<T, bool>) // already in memory form: one copy
    if (t == natural)
      return from_host(shape, t, o, [&](char* p) {
        if (!data.empty()) std::memcpy(p, data.data(), data.size() * sizeof(T));
      });
  std::vector<Scalar> vals;
  vals.reserve(data.size());
  for (const auto& v : data)
    vals.emplace_back(static_cast<T>(v));
  return from_scalars(vals, shape, t, o);
}
template Tensor tensor<float>(const std::vector<float>&, IntArrayRef, TensorOptions, Caller);
template Tensor tensor<double>(const std::vector<double>&, IntArrayRef, TensorOptions, Caller);
template Tensor tensor<int64_t>(const std::vector<int64_t>&, IntArrayRef, TensorOptions, Caller);
template Tensor tensor<int32_t>(const std::vector<int32_t>&, IntArrayRef, TensorOptions, Caller);
template Tensor tensor<int16_t>(const std::vector<int16_t>&, IntArrayRef, TensorOptions, Caller);
template Tensor tensor<int8_t>(const std::vector<int8_t>&, IntArrayRef, TensorOptions, Caller);
template Tensor tensor<uint8_t>(const std::vector<uint8_t>&, IntArrayRef, TensorOptions, Caller);
template Tensor tensor<bool>(const std::vector<bool>&, IntArrayRef, TensorOptions, Caller);

} // namespace tj
