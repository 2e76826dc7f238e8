// Tests for tj::detail::repr: PyTorch's tensor repr, character for character.
#include <catch2/catch.hpp>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "lib/print/tensor_print.h"

using tj::detail::PrintSource;
using tj::detail::PrintSuffixes;
using tj::detail::repr;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A floating source. float32 values are rounded to float first, as a float32
// tensor would hold them; float16/bfloat16 values must already be exact.
PrintSource floats(std::vector<double> values, std::vector<int64_t> shape,
                   tj::DType dtype = tj::kFloat32) {
  if (dtype == tj::kFloat32)
    for (double& v : values)
      v = static_cast<double>(static_cast<float>(v));
  auto data = std::make_shared<std::vector<double>>(std::move(values));
  return {dtype, std::move(shape), [data](int64_t i) { return data->at(i); }, nullptr, nullptr};
}

PrintSource ints(std::vector<int64_t> values, std::vector<int64_t> shape,
                 tj::DType dtype = tj::kInt64) {
  auto data = std::make_shared<std::vector<int64_t>>(std::move(values));
  return {dtype, std::move(shape), nullptr, [data](int64_t i) { return data->at(i); }, nullptr};
}

PrintSource bools(std::vector<int64_t> values, std::vector<int64_t> shape) {
  return ints(std::move(values), std::move(shape), tj::kBool);
}

// torch.arange(n) in the given dtype, with a shape.
PrintSource arange(int64_t n, std::vector<int64_t> shape, tj::DType dtype = tj::kInt64,
                   double scale = 1.0) {
  if (tj::is_floating_point(dtype)) {
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i)
      v[i] = static_cast<double>(i) * scale;
    return floats(std::move(v), std::move(shape), dtype);
  }
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = i;
  return ints(std::move(v), std::move(shape), dtype);
}

// Restores the process-wide print options and default dtype after a test.
struct PrintStateGuard {
  PrintStateGuard() { tj::reset_printoptions(); }
  ~PrintStateGuard() {
    tj::reset_printoptions();
    tj::set_default_dtype(tj::kFloat32);
  }
};

} // namespace

TEST_CASE("repr of the tensors tutorial", "[print]") {
  PrintStateGuard guard;
  CHECK(repr(floats({0.3126, 0.3791, 0.3087, 0.0736, 0.4216, 0.0691}, {2, 3})) ==
        "tensor([[0.3126, 0.3791, 0.3087],\n        [0.0736, 0.4216, 0.0691]])");
  CHECK(repr(floats({0, 0, 0, 0, 0, 0}, {2, 3})) ==
        "tensor([[0., 0., 0.],\n        [0., 0., 0.]])");
  CHECK(repr(ints({1, 1, 1, 1, 1, 1}, {2, 3}, tj::kInt16)) ==
        "tensor([[1, 1, 1],\n        [1, 1, 1]], dtype=torch.int16)");
  CHECK(repr(floats({0.99560, 1.41480, 5.83640, 11.24060, 11.20830, 11.66920}, {2, 3},
                    tj::kFloat64)) == "tensor([[ 0.9956,  1.4148,  5.8364],\n"
                                      "        [11.2406, 11.2083, 11.6692]], dtype=torch.float64)");
  CHECK(repr(ints({0, 1, 5, 11, 11, 11}, {2, 3}, tj::kInt32)) ==
        "tensor([[ 0,  1,  5],\n        [11, 11, 11]], dtype=torch.int32)");
  CHECK(repr(ints({2, 3, 5, 7, 11, 13, 17, 19}, {8})) ==
        "tensor([ 2,  3,  5,  7, 11, 13, 17, 19])");
  CHECK(repr(ints({2, 4, 6, 3, 6, 9}, {2, 3})) == "tensor([[2, 4, 6],\n        [3, 6, 9]])");
  CHECK(repr(floats({3.1415926, 2.71828, 1.61803, 0.0072897}, {2, 2})) ==
        "tensor([[3.1416, 2.7183],\n        [1.6180, 0.0073]])");
  CHECK(repr(floats({2, 4, 8, 16}, {2, 2})) == "tensor([[ 2.,  4.],\n        [ 8., 16.]])");
}

