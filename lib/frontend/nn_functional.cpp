// nn::functional's losses with their reductions, activations with PyTorch's derivatives at their
// kinks, one_hot, embedding and dropout. Each op computes its forward from public ops without
// recording them, then records itself under PyTorch's grad_fn name with PyTorch's backward.
#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "lib/autograd/formulas.h"
#include "lib/core/warning.h"
#include "lib/frontend/promotion.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/ir/shape.h"
#include "tensorjit/autograd.h"
#include "tensorjit/functions.h"
#include "tensorjit/indexing.h"

namespace tj::nn::functional {
namespace {

namespace ag = autograd;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

enum class Reduction { None, Mean, Sum };

Reduction reduction_of(std::string_view r) {
  if (r == "none") return Reduction::None;
  if (r == "mean") return Reduction::Mean;
  if (r == "sum") return Reduction::Sum;
  throw Error(fmt::format("{} is not a valid value for reduction", r));
}

Tensor reduced(const Tensor& loss, Reduction r) {
  return r == Reduction::None ? loss : r == Reduction::Sum ? loss.sum() : loss.mean();
}

// The gradient of each element of an unreduced loss of `shape`, from the reduced loss's.
Tensor per_element(const Tensor& g, Reduction r, const Shape& shape) {
  if (r == Reduction::None) return g;
  const Tensor each = r == Reduction::Sum ? g : g / static_cast<double>(ir::numel(shape));
  return each.expand(shape);
}

// libtorch's warning where a pointwise loss's target broadcasts against its input.
void warn_if_broadcast(const Tensor& input, const Tensor& target, core::WarnOnce& warn) {
  if (input.sizes() == target.sizes()) return;
  warn(fmt::format("Using a target size (torch.Size({})) that is different to "
                   "the input size (torch.Size({})). This will likely lead to "
                   "incorrect results due to broadcasting. Please ensure they "
                   "have the same size.",
                   ir::shape_str(target.sizes()), ir::shape_str(input.sizes())));
}

void check_float(const Tensor& t, const char* kernel) {
  if (!t.is_floating_point())
    throw Error(
        fmt::format("\"{}\" not implemented for '{}'", kernel, fe::cpp_type_name(t.dtype())));
}

// A loss computed element by element from input and target (broadcast), then reduced.
// `backward(g, x, t)` gives the gradients of the input and the target from each element's.
template <typename Forward, typename Backward>
Tensor pointwise_loss(const char* name, const Tensor& input, const Tensor& target, Reduction r,
                      Forward forward, Backward backward) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = reduced(forward(input, target), r);
  }
  ag::record(name, {input, target}, {out}, {input, target},
             [r, backward](const Grads& g, const Saved& s) {
               const Shape shape = ir::broadcast_shapes(s[0].sizes(), s[1].sizes());
               auto [gx, gt] = backward(per_element(g[0], r, shape), s[0], s[1]);
               return Grads{gx, gt};
             });
  return out;
}

// An activation y = f(x) recorded with PyTorch's derivative `dx(g, x)`.
template <typename Forward, typename Backward>
Tensor activation(const char* name, const Tensor& x, Forward forward, Backward dx) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = forward(x);
  }
  ag::record(name, {x}, {out}, {x},
             [dx](const Grads& g, const Saved& s) { return Grads{dx(g[0], s[0])}; });
  return out;
}

} // namespace

// --- losses ---

Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                Caller caller) {
  detail::CallSite site(caller, "mse_loss");
  const Reduction r = reduction_of(reduction);
  static core::WarnOnce warn;
  warn_if_broadcast(input, target, warn);
  // PyTorch's kernel computes in the operands' common dtype, a real float one.
  const DType common = fe::result_type({fe::operand(input), fe::operand(target)});
  if (!is_floating_point(common))
    throw Error(fmt::format("\"mse_cpu\" not implemented for '{}'", fe::cpp_type_name(common)));
  return pointwise_loss(
      "MseLossBackward0", input, target, r,
      [](const Tensor& x, const Tensor& t) {
        Tensor d = x - t;
        return d * d;
      },
      [](const Tensor& g, const Tensor& x, const Tensor& t) {
        Tensor gx = g * 2 * (x - t);
        return std::pair{gx, -gx};
      });
}

