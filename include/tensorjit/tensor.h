// tj::Tensor: a lazy handle to a node of the tensor graph.
#pragma once
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

namespace tj {

using Shape = std::vector<int64_t>;
using IntArrayRef = const std::vector<int64_t>&;

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
  Tensor to(DType t) const;
  Tensor to(Device d) const;
  Tensor to(Device d, DType t) const;
  Tensor type(DType t) const { return to(t); }
  Tensor cpu() const;
  Tensor cuda() const; // to cuda:0
  Tensor contiguous() const;
  Tensor clone() const;
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
  Tensor view(IntArrayRef shape) const;
  Tensor reshape(IntArrayRef shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor T() const;  // all dims reversed
  Tensor mT() const; // the last two dims swapped
  Tensor& t_();
  Tensor& transpose_(int64_t d0, int64_t d1);
  Tensor expand(IntArrayRef shape) const;
  Tensor expand_as(const Tensor& other) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  // Python's t[start:stop:step] along `dim` (bounds clamped, step > 0).
  Tensor slice(int64_t dim, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> stop = std::nullopt, int64_t step = 1) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor operator[](int64_t index) const; // select(0, index)

  // --- indexing (tensorjit/indexing.h): integers, Slice, None, Ellipsis and
  // "..." give a view; bool and integer tensors a copy (advanced indexing) ---
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value);
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& value);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value);

  // --- elementwise ops ---
  Tensor add(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& o) const;
  Tensor mul(const Scalar& o) const;
  Tensor div(const Tensor& o) const;
  Tensor div(const Scalar& o) const;
  Tensor pow(const Tensor& e) const;
  Tensor pow(const Scalar& e) const;
  Tensor floor_divide(const Tensor& o) const;
  Tensor floor_divide(const Scalar& o) const;
  Tensor remainder(const Tensor& o) const;
  Tensor remainder(const Scalar& o) const;
  Tensor fmod(const Tensor& o) const;
  Tensor fmod(const Scalar& o) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor atan2(const Tensor& o) const;
  Tensor eq(const Tensor& o) const;
  Tensor eq(const Scalar& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor ne(const Scalar& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor lt(const Scalar& o) const;
  Tensor le(const Tensor& o) const;
  Tensor le(const Scalar& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor gt(const Scalar& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor ge(const Scalar& o) const;
  Tensor logical_and(const Tensor& o) const;
  Tensor logical_or(const Tensor& o) const;
  Tensor logical_xor(const Tensor& o) const;
  Tensor logical_not() const;
  Tensor bitwise_and(const Tensor& o) const;
  Tensor bitwise_or(const Tensor& o) const;
  Tensor bitwise_xor(const Tensor& o) const;
  Tensor bitwise_not() const;

  Tensor neg() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor ceil() const;
  Tensor floor() const;
  Tensor round() const;
  Tensor trunc() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor exp() const;
  Tensor exp2() const;
  Tensor expm1() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor log10() const;
  Tensor log1p() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor gelu() const;
  Tensor erf() const;
  Tensor reciprocal() const;
  Tensor square() const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp_min(const Scalar& min) const { return clamp(min, std::nullopt); }
  Tensor clamp_max(const Scalar& max) const { return clamp(std::nullopt, max); }
  Tensor where(const Tensor& cond, const Tensor& other) const;
  bool allclose(const Tensor& o, double rtol = 1e-5, double atol = 1e-8,
                bool equal_nan = false) const;
  Tensor isclose(const Tensor& o, double rtol = 1e-5, double atol = 1e-8,
                 bool equal_nan = false) const;
  bool equal(const Tensor& o) const;

  // --- linear algebra ---
  Tensor matmul(const Tensor& o,
                std::source_location where = std::source_location::current()) const;
  Tensor mm(const Tensor& o) const;
  Tensor mv(const Tensor& v) const;
  Tensor dot(const Tensor& o) const;

  // --- reductions (dims empty: all dims) ---
  Tensor sum(std::optional<DType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false,
             std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false,
              std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor norm(double p = 2, IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;

  // In-place forms write into this tensor's storage: every view of it sees the change.
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& o, const Scalar& alpha = 1);
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& sub_(const Scalar& o, const Scalar& alpha = 1);
  Tensor& mul_(const Tensor& o);
  Tensor& mul_(const Scalar& o);
  Tensor& div_(const Tensor& o);
  Tensor& div_(const Scalar& o);
  Tensor& zero_();
  Tensor& fill_(const Scalar& v);
  Tensor& fill_(const Tensor& v); // a 0-d tensor
  Tensor& copy_(const Tensor& src);
  // The in-place form of every elementwise op: the result is cast to this
  // tensor's dtype when PyTorch allows it (not float into int), and broadcast
  // to its shape when it can be.
  Tensor& neg_();
  Tensor& abs_();
  Tensor& sign_();
  Tensor& ceil_();
  Tensor& floor_();
  Tensor& round_();
  Tensor& trunc_();
  Tensor& sqrt_();
  Tensor& rsqrt_();
  Tensor& exp_();
  Tensor& exp2_();
  Tensor& expm1_();
  Tensor& log_();
  Tensor& log2_();
  Tensor& log10_();
  Tensor& log1p_();
  Tensor& sin_();
  Tensor& cos_();
  Tensor& tan_();
  Tensor& asin_();
  Tensor& acos_();
  Tensor& atan_();
  Tensor& sinh_();
  Tensor& cosh_();
  Tensor& tanh_();
  Tensor& sigmoid_();
  Tensor& relu_();
  Tensor& erf_();
  Tensor& reciprocal_();
  Tensor& square_();
  Tensor& logical_not_();
  Tensor& bitwise_not_();
  Tensor& pow_(const Tensor& e);
  Tensor& pow_(const Scalar& e);
  Tensor& floor_divide_(const Tensor& o);
  Tensor& floor_divide_(const Scalar& o);
  Tensor& remainder_(const Tensor& o);
  Tensor& remainder_(const Scalar& o);
  Tensor& fmod_(const Tensor& o);
  Tensor& fmod_(const Scalar& o);
  Tensor& atan2_(const Tensor& o);
  Tensor& eq_(const Tensor& o);
  Tensor& eq_(const Scalar& o);
  Tensor& ne_(const Tensor& o);
  Tensor& ne_(const Scalar& o);
  Tensor& lt_(const Tensor& o);
  Tensor& lt_(const Scalar& o);
  Tensor& le_(const Tensor& o);
  Tensor& le_(const Scalar& o);
  Tensor& gt_(const Tensor& o);
  Tensor& gt_(const Scalar& o);
  Tensor& ge_(const Tensor& o);
  Tensor& ge_(const Scalar& o);
  Tensor& logical_and_(const Tensor& o);
  Tensor& logical_or_(const Tensor& o);
  Tensor& logical_xor_(const Tensor& o);
  Tensor& bitwise_and_(const Tensor& o);
  Tensor& bitwise_or_(const Tensor& o);
  Tensor& bitwise_xor_(const Tensor& o);
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
  Tensor& clamp_min_(const Scalar& min) { return clamp_(min, std::nullopt); }
  Tensor& clamp_max_(const Scalar& max) { return clamp_(std::nullopt, max); }

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
