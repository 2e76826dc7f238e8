// Nodes of the tensor graph: immutable, hash-consed, shared by pointer.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "lib/ir/op.h"
#include "lib/ir/shape.h"
#include "runtime/storage.h"
#include "tensorjit/dtype.h"
#include "tensorjit/scalar.h"
#include "tensorjit/site.h"

namespace tj::ir {

struct Node;
using NodePtr = std::shared_ptr<const Node>;

// How a leaf's elements sit in its index space: element (i0, i1, ...) is at
// offset + sum(ik * strides[k]). For Buffer in elements of the storage; for
// Iota and Philox it is the index the leaf produces.
struct View {
  std::vector<int64_t> strides;
  int64_t offset = 0;
  bool operator==(const View&) const = default;
};

// Where a node was built, for dumps and errors: "model.cpp:42 (softmax)".
// Interned (never freed), so nodes share it freely. Not part of a node's
// identity: equal nodes built at two places keep the first place.
using Site = const char*;

// The site nodes built now record: the innermost ir::Scope of the user's
// program, or the public API call made from it (an API function that calls
// others keeps its caller's site). Null outside any.
Site current_site();
// "FILE:LINE (WHAT)" with FILE's last component, interned.
Site make_site(std::string_view file, uint32_t line, std::string_view what);
// An interned copy of `text`.
Site intern_site(std::string_view text);

// Makes `site` (when known) current while it lives, as an API call's would
// be (API calls inside keep it): the backward of an op builds its nodes at
// the op's site.
using SiteScope = detail::CallSite;

struct Node : std::enable_shared_from_this<Node> {
  Op op;
  DType dtype;
  Shape shape;
  std::vector<NodePtr> src;
  std::vector<int64_t> args;            // Reshape/Expand: shape; Permute: perm;
                                        // Slice: (start, step)...; Philox: seed, offset, word;
                                        // Buffer: the storage version it reads
  Scalar value;                         // Const
  std::shared_ptr<rt::Storage> storage; // Buffer
  View view;                            // Buffer, Iota, Philox
  // Where the value lives and is computed: a Buffer's storage device, the
  // device a Const/Iota/Philox leaf was made for, else its inputs' device.
  Device device;
  size_t hash = 0;
  int64_t depth = 0; // longest path of unrealized nodes below, this one included
  // Computing it may raise: an integer division by a divisor not known to be
  // nonzero lies among the unrealized nodes below (this one included).
  bool may_fail = false;
  // A complex dtype or a complex op lies among the unrealized nodes below (this one included):
  // passes/lower_complex has work to do.
  bool complex = false;
  // A write or a library call (ir::is_performed) lies below (this one included), computed since
  // or not: materialization looks for what to perform before it schedules kernels only below
  // such nodes.
  bool performs = false;
  // A reduction or a scan lies below (this one included), computed since or not: the scheduler
  // looks for the loops a kernel needs only below such nodes.
  bool loops = false;
  // Metadata, not identity: passes and the parser fill it in on shared nodes.
  mutable std::atomic<Site> site = nullptr;

  // Set once the node has been computed: a Buffer node holding its value, so
  // later graphs that reach this node read memory instead of recomputing.
  mutable NodePtr realized;

  // Not defaulted: make_shared value-initializes, which for a defaulted constructor zeroes the
  // whole node before the members' own initializers run (a `rep stos` that was a sixth of
  // building a node).
  Node() {} // NOLINT(modernize-use-equals-default)
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  int64_t numel() const { return ir::numel(shape); }
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  // This node, or its realized Buffer once computed (a Buffer whose memory was
  // overwritten in place may itself be realized by a snapshot of its version).
  const Node* resolved() const {
    const Node* n = this;
    while (n->realized)
      n = n->realized.get();
    return n;
  }
};

// The one way to build a node: returns the existing node when an equal one is alive.
// `device` names the device of a Const, Iota or Philox leaf; every other
// node takes its storage's or its inputs' device (inputs must agree).
NodePtr make_node(Op op, DType dtype, Shape shape, std::vector<NodePtr> src,
                  std::vector<int64_t> args = {}, Scalar value = {},
                  std::shared_ptr<rt::Storage> storage = nullptr, View view = {},
                  Device device = kCPU);

// How many times make_node has returned, on this thread, an existing node that was already
// computed (realized): a pass that builds nodes found a value computed before. The schedule cache
// asks whether this happened while a graph was simplified and scheduled.
uint64_t realized_nodes_found();

// `n` over other operands: the same op, dtype, shape, attributes and leaf data.
NodePtr with_sources(const Node& n, std::vector<NodePtr> src);

// Convenience builders.
NodePtr make_const(const Scalar& v, DType dtype, const Shape& shape = {}, Device device = kCPU);
NodePtr make_buffer(std::shared_ptr<rt::Storage> storage, DType dtype, Shape shape, View view);
// A fresh contiguous buffer leaf over new memory.
NodePtr make_empty(DType dtype, Shape shape, Device device = kCPU);

// The realized node if `n` was computed, else `n`.
inline NodePtr resolve(const NodePtr& n) {
  if (!n->realized) return n;
  NodePtr r = n->realized;
  while (r->realized)
    r = r->realized;
  return r;
}

// The live Buffer nodes over `storage` that read its current version.
std::vector<NodePtr> current_buffers(const rt::Storage* storage);

// The view of element (sizes, strides, offset) of a leaf of `shape` seen
// through `view`, where the strided view indexes the leaf in row-major order
// (AsStrided's meaning), when that is itself a strided view.
std::optional<View> compose_strided(const Shape& shape, const View& view, const Shape& sizes,
                                    const std::vector<int64_t>& strides, int64_t offset);

// Number of live nodes in the hash-cons table (for tests of memory behaviour).
size_t live_node_count();

} // namespace tj::ir
