// nn::functional's losses and normalizations, optim::SGD's options, and the autograd API's
// edges, against PyTorch 1.13's values, grad_fn names, messages and order of checks.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cmath>
#include <functional>
#include <string>

#include "lib/core/warning.h"
#include "test/support/error_of.h"
#include "test/support/stderr_of.h"

using namespace tj;
using tj::test::error_of;
using tj::test::stderr_of;
namespace F = tj::nn::functional;

namespace {
TensorOptions f64() { return TensorOptions().dtype(kFloat64); }
} // namespace

TEST_CASE("layer_norm checks normalized_shape, weight and bias as PyTorch", "[nn]") {
  Tensor x = ones({2, 4});
  CHECK(error_of([&] { F::layer_norm(x, {}); }) ==
        "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
        "element, but got normalized_shape = []");
  CHECK(error_of([&] { F::layer_norm(x, {4}, tensor({2.0})); }) ==
        "Expected weight to be of same shape as normalized_shape, but got weight of shape [1] and "
        "normalized_shape = [4]");
  CHECK(error_of([&] {
          F::layer_norm(x, {4}, ones({4}), ones({2, 4}));
        }) ==
        "Expected bias to be of same shape as normalized_shape, but got bias of shape [2, 4] and "
        "normalized_shape = [4]");
  // Weight and bias first, then the input.
  CHECK(error_of([&] { F::layer_norm(x, {3}, ones({4})); }).rfind("Expected weight", 0) == 0);
  CHECK(error_of([&] { F::layer_norm(x, {3}); }) ==
        "Given normalized_shape=[3], expected input with shape [*, 3], but got input of "
        "size[2, 4]");
}

TEST_CASE("softmax and log_softmax check dim on 0-d tensors and refuse complex", "[nn]") {
  const std::string range =
      "Dimension out of range (expected to be in range of [-1, 0], but got 5)";
  CHECK(error_of([] { F::log_softmax(scalar_tensor(3.0), 5); }) == range);
  CHECK(error_of([] { F::softmax(scalar_tensor(3.0), 5); }) == range);
  CHECK(F::log_softmax(scalar_tensor(3.0), -1).item<double>() == 0.0);
  Tensor c = complex(tensor({1.0, 2.0}), tensor({0.5, -1.0}));
  CHECK(error_of([&] { F::softmax(c, 0); }) ==
        "\"softmax_lastdim_kernel_impl\" not implemented for 'ComplexFloat'");
  CHECK(error_of([&] { F::relu(c); }) == "clamp is not supported for complex types");
}

TEST_CASE("mse_loss rejects non-float dtypes and warns when shapes broadcast", "[nn]") {
  CHECK(error_of([] {
          F::mse_loss(tensor({1, 2}), tensor({1, 3}));
        }) == "\"mse_cpu\" not implemented for 'Long'");
  CHECK(error_of([] {
          F::mse_loss(tensor({true, false}), tensor({true, true}));
        }) == "\"mse_cpu\" not implemented for 'Bool'");
  Tensor c = complex(tensor({1.0, 2.0}), tensor({0.5, -1.0}));
  CHECK(error_of([&] { F::mse_loss(c, zeros_like(c)); }) ==
        "\"mse_cpu\" not implemented for 'ComplexFloat'");
  // An integer operand against a float one computes in float.
  CHECK(F::mse_loss(tensor({1, 2}), tensor({1.0f, 4.0f})).item<double>() == 2.0);
  core::reset_warnings(); // an earlier test may have shown it
  const std::string warned = stderr_of([] { F::mse_loss(ones({2, 3}), ones({3})).item<double>(); });
  CHECK(warned ==
        "UserWarning: Using a target size (torch.Size([3])) that is different to the input size "
        "(torch.Size([2, 3])). This will likely lead to incorrect results due to broadcasting. "
        "Please ensure they have the same size.\n");
  CHECK(stderr_of([] { F::mse_loss(ones({2, 3}), ones({3})); }).empty()); // once
}

