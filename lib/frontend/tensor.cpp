// Tensor members: metadata, materialization, reading values, conversions and views; in-place
// writes are in tensor_inplace.cpp.
#include <fmt/format.h>

#include <complex>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <ostream>

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

bool TensorImpl::covers_cell() const {
  return !parts && offset == 0 && ir::numel(sizes) == cell->node->numel() &&
         ir::is_contiguous(sizes, strides);
}

Tensor wrap(ir::NodePtr node) {
  if (node->depth > config().max_graph_nodes) realize({node});
  auto impl = new_impl();
  impl->sizes = node->shape;
  impl->strides = ir::contiguous_strides(node->shape);
  impl->cell = new_cell(ir::resolve(node));
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, Shape sizes, std::vector<int64_t> strides, int64_t offset) {
  auto impl = new_impl();
  impl->cell = base.impl()->cell;
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->is_view = true;
  impl->parts = base.impl()->parts;
  impl->base = base.impl()->is_view ? base.impl()->base : base.impl();
  impl->version = impl->base->version;
  // PyTorch's CreationMeta, inherited from a view only: a view made in no_grad mode of a tensor
  // that requires grad (the library's own ops compute under no_grad too, on tensors whose
  // history they record after), and a view of a piece of split, output 0 of its own node.
  const TensorImpl& from = *base.impl();
  impl->made_without_grad =
      (!GradMode::is_enabled() && base.requires_grad()) || (from.is_view && from.made_without_grad);
  impl->multi_output = impl->made_without_grad || !from.is_view || from.multi_output < 0 ? -1 : 0;
  return Tensor(std::move(impl));
}

Tensor make_parts_view(const Tensor& base, Shape sizes, std::vector<int64_t> strides,
                       int64_t offset) {
  Tensor v = make_view(base, std::move(sizes), std::move(strides), offset);
  v.impl()->parts = true;
  return v;
}

Tensor alias(const Tensor& t) { return make_view(t, t.sizes(), t.stride(), t.storage_offset()); }

void check_defined(const Tensor& t, const char* what) {
  if (!t.defined()) throw Error(fmt::format("{}: the tensor is undefined", what));
}

namespace {
// The cell's node, moved on to its realized buffer once computed.
const ir::NodePtr& cell_node(StorageCell& cell) {
  if (cell.node->realized) cell.node = ir::resolve(cell.node);
  return cell.node;
}
} // namespace

namespace {
// A complex node's parts, interleaved as complex memory holds them: real, of 2 * numel.
ir::NodePtr as_parts(const ir::NodePtr& z) {
  const DType t = real_part_dtype(z->dtype);
  const int64_t n = z->numel();
  ir::NodePtr flat = fe::reshape(z, {n});
  auto part = [&](Op op) { return ir::make_node(op, t, {n}, {flat}); };
  return fe::reshape(fe::interleave(part(Op::Real), part(Op::Imag)), {2 * n});
}

// The complex node of `shape` whose parts, interleaved, are `p`.
ir::NodePtr from_parts(const ir::NodePtr& p, DType complex_t, const Shape& shape) {
  const int64_t n = p->numel() / 2;
  ir::NodePtr pairs = fe::reshape(p, {n, 2});
  auto part = [&](int64_t k) { return fe::reshape(fe::slice(pairs, 1, k, k + 1, 1), {n}); };
  return fe::reshape(ir::make_node(Op::Complex, complex_t, {n}, {part(0), part(1)}), shape);
}
} // namespace

ir::NodePtr node_of(const Tensor& t) {
  check_defined(t, "tensor");
  const TensorImpl& impl = *t.impl();
  ir::NodePtr base = cell_node(*impl.cell);
  if (impl.parts) {
    // Only real or only imaginary parts (real(), imag() and most views of them): those of a
    // complex view.
    bool whole = true;
    std::vector<int64_t> halves;
    for (size_t d = 0; d < impl.sizes.size(); ++d) {
      whole &= impl.strides[d] % 2 == 0 || impl.sizes[d] == 1;
      halves.push_back(impl.strides[d] / 2);
    }
    if (whole)
      return ir::make_node(impl.offset % 2 ? Op::Imag : Op::Real, real_part_dtype(base->dtype),
                           impl.sizes, {fe::as_strided(base, impl.sizes, halves, impl.offset / 2)});
    base = as_parts(base);
  }
  if (impl.sizes == base->shape && impl.offset == 0 && ir::is_contiguous(impl.sizes, impl.strides))
    return base;
  return fe::as_strided(base, impl.sizes, impl.strides, impl.offset);
}

bool storage_exclusive(const Tensor& t) {
  const ir::NodePtr& n = cell_node(*t.impl()->cell);
  if (n->op != Op::Buffer) return n.use_count() == 1;
  for (const ir::NodePtr& b : ir::current_buffers(n->storage.get()))
    if (b.use_count() - 1 - (b == n ? 1 : 0) > 0) return false;
  return true;
}

