// The backward graph: nodes recorded by differentiable ops, the values they
// save, and the helper every op calls to record itself.
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lib/frontend/tensor_impl.h"
#include "tensorjit/autograd.h"

namespace tj::autograd {

struct FunctionNode;

// Where a gradient goes: input number `input_nr` of `fn` (null: nowhere).
struct Edge {
  std::shared_ptr<FunctionNode> fn;
  uint32_t input_nr = 0;
};

// A value a backward formula reads, kept as the immutable node it was when
// the op ran (later in-place writes do not change it), with the edge its
// gradient takes when a backward with create_graph differentiates the formula.
struct SavedTensor {
  ir::NodePtr value;
  Edge edge;              // null for the node's own outputs (see is_output)
  bool is_output = false; // an output of the saving node: no reference cycle
  uint32_t output_nr = 0;
};

// The shape, dtype and device a gradient must have.
struct TensorMeta {
  Shape sizes;
  DType dtype = kFloat32;
  Device device;
};

struct FunctionNode : Node, std::enable_shared_from_this<FunctionNode> {
  // grads of the outputs (defined; zeros where none flowed) and the saved
  // values (unpacked) -> grads of the inputs (undefined: none).
  using Backward = std::function<std::vector<Tensor>(const std::vector<Tensor>& grads,
                                                     const std::vector<Tensor>& saved)>;

  std::string name_;
  std::vector<Edge> next;          // one per input
  std::vector<TensorMeta> inputs;  // what each input's gradient must be
  std::vector<TensorMeta> outputs; // to make zero gradients for outputs none reached
  std::vector<SavedTensor> saved;
  Backward backward;
  bool released = false;   // saved values freed by a backward without retain_graph
  ir::Site site = nullptr; // where the program ran the op: its gradient is built there too
  // AccumulateGrad: the leaf whose .grad receives the gradient.
  std::weak_ptr<detail::TensorImpl> leaf;
  // Non-leaf outputs that retain their grad, by output number.
  std::vector<std::pair<uint32_t, std::weak_ptr<detail::TensorImpl>>> retained;

  FunctionNode() = default;
  ~FunctionNode() override;
  FunctionNode(const FunctionNode&) = delete;
  FunctionNode& operator=(const FunctionNode&) = delete;

  std::string name() const override { return name_; }
  std::vector<std::pair<std::shared_ptr<Node>, uint32_t>> next_functions() const override;
  bool is_accumulator() const { return !leaf.expired() || name_ == "AccumulateGrad"; }
};

// The edge a gradient of `t` flows along: its grad_fn, its leaf accumulator,
// or nowhere when it does not require grad.
Edge gradient_edge(const Tensor& t);

// Records that `outputs` were computed from `inputs` by the op `name`, when
// grad mode is on and an input requires grad; otherwise does nothing.
// `save` lists what the backward formula reads (inputs, outputs or any
// other tensor); `backward` gets the output gradients and those values.
// Only floating outputs require grad. Inputs may be undefined (absent).
void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            const std::vector<Tensor>& save, FunctionNode::Backward backward);

// Whether recording would happen for these inputs.
bool any_requires_grad(std::span<const Tensor> inputs);
inline bool any_requires_grad(std::initializer_list<Tensor> inputs) {
  return any_requires_grad(std::span<const Tensor>(inputs.begin(), inputs.size()));
}
// The same for two inputs, without building a vector: every binary op asks it.
bool any_requires_grad(const Tensor& a, const Tensor& b);

// record() of braced lists, which builds nothing (no vectors, no node) unless an input requires
// grad: ops call it on every use, grad or not.
inline void record(const char* name, std::initializer_list<Tensor> inputs,
                   std::initializer_list<Tensor> outputs, std::initializer_list<Tensor> save,
                   FunctionNode::Backward backward) {
  if (!any_requires_grad(inputs)) return;
  record(name, std::vector<Tensor>(inputs), std::vector<Tensor>(outputs), std::vector<Tensor>(save),
         std::move(backward));
}

// Brings a view's history up to date after an in-place write changed its
// base's: the view becomes a strided read of the base's new value.
void refresh_view(const Tensor& t);

// Names the node that made `t` (a composite op's last primitive) after the
// composite op, as PyTorch names it.
void rename(const Tensor& t, const char* name);

// Makes `t` the result of `fn`'s output `output_nr` (for in-place ops that
// rebase a tensor's history).
void set_history(const Tensor& t, const std::shared_ptr<FunctionNode>& fn, uint32_t output_nr);

} // namespace tj::autograd