namespace {

// The class weights along `class_dim` of a `ndim`-dim input: weight viewed as (1, C, 1, ...).
Tensor class_weights(const Tensor& weight, int64_t ndim, int64_t class_dim) {
  Shape shape(static_cast<size_t>(ndim), 1);
  shape[static_cast<size_t>(class_dim)] = weight.size(0);
  return weight.view(shape);
}

void check_label_smoothing(double label_smoothing) {
  if (label_smoothing > 1.0)
    throw Error(
        fmt::format("label_smoothing must be between 0.0 and 1.0. Got: {}", label_smoothing));
}

// -sum(weight * target * log_softmax(input)) over the classes, reduced over the other elements
// (PyTorch's loss for class probabilities: a target of the input's shape). The mean divides by
// the number of rows, whatever the weights.
Tensor cross_entropy_probabilities(const Tensor& input, const Tensor& target, int64_t class_dim,
                                   Reduction r, const Tensor& weight, double label_smoothing) {
  if (!target.is_floating_point())
    throw Error(fmt::format("Expected floating point type for target with class probabilities, "
                            "got {}",
                            fe::cpp_type_name(target.dtype())));
  const int64_t classes = input.size(class_dim);
  if (weight.defined() && (weight.dim() != 1 || weight.numel() != classes))
    throw Error(fmt::format("cross_entropy: weight tensor should be defined either for all {} "
                            "classes or no classes but got weight tensor of shape: {}",
                            classes, ir::shape_str(weight.sizes())));
  const Tensor logp = log_softmax(input, class_dim);
  Tensor smoothed = target;
  if (label_smoothing > 0) {
    check_label_smoothing(label_smoothing);
    smoothed = target * (1 - label_smoothing) + label_smoothing / static_cast<double>(classes);
  }
  Tensor terms = logp * smoothed;
  if (weight.defined()) terms = terms * class_weights(weight, input.dim(), class_dim);
  if (r == Reduction::None) return -terms.sum(class_dim);
  if (r == Reduction::Sum) return -terms.sum();
  const double rows = static_cast<double>(input.numel() / std::max<int64_t>(1, classes));
  return -terms.sum() / rows;
}

// PyTorch's nll_loss_nd checks of class-index targets against the input, in its order.
void check_class_targets(const Tensor& input, const Tensor& target, const Tensor& weight) {
  // nll_loss's message (1-d and 2-d inputs), and nll_loss2d's (the others, viewed as 4-d).
  auto check_weight = [&](bool spatial) {
    if (!weight.defined()) return;
    const int64_t classes = input.size(input.dim() == 1 ? 0 : 1);
    if (spatial ? weight.numel() != classes : weight.dim() != 1 || weight.numel() != classes)
      throw Error(spatial ? std::string("weight tensor should be defined either for all or no "
                                        "classes")
                          : fmt::format("weight tensor should be defined either for all {} "
                                        "classes or no classes but got weight tensor of shape: {}",
                                        classes, ir::shape_str(weight.sizes())));
  };
  if (input.dim() == 0) throw Error("Expected 1 or more dimensions (got 0)");
  if (input.dim() != 1 && (target.dim() == 0 || input.size(0) != target.size(0)))
    throw Error(fmt::format("Expected input batch_size ({}) to match target batch_size ({}).",
                            input.size(0), target.dim() == 0 ? 1 : target.size(0)));
  if (input.dim() <= 2) {
    if (target.dim() > 1)
      throw Error("0D or 1D target tensor expected, multi-target not supported");
    if (input.dim() == 1 && target.dim() != 0)
      throw Error(fmt::format("size mismatch (got input: {}, target: {})",
                              ir::shape_str(input.sizes()), ir::shape_str(target.sizes())));
    check_weight(false);
  } else if (input.dim() == 4) { // nll_loss2d's own checks (its message lacks a parenthesis)
    if (target.dim() != 3)
      throw Error(fmt::format("only batches of spatial targets supported (3D tensors) but got "
                              "targets of dimension: {}",
                              target.dim()));
    check_weight(true);
    if (target.size(0) != input.size(0) || target.size(1) != input.size(2) ||
        target.size(2) != input.size(3))
      throw Error(fmt::format("size mismatch (got input: {} , target: {}",
                              ir::shape_str(input.sizes()), ir::shape_str(target.sizes())));
  } else {
    Shape expected = input.sizes();
    expected.erase(expected.begin() + 1);
    if (target.sizes() != expected)
      throw Error(fmt::format("Expected target size {}, got {}", ir::shape_str(expected),
                              ir::shape_str(target.sizes())));
    check_weight(true);
  }
  // The kernel reads the weights in the input's type, then int64 targets (or uint8 ones).
  if (weight.defined() && weight.dtype() != input.dtype())
    throw Error(fmt::format("expected scalar type {} but found {}",
                            fe::cpp_type_name(input.dtype()), fe::cpp_type_name(weight.dtype())));
  if (target.dtype() != kInt64 && target.dtype() != kUInt8)
    throw Error(
        fmt::format("expected scalar type Long but found {}", fe::cpp_type_name(target.dtype())));
}

// Class-index targets as the kernels read them: int64 indices (checked against the classes),
// which of them count (not ignore_index), and indices safe to gather with.
struct ClassTargets {
  Tensor index, keep, safe;
  bool ignores = false;
};

ClassTargets class_targets(const Tensor& target, int64_t classes, int64_t ignore_index) {
  ClassTargets tg;
  tg.index = target.to(kInt64);
  for (int64_t v : tg.index.to_vector<int64_t>()) {
    if (v == ignore_index) {
      tg.ignores = true;
      continue;
    }
    if (v < 0 || v >= classes) throw Error(fmt::format("Target {} is out of bounds.", v));
  }
  tg.keep = tg.index != ignore_index;
  // Ignored targets read class 0 (any would do: what they read is masked).
  tg.safe = tg.ignores ? where(tg.keep, tg.index, zeros_like(tg.index)) : tg.index;
  return tg;
}

// The class weight of each target: none without weights, or without a class to weigh.
Tensor target_weights(const Tensor& weight, const ClassTargets& tg, int64_t classes) {
  if (!weight.defined() || classes == 0) return {};
  return weight.index_select(0, tg.safe.flatten()).view(tg.safe.sizes());
}

// What a mean over the targets divides by: the weights `w` of those counted, or their number.
Tensor counted(const ClassTargets& tg, const Tensor& w) {
  if (!w.defined()) return tg.keep.sum();
  return (tg.ignores ? where(tg.keep, w, zeros_like(w)) : w).sum();
}

// -w * logp[..., target, ...] along the class dim (w: each target's class weight, if any),
// reduced; targets equal to ignore_index count for nothing (the mean divides by what is counted:
// NaN when nothing is). Checked as check_class_targets.
Tensor nll(const Tensor& logp, const ClassTargets& tg, const Tensor& w, Reduction r) {
  const int64_t class_dim = logp.dim() == 1 ? 0 : 1, classes = logp.size(class_dim);
  // With no class at all, every target was ignored and nothing is picked.
  Tensor picked = classes == 0
                      ? zeros(tg.index.sizes(), logp.options())
                      : gather(logp, class_dim, tg.safe.unsqueeze(class_dim)).squeeze(class_dim);
  if (classes == 0) picked = picked + logp.sum(); // keeps the graph: a zero, not a constant
  Tensor losses = -picked;
  if (w.defined()) losses = losses * w;
  // An ignored target's loss is +0, as PyTorch's kernel writes it (not a negated zero).
  if (tg.ignores) losses = where(tg.keep, losses, zeros_like(losses));
  Tensor out;
  if (r == Reduction::None)
    out = losses;
  else if (r == Reduction::Sum)
    out = losses.sum();
  else if (w.defined() || tg.ignores || classes == 0)
    out = losses.sum() / counted(tg, w);
  else
    out = losses.mean();
  ag::rename(out, "NllLossBackward0");
  return out;
}

} // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                int64_t ignore_index, const Tensor& weight, Caller caller) {
  detail::CallSite site(caller, "nll_loss");
  const Reduction r = reduction_of(reduction);
  check_class_targets(input, target, weight);
  check_float(input, input.dim() <= 2 ? "nll_loss_out_frame" : "nll_loss2d_forward_out_frame");
  const int64_t classes = input.size(input.dim() == 1 ? 0 : 1);
  const ClassTargets tg = class_targets(target, classes, ignore_index);
  // nll_loss2d takes any weight of C elements.
  const Tensor flat = weight.defined() ? weight.reshape({-1}) : weight;
  return nll(input, tg, target_weights(flat, tg, classes), r);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, std::string_view reduction,
                     int64_t ignore_index, const Tensor& weight_in, double label_smoothing,
                     Caller caller) {
  detail::CallSite site(caller, "cross_entropy");
  const Reduction r = reduction_of(reduction);
  if (input.dim() == 0) throw Error("Expected 1 or more dimensions (got 0)");
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  // The probabilities of each class where the target has the input's shape; else class indices.
  if (input.sizes() == target.sizes()) {
    if (target.is_floating_point() && ignore_index >= 0)
      throw Error("ignore_index is not supported for floating point target");
    return cross_entropy_probabilities(input, target, class_dim, r, weight_in, label_smoothing);
  }
  if (label_smoothing > 0) check_label_smoothing(label_smoothing);
  // As PyTorch: log_softmax first (its dtype check speaks first), then the targets' checks.
  const Tensor logp = log_softmax(input, class_dim);
  check_class_targets(input, target, weight_in);
  // nll_loss2d takes any weight of C elements.
  const Tensor weight = weight_in.defined() ? weight_in.reshape({-1}) : weight_in;
  const int64_t classes = input.size(class_dim);
  const ClassTargets tg = class_targets(target, classes, ignore_index);
  const Tensor w = target_weights(weight, tg, classes);
  const Tensor loss = nll(logp, tg, w, r);
  if (label_smoothing <= 0) return loss;
  // PyTorch's smoothing: the loss against the uniform distribution over the classes (weighted),
  // 0 at ignored targets, reduced as the nll loss is (its mean divides by what nll's does).
  Tensor smooth = weight.defined()
                      ? -(logp * class_weights(weight, input.dim(), class_dim)).sum(class_dim)
                      : -logp.sum(class_dim);
  smooth = where(tg.keep, smooth, zeros_like(smooth));
  if (r == Reduction::Sum)
    smooth = smooth.sum();
  else if (r == Reduction::Mean)
    smooth = smooth.sum() / counted(tg, w);
  return (1 - label_smoothing) * loss + smooth * (label_smoothing / static_cast<double>(classes));
}

Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
               Caller caller) {
  detail::CallSite site(caller, "l1_loss");
  const Reduction r = reduction_of(reduction);
  static core::WarnOnce warn;
  warn_if_broadcast(input, target, warn);
  // A composite in PyTorch too: its grad_fn is the reduction's.
  return reduced((input - target).abs(), r);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                      double beta, Caller caller) {
  detail::CallSite site(caller, "smooth_l1_loss");
  const Reduction r = reduction_of(reduction);
  static core::WarnOnce warn;
  warn_if_broadcast(input, target, warn);
  if (beta < 0) throw Error("smooth_l1_loss does not support negative values for beta.");
  if (beta == 0) return reduced((input - target).abs(), r); // l1_loss, as PyTorch's
  return pointwise_loss(
      "SmoothL1LossBackward0", input, target, r,
      [beta](const Tensor& x, const Tensor& t) {
        Tensor d = x - t, a = d.abs();
        return where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta);
      },
      [beta](const Tensor& g, const Tensor& x, const Tensor& t) {
        Tensor d = x - t;
        Tensor gx = g * where(d <= -beta, full_like(d, -1.0),
                              where(d >= beta, full_like(d, 1.0), d / beta));
        return std::pair{gx, -gx};
      });
}

Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                  double delta, Caller caller) {
  detail::CallSite site(caller, "huber_loss");
  const Reduction r = reduction_of(reduction);
  static core::WarnOnce warn;
  warn_if_broadcast(input, target, warn);
  if (delta <= 0) throw Error("huber_loss does not support non-positive values for delta.");
  return pointwise_loss(
      "HuberLossBackward0", input, target, r,
      [delta](const Tensor& x, const Tensor& t) {
        Tensor d = x - t, a = d.abs();
        return where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta);
      },
      [delta](const Tensor& g, const Tensor& x, const Tensor& t) {
        Tensor gx = g * (x - t).clamp(-delta, delta);
        return std::pair{gx, -gx};
      });
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, std::string_view reduction,
                            const Tensor& weight, Caller caller) {
  detail::CallSite site(caller, "binary_cross_entropy");
  const Reduction r = reduction_of(reduction);
  if (target.sizes() != input.sizes())
    throw Error(fmt::format("Using a target size (torch.Size({})) that is different to the input "
                            "size (torch.Size({})) is deprecated. Please ensure they have the "
                            "same size.",
                            ir::shape_str(target.sizes()), ir::shape_str(input.sizes())));
  // torch.nn.functional expands the weight to its broadcast with the target (its error if they do
  // not broadcast); the kernel then weighs the loss in place, in the input's dtype.
  Tensor w;
  if (weight.defined()) {
    const Shape shape = ir::broadcast_shapes(target.sizes(), weight.sizes());
    if (shape != input.sizes())
      throw Error(fmt::format("output with shape {} doesn't match the broadcast shape {}",
                              ir::shape_str(input.sizes()), ir::shape_str(shape)));
    w = weight.to(input.dtype()).expand(shape);
  }
  check_float(input, "binary_cross_entropy");
  {
    // PyTorch's kernel checks each element as it computes (NaN fails too): here, before.
    NoGradGuard no_grad;
    if ((~((input >= 0) & (input <= 1))).any().item<bool>())
      throw Error("all elements of input should be between 0 and 1");
  }
  // The weight takes no gradient (PyTorch has no derivative for it).
  auto weighed = [w](const Tensor& e) { return w.defined() ? e * w : e; };
  return pointwise_loss(
      "BinaryCrossEntropyBackward0", input, target, r,
      [weighed](const Tensor& x, const Tensor& t) {
        // Each log is held at -100, as PyTorch's, so that a 0 or 1 gives a finite loss.
        return weighed((t - 1) * (-x).log1p().clamp_min(-100) - t * x.log().clamp_min(-100));
      },
      [weighed](const Tensor& g, const Tensor& x, const Tensor& t) {
        Tensor gx = weighed(g * (x - t) / ((1 - x) * x).clamp_min(1e-12));
        Tensor gt = weighed(g * -(x / (1 - x)).log()); // -logit(x)
        return std::pair{gx, gt};
      });
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        std::string_view reduction, const Tensor& pos_weight,
                                        const Tensor& weight, Caller caller) {
  detail::CallSite site(caller, "binary_cross_entropy_with_logits");
  const Reduction r = reduction_of(reduction);
  if (target.sizes() != input.sizes())
    throw Error(fmt::format("Target size (torch.Size({})) must be the same as input size "
                            "(torch.Size({}))",
                            ir::shape_str(target.sizes()), ir::shape_str(input.sizes())));
  // PyTorch weighs the loss in place: the weights broadcast to the input's shape, never beyond.
  for (const Tensor* w : {&pos_weight, &weight})
    if (w->defined() && ir::broadcast_shapes(input.sizes(), w->sizes()) != input.sizes())
      throw Error(fmt::format("output with shape {} doesn't match the broadcast shape {}",
                              ir::shape_str(input.sizes()),
                              ir::shape_str(ir::broadcast_shapes(input.sizes(), w->sizes()))));
  // softplus(-x) = log(1 + exp(-x)), written so that no exp overflows.
  auto softplus_neg = [](const Tensor& x) { return (-x.abs()).exp().log1p() + (-x).clamp_min(0); };
  // The weight rescales each element's loss and takes no gradient (PyTorch has no derivative
  // for it).
  const Tensor w = weight.defined() ? weight.to(input.dtype()) : weight;
  auto weighed = [w](const Tensor& e) { return w.defined() ? e * w : e; };
  if (!pos_weight.defined())
    return pointwise_loss(
        "BinaryCrossEntropyWithLogitsBackward0", input, target, r,
        [softplus_neg, weighed](const Tensor& x, const Tensor& t) {
          return weighed((1 - t) * x + softplus_neg(x));
        },
        [weighed](const Tensor& g, const Tensor& x, const Tensor& t) {
          return std::pair{weighed(g * (x.sigmoid() - t)), weighed(g * -x)};
        });
  // The positive examples weighed by pos_weight (broadcast along the last dim, the classes).
  Tensor out;
  {
    NoGradGuard no_grad;
    out = reduced(
        weighed((1 - target) * input + (1 + (pos_weight - 1) * target) * softplus_neg(input)), r);
  }
  ag::record("BinaryCrossEntropyWithLogitsBackward0", {input, target, pos_weight}, {out},
             {input, target, pos_weight},
             [r, softplus_neg, weighed](const Grads& g, const Saved& s) {
               const Tensor &x = s[0], &t = s[1], &pw = s[2];
               const Tensor ge = weighed(per_element(g[0], r, x.sizes()));
               const Tensor wt = pw * t;
               Tensor gx = ge * ((wt + 1 - t) * x.sigmoid() - wt);
               Tensor gt = ge * (-x + (pw - 1) * softplus_neg(x));
               Tensor gw = ge * t * softplus_neg(x);
               return Grads{gx, gt, gw};
             });
  return out;
}

Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction,
              bool log_target, Caller caller) {
  detail::CallSite site(caller, "kl_div");
  const bool batchmean = reduction == "batchmean";
  const Reduction r = batchmean ? Reduction::Sum : reduction_of(reduction);
  if (r == Reduction::Mean) {
    static core::WarnOnce warn;
    warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
         "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
         "'mean' will be changed to behave the same as 'batchmean' in the next major release.");
  }
  if (input.is_complex() || target.is_complex())
    throw Error("kl_div: Complex inputs not supported.");
  if (!input.is_floating_point() || !target.is_floating_point())
    throw Error("kl_div: Integral inputs not supported.");
  // A composite, as PyTorch's: its grad_fn is the last op's. xlogy(t, t) is 0 where t is 0.
  Tensor loss;
  if (log_target) {
    loss = target.exp() * (target - input);
  } else {
    const Tensor t_log_t = where(target == 0, zeros_like(target), target * target.log());
    loss = t_log_t - target * input;
  }
  Tensor out = reduced(loss, r);
  if (batchmean && input.dim() != 0) out = out / static_cast<double>(input.size(0));
  return out;
}

