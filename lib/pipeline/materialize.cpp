// Materialization: perform writes and library calls, simplify, schedule, execute, and record
// realized buffers (or only plan it, for dumps).
#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>

#include "lib/frontend/graph_builders.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/ir/routine.h"
#include "lib/ir/text.h"
#include "lib/passes/lower_complex.h"
#include "lib/passes/simplify.h"
#include "lib/passes/split_scans.h"
#include "lib/pipeline/library_calls.h"
#include "lib/pipeline/materialize.h"
#include "lib/pipeline/schedule_cache.h"
#include "lib/schedule/scheduler.h"
#include "runtime/stats_counters.h"
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
  explicit Materializer(Plan* plan = nullptr) : plan_(plan) {}
  ~Materializer() {
    for (const auto& n : marked_)
      n->realized.reset();
  }
  Materializer(const Materializer&) = delete;
  Materializer& operator=(const Materializer&) = delete;

  void realize_now(const std::vector<ir::NodePtr>& nodes);

private:
  // A target computed elementwise from a product's result alone (relu(x @ w.t() + b)): the GEMM
  // runs its kernel on C's values as they are final (rt::GemmEpilogue).
  struct Epilogue {
    ir::NodePtr value; // a target of the simplified graph
  };

  void perform(const ir::NodePtr& n, const Epilogue* epilogue = nullptr);
  void perform_write(const ir::NodePtr& a);
  void perform_scatter(const ir::NodePtr& a);
  void perform_call(const ir::NodePtr& c, const Epilogue* epilogue);
  void perform_factorization(const ir::NodePtr& c);
  void perform_by_kernels(const ir::NodePtr& c);
  ir::NodePtr in_memory(const ir::NodePtr& x);
  ir::NodePtr contiguous_copy(const ir::NodePtr& buffer);
  // What a run scheduled and launched, for the schedule cache.
  struct Ran {
    std::vector<rt::Launch> launches;
    std::vector<std::shared_ptr<rt::Storage>> allocated; // the marked nodes' memory
  };
  void run(const std::vector<sched::Target>& targets, Ran* ran = nullptr);
  void replay(const pipeline::CachedSchedule& cached, const pipeline::GraphKey& key,
              const std::vector<ir::NodePtr>& todo);

  Plan* plan_;
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

Plan plan(const std::vector<ir::NodePtr>& nodes) {
  Plan p;
  std::vector<ir::NodePtr> todo;
  for (const auto& n : nodes)
    if (!n->realized && n->op != ir::Op::Buffer) todo.push_back(n);
  if (!todo.empty()) Materializer(&p).realize_now(todo);
  return p;
}