TEST_CASE("cross_entropy takes every input rank PyTorch does", "[nn]") {
  // (C) with a 0-d target: -log_softmax(x)[t].
  Tensor x1 = tensor({1.0, 2.0, 3.0}, f64());
  CHECK(F::cross_entropy(x1, scalar_tensor(1, kInt64)).item<double>() ==
        Approx(std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 2.0).epsilon(1e-12));
  // (N, C, d): the mean over N and d; zeros give log(C).
  CHECK(F::cross_entropy(zeros({2, 3, 4}), zeros({2, 4}, kInt64)).item<double>() ==
        Approx(std::log(3.0)));
  CHECK(F::cross_entropy(zeros({2, 3, 4, 5}, requires_grad()), zeros({2, 4, 5}, kInt64)).str() ==
        "tensor(1.0986, grad_fn=<NllLossBackward0>)");
  // (N, C, d) against the (N, C) ones moved: the same loss.
  Tensor x3 = randn({2, 3, 4}, f64());
  Tensor t3 = randint(0, 3, {2, 4});
  Tensor flat = x3.permute({0, 2, 1}).reshape({8, 3});
  CHECK(F::cross_entropy(x3, t3).item<double>() ==
        Approx(F::cross_entropy(flat, t3.reshape({8})).item<double>()).epsilon(1e-12));
  // uint8 targets are class indices too.
  CHECK(F::cross_entropy(x1.unsqueeze(0), tensor({2}).to(kUInt8)).item<double>() ==
        Approx(std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0).epsilon(1e-12));
}

TEST_CASE("cross_entropy with class probabilities", "[nn]") {
  Tensor x = tensor({{1.0, 2.0, 3.0}, {1.0, -1.0, 0.5}}, f64().requires_grad(true));
  Tensor p = tensor({{0.2, 0.3, 0.5}, {1.0, 0.0, 0.0}}, f64());
  Tensor loss = F::cross_entropy(x, p);
  CHECK(loss.grad_fn()->name() == "DivBackward0");
  Tensor expect = -(F::log_softmax(x.detach(), 1) * p).sum() / 2;
  CHECK(loss.item<double>() == Approx(expect.item<double>()).epsilon(1e-14));
  loss.backward();
  // d/dx = (softmax(x) - p) / N.
  std::vector<double> g = x.grad().to_vector<double>();
  std::vector<double> want = ((F::softmax(x.detach(), 1) - p) / 2).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    CHECK(g[i] == Approx(want[i]).margin(1e-14));
  CHECK(error_of([] {
          F::cross_entropy(ones({2, 2}), tensor({{0, 1}, {1, 0}}));
        }) == "Expected floating point type for target with class probabilities, got Long");
}

TEST_CASE("cross_entropy checks in PyTorch's order with its messages", "[nn]") {
  CHECK(error_of([] {
          F::cross_entropy(zeros({3, 3}), tensor({{0}, {1}, {2}}));
        }) == "0D or 1D target tensor expected, multi-target not supported");
  // The batch size before the target's dtype; log_softmax's dtype check before both.
  CHECK(error_of([] {
          F::cross_entropy(zeros({3, 3}), tensor({0, 2}).to(kInt32));
        }) == "Expected input batch_size (3) to match target batch_size (2).");
  CHECK(error_of([] {
          F::cross_entropy(zeros({3, 3}), tensor({0, 2, 1}).to(kInt32));
        }) == "expected scalar type Long but found Int");
  CHECK(error_of([] {
          F::cross_entropy(tensor({{1, 2}, {3, 4}}), tensor({0, 5}));
        }) == "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'");
  CHECK(error_of([] {
          F::cross_entropy(zeros({2, 3}), tensor({0, 5}));
        }) == "Target 5 is out of bounds.");
  CHECK(error_of([] {
          F::cross_entropy(zeros({3}), tensor({0, 1}));
        }) == "size mismatch (got input: [3], target: [2])");
  CHECK(error_of([] {
          F::cross_entropy(zeros({2, 3, 4}), zeros({2, 5}, kInt64));
        }) == "Expected target size [2, 4], got [2, 5]");
  CHECK(error_of([] {
          F::cross_entropy(zeros({2, 3, 4, 5}), zeros({2, 4, 4}, kInt64));
        }) == "size mismatch (got input: [2, 3, 4, 5] , target: [2, 4, 4]");
  CHECK(error_of([] { F::cross_entropy(scalar_tensor(1.0), scalar_tensor(0, kInt64)); }) ==
        "Expected 1 or more dimensions (got 0)");
  // No class at all, every target ignored: a mean of none.
  CHECK(std::isnan(F::cross_entropy(zeros({3, 0}), tensor({-100, -100, -100})).item<double>()));
}

