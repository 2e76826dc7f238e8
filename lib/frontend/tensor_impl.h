// TensorImpl: what a tj::Tensor handle points to.
#pragma once
#include "ir/node.h"
#include "tensorjit/tensor.h"

namespace tj::detail {

struct TensorImpl {
  ir::NodePtr node; // the lazy value; replaced by its Buffer once realized
  bool requires_grad = false;
};

// A new tensor over `node`. Graphs deeper than config().max_graph_nodes are
// materialized here, so that a loop extending one graph runs in bounded memory.
Tensor wrap(ir::NodePtr node);
// The node behind `t`, resolved to its realized buffer when computed.
const ir::NodePtr& node_of(const Tensor& t);
// Throws PyTorch's error for an undefined tensor.
void check_defined(const Tensor& t, const char* what);

// Computes the nodes (one schedule) and records their realized buffers.
void realize(const std::vector<ir::NodePtr>& nodes);

} // namespace tj::detail