// --- activations ---

Tensor leaky_relu(const Tensor& x, double negative_slope, Caller caller) {
  detail::CallSite site(caller, "leaky_relu");
  check_float(x, "leaky_relu_cpu");
  return activation(
      "LeakyReluBackward0", x,
      [negative_slope](const Tensor& v) { return where(v > 0, v, v * negative_slope); },
      [negative_slope](const Tensor& g, const Tensor& v) {
        return where(v > 0, g, g * negative_slope);
      });
}

Tensor elu(const Tensor& x, double alpha, Caller caller) {
  detail::CallSite site(caller, "elu");
  check_float(x, "elu_cpu");
  // At 0 the derivative is the exponential side's, alpha, as PyTorch's elu_backward.
  return activation(
      "EluBackward0", x,
      [alpha](const Tensor& v) { return where(v > 0, v, (v.exp() - 1) * alpha); },
      [alpha](const Tensor& g, const Tensor& v) { return where(v > 0, g, g * alpha * v.exp()); });
}

Tensor silu(const Tensor& x, Caller caller) {
  detail::CallSite site(caller, "silu");
  check_float(x, "silu_cpu");
  return activation(
      "SiluBackward0", x, [](const Tensor& v) { return v * v.sigmoid(); },
      [](const Tensor& g, const Tensor& v) {
        Tensor s = v.sigmoid();
        return g * s * (1 + v * (1 - s));
      });
}