TEST_CASE("repr of uninitialized-looking memory uses sci mode", "[print]") {
  PrintStateGuard guard;
  // torch.empty(3, 4): one negative value reserves a sign column for all.
  CHECK(repr(floats({-2.9717e-03, 4.5766e-41, -3.0549e-03, 4.5766e-41, -3.0548e-03, 4.5766e-41,
                     -1.3234e-11, 4.5765e-41, -2.3587e-11, 4.5765e-41, -1.3237e-11, 4.5765e-41},
                    {3, 4})) == "tensor([[-2.9717e-03,  4.5766e-41, -3.0549e-03,  4.5766e-41],\n"
                                "        [-3.0548e-03,  4.5766e-41, -1.3234e-11,  4.5765e-41],\n"
                                "        [-2.3587e-11,  4.5765e-41, -1.3237e-11,  4.5765e-41]])");
  // torch.empty(2, 2, 3): zeros print in sci too; a blank line between blocks.
  CHECK(repr(floats({1.1902e+21, 3.0950e-41, 0, 9.4040e-38, -1.4045e+38, 3.0942e-41, 1.0842e-19, 0,
                     3.8942e-35, 3.0943e-41, 5.1288e-35, 3.0943e-41},
                    {2, 2, 3})) == "tensor([[[ 1.1902e+21,  3.0950e-41,  0.0000e+00],\n"
                                   "         [ 9.4040e-38, -1.4045e+38,  3.0942e-41]],\n"
                                   "\n"
                                   "        [[ 1.0842e-19,  0.0000e+00,  3.8942e-35],\n"
                                   "         [ 3.0943e-41,  5.1288e-35,  3.0943e-41]]])");
}

TEST_CASE("repr of integer-valued floats", "[print]") {
  PrintStateGuard guard;
  // -0 is not a nonzero value, so it does not widen the column: ceil() of
  // values in (-1, 1) prints "-0., 1." with one space.
  CHECK(repr(floats({-0.0, -0.0, 1, -0.0, -0.0, 1, 1, -0.0}, {2, 4})) ==
        "tensor([[-0., -0., 1., -0.],\n        [-0., 1., 1., -0.]])");
  // floor(): -1 does widen it.
  CHECK(repr(floats({-1, -1, 0, -1, -1, 0, 0, -1}, {2, 4})) ==
        "tensor([[-1., -1.,  0., -1.],\n        [-1.,  0.,  0., -1.]])");
  CHECK(repr(floats({0, 0, -1}, {3})) == "tensor([ 0.,  0., -1.])");
  CHECK(repr(floats({1, 561, 1, 1}, {2, 2})) == "tensor([[  1., 561.],\n        [  1.,   1.]])");
  CHECK(repr(floats({1, 1000}, {2})) == "tensor([   1., 1000.])");
  // A ratio over 1000, or a value over 1e8, switches integers to sci mode.
  CHECK(repr(floats({1, 2000}, {2})) == "tensor([1.0000e+00, 2.0000e+03])");
  CHECK(repr(floats({1, 1e9}, {2})) == "tensor([1.0000e+00, 1.0000e+09])");
}

TEST_CASE("repr of bool tensors", "[print]") {
  PrintStateGuard guard;
  CHECK(repr(bools({1, 0, 0, 0}, {2, 2})) == "tensor([[ True, False],\n        [False, False]])");
  CHECK(repr(bools({1, 1}, {2})) == "tensor([True, True])");
  CHECK(repr(bools({0}, {})) == "tensor(False)");
}

