// Autograd: the tutorials' examples with their exact printed
// values, PyTorch's grad_fn names and errors, and the semantics around the
// backward graph (accumulation, retain_graph, grad modes, views, in-place
// ops, higher order).
#include <catch2/catch.hpp>
#include <functional>
#include <tensorjit/tensorjit.h>

#include <cmath>

#include "test/support/error_of.h"

using namespace tj;
using tj::test::error_of;

namespace {
const char* kSecondBackward =
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.";
} // namespace

TEST_CASE("examples: requires_grad, grad_fn and the gradient of a mean", "[autograd][examples]") {
  Tensor x = ones({2, 2}, requires_grad());
  CHECK(x.str() == "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)");
  CHECK(x.grad_fn() == nullptr);
  CHECK_FALSE(x.grad().defined());
  CHECK(x.is_leaf());
  Tensor y = x + 2;
  CHECK(y.str() == "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)");
  CHECK(y.grad_fn()->name() == "AddBackward0");
  CHECK_FALSE(y.is_leaf());
  Tensor z = y * y * 3;
  Tensor out = z.mean();
  CHECK(z.str() == "tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>)");
  CHECK(out.str() == "tensor(27., grad_fn=<MeanBackward0>)");

  Tensor a = randn({2, 2});
  a = (a * 3) / (a - 1);
  CHECK_FALSE(a.requires_grad());
  a.requires_grad_(true);
  CHECK(a.requires_grad());
  CHECK((a * a).sum().grad_fn()->name() == "SumBackward0");

  out.backward();
  CHECK(x.grad().str() == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])");
  // Gradients accumulate across backward calls until zeroed.
  Tensor out2 = x.sum();
  CHECK(out2.str() == "tensor(4., grad_fn=<SumBackward0>)");
  out2.backward();
  CHECK(x.grad().str() == "tensor([[5.5000, 5.5000],\n        [5.5000, 5.5000]])");
  Tensor out3 = x.sum();
  x.grad().zero_();
  out3.backward();
  CHECK(x.grad().str() == "tensor([[1., 1.],\n        [1., 1.]])");
}

TEST_CASE("examples: backward(gradient), retain_graph and the second-backward error",
          "[autograd][examples]") {
  Tensor a = tensor({1, 2, 3}, TensorOptions().dtype(kFloat32).requires_grad(true));
  CHECK_FALSE(a.grad().defined());
  Tensor b = a.pow(2);
  CHECK(b.str() == "tensor([1., 4., 9.], grad_fn=<PowBackward0>)");
  CHECK(b.requires_grad());
  Tensor w = tensor({0.1, 0.2, 0.3});
  b.backward(w);
  CHECK(a.grad().str() == "tensor([0.2000, 0.8000, 1.8000])");
  Tensor d = b.sum();
  CHECK(d.str() == "tensor(14., grad_fn=<SumBackward0>)");
  CHECK(error_of([&] { d.backward(); }) == kSecondBackward);

  Tensor x = tensor(1.0, requires_grad());
  Tensor d2 = 2 * x;
  for (int i = 0; i < 11; ++i) {
    d2.backward({}, true);
    CHECK(x.grad().item<double>() == 2.0 * (i + 1));
  }
  CHECK(x.grad().str() == "tensor(22.)");
  d2.backward(); // frees the graph...
  CHECK(x.grad().str() == "tensor(24.)");
  CHECK(error_of([&] { d2.backward(); }) == kSecondBackward); // ...so the next one fails
  CHECK(x.grad().str() == "tensor(24.)");                     // and changes nothing

  Tensor c = a.sum();
  CHECK(c.str() == "tensor(6., grad_fn=<SumBackward0>)");
  c.backward();
  CHECK(a.grad().str() == "tensor([1.2000, 1.8000, 2.8000])");
  a.grad().zero_();
  CHECK(a.grad().str() == "tensor([0., 0., 0.])");
  a.sum().backward();
  CHECK(a.grad().str() == "tensor([1., 1., 1.])");
}

TEST_CASE("examples: views, no_grad and non-leaf grads", "[autograd][examples]") {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, requires_grad());
  CHECK(x.dtype() == kFloat32);
  Tensor y = 2 * x;
  Tensor z = y.view({2, 2});
  CHECK(z.str() == "tensor([[2., 4.],\n        [6., 8.]], grad_fn=<ViewBackward0>)");
  z.backward(tensor({{1.0, 0.1}, {0.01, 0.001}}));
  CHECK(x.grad().str() == "tensor([2.0000, 0.2000, 0.0200, 0.0020])");

  Tensor s = tensor(1.0, requires_grad());
  Tensor y1 = s.pow(2);
  Tensor y2;
  {
    NoGradGuard no_grad;
    y2 = s.pow(3);
  }
  Tensor y3 = y1 + y2;
  CHECK(s.requires_grad());
  CHECK(y1.str() == "tensor(1., grad_fn=<PowBackward0>)");
  CHECK(y1.requires_grad());
  CHECK(y2.str() == "tensor(1.)");
  CHECK_FALSE(y2.requires_grad());
  CHECK(y3.str() == "tensor(2., grad_fn=<AddBackward0>)");
  y3.backward();
  CHECK(s.grad().str() == "tensor(2.)");

  Tensor r = tensor({{1, 2, 3, 4, 5}}, TensorOptions().dtype(kFloat32).requires_grad(true));
  Tensor sum = r.sum();
  CHECK(sum.str() == "tensor(15., grad_fn=<SumBackward0>)");
  sum.backward();
  CHECK(r.grad().str() == "tensor([[1., 1., 1., 1., 1.]])");
  // The reshaped tensor is not a leaf: its .grad stays undefined.
  Tensor q = tensor({{1, 2, 3, 4, 5}}, TensorOptions().dtype(kFloat32).requires_grad(true))
                 .reshape({-1, 1});
  CHECK(q.str() == "tensor([[1.],\n        [2.],\n        [3.],\n        [4.],\n        [5.]], "
                   "grad_fn=<ViewBackward0>)");
  q.sum().backward();
  CHECK_FALSE(q.grad().defined());
  // ...unless it retains it.
  Tensor p = tensor({{1.0, 2.0}}, requires_grad()).reshape({-1, 1});
  p.retain_grad();
  (p * p).sum().backward();
  CHECK(p.grad().str() == "tensor([[2.],\n        [4.]])");
}