namespace {
// The values of `b` computed into fresh memory of their own: a Buffer node.
ir::NodePtr in_own_memory(const ir::NodePtr& b) {
  ir::NodePtr c = ir::make_node(Op::Cast, b->dtype, b->shape, {b});
  detail::realize({c});
  return ir::resolve(c);
}

// Keeps the current contents of a pinned storage for everything that still
// reads them, so the storage itself can be written in place.
void snapshot(StorageCell& cell) {
  ir::NodePtr x = cell_node(cell);
  rt::Storage& s = *x->storage;
  auto old = rt::copy_bytes(s, 0, s.nbytes(), s.device());
  for (const ir::NodePtr& b : ir::current_buffers(&s))
    b->realized = ir::make_buffer(old, b->dtype, b->shape, b->view);
  s.bump_version();
  cell.node = ir::make_buffer(x->storage, x->dtype, x->shape, x->view);
}
} // namespace

void write(const Tensor& self, ir::NodePtr value, bool exclusive) {
  TensorImpl& impl = *self.impl();
  StorageCell& cell = *impl.cell;
  ir::NodePtr base = cell_node(cell);
  if (impl.parts) {
    // Through parts of complex memory: the complex value of the whole storage with those parts
    // replaced, written as any whole-storage value is.
    std::vector<int64_t> args(impl.strides);
    args.push_back(impl.offset);
    args.push_back(0);
    ir::NodePtr p = as_parts(base);
    p = ir::make_node(Op::Assign, p->dtype, p->shape, {p, std::move(value)}, std::move(args));
    auto whole = new_impl();
    whole->cell = impl.cell;
    whole->sizes = base->shape;
    whole->strides = ir::contiguous_strides(base->shape);
    write(Tensor(std::move(whole)), from_parts(p, base->dtype, base->shape), false);
    return;
  }
  bool pinned = base->op == Op::Buffer && base->storage->pinned();
  if (pinned && base->storage->owner().get() != impl.cell.get()) {
    // Memory handed out for another tensor, which this one reads too (both were one computed
    // constant, equal nodes being one node): this one's values move to memory of their own
    // before the write, which must not reach the other's.
    cell.node = in_own_memory(base);
    base = cell.node;
    pinned = false;
  }
  // All of an unpinned storage is replaced: the new value is the storage.
  if (impl.covers_cell() && !pinned) {
    cell.node = fe::reshape(value, base->shape);
    return;
  }
  if (pinned && !exclusive) {
    snapshot(cell);
    base = cell.node;
    exclusive = true;
  }
  std::vector<int64_t> args(impl.strides);
  args.push_back(impl.offset);
  args.push_back(exclusive ? 1 : 0);
  cell.node = ir::make_node(Op::Assign, base->dtype, base->shape, {base, std::move(value)},
                            std::move(args));
  // Memory handed out sees the write before the call returns; a loop of
  // writes runs in bounded memory as a loop of ops does.
  if (pinned || cell.node->depth > config().max_graph_nodes) {
    realize({cell.node});
    cell_node(cell);
  }
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
  std::complex<double> as_complex(int64_t i) const {
    return ir::load_complex(address(i), n->dtype);
  }
  int64_t as_int(int64_t i) const { return ir::load_int(address(i), n->dtype); }
};

// The tensor as a Buffer node: its storage computed, its view of it.
ir::NodePtr realized_node(const Tensor& t) {
  t.eval();
  ir::NodePtr n = node_of(t);
  if (n->op != Op::Buffer) { // a view that memory's layout cannot express: copied
    detail::realize({n});
    n = ir::resolve(n);
  }
  return n;
}

// The tensor's values in host memory: a CUDA tensor is copied back.
ir::NodePtr host_node(const Tensor& t) {
  if (t.device().is_cpu()) return realized_node(t);
  return realized_node(t.to(kCPU));
}

} // namespace

ir::NodePtr detail::host_contiguous(const Tensor& t) { return host_node(t.contiguous()); }

namespace {

// The tensor's storage as memory of its own, contiguous from its start, and
// pinned: it is about to be handed out, and writes must then reach it.
const ir::Node& pinned_storage(const Tensor& t) {
  t.eval();
  const auto& cell = t.impl()->cell;
  ir::NodePtr b = ir::resolve(cell->node);
  rt::Storage* s = b->storage.get();
  bool mine = b->view.offset == 0 && ir::is_contiguous(b->shape, b->view.strides) &&
              s->nbytes() == static_cast<size_t>(b->numel()) * itemsize(b->dtype) &&
              (!s->owner() || s->owner() == cell);
  if (!mine) {
    // Memory laid out otherwise, or handed out for another storage already:
    // this storage gets memory of its own.
    b = detail::in_own_memory(b);
  }
  b->storage->pin(cell);
  cell->node = b;
  return *cell->node;
}

} // namespace

