// Tensor members: metadata, materialization, reading values, conversions and views.
#include <fmt/format.h>

#include <cstring>
#include <ostream>

#include "frontend/graph_builders.h"
#include "frontend/promotion.h"
#include "frontend/tensor_impl.h"
#include "ir/scalar_semantics.h"
#include "print/tensor_print.h"
#include "tensorjit/config.h"
#include "tensorjit/functions.h"

namespace tj {

using detail::node_of;
using detail::wrap;
using fe::NodePtr;
using ir::Op;

namespace detail {

Tensor wrap(ir::NodePtr node) {
  auto impl = std::make_shared<TensorImpl>();
  if (node->depth > config().max_graph_nodes) realize({node});
  impl->node = ir::resolve(node);
  return Tensor(std::move(impl));
}

void check_defined(const Tensor& t, const char* what) {
  if (!t.defined()) throw Error(fmt::format("{}: the tensor is undefined", what));
}

const ir::NodePtr& node_of(const Tensor& t) {
  check_defined(t, "tensor");
  auto& impl = *t.impl();
  if (impl.node->realized) impl.node = impl.node->realized;
  return impl.node;
}

} // namespace detail

namespace {

// Reads element `i` (row-major over the view's shape) of a realized Buffer node.
struct Reader {
  const ir::Node* n;
  std::vector<int64_t> cstrides;

  explicit Reader(const ir::Node* node) : n(node), cstrides(ir::contiguous_strides(node->shape)) {}

  const char* address(int64_t i) const {
    int64_t off = n->view.offset;
    for (size_t d = 0; d < cstrides.size(); ++d) {
      int64_t idx = n->shape[d] ? (i / cstrides[d]) % n->shape[d] : 0;
      off += idx * n->view.strides[d];
    }
    return static_cast<const char*>(n->storage->data()) +
           off * static_cast<int64_t>(itemsize(n->dtype));
  }
  double as_double(int64_t i) const { return ir::load_float(address(i), n->dtype); }
  int64_t as_int(int64_t i) const { return ir::load_int(address(i), n->dtype); }
};

const ir::Node* realized_node(const Tensor& t) {
  t.eval();
  return node_of(t).get();
}

// The tensor's values in host memory: a CUDA tensor is copied back.
ir::NodePtr host_node(const Tensor& t) {
  t.eval();
  ir::NodePtr n = node_of(t);
  if (n->device.is_cpu()) return n;
  return node_of(t.to(kCPU));
}

} // namespace

// --- metadata ---
const Shape& Tensor::sizes() const { return node_of(*this)->shape; }
int64_t Tensor::size(int64_t d) const { return sizes()[ir::wrap_dim(d, dim())]; }
int64_t Tensor::dim() const { return static_cast<int64_t>(sizes().size()); }
int64_t Tensor::numel() const { return ir::numel(sizes()); }
DType Tensor::dtype() const { return node_of(*this)->dtype; }
Device Tensor::device() const { return node_of(*this)->device; }
TensorOptions Tensor::options() const { return TensorOptions().dtype(dtype()).device(device()); }
std::vector<int64_t> Tensor::stride() const {
  const auto& n = node_of(*this);
  return n->op == Op::Buffer ? n->view.strides : ir::contiguous_strides(n->shape);
}
int64_t Tensor::stride(int64_t d) const { return stride()[ir::wrap_dim(d, dim())]; }
int64_t Tensor::storage_offset() const {
  const auto& n = node_of(*this);
  return n->op == Op::Buffer ? n->view.offset : 0;
}
bool Tensor::is_contiguous() const {
  auto st = stride();
  const auto& shape = sizes();
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (st[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}
bool Tensor::is_leaf() const { return true; }
bool Tensor::requires_grad() const { return impl() && impl()->requires_grad; }
bool Tensor::is_realized() const { return node_of(*this)->op == Op::Buffer; }

Tensor& Tensor::requires_grad_(bool b) {
  if (b && !is_floating_point())
    throw Error("only Tensors of floating point dtype can require gradients");
  impl()->requires_grad = b;
  return *this;
}

// --- materialization ---
const Tensor& Tensor::eval() const {
  const auto& n = node_of(*this);
  if (n->op != Op::Buffer) detail::realize({n});
  node_of(*this); // picks up the realized buffer
  return *this;
}

void eval(const std::vector<Tensor>& tensors) {
  std::vector<ir::NodePtr> nodes;
  for (const auto& t : tensors)
    if (node_of(t)->op != Op::Buffer) nodes.push_back(node_of(t));
  if (!nodes.empty()) detail::realize(nodes);
  for (const auto& t : tensors)
    node_of(t);
}

Scalar Tensor::item() const {
  if (numel() != 1)
    throw Error(fmt::format("a Tensor with {} elements cannot be converted to Scalar", numel()));
  ir::NodePtr host = host_node(*this);
  Reader r(host.get());
  if (dtype() == kBool) return Scalar(r.as_int(0) != 0);
  if (is_floating_point()) return Scalar(r.as_double(0));
  return Scalar(r.as_int(0));
}

template <typename T> std::vector<T> Tensor::to_vector() const {
  ir::NodePtr host = host_node(*this);
  Reader r(host.get());
  int64_t n = numel();
  std::vector<T> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>)
      out[i] =
          static_cast<T>(is_floating_point() ? r.as_double(i) : static_cast<double>(r.as_int(i)));
    else if constexpr (std::is_same_v<T, bool>)
      out[i] = is_floating_point() ? r.as_double(i) != 0.0 : r.as_int(i) != 0;
    else
      out[i] = static_cast<T>(is_floating_point() ? ir::float_to_int(r.as_double(i), kInt64)
                                                  : r.as_int(i));
  }
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int16_t> Tensor::to_vector<int16_t>() const;
template std::vector<int8_t> Tensor::to_vector<int8_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;

namespace {
template <typename T> constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>)
    return kBool;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return kUInt8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return kInt8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return kInt16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return kInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return kInt64;
  else if constexpr (std::is_same_v<T, float>)
    return kFloat32;
  else
    return kFloat64;
}
} // namespace