TEST_CASE("repr of 0-d tensors", "[print]") {
  PrintStateGuard guard;
  CHECK(repr(floats({4}, {})) == "tensor(4.)");
  CHECK(repr(floats({2.5}, {})) == "tensor(2.5000)");
  CHECK(repr(floats({0}, {})) == "tensor(0.)");
  CHECK(repr(floats({-0.0}, {})) == "tensor(-0.)");
  CHECK(repr(floats({kNan}, {})) == "tensor(nan)");
  CHECK(repr(floats({-kInf}, {})) == "tensor(-inf)");
  CHECK(repr(floats({1e-5}, {})) == "tensor(1.0000e-05)");
  CHECK(repr(floats({1e10}, {})) == "tensor(1.0000e+10)");
  CHECK(repr(floats({-2.5}, {}, tj::kFloat64)) == "tensor(-2.5000, dtype=torch.float64)");
  CHECK(repr(ints({7}, {})) == "tensor(7)");
  CHECK(repr(ints({3}, {}, tj::kInt32)) == "tensor(3, dtype=torch.int32)");
  CHECK(repr(bools({1}, {})) == "tensor(True)");
}

TEST_CASE("repr of tensors with three or more dims", "[print]") {
  PrintStateGuard guard;
  CHECK(repr(floats(std::vector<double>(12, 1.0), {2, 2, 3})) == "tensor([[[1., 1., 1.],\n"
                                                                 "         [1., 1., 1.]],\n"
                                                                 "\n"
                                                                 "        [[1., 1., 1.],\n"
                                                                 "         [1., 1., 1.]]])");
  // A batch of near-identity matrices (A @ A_inv).
  CHECK(repr(floats({1.0, -6.0486e-07, 1.3859e-06, 5.5627e-08, 1.0, 1.0795e-06, -1.4133e-07,
                     7.9992e-08, 1.0, 1.0, 4.3329e-08, -3.6741e-09, -7.4627e-08, 1.0, 1.4579e-07,
                     -6.3580e-08, 8.2354e-08, 1.0},
                    {2, 3, 3})) == "tensor([[[ 1.0000e+00, -6.0486e-07,  1.3859e-06],\n"
                                   "         [ 5.5627e-08,  1.0000e+00,  1.0795e-06],\n"
                                   "         [-1.4133e-07,  7.9992e-08,  1.0000e+00]],\n"
                                   "\n"
                                   "        [[ 1.0000e+00,  4.3329e-08, -3.6741e-09],\n"
                                   "         [-7.4627e-08,  1.0000e+00,  1.4579e-07],\n"
                                   "         [-6.3580e-08,  8.2354e-08,  1.0000e+00]]])");
  // 4-D: two blank lines between the outermost blocks.
  CHECK(repr(arange(4, {2, 1, 1, 2}, tj::kFloat32)) ==
        "tensor([[[[0., 1.]]],\n\n\n        [[[2., 3.]]]])");
}

TEST_CASE("repr summarizes tensors over the threshold", "[print]") {
  PrintStateGuard guard;
  CHECK(repr(arange(10000, {10000}, tj::kFloat32)) ==
        "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9970e+03, 9.9980e+03,\n"
        "        9.9990e+03])");
  CHECK(repr(arange(10000, {10000})) == "tensor([   0,    1,    2,  ..., 9997, 9998, 9999])");
  const std::string int_100x100 = "tensor([[   0,    1,    2,  ...,   97,   98,   99],\n"
                                  "        [ 100,  101,  102,  ...,  197,  198,  199],\n"
                                  "        [ 200,  201,  202,  ...,  297,  298,  299],\n"
                                  "        ...,\n"
                                  "        [9700, 9701, 9702,  ..., 9797, 9798, 9799],\n"
                                  "        [9800, 9801, 9802,  ..., 9897, 9898, 9899],\n"
                                  "        [9900, 9901, 9902,  ..., 9997, 9998, 9999]])";
  CHECK(repr(arange(10000, {100, 100})) == int_100x100);

  // The formatter sees only the edge items: a hidden huge value changes nothing.
  std::vector<int64_t> v(10000);
  for (int64_t i = 0; i < 10000; ++i)
    v[i] = i;
  v[50 * 100 + 50] = 1000000000;
  CHECK(repr(ints(v, {100, 100})) == int_100x100);

  CHECK(repr(arange(10000, {100, 100}, tj::kFloat32, 0.01)) ==
        "tensor([[0.0000e+00, 1.0000e-02, 2.0000e-02,  ..., 9.7000e-01, 9.8000e-01,\n"
        "         9.9000e-01],\n"
        "        [1.0000e+00, 1.0100e+00, 1.0200e+00,  ..., 1.9700e+00, 1.9800e+00,\n"
        "         1.9900e+00],\n"
        "        [2.0000e+00, 2.0100e+00, 2.0200e+00,  ..., 2.9700e+00, 2.9800e+00,\n"
        "         2.9900e+00],\n"
        "        ...,\n"
        "        [9.7000e+01, 9.7010e+01, 9.7020e+01,  ..., 9.7970e+01, 9.7980e+01,\n"
        "         9.7990e+01],\n"
        "        [9.8000e+01, 9.8010e+01, 9.8020e+01,  ..., 9.8970e+01, 9.8980e+01,\n"
        "         9.8990e+01],\n"
        "        [9.9000e+01, 9.9010e+01, 9.9020e+01,  ..., 9.9970e+01, 9.9980e+01,\n"
        "         9.9990e+01]])");
}

