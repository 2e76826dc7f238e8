// Uses an installed tensorjit: a fused expression, printed, checked by value.
#include <tensorjit/tensorjit.h>

#include <iostream>

int main() {
  tj::Tensor x = tj::arange(6.0).reshape({2, 3});
  tj::Tensor y = (x * 2 + 1).sigmoid();
  std::cout << y << "\n";
  double last = y.to_vector<double>().back();
  bool ok = last > 0.99998 && last < 0.99999; // sigmoid(11)
  std::cout << (ok ? "consumer: ok" : "consumer: WRONG VALUE") << "\n";
  return ok ? 0 : 1;
}
