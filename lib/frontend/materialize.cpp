// Materialization: simplify, schedule, execute, and record realized buffers.
#include <fmt/format.h>

#include "frontend/tensor_impl.h"
#include "passes/simplify.h"
#include "schedule/scheduler.h"
#include "stats_counters.h"
#include "tensorjit/config.h"

namespace tj::detail {

void realize(const std::vector<ir::NodePtr>& nodes) {
  std::vector<ir::NodePtr> todo;
  for (const auto& n : nodes)
    if (!n->realized && n->op != ir::Op::Buffer) todo.push_back(n);
  if (todo.empty()) return;
  ++rt::counters().materializations;
  std::vector<ir::NodePtr> simple = passes::simplify(todo);
  std::vector<sched::Target> targets;
  for (size_t i = 0; i < todo.size(); ++i)
    targets.push_back({todo[i], simple[i]});
  std::vector<rt::Launch> launches = sched::schedule(targets, config().fusion);
  if (config().debug >= 2)
    for (const auto& l : launches)
      fmt::print(stderr, "[tj] schedule: {} over [{}]\n", l.kernel.name, fmt::join(l.domain, ", "));
  try {
    rt::execute(launches);
  } catch (...) {
    // Nothing was computed: forget the buffers the plan promised.
    for (const auto& n : todo)
      n->realized.reset();
    for (const auto& n : simple)
      if (n->op != ir::Op::Buffer) n->realized.reset();
    throw;
  }
}

} // namespace tj::detail
