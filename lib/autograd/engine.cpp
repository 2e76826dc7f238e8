// The backward pass: runs the recorded nodes from the outputs to the leaves
// in dependency order, each node once, after every gradient for it arrived.
// With create_graph the formulas run in grad mode, so the gradients they
// build are recorded too and can be differentiated again.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "lib/autograd/formulas.h"
#include "lib/autograd/node.h"
#include "lib/ir/shape.h"
#include "tensorjit/functions.h"

namespace tj::autograd {
namespace {

std::string torch_size(const Shape& s) {
  return fmt::format("torch.Size([{}])", fmt::join(s, ", "));
}

Tensor unpack(const SavedTensor& s, const std::shared_ptr<FunctionNode>& self) {
  if (!s.value) return {};
  Tensor t = detail::wrap(s.value);
  if (!GradMode::is_enabled()) return t;
  if (s.is_output)
    set_history(t, self, s.output_nr);
  else if (s.edge.fn)
    set_history(t, s.edge.fn, s.edge.input_nr);
  return t;
}

// Adds g into the gradient a leaf (or a non-leaf retaining its grad) holds.
void accumulate_into(detail::TensorImpl& impl, const Tensor& g, bool create_graph) {
  if (!g.defined()) return;
  if (!impl.grad.defined()) {
    // A handle of its own: zeroing the grad must not write into a tensor the
    // gradient was built from (the root's gradient, say).
    impl.grad = create_graph ? g.clone() : detail::wrap(detail::node_of(g));
  } else if (create_graph) {
    impl.grad = impl.grad + g;
  } else {
    NoGradGuard no_grad;
    impl.grad.add_(g); // in place: every handle on the grad sees the sum
  }
}

class Engine {
public:
  Engine(bool keep_graph, bool create_graph, bool accumulate, std::vector<Edge> capture)
      : keep_graph_(keep_graph), create_graph_(create_graph), accumulate_(accumulate),
        capture_(std::move(capture)), captured_(capture_.size()) {}

  std::vector<Tensor> run(const std::vector<Edge>& roots, const std::vector<Tensor>& grads) {
    struct Restore {
      bool prev = GradMode::is_enabled();
      ~Restore() { GradMode::set_enabled(prev); }
    } restore;
    GradMode::set_enabled(create_graph_);
    for (const Edge& e : roots)
      mark(e.fn.get());
    for (const Edge& e : roots)
      count(e.fn.get());
    std::vector<FunctionNode*> ready;
    for (size_t i = 0; i < roots.size(); ++i) {
      FunctionNode* fn = roots[i].fn.get();
      if (!needed(fn)) continue;
      add(fn, roots[i].input_nr, grads[i]);
      if (deps_[fn] == 0 && std::find(ready.begin(), ready.end(), fn) == ready.end())
        ready.push_back(fn);
    }
    while (!ready.empty()) {
      FunctionNode* fn = ready.back();
      ready.pop_back();
      std::vector<Tensor> in;
      if (auto it = buffers_.find(fn); it != buffers_.end()) {
        in = std::move(it->second);
        buffers_.erase(it);
      }
      execute(fn, in);
      for (const Edge& e : fn->next)
        if (e.fn && needed(e.fn.get()) && --deps_[e.fn.get()] == 0) ready.push_back(e.fn.get());
    }
    return std::move(captured_);
  }

private:
  // Whether fn leads to a gradient that is wanted (a leaf's accumulator when
  // accumulating, a captured edge for grad()), for every node below fn; and
  // whether fn's own formula must run. Iterative: backward graphs can be
  // as deep as a long loop made them.
  bool mark(FunctionNode* root) {
    if (!root) return false;
    std::vector<std::pair<FunctionNode*, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [fn, children_done] = stack.back();
      stack.pop_back();
      if (!children_done) {
        if (needed_.count(fn)) continue;
        needed_[fn] = false; // visited; set below once the children are known
        stack.push_back({fn, true});
        for (const Edge& e : fn->next)
          if (e.fn && !needed_.count(e.fn.get())) stack.push_back({e.fn.get(), false});
        continue;
      }
      bool need = fn->is_accumulator() && accumulate_;
      for (const Edge& c : capture_)
        need |= c.fn.get() == fn;
      bool runs = false;
      for (const Edge& e : fn->next)
        runs |= e.fn && needed(e.fn.get());
      runs_[fn] = runs;
      needed_[fn] = need || runs;
    }
    return needed(root);
  }
  bool needed(FunctionNode* fn) const {
    auto it = needed_.find(fn);
    return it != needed_.end() && it->second;
  }
  void count(FunctionNode* root) {
    std::vector<FunctionNode*> stack{root};
    while (!stack.empty()) {
      FunctionNode* fn = stack.back();
      stack.pop_back();
      if (!needed(fn) || !counted_.insert(fn).second) continue;
      for (const Edge& e : fn->next)
        if (e.fn && needed(e.fn.get())) {
          ++deps_[e.fn.get()];
          stack.push_back(e.fn.get());
        }
    }
  }

  void add(FunctionNode* fn, uint32_t nr, const Tensor& g) {
    if (!g.defined()) return;
    auto& buf = buffers_[fn];
    buf.resize(std::max<size_t>(fn->outputs.size(), 1));
    buf[nr] = buf[nr].defined() ? buf[nr] + g : g;
  }