TEST_CASE("optim::SGD follows torch.optim.SGD: momentum, weight decay, dampening, nesterov and "
          "maximize",
          "[autograd]") {
  // Variant 3: momentum and weight decay alone, through the positional constructor.
  for (int variant = 0; variant < 4; ++variant) {
    auto opts = optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01);
    if (variant == 0) opts.dampening(0.3);
    if (variant == 1) opts.nesterov(true);
    if (variant == 2) opts.maximize(true);
    Tensor p = tensor({1.0, -2.0}, f64().requires_grad(true));
    optim::SGD opt = variant == 3 ? optim::SGD({p}, 0.1, 0.9, 0.01) : optim::SGD({p}, opts);
    std::vector<double> v{1.0, -2.0}, buf{0, 0};
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      (p * p * p).sum().backward(); // grad 3p^2
      opt.step();
      for (size_t i = 0; i < 2; ++i) {
        double d = (variant == 2 ? -1 : 1) * 3 * v[i] * v[i] + 0.01 * v[i];
        buf[i] = step == 0 ? d : 0.9 * buf[i] + (variant == 0 ? 0.7 : 1.0) * d;
        v[i] -= 0.1 * (variant == 1 ? d + 0.9 * buf[i] : buf[i]);
      }
      std::vector<double> got = p.to_vector<double>();
      CHECK(got[0] == Approx(v[0]).epsilon(1e-14));
      CHECK(got[1] == Approx(v[1]).epsilon(1e-14));
    }
  }
  Tensor p = ones({2}, requires_grad());
  CHECK(error_of([&] { optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)); }) ==
        "Nesterov momentum requires a momentum and zero dampening");
}

TEST_CASE("optim::SGD zero_grad zeroes in place without set_to_none", "[autograd]") {
  Tensor p = tensor({1.0, 2.0}, f64().requires_grad(true));
  optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.1));
  (p * p).sum().backward();
  opt.step(); // p = [0.79, 1.58]
  Tensor held = p.grad();
  opt.zero_grad(false);
  CHECK(held.to_vector<double>() == std::vector<double>{0, 0}); // the same tensor, zeroed
  opt.step(); // the decay and momentum still move p: buf = 0.9 * [2.1, 4.2] + 0.1 p
  std::vector<double> got = p.to_vector<double>();
  CHECK(got[0] == Approx(0.79 - 0.1 * (0.9 * 2.1 + 0.1 * 0.79)).epsilon(1e-14));
  CHECK(got[1] == Approx(1.58 - 0.1 * (0.9 * 4.2 + 0.1 * 1.58)).epsilon(1e-14));
  opt.zero_grad();
  CHECK_FALSE(p.grad().defined());
}

TEST_CASE("optim::SGD checks its parameters as torch.optim.Optimizer, and updates those that "
          "share memory one after another",
          "[autograd]") {
  CHECK(error_of([] { optim::SGD({}, 0.1); }) == "optimizer got an empty parameter list");
  CHECK(error_of([] { optim::SGD({Tensor()}, 0.1); }) ==
        "optimizer can only optimize Tensors, but one of the params is NoneType");
  Tensor w = ones({2}, requires_grad());
  CHECK(error_of([&] { optim::SGD({w * 2}, 0.1); }) == "can't optimize a non-leaf Tensor");
  Tensor kept = w * 2; // a non-leaf that retains its gradient is a parameter
  kept.retain_grad();
  optim::SGD by_kept({kept}, 0.5);
  (kept * kept).sum().backward();
  by_kept.step();
  CHECK(kept.to_vector<float>() == std::vector<float>{0, 0}); // 2 - 0.5 * 4
  // A view of another parameter: its update sees the one before it, as PyTorch's loop of
  // add_ calls does ([1, 2, 3, 4] - 1, then the first two - 10).
  Tensor base = tensor({1.0, 2.0, 3.0, 4.0}, f64().requires_grad(true));
  Tensor v = base.detach().narrow(0, 0, 2);
  v.requires_grad_();
  optim::SGD shared({base, v}, 1.0);
  base.set_grad(ones({4}, f64()));
  v.set_grad(full({2}, 10.0, f64()));
  shared.step();
  CHECK(base.to_vector<double>() == std::vector<double>{-10, -9, 2, 3});
  // The same parameter twice: updated twice, with PyTorch's warning.
  Tensor a = tensor({1.0, 2.0}, f64().requires_grad(true));
  std::string warned = stderr_of([&] { optim::SGD twice({a, a}, 1.0); });
  CHECK(warned.find("UserWarning: optimizer contains a parameter group with duplicate "
                    "parameters; in future, this will cause an error") != std::string::npos);
  optim::SGD twice({a, a}, 1.0);
  a.set_grad(ones({2}, f64()));
  twice.step();
  CHECK(a.to_vector<double>() == std::vector<double>{-1, 0});
}

TEST_CASE("numpy() refuses a tensor that requires grad while grad mode is on", "[autograd]") {
  Tensor p = ones({2}, requires_grad());
  CHECK(error_of([&] { p.numpy(); }) == "Can't call numpy() on Tensor that requires grad. Use "
                                        "tensor.detach().numpy() instead.");
  CHECK(p.detach().numpy().shape == Shape{2});
  NoGradGuard no_grad;
  CHECK(p.numpy().shape == Shape{2});
}

