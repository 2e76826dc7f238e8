// torch.optim.SGD.
#include <fmt/format.h>

#include "lib/frontend/tensor_impl.h"
#include "tensorjit/autograd.h"
#include "tensorjit/functions.h"
#include "tensorjit/optim.h"

namespace tj::optim {

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : params_(std::move(params)), momentum_buffers_(params_.size()), options_(options) {
  const SGDOptions& o = options_;
  if (o.lr() < 0) throw Error(fmt::format("Invalid learning rate: {}", o.lr()));
  if (o.momentum() < 0) throw Error(fmt::format("Invalid momentum value: {}", o.momentum()));
  if (o.weight_decay() < 0)
    throw Error(fmt::format("Invalid weight_decay value: {}", o.weight_decay()));
  if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
    throw Error("Nesterov momentum requires a momentum and zero dampening");
  for (const Tensor& p : params_)
    if (!p.is_leaf()) throw Error("can't optimize a non-leaf Tensor");
}

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double weight_decay)
    : SGD(std::move(params), SGDOptions(lr).momentum(momentum).weight_decay(weight_decay)) {}

void SGD::step() {
  NoGradGuard no_grad;
  const SGDOptions& o = options_;
  // The new values are computed together (the gradients share most of their
  // graph), then become the parameters' values: no copy.
  std::vector<Tensor> next, state;
  std::vector<size_t> which;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    Tensor d = p.grad();
    if (!d.defined()) continue;
    if (o.maximize()) d = -d;
    if (o.weight_decay() != 0) d = d + p * o.weight_decay();
    if (o.momentum() != 0) {
      Tensor& buf = momentum_buffers_[i];
      buf = !buf.defined()         ? d.clone()
            : o.dampening() == 0.0 ? buf * o.momentum() + d
                                   : buf * o.momentum() + d * (1 - o.dampening());
      state.push_back(buf);
      d = o.nesterov() ? d + buf * o.momentum() : buf;
    }
    next.push_back(p - d * o.lr());
    which.push_back(i);
  }
  std::vector<Tensor> all = next;
  all.insert(all.end(), state.begin(), state.end());
  tj::eval(all);
  for (size_t k = 0; k < which.size(); ++k)
    params_[which[k]].copy_(next[k]);
}

void SGD::zero_grad(bool set_to_none) {
  for (const Tensor& p : params_) {
    if (set_to_none) {
      p.set_grad(Tensor());
      continue;
    }
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.grad_fn())
      g.detach_();
    else
      g.requires_grad_(false);
    NoGradGuard no_grad;
    g.zero_();
  }
}

} // namespace tj::optim
