// PyTorch's rules for writes through memory that elements share (ATen's MemoryOverlap):
// decided from the views' sizes, strides and offsets when the write is built, before
// anything changes.
//
// - A destination where several elements name one location (a stride-0 dim, as expand
//   makes) takes only writes whose value is the same for every element: fill_, zero_,
//   masked_fill_ and index_put_ with one value. Anything else raises.
// - An input that shares part, not all, of the destination's memory raises: the result
//   would depend on the order elements are visited. The destination itself as an input
//   (x.add_(x)), or a view with the same elements and strides, is fine.
// - Layouts that are not dense (gaps, steps) are "too hard" to decide, as in PyTorch, and
//   allowed: the write is then computed from the old values, as if the input were cloned.
#pragma once
#include "tensorjit/tensor.h"

namespace tj::detail {

enum class Overlap { None, Full, Partial, TooHard };

// PyTorch's is_non_overlapping_and_dense: the elements fill a block of memory, each once.
bool non_overlapping_and_dense(const Tensor& t);
// A dim of size > 1 with stride 0: elements that share a location.
bool has_internal_overlap(const Tensor& t);
// How the memory of `a` and `b` overlaps.
Overlap overlap(const Tensor& a, const Tensor& b);

// PyTorch's checks, with its messages.
void assert_no_internal_overlap(const Tensor& t);
void assert_no_partial_overlap(const Tensor& out, const Tensor& in);
void assert_no_overlap(const Tensor& out, const Tensor& in);

// The locations `t` views, each once: its stride-0 dims kept at size 1. A view of the same
// storage (written through, it changes `t`).
Tensor distinct_locations(const Tensor& t);

} // namespace tj::detail