TEST_CASE("autograd: roots are checked as PyTorch's backward checks them", "[autograd]") {
  Tensor x = ones({3}, requires_grad());
  CHECK(error_of([&] {
          autograd::backward({x * 2, x * 3}, {ones({3})});
        }) == "got 2 tensors and 1 gradients");
  // Every gradient first (given or implicit), then whether each root has a history.
  CHECK(error_of([] { ones({3}).backward(ones({2})); }) ==
        "Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and output[0] has a "
        "shape of torch.Size([3]).");
  CHECK(error_of([&] {
          autograd::backward({ones({}), x * 2});
        }) == "grad can be implicitly created only for scalar outputs");
  CHECK(error_of([&] {
          autograd::backward({ones({}), (x * 2).sum()});
        }) == "element 0 of tensors does not require grad and does not have a grad_fn");
}

TEST_CASE("autograd: gradients of broadcast inputs are summed back by the engine", "[autograd]") {
  Tensor a = tensor({1.0, 2.0}, f64()).reshape({2, 1}).requires_grad_();
  Tensor b = tensor({0.5, -1.0, 3.0}, f64()).requires_grad_();
  complex(a, b).abs().sum().backward();
  REQUIRE(a.grad().sizes() == Shape{2, 1});
  std::vector<double> ga = a.grad().to_vector<double>();
  double want = 0;
  for (double bi : {0.5, -1.0, 3.0})
    want += 1.0 / std::hypot(1.0, bi);
  CHECK(ga[0] == Approx(want).epsilon(1e-14));
  CHECK(b.grad().sizes() == Shape{3});
}

TEST_CASE("autograd: leaves, views and in-place writes as PyTorch", "[autograd]") {
  // A leaf that stopped requiring grad takes no gradient.
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = x * 2;
  x.requires_grad_(false);
  y.sum().backward();
  CHECK_FALSE(x.grad().defined());
  // Views cannot be detached in place.
  Tensor w = tensor({1.0, 2.0, 3.0}, requires_grad());
  Tensor v = (w * 1).slice(0, 0, 2);
  CHECK(error_of([&] {
          v.detach_();
        }).rfind("Can't detach views in-place. Use detach() instead.", 0) == 0);
  Tensor int_view = tensor({1, 2}).slice(0, 0, 1);
  CHECK(error_of([&] { int_view.detach_(); }) == "(no error)"); // it has no history to leave
  // grad_fn of a view whose base was written since is the new history, however it is asked.
  Tensor base = w * 1;
  Tensor view = base.slice(0, 0, 2);
  base.mul_(2);
  CHECK(view.grad_fn()->name() == "AsStridedBackward0");
  // Plain writes are named after their op.
  Tensor z = w * 1;
  z.zero_();
  CHECK(z.grad_fn()->name() == "ZeroBackward0");
  z.fill_(2.0);
  CHECK(z.grad_fn()->name() == "FillBackward0");
  z.copy_(w * 2);
  CHECK(z.grad_fn()->name() == "CopyBackwards");
  z.sum().backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{2, 2, 2});
  z = w * 1;
  z.copy_(zeros({3}));
  CHECK(z.grad_fn()->name() == "CopyBackwards");
  z.fill_(scalar_tensor(1.5, TensorOptions().requires_grad(true)));
  CHECK(z.grad_fn()->name() == "FillBackward1");
}

TEST_CASE("autograd: assigning a grad checks dtype, then device, then size", "[autograd]") {
  Tensor x = ones({3}, requires_grad());
  CHECK(error_of([&] { x.set_grad(ones({2}, f64())); }) ==
        "assigned grad has data of a different type");
  CHECK(error_of([&] { x.set_grad(ones({2})); }) == "assigned grad has data of a different size");
}

