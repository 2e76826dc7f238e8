// Trains a two-layer MLP (784 -> 512 -> 10, ReLU, MSE) with SGD on a
// synthetic regression task, written as one would in PyTorch. Exits with 1
// unless the loss falls below 1% of its first value.
#include <fmt/format.h>
#include <tensorjit/tensorjit.h>

#include <cmath>

int main() {
  namespace F = tj::nn::functional;
  tj::manual_seed(7);
  // 128 samples whose targets a random linear map (the teacher) gives.
  tj::Tensor x = tj::randn({128, 784});
  tj::Tensor y = x.matmul(tj::randn({784, 10}) / 28.0);

  tj::Tensor w1 = (tj::randn({512, 784}) * std::sqrt(2.0 / 784)).requires_grad_();
  tj::Tensor b1 = tj::zeros({512}, tj::requires_grad());
  tj::Tensor w2 = (tj::randn({10, 512}) * std::sqrt(1.0 / 512)).requires_grad_();
  tj::Tensor b2 = tj::zeros({10}, tj::requires_grad());
  tj::optim::SGD opt({w1, b1, w2, b2}, 0.05);

  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    opt.zero_grad();
    tj::Tensor loss = F::mse_loss(F::linear(F::relu(F::linear(x, w1, b1)), w2, b2), y);
    loss.backward();
    opt.step();
    last = loss.item<double>();
    if (step == 0) {
      first = last;
      fmt::print("loss: {}\n", loss.str());
    }
    if ((step + 1) % 20 == 0) fmt::print("step {:3d}: loss {:.6f}\n", step + 1, last);
  }
  const bool converged = last < 0.01 * first;
  fmt::print("{}: the loss went from {:.4f} to {:.6f}\n", converged ? "converged" : "FAILED", first,
             last);
  return converged ? 0 : 1;
}
