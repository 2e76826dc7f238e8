// Sorting and order statistics: sort, argsort, topk, median. The order is found on the host (the
// values are materialized there); the values are then a Gather of the input at those indices, so
// the gradient flows back to the places chosen, under PyTorch's node names.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "lib/autograd/formulas.h"
#include "lib/autograd/node.h"
#include "lib/frontend/promotion.h"
#include "lib/ir/shape.h"
#include "tensorjit/autograd.h"
#include "tensorjit/functions.h"
#include "tensorjit/indexing.h"
#include "tensorjit/tensor.h"

namespace tj {
namespace {

using Grads = std::vector<Tensor>;

// pick(row, n, out) for each slice of t along d, its n values on the host (double for floating
// dtypes, int64 otherwise: exact either way), writing `keep` positions along d to out. The
// positions as an int64 tensor of t's shape with `keep` along d.
template <class Pick> Tensor positions_along(const Tensor& t, int64_t d, int64_t keep, Pick pick) {
  const int64_t nd = t.dim();
  // The slices along the last dim of x, each a run of n values on the host.
  const Tensor x = nd == 0 ? t.reshape({1}) : t.transpose(d, nd - 1);
  const int64_t n = x.size(-1), rows = n == 0 ? 0 : x.numel() / n;
  std::vector<int64_t> kept(static_cast<size_t>(rows * keep));
  auto each_row = [&](const auto& v) {
    for (int64_t r = 0; r < rows; ++r)
      pick(v.data() + r * n, n, kept.data() + r * keep);
  };
  if (t.is_floating_point())
    each_row(x.to_vector<double>());
  else
    each_row(x.to_vector<int64_t>());
  Shape shape = x.sizes();
  shape.back() = keep;
  Tensor idx = tensor(kept, shape, TensorOptions().dtype(kInt64)).to(t.device());
  if (nd == 0) return idx.reshape({});
  return idx.transpose(d, nd - 1).contiguous();
}

template <class T> bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

// The first `keep` positions of each slice in the order asked for: ascending (NaN after every
// number) or descending (NaN first), ties in their order along d (a stable sort).
Tensor order_along(const Tensor& t, int64_t d, bool descending, int64_t keep) {
  return positions_along(t, d, keep, [&](const auto* row, int64_t n, int64_t* out) {
    auto before = [&](int64_t i, int64_t j) {
      const auto a = row[i], b = row[j];
      if (descending) return (is_nan(a) && !is_nan(b)) || a > b;
      return (!is_nan(a) && is_nan(b)) || a < b;
    };
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    if (keep < n)
      std::partial_sort(
          order.begin(), order.begin() + keep, order.end(), [&](int64_t i, int64_t j) {
            return before(i, j) || (!before(j, i) && i < j); // ties by position, as the stable sort
          });
    else
      std::stable_sort(order.begin(), order.end(), before);
    std::copy(order.begin(), order.begin() + keep, out);
  });
}

// Each slice's median position: its first NaN, else the middle ((n - 1) / 2) of its stable
// ascending order, as PyTorch's kernel picks it.
Tensor median_along(const Tensor& t, int64_t d) {
  return positions_along(t, d, 1, [](const auto* row, int64_t n, int64_t* out) {
    for (int64_t i = 0; i < n; ++i)
      if (is_nan(row[i])) {
        *out = i;
        return;
      }
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    const auto mid = order.begin() + (n - 1) / 2;
    std::nth_element(order.begin(), mid, order.end(), [&](int64_t i, int64_t j) {
      return row[i] < row[j] || (row[i] == row[j] && i < j);
    });
    *out = *mid;
  });
}

// t's elements at idx along d, recorded under `name`; a 0-d t as a vector of one.
Tensor taken(const Tensor& t, int64_t d, const Tensor& idx, const char* name) {
  if (t.dim() > 0) return autograd::gather_at(t, d, idx, name);
  Tensor out = autograd::gather_at(t.reshape({1}), 0, idx.reshape({1}), name).reshape({});
  autograd::rename(out, name);
  return out;
}

void refuse_complex(const Tensor& t, const char* what) {
  if (t.is_complex())
    throw Error(fmt::format("{}(): input tensor must be of non-complex type", what));
}

// PyTorch's dispatch refusals of the kernels that take no bool (or complex).
void refuse_dtype(const Tensor& t, const char* kernel) {
  if (t.dtype() == kBool || t.is_complex())
    throw Error(
        fmt::format("\"{}\" not implemented for '{}'", kernel, fe::cpp_type_name(t.dtype())));
}

} // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& t, int64_t dim, bool descending, Caller caller) {
  detail::CallSite site(caller, "sort");
  refuse_complex(t, "sort");
  const int64_t d = ir::wrap_dim(dim, t.dim());
  const int64_t n = t.dim() == 0 ? 1 : t.size(d);
  Tensor idx = order_along(t, d, descending, n);
  return {taken(t, d, idx, "SortBackward0"), idx};
}