TEST_CASE("examples: the gradients of (exp(w x + b) - y*)^2 match the closed form",
          "[autograd][examples]") {
  Tensor w_t = tensor(std::vector<double>{0.5}, {1}, dtype(kFloat64));
  Tensor b_t = tensor(std::vector<int64_t>{2}, {1}, dtype(kInt64));
  Tensor xx_t = tensor(std::vector<double>{0.5}, {1}, dtype(kFloat64));
  CHECK_FALSE(w_t.requires_grad());
  CHECK(w_t.requires_grad_(true).str() ==
        "tensor([0.5000], dtype=torch.float64, requires_grad=True)");
  CHECK(error_of([&] { b_t.requires_grad_(true); }) ==
        "only Tensors of floating point dtype can require gradients");
  CHECK_FALSE(b_t.requires_grad()); // nothing changed
  b_t = b_t.type(kFloat64);
  CHECK(b_t.requires_grad_(true).str() == "tensor([2.], dtype=torch.float64, requires_grad=True)");

  manual_seed(0);
  Tensor ystar_t = randn_like(xx_t);
  auto fun = [&](const Tensor& x, const Tensor& ystar) {
    Tensor y = exp(w_t * x + b_t);
    CHECK(y.str() == "tensor([9.4877], dtype=torch.float64, grad_fn=<ExpBackward0>)");
    return sum((y - ystar).pow(2));
  };
  Tensor l_t = fun(xx_t, ystar_t);
  CHECK(l_t.requires_grad());
  CHECK(l_t.grad_fn()->name() == "SumBackward0");
  CHECK_FALSE(w_t.grad().defined());
  l_t.backward();
  Tensor yy_t = exp(w_t * xx_t + b_t);
  Tensor dw = sum(2 * (yy_t - ystar_t) * yy_t * xx_t);
  Tensor db = sum(2 * (yy_t - ystar_t) * yy_t);
  CHECK(dw.grad_fn()->name() == "SumBackward0");
  CHECK(w_t.grad().item<double>() == Approx(dw.item<double>()).epsilon(1e-14));
  CHECK(b_t.grad().item<double>() == Approx(db.item<double>()).epsilon(1e-14));
  // Accumulation over a second forward and backward.
  fun(xx_t, ystar_t).backward();
  CHECK(w_t.grad().item<double>() == Approx(2 * dw.item<double>()).epsilon(1e-14));
  CHECK(error_of([&] { l_t.backward(); }) == kSecondBackward);
  w_t.grad().zero_();
  b_t.grad().zero_();
  l_t = fun(xx_t, ystar_t);
  l_t.backward({}, true);
  l_t.backward();
  CHECK(w_t.grad().item<double>() == Approx(2 * dw.item<double>()).epsilon(1e-14));
  CHECK(b_t.grad().item<double>() == Approx(2 * db.item<double>()).epsilon(1e-14));
  CHECK(w_t.grad().str().find("dtype=torch.float64)") != std::string::npos);
}

