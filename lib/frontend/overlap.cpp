#include "lib/frontend/overlap.h"

#include <algorithm>
#include <numeric>

#include "lib/frontend/tensor_impl.h"
#include "tensorjit/error.h"

namespace tj::detail {

bool non_overlapping_and_dense(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  std::vector<size_t> dims;
  for (size_t d = 0; d < impl.sizes.size(); ++d)
    if (impl.sizes[d] != 1) dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](size_t a, size_t b) { return impl.strides[a] < impl.strides[b]; });
  int64_t expect = 1;
  for (size_t d : dims) {
    if (impl.strides[d] != expect) return false;
    expect *= impl.sizes[d];
  }
  return true;
}

bool has_internal_overlap(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  for (size_t d = 0; d < impl.sizes.size(); ++d)
    if (impl.strides[d] == 0 && impl.sizes[d] > 1) return true;
  return false;
}

Overlap overlap(const Tensor& a, const Tensor& b) {
  if (a.impl() == b.impl()) return Overlap::Full;
  if (a.numel() == 0 || b.numel() == 0) return Overlap::None;
  if (!non_overlapping_and_dense(a) || !non_overlapping_and_dense(b)) return Overlap::TooHard;
  const TensorImpl &x = *a.impl(), &y = *b.impl();
  if (x.cell != y.cell) return Overlap::None;
  if (x.parts != y.parts) return Overlap::TooHard; // parts and complex numbers count apart
  const int64_t x_end = x.offset + a.numel(), y_end = y.offset + b.numel();
  if (x.offset == y.offset && x_end == y_end)
    return x.strides == y.strides ? Overlap::Full : Overlap::Partial;
  return x.offset < y_end && y.offset < x_end ? Overlap::Partial : Overlap::None;
}

void assert_no_internal_overlap(const Tensor& t) {
  if (has_internal_overlap(t))
    throw Error("unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation.");
}

namespace {
[[noreturn]] void throw_shared_input() {
  throw Error("unsupported operation: some elements of the input tensor and the written-to "
              "tensor refer to a single memory location. Please clone() the tensor before "
              "performing the operation.");
}
} // namespace

void assert_no_partial_overlap(const Tensor& out, const Tensor& in) {
  if (overlap(out, in) == Overlap::Partial) throw_shared_input();
}

void assert_no_overlap(const Tensor& out, const Tensor& in) {
  const Overlap o = overlap(out, in);
  if (o == Overlap::Partial || o == Overlap::Full) throw_shared_input();
}

Tensor distinct_locations(const Tensor& t) {
  Shape sizes = t.sizes();
  const std::vector<int64_t> strides = t.stride();
  for (size_t d = 0; d < sizes.size(); ++d)
    if (strides[d] == 0) sizes[d] = std::min<int64_t>(sizes[d], 1);
  return make_view(t, sizes, strides, t.storage_offset());
}

} // namespace tj::detail
