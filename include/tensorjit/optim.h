// Optimizers over parameters (leaf tensors that require grad).
#pragma once
#include <vector>

#include "tensorjit/tensor.h"

namespace tj::optim {

// Stochastic gradient descent, as torch.optim.SGD: p -= lr * (grad + weight_decay * p), with
// momentum when nonzero (buf = momentum * buf + grad; p -= lr * buf).
class SGD {
public:
  explicit SGD(std::vector<Tensor> params, double lr, double momentum = 0.0,
               double weight_decay = 0.0);
  // One update of every parameter that has a gradient; the new values are computed now.
  void step();
  // Clears the gradients (set_to_none, as PyTorch's default).
  void zero_grad();
  const std::vector<Tensor>& params() const { return params_; }

private:
  std::vector<Tensor> params_, momentum_buffers_;
  double lr_, momentum_, weight_decay_;
};

} // namespace tj::optim
