// Optimizers over parameters (leaf tensors that require grad).
#pragma once
#include <vector>

#include "tensorjit/tensor.h"

namespace tj::optim {

// torch.optim.SGD's hyperparameters, set as libtorch's SGDOptions are:
// SGDOptions(0.1).momentum(0.9).nesterov(true).
struct SGDOptions {
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& lr(double v) { return lr_ = v, *this; }
  SGDOptions& momentum(double v) { return momentum_ = v, *this; }
  SGDOptions& dampening(double v) { return dampening_ = v, *this; }
  SGDOptions& weight_decay(double v) { return weight_decay_ = v, *this; }
  SGDOptions& nesterov(bool v) { return nesterov_ = v, *this; }
  SGDOptions& maximize(bool v) { return maximize_ = v, *this; }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }
  bool maximize() const { return maximize_; }

private:
  double lr_, momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false, maximize_ = false;
};

// Stochastic gradient descent, as torch.optim.SGD: with d = grad (-grad to maximize) +
// weight_decay * p, and momentum nonzero, buf = d at the first step, then
// buf = momentum * buf + (1 - dampening) * d; d = buf, or d + momentum * buf with nesterov;
// p -= lr * d.
class SGD {
public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  explicit SGD(std::vector<Tensor> params, double lr, double momentum = 0.0,
               double weight_decay = 0.0);
  // One update of every parameter that has a gradient; the new values are computed now.
  void step();
  // Clears the gradients: undefined with set_to_none (PyTorch 2's default; 1.13 zeroed them),
  // else zeroed in place, detached from any graph that made them.
  void zero_grad(bool set_to_none = true);
  const std::vector<Tensor>& params() const { return params_; }
  const SGDOptions& options() const { return options_; }

private:
  std::vector<Tensor> params_, momentum_buffers_;
  SGDOptions options_;
  bool in_place_ = false; // parameters share memory: updated one after another
};

} // namespace tj::optim
