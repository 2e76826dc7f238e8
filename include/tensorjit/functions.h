// Free functions: creation, elementwise math, materialization of several tensors.
#pragma once
#include <functional>
#include <initializer_list>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "tensorjit/site.h"
#include "tensorjit/tensor.h"

namespace tj {

// --- creation ---
Tensor empty(IntArrayRef size, TensorOptions opts = {}, Caller where = {});
Tensor zeros(IntArrayRef size, TensorOptions opts = {}, Caller where = {});
Tensor ones(IntArrayRef size, TensorOptions opts = {}, Caller where = {});
Tensor full(IntArrayRef size, const Scalar& value, TensorOptions opts = {}, Caller where = {});
Tensor rand(IntArrayRef size, TensorOptions opts = {}, Caller where = {});
Tensor randn(IntArrayRef size, TensorOptions opts = {}, Caller where = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef size, TensorOptions opts = {},
               Caller where = {});
Tensor randint(int64_t high, IntArrayRef size, TensorOptions opts = {}, Caller where = {});
Tensor randperm(int64_t n, TensorOptions opts = {}, Caller where = {});
Tensor arange(const Scalar& end, TensorOptions opts = {}, Caller where = {});
Tensor arange(const Scalar& start, const Scalar& end, TensorOptions opts = {}, Caller where = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions opts = {},
              Caller where = {});
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions opts = {},
                Caller where = {});
Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base = 10.0,
                TensorOptions opts = {}, Caller where = {});
Tensor eye(int64_t n, TensorOptions opts = {}, Caller where = {});
Tensor eye(int64_t n, int64_t m, TensorOptions opts = {}, Caller where = {});
Tensor scalar_tensor(const Scalar& v, TensorOptions opts = {}, Caller where = {});

Tensor empty_like(const Tensor& t, TensorOptions opts = {}, Caller where = {});
Tensor zeros_like(const Tensor& t, TensorOptions opts = {}, Caller where = {});
Tensor ones_like(const Tensor& t, TensorOptions opts = {}, Caller where = {});
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions opts = {}, Caller where = {});
Tensor rand_like(const Tensor& t, TensorOptions opts = {}, Caller where = {});
Tensor randn_like(const Tensor& t, TensorOptions opts = {}, Caller where = {});

// Seeds the Philox generator; the same seed gives the same numbers everywhere.
void manual_seed(uint64_t seed);

// --- from host data (copies) ---
// A nested initializer list of values. Integers give int64, floats give the
// default dtype, bools give bool, unless opts says otherwise.
class NestedList {
public:
  NestedList(double v) : scalar_(v), is_scalar_(true) {}
  NestedList(float v) : scalar_(static_cast<double>(v)), is_scalar_(true) {}
  NestedList(int v) : scalar_(v), is_scalar_(true) {}
  NestedList(long v) : scalar_(v), is_scalar_(true) {}
  NestedList(long long v) : scalar_(static_cast<int64_t>(v)), is_scalar_(true) {}
  NestedList(bool v) : scalar_(v), is_scalar_(true) {}
  NestedList(std::initializer_list<NestedList> l) : children_(l), is_scalar_(false) {}

  bool is_scalar() const { return is_scalar_; }
  const Scalar& scalar() const { return scalar_; }
  const std::vector<NestedList>& children() const { return children_; }

private:
  Scalar scalar_;
  std::vector<NestedList> children_;
  bool is_scalar_;
};
Tensor tensor(const NestedList& data, TensorOptions opts = {}, Caller where = {});
template <typename T>
Tensor tensor(const std::vector<T>& data, IntArrayRef shape, TensorOptions opts = {},
              Caller where = {});
template <typename T>
Tensor tensor(const std::vector<T>& data, TensorOptions opts = {}, Caller where = {}) {
  return tensor<T>(data, {static_cast<int64_t>(data.size())}, opts, where);
}

// --- over user memory (shared, not copied) ---
// The tensor reads `data` when it is materialized, and values written through
// data_ptr() land in it. `deleter` (optional) runs when the last view goes.
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions opts = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions opts = {});
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter,
                 TensorOptions opts = {});

// --- .npy files (NumPy's format) ---
// Writes the tensor's values as np.save does (C order, little-endian).
void save_npy(const Tensor& tensor, const std::string& path);
// Reads a .npy file of format version 1.0, 2.0 or 3.0, either byte order; a
// Fortran-order file gives a tensor with Fortran strides.
Tensor load_npy(const std::string& path);