// --- metadata ---
const Shape& Tensor::sizes() const {
  detail::check_defined(*this, "tensor");
  return impl_->sizes;
}
namespace {
// A 0-d tensor has no dim to ask about (PyTorch's maybe_wrap_dim without wrap_scalar).
int64_t checked_dim(int64_t d, int64_t ndim) {
  if (ndim == 0)
    throw Error(fmt::format("Dimension specified as {} but tensor has no dimensions", d));
  return ir::wrap_dim(d, ndim);
}
} // namespace

int64_t Tensor::size(int64_t d) const { return sizes()[checked_dim(d, dim())]; }
int64_t Tensor::dim() const { return static_cast<int64_t>(sizes().size()); }
int64_t Tensor::numel() const { return ir::numel(sizes()); }
DType Tensor::dtype() const {
  detail::check_defined(*this, "tensor");
  const DType t = impl_->cell->node->dtype;
  return impl_->parts ? real_part_dtype(t) : t;
}
Device Tensor::device() const {
  detail::check_defined(*this, "tensor");
  return impl_->cell->node->device;
}
TensorOptions Tensor::options() const { return TensorOptions().dtype(dtype()).device(device()); }
std::vector<int64_t> Tensor::stride() const {
  detail::check_defined(*this, "tensor");
  return impl_->strides;
}
int64_t Tensor::stride(int64_t d) const { return stride()[checked_dim(d, dim())]; }
int64_t Tensor::storage_offset() const {
  detail::check_defined(*this, "tensor");
  return impl_->offset;
}
bool Tensor::is_contiguous() const { return ir::is_contiguous(sizes(), stride()); }
bool Tensor::is_leaf() const {
  if (impl()) autograd::refresh_view(*this);
  return !impl() || !impl()->grad_fn;
}
bool Tensor::requires_grad() const {
  if (impl()) autograd::refresh_view(*this);
  return impl() && (impl()->requires_grad || impl()->grad_fn);
}
bool Tensor::is_realized() const {
  detail::check_defined(*this, "is_realized");
  return ir::resolve(impl_->cell->node)->op == Op::Buffer;
}

Tensor& Tensor::requires_grad_(bool b) {
  detail::check_defined(*this, "requires_grad_");
  if (!is_leaf()) {
    if (b) return *this; // it already does
    throw Error("you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().");
  }
  if (b && !is_floating_point() && !is_complex())
    throw Error("only Tensors of floating point dtype can require gradients");
  impl()->requires_grad = b;
  return *this;
}

// --- materialization ---
// Materialization computes whole storages: every view of one then reads memory.
const Tensor& Tensor::eval() const {
  tj::eval({*this});
  return *this;
}

void eval(const std::vector<Tensor>& tensors) {
  std::vector<ir::NodePtr> nodes;
  for (const auto& t : tensors) {
    detail::check_defined(t, "eval");
    ir::NodePtr n = ir::resolve(t.impl()->cell->node);
    if (n->op != Op::Buffer) nodes.push_back(n);
  }
  if (!nodes.empty()) detail::realize(nodes);
  for (const auto& t : tensors)
    t.impl()->cell->node = ir::resolve(t.impl()->cell->node);
}

Scalar Tensor::item() const {
  if (numel() != 1)
    throw Error(fmt::format("a Tensor with {} elements cannot be converted to Scalar", numel()));
  ir::NodePtr host = host_node(*this);
  Reader r(host.get());
  if (dtype() == kBool) return Scalar(r.as_int(0) != 0);
  if (is_complex()) return Scalar(r.as_complex(0));
  if (is_floating_point()) return Scalar(r.as_double(0));
  return Scalar(r.as_int(0));
}

template <typename T> std::vector<T> Tensor::to_vector() const {
  ir::NodePtr host = host_node(*this);
  Reader r(host.get());
  int64_t n = numel();
  std::vector<T> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
      out[i] = T(is_complex() || is_floating_point()
                     ? r.as_complex(i)
                     : std::complex<double>(static_cast<double>(r.as_int(i))));
    else if (is_complex())
      out[i] = Scalar(r.as_complex(i)).to<T>(); // the real part, as a cast to a real dtype
    else if constexpr (std::is_floating_point_v<T>)
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
template std::vector<std::complex<float>> Tensor::to_vector<std::complex<float>>() const;
template std::vector<std::complex<double>> Tensor::to_vector<std::complex<double>>() const;

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
  else if constexpr (std::is_same_v<T, std::complex<float>>)
    return kComplex64;
  else if constexpr (std::is_same_v<T, std::complex<double>>)
    return kComplex128;
  else
    return kFloat64;
}
} // namespace