Tensor softplus(const Tensor& x, double beta, double threshold, Caller caller) {
  detail::CallSite site(caller, "softplus");
  check_float(x, "softplus_cpu");
  // Above the threshold (in x * beta) the function is x itself, its derivative 1.
  return activation(
      "SoftplusBackward0", x,
      [beta, threshold](const Tensor& v) {
        Tensor vb = v * beta;
        return where(vb > threshold, v, vb.exp().log1p() / beta);
      },
      [beta, threshold](const Tensor& g, const Tensor& v) {
        Tensor vb = v * beta, z = vb.exp();
        return where(vb > threshold, g, g * z / (z + 1));
      });
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val, Caller caller) {
  detail::CallSite site(caller, "hardtanh");
  if (x.dtype() == kBool) throw Error("Bool inputs not supported for hardtanh");
  // The derivative is 0 at the bounds too, as PyTorch's hardtanh_backward.
  return activation(
      "HardtanhBackward0", x, [=](const Tensor& v) { return v.clamp(min_val, max_val); },
      [=](const Tensor& g, const Tensor& v) {
        return where((v <= min_val) | (v >= max_val), zeros_like(g), g);
      });
}

// --- indices ---

Tensor one_hot(const Tensor& t, int64_t num_classes, Caller caller) {
  detail::CallSite site(caller, "one_hot");
  if (t.dtype() != kInt64) throw Error("one_hot is only applicable to index tensor.");
  if (t.numel() == 0 && num_classes <= 0)
    throw Error("Can not infer total number of classes from empty tensor.");
  if (t.numel() > 0) {
    const Tensor least = t.min(), top_t = t.max();
    tj::eval({least, top_t}); // one pass for both
    if (least.item<int64_t>() < 0) throw Error("Class values must be non-negative.");
    const int64_t top = top_t.item<int64_t>();
    if (num_classes == -1)
      num_classes = top + 1;
    else if (top >= num_classes)
      throw Error("Class values must be smaller than num_classes.");
  }
  Tensor classes = arange(num_classes, TensorOptions().dtype(kInt64).device(t.device()));
  return (t.unsqueeze(-1) == classes).to(kInt64);
}

