// The first seed tutorial's examples whose printed output does not depend on
// the random generator, as exact strings.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cmath>

using namespace tj;

TEST_CASE("seed 000: creation and printing", "[seed]") {
  CHECK(zeros({2, 3}).str() == "tensor([[0., 0., 0.],\n        [0., 0., 0.]])");
  CHECK(ones({2, 3}).str() == "tensor([[1., 1., 1.],\n        [1., 1., 1.]])");
  CHECK(tensor({{3.1415926, 2.71828}, {1.61803, 0.0072897}}).str() ==
        "tensor([[3.1416, 2.7183],\n        [1.6180, 0.0073]])");
  CHECK(tensor({2, 3, 5, 7, 11, 13, 17, 19}).str() == "tensor([ 2,  3,  5,  7, 11, 13, 17, 19])");
  CHECK(tensor({{2, 4, 6}, {3, 6, 9}}).str() == "tensor([[2, 4, 6],\n        [3, 6, 9]])");
  Tensor x = empty({2, 2, 3});
  CHECK(x.sizes() == Shape{2, 2, 3});
  CHECK(zeros_like(x).str() == "tensor([[[0., 0., 0.],\n         [0., 0., 0.]],\n\n        [[0., "
                               "0., 0.],\n         [0., 0., 0.]]])");
  CHECK(ones_like(x).sizes() == Shape{2, 2, 3});
}

TEST_CASE("seed 000: dtypes and truncating casts", "[seed]") {
  CHECK(ones({2, 3}, dtype(kInt16)).str() ==
        "tensor([[1, 1, 1],\n        [1, 1, 1]], dtype=torch.int16)");
  Tensor b = tensor({{0.9956, 1.4148, 5.8364}, {11.2406, 11.2083, 11.6692}}, dtype(kFloat64));
  CHECK(b.str() == "tensor([[ 0.9956,  1.4148,  5.8364],\n        [11.2406, 11.2083, 11.6692]], "
                   "dtype=torch.float64)");
  CHECK(b.to(kInt32).str() == "tensor([[ 0,  1,  5],\n        [11, 11, 11]], dtype=torch.int32)");
  CHECK((rand({2, 3}, dtype(kFloat64)) * 20.).dtype() == kFloat64);
}

TEST_CASE("seed 000: arithmetic with scalars and tensors", "[seed]") {
  Tensor ones_ = zeros({2, 2}) + 1;
  Tensor twos = ones({2, 2}) * 2;
  Tensor threes = (ones({2, 2}) * 7 - 1) / 2;
  Tensor fours = twos.pow(2);
  Tensor sqrt2s = twos.pow(0.5);
  CHECK(ones_.str() == "tensor([[1., 1.],\n        [1., 1.]])");
  CHECK(twos.str() == "tensor([[2., 2.],\n        [2., 2.]])");
  CHECK(threes.str() == "tensor([[3., 3.],\n        [3., 3.]])");
  CHECK(fours.str() == "tensor([[4., 4.],\n        [4., 4.]])");
  CHECK(sqrt2s.str() == "tensor([[1.4142, 1.4142],\n        [1.4142, 1.4142]])");
  CHECK(twos.pow(tensor({{1, 2}, {3, 4}})).str() == "tensor([[ 2.,  4.],\n        [ 8., 16.]])");
  CHECK((ones_ + fours).str() == "tensor([[5., 5.],\n        [5., 5.]])");
  CHECK((threes * fours).str() == "tensor([[12., 12.],\n        [12., 12.]])");
}

TEST_CASE("seed 000: broadcasting shapes and errors", "[seed]") {
  Tensor a = ones({4, 3, 2});
  CHECK((a * rand({3, 2})).sizes() == Shape{4, 3, 2});
  CHECK((a * rand({3, 1})).sizes() == Shape{4, 3, 2});
  CHECK((a * rand({1, 2})).sizes() == Shape{4, 3, 2});
  // Every 3-element column identical, as the tutorial points out for c.
  Tensor c = a * tensor({{0.5}, {0.25}, {0.125}});
  CHECK(c.str() ==
        "tensor([[[0.5000, 0.5000],\n         [0.2500, 0.2500],\n         [0.1250, 0.1250]],\n\n"
        "        [[0.5000, 0.5000],\n         [0.2500, 0.2500],\n         [0.1250, 0.1250]],\n\n"
        "        [[0.5000, 0.5000],\n         [0.2500, 0.2500],\n         [0.1250, 0.1250]],\n\n"
        "        [[0.5000, 0.5000],\n         [0.2500, 0.2500],\n         [0.1250, 0.1250]]])");
  CHECK_THROWS_WITH(
      rand({2, 3}) * rand({3, 2}),
      "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1");
  CHECK_THROWS_WITH(
      a * rand({4, 3}),
      "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 2");
  CHECK_THROWS_WITH(
      a * rand({2, 3}),
      "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 2");
  CHECK_THROWS_WITH(
      a * rand({0}),
      "The size of tensor a (2) must match the size of tensor b (0) at non-singleton dimension 2");
}

TEST_CASE("seed 000: math functions", "[seed]") {
  Tensor angles = tensor({0., M_PI / 4, M_PI / 2, 3 * M_PI / 4});
  Tensor sines = sin(angles);
  CHECK(angles.str() == "tensor([0.0000, 0.7854, 1.5708, 2.3562])");
  CHECK(sines.str() == "tensor([0.0000, 0.7071, 1.0000, 0.7071])");
  CHECK(asin(sines).str() == "tensor([0.0000, 0.7854, 1.5708, 0.7854])");
  CHECK(bitwise_xor(tensor({1, 5, 11}), tensor({2, 7, 10})).str() == "tensor([3, 2, 1])");
  Tensor d = tensor({{1., 2.}, {3., 4.}});
  CHECK(eq(d, ones({1, 2})).str() == "tensor([[ True, False],\n        [False, False]])");
  Tensor m = tensor({{-0.9238, -0.5724, 0.0791, -0.2629}, {-0.1986, 0.4439, 0.6434, -0.4776}});
  CHECK(abs(m).str() ==
        "tensor([[0.9238, 0.5724, 0.0791, 0.2629],\n        [0.1986, 0.4439, 0.6434, 0.4776]])");
  CHECK(ceil(m).str() == "tensor([[-0., -0., 1., -0.],\n        [-0., 1., 1., -0.]])");
  CHECK(floor(m).str() == "tensor([[-1., -1.,  0., -1.],\n        [-1.,  0.,  0., -1.]])");
  CHECK(clamp(m, -0.5, 0.5).str() == "tensor([[-0.5000, -0.5000,  0.0791, -0.2629],\n        "
                                     "[-0.1986,  0.4439,  0.5000, -0.4776]])");
}

TEST_CASE("seed 000: item and scalar conversion", "[seed]") {
  CHECK(tensor({2.5}).item<double>() == 2.5);
  CHECK(tensor({{7}}).item().to_int() == 7);
  CHECK(tensor({true}).item().is_bool());
  CHECK((ones({1}) * 3).item().to_double() == 3.0);
  CHECK_THROWS_WITH(ones({2, 3}).item(), "a Tensor with 6 elements cannot be converted to Scalar");
  CHECK(tensor(4.).str() == "tensor(4.)");
  CHECK(tensor(2.5).str() == "tensor(2.5000)");
}