TEST_CASE("losses: values, reductions and grad_fn names as PyTorch's", "[nn]") {
  Tensor x = tensor({{0.5, -1.0, 2.0}, {1.5, 0.2, -0.3}}, f64().requires_grad(true));
  Tensor y = tensor({{0.0, -0.2, 0.5}, {1.0, 1.0, -2.0}}, f64());
  std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  auto mean_of = [&](auto f) {
    double s = 0;
    for (size_t i = 0; i < xv.size(); ++i)
      s += f(xv[i], yv[i]);
    return s / static_cast<double>(xv.size());
  };
  CHECK(F::smooth_l1_loss(x, y).item<double>() == Approx(mean_of([](double a, double b) {
                                                    double d = std::abs(a - b);
                                                    return d < 1 ? 0.5 * d * d : d - 0.5;
                                                  })).epsilon(1e-14));
  CHECK(F::huber_loss(x, y, "mean", 0.5).item<double>() == Approx(mean_of([](double a, double b) {
                                                             double d = std::abs(a - b);
                                                             return d < 0.5 ? 0.5 * d * d
                                                                            : 0.5 * (d - 0.25);
                                                           })).epsilon(1e-14));
  CHECK(F::l1_loss(x, y, "sum").item<double>() ==
        Approx(6 * mean_of([](double a, double b) { return std::abs(a - b); })).epsilon(1e-14));
  CHECK(F::mse_loss(x, y, "none").sizes() == Shape{2, 3});
  CHECK(F::mse_loss(x, y).grad_fn()->name() == "MseLossBackward0");
  CHECK(F::mse_loss(x, y, "none").grad_fn()->name() == "MseLossBackward0");
  CHECK(F::smooth_l1_loss(x, y, "sum").grad_fn()->name() == "SmoothL1LossBackward0");
  CHECK(F::huber_loss(x, y).grad_fn()->name() == "HuberLossBackward0");
  CHECK(F::l1_loss(x, y).grad_fn()->name() == "MeanBackward0");
  Tensor p = x.sigmoid().detach().requires_grad_(), t = (y > 0).to(kFloat64);
  CHECK(F::binary_cross_entropy(p, t).grad_fn()->name() == "BinaryCrossEntropyBackward0");
  CHECK(F::binary_cross_entropy_with_logits(x, t).grad_fn()->name() ==
        "BinaryCrossEntropyWithLogitsBackward0");
  // The two agree where the probabilities are the logits' sigmoid.
  CHECK(F::binary_cross_entropy(p, t).item<double>() ==
        Approx(F::binary_cross_entropy_with_logits(x, t).item<double>()).epsilon(1e-12));
  // A 0 or 1 probability gives a finite loss: each log is held at -100.
  CHECK(F::binary_cross_entropy(tensor({0.0, 1.0}, f64()), tensor({1.0, 0.0}, f64()))
            .item<double>() == 100.0);
  // Large logits do not overflow.
  CHECK(F::binary_cross_entropy_with_logits(tensor({1000.0, -1000.0}, f64()),
                                            tensor({0.0, 1.0}, f64()), "sum")
            .item<double>() == 2000.0);
  // pos_weight weighs the positives: w * softplus(-x) where t = 1.
  CHECK(F::binary_cross_entropy_with_logits(tensor({0.0}, f64()), tensor({1.0}, f64()), "mean",
                                            tensor({3.0}, f64()))
            .item<double>() == Approx(3 * std::log(2.0)).epsilon(1e-14));
  Tensor logp = F::log_softmax(x, 1);
  Tensor target = tensor({2, -100});
  CHECK(F::nll_loss(logp, target).item<double>() ==
        Approx(-logp.to_vector<double>()[2]).epsilon(1e-14));
  CHECK(F::nll_loss(logp, target, "none").to_vector<double>() ==
        std::vector<double>{-logp.to_vector<double>()[2], 0.0});
  // An ignored target's loss is +0, not a negated zero.
  CHECK(F::nll_loss(logp.detach(), tensor({-100}).expand({2}), "none").str() ==
        "tensor([0., 0.], dtype=torch.float64)");
  CHECK(error_of([&] { F::cross_entropy(x, F::softmax(x, 1), "mean", 1); }) ==
        "ignore_index is not supported for floating point target");
  CHECK(error_of([&] {
          F::binary_cross_entropy_with_logits(x, x, "mean", ones({4, 2, 3}, f64()));
        }) == "output with shape [2, 3] doesn't match the broadcast shape [4, 2, 3]");
  // Another ignore_index: the first row's target is the ignored one now.
  CHECK(F::nll_loss(logp, tensor({2, 0}), "mean", 2).item<double>() ==
        Approx(-logp.to_vector<double>()[3]).epsilon(1e-14));
  CHECK(F::nll_loss(logp, target).grad_fn()->name() == "NllLossBackward0");
  CHECK(F::cross_entropy(x, tensor({2, 0}), "sum").item<double>() ==
        Approx(-logp.to_vector<double>()[2] - logp.to_vector<double>()[3]).epsilon(1e-14));
}

