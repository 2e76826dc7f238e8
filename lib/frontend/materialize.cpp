// Materialization: simplify, schedule, execute, and record realized buffers.
#include <fmt/format.h>
#include <pthread.h>

#include <exception>
#include <functional>

#include "frontend/tensor_impl.h"
#include "passes/simplify.h"
#include "schedule/scheduler.h"
#include "stats_counters.h"
#include "tensorjit/config.h"

namespace tj::detail {
namespace {

// The passes recurse over the graph. Deep graphs (up to TJ_MAX_GRAPH_NODES)
// run on a thread whose stack is reserved large enough for them; the memory
// is only committed as it is touched.
constexpr int64_t kInlineDepth = 256;
constexpr size_t kDeepStack = size_t{1} << 30;

void run_with_deep_stack(const std::function<void()>& fn) {
  struct Job {
    const std::function<void()>* fn;
    std::exception_ptr error;
  } job{&fn, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kDeepStack);
  pthread_t thread;
  auto entry = [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    try {
      (*j->fn)();
    } catch (...) {
      j->error = std::current_exception();
    }
    return nullptr;
  };
  int rc = pthread_create(&thread, &attr, entry, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    fn(); // no thread to be had: try on this stack
    return;
  }
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

void realize_now(const std::vector<ir::NodePtr>& nodes);

} // namespace

void realize(const std::vector<ir::NodePtr>& nodes) {
  int64_t depth = 0;
  for (const auto& n : nodes)
    depth = std::max(depth, n->depth);
  if (depth > kInlineDepth)
    run_with_deep_stack([&] { realize_now(nodes); });
  else
    realize_now(nodes);
}

namespace {
void realize_now(const std::vector<ir::NodePtr>& nodes) {
  std::vector<ir::NodePtr> todo;
  for (const auto& n : nodes)
    if (!n->realized && n->op != ir::Op::Buffer) todo.push_back(n);
  if (todo.empty()) return;
  ++rt::counters().materializations;
  std::vector<ir::NodePtr> simple = passes::simplify(todo);
  std::vector<sched::Target> targets;
  for (size_t i = 0; i < todo.size(); ++i)
    targets.push_back({todo[i], simple[i]});
  std::vector<ir::NodePtr> marked;
  std::vector<rt::Launch> launches = sched::schedule(targets, config().fusion, &marked);
  if (config().debug >= 2)
    for (const auto& l : launches)
      fmt::print(stderr, "[tj] schedule: {} over [{}]\n", l.kernel.name, fmt::join(l.domain, ", "));
  try {
    rt::execute(launches);
  } catch (...) {
    // Nothing can be trusted as computed: forget every buffer the plan promised.
    for (const auto& n : marked)
      n->realized.reset();
    throw;
  }
}

} // namespace

} // namespace tj::detail