TEST_CASE("backward errors are PyTorch's and change nothing", "[autograd][errors]") {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = x * 2;
  CHECK(error_of([&] { y.backward(); }) ==
        "grad can be implicitly created only for scalar outputs");
  CHECK(error_of([&] {
          tensor({1.0, 2.0}).sum().backward();
        }) == "element 0 of tensors does not require grad and does not have a grad_fn");
  CHECK(error_of([&] { y.backward(ones({3})); }) ==
        "Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) and output[0] has a "
        "shape of torch.Size([2]).");
  CHECK_FALSE(x.grad().defined());
  CHECK(error_of([&] {
          tensor({1, 2}).requires_grad_();
        }) == "only Tensors of floating point dtype can require gradients");
  CHECK(error_of([&] { x.add_(1); }) ==
        "a leaf Variable that requires grad is being used in an in-place operation.");
  CHECK(error_of([&] { x[0].fill_(1); }) ==
        "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  CHECK(x.str() == "tensor([1., 2.], requires_grad=True)");
  CHECK(error_of([&] { y.requires_grad_(false); })
            .find("you can only change requires_grad flags "
                  "of leaf variables.") == 0);
  CHECK(error_of([&] { tensor({1.0}).retain_grad(); }) ==
        "can't retain_grad on Tensor that has requires_grad=False");
  Tensor u = tensor({3.0}, requires_grad());
  CHECK(error_of([&] { autograd::grad({(x * 2).sum()}, {u}); }) ==
        "One of the differentiated Tensors appears to not have been used in the graph. Set "
        "allow_unused=True if this is the desired behavior.");
  CHECK_FALSE(autograd::grad({(x * 2).sum()}, {u}, {}, std::nullopt, false, true)[0].defined());
  CHECK(error_of([&] { autograd::grad({(x * 2).sum()}, {tensor({1.0})}); }) ==
        "One of the differentiated Tensors does not require grad");
  // In no-grad mode leaves may be updated in place (an optimizer step).
  {
    NoGradGuard no_grad;
    x.sub_(tensor({0.5, 0.5}));
  }
  CHECK(x.str() == "tensor([0.5000, 1.5000], requires_grad=True)");
  CHECK(x.is_leaf());
}

TEST_CASE("grad_fn names follow PyTorch's", "[autograd]") {
  Tensor x = rand({3, 4}, requires_grad());
  Tensor v = rand({4}, requires_grad());
  auto name = [](const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : "None"; };
  CHECK(name(x - 1) == "SubBackward0");
  CHECK(name(1 - x) == "RsubBackward1");
  CHECK(name(x / 2) == "DivBackward0");
  CHECK(name(-x) == "NegBackward0");
  CHECK(name(x.pow(3)) == "PowBackward0");
  CHECK(name(x.pow(x)) == "PowBackward1");
  CHECK(name(pow(2, x)) == "PowBackward2");
  CHECK(name(x.exp()) == "ExpBackward0");
  CHECK(name(x.sigmoid()) == "SigmoidBackward0");
  CHECK(name(x.relu()) == "ReluBackward0");
  CHECK(name(x.gelu()) == "GeluBackward0");
  CHECK(name(x.tanh()) == "TanhBackward0");
  CHECK(name(x.rsqrt()) == "RsqrtBackward0");
  CHECK(name(x.clamp(0.2, 0.8)) == "ClampBackward1");
  CHECK(name(x.clamp_min(0.2)) == "ClampMinBackward0");
  CHECK(name(maximum(x, x * 2)) == "MaximumBackward0");
  CHECK(name(where(x > 0.5, x, x * 2)) == "WhereBackward0");
  CHECK(name(x.to(kFloat64)) == "ToCopyBackward0");
  CHECK(name(x.clone()) == "CloneBackward0");
  CHECK(name(x.t().contiguous()) == "CloneBackward0");
  CHECK(name(x.detach()) == "None");
  CHECK_FALSE(x.detach().requires_grad());
  CHECK(name(x.sum({1})) == "SumBackward1");
  CHECK(name(x.mean({0})) == "MeanBackward1");
  CHECK(name(x.prod()) == "ProdBackward0");
  CHECK(name(x.max()) == "MaxBackward1");
  CHECK(name(std::get<0>(x.max(1))) == "MaxBackward0");
  CHECK(name(std::get<1>(x.max(1))) == "None");
  CHECK(name(x.amax({1})) == "AmaxBackward0");
  CHECK(name(x.var()) == "VarBackward0");
  CHECK(name(x.std()) == "StdBackward0");
  CHECK(name(x.logsumexp({1})) == "LogsumexpBackward0");
  CHECK(name(x.norm()) == "LinalgVectorNormBackward0");
  CHECK(name(nn::functional::softmax(x, 1)) == "SoftmaxBackward0");
  CHECK(name(nn::functional::log_softmax(x, 1)) == "LogSoftmaxBackward0");
  CHECK(name(nn::functional::layer_norm(x, {4})) == "NativeLayerNormBackward0");
  CHECK(name(x.t()) == "TBackward0");
  CHECK(name(x.transpose(0, 1)) == "TransposeBackward0");
  CHECK(name(x.permute({1, 0})) == "PermuteBackward0");
  CHECK(name(x[0]) == "SelectBackward0");
  CHECK(name(x.narrow(1, 1, 2)) == "SliceBackward0");
  CHECK(name(x.unsqueeze(0)) == "UnsqueezeBackward0");
  CHECK(name(x.unsqueeze(0).squeeze()) == "SqueezeBackward0");
  CHECK(name(x.unsqueeze(0).squeeze(0)) == "SqueezeBackward1");
  CHECK(name(x.expand({2, 3, 4})) == "ExpandBackward0");
  CHECK(name(x.diagonal()) == "DiagonalBackward0");
  CHECK(name(x.flatten()) == "ViewBackward0");
  CHECK(name(x.mm(x.t())) == "MmBackward0");
  CHECK(name(x.mv(v)) == "MvBackward0");
  CHECK(name(v.dot(v)) == "DotBackward0");
  CHECK(name(cat({x, x})) == "CatBackward0");
  CHECK(name(stack({x, x})) == "StackBackward0");
  CHECK(name(flip(x, {0})) == "FlipBackward0");
  CHECK(name(gather(x, 1, tensor({{0}, {1}, {2}}, dtype(kInt64)))) == "GatherBackward0");
  CHECK(name(x.index({tensor({0, 2}, dtype(kInt64))})) == "IndexBackward0");
  CHECK(name(x > 0.5) == "None");
  CHECK_FALSE((x > 0.5).requires_grad());
  CHECK_FALSE(x.argmax().requires_grad());
}

TEST_CASE("in-place view ops have grad_fn names of their own", "[autograd]") {
  Tensor g = ones({2, 1, 3}).requires_grad_();
  auto name_after = [&](const std::function<void(Tensor&)>& op) {
    Tensor x = g * 1;
    op(x);
    return x.grad_fn()->name();
  };
  CHECK(name_after([](Tensor& x) { x.squeeze_(); }) == "SqueezeBackward2");
  CHECK(name_after([](Tensor& x) { x.squeeze_(1); }) == "SqueezeBackward3");
  CHECK(name_after([](Tensor& x) { x.unsqueeze_(0); }) == "UnsqueezeBackward1");
  CHECK(name_after([](Tensor& x) { x.transpose_(0, 2); }) == "TransposeBackward1");
  CHECK(name_after([](Tensor& x) { x.squeeze_(1).t_(); }) == "TBackward1");
  // The gradient still flows back through them.
  Tensor x = g * 2;
  x.squeeze_(1).t_();
  x.sum().backward();
  CHECK(g.grad().to_vector<float>() == std::vector<float>(6, 2.0f));
}

TEST_CASE("cat gives a skipped empty placeholder an empty gradient", "[autograd]") {
  Tensor x = ones({2}).requires_grad_(), e = zeros({0}).requires_grad_();
  cat({x, e, x}).sum().backward();
  REQUIRE(e.grad().defined());
  CHECK(e.grad().sizes() == Shape{0});
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2, 2});
}

