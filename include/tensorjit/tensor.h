// tj::Tensor: a lazy handle to a node of the tensor graph.
#pragma once
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <vector>

#include "tensorjit/device.h"
#include "tensorjit/dtype.h"
#include "tensorjit/error.h"
#include "tensorjit/options.h"
#include "tensorjit/scalar.h"
#include "tensorjit/site.h"

namespace tj {

using Shape = std::vector<int64_t>;

// Sizes or dims as a parameter, taken the ways libtorch's IntArrayRef takes them: a braced list
// ({2, 3}), a Shape, or one integer (x.sum(1), x.view(-1), flip(x, 0)).
struct DimList : std::vector<int64_t> {
  using std::vector<int64_t>::vector;
  // Integers only: a bool (libtorch's var(false)) or a double is not a dim.
  template <std::integral I>
  requires(!std::same_as<I, bool>) DimList(I one)
      : std::vector<int64_t>{static_cast<int64_t>(one)} {}
  DimList(const std::vector<int64_t>& v) : std::vector<int64_t>(v) {}
  DimList(std::vector<int64_t>&& v) : std::vector<int64_t>(std::move(v)) {}
};
using IntArrayRef = const DimList&;

namespace detail {
struct TensorImpl;
}
namespace indexing {
class TensorIndex; // tensorjit/indexing.h
}
namespace autograd {
class Node; // tensorjit/autograd.h
}

class Tensor;

// The one-dimensional memory under a tensor and all its views, element by
// element: t.storage() of seed 003. Reads and writes go through the storage's
// current value, so a write is seen by every view of it.
class TypedStorage {
public:
  explicit TypedStorage(std::shared_ptr<detail::TensorImpl> flat) : flat_(std::move(flat)) {}
  int64_t size() const;
  DType dtype() const;
  // Element i as a 0-d view: read it with item(), write it with `= value`.
  Tensor operator[](int64_t i) const;
  // PyTorch's print form: one element per line, then "[torch.FloatStorage of size 10]".
  std::string str() const;

private:
  std::shared_ptr<detail::TensorImpl> flat_; // the whole storage as a 1-d view
};

// A NumPy-style description of materialized memory; shares memory with the tensor.
struct NumpyArray {
  void* data = nullptr;
  std::string dtype; // e.g. "<f4"
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; // in bytes
  std::shared_ptr<void> owner;  // keeps the storage alive
};

class Tensor {
public:
  // An undefined tensor (as grad() before backward); defined() is false.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  // Assigning to a named tensor rebinds the handle, as in Python...
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  // ...while assigning to a temporary view writes through it: t[0][1] = 561.
  Tensor& operator=(const Scalar& v) &&;
  Tensor& operator=(const Tensor& v) &&;

  bool defined() const { return impl_ != nullptr; }
  const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }

  // --- metadata (never materializes) ---
  const Shape& sizes() const;
  const Shape& shape() const { return sizes(); }
  int64_t size(int64_t dim) const;
  int64_t dim() const;
  int64_t ndimension() const { return dim(); }
  int64_t numel() const;
  DType dtype() const;
  DType scalar_type() const { return dtype(); }
  Device device() const;
  TensorOptions options() const;
  std::vector<int64_t> stride() const;
  int64_t stride(int64_t dim) const;
  int64_t storage_offset() const;
  bool is_contiguous() const;
  bool is_floating_point() const { return tj::is_floating_point(dtype()); }
  bool is_complex() const { return tj::is_complex(dtype()); }
  bool is_leaf() const;
  bool requires_grad() const;
  // True once the value has been computed and lives in memory.
  bool is_realized() const;

  // --- materialization ---
  const Tensor& eval() const;
  Scalar item() const;
  template <typename T> T item() const { return item().to<T>(); }
  template <typename T> std::vector<T> to_vector() const;
  template <typename T> T* data_ptr() const;
  void* data_ptr() const;
  NumpyArray numpy() const;
  std::string str() const;
  // The storage this tensor views (shared by all its views).
  TypedStorage storage() const;

  // --- conversion ---
  Tensor to(DType t, Caller where = {}) const;
  Tensor to(Device d, Caller where = {}) const;
  Tensor to(Device d, DType t, Caller where = {}) const;
  Tensor type(DType t, Caller where = {}) const { return to(t, where); }
  Tensor cpu(Caller where = {}) const;
  Tensor cuda(Caller where = {}) const; // to cuda:0
  Tensor contiguous(Caller where = {}) const;
  Tensor clone(Caller where = {}) const;
  Tensor detach() const;
  Tensor& detach_();
  Tensor& requires_grad_(bool b = true);

