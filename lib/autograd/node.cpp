// Grad mode, recording ops into the backward graph, and saved values.
#include "lib/autograd/node.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "lib/autograd/formulas.h"

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
  if (!t.defined()) return false;
  refresh_view(t);
  return t.impl()->requires_grad || t.impl()->grad_fn;
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

// Releases a long chain of nodes without recursing once per node.
FunctionNode::~FunctionNode() {
  std::vector<std::shared_ptr<FunctionNode>> drop;
  auto take = [&drop](FunctionNode& fn) {
    for (Edge& e : fn.next)
      if (e.fn) drop.push_back(std::move(e.fn));
    for (SavedTensor& st : fn.saved)
      if (st.edge.fn) drop.push_back(std::move(st.edge.fn));
  };
  take(*this);
  while (!drop.empty()) {
    std::shared_ptr<FunctionNode> fn = std::move(drop.back());
    drop.pop_back();
    if (fn.use_count() == 1) take(*fn); // the last owner: its edges go on the list
  }
}

std::vector<std::pair<std::shared_ptr<Node>, uint32_t>> FunctionNode::next_functions() const {
  std::vector<std::pair<std::shared_ptr<Node>, uint32_t>> out;
  for (const Edge& e : next)
    out.emplace_back(e.fn, e.input_nr);
  return out;
}

void refresh_view(const Tensor& t) {
  detail::TensorImpl& impl = *t.impl();
  if (!impl.is_view || !impl.base || impl.version == impl.base->version) return;
  const detail::TensorImpl& base_impl = *impl.base;
  if (!base_impl.requires_grad && !base_impl.grad_fn) {
    impl.grad_fn = nullptr;
    impl.version = base_impl.version;
    return;
  }
  if (!GradMode::is_enabled()) return; // brought up to date when next used in grad mode
  Tensor base(impl.base);
  if (!base_impl.covers_cell())
    throw Error("a view of a tensor that was written in place is used with autograd, and its base "
                "does not cover its storage in row-major order: this is not supported; clone() "
                "the base before writing");
  impl.version = base_impl.version;
  impl.grad_fn = nullptr;
  record_strided("AsStridedBackward0", base, t, impl.strides, impl.offset);
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  refresh_view(t);
  const detail::TensorImpl& impl = *t.impl();
  if (impl.grad_fn) return {impl.grad_fn, impl.output_nr};
  if (impl.requires_grad) return {accumulator_of(t), 0};
  return {};
}

bool any_requires_grad(std::span<const Tensor> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (tracked(t)) return true;
  return false;
}

bool any_requires_grad(const Tensor& a, const Tensor& b) {
  return GradMode::is_enabled() && (tracked(a) || tracked(b));
}

void rename(const Tensor& t, const char* name) {
  if (t.impl()->grad_fn) t.impl()->grad_fn->name_ = name;
}

void set_history(const Tensor& t, const std::shared_ptr<FunctionNode>& fn, uint32_t output_nr) {
  detail::TensorImpl& impl = *t.impl();
  if (impl.retains_grad && impl.grad_fn)
    std::erase_if(impl.grad_fn->retained,
                  [&](const auto& r) { return r.second.lock() == t.impl(); });
  impl.grad_fn = fn;
  impl.output_nr = output_nr;
  // A tensor that retains its grad keeps it across in-place ops.
  if (impl.retains_grad && fn) fn->retained.emplace_back(output_nr, t.impl());
}

namespace {

// The backward formulas that hold for complex values (derivatives.cpp states the convention):
// linear maps with real coefficients (views, copies, sums, joins, selections), whose adjoint is
// the same for complex numbers, and the formulas written with conjugates. Others (the
// factorizations, the statistics, ...) refuse a complex input or result.
bool complex_ready(std::string_view name) {
  static const std::unordered_set<std::string_view> ready = {
      // linear, real coefficients
      "AddBackward0", "SubBackward0", "RsubBackward1", "NegBackward0", "SumBackward0",
      "SumBackward1", "MeanBackward0", "MeanBackward1", "CumsumBackward0", "TraceBackward0",
      "ViewBackward0", "UnsafeViewBackward0", "AliasBackward0", "PermuteBackward0",
      "ExpandBackward0", "SliceBackward0", "SelectBackward0", "SqueezeBackward0",
      "SqueezeBackward1", "SqueezeBackward2", "SqueezeBackward3", "SqueezeBackward4",
      "UnsqueezeBackward0", "UnsqueezeBackward1", "TBackward0", "TBackward1", "TransposeBackward0",
      "TransposeBackward1", "AsStridedBackward0", "AsStridedScatterBackward0", "CloneBackward0",
      "ToCopyBackward0", "CatBackward0", "StackBackward0", "FlipBackward0", "RollBackward0",
      "RepeatBackward0", "DiagonalBackward0", "DiagEmbedBackward0", "TrilBackward0",
      "TriuBackward0", "IndexBackward0", "IndexSelectBackward0", "IndexPutBackward0",
      "GatherBackward0", "ScatterBackward0", "ScatterBackward1", "ScatterAddBackward0",
      "MaskedSelectBackward0", "WhereBackward0", "MaskedFillBackward0", "MaskedFillBackward1",
      "FillBackward0", "CopySlices",
      // with conjugates
      "MulBackward0", "DivBackward0", "PowBackward0", "PowBackward1", "PowBackward2",
      "AbsBackward0", "SqrtBackward0", "RsqrtBackward0", "ReciprocalBackward0", "ExpBackward0",
      "LogBackward0", "SinBackward0", "CosBackward0", "TanBackward0", "TanhBackward0",
      "SinhBackward0", "CoshBackward0", "AsinBackward0", "AcosBackward0", "AtanBackward0",
      "AsinhBackward0", "AcoshBackward0", "AtanhBackward0", "Log2Backward0", "Log10Backward0",
      "VarBackward0", "StdBackward0", "ProdBackward0", "ProdBackward1", "CumprodBackward0",
      "SigmoidBackward0", "DotBackward0", "MvBackward0", "MmBackward0", "BmmBackward0",
      "RealBackward0", "ImagBackward0", "ConjBackward0", "AngleBackward0", "ComplexBackward0",
      "PolarBackward0", "LinalgInvExBackward0", "LinalgSolveExBackward0", "LinalgDetBackward0",
      "LinalgSlogdetBackward0", "LinalgCholeskyExBackward0", "LinalgSvdBackward0",
      "LinalgEighBackward0", "LinalgQrBackward0", "LinalgEigBackward0", "LinalgPinvBackward0",
      "LinalgCrossBackward0"};
  return ready.count(name) > 0;
}

} // namespace

void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            const std::vector<Tensor>& save, FunctionNode::Backward backward) {
  if (!any_requires_grad(inputs)) return;
  auto complex = [](const std::vector<Tensor>& ts) {
    return std::any_of(ts.begin(), ts.end(),
                       [](const Tensor& t) { return t.defined() && is_complex(t.dtype()); });
  };
  if ((complex(inputs) || complex(outputs)) && !complex_ready(name))
    throw Error(
        fmt::format("the derivative of {} is not implemented for complex tensors yet", name));
  auto fn = std::make_shared<FunctionNode>();
  fn->name_ = name;
  fn->site = ir::current_site();
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
    if (is_floating_point(outputs[i].dtype()) || is_complex(outputs[i].dtype())) {
      set_history(outputs[i], fn, static_cast<uint32_t>(i));
      // A result computed under no_grad and recorded after is no view made in no_grad mode.
      outputs[i].impl()->made_without_grad = false;
    }
  }
  fn->backward = std::move(backward);
}

} // namespace autograd
} // namespace tj
