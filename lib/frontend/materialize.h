// Planning a materialization without running it, for the IR dumps.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/node.h"
#include "schedule/scheduler.h"

namespace tj::detail {

struct PlannedKernel {
  rt::Launch launch;
  sched::KernelInfo info;
};

// The kernels that computing `nodes` would launch, in order (pending
// in-place writes first, planned into copies). Nothing runs, no memory is
// written and no node is left realized. Runs its recursive passes on the
// caller's stack: call it inside with_deep_stack.
// With `cuda_kernels`, the kernels are those the CUDA backend lowers
// (sched::schedule), wherever the values live.
struct Plan {
  std::vector<PlannedKernel> kernels;
};
Plan plan(const std::vector<ir::NodePtr>& nodes, bool cuda_kernels = false);

// Runs `fn` on a thread with a stack large enough for the recursive passes
// over graphs up to config().max_graph_nodes deep.
void with_deep_stack(const std::function<void()>& fn);

// Writes the stages config().dump names for this materialization to
// config().dump_dir (lib/frontend/ir_dump.cpp).
void dump_materialization(const std::vector<ir::NodePtr>& nodes);

} // namespace tj::detail

namespace tj::ir {
// dump() of graph nodes (every stage but "grad", which needs the tensors).
std::string dump_nodes(const std::vector<NodePtr>& roots, std::string_view stage,
                       const std::vector<std::string>& output_names = {});
} // namespace tj::ir