TEST_CASE("NoGradGuard, EnableGradGuard and GradMode", "[autograd]") {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  {
    NoGradGuard no_grad;
    CHECK_FALSE(GradMode::is_enabled());
    CHECK_FALSE((x * 2).requires_grad());
    {
      EnableGradGuard enable;
      CHECK((x * 2).requires_grad());
    }
    CHECK_FALSE(GradMode::is_enabled());
  }
  CHECK(GradMode::is_enabled());
  // A gradient computed without create_graph does not require grad.
  (x * x).sum().backward();
  CHECK_FALSE(x.grad().requires_grad());
  CHECK(x.grad().str() == "tensor([2., 4.])");
}

TEST_CASE("higher-order derivatives through autograd::grad with create_graph", "[autograd]") {
  Tensor x = tensor({0.5, -1.5, 2.0}, TensorOptions().dtype(kFloat64).requires_grad(true));
  Tensor y = x.pow(3).sum();
  Tensor g1 = autograd::grad({y}, {x}, {}, std::nullopt, true)[0];
  CHECK(g1.requires_grad());
  CHECK(g1.to_vector<double>() == std::vector<double>{0.75, 6.75, 12.0}); // 3x^2
  Tensor g2 = autograd::grad({g1.sum()}, {x}, {}, std::nullopt, true)[0];
  CHECK(g2.to_vector<double>() == std::vector<double>{3.0, -9.0, 12.0}); // 6x
  Tensor g3 = autograd::grad({g2.sum()}, {x})[0];
  CHECK(g3.to_vector<double>() == std::vector<double>{6.0, 6.0, 6.0});

  // A Hessian-vector product of f(x) = sum(sin(x) * x^2) equals H v in closed form.
  Tensor v = tensor({1.0, 2.0, -1.0}, dtype(kFloat64));
  Tensor f = (x.sin() * x * x).sum();
  Tensor g = autograd::grad({f}, {x}, {}, std::nullopt, true)[0];
  Tensor hv = autograd::grad({(g * v).sum()}, {x})[0];
  std::vector<double> xs = x.to_vector<double>(), vs = v.to_vector<double>(),
                      got = hv.to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) {
    double a = xs[i];
    double h = -std::sin(a) * a * a + 4 * a * std::cos(a) + 2 * std::sin(a);
    CHECK(got[i] == Approx(h * vs[i]).epsilon(1e-12));
  }
  // backward with create_graph leaves a differentiable .grad.
  Tensor z = tensor(2.0, TensorOptions().dtype(kFloat64).requires_grad(true));
  z.pow(4).backward({}, std::nullopt, true);
  CHECK(z.grad().item<double>() == 32.0);
  Tensor zz = autograd::grad({z.grad()}, {z})[0];
  CHECK(zz.item<double>() == 48.0);
}

TEST_CASE("in-place ops on non-leaves rebase their history", "[autograd]") {
  Tensor x = tensor({1.0, 2.0, 3.0}, TensorOptions().dtype(kFloat64).requires_grad(true));
  Tensor y = x * 2;
  y.mul_(y); // y = (2x)^2
  y.add_(x); // + x
  CHECK(y.grad_fn()->name() == "AddBackward0");
  y.sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{9.0, 17.0, 25.0}); // 8x + 1

  // Writing through a view: the base's history splits at the view (CopySlices).
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0}, TensorOptions().dtype(kFloat64).requires_grad(true));
  Tensor b = a * 1;
  b.narrow(0, 1, 2).mul_(10);
  CHECK(b.grad_fn()->name() == "CopySlices");
  CHECK(b.to_vector<double>() == std::vector<double>{1.0, 20.0, 30.0, 4.0});
  (b * b).sum().backward();
  CHECK(a.grad().to_vector<double>() == std::vector<double>{2.0, 400.0, 600.0, 8.0});

  // A tensor that did not require grad starts to, once a value that does is written in.
  Tensor c = zeros({3}, dtype(kFloat64));
  Tensor s = tensor({5.0}, TensorOptions().dtype(kFloat64).requires_grad(true));
  c[1].copy_(s.squeeze() * 3);
  CHECK(c.requires_grad());
  (c * tensor({1.0, 2.0, 4.0}, dtype(kFloat64))).sum().backward();
  CHECK(s.grad().to_vector<double>() == std::vector<double>{6.0});

  // Overwriting with a constant cuts the gradient of what was there.
  Tensor d = x * 3;
  d.fill_(1);
  CHECK(d.requires_grad());
  x.grad().zero_();
  d.sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0.0, 0.0, 0.0});
}

