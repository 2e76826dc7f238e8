// A first tutorial's examples of tensors (creation, printing, dtypes, arithmetic,
// broadcasting, in-place ops, copies, dims, the NumPy bridge) whose printed output does not
// depend on the random generator, as exact strings.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cmath>

using namespace tj;

TEST_CASE("examples, basics: creation and printing", "[examples]") {
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

TEST_CASE("examples, basics: dtypes and truncating casts", "[examples]") {
  CHECK(ones({2, 3}, dtype(kInt16)).str() ==
        "tensor([[1, 1, 1],\n        [1, 1, 1]], dtype=torch.int16)");
  Tensor b = tensor({{0.9956, 1.4148, 5.8364}, {11.2406, 11.2083, 11.6692}}, dtype(kFloat64));
  CHECK(b.str() == "tensor([[ 0.9956,  1.4148,  5.8364],\n        [11.2406, 11.2083, 11.6692]], "
                   "dtype=torch.float64)");
  CHECK(b.to(kInt32).str() == "tensor([[ 0,  1,  5],\n        [11, 11, 11]], dtype=torch.int32)");
  CHECK((rand({2, 3}, dtype(kFloat64)) * 20.).dtype() == kFloat64);
}

TEST_CASE("examples, basics: arithmetic with scalars and tensors", "[examples]") {
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

TEST_CASE("examples, basics: broadcasting shapes and errors", "[examples]") {
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

TEST_CASE("examples, basics: math functions", "[examples]") {
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

TEST_CASE("examples, basics: item and scalar conversion", "[examples]") {
  CHECK(tensor({2.5}).item<double>() == 2.5);
  CHECK(tensor({{7}}).item().to_int() == 7);
  CHECK(tensor({true}).item().is_bool());
  CHECK((ones({1}) * 3).item().to_double() == 3.0);
  CHECK_THROWS_WITH(ones({2, 3}).item(), "a Tensor with 6 elements cannot be converted to Scalar");
  CHECK(tensor(4.).str() == "tensor(4.)");
  CHECK(tensor(2.5).str() == "tensor(2.5000)");
}

namespace {
// A 4x3x2 result printed as four identical layers, each `block` (a 3x2 matrix as PyTorch prints
// it inside a 3-d tensor).
std::string four_layers(const std::string& block) {
  std::string s = "tensor([";
  for (int i = 0; i < 4; ++i)
    s += (i ? ",\n\n        " : "") + block;
  return s + "])";
}
} // namespace

// The cells whose inputs are random: rebuilt from the values the tutorial printed, the results
// as PyTorch prints them for those inputs.
TEST_CASE("examples, basics: broadcasting over layers, rows and columns", "[examples]") {
  Tensor a = ones({4, 3, 2});
  CHECK((a * tensor({{0.6493, 0.2633}, {0.4762, 0.0548}, {0.2024, 0.5731}})).str() ==
        four_layers("[[0.6493, 0.2633],\n         [0.4762, 0.0548],\n         [0.2024, 0.5731]]"));
  CHECK((a * tensor({{0.7191}, {0.4067}, {0.7301}})).str() ==
        four_layers("[[0.7191, 0.7191],\n         [0.4067, 0.4067],\n         [0.7301, 0.7301]]"));
  CHECK((a * tensor({{0.6276, 0.7357}})).str() ==
        four_layers("[[0.6276, 0.7357],\n         [0.6276, 0.7357],\n         [0.6276, 0.7357]]"));
  // unsqueeze restores the broadcast of a 3-vector over columns.
  Tensor c = tensor({0.1891, 0.3952, 0.9176}).unsqueeze(1);
  CHECK(c.sizes() == Shape{3, 1});
  CHECK((a * c).str() ==
        four_layers("[[0.1891, 0.1891],\n         [0.3952, 0.3952],\n         [0.9176, 0.9176]]"));
  Tensor r = tensor({{0.6146, 0.5999, 0.5013, 0.9397}, {0.8656, 0.5207, 0.6865, 0.3614}});
  CHECK((r * (ones({1, 4}) * 2)).str() ==
        "tensor([[1.2292, 1.1998, 1.0026, 1.8794],\n        [1.7312, 1.0414, 1.3730, 0.7228]])");
}

TEST_CASE("examples, basics: altering tensors in place", "[examples]") {
  Tensor a = tensor({0., M_PI / 4, M_PI / 2, 3 * M_PI / 4});
  CHECK(sin(a).str() == "tensor([0.0000, 0.7071, 1.0000, 0.7071])");
  CHECK(a.str() == "tensor([0.0000, 0.7854, 1.5708, 2.3562])"); // a has not changed
  Tensor b = a.clone();
  CHECK(sin_(b).str() == "tensor([0.0000, 0.7071, 1.0000, 0.7071])");
  CHECK(b.str() == "tensor([0.0000, 0.7071, 1.0000, 0.7071])"); // b has

  Tensor x = ones({2, 2});
  Tensor y = tensor({{0.3788, 0.4567}, {0.0649, 0.6677}});
  CHECK(x.add_(y).str() == "tensor([[1.3788, 1.4567],\n        [1.0649, 1.6677]])");
  CHECK(x.str() == "tensor([[1.3788, 1.4567],\n        [1.0649, 1.6677]])");
  CHECK(y.str() == "tensor([[0.3788, 0.4567],\n        [0.0649, 0.6677]])");
  CHECK(y.mul_(y).str() == "tensor([[0.1435, 0.2086],\n        [0.0042, 0.4458]])");
  CHECK(y.str() == "tensor([[0.1435, 0.2086],\n        [0.0042, 0.4458]])");
}

TEST_CASE("examples, basics: out arguments, creation included, keep the tensor", "[examples]") {
  Tensor c = zeros({2, 2});
  CHECK(c.str() == "tensor([[0., 0.],\n        [0., 0.]])");
  const void* storage = c.data_ptr<float>();
  Tensor& d = matmul_out(c, tensor({{0.1, 0.2}, {0.3, 0.4}}), tensor({{1., 2.}, {3., 4.}}));
  CHECK(&d == &c);
  CHECK(c.str() == "tensor([[0.7000, 1.0000],\n        [1.5000, 2.2000]])");
  Tensor& e = rand_out(c, {2, 2});
  CHECK(&e == &c);
  CHECK(c.data_ptr<float>() == storage); // the same memory, written again
  const auto v = c.to_vector<float>();
  CHECK(std::all_of(v.begin(), v.end(), [](float f) { return f >= 0 && f < 1; }));
  CHECK(v != std::vector<float>{0.7f, 1.f, 1.5f, 2.2f});
  Tensor n = zeros({3}, dtype(kFloat64));
  randn_out(n, {3});
  CHECK(n.dtype() == kFloat64);
  CHECK_THROWS_WITH(rand_out(n = zeros({2}, dtype(kInt64)), {2}),
                    "\"check_uniform_bounds\" not implemented for 'Long'");
}

TEST_CASE("examples, basics: copying tensors", "[examples]") {
  Tensor a = ones({2, 2});
  Tensor b = a;
  a[0][1] = 561;
  CHECK(b.str() == "tensor([[  1., 561.],\n        [  1.,   1.]])");

  a = ones({2, 2});
  b = a.clone();
  CHECK(eq(a, b).str() == "tensor([[True, True],\n        [True, True]])");
  a[0][1] = 561;
  CHECK(b.str() == "tensor([[1., 1.],\n        [1., 1.]])");

  a = tensor({{0.0905, 0.4485}, {0.8740, 0.2526}}, requires_grad());
  const std::string values = "tensor([[0.0905, 0.4485],\n        [0.8740, 0.2526]]";
  CHECK(a.str() == values + ", requires_grad=True)");
  CHECK(a.clone().str() == values + ", grad_fn=<CloneBackward0>)");
  CHECK(a.detach().clone().str() == values + ")");
  CHECK(a.str() == values + ", requires_grad=True)");
}

TEST_CASE("examples, basics: changing the number of dimensions", "[examples]") {
  CHECK(rand({3, 226, 226}).unsqueeze(0).sizes() == Shape{1, 3, 226, 226});
  CHECK(tensor({0.2347}).reshape({1, 1, 1, 1, 1}).str() == "tensor([[[[[0.2347]]]]])");
  Tensor a =
      tensor({{0.1899, 0.4067, 0.1519, 0.1506, 0.9585, 0.7756, 0.8973, 0.4929, 0.2367, 0.8194,
               0.4509, 0.2690, 0.8381, 0.8207, 0.6818, 0.5057, 0.9335, 0.9769, 0.2792, 0.3277}});
  CHECK(a.str() ==
        "tensor([[0.1899, 0.4067, 0.1519, 0.1506, 0.9585, 0.7756, 0.8973, 0.4929, 0.2367,\n"
        "         0.8194, 0.4509, 0.2690, 0.8381, 0.8207, 0.6818, 0.5057, 0.9335, 0.9769,\n"
        "         0.2792, 0.3277]])");
  Tensor b = a.squeeze(0);
  CHECK(b.sizes() == Shape{20});
  CHECK(b.str() ==
        "tensor([0.1899, 0.4067, 0.1519, 0.1506, 0.9585, 0.7756, 0.8973, 0.4929, 0.2367,\n"
        "        0.8194, 0.4509, 0.2690, 0.8381, 0.8207, 0.6818, 0.5057, 0.9335, 0.9769,\n"
        "        0.2792, 0.3277])");
  CHECK(rand({2, 2}).squeeze(0).sizes() == Shape{2, 2}); // a dim of extent 2 stays

  // The in-place forms change the tensor's own shape; the storage is shared.
  Tensor batch_me = rand({3, 226, 226});
  const Tensor alias = batch_me;
  CHECK(&batch_me.unsqueeze_(0) == &batch_me);
  CHECK(batch_me.sizes() == Shape{1, 3, 226, 226});
  CHECK(batch_me.stride() == std::vector<int64_t>{153228, 51076, 226, 1});
  batch_me.squeeze_(0);
  CHECK(batch_me.sizes() == Shape{3, 226, 226});
  Tensor t = zeros({1, 2, 1});
  t.squeeze_();
  CHECK(t.sizes() == Shape{2});
  t.unsqueeze_(-1);
  CHECK(t.sizes() == Shape{2, 1});
  CHECK_THROWS_WITH(t.unsqueeze_(3),
                    "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  CHECK(t.sizes() == Shape{2, 1}); // a failed call changes nothing

  Tensor output3d = rand({6, 20, 20});
  CHECK(output3d.reshape({6 * 20 * 20}).sizes() == Shape{2400});
  CHECK(reshape(output3d, {6 * 20 * 20}).sizes() == Shape{2400});
}

TEST_CASE("examples, basics: the NumPy bridge and unique", "[examples]") {
  std::vector<double> numpy_array(6, 1.0);
  Tensor t = from_blob(numpy_array.data(), {2, 3}, kFloat64);
  CHECK(t.str() == "tensor([[1., 1., 1.],\n        [1., 1., 1.]], dtype=torch.float64)");
  numpy_array[1] = 23;
  CHECK(t.str() == "tensor([[ 1., 23.,  1.],\n        [ 1.,  1.,  1.]], dtype=torch.float64)");
  CHECK(unique(tensor({1, 2, 1, 2, 1, 2})).str() == "tensor([1, 2])");
}