  // --- autograd (tensorjit/autograd.h) ---
  // The backward node that made this tensor; null for leaves and for tensors
  // that do not require grad.
  std::shared_ptr<autograd::Node> grad_fn() const;
  // The gradient accumulated by backward() into a leaf (or a tensor that
  // retains its grad); undefined until then. Writes to it (zero_()) change it.
  Tensor grad() const;
  // Sets the accumulated gradient (undefined clears it).
  void set_grad(const Tensor& g) const;
  // autograd::backward({*this}, {gradient}, retain_graph, create_graph).
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  // Keeps the gradient of a non-leaf in grad() during backward.
  void retain_grad() const;
  bool retains_grad() const;

  // --- views and shape ---
  Tensor view(IntArrayRef shape, Caller where = {}) const;
  Tensor reshape(IntArrayRef shape, Caller where = {}) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1, Caller where = {}) const;
  Tensor squeeze(Caller where = {}) const;
  Tensor squeeze(int64_t dim, Caller where = {}) const;
  Tensor unsqueeze(int64_t dim, Caller where = {}) const;
  Tensor permute(IntArrayRef dims, Caller where = {}) const;
  Tensor transpose(int64_t d0, int64_t d1, Caller where = {}) const;
  Tensor t(Caller where = {}) const;
  Tensor T(Caller where = {}) const;  // all dims reversed
  Tensor mT(Caller where = {}) const; // the last two dims swapped
  // The conjugate transpose of the last two dims (mT of a real tensor); adjoint() is the same.
  Tensor mH(Caller where = {}) const;
  Tensor adjoint(Caller where = {}) const;
  Tensor& t_(Caller where = {});
  Tensor& transpose_(int64_t d0, int64_t d1, Caller where = {});
  Tensor& squeeze_(Caller where = {});
  Tensor& squeeze_(int64_t dim, Caller where = {});
  Tensor& unsqueeze_(int64_t dim, Caller where = {});
  Tensor expand(IntArrayRef shape, Caller where = {}) const;
  Tensor expand_as(const Tensor& other, Caller where = {}) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length, Caller where = {}) const;
  Tensor select(int64_t dim, int64_t index, Caller where = {}) const;
  // Python's t[start:stop:step] along `dim` (bounds clamped, step > 0).
  Tensor slice(int64_t dim, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> stop = std::nullopt, int64_t step = 1,
               Caller where = {}) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1, Caller where = {}) const;
  Tensor operator[](int64_t index) const; // select(0, index)

  // --- indexing (tensorjit/indexing.h): integers, Slice, None, Ellipsis and
  // "..." give a view; bool and integer tensors a copy (advanced indexing) ---
  Tensor index(std::initializer_list<indexing::TensorIndex> indices, Caller where = {}) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices, Caller where = {}) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value,
                     Caller where = {});
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value,
                     Caller where = {});
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& value,
                     Caller where = {});
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value,
                     Caller where = {});

  // --- joining and selection, as the free functions of tensorjit/indexing.h ---
  Tensor index_select(int64_t dim, const Tensor& index, Caller where = {}) const;
  Tensor gather(int64_t dim, const Tensor& index, Caller where = {}) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src, Caller where = {}) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value, Caller where = {}) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src, Caller where = {}) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1,
                   Caller where = {}) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src, Caller where = {});
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value, Caller where = {});
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src, Caller where = {});
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                     const Scalar& alpha = 1, Caller where = {});
  Tensor masked_select(const Tensor& mask, Caller where = {}) const;
  // This tensor with `value` (a scalar, or a 0-d tensor, cast to this dtype) where `mask` is true.
  Tensor masked_fill(const Tensor& mask, const Scalar& value, Caller where = {}) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value, Caller where = {}) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value, Caller where = {});
  Tensor& masked_fill_(const Tensor& mask, const Tensor& value, Caller where = {});
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0, Caller where = {}) const;
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int64_t dim = 0,
                            Caller where = {}) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0, Caller where = {}) const;
  std::vector<Tensor> unbind(int64_t dim = 0, Caller where = {}) const;
  Tensor flip(IntArrayRef dims, Caller where = {}) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}, Caller where = {}) const;
  Tensor repeat(IntArrayRef repeats, Caller where = {}) const;
  Tensor diag(int64_t diagonal = 0, Caller where = {}) const;
  Tensor trace(Caller where = {}) const;
  Tensor triu(int64_t diagonal = 0, Caller where = {}) const;
  Tensor tril(int64_t diagonal = 0, Caller where = {}) const;

  // --- elementwise ops ---
  Tensor add(const Tensor& o, const Scalar& alpha = 1, Caller where = {}) const;
  Tensor add(const Scalar& o, const Scalar& alpha = 1, Caller where = {}) const;
  Tensor sub(const Tensor& o, const Scalar& alpha = 1, Caller where = {}) const;
  Tensor sub(const Scalar& o, const Scalar& alpha = 1, Caller where = {}) const;
  Tensor pow(const Tensor& e, Caller where = {}) const;
  Tensor pow(const Scalar& e, Caller where = {}) const;
  // mul(), div(), ..., eq(), ..., bitwise_xor(), atan2(), hypot(): the functions of two tensors
  // named in elementwise_functions.def; with a Scalar other where the row says.
