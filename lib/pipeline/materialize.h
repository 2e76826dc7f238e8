// Planning a materialization without running it, for the IR dumps.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/ir/node.h"
#include "lib/schedule/scheduler.h"
#include "runtime/gemm_plan.h"

namespace tj::detail {

struct PlannedKernel {
  rt::Launch launch;
  sched::KernelInfo info;
};

// A Call node's routine, performed by a library before kernel number `before` of the plan.
struct PlannedCall {
  size_t before;
  ir::NodePtr node;
  std::string library;
  std::vector<rt::GemmCall> calls;
  std::string details; // how the library computes it, where the library is ours
  std::function<std::string(std::string_view stage)> code; // its generated code, if any
};

// The kernels that computing `nodes` would launch, in order (pending in-place writes first,
// planned into copies), and the library calls among them. Nothing runs, no memory is written
// and no node is left realized. Runs its recursive passes on the caller's stack: call it
// inside with_deep_stack.
struct Plan {
  std::vector<PlannedKernel> kernels;
  std::vector<PlannedCall> calls;
};
Plan plan(const std::vector<ir::NodePtr>& nodes);

// Runs `fn` on a thread with a stack large enough for the recursive passes
// over graphs up to config().max_graph_nodes deep.
void with_deep_stack(const std::function<void()>& fn);

// Writes the stages config().dump names for this materialization to
// config().dump_dir (lib/pipeline/ir_dump.cpp).
void dump_materialization(const std::vector<ir::NodePtr>& nodes);

} // namespace tj::detail

namespace tj::ir {
// dump() of graph nodes (every stage but "grad", which needs the tensors).
std::string dump_nodes(const std::vector<NodePtr>& roots, std::string_view stage,
                       const std::vector<std::string>& output_names = {});
} // namespace tj::ir