TEST_CASE("saved values are immutable: later in-place writes do not change gradients",
          "[autograd]") {
  Tensor x = tensor({1.0, 2.0}, TensorOptions().dtype(kFloat64).requires_grad(true));
  Tensor y = x * 1;
  Tensor z = (y * y).sum(); // saves y
  y.add_(100);
  z.backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{2.0, 4.0});
}

TEST_CASE("clone keeps tracking; detach stops it; requires_grad_ on a leaf", "[autograd]") {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor c = x.clone();
  CHECK(c.requires_grad());
  (c * 3).sum().backward();
  CHECK(x.grad().str() == "tensor([3., 3.])");
  Tensor d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  Tensor e = (x * 2).detach();
  CHECK(e.is_leaf());
  e.requires_grad_();
  (e * e).sum().backward();
  CHECK(e.grad().str() == "tensor([4., 8.])");
}

TEST_CASE("nn::functional losses match their definitions", "[autograd]") {
  Tensor logits = tensor({{1.0, 2.0, 0.5}, {0.1, -1.0, 3.0}}, dtype(kFloat64));
  Tensor target = tensor({1, 2}, dtype(kInt64));
  double l0 = -(2.0 - std::log(std::exp(1.0) + std::exp(2.0) + std::exp(0.5)));
  double l1 = -(3.0 - std::log(std::exp(0.1) + std::exp(-1.0) + std::exp(3.0)));
  CHECK(nn::functional::cross_entropy(logits, target).item<double>() ==
        Approx((l0 + l1) / 2).epsilon(1e-14));
  CHECK(error_of([&] { nn::functional::cross_entropy(logits, target.to(kFloat32)); }) ==
        "expected scalar type Long but found Float");
  CHECK(error_of([&] {
          nn::functional::cross_entropy(logits, tensor({1, -1}));
        }) == "Target -1 is out of bounds.");
  CHECK(error_of([&] {
          nn::functional::cross_entropy(logits, tensor({3, -1}));
        }) == "Target 3 is out of bounds.");
  Tensor p = tensor({1.0, 2.0}, requires_grad());
  Tensor loss = nn::functional::mse_loss(p, tensor({0.0, 4.0}));
  CHECK(loss.str() == "tensor(2.5000, grad_fn=<MseLossBackward0>)");
  CHECK(nn::functional::linear(p.view({1, 2}), ones({3, 2}), ones({3})).grad_fn()->name() ==
        "AddmmBackward0");
}

TEST_CASE("a two-layer MLP trained with SGD converges", "[autograd][mlp]") {
  // 784 -> 512 -> 10 with ReLU and MSE, fitting a random linear teacher on a
  // fixed training set, written as PyTorch's loop (the update in no_grad).
  manual_seed(7);
  Tensor teacher = randn({784, 10}) / 28.0;
  Tensor x = randn({128, 784});
  Tensor y = x.matmul(teacher);
  Tensor w1 = (randn({512, 784}) * std::sqrt(2.0 / 784)).requires_grad_();
  Tensor b1 = zeros({512}, requires_grad());
  Tensor w2 = (randn({10, 512}) * std::sqrt(1.0 / 512)).requires_grad_();
  Tensor b2 = zeros({10}, requires_grad());
  std::vector<Tensor> params{w1, b1, w2, b2};
  std::vector<double> losses;
  for (int step = 0; step < 100; ++step) {
    Tensor h = nn::functional::relu(nn::functional::linear(x, w1, b1));
    Tensor loss = nn::functional::mse_loss(nn::functional::linear(h, w2, b2), y);
    loss.backward();
    losses.push_back(loss.item<double>());
    NoGradGuard no_grad;
    for (Tensor& p : params) {
      p.sub_(p.grad() * 0.05);
      p.grad().zero_();
    }
  }
  INFO("first loss " << losses.front() << ", last " << losses.back());
  CHECK(losses.back() < 0.01 * losses.front());
  for (size_t i = 10; i < losses.size(); i += 10)
    CHECK(losses[i] < losses[i - 10]);
  for (const Tensor& p : params)
    CHECK(p.is_leaf());
}