#define TJ_BINARY_SCALAR_0(name)
#define TJ_BINARY_SCALAR_1(name) Tensor name(const Scalar& o, Caller where = {}) const;
#define TJ_BINARY_FN(name, with_scalar, has_inplace)                                               \
  Tensor name(const Tensor& o, Caller where = {}) const;                                           \
  TJ_BINARY_SCALAR_##with_scalar(name)
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints)                                              \
  Tensor name(const Tensor& o, Caller where = {}) const;
#include "tensorjit/elementwise_functions.def"
#undef TJ_BINARY_SCALAR_1
#undef TJ_BINARY_SCALAR_0
  // div with a rounding mode ("trunc", "floor" or none: functions.h).
  Tensor div(const Tensor& o, std::optional<std::string_view> rounding_mode,
             Caller where = {}) const;
  Tensor div(const Scalar& o, std::optional<std::string_view> rounding_mode,
             Caller where = {}) const;
  Tensor round(int64_t decimals, Caller where = {}) const;

  // Complex numbers (a real tensor's real() is itself, its conj() itself). real() and imag() are
  // views that write through to this tensor, as PyTorch's are.
  Tensor real(Caller where = {}) const;
  Tensor imag(Caller where = {}) const;
  Tensor conj(Caller where = {}) const;
  Tensor angle(Caller where = {}) const;
  // neg(), abs(), sign(), ..., exp(), log(), sin(), ..., erf(): the functions of one tensor
  // named in elementwise_functions.def (also free functions, functions.h).
#define TJ_UNARY_FN(name, has_inplace) Tensor name(Caller where = {}) const;
#define TJ_MATH_FN(name, op, grad_fn) Tensor name(Caller where = {}) const;
#include "tensorjit/elementwise_functions.def"
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt,
               Caller where = {}) const;
  Tensor clamp_min(const Scalar& min, Caller where = {}) const {
    return clamp(min, std::nullopt, where);
  }
  Tensor clamp_max(const Scalar& max, Caller where = {}) const {
    return clamp(std::nullopt, max, where);
  }
  Tensor where(const Tensor& cond, const Tensor& other, Caller where = {}) const;
  bool allclose(const Tensor& o, double rtol = 1e-5, double atol = 1e-8,
                bool equal_nan = false) const;
  Tensor isclose(const Tensor& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
                 Caller where = {}) const;
  bool equal(const Tensor& o) const;

  // --- linear algebra ---
  Tensor matmul(const Tensor& o, Caller where = {}) const;
  Tensor mm(const Tensor& o, Caller where = {}) const;
  Tensor mv(const Tensor& v, Caller where = {}) const;
  Tensor dot(const Tensor& o, Caller where = {}) const;

  // --- reductions (dims empty: all dims) ---
  Tensor sum(std::optional<DType> dtype = std::nullopt, Caller where = {}) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt,
             Caller where = {}) const;
  Tensor mean(std::optional<DType> dtype = std::nullopt, Caller where = {}) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt,
              Caller where = {}) const;
  Tensor prod(std::optional<DType> dtype = std::nullopt, Caller where = {}) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt,
              Caller where = {}) const;
  Tensor max(Caller where = {}) const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false, Caller where = {}) const;
  Tensor min(Caller where = {}) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false, Caller where = {}) const;
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false, Caller where = {}) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false, Caller where = {}) const;
  Tensor median(Caller where = {}) const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false, Caller where = {}) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false,
                                  Caller where = {}) const;
  std::tuple<Tensor, Tensor> sort(std::optional<bool> stable, int64_t dim = -1,
                                  bool descending = false, Caller where = {}) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, Caller where = {}) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true, Caller where = {}) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                Caller where = {}) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                Caller where = {}) const;
  Tensor var(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false,
             Caller where = {}) const;
  Tensor std(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false,
             Caller where = {}) const;
  Tensor norm(double p = 2, IntArrayRef dims = {}, bool keepdim = false, Caller where = {}) const;
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false, Caller where = {}) const;
  // Prefix sums and products along `dim`; integer inputs give int64 unless `dtype` says.
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt, Caller where = {}) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt, Caller where = {}) const;
  // Running maxima (minima) along `dim` and their indices (tj::cummax).
  std::tuple<Tensor, Tensor> cummax(int64_t dim, Caller where = {}) const;
  std::tuple<Tensor, Tensor> cummin(int64_t dim, Caller where = {}) const;
  Tensor logcumsumexp(int64_t dim, Caller where = {}) const;
  // tj::nn::functional::softmax and log_softmax along `dim`.
  Tensor softmax(int64_t dim, Caller where = {}) const;
  Tensor log_softmax(int64_t dim, Caller where = {}) const;
  Tensor all(Caller where = {}) const;
  Tensor all(int64_t dim, bool keepdim = false, Caller where = {}) const;
  Tensor any(Caller where = {}) const;
  Tensor any(int64_t dim, bool keepdim = false, Caller where = {}) const;

  // In-place forms write into this tensor's storage: every view of it sees the change.
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1, Caller where = {});
  Tensor& add_(const Scalar& o, const Scalar& alpha = 1, Caller where = {});
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1, Caller where = {});
  Tensor& sub_(const Scalar& o, const Scalar& alpha = 1, Caller where = {});
  Tensor& zero_(Caller where = {});
  Tensor& fill_(const Scalar& v, Caller where = {});
  Tensor& fill_(const Tensor& v, Caller where = {}); // a 0-d tensor
  Tensor& copy_(const Tensor& src, Caller where = {});
  // The in-place form of every elementwise op: the result is cast to this
  // tensor's dtype when PyTorch allows it (not float into int), and broadcast
  // to its shape when it can be.
  // neg_(), abs_(), ..., exp_(), ...: the in-place forms of elementwise_functions.def's functions.