TEST_CASE("losses: class weights, label smoothing, element weights and kl_div", "[nn]") {
  // Log-probabilities written out, so the weighted sums are exact: targets 0 and 2.
  Tensor logp = tensor({{-1.0, -2.0, -3.0}, {-0.5, -1.5, -2.5}}, f64());
  Tensor w = tensor({1.0, 2.0, 3.0}, f64()), target = tensor({0, 2});
  CHECK(F::nll_loss(logp, target, "none", -100, w).to_vector<double>() ==
        std::vector<double>{1.0, 7.5});
  CHECK(F::nll_loss(logp, target, "sum", -100, w).item<double>() == 8.5);
  // The mean divides by the weights of the targets counted: (1 + 7.5) / (1 + 3).
  CHECK(F::nll_loss(logp, target, F::NLLLossFuncOptions().weight(w)).item<double>() == 2.125);
  CHECK(F::nll_loss(logp, target, "mean", 2, w).item<double>() == 1.0);
  // (N, C, d) inputs weigh the same way.
  CHECK(F::nll_loss(logp.unsqueeze(2), target.unsqueeze(1), "mean", -100, w).item<double>() ==
        2.125);

  // Label smoothing: (1 - e) * nll + e / C * the loss against the uniform distribution, its mean
  // over the targets counted (weighed as nll's).
  Tensor x = tensor({{0.3, -1.2, 2.0}, {1.1, 0.4, -0.7}, {0.0, 0.5, 0.25}}, f64());
  std::vector<double> lp = F::log_softmax(x, 1).to_vector<double>();
  const std::vector<int64_t> t = {2, -100, 1};
  const std::vector<double> wv = {0.5, 2.0, 1.5};
  const double e = 0.2;
  double nll = 0, smooth = 0, counted = 0;
  for (size_t i = 0; i < 3; ++i) {
    if (t[i] == -100) continue;
    nll -= wv[static_cast<size_t>(t[i])] * lp[i * 3 + static_cast<size_t>(t[i])];
    for (size_t c = 0; c < 3; ++c)
      smooth -= wv[c] * lp[i * 3 + c];
    counted += wv[static_cast<size_t>(t[i])];
  }
  const Tensor wt = tensor(wv, f64()), tt = tensor(t);
  CHECK(F::cross_entropy(x, tt, "mean", -100, wt, e).item<double>() ==
        Approx((1 - e) * nll / counted + e / 3 * smooth / counted).epsilon(1e-14));
  CHECK(F::cross_entropy(x, tt, "sum", -100, wt, e).item<double>() ==
        Approx((1 - e) * nll + e / 3 * smooth).epsilon(1e-14));
  CHECK(F::cross_entropy(x, tt, "none", -100, wt, e).to_vector<double>()[1] == 0.0);
  CHECK(F::cross_entropy(x.requires_grad_(), tt, "mean", -100, wt, e).grad_fn()->name() ==
        "AddBackward0");
  // Class probabilities: the target mixed with the uniform distribution, weighed per class; the
  // mean is over the rows whatever the weights.
  Tensor probs = F::softmax(x.detach() * 2, 1);
  std::vector<double> pv = probs.to_vector<double>();
  double soft = 0;
  for (size_t i = 0; i < 9; ++i)
    soft -= wv[i % 3] * ((1 - e) * pv[i] + e / 3) * lp[i];
  CHECK(F::cross_entropy(x, probs, F::CrossEntropyFuncOptions().weight(wt).label_smoothing(e))
            .item<double>() == Approx(soft / 3).epsilon(1e-14));

  // Element weights of the binary losses, broadcast to the target's shape.
  Tensor p = tensor({{0.2, 0.9}, {0.6, 0.5}}, f64()), y = tensor({{0.0, 1.0}, {1.0, 0.0}}, f64());
  Tensor ew = tensor({2.0, 0.5}, f64());
  CHECK(F::binary_cross_entropy(p, y, "none", ew).to_vector<double>() ==
        (F::binary_cross_entropy(p, y, "none") * ew).to_vector<double>());
  CHECK(F::binary_cross_entropy_with_logits(p, y, "sum", {}, ew).item<double>() ==
        Approx((F::binary_cross_entropy_with_logits(p, y, "none") * ew).sum().item<double>())
            .epsilon(1e-15));

  // kl_div: target * (log(target) - input), 0 where the target is 0; batchmean divides by N.
  Tensor in = tensor({{-1.0, -2.0}, {-0.5, -3.0}}, f64()),
         tg = tensor({{0.25, 0.75}, {0.0, 1.0}}, f64());
  const double k0 = 0.25 * (std::log(0.25) + 1), k1 = 0.75 * (std::log(0.75) + 2), k3 = 3.0;
  CHECK(F::kl_div(in, tg, "sum").item<double>() == Approx(k0 + k1 + k3).epsilon(1e-15));
  CHECK(F::kl_div(in, tg, "batchmean").item<double>() == Approx((k0 + k1 + k3) / 2).epsilon(1e-15));
  CHECK(F::kl_div(in, tg, "none").to_vector<double>()[2] == 0.0);
  // With log_target, exp(target) * (target - input): a target of log(0) gives NaN, as PyTorch's.
  Tensor half = full({2, 2}, 0.5, f64());
  CHECK(F::kl_div(in, half.log(), "sum", true).item<double>() ==
        Approx(F::kl_div(in, half, "sum").item<double>()).epsilon(1e-15));
  CHECK(std::isnan(F::kl_div(in, tg.log(), "sum", true).item<double>()));
  const std::string warned = stderr_of([&] {
    core::reset_warnings();
    CHECK(F::kl_div(in, tg).item<double>() == Approx((k0 + k1 + k3) / 4).epsilon(1e-15));
  });
  CHECK(warned.find("reduction: 'mean' divides the total loss by both the batch size and the "
                    "support size.") != std::string::npos);
  CHECK(F::kl_div(in.requires_grad_(), tg, "none").grad_fn()->name() == "SubBackward0");

  // A weight that would grow the loss is refused; a weight of another dtype keeps the input's.
  CHECK(error_of([&] {
          F::binary_cross_entropy(p[0], y[0], "mean", ones({2, 2}, f64()));
        }) == "output with shape [2] doesn't match the broadcast shape [2, 2]");
  CHECK(F::binary_cross_entropy(p.to(kFloat32), y.to(kFloat32), "none", ew).dtype() == kFloat32);
  // nll_loss2d takes any weight of C elements.
  CHECK(F::nll_loss(logp.unsqueeze(2), target.unsqueeze(1), "mean", -100, w.view({1, 3}))
            .item<double>() == 2.125);

  // PyTorch's messages.
  CHECK(error_of([&] { F::nll_loss(logp, target, "mean", -100, ones({2}, f64())); }) ==
        "weight tensor should be defined either for all 3 classes or no classes but got weight "
        "tensor of shape: [2]");
  CHECK(error_of([&] {
          F::nll_loss(logp.unsqueeze(2), target.unsqueeze(1), "mean", -100, ones({2}, f64()));
        }) == "weight tensor should be defined either for all or no classes");
  CHECK(error_of([&] { F::nll_loss(logp, target, "mean", -100, ones({3})); }) ==
        "expected scalar type Double but found Float");
  CHECK(error_of([&] {
          F::cross_entropy(x, probs, "mean", -100, ones({2, 3}, f64()));
        }) ==
        "cross_entropy: weight tensor should be defined either for all 3 classes or no classes "
        "but got weight tensor of shape: [2, 3]");
  CHECK(error_of([&] { F::cross_entropy(x, tt, "mean", -100, {}, 1.5); }) ==
        "label_smoothing must be between 0.0 and 1.0. Got: 1.5");
  CHECK(error_of([&] {
          F::kl_div(tensor({1, 2}), tensor({1, 2}));
        }) == "kl_div: Integral inputs not supported.");
  CHECK(error_of([&] { F::kl_div(in, tg, "batch"); }) ==
        "batch is not a valid value for reduction");
}