void* Tensor::data_ptr() const {
  const ir::Node& s = pinned_storage(*this);
  return static_cast<char*>(s.storage->data()) +
         storage_offset() * static_cast<int64_t>(itemsize(dtype()));
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
template std::complex<float>* Tensor::data_ptr<std::complex<float>>() const;
template std::complex<double>* Tensor::data_ptr<std::complex<double>>() const;

NumpyArray Tensor::numpy() const {
  if (!device().is_cpu())
    throw Error(fmt::format("can't convert {} device type tensor to numpy. Use Tensor.cpu() to "
                            "copy the tensor to host memory first.",
                            device().str()));
  // The array would share memory that autograd does not see written.
  if (GradMode::is_enabled() && requires_grad())
    throw Error("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead.");
  NumpyArray a;
  a.data = data_ptr();
  const ir::Node& s = *ir::resolve(impl_->cell->node);
  a.dtype = numpy_str(dtype());
  a.shape = sizes();
  for (int64_t st : stride())
    a.strides.push_back(st * static_cast<int64_t>(itemsize(dtype())));
  a.owner = s.storage;
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
  if (is_complex()) {
    src.get_float = [reader](int64_t i) { return reader->as_complex(i).real(); };
    src.get_imag = [reader](int64_t i) { return reader->as_complex(i).imag(); };
  }
  detail::PrintSuffixes sfx;
  if (!device().is_cpu()) sfx.device = device().str();
  sfx.requires_grad = requires_grad();
  if (impl_->grad_fn) sfx.grad_fn = impl_->grad_fn->name();
  return detail::repr(src, sfx);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// --- the storage under a tensor ---
TypedStorage Tensor::storage() const {
  detail::check_defined(*this, "storage");
  const ir::Node& whole = *impl_->cell->node;
  auto flat = detail::new_impl();
  flat->cell = impl_->cell;
  flat->parts = impl_->parts; // a view of parts sees the storage as parts
  flat->sizes = {whole.numel() * (impl_->parts ? 2 : 1)};
  flat->strides = {1};
  return TypedStorage(std::move(flat));
}

int64_t TypedStorage::size() const { return flat_->sizes[0]; }
DType TypedStorage::dtype() const { return Tensor(flat_).dtype(); }
Tensor TypedStorage::operator[](int64_t i) const {
  if (i < -size() || i >= size())
    throw Error(fmt::format("index {} out of range for storage of size {}", i, size()));
  return Tensor(flat_).select(0, i);
}

std::string TypedStorage::str() const {
  // Python prints each element as a Python number: floats in their shortest
  // round-trip form, always with a point or an exponent; complex numbers as their repr.
  Tensor flat(flat_);
  std::string out = size() == 0 ? " \n" : "";
  if (is_complex(dtype())) {
    for (const std::complex<double>& z : flat.to_vector<std::complex<double>>())
      out += " " + Scalar(z).str() + "\n";
  } else if (is_floating_point(dtype())) {
    for (double v : flat.to_vector<double>()) {
      std::string e = fmt::format("{}", v);
      if (e.find_first_not_of("-0123456789") == std::string::npos) e += ".0";
      out += " " + e + "\n";
    }
  } else {
    for (int64_t v : flat.to_vector<int64_t>())
      out +=
          " " + (dtype() == kBool ? std::string(v ? "True" : "False") : std::to_string(v)) + "\n";
  }
  return out + fmt::format("[torch.{}Storage of size {}]", fe::cpp_type_name(dtype()), size());
}

std::ostream& operator<<(std::ostream& os, const TypedStorage& s) { return os << s.str(); }

namespace {
// The tensor's values on another device.
Tensor moved(const Tensor& x, Device dst) {
  NodePtr n = node_of(x);
  // Leaves without memory are remade on the other device: nothing moves.
  if (n->op == Op::Const || n->op == Op::Iota || n->op == Op::Philox)
    return wrap(
        ir::make_node(n->op, n->dtype, n->shape, {}, n->args, n->value, nullptr, n->view, dst));
  // Memory moves as one contiguous block.
  ir::NodePtr b = realized_node(x.contiguous());
  const size_t item = itemsize(b->dtype);
  auto storage = rt::copy_bytes(*b->storage, static_cast<size_t>(b->view.offset) * item,
                                static_cast<size_t>(b->numel()) * item, dst);
  return wrap(ir::make_buffer(std::move(storage), b->dtype, b->shape,
                              {ir::contiguous_strides(b->shape), 0}));
}
} // namespace

// --- conversion ---
Tensor Tensor::to(DType t, Caller caller) const {
  detail::CallSite site(caller, "to");
  if (t == dtype()) return *this;
  Tensor out = wrap(fe::cast(node_of(*this), t, /*discard_imag=*/true));
  // The engine casts the gradient back to the input's dtype.
  autograd::record(
      "ToCopyBackward0", {*this}, {out}, {},
      [](const std::vector<Tensor>& grads, const std::vector<Tensor>&) { return grads; });
  return out;
}
Tensor Tensor::to(Device d, Caller caller) const {
  detail::CallSite site(caller, "to");
  Device dst = rt::checked_device(d);
  if (device() == dst) return *this;
  Tensor out;
  {
    NoGradGuard no_grad;
    out = moved(*this, dst);
  }
  autograd::record("ToCopyBackward0", {*this}, {out}, {},
                   [src = device()](const std::vector<Tensor>& grads, const std::vector<Tensor>&) {
                     return std::vector<Tensor>{grads[0].to(src)};
                   });
  return out;
}
Tensor Tensor::to(Device d, DType t, Caller caller) const {
  detail::CallSite site(caller, "to");
  return to(d).to(t);
}
Tensor Tensor::cpu(Caller caller) const {
  detail::CallSite site(caller, "cpu");
  return to(kCPU);
}
Tensor Tensor::cuda(Caller caller) const {
  detail::CallSite site(caller, "cuda");
  return to(Device(kCUDA));
}
namespace {
// A copy in fresh, contiguous memory: a Cast to its own dtype.
Tensor copy_of(const Tensor& t) {
  NodePtr n = node_of(t);
  Tensor out = wrap(ir::make_node(Op::Cast, n->dtype, n->shape, {n}));
  autograd::record(
      "CloneBackward0", {t}, {out}, {},
      [](const std::vector<Tensor>& grads, const std::vector<Tensor>&) { return grads; });
  return out;
}

// The dims from the largest stride to the smallest (ties keep their order).
std::vector<int64_t> stride_order(const Tensor& t) {
  std::vector<int64_t> order(t.dim());
  std::iota(order.begin(), order.end(), 0);
  const auto st = t.stride();
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return st[a] > st[b]; });
  return order;
}

// Whether the view covers a block of memory exactly once (non-overlapping
// and dense), its dims in `order`.
bool is_dense(const Tensor& t, const std::vector<int64_t>& order) {
  int64_t expect = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int64_t size = t.size(*it);
    if (size == 1) continue; // its stride never moves
    if (t.stride(*it) != expect) return false;
    expect *= size;
  }
  return true;
}
} // namespace