TEST_CASE("max and min share the gradient among ties as PyTorch does", "[autograd]") {
  Tensor x = tensor({{1.0, 3.0, 3.0}, {2.0, 2.0, 0.5}},
                    TensorOptions().dtype(kFloat64).requires_grad(true));
  x.amax({1}).sum().backward(); // amax: evenly among the ties
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0.5, 0.5, 0});
  x.grad().zero_();
  x.max().backward(); // the all-element max too
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0, 0, 0});
  x.grad().zero_();
  std::get<0>(x.max(1)).sum().backward(); // max(dim): to the index it returns
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 1, 0, 0});
  x.grad().zero_();
  maximum(x, full({2, 3}, 2.0, dtype(kFloat64))).sum().backward(); // maximum: halves at ties
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 1, 0.5, 0.5, 0});
}

TEST_CASE("in-place writes keep saved values, views and retained grads right", "[autograd]") {
  // The multiplier saved by mul_ survives the write of its operand's memory.
  Tensor b = ones({4}, dtype(kFloat64));
  b.eval();
  Tensor w = tensor({2.0, 3.0}, TensorOptions().dtype(kFloat64).requires_grad(true));
  b.narrow(0, 0, 2).mul_(w);
  CHECK(b.to_vector<double>() == std::vector<double>{2.0, 3.0, 1.0, 1.0});
  b.sum().backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{1.0, 1.0});

  // A view taken before its base was written in place reads the new history.
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, TensorOptions().dtype(kFloat64).requires_grad(true));
  Tensor base = x * 1;
  Tensor v = base.view({2, 2});
  base.mul_(10);
  v.sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{10.0, 10.0, 10.0, 10.0});
  CHECK(v.grad_fn()->name() == "AsStridedBackward0");

  // retain_grad follows the tensor across an in-place op.
  Tensor y = x * 2;
  y.retain_grad();
  y.mul_(3);
  y.sum().backward();
  CHECK(y.grad().to_vector<double>() == std::vector<double>{1.0, 1.0, 1.0, 1.0});

  // With create_graph each leaf's .grad is a tensor of its own.
  Tensor p = tensor({1.0, 2.0}, requires_grad()), q = tensor({3.0, 4.0}, requires_grad());
  (p + q).sum().backward({}, std::nullopt, true);
  p.grad().zero_();
  CHECK(q.grad().str() == "tensor([1., 1.])");
  (p * q).sum().backward();
  CHECK(p.grad().str() == "tensor([3., 4.])");
  CHECK(q.grad().str() == "tensor([2., 3.])");

  Tensor leaf = ones({2, 3}, requires_grad());
  CHECK(error_of([&] { leaf.t_(); }) ==
        "a leaf Variable that requires grad is being used in an in-place operation.");
  CHECK(leaf.sizes() == Shape{2, 3});
  Tensor out = empty({0});
  CHECK(error_of([&] { add_out(out, leaf, leaf); }) ==
        "add(): functions with out=... arguments don't support automatic differentiation, but "
        "one of the arguments requires grad.");
}

TEST_CASE("a long chain of recorded ops runs and frees without deep recursion", "[autograd]") {
  Tensor x = tensor({1.0}, TensorOptions().dtype(kFloat64).requires_grad(true));
  Tensor h = x;
  for (int i = 0; i < 20000; ++i)
    h = h * 0.9999;
  h.sum().backward();
  CHECK(x.grad().item<double>() == Approx(std::pow(0.9999, 20000)).epsilon(1e-9));
  h = Tensor(); // frees the chain
}

TEST_CASE("gradients at NaN and zero follow PyTorch's formulas", "[autograd]") {
  auto grad_of = [](const Tensor& x, const std::function<Tensor(const Tensor&)>& f) {
    Tensor leaf = x.clone().requires_grad_();
    f(leaf).sum().backward();
    return leaf.grad().to_vector<double>();
  };
  auto same = [](const std::vector<double>& got, const std::vector<double>& want) {
    bool ok = got.size() == want.size();
    for (size_t i = 0; ok && i < got.size(); ++i)
      ok = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
    return ok;
  };
  const auto f64 = TensorOptions().dtype(kFloat64);
  // max() and min() of all elements share the gradient among the NaNs when the result is NaN
  // (evenly_distribute_backward); amax and amin, (g / count) * mask, give NaN there.
  Tensor with_nan = tensor({3.0, NAN, 1.0, NAN}, f64);
  CHECK(same(grad_of(with_nan, [](const Tensor& v) { return v.max(); }), {0, 0.5, 0, 0.5}));
  CHECK(same(grad_of(with_nan, [](const Tensor& v) { return v.min(); }), {0, 0.5, 0, 0.5}));
  CHECK(same(grad_of(with_nan, [](const Tensor& v) { return v.amax({0}); }), {NAN, NAN, NAN, NAN}));
  CHECK(same(grad_of(tensor({3.0, 3.0, 1.0}, f64), [](const Tensor& v) { return v.amax({0}); }),
             {0.5, 0.5, 0}));
  // relu passes the gradient where its result is not <= 0: a NaN passes it.
  CHECK(same(grad_of(tensor({NAN, -1.0, 2.0, 0.0}, f64), [](const Tensor& v) { return v.relu(); }),
             {1, 0, 1, 0}));
  // p-norms below 2 are 0 at a zero element (norm_backward's masks).
  CHECK(same(grad_of(tensor({0.0, 1.0, 4.0}, f64), [](const Tensor& v) { return v.norm(0.5); }),
             {0, 3, 1.5}));
  CHECK(
      same(grad_of(tensor({0.0, 3.0}, f64), [](const Tensor& v) { return v.norm(1.5); }), {0, 1}));
  CHECK(same(grad_of(tensor({0.0, 0.0}, f64), [](const Tensor& v) { return v.norm(3); }), {0, 0}));
  // s / t is Python's t.reciprocal() * s: its values and MulBackward0.
  Tensor d = tensor({7.0, 3.0}).requires_grad_();
  Tensor q = 3.0 / d;
  CHECK(q.str() == "tensor([0.4286, 1.0000], grad_fn=<MulBackward0>)");
  CHECK(q.to_vector<float>()[0] == (1.0f / 7.0f) * 3.0f);
  // A factory asked for an integer tensor that requires grad: the factories' words.
  CHECK(error_of([] { zeros({2}, TensorOptions().dtype(kInt64).requires_grad(true)); }) ==
        "Only Tensors of floating point and complex dtype can require gradients");
}

