// Materialization: simplify, schedule, execute, and record realized buffers
// (or only plan it, for dumps).
#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <typeinfo>
#include <unordered_set>

#include "frontend/materialize.h"
#include "frontend/tensor_impl.h"
#include "passes/simplify.h"
#include "schedule/scheduler.h"
#include "stats_counters.h"
#include "tensorjit/config.h"
#include "tensorjit/error.h"

namespace tj::detail {
namespace {

// The passes recurse over the graph. Deep graphs (up to TJ_MAX_GRAPH_NODES)
// run on a thread whose stack is reserved large enough for them; the memory
// is only committed as it is touched.
constexpr int64_t kInlineDepth = 256;
constexpr size_t kDeepStack = size_t{1} << 30;

} // namespace

void with_deep_stack(const std::function<void()>& fn) {
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

namespace {

// Carries out a materialization, or (with a plan) only plans it: then no
// kernel runs and no storage is written, and the buffers the planning
// records are taken back at the end.
class Materializer {
public:
  explicit Materializer(Plan* plan = nullptr, bool cuda_kernels = false)
      : plan_(plan), cuda_kernels_(cuda_kernels) {}
  ~Materializer() {
    for (const auto& n : marked_)
      n->realized.reset();
  }
  Materializer(const Materializer&) = delete;
  Materializer& operator=(const Materializer&) = delete;

  void realize_now(const std::vector<ir::NodePtr>& nodes);

private:
  void perform_write(const ir::NodePtr& a);
  void perform_scatter(const ir::NodePtr& a);
  void run(const std::vector<sched::Target>& targets);

  Plan* plan_;
  bool cuda_kernels_;
  std::vector<ir::NodePtr> marked_; // planned buffers, taken back at the end
};

} // namespace

void realize(const std::vector<ir::NodePtr>& nodes) {
  int64_t depth = 0;
  for (const auto& n : nodes)
    depth = std::max(depth, n->depth);
  if (!config().dump.empty()) dump_materialization(nodes);
  if (depth > kInlineDepth)
    with_deep_stack([&] { Materializer().realize_now(nodes); });
  else
    Materializer().realize_now(nodes);
}

Plan plan(const std::vector<ir::NodePtr>& nodes, bool cuda_kernels) {
  Plan p;
  std::vector<ir::NodePtr> todo;
  for (const auto& n : nodes)
    if (!n->realized && n->op != ir::Op::Buffer) todo.push_back(n);
  if (!todo.empty()) Materializer(&p, cuda_kernels).realize_now(todo);
  return p;
}

namespace {
// The unrealized writes (Assign, Scatter) below `roots`, each after the ones it reads.
void collect_writes(const ir::NodePtr& in, std::unordered_set<const ir::Node*>& seen,
                    std::vector<ir::NodePtr>& out) {
  ir::NodePtr n = ir::resolve(in);
  if (n->realized || ir::is_leaf(n->op) || !seen.insert(n.get()).second) return;
  for (const auto& s : n->src)
    collect_writes(s, seen, out);
  if (ir::is_write(n->op)) out.push_back(n);
}

// Performs one write: the base is copied into fresh memory when the write may
// not touch its memory (or computed there, when it is not memory yet: the
// node is not marked realized, as other equal nodes would then see the
// write), then the value is stored through the view. The Assign is then
// realized as that memory at its new version.
void Materializer::perform_write(const ir::NodePtr& a) {
  if (a->op == ir::Op::Scatter) return perform_scatter(a);
  ir::NodePtr base = ir::resolve(a->src[0]);
  const ir::NodePtr& value = a->src[1];
  const size_t nd = static_cast<size_t>(value->ndim());
  std::vector<int64_t> strides(a->args.begin(), a->args.begin() + static_cast<ptrdiff_t>(nd));
  const int64_t offset = a->args[nd];
  const bool in_place = a->args[nd + 1] != 0;

  std::shared_ptr<rt::Storage> storage = base->storage;
  ir::View base_view = base->view;
  std::optional<ir::View> dest;
  if (in_place && base->op == ir::Op::Buffer)
    dest = ir::compose_strided(base->shape, base->view, value->shape, strides, offset);
  if (!dest) {
    storage = rt::Storage::allocate(static_cast<size_t>(base->numel()) * itemsize(base->dtype),
                                    base->device);
    base_view = ir::View{ir::contiguous_strides(base->shape), 0};
    run({{nullptr, passes::simplify({base})[0], storage, base_view}});
    dest = ir::View{strides, offset};
  }
  run({{nullptr, passes::simplify({value})[0], storage, *dest}});
  // A plan writes nothing, so the memory keeps its version.
  if (!plan_) storage->bump_version();
  a->realized = ir::make_buffer(storage, a->dtype, a->shape, base_view);
  if (plan_) marked_.push_back(a);
}

// Performs a Scatter: the base is computed into fresh memory, then one launch computes the index
// and the values and writes each value where its index says, in order.
void Materializer::perform_scatter(const ir::NodePtr& a) {
  ir::NodePtr base = ir::resolve(a->src[0]);
  auto storage =
      rt::Storage::allocate(static_cast<size_t>(base->numel()) * itemsize(base->dtype), a->device);
  const ir::View view{ir::contiguous_strides(base->shape), 0};
  run({{nullptr, passes::simplify({base})[0], storage, view}});
  std::vector<ir::NodePtr> operands = passes::simplify({a->src[2], a->src[1]});
  sched::Scatter scatter{operands[1], a->shape, a->args[0], a->args[1] != 0};
  run({{nullptr, operands[0], storage, view, std::move(scatter)}});
  a->realized = ir::make_buffer(storage, a->dtype, a->shape, view);
  if (plan_) marked_.push_back(a);
}

void Materializer::realize_now(const std::vector<ir::NodePtr>& nodes) {
  std::vector<ir::NodePtr> todo;
  for (const auto& n : nodes)
    if (!n->realized && n->op != ir::Op::Buffer) todo.push_back(n);
  if (todo.empty()) return;
  if (!plan_) ++rt::counters().materializations;
  {
    std::unordered_set<const ir::Node*> seen;
    std::vector<ir::NodePtr> writes;
    for (const auto& n : todo)
      collect_writes(n, seen, writes);
    for (const auto& w : writes)
      if (!w->realized) perform_write(w);
    std::erase_if(todo, [](const ir::NodePtr& n) { return n->realized != nullptr; });
    if (todo.empty()) return;
  }
  std::vector<ir::NodePtr> simple = passes::simplify(todo);
  std::vector<sched::Target> targets;
  for (size_t i = 0; i < todo.size(); ++i)
    targets.push_back({todo[i], simple[i]});
  run(targets);
}

void Materializer::run(const std::vector<sched::Target>& targets) {
  std::vector<ir::NodePtr> marked;
  std::vector<sched::KernelInfo> info;
  std::vector<rt::Launch> launches =
      sched::schedule(targets, config().fusion, &marked, &info, cuda_kernels_);
  if (plan_) {
    marked_.insert(marked_.end(), marked.begin(), marked.end());
    for (size_t i = 0; i < launches.size(); ++i)
      plan_->kernels.push_back({std::move(launches[i]), std::move(info[i])});
    return;
  }
  if (config().debug >= 2)
    for (size_t i = 0; i < launches.size(); ++i)
      fmt::print(stderr, "[tj] schedule: {} over [{}]{}: {}\n", launches[i].kernel.name,
                 fmt::join(launches[i].domain, ", "),
                 launches[i].r > 1 ? fmt::format(" reducing {}", launches[i].r) : "", info[i].why);
  // Whatever fails, nothing can be trusted as computed: every buffer the plan promised is
  // forgotten. Errors, the user's (tj::Error) and the backends' (a compiler's, a driver's), name
  // the places of the user's program whose values were being computed.
  auto forget = [&] {
    for (const auto& n : marked)
      n->realized.reset();
  };
  auto annotated = [&](const char* what) {
    std::vector<ir::Site> sites;
    for (const auto& k : info)
      for (ir::Site s : k.sites())
        if (std::find(sites.begin(), sites.end(), s) == sites.end()) sites.push_back(s);
    if (sites.empty()) return std::string(what);
    return fmt::format("{}\n(while computing values built at {})", what, fmt::join(sites, ", "));
  };
  try {
    rt::execute(launches);
  } catch (const Error& e) {
    forget();
    throw Error(annotated(e.what()));
  } catch (const std::runtime_error& e) {
    forget();
    if (typeid(e) != typeid(std::runtime_error)) throw; // a subclass keeps its type
    throw std::runtime_error(annotated(e.what()));
  } catch (...) {
    forget();
    throw;
  }
}

} // namespace

} // namespace tj::detail