std::tuple<Tensor, Tensor> sort(const Tensor& t, std::optional<bool> /*stable*/, int64_t dim,
                                bool descending, Caller caller) {
  return sort(t, dim, descending, caller);
}

Tensor argsort(const Tensor& t, int64_t dim, bool descending, Caller caller) {
  detail::CallSite site(caller, "argsort");
  refuse_complex(t, "sort");
  const int64_t d = ir::wrap_dim(dim, t.dim());
  return order_along(t, d, descending, t.dim() == 0 ? 1 : t.size(d));
}

std::tuple<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim, bool largest,
                                bool /*sorted*/, Caller caller) {
  detail::CallSite site(caller, "topk");
  const int64_t d = ir::wrap_dim(dim, t.dim());
  if (k < 0 || k > (t.dim() > 0 ? t.size(d) : 1)) throw Error("selected index k out of range");
  refuse_dtype(t, "topk_cpu");
  // A 0-d tensor is its own top 1, also for k = 0 (PyTorch's output keeps its one element).
  Tensor idx = order_along(t, d, largest, t.dim() == 0 ? 1 : k);
  return {taken(t, d, idx, "TopkBackward0"), idx};
}

std::tuple<Tensor, Tensor> median(const Tensor& t, int64_t dim, bool keepdim, Caller caller) {
  detail::CallSite site(caller, "median");
  const int64_t d = ir::wrap_dim(dim, t.dim());
  if (t.dim() > 0 && t.size(d) == 0)
    throw Error(fmt::format("median(): Expected reduction dim {} to have non-zero size.", d));
  refuse_dtype(t, "median_out");
  Tensor at = median_along(t, d);
  Tensor values = taken(t, d, at, "MedianBackward1");
  if (!keepdim && t.dim() > 0) {
    values = values.squeeze(d);
    autograd::rename(values, "MedianBackward1");
    at = at.squeeze(d);
  }
  return {values, at};
}

Tensor median(const Tensor& t, Caller caller) {
  detail::CallSite site(caller, "median");
  if (t.numel() == 0) throw Error("median() input tensor cannot be empty");
  refuse_dtype(t, "median_cpu");
  Tensor flat = t.reshape({-1});
  Tensor value;
  {
    NoGradGuard no_grad;
    value = std::get<0>(median(flat, 0, false));
  }
  // PyTorch's MedianBackward0 (evenly_distribute_backward): the gradient shared by the elements
  // equal to the median (NaN ones, where the median is NaN).
  autograd::record("MedianBackward0", {t}, {value}, {t, value},
                   [](const Grads& g, const std::vector<Tensor>& s) {
                     const Tensor &x = s[0], &y = s[1];
                     Tensor hit = logical_or(x == y, logical_and(isnan(x), isnan(y)));
                     Tensor share = (g[0] / hit.sum()).expand(x.sizes());
                     return Grads{where(hit, share, zeros_like(x))};
                   });
  return value;
}

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, Caller caller) const {
  return tj::sort(*this, dim, descending, caller);
}
std::tuple<Tensor, Tensor> Tensor::sort(std::optional<bool> stable, int64_t dim, bool descending,
                                        Caller caller) const {
  return tj::sort(*this, stable, dim, descending, caller);
}
Tensor Tensor::argsort(int64_t dim, bool descending, Caller caller) const {
  return tj::argsort(*this, dim, descending, caller);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted,
                                        Caller caller) const {
  return tj::topk(*this, k, dim, largest, sorted, caller);
}
Tensor Tensor::median(Caller caller) const { return tj::median(*this, caller); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim, Caller caller) const {
  return tj::median(*this, dim, keepdim, caller);
}

} // namespace tj
