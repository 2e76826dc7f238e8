// The scheduler: partitions a graph into fused kernels of the kernel IR.
#pragma once
#include <optional>
#include <vector>

#include "lib/ir/node.h"
#include "runtime/launch.h"

namespace tj::sched {

// A node to compute (`compute`, simplified) for the node the user asked for
// (`mark`). The value goes to fresh memory, recorded as mark->realized; or,
// with `dest`, into that view of existing memory (an in-place write, which
// records nothing: the caller knows what the memory now holds). A write
// whose value reads the destination elsewhere than where it writes is
// computed into fresh memory first.
// A write may scatter: element p of `compute` then goes to the element of dest_view (of shape
// `base`) at p with dim `dim` replaced by index[p], or is added to it (ops.def, Scatter). The
// launch runs its elements in order. Its stores land anywhere, so `dest` must be memory that
// neither compute nor index reads (materialization passes fresh memory).
struct Scatter {
  ir::NodePtr index; // int64, of compute's shape
  ir::Shape base;
  int64_t dim = 0;
  bool accumulate = false;
};
struct Target {
  ir::NodePtr mark;
  ir::NodePtr compute;
  std::shared_ptr<rt::Storage> dest = nullptr;
  ir::View dest_view = {};
  std::optional<Scatter> scatter = std::nullopt;
  const char* why = "the values asked for"; // for dumps: why its kernel exists
  // A write (with `dest`, not scattering) computed by the previous target's kernel, which
  // computes both (the two parts of a complex result, of one shape, into one memory).
  bool joins_previous = false;
};

// What a kernel of a plan computes, for dumps: the graph nodes it lowers
// (leaves included), the ones it stores, and why it is a kernel of its own.
struct KernelInfo {
  std::vector<ir::NodePtr> nodes;
  std::vector<ir::NodePtr> roots;
  const char* why;
  // The distinct places of the user's program that built its nodes.
  std::vector<ir::Site> sites() const;
};

// Plans the computation of the targets. Buffers are recorded as `realized`
// when the plan is made; the launches must then run, in order, before those
// buffers are read.
//
// With fusion, all roots of one shape are computed by one kernel that
// evaluates their whole elementwise graphs, reading leaves through index
// expressions. A node is computed by a kernel of its own only where its
// value cannot be indexed affinely (a reshape across non-contiguous dims).
// Without fusion (TJ_FUSION=0) every ALU op is its own kernel.
// `marked` receives every node whose `realized` the plan set, so that a
// caller whose launches fail can take the promises back. `info`, when
// given, receives one KernelInfo per launch.
// A kernel may loop over short rows several times to compute their reductions and the
// elements that use them (a row softmax in one kernel), on either device.
std::vector<rt::Launch> schedule(const std::vector<Target>& targets, bool fusion,
                                 std::vector<ir::NodePtr>* marked = nullptr,
                                 std::vector<KernelInfo>* info = nullptr);

} // namespace tj::sched
