// A tutorial's indexing, joining, selection, arithmetic, in-place, NumPy and broadcasting
// examples, with the outputs they print. Random inputs are rebuilt from the values the
// tutorial prints; the expected outputs are what PyTorch prints for those values.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cstdint>
#include <vector>

using namespace tj;
using namespace tj::indexing;

TEST_CASE("examples, indexing: tensors from data, NumPy-like memory and other tensors",
          "[examples]") {
  Tensor x_data = tensor({{1, 2}, {3, 4}});
  CHECK(x_data.str() == "tensor([[1, 2],\n"
                        "        [3, 4]])");
  // np.array(data) on Windows is int32; from_numpy shares it, torch.tensor copies it.
  int32_t np_array[4] = {1, 2, 3, 4};
  Tensor x_np = from_blob(np_array, {2, 2}, kInt32);
  CHECK(x_np.str() == "tensor([[1, 2],\n"
                      "        [3, 4]], dtype=torch.int32)");
  Tensor x_copy = tensor(std::vector<int32_t>(np_array, np_array + 4), {2, 2});
  CHECK(x_copy.str() == x_np.str());
  CHECK(ones_like(x_data).str() == "tensor([[1, 1],\n"
                                   "        [1, 1]])");
  Tensor x_rand = rand_like(x_data, kFloat32);
  CHECK(x_rand.dtype() == kFloat32);
  CHECK(x_rand.sizes() == Shape{2, 2});
  CHECK(zeros({2, 3}).str() == "tensor([[0., 0., 0.],\n"
                               "        [0., 0., 0.]])");

  Tensor t = rand({3, 4});
  CHECK(t.sizes() == Shape{3, 4});
  CHECK(dtype_name(t.dtype()) == "torch.float32");
  CHECK(t.device().str() == "cpu");

  // torch.tensor(a) copies: later writes to the array do not reach it.
  int32_t a[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  Tensor c = tensor(std::vector<int32_t>(a, a + 9), {3, 3});
  Tensor shared = from_blob(a, {3, 3}, kInt32);
  for (int32_t& v : a)
    v += 1;
  CHECK(c.str() == "tensor([[0, 1, 2],\n"
                   "        [3, 4, 5],\n"
                   "        [6, 7, 8]], dtype=torch.int32)");
  CHECK(shared.str() == "tensor([[1, 2, 3],\n"
                        "        [4, 5, 6],\n"
                        "        [7, 8, 9]], dtype=torch.int32)");
}

TEST_CASE("examples, indexing: index_select, masked_select and gather", "[examples]") {
  Tensor x = tensor({{0.1427, 0.0231, -0.5414, -1.0009},
                     {-0.4664, 0.2647, -0.1228, -1.1068},
                     {-1.1734, -0.6571, 0.7230, -0.6004}});
  CHECK(x.str() == "tensor([[ 0.1427,  0.0231, -0.5414, -1.0009],\n"
                   "        [-0.4664,  0.2647, -0.1228, -1.1068],\n"
                   "        [-1.1734, -0.6571,  0.7230, -0.6004]])");
  Tensor indices = tensor({0, 2});
  CHECK(index_select(x, 0, indices).str() == "tensor([[ 0.1427,  0.0231, -0.5414, -1.0009],\n"
                                             "        [-1.1734, -0.6571,  0.7230, -0.6004]])");
  CHECK(index_select(x, 1, indices).str() == "tensor([[ 0.1427, -0.5414],\n"
                                             "        [-0.4664, -0.1228],\n"
                                             "        [-1.1734,  0.7230]])");

  Tensor y = tensor({{0.3552, -2.3825, -0.8297, 0.3477},
                     {-1.2035, 1.2252, 0.5002, 0.6248},
                     {0.1307, -2.0608, 0.1244, 2.0139}});
  CHECK(y.str() == "tensor([[ 0.3552, -2.3825, -0.8297,  0.3477],\n"
                   "        [-1.2035,  1.2252,  0.5002,  0.6248],\n"
                   "        [ 0.1307, -2.0608,  0.1244,  2.0139]])");
  Tensor mask = y.ge(0.5);
  CHECK(mask.str() == "tensor([[False, False, False, False],\n"
                      "        [False,  True,  True,  True],\n"
                      "        [False, False, False,  True]])");
  CHECK(masked_select(y, mask).str() == "tensor([1.2252, 0.5002, 0.6248, 2.0139])");

  Tensor t = tensor({{1, 2}, {3, 4}});
  CHECK(gather(t, 1, tensor({{0, 0}, {1, 0}})).str() == "tensor([[1, 1],\n"
                                                        "        [4, 3]])");
}

TEST_CASE("examples, indexing: cat along dim 0 of the assigned tensor", "[examples]") {
  Tensor t = ones({4, 4});
  t.index_put_({"...", -1}, 100);
  t.index_put_({Slice(), 1}, 10);
  CHECK(cat({t, t, t}, 0).str() == "tensor([[  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.],\n"
                                   "        [  1.,  10.,   1., 100.]])");
}

TEST_CASE("examples, indexing: matmul, out=, sum and add_ on an integer tensor", "[examples]") {
  Tensor t = arange(0, 9).reshape({3, 3});
  CHECK(t.str() == "tensor([[0, 1, 2],\n"
                   "        [3, 4, 5],\n"
                   "        [6, 7, 8]])");
  Tensor y1 = matmul(t, t.T());
  CHECK(y1.str() == "tensor([[  5,  14,  23],\n"
                    "        [ 14,  50,  86],\n"
                    "        [ 23,  86, 149]])");
  CHECK(t.matmul(t.T()).str() == y1.str());
  Tensor y3 = empty({3, 3});
  add_out(y3, t, t.T());
  CHECK(y3.str() == "tensor([[ 0.,  4.,  8.],\n"
                    "        [ 4.,  8., 12.],\n"
                    "        [ 8., 12., 16.]])");
  Tensor agg = t.sum();
  CHECK(agg.str() == "tensor(36)");
  CHECK(agg.item<int64_t>() == 36);
  Tensor& same = t.add_(5);
  CHECK(&same == &t);
  CHECK(same.str() == "tensor([[ 5,  6,  7],\n"
                      "        [ 8,  9, 10],\n"
                      "        [11, 12, 13]])");
  CHECK(t.str() == "tensor([[ 5,  6,  7],\n"
                   "        [ 8,  9, 10],\n"
                   "        [11, 12, 13]])");
}

TEST_CASE("examples, indexing: ones(5) shares memory with its NumPy view", "[examples]") {
  Tensor t = ones({5});
  CHECK(t.str() == "tensor([1., 1., 1., 1., 1.])");
  NumpyArray n = t.numpy();
  t.add_(1);
  CHECK(t.str() == "tensor([2., 2., 2., 2., 2.])");
  CHECK(static_cast<const float*>(n.data)[4] == 2.0f);

  double host[5] = {1, 1, 1, 1, 1};
  Tensor d = from_blob(host, {5}, kFloat64);
  CHECK(d.str() == "tensor([1., 1., 1., 1., 1.], dtype=torch.float64)");
  for (double& v : host)
    v += 1;
  CHECK(d.str() == "tensor([2., 2., 2., 2., 2.], dtype=torch.float64)");
}

TEST_CASE("examples, indexing: view and reshape print the values they share", "[examples]") {
  Tensor x = tensor({{-0.5722, -0.4844, 1.5515},
                     {-0.2504, 0.2010, 0.0182},
                     {0.0400, 0.0397, 2.0167},
                     {1.8868, -0.4670, 0.5968},
                     {0.9070, 0.5825, -1.0549}});
  CHECK(x.str() == "tensor([[-0.5722, -0.4844,  1.5515],\n"
                   "        [-0.2504,  0.2010,  0.0182],\n"
                   "        [ 0.0400,  0.0397,  2.0167],\n"
                   "        [ 1.8868, -0.4670,  0.5968],\n"
                   "        [ 0.9070,  0.5825, -1.0549]])");
  Tensor y = x.view({15});
  CHECK(y.str() ==
        "tensor([-0.5722, -0.4844,  1.5515, -0.2504,  0.2010,  0.0182,  0.0400,  0.0397,\n"
        "         2.0167,  1.8868, -0.4670,  0.5968,  0.9070,  0.5825, -1.0549])");
  y[0] = 100;
  CHECK(x.str() == "tensor([[ 1.0000e+02, -4.8440e-01,  1.5515e+00],\n"
                   "        [-2.5040e-01,  2.0100e-01,  1.8200e-02],\n"
                   "        [ 4.0000e-02,  3.9700e-02,  2.0167e+00],\n"
                   "        [ 1.8868e+00, -4.6700e-01,  5.9680e-01],\n"
                   "        [ 9.0700e-01,  5.8250e-01, -1.0549e+00]])");
  Tensor z = x.view({-1, 5});
  CHECK(z.str() == "tensor([[ 1.0000e+02, -4.8440e-01,  1.5515e+00, -2.5040e-01,  2.0100e-01],\n"
                   "        [ 1.8200e-02,  4.0000e-02,  3.9700e-02,  2.0167e+00,  1.8868e+00],\n"
                   "        [-4.6700e-01,  5.9680e-01,  9.0700e-01,  5.8250e-01, -1.0549e+00]])");
  Tensor q = x.reshape({15});
  CHECK(q.str() == "tensor([ 1.0000e+02, -4.8440e-01,  1.5515e+00, -2.5040e-01,  2.0100e-01,\n"
                   "         1.8200e-02,  4.0000e-02,  3.9700e-02,  2.0167e+00,  1.8868e+00,\n"
                   "        -4.6700e-01,  5.9680e-01,  9.0700e-01,  5.8250e-01, -1.0549e+00])");
  q[0] = 250;
  CHECK(x.str() == "tensor([[ 2.5000e+02, -4.8440e-01,  1.5515e+00],\n"
                   "        [-2.5040e-01,  2.0100e-01,  1.8200e-02],\n"
                   "        [ 4.0000e-02,  3.9700e-02,  2.0167e+00],\n"
                   "        [ 1.8868e+00, -4.6700e-01,  5.9680e-01],\n"
                   "        [ 9.0700e-01,  5.8250e-01, -1.0549e+00]])");
  Tensor x_cp = x.clone().view({15});
  x -= 1;
  CHECK(x.str() == "tensor([[ 2.4900e+02, -1.4844e+00,  5.5150e-01],\n"
                   "        [-1.2504e+00, -7.9900e-01, -9.8180e-01],\n"
                   "        [-9.6000e-01, -9.6030e-01,  1.0167e+00],\n"
                   "        [ 8.8680e-01, -1.4670e+00, -4.0320e-01],\n"
                   "        [-9.3000e-02, -4.1750e-01, -2.0549e+00]])");
  CHECK(x_cp.str() == "tensor([ 2.5000e+02, -4.8440e-01,  1.5515e+00, -2.5040e-01,  2.0100e-01,\n"
                      "         1.8200e-02,  4.0000e-02,  3.9700e-02,  2.0167e+00,  1.8868e+00,\n"
                      "        -4.6700e-01,  5.9680e-01,  9.0700e-01,  5.8250e-01, -1.0549e+00])");

  Tensor one = tensor({-0.9870905876159668});
  CHECK(one.str() == "tensor([-0.9871])");
  CHECK(one.item<double>() == -0.9870905876159668);
}

TEST_CASE("examples, indexing: trace, diag, triu and tril", "[examples]") {
  Tensor x = arange(1., 10.).view({3, 3});
  CHECK(x.str() == "tensor([[1., 2., 3.],\n"
                   "        [4., 5., 6.],\n"
                   "        [7., 8., 9.]])");
  CHECK(trace(x).str() == "tensor(15.)");

  Tensor v = tensor({0.5950, -0.0872, 2.3298});
  CHECK(v.str() == "tensor([ 0.5950, -0.0872,  2.3298])");
  CHECK(diag(v).str() == "tensor([[ 0.5950,  0.0000,  0.0000],\n"
                         "        [ 0.0000, -0.0872,  0.0000],\n"
                         "        [ 0.0000,  0.0000,  2.3298]])");
  CHECK(diag(v, 1).str() == "tensor([[ 0.0000,  0.5950,  0.0000,  0.0000],\n"
                            "        [ 0.0000,  0.0000, -0.0872,  0.0000],\n"
                            "        [ 0.0000,  0.0000,  0.0000,  2.3298],\n"
                            "        [ 0.0000,  0.0000,  0.0000,  0.0000]])");
  Tensor m =
      tensor({{-0.4264, 0.0255, -0.1064}, {0.8795, -0.2429, 0.1374}, {0.1029, -0.6482, -1.6300}});
  CHECK(m.str() == "tensor([[-0.4264,  0.0255, -0.1064],\n"
                   "        [ 0.8795, -0.2429,  0.1374],\n"
                   "        [ 0.1029, -0.6482, -1.6300]])");
  CHECK(diag(m, 0).str() == "tensor([-0.4264, -0.2429, -1.6300])");
  CHECK(diag(m, 1).str() == "tensor([0.0255, 0.1374])");

  Tensor a =
      tensor({{0.2309, 0.5207, 2.0049}, {0.2072, -1.0680, 0.6602}, {0.3480, -0.5211, -0.4573}});
  CHECK(a.str() == "tensor([[ 0.2309,  0.5207,  2.0049],\n"
                   "        [ 0.2072, -1.0680,  0.6602],\n"
                   "        [ 0.3480, -0.5211, -0.4573]])");
  CHECK(triu(a).str() == "tensor([[ 0.2309,  0.5207,  2.0049],\n"
                         "        [ 0.0000, -1.0680,  0.6602],\n"
                         "        [ 0.0000,  0.0000, -0.4573]])");
  CHECK(triu(a, 1).str() == "tensor([[0.0000, 0.5207, 2.0049],\n"
                            "        [0.0000, 0.0000, 0.6602],\n"
                            "        [0.0000, 0.0000, 0.0000]])");
  CHECK(triu(a, -1).str() == "tensor([[ 0.2309,  0.5207,  2.0049],\n"
                             "        [ 0.2072, -1.0680,  0.6602],\n"
                             "        [ 0.0000, -0.5211, -0.4573]])");
  Tensor b = tensor({{0.5876, -0.0794, -1.8373, 0.6654, 0.2604, 1.5235},
                     {-0.2447, 0.9556, -1.2919, 1.3378, -0.1768, -1.0857},
                     {0.4333, 0.3146, 0.6576, -1.0432, 0.9348, -0.4410},
                     {-0.9888, 1.0679, -1.3337, -1.6556, 0.4798, 0.2830}});
  CHECK(b.str() == "tensor([[ 0.5876, -0.0794, -1.8373,  0.6654,  0.2604,  1.5235],\n"
                   "        [-0.2447,  0.9556, -1.2919,  1.3378, -0.1768, -1.0857],\n"
                   "        [ 0.4333,  0.3146,  0.6576, -1.0432,  0.9348, -0.4410],\n"
                   "        [-0.9888,  1.0679, -1.3337, -1.6556,  0.4798,  0.2830]])");
  CHECK(triu(b, 1).str() == "tensor([[ 0.0000, -0.0794, -1.8373,  0.6654,  0.2604,  1.5235],\n"
                            "        [ 0.0000,  0.0000, -1.2919,  1.3378, -0.1768, -1.0857],\n"
                            "        [ 0.0000,  0.0000,  0.0000, -1.0432,  0.9348, -0.4410],\n"
                            "        [ 0.0000,  0.0000,  0.0000,  0.0000,  0.4798,  0.2830]])");
  CHECK(triu(b, -1).str() == "tensor([[ 0.5876, -0.0794, -1.8373,  0.6654,  0.2604,  1.5235],\n"
                             "        [-0.2447,  0.9556, -1.2919,  1.3378, -0.1768, -1.0857],\n"
                             "        [ 0.0000,  0.3146,  0.6576, -1.0432,  0.9348, -0.4410],\n"
                             "        [ 0.0000,  0.0000, -1.3337, -1.6556,  0.4798,  0.2830]])");

  Tensor l =
      tensor({{-1.0813, -0.8619, 0.7105}, {0.0935, 0.1380, 2.2112}, {-0.3409, -0.9828, 0.0289}});
  CHECK(l.str() == "tensor([[-1.0813, -0.8619,  0.7105],\n"
                   "        [ 0.0935,  0.1380,  2.2112],\n"
                   "        [-0.3409, -0.9828,  0.0289]])");
  CHECK(tril(l).str() == "tensor([[-1.0813,  0.0000,  0.0000],\n"
                         "        [ 0.0935,  0.1380,  0.0000],\n"
                         "        [-0.3409, -0.9828,  0.0289]])");
  Tensor lb = tensor({{1.2219, 0.5653, -0.2521, -0.2345, 1.2544, 0.3461},
                      {0.4785, -0.4477, 0.6049, 0.6368, 0.8775, 0.7145},
                      {1.1502, 3.2716, -1.1243, -0.5413, 0.3615, 0.6864},
                      {-0.0614, -0.7344, -1.3164, -0.7648, -1.4024, 0.0978}});
  CHECK(lb.str() == "tensor([[ 1.2219,  0.5653, -0.2521, -0.2345,  1.2544,  0.3461],\n"
                    "        [ 0.4785, -0.4477,  0.6049,  0.6368,  0.8775,  0.7145],\n"
                    "        [ 1.1502,  3.2716, -1.1243, -0.5413,  0.3615,  0.6864],\n"
                    "        [-0.0614, -0.7344, -1.3164, -0.7648, -1.4024,  0.0978]])");
  CHECK(tril(lb, 1).str() == "tensor([[ 1.2219,  0.5653,  0.0000,  0.0000,  0.0000,  0.0000],\n"
                             "        [ 0.4785, -0.4477,  0.6049,  0.0000,  0.0000,  0.0000],\n"
                             "        [ 1.1502,  3.2716, -1.1243, -0.5413,  0.0000,  0.0000],\n"
                             "        [-0.0614, -0.7344, -1.3164, -0.7648, -1.4024,  0.0000]])");
  CHECK(tril(lb, -1).str() == "tensor([[ 0.0000,  0.0000,  0.0000,  0.0000,  0.0000,  0.0000],\n"
                              "        [ 0.4785,  0.0000,  0.0000,  0.0000,  0.0000,  0.0000],\n"
                              "        [ 1.1502,  3.2716,  0.0000,  0.0000,  0.0000,  0.0000],\n"
                              "        [-0.0614, -0.7344, -1.3164,  0.0000,  0.0000,  0.0000]])");
}

TEST_CASE("examples, indexing: broadcasting a row against a column", "[examples]") {
  Tensor x = arange(1, 3).view({1, 2});
  CHECK(x.str() == "tensor([[1, 2]])");
  Tensor y = arange(1, 4).view({3, 1});
  CHECK(y.str() == "tensor([[1],\n"
                   "        [2],\n"
                   "        [3]])");
  CHECK((x + y).str() == "tensor([[2, 3],\n"
                         "        [3, 4],\n"
                         "        [4, 5]])");
}

TEST_CASE("examples, indexing: writing a result into the memory it came from", "[examples]") {
  Tensor x = tensor({1, 2});
  Tensor y = tensor({3, 4});
  Tensor before = y; // the same tensor, as id(y) is
  y = y + x;         // a new tensor: `before` keeps the old values
  CHECK(y.str() == "tensor([4, 6])");
  CHECK(before.str() == "tensor([3, 4])");

  y = tensor({3, 4});
  before = y;
  y.index_put_({Slice()}, y + x); // y[:] = y + x
  CHECK(before.str() == "tensor([4, 6])");

  y = tensor({3, 4});
  before = y;
  add_out(y, x, y); // torch.add(x, y, out=y)
  CHECK(before.str() == "tensor([4, 6])");
  y += x;
  CHECK(before.str() == "tensor([5, 8])");
  y.add_(x);
  CHECK(before.str() == "tensor([ 6, 10])");
  CHECK_FALSE(y.requires_grad());
}
