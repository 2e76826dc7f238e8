// The autograd members of Tensor.
#include "lib/autograd/node.h"
#include "lib/core/warning.h"

namespace tj {

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  if (!defined()) return nullptr;
  autograd::refresh_view(*this); // a view of a base written since has a new history
  return impl_->grad_fn;
}

Tensor Tensor::grad() const {
  detail::check_defined(*this, "grad");
  if (!is_leaf() && !impl_->retains_grad) {
    static core::WarnOnce warn;
    warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
         "Its .grad attribute won't be populated during autograd.backward(). If you "
         "indeed want the .grad field to be populated for a non-leaf Tensor, use "
         ".retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by "
         "mistake, make sure you access the leaf Tensor instead. See "
         "github.com/pytorch/pytorch/pull/30531 for more informations.");
  }
  return impl_->grad;
}

void Tensor::set_grad(const Tensor& g) const {
  detail::check_defined(*this, "grad");
  // PyTorch's checks, in its order.
  if (g.defined() && g.dtype() != dtype())
    throw Error("assigned grad has data of a different type");
  if (g.defined() && g.device() != device())
    throw Error("assigned grad has data located on a different device");
  if (g.defined() && g.sizes() != sizes())
    throw Error("assigned grad has data of a different size");
  impl_->grad = g;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

void Tensor::retain_grad() const {
  detail::check_defined(*this, "retain_grad");
  if (!requires_grad()) throw Error("can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf() || impl_->retains_grad) return; // leaves keep their grad already
  impl_->grad_fn->retained.emplace_back(impl_->output_nr, impl_);
  impl_->retains_grad = true;
}

bool Tensor::retains_grad() const { return defined() && !is_leaf() && impl_->retains_grad; }

} // namespace tj