// --- elementwise ---
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1, Caller where = {});
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1, Caller where = {});
Tensor pow(const Tensor& a, const Tensor& b, Caller where = {});
Tensor pow(const Tensor& a, const Scalar& b, Caller where = {});
Tensor pow(const Scalar& a, const Tensor& b, Caller where = {});
// mul, div, ..., eq, ..., bitwise_xor, atan2, hypot: the functions of two tensors named in
// elementwise_functions.def.
#define TJ_BINARY_FN(name, with_scalar, has_inplace)                                               \
  Tensor name(const Tensor& a, const Tensor& b, Caller where = {});
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints)                                              \
  Tensor name(const Tensor& a, const Tensor& b, Caller where = {});
#include "tensorjit/elementwise_functions.def"
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Caller where = {});
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b, Caller where = {});
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b, Caller where = {});
Tensor clamp(const Tensor& a, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt,
             Caller where = {});
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false, Caller where = {});
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);
bool equal(const Tensor& a, const Tensor& b);

// Complex numbers: re + i im (float32 or float64 parts of one dtype), and abs * (cos + i sin) of
// angle, as torch.complex and torch.polar.
Tensor complex(const Tensor& real, const Tensor& imag, Caller where = {});
Tensor polar(const Tensor& abs, const Tensor& angle, Caller where = {});
inline bool is_complex(const Tensor& t) { return t.is_complex(); }

Tensor real(const Tensor& a, Caller where = {});
Tensor imag(const Tensor& a, Caller where = {});
Tensor conj(const Tensor& a, Caller where = {});
Tensor angle(const Tensor& a, Caller where = {});

// neg, abs, sign, ..., exp, log, sin, ..., erf: the functions of one tensor named in
// elementwise_functions.def.
#define TJ_UNARY_FN(name, has_inplace) Tensor name(const Tensor& a, Caller where = {});
#define TJ_MATH_FN(name, op, grad_fn) Tensor name(const Tensor& a, Caller where = {});
#include "tensorjit/elementwise_functions.def"

// div with a rounding mode: "trunc" (toward zero; integers stay integers), "floor" (as
// floor_divide), or none (true division, as div(a, b)). No gradient flows through a rounded
// quotient.
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode,
           Caller where = {});
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string_view> rounding_mode,
           Caller where = {});
// round to `decimals` decimal places (negative: to tens, hundreds, ...), half to even.
Tensor round(const Tensor& t, int64_t decimals, Caller where = {});

// --- reductions (see the Tensor members) ---
Tensor sum(const Tensor& t, std::optional<DType> dtype = std::nullopt, Caller where = {});
Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt, Caller where = {});
Tensor mean(const Tensor& t, std::optional<DType> dtype = std::nullopt, Caller where = {});
Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt, Caller where = {});
Tensor prod(const Tensor& t, std::optional<DType> dtype = std::nullopt, Caller where = {});
Tensor max(const Tensor& t, Caller where = {});
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false,
                               Caller where = {});
Tensor min(const Tensor& t, Caller where = {});
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false,
                               Caller where = {});
Tensor amax(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false, Caller where = {});
Tensor amin(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false, Caller where = {});
Tensor argmax(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
              Caller where = {});
Tensor argmin(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
              Caller where = {});
// The lower median (of an even count, the smaller middle value); NaN where the values hold one.
// With a dim, also the index of the value returned (among equal values, the one a stable sort
// puts in the middle; a NaN's first place).
Tensor median(const Tensor& t, Caller where = {});
std::tuple<Tensor, Tensor> median(const Tensor& t, int64_t dim, bool keepdim = false,
                                  Caller where = {});

// --- sorting: stable (ties keep their order), NaN above every number ---
// (values, indices) along dim, ascending or descending.
std::tuple<Tensor, Tensor> sort(const Tensor& t, int64_t dim = -1, bool descending = false,
                                Caller where = {});
// libtorch's overload; every sort is stable, so `stable` changes nothing.
std::tuple<Tensor, Tensor> sort(const Tensor& t, std::optional<bool> stable, int64_t dim = -1,
                                bool descending = false, Caller where = {});
Tensor argsort(const Tensor& t, int64_t dim = -1, bool descending = false, Caller where = {});
// The k largest (or smallest) along dim, with their indices, in sorted order whatever `sorted`.
std::tuple<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true, Caller where = {});
Tensor var(const Tensor& t, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false,
           Caller where = {});
Tensor std(const Tensor& t, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false,
           Caller where = {});
Tensor norm(const Tensor& t, double p = 2, IntArrayRef dims = {}, bool keepdim = false,
            Caller where = {});
Tensor logsumexp(const Tensor& t, IntArrayRef dims, bool keepdim = false, Caller where = {});
Tensor cumsum(const Tensor& t, int64_t dim, std::optional<DType> dtype = std::nullopt,
              Caller where = {});
