// A walk through the first seed tutorial ("Introduction to PyTorch Tensors"):
// creation, dtypes, arithmetic, broadcasting, math functions, printing, item().
#include <tensorjit/tensorjit.h>

#include <cmath>
#include <iostream>

int main() {
  using namespace tj;

  std::cout << "Creating tensors\n";
  Tensor x = empty({3, 4});
  std::cout << "empty(3, 4) has shape [" << x.size(0) << ", " << x.size(1) << "]\n";
  std::cout << zeros({2, 3}) << "\n" << ones({2, 3}) << "\n";

  manual_seed(1729);
  Tensor random1 = rand({2, 3});
  Tensor random2 = rand({2, 3});
  manual_seed(1729);
  Tensor random3 = rand({2, 3});
  std::cout << random1 << "\n" << random2 << "\n" << random3 << "\n";
  std::cout << "seeded draws repeat: " << std::boolalpha << equal(random1, random3) << "\n\n";

  std::cout << "From data\n";
  std::cout << tensor({{3.1415926, 2.71828}, {1.61803, 0.0072897}}) << "\n";
  std::cout << tensor({2, 3, 5, 7, 11, 13, 17, 19}) << "\n";
  std::cout << tensor({{2, 4, 6}, {3, 6, 9}}) << "\n\n";

  std::cout << "Data types\n";
  Tensor a = ones({2, 3}, dtype(kInt16));
  std::cout << a << "\n";
  Tensor b = rand({2, 3}, dtype(kFloat64)) * 20.;
  std::cout << b << "\n";
  std::cout << b.to(kInt32) << "\n\n";

  std::cout << "Arithmetic\n";
  Tensor ones_ = zeros({2, 2}) + 1;
  Tensor twos = ones({2, 2}) * 2;
  Tensor threes = (ones({2, 2}) * 7 - 1) / 2;
  Tensor fours = twos.pow(2);
  Tensor sqrt2s = twos.pow(0.5);
  std::cout << ones_ << "\n" << twos << "\n" << threes << "\n" << fours << "\n" << sqrt2s << "\n";
  std::cout << twos.pow(tensor({{1, 2}, {3, 4}})) << "\n";
  std::cout << ones_ + fours << "\n" << threes * fours << "\n\n";

  std::cout << "Broadcasting\n";
  Tensor r = rand({2, 4});
  std::cout << r << "\n" << r * (ones({1, 4}) * 2) << "\n";
  Tensor c = ones({4, 3, 2}) * rand({3, 1});
  std::cout << c << "\n";
  try {
    std::cout << rand({2, 3}) * rand({3, 2}) << "\n";
  } catch (const Error& e) {
    std::cout << "error (as intended): " << e.what() << "\n\n";
  }

  std::cout << "Math functions\n";
  Tensor m = rand({2, 4}) * 2 - 1;
  std::cout << abs(m) << "\n" << ceil(m) << "\n" << floor(m) << "\n" << clamp(m, -0.5, 0.5) << "\n";
  Tensor angles = tensor({0., M_PI / 4, M_PI / 2, 3 * M_PI / 4});
  Tensor sines = sin(angles);
  std::cout << angles << "\n" << sines << "\n" << asin(sines) << "\n";
  std::cout << bitwise_xor(tensor({1, 5, 11}), tensor({2, 7, 10})) << "\n";
  Tensor d = tensor({{1., 2.}, {3., 4.}});
  std::cout << eq(d, ones({1, 2})) << "\n\n";

  std::cout << "Scalars\n";
  Tensor s = (d * d).add(1);
  std::cout << "item() of the (1, 1) element squared plus one: "
            << s.reshape({4}).to_vector<float>()[3] << "\n";
  std::cout << tensor({2.5}).item<double>() << "\n";
  try {
    d.item();
  } catch (const Error& e) {
    std::cout << "error (as intended): " << e.what() << "\n";
  }
  return 0;
}