namespace {
// The unrealized writes (Assign, Scatter) and calls below `roots`, each after the ones it reads.
void collect_performed(const ir::NodePtr& in, std::unordered_set<const ir::Node*>& seen,
                       std::vector<ir::NodePtr>& out) {
  ir::NodePtr n = ir::resolve(in);
  // A graph of kernels alone (most are) is not walked.
  if (!n->performs || ir::is_leaf(n->op) || !seen.insert(n.get()).second) return;
  for (const auto& s : n->src)
    collect_performed(s, seen, out);
  if (ir::is_performed(n->op)) out.push_back(n);
}

// The Call of gemm that `root` reads through elementwise ops alone, at its own elements, and no
// other write or call: then the product's epilogue can compute root. Null otherwise.
const ir::Node* epilogue_call(const ir::NodePtr& root) {
  const ir::Node* call = nullptr;
  std::unordered_set<const ir::Node*> seen;
  bool ok = true;
  std::function<void(const ir::NodePtr&)> walk = [&](const ir::NodePtr& in) {
    ir::NodePtr n = ir::resolve(in);
    if (!ok || !n->performs || !seen.insert(n.get()).second) return;
    if (ir::is_alu(n->op)) {
      for (const auto& s : n->src)
        walk(s);
    } else if (n->op == ir::Op::Call && ir::routine(*n) == ir::Routine::Gemm &&
               n->shape == root->shape && (!call || call == n.get())) {
      call = n.get();
    } else {
      ok = false;
    }
  };
  if (!ir::is_alu(root->op) || root->realized) return nullptr;
  walk(root);
  return ok ? call : nullptr;
}

// `n` with `from` read as `to` (a node of the same shape and dtype).
ir::NodePtr substituted(const ir::NodePtr& in, const ir::Node* from, const ir::NodePtr& to,
                        std::unordered_map<const ir::Node*, ir::NodePtr>& done) {
  ir::NodePtr n = ir::resolve(in);
  if (n.get() == from) return to;
  if (!n->performs || ir::is_leaf(n->op)) return n;
  if (auto it = done.find(n.get()); it != done.end()) return it->second;
  std::vector<ir::NodePtr> src;
  for (const auto& s : n->src)
    src.push_back(substituted(s, from, to, done));
  ir::NodePtr r = ir::with_sources(*n, std::move(src));
  // The node stands for n: it was built where n was (dumps and errors say so).
  if (!r->site.load(std::memory_order_relaxed))
    r->site.store(n->site.load(std::memory_order_relaxed), std::memory_order_relaxed);
  return done[n.get()] = r;
}

void Materializer::perform(const ir::NodePtr& n, const Epilogue* epilogue) {
  if (n->op == ir::Op::Call)
    perform_call(n, epilogue);
  else if (n->op == ir::Op::Scatter)
    perform_scatter(n);
  else
    perform_write(n);
}

// Performs one write: the base is copied into fresh memory when the write may
// not touch its memory (or computed there, when it is not memory yet: the
// node is not marked realized, as other equal nodes would then see the
// write), then the value is stored through the view. The Assign is then
// realized as that memory at its new version.
void Materializer::perform_write(const ir::NodePtr& a) {
  ir::NodePtr base = ir::resolve(a->src[0]);
  const ir::NodePtr& value = a->src[1];
  const size_t nd = static_cast<size_t>(value->ndim());
  std::vector<int64_t> strides(a->args.begin(), a->args.begin() + static_cast<ptrdiff_t>(nd));
  const int64_t offset = a->args[nd];
  const bool in_place = a->args[nd + 1] != 0;

  std::shared_ptr<rt::Storage> storage = base->storage;
  ir::View base_view = base->view;
  std::optional<ir::View> dest;
  // In place only into memory the write was built over (a leaf's, or an earlier write's): a
  // computed base realized since (a library call's result) is the value of every equal node,
  // which must not see the write.
  const ir::Op built_over = a->src[0]->op;
  if (in_place && base->op == ir::Op::Buffer &&
      (built_over == ir::Op::Buffer || ir::is_write(built_over)))
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

// `x` in memory: a Buffer over storage, seen through whatever view the memory's layout
// expresses. Movement (a transpose, a broadcast, a slice) stays a view of its computed source
// where a view expresses it; anything else that is not memory yet is computed into fresh
// contiguous memory.
ir::NodePtr Materializer::in_memory(const ir::NodePtr& x0) {
  ir::NodePtr x = ir::resolve(x0);
  // A part of complex memory is a strided view of it.
  if ((x->op == ir::Op::Real || x->op == ir::Op::Imag) &&
      ir::resolve(x->src[0])->op == ir::Op::Buffer)
    return passes::lower_complex({x})[0];
  if (ir::is_movement(x->op)) {
    ir::NodePtr view = fe::moved(*x, in_memory(x->src[0]));
    if (view->op == ir::Op::Buffer) return view;
    x = view; // no view expresses it (a reshape across strided dims): computed
  }
  ir::NodePtr simple = passes::simplify({x})[0];
  if (simple->op == ir::Op::Buffer) return simple;
  run({{x, simple, nullptr, {}, std::nullopt, "a library call reads it from memory"}});
  return ir::resolve(x);
}

// `buffer` copied into fresh contiguous memory: a Cast to its own dtype, as Tensor::contiguous.
ir::NodePtr Materializer::contiguous_copy(const ir::NodePtr& buffer) {
  ir::NodePtr copy = ir::make_node(ir::Op::Cast, buffer->dtype, buffer->shape, {buffer});
  if (!copy->realized) // an equal copy made before (Tensor::contiguous) is reused
    run({{copy, copy, nullptr, {}, std::nullopt, "a library call cannot address the layout"}});
  ir::NodePtr r = ir::resolve(copy);
  if (r->op != ir::Op::Buffer || r->view.strides != ir::contiguous_strides(buffer->shape) ||
      r->view.offset != 0)
    throw Error("internal error: a copy for a library call is not contiguous");
  return r;
}

// The distinct places of the user's program that built the nodes the kernels compute.
std::vector<ir::Site> sites_of(const std::vector<sched::KernelInfo>& info) {
  std::vector<ir::Site> sites;
  for (const auto& k : info)
    for (ir::Site s : k.sites())
      if (std::find(sites.begin(), sites.end(), s) == sites.end()) sites.push_back(s);
  return sites;
}

// The places of the user's program that built the nodes below `roots`, sources first: where
// the kernels of a replayed schedule were computing values, in the order a schedule lowers them.
std::vector<ir::Site> sites_below(const std::vector<ir::NodePtr>& roots) {
  std::vector<ir::Site> sites;
  std::unordered_set<const ir::Node*> seen;
  std::function<void(const ir::Node*)> walk = [&](const ir::Node* n) {
    n = n->resolved();
    if (!seen.insert(n).second) return;
    for (const auto& s : n->src)
      walk(s.get());
    if (ir::Site s = n->site.load(std::memory_order_relaxed);
        s && std::find(sites.begin(), sites.end(), s) == sites.end())
      sites.push_back(s);
  };
  for (const auto& r : roots)
    walk(r.get());
  return sites;
}

// Runs `work` (launches, a GEMM with its epilogue). Errors, the user's (tj::Error) and the
// backends' (a compiler's, a driver's), name the places of the user's program whose values were
// being computed; `failed` runs first.
void annotate_errors(const std::function<void()>& work,
                     const std::function<std::vector<ir::Site>()>& sites,
                     const std::function<void()>& failed) {
  auto annotated = [&](const char* what) {
    const std::vector<ir::Site> s = sites();
    if (s.empty()) return std::string(what);
    return fmt::format("{}\n(while computing values built at {})", what, fmt::join(s, ", "));
  };
  try {
    work();
  } catch (const Error& e) {
    failed();
    throw Error(annotated(e.what()));
  } catch (const std::runtime_error& e) {
    failed();
    if (typeid(e) != typeid(std::runtime_error)) throw; // a subclass keeps its type
    throw std::runtime_error(annotated(e.what()));
  } catch (...) {
    failed();
    throw;
  }
}

void execute_annotated(const std::vector<rt::Launch>& launches,
                       const std::function<std::vector<ir::Site>()>& sites,
                       const std::function<void()>& failed) {
  annotate_errors([&] { rt::execute(launches); }, sites, failed);
}

// Performs a Call of gemm: the operands are computed into memory and handed to the library as
// they lie (transposed, strided, sliced and broadcast views included; copied contiguous only
// where no call of the library addresses them); the result is fresh contiguous memory. Where no
// library computes it, kernels do. Factorizations go to LAPACK.
void Materializer::perform_call(const ir::NodePtr& c, const Epilogue* epilogue) {
  if (ir::routine(*c) != ir::Routine::Gemm) return perform_factorization(c);
  const ir::NodePtr &a0 = c->src[0], &b0 = c->src[1];
  const int64_t n = a0->shape[a0->shape.size() - 2], k = a0->shape.back(), m = c->shape.back();
  const int64_t batch = n != 0 && m != 0 ? c->numel() / (n * m) : 0;
  const DType operands = a0->dtype; // the Call's, or bfloat16 into a float32 result
  const pipeline::GemmLibrary* library =
      pipeline::gemm_library(c->device, operands, n, m, k, batch);
  if (!library || c->numel() == 0 || k == 0) return perform_by_kernels(c);
  ir::NodePtr a = in_memory(a0), b = in_memory(b0);
  auto storage =
      rt::Storage::allocate(static_cast<size_t>(c->numel()) * itemsize(c->dtype), c->device);
  ir::NodePtr out =
      ir::make_buffer(storage, c->dtype, c->shape, {ir::contiguous_strides(c->shape), 0});
  // The memory holds what the program built there.
  out->site.store(c->site.load(std::memory_order_relaxed), std::memory_order_relaxed);
  auto layout = [](const ir::NodePtr& t) {
    return rt::GemmOperand{t->shape, t->view.strides, t->view.offset};
  };
  rt::GemmPlan plan = rt::plan_gemm(layout(a), layout(b), layout(out));
  if (plan.copy_a || plan.copy_b) {
    if (plan.copy_a) a = contiguous_copy(a);
    if (plan.copy_b) b = contiguous_copy(b);
    plan = rt::plan_gemm(layout(a), layout(b), layout(out));
    if (plan.copy_a || plan.copy_b)
      throw Error("internal error: contiguous operands of a matrix product found no plan");
  }
  // The epilogue's kernel: the target computed from C's memory, into that memory where the dtypes
  // agree (each element is read, then written, by the same iteration), else into its own.
  std::vector<rt::Launch> launches;
  std::vector<sched::KernelInfo> info;
  std::vector<ir::NodePtr> marked;
  std::shared_ptr<rt::Storage> dest; // the epilogue's target's memory
  if (epilogue && library->run_with_epilogue && !plan.calls.empty()) {
    const ir::NodePtr& value = epilogue->value;
    dest = value->dtype == c->dtype
               ? storage
               : rt::Storage::allocate(static_cast<size_t>(value->numel()) * itemsize(value->dtype),
                                       c->device);
    std::unordered_map<const ir::Node*, ir::NodePtr> done;
    launches = sched::schedule({{nullptr, substituted(value, c.get(), out, done), dest,
                                 ir::View{ir::contiguous_strides(c->shape), 0}}},
                               config().fusion, &marked, &info);
  }
  // One elementwise kernel runs on C's blocks, when it stores element e of its domain (row-major)
  // at element e of its output, as C lies: a run of C's elements is then a range of the domain.
  // Anything else runs after the product.
  auto stores_as_c = [](const rt::Launch& l) {
    const std::vector<int64_t> row_major = ir::contiguous_strides(l.domain);
    if (l.kernel.stores.size() != 1) return false;
    const rt::SlotBinding& s = l.slots[static_cast<size_t>(l.kernel.stores[0].slot)];
    return s.base == 0 && s.strides == row_major;
  };
  const bool fused =
      launches.size() == 1 && rt::LaunchRanges::accepts(launches[0]) && stores_as_c(launches[0]);
  if (!launches.empty()) info.back().roots = {epilogue->value};
  if (fused) info[0].why = "the GEMM's epilogue: it runs on each block of C as the block is final";
  if (plan_) {
    detail::PlannedCall planned{plan_->kernels.size(), c, library->name, plan.calls, {}, {}};
    if (library->describe) planned.details = library->describe(operands);
    if (fused) planned.details += fmt::format("; epilogue: kernel {}", plan_->kernels.size());
    if (library->code)
      planned.code = [code = library->code, dtype = operands](std::string_view stage) {
        return code(dtype, stage);
      };
    plan_->calls.push_back(std::move(planned));
    marked_.insert(marked_.end(), marked.begin(), marked.end());
    for (size_t i = 0; i < launches.size(); ++i)
      plan_->kernels.push_back({std::move(launches[i]), std::move(info[i])});
  } else {
    // Whatever fails, what the schedule marked is not computed; errors name the places that
    // built the values, as a launch's do.
    auto forget = [&] {
      for (const auto& n : marked)
        n->realized.reset();
    };
    auto sites = [&] { return sites_of(info); };
    const auto t0 = std::chrono::steady_clock::now();
    // TJ_DEBUG >= 1 times each call beside the launches the executor times.
    auto report = [&] {
      if (config().debug < 1) return;
      const double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      // cuBLAS returns once the call is queued on the device's stream.
      fmt::print(stderr, "[tj] {} {} for [{}]{} in {:.1f} us\n",
                 c->device.is_cuda() ? "queued" : "called", library->name,
                 fmt::join(c->shape, ", "), fused ? " with its epilogue" : "", us);
    };
    if (fused) {
      const rt::LaunchRanges ranges(launches[0]);
      const auto* base = static_cast<const char*>(out->storage->data());
      const auto elem = static_cast<int64_t>(itemsize(c->dtype));
      const rt::GemmEpilogue run = [&](void* at, int64_t count) {
        const int64_t begin = (static_cast<const char*>(at) - base) / elem;
        ranges.run(begin, begin + count);
      };
      annotate_errors(
          [&] {
            for (const rt::GemmCall& call : plan.calls) {
              library->run_with_epilogue(call, *b, *a, *out, run);
              ++rt::counters().library_calls;
            }
            ranges.finish();
          },
          sites, forget);
      report();
    } else {
      // The kernels that computed the operands run before: launches are ordered on each device.
      for (const rt::GemmCall& call : plan.calls) {
        library->run(call, *b, *a, *out);
        ++rt::counters().library_calls;
      }
      report();
      if (!launches.empty()) execute_annotated(launches, sites, forget);
    }
  }
  if (!dest) {
    c->realized = out;
    if (plan_) marked_.push_back(c);
    return;
  }
  // The epilogue's target, in its memory. Where that is C's, C's values are gone (its memory is
  // at a new version): a later use computes the product again.
  if (dest != storage) {
    c->realized = out;
    if (plan_) marked_.push_back(c);
  } else if (!plan_) {
    storage->bump_version();
  }
  const ir::NodePtr& value = epilogue->value;
  value->realized =
      ir::make_buffer(dest, value->dtype, value->shape, {ir::contiguous_strides(c->shape), 0});
  value->realized->site.store(value->site.load(std::memory_order_relaxed),
                              std::memory_order_relaxed);
  if (plan_) marked_.push_back(value);
}

namespace {

// PyTorch's words for a factorization with attributes `params` that failed on entry `entry` of
// a batch (batched: the operand has batch dims), LAPACK's `info` in them.
std::string failure_message(ir::Routine r, const std::vector<int64_t>& params, int64_t entry,
                            int64_t info, bool batched) {
  const std::string batch = batched ? fmt::format(": (Batch element {})", entry) : "";
  switch (r) {
  case ir::Routine::Solve:
    return fmt::format("torch.linalg.solve{}: The solver failed because the input matrix is "
                       "singular.",
                       batch);
  case ir::Routine::Inv:
    if (params[0]) return "Failed to invert the input tensor, because it is singular.";
    return fmt::format("linalg.inv{}: The diagonal element {} is zero, the inversion could not be "
                       "completed because the input matrix is singular.",
                       batch, info);
  case ir::Routine::Cholesky:
    return fmt::format("linalg.cholesky{}: The factorization could not be completed because the "
                       "input is not positive-definite (the leading minor of order {} is not "
                       "positive-definite).",
                       batch, info);
  case ir::Routine::Svd:
    if (info == rt::lapack::kNonFinite)
      return fmt::format("linalg.svd{}: The algorithm failed to converge because the input matrix "
                         "contained non-finite values.",
                         batch);
    return fmt::format("linalg.svd{}: The algorithm failed to converge because the input matrix "
                       "is ill-conditioned or has too many repeated singular values (error code: "
                       "{}).",
                       batch, info);
  case ir::Routine::Eigh:
    return fmt::format("linalg.eigh{}: The algorithm failed to converge because the input matrix "
                       "is ill-conditioned or has too many repeated eigenvalues (error code: {}).",
                       batch, info);
  case ir::Routine::Eig:
    if (info == rt::lapack::kNonFinite)
      return "torch.linalg.eig: input tensor should not contain infs or NaNs.";
    return fmt::format("linalg.eig{}: The algorithm failed to converge because the input matrix "
                       "is ill-conditioned or has too many repeated eigenvalues (error code: {}).",
                       batch, info);
  case ir::Routine::Lstsq:
    return fmt::format("torch.linalg.lstsq{}: The least squares solution could not be computed "
                       "because the input matrix does not have full rank (error code: {}).",
                       batch, info);
  default:
    return fmt::format("internal error: {} failed (info {})", ir::name(r), info);
  }
}

} // namespace

// Performs a factorization (ir/routine.h) through LAPACK on the CPU: the operands are computed
// into memory and read where they lie; the parts are written end to end into fresh contiguous
// memory. A failure (a singular matrix to invert, one not positive-definite) is the user's
// error, in PyTorch's words.
void Materializer::perform_factorization(const ir::NodePtr& c) {
  const ir::Routine r = ir::routine(*c);
  if (c->device.is_cuda())
    throw Error(fmt::format("internal error: {} on a CUDA device", ir::name(r)));
  std::vector<ir::NodePtr> ops;
  for (const auto& s : c->src)
    ops.push_back(in_memory(s));
  auto storage = rt::Storage::allocate(
      static_cast<size_t>(std::max<int64_t>(c->numel(), 1)) * itemsize(c->dtype), c->device);
  ir::NodePtr out =
      ir::make_buffer(storage, c->dtype, c->shape, {ir::contiguous_strides(c->shape), 0});
  out->site.store(c->site.load(std::memory_order_relaxed), std::memory_order_relaxed);
  if (plan_) {
    plan_->calls.push_back({plan_->kernels.size(), c, "LAPACK", {}, {}, {}});
    marked_.push_back(c);
    c->realized = out;
    return;
  }
  rt::lapack::Failure failure;
  if (c->numel() > 0) {
    std::vector<rt::lapack::Matrices> matrices;
    for (const auto& x : ops)
      matrices.push_back(
          rt::lapack::strided(x->storage->data(), x->shape, x->view.strides, x->view.offset));
    failure =
        pipeline::factor_with_lapack(*c, c->dtype, matrices, storage->data(), c->shape.back());
    ++rt::counters().library_calls;
  }
  if (failure)
    throw Error(
        failure_message(r, ir::routine_params(*c), failure.entry, failure.info, c->ndim() > 1));
  c->realized = out;
}

// A Call of gemm computed by kernels: the operands' broadcast product reduced over the shared
// dim, as the frontend builds a product that no library computes.
void Materializer::perform_by_kernels(const ir::NodePtr& c) {
  const ir::NodePtr &a = c->src[0], &b = c->src[1];
  const size_t r = a->shape.size();
  const int64_t m = b->shape[r - 1];
  ir::Shape as = a->shape, bs = b->shape, full = a->shape;
  as.push_back(1);            // (..., n, k, 1)
  bs.insert(bs.end() - 2, 1); // (..., 1, k, m)
  full.push_back(m);          // (..., n, k, m)
  auto spread = [&](ir::NodePtr x, const ir::Shape& s) {
    if (x->dtype != c->dtype) x = ir::make_node(ir::Op::Cast, c->dtype, x->shape, {x}); // bfloat16
    ir::NodePtr shaped = ir::make_node(ir::Op::Reshape, x->dtype, s, {x}, s);
    return ir::make_node(ir::Op::Expand, x->dtype, full, {shaped}, full);
  };
  ir::NodePtr value = ir::make_const(0, c->dtype, c->shape, c->device); // k = 0: no products
  if (a->shape[r - 1] > 0) {
    ir::NodePtr prod = ir::make_node(ir::Op::Mul, c->dtype, full, {spread(a, as), spread(b, bs)});
    ir::Shape reduced = full;
    reduced[r - 1] = 1;
    ir::NodePtr sum =
        ir::make_node(ir::Op::ReduceSum, c->dtype, reduced, {prod}, {static_cast<int64_t>(r - 1)});
    value = ir::make_node(ir::Op::Reshape, c->dtype, c->shape, {sum}, c->shape);
  }
  run({{c, passes::simplify({value})[0]}});
}

void Materializer::realize_now(const std::vector<ir::NodePtr>& nodes) {
  std::vector<ir::NodePtr> todo;
  for (const auto& n : nodes)
    if (!n->realized && n->op != ir::Op::Buffer) todo.push_back(n);
  if (todo.empty()) return;
  if (!plan_) ++rt::counters().materializations;
  if (config().verify) ir::verify(todo, "the frontend");
  // A graph of kernels alone whose structure was scheduled before: its launches again.
  std::optional<pipeline::GraphKey> key;
  if (!plan_) key = pipeline::graph_key(todo);
  if (key)
    if (auto cached = pipeline::find_schedule(*key)) return replay(*cached, *key, todo);
  // A schedule that reads a value computed before, which simplification (or the scheduler)
  // found as a node equal to one it built, depends on more than the key: it is not remembered.
  const uint64_t found_before = ir::realized_nodes_found();
  auto performed_below = [](const std::vector<ir::NodePtr>& roots) {
    std::unordered_set<const ir::Node*> seen;
    std::vector<ir::NodePtr> out;
    for (const auto& n : roots)
      collect_performed(n, seen, out);
    return out;
  };
  // Writes first, each after the calls its values read: a write's value is simplified and
  // scheduled on its own.
  std::vector<ir::NodePtr> first = performed_below(todo);
  while (!first.empty() && !ir::is_write(first.back()->op))
    first.pop_back();
  for (const auto& w : first)
    if (!w->realized) perform(w);
  std::erase_if(todo, [](const ir::NodePtr& n) { return n->realized != nullptr; });
  if (todo.empty()) return;
  // Then the calls that the simplified values read, so that the kernels reading a call's result
  // compute nodes of the simplified graph (which dumps show).
  std::vector<ir::NodePtr> simple = passes::split_long_scans(passes::simplify(todo));
  if (config().verify) ir::verify(simple, "simplify, split_long_scans");
  // A target computed elementwise from one product on the CPU that no other target reads is its
  // epilogue.
  std::unordered_map<const ir::Node*, size_t> epilogues;
  if (config().fusion) {
    std::unordered_map<const ir::Node*, int> readers;
    for (const auto& s : simple)
      for (const auto& c : performed_below({s}))
        ++readers[c.get()];
    for (size_t i = 0; i < simple.size(); ++i)
      if (const ir::Node* c = epilogue_call(simple[i]); c && c->device.is_cpu() && readers[c] == 1)
        epilogues.emplace(c, i);
  }
  for (const auto& c : performed_below(simple)) {
    if (c->realized) continue;
    auto it = epilogues.find(c.get());
    if (it == epilogues.end()) {
      perform(c);
    } else {
      const Epilogue e{simple[it->second]};
      perform(c, &e);
    }
  }
  std::vector<sched::Target> targets;
  for (size_t i = 0; i < todo.size(); ++i) {
    if (!simple[i]->realized) {
      targets.push_back({todo[i], simple[i]});
    } else if (todo[i] != simple[i]) { // a call asked for (or computed as a call's operand)
      todo[i]->realized = ir::resolve(simple[i]);
      if (plan_) marked_.push_back(todo[i]);
    }
  }
  Ran ran;
  if (!targets.empty()) run(targets, key ? &ran : nullptr);
  if (key && ir::realized_nodes_found() == found_before)
    pipeline::remember_schedule(*key, todo, ran.launches, ran.allocated);
}

// Replays a cached schedule: its launches over this graph's leaves and fresh memory, then each
// root realized where the first run left its value.
void Materializer::replay(const pipeline::CachedSchedule& cached, const pipeline::GraphKey& key,
                          const std::vector<ir::NodePtr>& todo) {
  pipeline::BoundSchedule bound = pipeline::bind(cached, key);
  execute_annotated(
      bound.launches, [&] { return sites_below(todo); }, [] {});
  for (size_t i = 0; i < todo.size(); ++i) {
    const auto& r = cached.results[i];
    todo[i]->realized = ir::make_buffer(bound.results[i], r.dtype, r.shape, r.view);
    // The memory holds what the program built there.
    todo[i]->realized->site.store(todo[i]->site.load(std::memory_order_relaxed),
                                  std::memory_order_relaxed);
  }
}

void Materializer::run(const std::vector<sched::Target>& targets, Ran* ran) {
  std::vector<ir::NodePtr> marked;
  std::vector<sched::KernelInfo> info;
  std::vector<rt::Launch> launches = sched::schedule(targets, config().fusion, &marked, &info);
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
  // forgotten.
  execute_annotated(
      launches, [&] { return sites_of(info); },
      [&] {
        for (const auto& n : marked)
          n->realized.reset();
      });
  if (!ran) return;
  for (const auto& n : marked)
    if (const ir::Node* r = n->resolved(); r->op == ir::Op::Buffer && r->storage)
      ran->allocated.push_back(r->storage);
  ran->launches = std::move(launches);
}

} // namespace

} // namespace tj::detail