TEST_CASE("repr wraps long rows at the line width", "[print]") {
  PrintStateGuard guard;
  CHECK(repr(arange(30, {30}, tj::kFloat32)) ==
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
        "        28., 29.])");
  CHECK(repr(floats({1.0000e+02, -4.8445e-01, 1.5515e+00, -2.5042e-01, 2.0102e-01, 1.8231e-02,
                     3.9969e-02, 3.9711e-02, 2.0167e+00, 1.8868e+00, -4.6697e-01, 5.9683e-01,
                     9.0702e-01, 5.8254e-01, -1.0549e+00},
                    {15})) ==
        "tensor([ 1.0000e+02, -4.8445e-01,  1.5515e+00, -2.5042e-01,  2.0102e-01,\n"
        "         1.8231e-02,  3.9969e-02,  3.9711e-02,  2.0167e+00,  1.8868e+00,\n"
        "        -4.6697e-01,  5.9683e-01,  9.0702e-01,  5.8254e-01, -1.0549e+00])");
}

TEST_CASE("repr chooses sci mode from the nonzero finite values", "[print]") {
  PrintStateGuard guard;
  // torch.logspace(2, 10, 4)
  CHECK(repr(floats({1e2, 46415.888336, 21544346.900318, 1e10}, {4})) ==
        "tensor([1.0000e+02, 4.6416e+04, 2.1544e+07, 1.0000e+10])");
  CHECK(repr(floats({1e-5, 1}, {2})) == "tensor([1.0000e-05, 1.0000e+00])");
  // 1e-4 as float32 is just below 1e-4; as float64 it is not.
  CHECK(repr(floats({1e-4, 0.05}, {2})) == "tensor([1.0000e-04, 5.0000e-02])");
  CHECK(repr(floats({1e-4, 0.05}, {2}, tj::kFloat64)) ==
        "tensor([0.0001, 0.0500], dtype=torch.float64)");
  CHECK(repr(floats({7.9394e-35, 0, 3.3631e-44, 0, kNan}, {5})) ==
        "tensor([7.9394e-35, 0.0000e+00, 3.3631e-44, 0.0000e+00,        nan])");
}

TEST_CASE("repr of nan and inf", "[print]") {
  PrintStateGuard guard;
  // Non-finite values do not count toward the width.
  CHECK(repr(floats({1, kNan, kInf, -kInf}, {4})) == "tensor([1., nan, inf, -inf])");
  CHECK(repr(floats({1.5, kNan, -kInf}, {3})) == "tensor([1.5000,    nan,   -inf])");
  CHECK(repr(floats({kNan, kNan}, {2})) == "tensor([nan, nan])");
  CHECK(repr(floats({0, kNan}, {2})) == "tensor([0., nan])");
  // A negative NaN still prints as Python prints it.
  CHECK(repr(floats({-kNan, 2.5}, {2}, tj::kFloat64)) ==
        "tensor([   nan, 2.5000], dtype=torch.float64)");
}

