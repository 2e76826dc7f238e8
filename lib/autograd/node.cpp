// Grad mode, recording ops into the backward graph, and saved values.
#include "autograd/node.h"

#include "tensorjit/functions.h"

namespace tj {

namespace {
thread_local bool grad_enabled = true;
} // namespace

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

namespace autograd {
namespace {

bool tracked(const Tensor& t) {
  return t.defined() && (t.impl()->requires_grad || t.impl()->grad_fn);
}

TensorMeta meta(const Tensor& t) { return {t.sizes(), t.dtype(), t.device()}; }

std::shared_ptr<FunctionNode> accumulator_of(const Tensor& t) {
  detail::TensorImpl& impl = *t.impl();
  if (auto a = impl.accumulator.lock()) return a;
  auto a = std::make_shared<FunctionNode>();
  a->name_ = "AccumulateGrad";
  a->leaf = t.impl();
  a->outputs = {meta(t)};
  impl.accumulator = a;
  return a;
}

} // namespace

std::vector<std::pair<std::shared_ptr<Node>, uint32_t>> FunctionNode::next_functions() const {
  std::vector<std::pair<std::shared_ptr<Node>, uint32_t>> out;
  for (const Edge& e : next)
    out.emplace_back(e.fn, e.input_nr);
  return out;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  const detail::TensorImpl& impl = *t.impl();
  if (impl.grad_fn) return {impl.grad_fn, impl.output_nr};
  if (impl.requires_grad) return {accumulator_of(t), 0};
  return {};
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (tracked(t)) return true;
  return false;
}

void rename(const Tensor& t, const char* name) {
  if (t.impl()->grad_fn) t.impl()->grad_fn->name_ = name;
}

void set_history(const Tensor& t, const std::shared_ptr<FunctionNode>& fn, uint32_t output_nr) {
  t.impl()->grad_fn = fn;
  t.impl()->output_nr = output_nr;
}

void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            const std::vector<Tensor>& save, FunctionNode::Backward backward) {
  if (!any_requires_grad(inputs)) return;
  auto fn = std::make_shared<FunctionNode>();
  fn->name_ = name;
  for (const Tensor& x : inputs) {
    fn->next.push_back(tracked(x) ? gradient_edge(x) : Edge{});
    fn->inputs.push_back(x.defined() ? meta(x) : TensorMeta{});
  }
  for (const Tensor& s : save) {
    SavedTensor st;
    if (s.defined()) {
      st.value = detail::node_of(s);
      for (size_t i = 0; i < outputs.size(); ++i)
        if (outputs[i].impl() == s.impl()) {
          st.is_output = true;
          st.output_nr = static_cast<uint32_t>(i);
        }
      if (!st.is_output && tracked(s)) st.edge = gradient_edge(s);
    }
    fn->saved.push_back(std::move(st));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    fn->outputs.push_back(meta(outputs[i]));
    if (is_floating_point(outputs[i].dtype()))
      set_history(outputs[i], fn, static_cast<uint32_t>(i));
  }
  fn->backward = std::move(backward);
}

} // namespace autograd
} // namespace tj