Tensor cumprod(const Tensor& t, int64_t dim, std::optional<DType> dtype = std::nullopt,
               Caller where = {});
// The running maximum (minimum) along `dim` and the index where it was last reached; a NaN
// counts as the extremum from where it appears.
std::tuple<Tensor, Tensor> cummax(const Tensor& t, int64_t dim, Caller where = {});
std::tuple<Tensor, Tensor> cummin(const Tensor& t, int64_t dim, Caller where = {});
// log(cumsum(exp(t))) along `dim`, without overflow: a scan of logaddexp (floating dtypes).
Tensor logcumsumexp(const Tensor& t, int64_t dim, Caller where = {});
Tensor all(const Tensor& t, Caller where = {});
Tensor any(const Tensor& t, Caller where = {});

// --- linear algebra ---
Tensor matmul(const Tensor& a, const Tensor& b, Caller where = {});
Tensor mm(const Tensor& a, const Tensor& b, Caller where = {});
Tensor bmm(const Tensor& a, const Tensor& b, Caller where = {});
Tensor mv(const Tensor& a, const Tensor& v, Caller where = {});
Tensor dot(const Tensor& a, const Tensor& b, Caller where = {});
Tensor tensordot(const Tensor& a, const Tensor& b, IntArrayRef dims_a, IntArrayRef dims_b,
                 Caller where = {});

namespace nn::functional {
Tensor softmax(const Tensor& t, int64_t dim, Caller where = {});
Tensor log_softmax(const Tensor& t, int64_t dim, Caller where = {});
Tensor layer_norm(const Tensor& t, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5, Caller where = {});
Tensor relu(const Tensor& t, Caller where = {});
Tensor gelu(const Tensor& t, Caller where = {});
// x @ weight^T + bias (bias optional).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Caller where = {});
// Losses, as torch.nn.functional's: `reduction` is "mean" (the default), "sum" or "none" (a loss
// per element). Where a pointwise loss's target broadcasts against its input, a warning says so
// (once).
Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
                Caller where = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
               Caller where = {});
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      std::string_view reduction = "mean", double beta = 1.0, Caller where = {});
Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
                  double delta = 1.0, Caller where = {});
// input: probabilities in [0, 1]; target of the same shape. weight (optional) rescales each
// element's loss, broadcast to the target's shape.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            std::string_view reduction = "mean", const Tensor& weight = {},
                            Caller where = {});
// input: logits; pos_weight (optional) weighs the positive examples of each class; weight
// (optional) rescales each element's loss.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        std::string_view reduction = "mean",
                                        const Tensor& pos_weight = {}, const Tensor& weight = {},
                                        Caller where = {});
// input (C), (N, C) or (N, C, d1, ...) log-probabilities; target class indices (int64 or uint8)
// of the input's shape without C, those equal to ignore_index counting for nothing. weight
// (optional, C values) weighs each class: the mean divides by the weights of the targets counted.
Tensor nll_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
                int64_t ignore_index = -100, const Tensor& weight = {}, Caller where = {});
// nll_loss of log_softmax(input) over the classes; or, where the target has the input's shape,
// -sum(weight * target * log_softmax(input)) over the classes (class probabilities). With
// label_smoothing in (0, 1], the target mixes with the uniform distribution over the classes.
Tensor cross_entropy(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
                     int64_t ignore_index = -100, const Tensor& weight = {},
                     double label_smoothing = 0.0, Caller where = {});
// libtorch's option objects for the same: F::cross_entropy(x, y,
// F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.1)).
struct NLLLossFuncOptions {
  NLLLossFuncOptions& weight(const Tensor& v) { return weight_ = v, *this; }
  NLLLossFuncOptions& ignore_index(int64_t v) { return ignore_index_ = v, *this; }
  NLLLossFuncOptions& reduction(std::string_view v) { return reduction_ = v, *this; }
  const Tensor& weight() const { return weight_; }
  int64_t ignore_index() const { return ignore_index_; }
  const std::string& reduction() const { return reduction_; }

private:
  Tensor weight_;
  int64_t ignore_index_ = -100;
  std::string reduction_ = "mean";
};
struct CrossEntropyFuncOptions {
  CrossEntropyFuncOptions& weight(const Tensor& v) { return weight_ = v, *this; }
  CrossEntropyFuncOptions& ignore_index(int64_t v) { return ignore_index_ = v, *this; }
  CrossEntropyFuncOptions& reduction(std::string_view v) { return reduction_ = v, *this; }
  CrossEntropyFuncOptions& label_smoothing(double v) { return label_smoothing_ = v, *this; }
  const Tensor& weight() const { return weight_; }
  int64_t ignore_index() const { return ignore_index_; }
  const std::string& reduction() const { return reduction_; }
  double label_smoothing() const { return label_smoothing_; }

private:
  Tensor weight_;
  int64_t ignore_index_ = -100;
  std::string reduction_ = "mean";
  double label_smoothing_ = 0.0;
};
inline Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options,
                       Caller where = {}) {
  return nll_loss(input, target, options.reduction(), options.ignore_index(), options.weight(),
                  where);
}
inline Tensor cross_entropy(const Tensor& input, const Tensor& target,
                            const CrossEntropyFuncOptions& options, Caller where = {}) {
  return cross_entropy(input, target, options.reduction(), options.ignore_index(), options.weight(),
                       options.label_smoothing(), where);
}
// The Kullback-Leibler divergence of input (log-probabilities) from target (probabilities, or
// log-probabilities with log_target): target * (log(target) - input), 0 where target is 0.
// reduction "batchmean" divides the sum by the batch size (input.size(0)), the divergence's
// definition; "mean" divides by every element, and says so in a warning.
Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
              bool log_target = false, Caller where = {});

