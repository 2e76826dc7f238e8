// Autograd: gradient mode, the grad_fn handle, backward() and grad().
//
// Differentiable ops record, next to the lazy value they build, one node of
// the backward graph: its name (PyTorch's grad_fn name), edges to the nodes
// of its inputs and the values its vector-Jacobian product reads. Running
// the backward graph builds the gradients as lazy tensors; nothing is
// computed until a gradient's value is needed.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensorjit/tensor.h"

namespace tj {

// Whether ops record their backward nodes (thread-local, on by default).
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// torch.no_grad() and torch.enable_grad() as scope guards.
class NoGradGuard {
public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
  bool prev_;
};

class EnableGradGuard {
public:
  EnableGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

private:
  bool prev_;
};

namespace autograd {

// A node of the backward graph: what grad_fn() returns.
class Node {
public:
  virtual ~Node() = default;
  // PyTorch's name: "AddBackward0", "AccumulateGrad", ...
  virtual std::string name() const = 0;
  // The nodes the gradients of this one's inputs flow to, with the input
  // number at each (null for an input that does not require grad).
  virtual std::vector<std::pair<std::shared_ptr<Node>, uint32_t>> next_functions() const = 0;
};

// Sums the vector-Jacobian products of `tensors` with `grad_tensors` (ones
// for scalars when omitted) into the .grad of the leaves they depend on.
// retain_graph defaults to create_graph.
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

// The gradients of `outputs` with respect to `inputs`, returned rather than
// accumulated. With create_graph they are differentiable themselves.
// An input the outputs do not depend on is PyTorch's error, or an undefined
// tensor with allow_unused.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                         bool allow_unused = false);

} // namespace autograd
} // namespace tj