TEST_CASE("repr rounds as Python's format does", "[print]") {
  PrintStateGuard guard;
  // 1/32 is an exact tie at 4 decimals: half to even.
  CHECK(repr(floats({0.03125, 1}, {2})) == "tensor([0.0312, 1.0000])");
  // 0.00005 is just above the tie as a double, just below it as a float.
  tj::set_printoptions(std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                       std::optional<bool>(false));
  CHECK(repr(floats({0.00005, 1}, {2}, tj::kFloat64)) ==
        "tensor([0.0001, 1.0000], dtype=torch.float64)");
  CHECK(repr(floats({0.00005, 1}, {2})) == "tensor([0.0000, 1.0000])");
  tj::reset_printoptions();
  tj::set_printoptions(0);
  CHECK(repr(floats({2.5, 0.5, 1.5}, {3})) == "tensor([2, 0, 2])");
  // As torch.set_printoptions, a call without sci_mode chooses it from the values again.
  tj::set_printoptions(std::nullopt, std::nullopt, std::nullopt, std::nullopt, true);
  tj::set_printoptions(2);
  CHECK(repr(floats({1.5, 2}, {2})) == "tensor([1.50, 2.00])");
}

TEST_CASE("repr dtype suffixes", "[print]") {
  PrintStateGuard guard;
  CHECK(repr(floats({0.0999755859375, 65504, -2}, {3}, tj::kFloat16)) ==
        "tensor([ 9.9976e-02,  6.5504e+04, -2.0000e+00], dtype=torch.float16)");
  CHECK(repr(floats({0.10009765625, 3}, {2}, tj::kBFloat16)) ==
        "tensor([0.1001, 3.0000], dtype=torch.bfloat16)");
  CHECK(repr(ints({-128, 0, 127}, {3}, tj::kInt8)) ==
        "tensor([-128,    0,  127], dtype=torch.int8)");
  CHECK(repr(ints({0, 7, 255}, {3}, tj::kUInt8)) == "tensor([  0,   7, 255], dtype=torch.uint8)");
  CHECK(repr(ints({std::numeric_limits<int64_t>::min(), 0, std::numeric_limits<int64_t>::max()},
                  {3})) == "tensor([-9223372036854775808,                    0,  "
                           "9223372036854775807])");

  SECTION("the default dtype is float64") {
    tj::set_default_dtype(tj::kFloat64);
    CHECK(repr(floats({1.5, 2}, {2}, tj::kFloat64)) == "tensor([1.5000, 2.0000])");
    CHECK(repr(floats({1.5, 2}, {2})) == "tensor([1.5000, 2.0000], dtype=torch.float32)");
    CHECK(repr(floats({}, {0})) == "tensor([], dtype=torch.float32)");
  }
}

TEST_CASE("repr of empty tensors", "[print]") {
  PrintStateGuard guard;
  CHECK(repr(floats({}, {0})) == "tensor([])");
  CHECK(repr(floats({}, {0, 3})) == "tensor([], size=(0, 3))");
  CHECK(repr(floats({}, {0}, tj::kFloat64)) == "tensor([], dtype=torch.float64)");
  // With no elements, even int64 and bool spell out their dtype.
  CHECK(repr(ints({}, {0})) == "tensor([], dtype=torch.int64)");
  CHECK(repr(bools({}, {2, 0, 4})) == "tensor([], size=(2, 0, 4), dtype=torch.bool)");
}