TEST_CASE("losses: PyTorch's messages", "[nn]") {
  Tensor x = ones({2, 3});
  CHECK(error_of([&] { F::mse_loss(x, x, "avg"); }) == "avg is not a valid value for reduction");
  CHECK(error_of([&] { F::smooth_l1_loss(x, x, "mean", -1); }) ==
        "smooth_l1_loss does not support negative values for beta.");
  CHECK(error_of([&] { F::huber_loss(x, x, "mean", 0); }) ==
        "huber_loss does not support non-positive values for delta.");
  CHECK(error_of([&] { F::binary_cross_entropy(x * 2, x); }) ==
        "all elements of input should be between 0 and 1");
  CHECK(error_of([&] { F::binary_cross_entropy(full({2}, NAN), ones({2})); }) ==
        "all elements of input should be between 0 and 1");
  CHECK(error_of([&] { F::binary_cross_entropy(x, ones({3})); }) ==
        "Using a target size (torch.Size([3])) that is different to the input size "
        "(torch.Size([2, 3])) is deprecated. Please ensure they have the same size.");
  CHECK(error_of([&] { F::binary_cross_entropy_with_logits(x, ones({3})); }) ==
        "Target size (torch.Size([3])) must be the same as input size (torch.Size([2, 3]))");
  CHECK(error_of([&] {
          F::nll_loss(tensor({{1, 2}}), tensor({0}));
        }) == "\"nll_loss_out_frame\" not implemented for 'Long'");
  CHECK(error_of([&] { F::nll_loss(x, tensor({0, 3})); }) == "Target 3 is out of bounds.");
}