  void execute(FunctionNode* fn, std::vector<Tensor>& in) {
    in.resize(std::max<size_t>(fn->outputs.size(), 1));
    for (size_t k = 0; k < capture_.size(); ++k)
      if (capture_[k].fn.get() == fn) captured_[k] = in[capture_[k].input_nr];
    if (fn->is_accumulator()) {
      // A leaf that stopped requiring grad since the graph was built takes none (PyTorch's
      // AccumulateGrad).
      if (accumulate_)
        if (auto leaf = fn->leaf.lock(); leaf && leaf->requires_grad)
          accumulate_into(*leaf, in[0], create_graph_);
      return;
    }
    for (auto& [nr, weak] : fn->retained)
      if (auto t = weak.lock()) accumulate_into(*t, in[nr], create_graph_);
    if (!runs_[fn]) return;
    bool any = false;
    for (const Tensor& g : in)
      any |= g.defined();
    if (!any) return;
    if (fn->released)
      throw Error("Trying to backward through the graph a second time (or directly access saved "
                  "tensors after they have already been freed). Saved intermediate values of the "
                  "graph are freed when you call .backward() or autograd.grad(). Specify "
                  "retain_graph=True if you need to backward through the graph a second time or "
                  "if you need to access saved tensors after calling backward.");
    for (size_t k = 0; k < in.size(); ++k)
      if (!in[k].defined()) {
        const TensorMeta& m = fn->outputs[k];
        in[k] = zeros(m.sizes, TensorOptions().dtype(m.dtype).device(m.device));
      }
    auto self = fn->shared_from_this();
    std::vector<Tensor> saved;
    for (const SavedTensor& s : fn->saved)
      saved.push_back(unpack(s, self));
    std::vector<Tensor> out;
    {
      ir::SiteScope at(fn->site);
      out = fn->backward(in, saved);
    }
    if (!keep_graph_ && !fn->saved.empty()) {
      fn->saved.clear();
      fn->released = true;
    }
    for (size_t i = 0; i < fn->next.size() && i < out.size(); ++i) {
      const Edge& e = fn->next[i];
      if (!e.fn || !out[i].defined() || !needed(e.fn.get())) continue;
      const TensorMeta& m = fn->inputs[i];
      Tensor g = out[i];
      // A gradient of the shape the input broadcasts to is summed back to it, as PyTorch's
      // engine does (an op whose inputs broadcast need not reduce its gradients itself).
      if (g.sizes() != m.sizes && ir::expandable_to(m.sizes, g.sizes())) g = sum_to(g, m.sizes);
      if (g.sizes() != m.sizes)
        throw Error(fmt::format("Function {} returned an invalid gradient at index {} - got {} but "
                                "expected shape compatible with {}",
                                fn->name_, i, ir::shape_str(g.sizes()), ir::shape_str(m.sizes)));
      if (g.dtype() != m.dtype) g = g.to(m.dtype);
      if (g.device() != m.device) g = g.to(m.device);
      add(e.fn.get(), e.input_nr, g);
    }
  }

  bool keep_graph_, create_graph_, accumulate_;
  std::vector<Edge> capture_;
  std::vector<Tensor> captured_;
  std::unordered_map<FunctionNode*, bool> needed_, runs_;
  std::unordered_set<FunctionNode*> counted_;
  std::unordered_map<FunctionNode*, int> deps_;
  std::unordered_map<FunctionNode*, std::vector<Tensor>> buffers_;
};

// The roots' edges and gradients, with PyTorch's checks in its order: every gradient (given or
// implicit) first, then whether each root has a history.
void prepare_roots(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
                   std::vector<Edge>& edges, std::vector<Tensor>& grads) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw Error(
        fmt::format("got {} tensors and {} gradients", outputs.size(), grad_outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    detail::check_defined(t, "backward");
    Tensor g = i < grad_outputs.size() ? grad_outputs[i] : Tensor();
    if (!g.defined()) {
      if (t.requires_grad()) {
        if (t.numel() != 1) throw Error("grad can be implicitly created only for scalar outputs");
        if (is_complex(t.dtype()))
          throw Error("grad can be implicitly created only for real scalar outputs");
        g = ones_like(t);
      }
    } else if (g.sizes() != t.sizes()) {
      throw Error(fmt::format("Mismatch in shape: grad_output[{}] has a shape of {} and output[{}] "
                              "has a shape of {}.",
                              i, torch_size(g.sizes()), i, torch_size(t.sizes())));
    }
    grads.push_back(!g.defined() || g.dtype() == t.dtype() ? g : g.to(t.dtype()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    Edge e = gradient_edge(outputs[i]);
    if (!e.fn)
      throw Error(fmt::format(
          "element {} of tensors does not require grad and does not have a grad_fn", i));
    edges.push_back(e);
  }
}

} // namespace

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph) {
  std::vector<Edge> edges;
  std::vector<Tensor> grads;
  prepare_roots(tensors, grad_tensors, edges, grads);
  Engine(retain_graph.value_or(create_graph), create_graph, true, {}).run(edges, grads);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  std::vector<Edge> edges;
  std::vector<Tensor> grads;
  prepare_roots(outputs, grad_outputs, edges, grads);
  std::vector<Edge> capture;
  for (const Tensor& x : inputs) {
    detail::check_defined(x, "grad");
    Edge e = gradient_edge(x);
    if (!e.fn) throw Error("One of the differentiated Tensors does not require grad");
    capture.push_back(e);
  }
  std::vector<Tensor> out =
      Engine(retain_graph.value_or(create_graph), create_graph, false, capture).run(edges, grads);
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].defined() && !allow_unused)
      throw Error("One of the differentiated Tensors appears to not have been used in the graph. "
                  "Set allow_unused=True if this is the desired behavior.");
    // A gradient returned to the caller has a handle of its own.
    if (out[i].defined() && !create_graph) out[i] = detail::wrap(detail::node_of(out[i]));
  }
  return out;
}

} // namespace tj::autograd
