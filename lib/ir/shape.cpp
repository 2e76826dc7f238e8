// Shape arithmetic shared by the frontend and the scheduler.
#include "lib/ir/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tensorjit/error.h"

namespace tj::ir {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

namespace {
// Dense strides laying out the dims dim_at(0), dim_at(1), ... outermost first: one allocation.
template <class DimAt> std::vector<int64_t> strides_in_order(const Shape& s, DimAt dim_at) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t k = s.size(); k-- > 0;) {
    const size_t d = dim_at(k);
    st[d] = acc;
    acc *= std::max<int64_t>(s[d], 1);
  }
  return st;
}
} // namespace

std::vector<int64_t> contiguous_strides(const Shape& s) {
  return strides_in_order(s, [](size_t k) { return k; });
}

std::vector<int64_t> dense_strides(const Shape& s, const std::vector<int64_t>& order) {
  return strides_in_order(s, [&](size_t k) { return size_t(order[k]); });
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  // From the last dim, as PyTorch checks (and reports) them.
  for (size_t i = n; i-- > 0;) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(fmt::format("The size of tensor a ({}) must match the size of tensor b ({}) at "
                              "non-singleton dimension {}",
                              da, db, i));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool expandable_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  return std::equal(from.rbegin(), from.rend(), to.rbegin(),
                    [](int64_t f, int64_t t) { return f == t || f == 1; });
}

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  int64_t n = std::max<int64_t>(ndim, 1);
  if (dim < -n || dim >= n)
    throw Error(
        fmt::format("Dimension out of range (expected to be in range of [{}, {}], but got {})", -n,
                    n - 1, dim));
  return dim < 0 ? dim + n : dim;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

void check_sizes(const Shape& s) {
  for (int64_t d : s)
    if (d < 0)
      throw Error(
          fmt::format("Trying to create tensor with negative dimension {}: {}", d, shape_str(s)));
  // Element counts (and byte counts of 8-byte elements) must not overflow.
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, std::max<int64_t>(d, 1), &n) || n > (INT64_MAX >> 3))
      throw Error(fmt::format("Storage size calculation overflowed with sizes={}", shape_str(s)));
}

std::optional<std::vector<int64_t>>
view_strides(const Shape& old_shape, const std::vector<int64_t>& old_strides, const Shape& shape) {
  // PyTorch's computeStride: walk chunks of old dims that are contiguous among
  // themselves and match them against groups of new dims with the same size.
  std::vector<int64_t> strides(shape.size());
  if (ir::numel(old_shape) == 0)
    return old_shape == shape ? old_strides : ir::contiguous_strides(shape);
  if (old_shape.empty()) return std::vector<int64_t>(shape.size(), 1); // 0-d: sizes all 1
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.empty() ? 1 : old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    if (d == 0 ||
        (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

bool is_contiguous(const Shape& shape, const std::vector<int64_t>& strides) {
  if (numel(shape) == 0) return true; // as PyTorch: no element is out of place
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::optional<StridedMap> strided_map(const Shape& base, const Shape& sizes,
                                      const std::vector<int64_t>& strides, int64_t offset) {
  size_t nb = base.size(), nk = sizes.size();
  StridedMap m{std::vector<int64_t>(nb, 0),
               std::vector<std::vector<int64_t>>(nb, std::vector<int64_t>(nk, 0))};
  if (numel(sizes) == 0) return m;
  if (offset < 0) return std::nullopt;
  std::vector<int64_t> cs = contiguous_strides(base);
  // Mixed-radix digits of the offset and of every stride, outermost first.
  auto digits = [&](int64_t v, auto&& put) {
    for (size_t b = 0; b < nb; ++b) {
      put(b, v / cs[b]);
      v %= cs[b];
    }
    return v == 0;
  };
  if (!digits(offset, [&](size_t b, int64_t d) { m.offset[b] = d; })) return std::nullopt;
  for (size_t k = 0; k < nk; ++k) {
    if (sizes[k] == 1) continue;
    if (strides[k] < 0) return std::nullopt;
    if (!digits(strides[k], [&](size_t b, int64_t d) { m.coef[b][k] = d; })) return std::nullopt;
  }
  for (size_t b = 0; b < nb; ++b) {
    int64_t hi = m.offset[b];
    for (size_t k = 0; k < nk; ++k)
      hi += m.coef[b][k] * (sizes[k] - 1);
    if (hi >= base[b]) return std::nullopt;
  }
  return m;
}

} // namespace tj::ir