Tensor Tensor::contiguous(Caller caller) const {
  detail::CallSite site(caller, "contiguous");
  return is_contiguous() ? *this : copy_of(*this);
}
namespace detail {
std::optional<PreservedLayout> preserved_layout(const Tensor& t) {
  if (t.numel() == 0 || t.is_contiguous()) return std::nullopt;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) == 0 && t.size(d) > 1) return std::nullopt;
  std::vector<int64_t> order = stride_order(t);
  std::vector<int64_t> strides =
      is_dense(t, order) ? t.stride() : ir::dense_strides(t.sizes(), order);
  return PreservedLayout{std::move(order), std::move(strides)};
}

Tensor with_layout(const Tensor& fresh, const Tensor& t, const PreservedLayout& layout) {
  Tensor out = make_view(fresh, t.sizes(), layout.strides, 0);
  out.impl()->is_view = false;
  out.impl()->base = nullptr;
  return out;
}
} // namespace detail

Tensor Tensor::clone(Caller caller) const {
  detail::CallSite site(caller, "clone");
  // Read in memory order, the copy holds each element where the original does.
  const auto layout = detail::preserved_layout(*this);
  if (!layout) return copy_of(*this);
  Tensor out;
  {
    NoGradGuard no_grad; // one node for the whole copy
    out = detail::with_layout(copy_of(permute(layout->order)), *this, *layout);
  }
  autograd::record(
      "CloneBackward0", {*this}, {out}, {},
      [](const std::vector<Tensor>& grads, const std::vector<Tensor>&) { return grads; });
  return out;
}
Tensor Tensor::detach() const {
  // Shares the storage, but not as a view: writes through it leave the
  // original's history alone.
  Tensor out = detail::alias(*this);
  out.impl()->is_view = false;
  out.impl()->base = nullptr;
  return out;
}
Tensor& Tensor::detach_() {
  detail::check_defined(*this, "detach_");
  // A view's history is rebuilt from its base's after a write through either: it cannot leave it.
  // (Views of other dtypes have no history: PyTorch does not count them as views here.)
  if (impl_->is_view && (is_floating_point() || is_complex()))
    throw Error("Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.");
  impl_->grad_fn = nullptr;
  impl_->requires_grad = false;
  return *this;
}

// --- views: a new view of the same storage; no kernel, no copy ---
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