TEST_CASE("activations: values and derivatives at the kinks as PyTorch's", "[nn]") {
  Tensor x = tensor({-2.0, -0.0, 0.0, 0.5, 1.0, 30.0}, f64().requires_grad(true));
  auto grad_of = [&](const Tensor& y) {
    x.set_grad(Tensor());
    y.sum().backward();
    return x.grad().to_vector<double>();
  };
  Tensor lr = F::leaky_relu(x, 0.1);
  CHECK(lr.grad_fn()->name() == "LeakyReluBackward0");
  CHECK(lr.to_vector<double>()[0] == Approx(-0.2));
  CHECK(grad_of(lr) == std::vector<double>{0.1, 0.1, 0.1, 1, 1, 1}); // 0 takes the slope
  Tensor e = F::elu(x, 2.0);
  CHECK(e.grad_fn()->name() == "EluBackward0");
  CHECK(e.to_vector<double>()[0] == Approx(2 * (std::exp(-2.0) - 1)));
  std::vector<double> ge = grad_of(e);
  CHECK(ge[2] == 2.0); // alpha at 0
  CHECK(ge[4] == 1.0);
  Tensor h = F::hardtanh(x, -1.0, 1.0);
  CHECK(h.grad_fn()->name() == "HardtanhBackward0");
  CHECK(grad_of(h) == std::vector<double>{0, 1, 1, 1, 0, 0}); // 0 at the bounds
  Tensor sp = F::softplus(x, 1.0, 20.0);
  CHECK(sp.grad_fn()->name() == "SoftplusBackward0");
  CHECK(sp.to_vector<double>()[5] == 30.0); // above the threshold: x
  CHECK(sp.to_vector<double>()[3] == Approx(std::log1p(std::exp(0.5))).epsilon(1e-15));
  Tensor si = F::silu(x);
  CHECK(si.grad_fn()->name() == "SiluBackward0");
  CHECK(si.to_vector<double>()[3] == Approx(0.5 / (1 + std::exp(-0.5))).epsilon(1e-15));
  CHECK(error_of([] {
          F::leaky_relu(tensor({1, 2}));
        }) == "\"leaky_relu_cpu\" not implemented for 'Long'");
}

TEST_CASE("one_hot, embedding and dropout", "[nn]") {
  CHECK(F::one_hot(tensor({0, 2, 1})).str() ==
        "tensor([[1, 0, 0],\n        [0, 0, 1],\n        [0, 1, 0]])");
  CHECK(F::one_hot(tensor({1}), 4).sizes() == Shape{1, 4});
  CHECK(error_of([] { F::one_hot(tensor({1.0})); }) ==
        "one_hot is only applicable to index tensor.");
  CHECK(error_of([] { F::one_hot(tensor({-1})); }) == "Class values must be non-negative.");
  CHECK(error_of([] { F::one_hot(tensor({3}), 3); }) ==
        "Class values must be smaller than num_classes.");
  CHECK(error_of([] { F::one_hot(zeros({0}, kInt64)); }) ==
        "Can not infer total number of classes from empty tensor.");
  Tensor w = arange(6, f64()).view({3, 2}).requires_grad_();
  Tensor e = F::embedding(tensor({{2, 0}}), w);
  CHECK(e.sizes() == Shape{1, 2, 2});
  CHECK(e.to_vector<double>() == std::vector<double>{4, 5, 0, 1});
  CHECK(e.grad_fn()->name() == "EmbeddingBackward0");
  CHECK(error_of([&] { F::embedding(tensor({0.0}), w); }) ==
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
        "Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)");
  // Dropout keeps about 1 - p of the elements, each scaled by 1 / (1 - p).
  Tensor d = F::dropout(ones({10000}), 0.25);
  std::vector<float> dv = d.to_vector<float>();
  int64_t kept = 0;
  for (float v : dv) {
    CHECK((v == 0.0f || v == Approx(1 / 0.75f)));
    kept += v != 0.0f;
  }
  CHECK(std::abs(static_cast<double>(kept) / 10000 - 0.75) < 0.03);
  CHECK(F::dropout(ones({3}), 0.5, false).to_vector<float>() == std::vector<float>{1, 1, 1});
  CHECK(F::dropout(ones({3}), 1.0).to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK(error_of([] { F::dropout(ones({3}), 1.5); }) ==
        "dropout probability has to be between 0 and 1, but got 1.5");
}