void* Tensor::data_ptr() const {
  const ir::Node* n = realized_node(*this);
  return static_cast<char*>(n->storage->data()) +
         n->view.offset * static_cast<int64_t>(itemsize(n->dtype));
}

template <typename T> T* Tensor::data_ptr() const {
  if (dtype_of<T>() != dtype())
    throw Error(fmt::format("expected scalar type {} but found {}",
                            fe::cpp_type_name(dtype_of<T>()), fe::cpp_type_name(dtype())));
  return static_cast<T*>(data_ptr());
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template int32_t* Tensor::data_ptr<int32_t>() const;
template int16_t* Tensor::data_ptr<int16_t>() const;
template int8_t* Tensor::data_ptr<int8_t>() const;
template uint8_t* Tensor::data_ptr<uint8_t>() const;
template bool* Tensor::data_ptr<bool>() const;

NumpyArray Tensor::numpy() const {
  const ir::Node* n = realized_node(*this);
  if (!n->device.is_cpu())
    throw Error(fmt::format("can't convert {} device type tensor to numpy. Use Tensor.cpu() to "
                            "copy the tensor to host memory first.",
                            n->device.str()));
  NumpyArray a;
  a.data = data_ptr();
  a.dtype = numpy_str(n->dtype);
  a.shape = n->shape;
  for (int64_t s : n->view.strides)
    a.strides.push_back(s * static_cast<int64_t>(itemsize(n->dtype)));
  a.owner = n->storage;
  return a;
}

std::string Tensor::str() const {
  if (!defined()) return "[ Tensor (undefined) ]";
  ir::NodePtr host = host_node(*this);
  const ir::Node* n = host.get();
  // The reader keeps the host copy alive for as long as printing reads it.
  struct HostReader : Reader {
    ir::NodePtr keep;
    HostReader(ir::NodePtr h) : Reader(h.get()), keep(std::move(h)) {}
  };
  auto reader = std::make_shared<HostReader>(host);
  detail::PrintSource src;
  src.dtype = n->dtype;
  src.shape = n->shape;
  src.get_float = [reader](int64_t i) { return reader->as_double(i); };
  src.get_int = [reader](int64_t i) { return reader->as_int(i); };
  detail::PrintSuffixes sfx;
  if (!device().is_cpu()) sfx.device = device().str();
  sfx.requires_grad = requires_grad();
  return detail::repr(src, sfx);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// --- conversion ---
Tensor Tensor::to(DType t) const {
  if (t == dtype()) return *this;
  return wrap(fe::cast(node_of(*this), t));
}
Tensor Tensor::to(Device d) const {
  Device dst = rt::checked_device(d);
  NodePtr n = node_of(*this);
  if (n->device == dst) return *this;
  // Leaves without memory are remade on the other device: nothing moves.
  if (n->op == Op::Const || n->op == Op::Iota || n->op == Op::Philox)
    return wrap(
        ir::make_node(n->op, n->dtype, n->shape, {}, n->args, n->value, nullptr, n->view, dst));
  // Memory moves as one contiguous block.
  Tensor src = contiguous();
  src.eval();
  const ir::NodePtr& b = node_of(src);
  const size_t item = itemsize(b->dtype);
  auto storage = rt::copy_bytes(*b->storage, static_cast<size_t>(b->view.offset) * item,
                                static_cast<size_t>(b->numel()) * item, dst);
  return wrap(ir::make_buffer(std::move(storage), b->dtype, b->shape,
                              {ir::contiguous_strides(b->shape), 0}));
}
Tensor Tensor::to(Device d, DType t) const { return to(d).to(t); }
Tensor Tensor::cpu() const { return to(kCPU); }
Tensor Tensor::cuda() const { return to(Device(kCUDA)); }
Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }
Tensor Tensor::clone() const {
  // A Cast to its own dtype is a copy: materializing it writes fresh memory.
  NodePtr n = node_of(*this);
  return wrap(ir::make_node(Op::Cast, n->dtype, n->shape, {n}));
}
Tensor Tensor::detach() const {
  auto impl = std::make_shared<detail::TensorImpl>(*this->impl());
  impl->requires_grad = false;
  return Tensor(std::move(impl));
}

// --- views ---
namespace {
Shape infer_size(Shape shape, int64_t numel) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw Error("only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      throw Error(fmt::format("invalid shape dimension {}", shape[i]));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0 && known != 0 && numel % known == 0) shape[infer] = numel / known;
  if (infer >= 0 && known == 0 && numel == 0)
    throw Error(fmt::format("cannot reshape tensor of 0 elements into shape {} because the "
                            "unspecified dimension size -1 can be any value and is ambiguous",
                            ir::shape_str(shape)));
  if ((infer >= 0 && shape[infer] == -1) || ir::numel(shape) != numel)
    throw Error(
        fmt::format("shape '{}' is invalid for input of size {}", ir::shape_str(shape), numel));
  return shape;
}
} // namespace

Tensor Tensor::view(IntArrayRef shape) const {
  NodePtr n = node_of(*this);
  Shape s = infer_size(shape, numel());
  if (n->op == Op::Buffer && !ir::view_strides(n->shape, n->view.strides, s))
    throw Error("view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return wrap(fe::reshape(n, s));
}
Tensor Tensor::reshape(IntArrayRef shape) const {
  return wrap(fe::reshape(node_of(*this), infer_size(shape, numel())));
}
Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = ir::wrap_dim(start, dim());
  end = ir::wrap_dim(end, dim());
  if (start > end) throw Error("flatten() has invalid args: start_dim cannot come after end_dim");
  Shape s(sizes().begin(), sizes().begin() + start);
  int64_t m = 1;
  for (int64_t i = start; i <= end; ++i)
    m *= sizes()[i];
  s.push_back(m);
  s.insert(s.end(), sizes().begin() + end + 1, sizes().end());
  return reshape(s);
}
Tensor Tensor::squeeze() const {
  Shape s;
  for (int64_t d : sizes())
    if (d != 1) s.push_back(d);
  return reshape(s);
}
Tensor Tensor::squeeze(int64_t d) const {
  d = ir::wrap_dim(d, dim());
  if (dim() == 0 || sizes()[d] != 1) return *this;
  Shape s = sizes();
  s.erase(s.begin() + d);
  return reshape(s);
}
Tensor Tensor::unsqueeze(int64_t d) const {
  d = ir::wrap_dim(d, dim() + 1);
  Shape s = sizes();
  s.insert(s.begin() + d, 1);
  return wrap(fe::reshape(node_of(*this), s));
}
Tensor Tensor::permute(IntArrayRef dims) const {
  if (static_cast<int64_t>(dims.size()) != dim())
    throw Error(
        fmt::format("permute(sparse_coo): number of dimensions in the tensor input does not "
                    "match the length of the desired ordering of dimensions i.e. input.dim() "
                    "= {} is not equal to len(dims) = {}",
                    dim(), dims.size()));
  std::vector<int64_t> perm(dims.size());
  std::vector<bool> seen(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    perm[i] = ir::wrap_dim(dims[i], dim());
    if (seen[perm[i]]) throw Error("permute(): duplicate dims are not allowed.");
    seen[perm[i]] = true;
  }
  return wrap(fe::permute(node_of(*this), perm));
}
Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  if (dim() == 0) return *this;
  std::vector<int64_t> perm(dim());
  for (int64_t i = 0; i < dim(); ++i)
    perm[i] = i;
  std::swap(perm[ir::wrap_dim(d0, dim())], perm[ir::wrap_dim(d1, dim())]);
  return wrap(fe::permute(node_of(*this), perm));
}
Tensor Tensor::t() const {
  if (dim() > 2)
    throw Error(fmt::format("t() expects a tensor with <= 2 dimensions, but self is {}D", dim()));
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor Tensor::expand(IntArrayRef shape) const { return wrap(fe::expand(node_of(*this), shape)); }
Tensor Tensor::expand_as(const Tensor& o) const { return expand(o.sizes()); }

// --- in-place: the handle's value is replaced (aliases through views are issue-level work) ---
namespace {
Tensor& assign(Tensor& self, const Tensor& value) {
  NodePtr v = node_of(value);
  // An in-place result cannot leave its tensor's device.
  if (v->device != self.device()) fe::throw_device_mismatch(v->device, self.device());
  if (v->shape != self.sizes()) v = fe::expand(v, self.sizes());
  self.impl()->node = fe::cast(v, self.dtype());
  return self;
}
} // namespace
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) { return assign(*this, add(o, alpha)); }
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) { return assign(*this, add(o, alpha)); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) { return assign(*this, sub(o, alpha)); }
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) { return assign(*this, sub(o, alpha)); }
Tensor& Tensor::mul_(const Tensor& o) { return assign(*this, mul(o)); }
Tensor& Tensor::mul_(const Scalar& o) { return assign(*this, mul(o)); }
Tensor& Tensor::div_(const Tensor& o) { return assign(*this, div(o)); }
Tensor& Tensor::div_(const Scalar& o) { return assign(*this, div(o)); }
Tensor& Tensor::zero_() { return fill_(0); }
Tensor& Tensor::fill_(const Scalar& v) {
  return assign(*this, wrap(fe::constant(v, dtype(), sizes(), device())));
}
Tensor& Tensor::copy_(const Tensor& src) {
  NodePtr self = node_of(*this);
  // Copies may cross devices: the values come to this tensor's device.
  NodePtr s = node_of(src.device() == self->device ? src : src.to(self->device));
  impl()->node = fe::cast(fe::expand(s, self->shape), self->dtype);
  return *this;
}

Tensor& sin_(Tensor& a) { return assign(a, sin(a)); }
Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b) { return out.copy_(add(a, b)); }
Tensor& mul_out(Tensor& out, const Tensor& a, const Tensor& b) { return out.copy_(mul(a, b)); }

Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b); }

} // namespace tj
