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
// PyTorch's broadcast of two shapes, with its error message.
Shape broadcast_shapes(const Shape& a, const Shape& b);
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

} // namespace tj::ir
