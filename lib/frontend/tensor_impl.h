// TensorImpl: what a tj::Tensor handle points to.
//
// Every tensor is a strided view of a storage, as in PyTorch. The storage is
// a StorageCell: the current value of the whole storage, a node of the graph.
// Views share the cell; an in-place op through any view replaces the cell's
// node by one that includes the write (functionalization), so every alias
// reads the new version and graphs built before keep the old one.
#pragma once
#include <optional>
#include <vector>

#include "lib/core/free_list.h"
#include "lib/ir/node.h"
#include "tensorjit/tensor.h"

namespace tj::autograd {
struct FunctionNode;
}

namespace tj::detail {

struct StorageCell {
  // The whole storage, as a contiguous tensor of node->shape: lazy until
  // computed, then (resolved to) a Buffer.
  ir::NodePtr node;
};

struct TensorImpl {
  std::shared_ptr<StorageCell> cell;
  // The view, in elements of the cell's contiguous layout.
  Shape sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;

  // Autograd. A leaf requires grad when the flag is set; a tensor made by a
  // recorded op has the node that made it (and requires grad through it).
  bool requires_grad = false;
  std::shared_ptr<autograd::FunctionNode> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::FunctionNode> accumulator; // a leaf's AccumulateGrad, while in use
  Tensor grad;
  bool retains_grad = false;
  // Made by a view op: an in-place write through it changes its base (the
  // tensor, itself no view, whose storage it views) too.
  bool is_view = false;
  // Views a complex cell as its real and imaginary parts, interleaved (real(),
  // imag() and views of them): the sizes, strides and offset count parts, and
  // the dtype is the parts'.
  bool parts = false;
  std::shared_ptr<TensorImpl> base;
  // How a view was made, for PyTorch's refusals of in-place writes through it with grad mode on
  // (its CreationMeta): in no_grad mode (a view of such a view too), or as output
  // `multi_output` of an op that returns several views (split, chunk; 0 for a view of such a
  // piece, output 0 of its own node); -1: neither.
  bool made_without_grad = false;
  int32_t multi_output = -1;
  // A base's count of in-place writes that changed its history; a view's
  // grad_fn is stale when the count it was made at differs from its base's.
  uint32_t version = 0;

  // Whether the view is all of the storage, in its order.
  bool covers_cell() const;
};

// A new impl, or cell: from the thread's free list (core::FreeListAllocator), as nodes are, since
// a graph built op by op makes and drops one of each per op.
inline std::shared_ptr<TensorImpl> new_impl() {
  return std::allocate_shared<TensorImpl>(core::FreeListAllocator<TensorImpl>());
}
inline std::shared_ptr<StorageCell> new_cell(ir::NodePtr node) {
  return std::allocate_shared<StorageCell>(core::FreeListAllocator<StorageCell>(),
                                           StorageCell{std::move(node)});
}

// A new tensor over `node`, with storage of its own. Graphs deeper than
// config().max_graph_nodes are materialized here, so that a loop extending
// one graph runs in bounded memory.
Tensor wrap(ir::NodePtr node);
// A view of `base`'s storage (in the units of base's view: parts, for a view of parts).
Tensor make_view(const Tensor& base, Shape sizes, std::vector<int64_t> strides, int64_t offset);
// A view of the real and imaginary parts of complex `base`'s storage, in parts.
Tensor make_parts_view(const Tensor& base, Shape sizes, std::vector<int64_t> strides,
                       int64_t offset);
// A new handle on the same view of the same storage.
Tensor alias(const Tensor& t);
// PyTorch's preserve_format, as clone and the *_like functions lay out their result: a dense,
// non-overlapping `t` lends its strides; another layout without broadcast dims gets dense strides
// in the same order (dims from the largest stride, in `order`); nullopt where the result is plain
// contiguous.
struct PreservedLayout {
  std::vector<int64_t> order, strides;
};
std::optional<PreservedLayout> preserved_layout(const Tensor& t);
// `fresh` (a new tensor of t's sizes permuted by `layout.order`, in memory order) seen with t's
// sizes and the layout's strides: a tensor of its own, not a view.
Tensor with_layout(const Tensor& fresh, const Tensor& t, const PreservedLayout& layout);
// The value the tensor reads now: its cell's node seen through its view.
ir::NodePtr node_of(const Tensor& t);
// The tensor's values in contiguous host memory (a Buffer node over it).
ir::NodePtr host_contiguous(const Tensor& t);
// Throws PyTorch's error for an undefined tensor.
void check_defined(const Tensor& t, const char* what);
// Before anything is written into `self` from `inputs`: whether autograd allows the write
// (PyTorch's errors for a view of a multi-output op or made in no_grad mode, for a leaf that
// requires grad and for a view of one).
void check_inplace_grad(const Tensor& self, const std::vector<Tensor>& inputs = {});

// Computes the nodes (one schedule) and records their realized buffers.
void realize(const std::vector<ir::NodePtr>& nodes);

// Replaces the elements of `self` (in every alias) by `value`, which has its
// sizes, dtype and device. `exclusive` says whether, before the value was
// built, nothing but the storage itself read its current version
// (storage_exclusive); then the write may reuse the memory.
void write(const Tensor& self, ir::NodePtr value, bool exclusive);
bool storage_exclusive(const Tensor& t);

} // namespace tj::detail
