// Shape arithmetic: element counts, contiguous strides, broadcasting, dims.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tj::ir {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
std::vector<int64_t> contiguous_strides(const Shape& s);
// Dense strides that lay the dims out in `order`, outermost first (a
// permutation of the dims); contiguous_strides is the identity order.
std::vector<int64_t> dense_strides(const Shape& s, const std::vector<int64_t>& order);
// PyTorch's broadcast of two shapes, with its error message.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Whether `from` broadcasts to `to` (PyTorch's is_expandable_to).
bool expandable_to(const Shape& from, const Shape& to);
// A dim in [-ndim, ndim) made non-negative, with PyTorch's IndexError text.
int64_t wrap_dim(int64_t dim, int64_t ndim);
// "[2, 3]" and "(2, 3)" forms for messages.
std::string shape_str(const Shape& s);
// Validates sizes given to creation functions and view ops.
void check_sizes(const Shape& s);

// The strides of a view with shape `shape` of memory laid out as
// (old_shape, old_strides), when one exists (PyTorch's computeStride).
std::optional<std::vector<int64_t>>
view_strides(const Shape& old_shape, const std::vector<int64_t>& old_strides, const Shape& shape);

// Whether (shape, strides) is row-major contiguous (size-1 dims may have any stride).
bool is_contiguous(const Shape& shape, const std::vector<int64_t>& strides);

// A strided view (sizes, strides, offset) of a contiguous tensor of shape
// `base` as an affine map onto base's dims: base index m of view element i is
// offset[m] + sum_k coef[m][k] * i_k. It exists when no view dim carries
// across a base dim (transposes, slices, diagonals do not), and the view lies
// inside the base.
struct StridedMap {
  std::vector<int64_t> offset;            // per base dim
  std::vector<std::vector<int64_t>> coef; // [base dim][view dim]
};
std::optional<StridedMap> strided_map(const Shape& base, const Shape& sizes,
                                      const std::vector<int64_t>& strides, int64_t offset);

} // namespace tj::ir