TEST_CASE("repr autograd and device suffixes", "[print]") {
  PrintStateGuard guard;
  PrintSuffixes leaf;
  leaf.requires_grad = true;
  CHECK(repr(floats({1, 2, 3}, {3}), leaf) == "tensor([1., 2., 3.], requires_grad=True)");
  CHECK(repr(floats({1, 2}, {2}, tj::kFloat64), leaf) ==
        "tensor([1., 2.], dtype=torch.float64, requires_grad=True)");

  PrintSuffixes mul;
  mul.grad_fn = "MulBackward0";
  mul.requires_grad = true; // a grad_fn replaces requires_grad=True
  CHECK(repr(floats({2, 4, 6}, {3}), mul) == "tensor([2., 4., 6.], grad_fn=<MulBackward0>)");
  PrintSuffixes add;
  add.grad_fn = "AddBackward0";
  CHECK(repr(floats({1, 2}, {2}, tj::kFloat64), add) ==
        "tensor([1., 2.], dtype=torch.float64, grad_fn=<AddBackward0>)");

  // Derived from _str_intern: the device comes first.
  PrintSuffixes cuda;
  cuda.device = "cuda:0";
  CHECK(repr(floats({1, 2}, {2}), cuda) == "tensor([1., 2.], device='cuda:0')");
  cuda.grad_fn = "AddBackward0";
  CHECK(repr(ints({1, 2}, {2}, tj::kInt32), cuda) ==
        "tensor([1, 2], device='cuda:0', dtype=torch.int32, grad_fn=<AddBackward0>)");
  cuda.grad_fn.clear();
  CHECK(repr(floats({}, {0, 2}), cuda) == "tensor([], device='cuda:0', size=(0, 2))");
}

TEST_CASE("repr puts a suffix that does not fit on its own line", "[print]") {
  PrintStateGuard guard;
  CHECK(repr(arange(9, {9}, tj::kFloat64, 0.125)) ==
        "tensor([0.0000, 0.1250, 0.2500, 0.3750, 0.5000, 0.6250, 0.7500, 0.8750, 1.0000],\n"
        "       dtype=torch.float64)");
  CHECK(repr(arange(18, {2, 9}, tj::kFloat64, 0.125)) ==
        "tensor([[0.0000, 0.1250, 0.2500, 0.3750, 0.5000, 0.6250, 0.7500, 0.8750, 1.0000],\n"
        "        [1.1250, 1.2500, 1.3750, 1.5000, 1.6250, 1.7500, 1.8750, 2.0000, 2.1250]],\n"
        "       dtype=torch.float64)");
  // The boundary: 78 characters stay on one line, one more element wraps.
  CHECK(repr(ints(std::vector<int64_t>(17, 0), {17}, tj::kInt32)) ==
        "tensor([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], dtype=torch.int32)");
  CHECK(repr(ints(std::vector<int64_t>(18, 0), {18}, tj::kInt32)) ==
        "tensor([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],\n"
        "       dtype=torch.int32)");
  PrintSuffixes leaf;
  leaf.requires_grad = true;
  CHECK(repr(arange(9, {9}, tj::kFloat64, 0.125), leaf) ==
        "tensor([0.0000, 0.1250, 0.2500, 0.3750, 0.5000, 0.6250, 0.7500, 0.8750, 1.0000],\n"
        "       dtype=torch.float64, requires_grad=True)");
}

