// torch.optim.SGD.
#include <fmt/format.h>

#include <unordered_map>

#include "lib/core/warning.h"
#include "lib/frontend/overlap.h"
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
  // torch.optim.Optimizer's checks, in its order.
  if (params_.empty()) throw Error("optimizer got an empty parameter list");
  for (const Tensor& p : params_) {
    if (!p.defined())
      throw Error("optimizer can only optimize Tensors, but one of the params is NoneType");
    if (!p.is_leaf() && !p.retains_grad()) throw Error("can't optimize a non-leaf Tensor");
  }
  // Parameters in one storage (by its cell) may share memory. A parameter given twice (deprecated
  // in PyTorch) keeps a momentum buffer per place in the list, where PyTorch's loop shares one
  // from the second step on.
  std::unordered_map<const void*, std::vector<size_t>> in_cell; // the parameters in each cell
  bool duplicate = false;
  for (size_t i = 0; i < params_.size(); ++i) {
    std::vector<size_t>& before = in_cell[params_[i].impl()->cell.get()];
    for (size_t j : before) {
      duplicate |= params_[j].impl() == params_[i].impl();
      in_place_ = in_place_ || detail::overlap(params_[i], params_[j]) != detail::Overlap::None;
    }
    before.push_back(i);
  }
  static core::WarnOnce warn;
  if (duplicate)
    warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
         "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information");
}

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double weight_decay)
    : SGD(std::move(params), SGDOptions(lr).momentum(momentum).weight_decay(weight_decay)) {}

void SGD::step() {
  NoGradGuard no_grad;
  const SGDOptions& o = options_;
  // The new values are computed together (the gradients share most of their graph), then
  // written into the parameters. Parameters that share memory are updated one after another,
  // each from the values the ones before it left, as PyTorch's loop of in-place updates does.
  std::vector<Tensor> next, state;
  std::vector<size_t> which;
  auto write = [&] {
    std::vector<Tensor> all = next;
    all.insert(all.end(), state.begin(), state.end());
    tj::eval(all);
    for (size_t k = 0; k < which.size(); ++k)
      params_[which[k]].copy_(next[k]);
    next.clear(), state.clear(), which.clear();
  };
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
    if (in_place_) write();
  }
  write();
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