TEST_CASE("a backward through ops that save nothing can run again", "[autograd]") {
  // PyTorch raises the second-backward error only where saved values were freed: neg, floor,
  // ceil, round and trunc read none; exp does.
  for (auto f :
       {+[](const Tensor& v) { return -v; }, +[](const Tensor& v) { return v.floor(); },
        +[](const Tensor& v) { return v.ceil(); }, +[](const Tensor& v) { return v.round(); },
        +[](const Tensor& v) { return v.trunc(); }}) {
    Tensor x = tensor({1.5, -2.5}).requires_grad_();
    Tensor y = f(x).sum();
    y.backward();
    y.backward();
    CHECK(x.grad().defined());
  }
  Tensor x = tensor({1.5, -2.5}).requires_grad_();
  Tensor y = x.exp().sum();
  y.backward();
  CHECK_THROWS_WITH(y.backward(),
                    Catch::StartsWith("Trying to backward through the graph a second time"));
}

TEST_CASE("a second backward through ops that saved their index or mask raises", "[autograd]") {
  // PyTorch's IndexBackward0 saves `indices`, GatherBackward0, IndexSelectBackward0 and
  // ScatterBackward0/1 `index`, MaskedSelectBackward0 `mask`: a backward without retain_graph
  // frees them, and the next one through the node is the second-backward error.
  const Tensor idx = tensor({2, 0, 2}, dtype(kInt64));
  const Tensor cols = tensor({1, 3, 0}, dtype(kInt64));
  const Tensor mask = tensor({1, 0, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0}, dtype(kBool)).view({3, 4});
  const Tensor rows = tensor({true, false, true});
  const Tensor gi = tensor({{0, 3}, {1, 1}, {2, 0}}, dtype(kInt64));
  const std::pair<const char*, std::function<Tensor(const Tensor&)>> cases[] = {
      {"index by an integer tensor", [&](const Tensor& x) { return x.index({idx}); }},
      {"index along dim 1",
       [&](const Tensor& x) {
         return x.index({indexing::Slice(), idx});
       }},
      {"index by two tensors",
       [&](const Tensor& x) {
         return x.index({idx, cols});
       }},
      {"index by a 2-d mask", [&](const Tensor& x) { return x.index({mask}); }},
      {"index by a 1-d mask", [&](const Tensor& x) { return x.index({rows}); }},
      {"gather", [&](const Tensor& x) { return x.gather(1, gi); }},
      {"gather of an empty index",
       [&](const Tensor& x) {
         return x.gather(1, zeros({3, 0}, dtype(kInt64)));
       }},
      {"index_select", [&](const Tensor& x) { return x.index_select(1, idx); }},
      {"masked_select", [&](const Tensor& x) { return x.masked_select(mask); }},
      {"masked_select of a broadcast mask",
       [&](const Tensor& x) {
         return x.masked_select(tensor({true, false, false, true}));
       }},
      {"scatter", [&](const Tensor& x) { return x.scatter(1, gi, x.narrow(1, 0, 2) * 2); }},
      {"scatter of a value", [&](const Tensor& x) { return x.scatter(1, gi, 0.5); }},
  };
  for (const auto& [what, f] : cases) {
    INFO(what);
    Tensor x = arange(12.0).view({3, 4}).requires_grad_();
    Tensor y = f(x).sum();
    y.backward({}, true); // retained: the next backward runs and adds the same gradient
    Tensor once = x.grad().clone();
    y.backward();
    CHECK(x.grad().to_vector<double>() == (once * 2).to_vector<double>());
    CHECK(error_of([&] { y.backward(); }) == kSecondBackward);
    CHECK(x.grad().to_vector<double>() == (once * 2).to_vector<double>());
  }
  // Views, roll, flip and cat read no saved values: a second backward runs.
  const std::pair<const char*, std::function<Tensor(const Tensor&)>> free_cases[] = {
      {"full slices",
       [](const Tensor& x) {
         return x.index({indexing::Slice(), indexing::Slice()});
       }},
      {"select", [](const Tensor& x) { return x.index({1}); }},
      {"roll", [](const Tensor& x) { return x.roll({1}); }},
      {"roll along dims",
       [](const Tensor& x) {
         return x.roll({1, -1}, {0, 1});
       }},
      {"flip", [](const Tensor& x) { return x.flip({0}); }},
      {"cat",
       [](const Tensor& x) {
         return cat({x, x});
       }},
  };
  for (const auto& [what, f] : free_cases) {
    INFO(what);
    Tensor x = arange(12.0).view({3, 4}).requires_grad_();
    Tensor y = f(x).sum();
    y.backward();
    y.backward();
    CHECK(x.grad().defined());
  }
}