TEST_CASE("print options", "[print]") {
  PrintStateGuard guard;
  const tj::PrintOptions& opts = tj::get_printoptions();
  CHECK(opts.precision == 4);
  CHECK(opts.threshold == 1000);
  CHECK(opts.edgeitems == 3);
  CHECK(opts.linewidth == 80);
  CHECK_FALSE(opts.sci_mode.has_value());

  SECTION("precision") {
    tj::set_printoptions(2);
    CHECK(opts.precision == 2);
    CHECK(repr(floats({1.12345}, {1})) == "tensor([1.12])");
    CHECK(repr(floats({0.3126, 0.3791, 0.3087, 0.0736, 0.4216, 0.0691}, {2, 3})) ==
          "tensor([[0.31, 0.38, 0.31],\n        [0.07, 0.42, 0.07]])");
    CHECK(repr(floats({123.456, 1e-3}, {2})) == "tensor([1.23e+02, 1.00e-03])");
    CHECK(repr(floats({2.5}, {})) == "tensor(2.50)");
    tj::reset_printoptions();
    CHECK(repr(floats({1.12345}, {1})) == "tensor([1.1235])");
  }

  SECTION("sci_mode=False") {
    tj::set_printoptions(std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                         std::optional<bool>(false));
    CHECK(opts.sci_mode == std::optional<bool>(false));
    // The width follows the forced mode, as in current PyTorch.
    CHECK(repr(floats({1e2, 46415.888336, 21544346.900318, 1e10}, {4})) ==
          "tensor([        100.0000,       46415.8867,    21544346.0000, 10000000000.0000])");
    CHECK(repr(floats({1e-5, 1}, {2})) == "tensor([0.0000, 1.0000])");
    CHECK(repr(floats({1, 2000}, {2})) == "tensor([   1., 2000.])");
    // A call that leaves sci_mode out goes back to choosing it from the values (PyTorch's rule).
    tj::set_printoptions(4);
    CHECK_FALSE(opts.sci_mode.has_value());
    CHECK(repr(floats({1e-5, 1}, {2})) == "tensor([1.0000e-05, 1.0000e+00])");
  }

  SECTION("sci_mode=True") {
    tj::set_printoptions(std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                         std::optional<bool>(true));
    CHECK(repr(floats({1.5, 2}, {2})) == "tensor([1.5000e+00, 2.0000e+00])");
    CHECK(repr(floats({1, -2}, {2})) == "tensor([ 1.0000e+00, -2.0000e+00])");
    CHECK(repr(floats({3}, {})) == "tensor(3.0000e+00)");
    // With no nonzero finite value PyTorch never looks at sci_mode.
    CHECK(repr(floats({0, 0}, {2})) == "tensor([0., 0.])");
    // Integers are never in sci mode.
    CHECK(repr(ints({1, 2}, {2})) == "tensor([1, 2])");
  }

  SECTION("threshold and edgeitems") {
    tj::set_printoptions(std::nullopt, 5);
    CHECK(repr(arange(10, {10})) == "tensor([0, 1, 2,  ..., 7, 8, 9])");
    tj::set_printoptions(std::nullopt, 20, 1);
    CHECK(repr(arange(100, {10, 10}, tj::kFloat32)) ==
          "tensor([[ 0.,  ...,  9.],\n        ...,\n        [90.,  ..., 99.]])");
    // Derived from current _tensor_str.py: edgeitems=0 shows only "..." and the size.
    tj::set_printoptions(std::nullopt, 5, 0);
    CHECK(repr(arange(10, {10})) == "tensor([...], size=(10,))");
    CHECK(repr(arange(16, {4, 4}, tj::kFloat32)) == "tensor([...], size=(4, 4))");
    CHECK(repr(arange(3, {3}, tj::kFloat32)) == "tensor([0., 1., 2.], size=(3,))");
  }

  SECTION("linewidth") {
    tj::set_printoptions(std::nullopt, std::nullopt, std::nullopt, 40);
    CHECK(repr(arange(20, {20}, tj::kFloat32)) == "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,\n"
                                                  "         6.,  7.,  8.,  9., 10., 11.,\n"
                                                  "        12., 13., 14., 15., 16., 17.,\n"
                                                  "        18., 19.])");
    tj::set_printoptions(std::nullopt, std::nullopt, std::nullopt, 5);
    CHECK(repr(floats({1.5, 2.5}, {2})) == "tensor([1.5000,\n        2.5000])");
  }

  SECTION("bad values") {
    CHECK_THROWS_WITH(tj::set_printoptions(-1),
                      "set_printoptions: precision must be non-negative, got -1");
    CHECK_THROWS_WITH(tj::set_printoptions(std::nullopt, std::nullopt, -2),
                      "set_printoptions: edgeitems must be non-negative, got -2");
    CHECK(opts.precision == 4);
  }
}