namespace {
// A view of storage: sizes and strides in elements, from an offset.
struct Geometry {
  Shape sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// A view op. `geometry` maps a view of storage to the op's view of it:
// applied to x's view it gives the result; applied to the row-major layout
// of x's shape it says where the result's elements sit in x, which is where
// the result's gradient goes in x's gradient.
template <typename F> Tensor view_op(const Tensor& x, const char* grad_name, F&& geometry) {
  Geometry g = geometry(Geometry{x.sizes(), x.stride(), x.storage_offset()});
  Tensor v = detail::make_view(x, g.sizes, g.strides, g.offset);
  if (autograd::any_requires_grad({x})) {
    Geometry l = geometry(Geometry{x.sizes(), ir::contiguous_strides(x.sizes()), 0});
    autograd::record_strided(grad_name, x, v, l.strides, l.offset);
  }
  return v;
}

void erase_dim(Geometry& g, int64_t d) {
  g.sizes.erase(g.sizes.begin() + d);
  g.strides.erase(g.strides.begin() + d);
}

const char* kViewError = "view size is not compatible with input tensor's size and stride (at "
                         "least one dimension spans across two contiguous subspaces). Use "
                         ".reshape(...) instead.";
} // namespace

Tensor Tensor::view(IntArrayRef shape, Caller caller) const {
  detail::CallSite site(caller, "view");
  Shape s = infer_size(shape, numel());
  return view_op(*this, "ViewBackward0", [&](Geometry g) {
    auto st = ir::view_strides(g.sizes, g.strides, s);
    if (!st) throw Error(kViewError);
    return Geometry{s, *st, g.offset};
  });
}
Tensor Tensor::reshape(IntArrayRef shape, Caller caller) const {
  detail::CallSite site(caller, "reshape");
  Shape s = infer_size(shape, numel());
  if (ir::view_strides(sizes(), stride(), s)) return view(s);
  // PyTorch's _unsafe_view of a contiguous copy: the result is no view of the copy.
  Tensor out = copy_of(*this).view(s);
  out.impl()->is_view = false;
  out.impl()->base = nullptr;
  autograd::rename(out, "UnsafeViewBackward0");
  return out;
}
Tensor Tensor::flatten(int64_t start, int64_t end, Caller caller) const {
  detail::CallSite site(caller, "flatten");
  start = ir::wrap_dim(start, dim());
  end = ir::wrap_dim(end, dim());
  if (start > end) throw Error("flatten() has invalid args: start_dim cannot come after end_dim");
  if (dim() == 0) return reshape({1});
  if (start == end) return *this;
  Shape s(sizes().begin(), sizes().begin() + start);
  int64_t m = 1;
  for (int64_t i = start; i <= end; ++i)
    m *= sizes()[i];
  s.push_back(m);
  s.insert(s.end(), sizes().begin() + end + 1, sizes().end());
  return reshape(s);
}
Tensor Tensor::squeeze(Caller caller) const {
  detail::CallSite site(caller, "squeeze");
  return view_op(*this, "SqueezeBackward0", [](Geometry g) {
    for (int64_t d = static_cast<int64_t>(g.sizes.size()); d-- > 0;)
      if (g.sizes[d] == 1) erase_dim(g, d);
    return g;
  });
}
Tensor Tensor::squeeze(int64_t d, Caller caller) const {
  detail::CallSite site(caller, "squeeze");
  d = ir::wrap_dim(d, std::max<int64_t>(dim(), 1));
  const bool drop = dim() > 0 && sizes()[d] == 1;
  return view_op(*this, "SqueezeBackward1", [&](Geometry g) {
    if (drop) erase_dim(g, d);
    return g;
  });
}
Tensor Tensor::unsqueeze(int64_t d, Caller caller) const {
  detail::CallSite site(caller, "unsqueeze");
  d = ir::wrap_dim(d, dim() + 1);
  return view_op(*this, "UnsqueezeBackward0", [&](Geometry g) {
    const int64_t nd = static_cast<int64_t>(g.sizes.size());
    int64_t stride_d = d >= nd ? 1 : g.sizes[d] * g.strides[d];
    g.sizes.insert(g.sizes.begin() + d, 1);
    g.strides.insert(g.strides.begin() + d, stride_d);
    return g;
  });
}
Tensor Tensor::permute(IntArrayRef dims, Caller caller) const {
  detail::CallSite site(caller, "permute");
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
  return view_op(*this, "PermuteBackward0", [&](const Geometry& g) {
    Geometry p{Shape(perm.size()), std::vector<int64_t>(perm.size()), g.offset};
    for (size_t i = 0; i < perm.size(); ++i) {
      p.sizes[i] = g.sizes[perm[i]];
      p.strides[i] = g.strides[perm[i]];
    }
    return p;
  });
}
namespace {
Tensor transposed(const Tensor& x, int64_t d0, int64_t d1, const char* grad_name) {
  if (x.dim() > 0) {
    d0 = ir::wrap_dim(d0, x.dim());
    d1 = ir::wrap_dim(d1, x.dim());
  } else {
    ir::wrap_dim(d0, 1);
    ir::wrap_dim(d1, 1);
    d0 = d1 = -1;
  }
  return view_op(x, grad_name, [&](Geometry g) {
    if (d0 >= 0) {
      std::swap(g.sizes[d0], g.sizes[d1]);
      std::swap(g.strides[d0], g.strides[d1]);
    }
    return g;
  });
}
// `name` is "t" or "t_", as PyTorch's message names the op.
void check_t(int64_t dim, const char* name) {
  if (dim > 2)
    throw Error(
        fmt::format("{}() expects a tensor with <= 2 dimensions, but self is {}D", name, dim));
}
// An in-place view op: this tensor becomes the view, history included, under the in-place op's
// own grad_fn name (PyTorch numbers them after the out-of-place overloads: TBackward1).
void become(Tensor& self, const Tensor& v, const char* name) {
  detail::TensorImpl& impl = *self.impl();
  impl.sizes = v.sizes();
  impl.strides = v.stride();
  if (!v.impl()->grad_fn) return;
  autograd::rename(v, name);
  autograd::set_history(self, v.impl()->grad_fn, v.impl()->output_nr);
}
} // namespace
Tensor Tensor::transpose(int64_t d0, int64_t d1, Caller caller) const {
  detail::CallSite site(caller, "transpose");
  return transposed(*this, d0, d1, "TransposeBackward0");
}
Tensor Tensor::t(Caller caller) const {
  detail::CallSite site(caller, "t");
  check_t(dim(), "t");
  return transposed(*this, 0, dim() < 2 ? 0 : 1, "TBackward0");
}
Tensor Tensor::T(Caller caller) const {
  detail::CallSite site(caller, "T");
  std::vector<int64_t> rev(dim());
  for (int64_t i = 0; i < dim(); ++i)
    rev[i] = dim() - 1 - i;
  return permute(rev);
}
Tensor Tensor::mT(Caller caller) const {
  detail::CallSite site(caller, "mT");
  if (dim() < 2)
    throw Error(fmt::format("tensor.mT is only supported on matrices or batches of matrices. Got "
                            "{}-D tensor.",
                            dim()));
  return transpose(-2, -1);
}
namespace {
Tensor conj_transpose(const Tensor& t, const char* name) {
  if (t.dim() < 2)
    throw Error(fmt::format("tensor.{} is only supported on matrices or batches of matrices. Got "
                            "{}-D tensor.",
                            name, t.dim()));
  return t.transpose(-2, -1).conj();
}
} // namespace
Tensor Tensor::mH(Caller caller) const {
  detail::CallSite site(caller, "mH");
  return conj_transpose(*this, "mH");
}
Tensor Tensor::adjoint(Caller caller) const {
  detail::CallSite site(caller, "adjoint");
  return conj_transpose(*this, "adjoint()");
}
// The in-place view ops change this tensor's own view of its storage.
Tensor& Tensor::t_(Caller caller) {
  detail::CallSite site(caller, "t_");
  check_t(dim(), "t_");
  detail::check_inplace_grad(*this);
  become(*this, t(), "TBackward1");
  return *this;
}
Tensor& Tensor::transpose_(int64_t d0, int64_t d1, Caller caller) {
  detail::CallSite site(caller, "transpose_");
  detail::check_inplace_grad(*this);
  become(*this, transpose(d0, d1), "TransposeBackward1");
  return *this;
}
Tensor& Tensor::squeeze_(Caller caller) {
  detail::CallSite site(caller, "squeeze_");
  detail::check_inplace_grad(*this);
  become(*this, squeeze(), "SqueezeBackward2");
  return *this;
}
Tensor& Tensor::squeeze_(int64_t dim, Caller caller) {
  detail::CallSite site(caller, "squeeze_");
  detail::check_inplace_grad(*this);
  become(*this, squeeze(dim), "SqueezeBackward3");
  return *this;
}
Tensor& Tensor::unsqueeze_(int64_t dim, Caller caller) {
  detail::CallSite site(caller, "unsqueeze_");
  detail::check_inplace_grad(*this);
  become(*this, unsqueeze(dim), "UnsqueezeBackward1");
  return *this;
}
Tensor Tensor::expand(IntArrayRef shape, Caller caller) const {
  detail::CallSite site(caller, "expand");
  Shape s = fe::expanded_shape(sizes(), shape, dtype());
  size_t lead = s.size() - sizes().size();
  // Broadcast dims read one element (stride 0); a new dim of size 1 takes the stride it would
  // have over the dims inside it, as PyTorch's inferExpandGeometry gives it.
  std::vector<int64_t> st(s.size(), 0);
  for (size_t i = s.size(); i-- > 0;) {
    if (i >= lead)
      st[i] = s[i] == sizes()[i - lead] ? stride()[i - lead] : 0;
    else if (s[i] == 1 && i + 1 < s.size())
      st[i] = s[i + 1] * st[i + 1];
  }
  Tensor v = detail::make_view(*this, s, st, storage_offset());
  // Elements read many times: their gradients add up.
  autograd::record("ExpandBackward0", {*this}, {v}, {},
                   [in = sizes()](const std::vector<Tensor>& grads, const std::vector<Tensor>&) {
                     return std::vector<Tensor>{autograd::sum_to(grads[0], in)};
                   });
  return v;
}
Tensor Tensor::expand_as(const Tensor& o, Caller caller) const {
  detail::CallSite site(caller, "expand_as");
  return expand(o.sizes());
}
Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length, Caller caller) const {
  detail::CallSite site(caller, "narrow");
  if (dim() == 0) throw Error("narrow() cannot be applied to a 0-dim tensor.");
  d = ir::wrap_dim(d, dim());
  int64_t n = sizes()[d];
  if (start < -n || start > n)
    throw Error(fmt::format("start out of range (expected to be in range of [{}, {}], but got {})",
                            -n, n, start));
  if (start < 0) start += n;
  if (length < 0) throw Error("narrow(): length must be non-negative.");
  if (start + length > n)
    throw Error(
        fmt::format("start ({}) + length ({}) exceeds dimension size ({}).", start, length, n));
  return view_op(*this, "SliceBackward0", [&](Geometry g) {
    g.offset += start * g.strides[d];
    g.sizes[d] = length;
    return g;
  });
}
Tensor Tensor::select(int64_t d, int64_t index, Caller caller) const {
  detail::CallSite site(caller, "select");
  if (dim() == 0) throw Error("select() cannot be applied to a 0-dim tensor.");
  d = ir::wrap_dim(d, dim());
  int64_t n = sizes()[d];
  if (index < -n || index >= n)
    throw Error(fmt::format("select(): index {} out of range for tensor of size {} at dimension {}",
                            index, ir::shape_str(sizes()), d));
  if (index < 0) index += n;
  return view_op(*this, "SelectBackward0", [&](Geometry g) {
    g.offset += index * g.strides[d];
    erase_dim(g, d);
    return g;
  });
}
Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> stop,
                     int64_t step, Caller caller) const {
  detail::CallSite site(caller, "slice");
  if (dim() == 0) throw Error("slice() cannot be applied to a 0-dim tensor.");
  if (step <= 0) throw Error("slice step must be positive");
  d = ir::wrap_dim(d, dim());
  int64_t n = sizes()[d];
  // Python's clamping of slice bounds.
  auto clamp = [n](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + n : *v;
    return std::clamp<int64_t>(x, 0, n);
  };
  int64_t b = clamp(start, 0), e = std::max(b, clamp(stop, n));
  return view_op(*this, "SliceBackward0", [&](Geometry g) {
    g.sizes[d] = (e - b + step - 1) / step;
    g.offset += b * g.strides[d];
    g.strides[d] *= step;
    return g;
  });
}
Tensor Tensor::diagonal(int64_t offset, int64_t d1, int64_t d2, Caller caller) const {
  detail::CallSite site(caller, "diagonal");
  d1 = ir::wrap_dim(d1, dim());
  d2 = ir::wrap_dim(d2, dim());
  if (d1 == d2) throw Error(fmt::format("diagonal dimensions cannot be identical {}, {}", d1, d2));
  int64_t len = offset >= 0 ? std::min(sizes()[d1], sizes()[d2] - offset)
                            : std::min(sizes()[d1] + offset, sizes()[d2]);
  len = std::max<int64_t>(len, 0);
  return view_op(*this, "DiagonalBackward0", [&](const Geometry& g) {
    Geometry r{{}, {}, g.offset};
    if (len > 0) r.offset += offset >= 0 ? offset * g.strides[d2] : -offset * g.strides[d1];
    for (size_t i = 0; i < g.sizes.size(); ++i)
      if (static_cast<int64_t>(i) != d1 && static_cast<int64_t>(i) != d2) {
        r.sizes.push_back(g.sizes[i]);
        r.strides.push_back(g.strides[i]);
      }
    r.sizes.push_back(len);
    r.strides.push_back(g.strides[d1] + g.strides[d2]);
    return r;
  });
}
Tensor Tensor::operator[](int64_t index) const { return select(0, index); }