// Activations with PyTorch's derivatives at their kinks.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01, Caller where = {});
Tensor elu(const Tensor& x, double alpha = 1.0, Caller where = {});
Tensor silu(const Tensor& x, Caller where = {});
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0, Caller where = {});
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0, Caller where = {});

// int64 one-hot rows of num_classes (-1: the largest class + 1) along a new last dim.
Tensor one_hot(const Tensor& t, int64_t num_classes = -1, Caller where = {});
// The rows of weight (V, D) at the indices in input: input's shape + (D).
Tensor embedding(const Tensor& input, const Tensor& weight, Caller where = {});
// Training: each element zeroed with probability p, the others scaled by 1 / (1 - p).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Caller where = {});
} // namespace nn::functional

// The view ops' free forms, as torch.reshape(t, shape): the same views as the members.
Tensor reshape(const Tensor& t, IntArrayRef shape, Caller where = {});
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1, Caller where = {});
Tensor squeeze(const Tensor& t, Caller where = {});
Tensor squeeze(const Tensor& t, int64_t dim, Caller where = {});
Tensor unsqueeze(const Tensor& t, int64_t dim, Caller where = {});
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1, Caller where = {});
Tensor permute(const Tensor& t, IntArrayRef dims, Caller where = {});
Tensor t(const Tensor& t, Caller where = {});

// In-place free forms, as torch.sin_(t).
Tensor& sin_(Tensor& a, Caller where = {});
// The `out` forms write the result into `out`: it must be castable to out's
// dtype (PyTorch's rule), and an out of another shape is resized to the
// result's (every handle on `out` sees the new shape; other views keep the old storage).
Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1,
                Caller where = {});
Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1,
                Caller where = {});
Tensor& mul_out(Tensor& out, const Tensor& a, const Tensor& b, Caller where = {});
Tensor& div_out(Tensor& out, const Tensor& a, const Tensor& b, Caller where = {});
Tensor& matmul_out(Tensor& out, const Tensor& a, const Tensor& b, Caller where = {});
Tensor& zeros_out(Tensor& out, IntArrayRef size, Caller where = {});
Tensor& ones_out(Tensor& out, IntArrayRef size, Caller where = {});
Tensor& full_out(Tensor& out, IntArrayRef size, const Scalar& value, Caller where = {});
Tensor& rand_out(Tensor& out, IntArrayRef size, Caller where = {});
Tensor& randn_out(Tensor& out, IntArrayRef size, Caller where = {});
Tensor& arange_out(Tensor& out, const Scalar& end, Caller where = {});
Tensor& arange_out(Tensor& out, const Scalar& start, const Scalar& end, const Scalar& step = 1,
                   Caller where = {});

// --- materialization ---
// Materializes several tensors in one schedule, so shared work is done once.
void eval(const std::vector<Tensor>& tensors);

// --- printing ---
struct PrintOptions {
  int precision = 4;
  int64_t threshold = 1000;
  int64_t edgeitems = 3;
  int64_t linewidth = 80;
  std::optional<bool> sci_mode; // nullopt: chosen from the values, as PyTorch does
};
// As torch.set_printoptions: an option left out keeps its value, except sci_mode, which every
// call sets (left out: chosen from the values again).
void set_printoptions(std::optional<int> precision = std::nullopt,
                      std::optional<int64_t> threshold = std::nullopt,
                      std::optional<int64_t> edgeitems = std::nullopt,
                      std::optional<int64_t> linewidth = std::nullopt,
                      std::optional<bool> sci_mode = std::nullopt);
const PrintOptions& get_printoptions();
// Restores PyTorch's defaults.
void reset_printoptions();

} // namespace tj