Tensor embedding(const Tensor& input, const Tensor& weight, Caller caller) {
  detail::CallSite site(caller, "embedding");
  if (weight.dim() != 2) throw Error("'weight' must be 2-D");
  if (input.dtype() != kInt64 && input.dtype() != kInt32)
    throw Error(fmt::format("Expected tensor for argument #1 'indices' to have one of the "
                            "following scalar types: Long, Int; but got {} instead (while "
                            "checking arguments for embedding)",
                            fe::legacy_type_name(input.dtype())));
  Shape out = input.sizes();
  out.push_back(weight.size(1));
  Tensor rows = weight.index_select(0, input.reshape({-1}));
  Tensor y = rows.view(out);
  ag::rename(y, "EmbeddingBackward0");
  return y;
}

Tensor dropout(const Tensor& x, double p, bool training, Caller caller) {
  detail::CallSite site(caller, "dropout");
  if (p < 0 || p > 1)
    throw Error(fmt::format("dropout probability has to be between 0 and 1, but got {}", p));
  if (!training || p == 0) return x;
  // As PyTorch's CPU path: a Bernoulli(1 - p) mask scaled by 1 / (1 - p), one multiply.
  if (p == 1) return x * zeros_like(x);
  Tensor keep = (rand_like(x, TensorOptions().dtype(fe::float_accumulator(x.dtype()))) >= p);
  return x * (keep.to(x.dtype()) / (1 - p));
}

} // namespace tj::nn::functional