TEST_CASE("in-place comparisons keep a history that passes zeros; masked_fill's overloads are "
          "numbered as PyTorch's",
          "[autograd]") {
  Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  Tensor x = w * 1;
  x.eq_(1);
  REQUIRE(x.grad_fn());
  CHECK(x.grad_fn()->name() == "EqBackward0");
  CHECK(x.to_vector<float>() == std::vector<float>{1, 0});
  x.sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{0, 0});
  // A Tensor other that requires grad gives self a history of its own.
  Tensor y = ones({2});
  y.lt_(w.detach().requires_grad_());
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name() == "LtBackward1");
  CHECK(y.to_vector<float>() == std::vector<float>{0, 1});
  for (const char* op : {"ne", "le", "gt", "ge"}) {
    INFO(op);
    Tensor z = w * 1;
    const std::string name = std::string(op) == "ne"   ? (z.ne_(1), "NeBackward0")
                             : std::string(op) == "le" ? (z.le_(1), "LeBackward0")
                             : std::string(op) == "gt" ? (z.gt_(1), "GtBackward0")
                                                       : (z.ge_(1), "GeBackward0");
    CHECK(z.grad_fn()->name() == name);
  }
  // Without gradients, as before: integers compared in place.
  Tensor i = tensor({1, 2});
  i.eq_(1);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  Tensor m = w.detach().clone().requires_grad_();
  CHECK(m.masked_fill(m > 1, 0).grad_fn()->name() == "MaskedFillBackward0");
  CHECK(m.masked_fill(m > 1, tensor(3.0f)).grad_fn()->name() == "MaskedFillBackward1");
  CHECK((m * 1).masked_fill_(m > 1, tensor(3.0f)).grad_fn()->name() == "MaskedFillBackward1");
}

TEST_CASE("in-place writes through views that PyTorch's autograd refuses: the pieces of split "
          "and chunk, and views made in no_grad mode",
          "[autograd][views]") {
  const std::string multi = " is a view and is being modified inplace. This view is the output of "
                            "a function that returns multiple views. Such functions do not allow "
                            "the output views to be modified inplace. You should replace the "
                            "inplace operation by an out-of-place one.";
  const std::string no_grad =
      "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
      "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
      "your code by moving both the view and the inplace either both inside the no_grad block "
      "(if you don't want the inplace to be tracked) or both outside (if you want the inplace to "
      "be tracked).";
  Tensor w = tensor({1.0f, 2.0f, 3.0f, 4.0f}).requires_grad_();
  Tensor x = w * 1;
  CHECK(error_of([&] { x.split(2)[1].add_(1); }) == "Output 1 of SplitBackward0" + multi);
  CHECK(error_of([&] { x.chunk(2)[0].mul_(2); }) == "Output 0 of SplitBackward0" + multi);
  CHECK(error_of([&] { x.split(2)[1].narrow(0, 0, 1).add_(1); }) ==
        "Output 0 of SliceBackward0" + multi);
  Tensor v, leaf_view;
  {
    NoGradGuard guard;
    v = x.narrow(0, 0, 2);
    leaf_view = w.narrow(0, 0, 2);
  }
  CHECK(error_of([&] { v.mul_(2); }) == no_grad);
  CHECK(error_of([&] { leaf_view.mul_(2); }) == no_grad); // before the leaf's own refusal
  CHECK_THROWS(v.narrow(0, 0, 1).mul_(2)); // a view of it (PyTorch names its node, if it has one)
  // Another input that requires grad tracks the write too.
  Tensor plain_x = zeros({4});
  CHECK(error_of([&] { plain_x.split(2)[0].add_(w.narrow(0, 0, 2)); }) ==
        "A view was created in no_grad mode and is being modified inplace with grad mode "
        "enabled. This view is the output of a function that returns multiple views. Such "
        "functions do not allow the output views to be modified inplace. You should replace the "
        "inplace operation by an out-of-place one.");
  // Results of ops computed under no_grad and recorded after, and views of their copies, are no
  // such views: written in place as PyTorch allows.
  Tensor y = x.index({x > 1});
  y.mul_(2);
  CHECK(y.to_vector<float>() == std::vector<float>{4, 6, 8});
  Tensor s = masked_select(x, x > 2);
  s.add_(1);
  Tensor d;
  {
    NoGradGuard guard;
    d = (w * 1).detach();
  }
  d.mul_(w);
  d.select(0, 0).add_(1);
  Tensor c = x.split(2)[0].clone();
  c.narrow(0, 0, 1).add_(1);
  x.split(2)[0].detach().narrow(0, 0, 1).add_(0);
  // Allowed: no gradient anywhere, or the write in no_grad mode too.
  Tensor plain = ones({4});
  plain.split(2)[1].add_(1);
  CHECK(plain.to_vector<float>() == std::vector<float>{1, 1, 2, 2});
  {
    NoGradGuard guard;
    x.split(2)[1].add_(1);
    v.mul_(2);
  }
  CHECK(x.to_vector<float>() == std::vector<float>{2, 4, 4, 5});
}