// The view ops' free forms, as torch.reshape(t, shape).
Tensor reshape(const Tensor& t, IntArrayRef shape, Caller caller) {
  detail::CallSite site(caller, "reshape");
  return t.reshape(shape);
}
Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim, Caller caller) {
  detail::CallSite site(caller, "flatten");
  return t.flatten(start_dim, end_dim);
}
Tensor squeeze(const Tensor& t, Caller caller) {
  detail::CallSite site(caller, "squeeze");
  return t.squeeze();
}
Tensor squeeze(const Tensor& t, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "squeeze");
  return t.squeeze(dim);
}
Tensor unsqueeze(const Tensor& t, int64_t dim, Caller caller) {
  detail::CallSite site(caller, "unsqueeze");
  return t.unsqueeze(dim);
}
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1, Caller caller) {
  detail::CallSite site(caller, "transpose");
  return t.transpose(d0, d1);
}
Tensor permute(const Tensor& t, IntArrayRef dims, Caller caller) {
  detail::CallSite site(caller, "permute");
  return t.permute(dims);
}
Tensor t(const Tensor& t, Caller caller) {
  detail::CallSite site(caller, "t");
  return t.t();
}

Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b); }
Tensor operator+=(Tensor&& a, const Tensor& b) { return a.add_(b); }
Tensor operator+=(Tensor&& a, const Scalar& b) { return a.add_(b); }
Tensor operator-=(Tensor&& a, const Tensor& b) { return a.sub_(b); }
Tensor operator-=(Tensor&& a, const Scalar& b) { return a.sub_(b); }
Tensor operator*=(Tensor&& a, const Tensor& b) { return a.mul_(b); }
Tensor operator*=(Tensor&& a, const Scalar& b) { return a.mul_(b); }
Tensor operator/=(Tensor&& a, const Tensor& b) { return a.div_(b); }
Tensor operator/=(Tensor&& a, const Scalar& b) { return a.div_(b); }

} // namespace tj