#define TJ_UNARY_INPLACE_0(name)
#define TJ_UNARY_INPLACE_1(name) Tensor& name##_(Caller where = {});
#define TJ_UNARY_FN(name, has_inplace) TJ_UNARY_INPLACE_##has_inplace(name)
#define TJ_MATH_FN(name, op, grad_fn) Tensor& name##_(Caller where = {});
#include "tensorjit/elementwise_functions.def"
#undef TJ_UNARY_INPLACE_1
#undef TJ_UNARY_INPLACE_0
  Tensor& pow_(const Tensor& e, Caller where = {});
  Tensor& pow_(const Scalar& e, Caller where = {});
#define TJ_BINARY_INPLACE_00(name)
#define TJ_BINARY_INPLACE_01(name) Tensor& name##_(const Tensor& o, Caller where = {});
#define TJ_BINARY_INPLACE_11(name)                                                                 \
  Tensor& name##_(const Tensor& o, Caller where = {});                                             \
  Tensor& name##_(const Scalar& o, Caller where = {});
#define TJ_BINARY_INPLACE(name, s, i) TJ_BINARY_INPLACE_##s##i(name)
#define TJ_BINARY_FN(name, with_scalar, has_inplace)                                               \
  TJ_BINARY_INPLACE(name, with_scalar, has_inplace)
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints)                                              \
  Tensor& name##_(const Tensor& o, Caller where = {});
#include "tensorjit/elementwise_functions.def"
#undef TJ_BINARY_INPLACE
#undef TJ_BINARY_INPLACE_11
#undef TJ_BINARY_INPLACE_01
#undef TJ_BINARY_INPLACE_00
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt,
                 Caller where = {});
  Tensor& clamp_min_(const Scalar& min, Caller where = {}) {
    return clamp_(min, std::nullopt, where);
  }
  Tensor& clamp_max_(const Scalar& max, Caller where = {}) {
    return clamp_(std::nullopt, max, where);
  }

private:
  std::shared_ptr<detail::TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::ostream& operator<<(std::ostream& os, const TypedStorage& s);

// Operators build graph nodes like the named functions.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator~(const Tensor& a);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, const Scalar& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Scalar& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Scalar& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Scalar& b);
// On a temporary view they write through it: t[0] += 1.
Tensor operator+=(Tensor&& a, const Tensor& b);
Tensor operator+=(Tensor&& a, const Scalar& b);
Tensor operator-=(Tensor&& a, const Tensor& b);
Tensor operator-=(Tensor&& a, const Scalar& b);
Tensor operator*=(Tensor&& a, const Tensor& b);
Tensor operator*=(Tensor&& a, const Scalar& b);
Tensor operator/=(Tensor&& a, const Tensor& b);
Tensor operator/=(Tensor&& a, const Scalar& b);

} // namespace tj
