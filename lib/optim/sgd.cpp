// torch.optim.SGD.
#include <fmt/format.h>

#include "lib/frontend/tensor_impl.h"
#include "tensorjit/autograd.h"
#include "tensorjit/functions.h"
#include "tensorjit/optim.h"

namespace tj::optim {

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double weight_decay)
    : params_(std::move(params)), momentum_buffers_(params_.size()), lr_(lr), momentum_(momentum),
      weight_decay_(weight_decay) {
  if (lr < 0) throw Error(fmt::format("Invalid learning rate: {}", lr));
  if (momentum < 0) throw Error(fmt::format("Invalid momentum value: {}", momentum));
  if (weight_decay < 0) throw Error(fmt::format("Invalid weight_decay value: {}", weight_decay));
  for (const Tensor& p : params_)
    if (!p.is_leaf()) throw Error("can't optimize a non-leaf Tensor");
}

void SGD::step() {
  NoGradGuard no_grad;
  // The new values are computed together (the gradients share most of their
  // graph), then become the parameters' values: no copy.
  std::vector<Tensor> next, state;
  std::vector<size_t> which;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (weight_decay_ != 0) g = g + p * weight_decay_;
    if (momentum_ != 0) {
      Tensor& buf = momentum_buffers_[i];
      buf = buf.defined() ? buf * momentum_ + g : g.clone();
      state.push_back(buf);
      g = buf;
    }
    next.push_back(p - g * lr_);
    which.push_back(i);
  }
  std::vector<Tensor> all = next;
  all.insert(all.end(), state.begin(), state.end());
  tj::eval(all);
  for (size_t k = 0; k < which.size(); ++k)
    params_[which[k]].copy_(next[k]);
}

void SGD::zero_grad() {
  for (const Tensor& p : params_)
    p.set_grad(Tensor());
}

} // namespace tj::optim
