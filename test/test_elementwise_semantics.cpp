// Ops where PyTorch's CPU kernels compute otherwise than the op's plain formula in the result's
// dtype: bounds that are NaN, scalars checked against the dtype, 16-bit floats by a scalar in
// float32, pow's special exponents, 16-bit composites rounded once; and the edges of isclose,
// arange, randint, softmax and cross_entropy.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cmath>
#include <vector>

using namespace tj;

namespace {

// Python's floor division in float32, as PyTorch's div_floor computes it.
float div_floor(float a, float b) {
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div == 0) return std::copysign(0.0f, a / b);
  float fl = std::floor(div);
  if (div - fl > 0.5f) fl += 1;
  return fl;
}

// Each element of `v` rounded to dtype t (through float64, exact for every value here).
std::vector<double> rounded(const std::vector<double>& v, DType t) {
  return tensor(v, TensorOptions().dtype(kFloat64)).to(t).to_vector<double>();
}

} // namespace

TEST_CASE("clamp with a NaN bound fills with NaN; scalars must fit the dtype", "[elementwise]") {
  // Both bounds given and one NaN: NaN everywhere (PyTorch fills the result); one bound alone,
  // NaN, leaves the values as they are.
  CHECK(tensor({-2.0, 0.5, 3.0}).clamp(NAN, 1.0).str() == "tensor([nan, nan, nan])");
  CHECK(tensor({-2.0, 0.5, 3.0}).clamp(0.0, NAN).str() == "tensor([nan, nan, nan])");
  CHECK(tensor({-5, 0, 5}).clamp(NAN, 1.0).str() == "tensor([nan, nan, nan])");
  CHECK(tensor({-2.0, 0.5, 3.0}).clamp_min(NAN).str() == "tensor([-2.0000,  0.5000,  3.0000])");
  // A scalar a kernel takes in the tensor's dtype is checked, as PyTorch's Scalar::to<T>.
  Tensor u8 = tensor({100, 200}, TensorOptions().dtype(kUInt8));
  CHECK_THROWS_WITH(u8.clamp_max(300),
                    "value cannot be converted to type uint8_t without overflow");
  CHECK_THROWS_WITH(tensor({1, 2}, TensorOptions().dtype(kInt8)).clamp(-1, 1000),
                    "value cannot be converted to type int8_t without overflow");
  CHECK_THROWS_WITH(tensor({1.0}, TensorOptions().dtype(kFloat16)).clamp(0.5, 1e6),
                    "value cannot be converted to type at::Half without overflow");
  CHECK_THROWS_WITH(tensor({1.0}).clamp(0.0, 1e300),
                    "value cannot be converted to type float without overflow");
  CHECK_THROWS_WITH(tensor({2}, TensorOptions().dtype(kInt8)).pow(257),
                    "value cannot be converted to type int8_t without overflow");
  CHECK_THROWS_WITH(full({2}, 300, TensorOptions().dtype(kUInt8)),
                    "value cannot be converted to type uint8_t without overflow");
  CHECK_THROWS_WITH(u8.clone().fill_(256),
                    "value cannot be converted to type uint8_t without overflow");
  CHECK_THROWS_WITH(u8.masked_fill(u8 > 150, 300),
                    "value cannot be converted to type uint8_t without overflow");
  CHECK_THROWS_WITH(full({1}, NAN, TensorOptions().dtype(kInt32)),
                    "value cannot be converted to type int without overflow");
  CHECK_THROWS_WITH(full({1}, 0x1p63, TensorOptions().dtype(kInt64)),
                    "value cannot be converted to type int64_t without overflow");
  Tensor filled = u8.clone();
  CHECK_THROWS_WITH(filled.index_put_({filled > 150}, tensor(300)),
                    "value cannot be converted to type uint8_t without overflow");
  // What fits: a negative integer wraps into uint8 (down to -255), infinities and NaN into
  // floats, anything into bool; arithmetic with a scalar wraps as it always has.
  CHECK(full({1}, -1, TensorOptions().dtype(kUInt8)).item<int64_t>() == 255);
  CHECK(full({1}, INFINITY, TensorOptions().dtype(kFloat16)).item<double>() == INFINITY);
  CHECK(full({1}, 300, TensorOptions().dtype(kBool)).item<bool>());
  CHECK((u8 + 300).to_vector<int64_t>() == std::vector<int64_t>{144, 244});
  CHECK(u8.clamp_max(150).to_vector<int64_t>() == std::vector<int64_t>{100, 150});
}

TEST_CASE("16-bit floats times or over a scalar compute in float32", "[elementwise]") {
  // PyTorch's kernels take the scalar's own value (not rounded to 16 bits) and round the result
  // once: 7 * (1/3) is 2.334 in float16, not 2.332 (the product by 0.33325).
  const double third = 1.0 / 3;
  const float third_f = static_cast<float>(third);
  for (DType t : {kFloat16, kBFloat16}) {
    INFO(dtype_name(t));
    const std::vector<double> v{7, -3.5, 0.1, 1000, 65.25};
    Tensor x = tensor(v, TensorOptions().dtype(kFloat64)).to(t);
    std::vector<double> xs = x.to_vector<double>(), prod, quot, floor_q;
    for (double e : xs) {
      prod.push_back(double(float(e) * third_f));
      quot.push_back(double(float(e) / 0.1f));
      floor_q.push_back(double(div_floor(float(e), 0.1f)));
    }
    CHECK((x * third).to_vector<double>() == rounded(prod, t));
    CHECK((third * x).to_vector<double>() == rounded(prod, t));
    CHECK((x * tensor(third, TensorOptions().dtype(kFloat64))).to_vector<double>() ==
          rounded(prod, t));
    CHECK((x / 0.1).to_vector<double>() == rounded(quot, t));
    CHECK(floor_divide(x, tensor(0.1, TensorOptions().dtype(kFloat64))).to_vector<double>() ==
          rounded(floor_q, t));
  }
  CHECK((tensor({7.0}, TensorOptions().dtype(kFloat16)) * third).str() ==
        "tensor([2.3340], dtype=torch.float16)");
}

TEST_CASE("pow's special exponents are computed as PyTorch's kernel computes them",
          "[elementwise]") {
  // float32, float64 and bfloat16: 0.5 a square root, -0.5 its reciprocal, 3 and -2 products
  // rounded at each step; float16 takes pow for them.
  CHECK(tensor({-0.0, -INFINITY}).pow(-0.5).str() == "tensor([-inf, nan])");
  CHECK(tensor({-0.0, -INFINITY}).pow(0.5).str() == "tensor([-0., nan])");
  CHECK(tensor({-0.0, -INFINITY}, TensorOptions().dtype(kFloat16)).pow(0.5).str() ==
        "tensor([0., inf], dtype=torch.float16)");
  manual_seed(5);
  Tensor x = (rand({1000}) * 4 + 0.1).eval();
  std::vector<float> v = x.to_vector<float>(), cube = x.pow(3).to_vector<float>(),
                     inv_sq = x.pow(-2).to_vector<float>();
  int64_t off = 0;
  for (size_t i = 0; i < v.size(); ++i)
    off += cube[i] != v[i] * v[i] * v[i] || inv_sq[i] != 1.0f / (v[i] * v[i]);
  CHECK(off == 0);
  // bfloat16: x * x rounded to bfloat16, then times x rounded again.
  Tensor b = x.to(kBFloat16);
  std::vector<double> bv = b.to_vector<double>(), sq, want;
  for (double e : bv)
    sq.push_back(e * e);
  sq = rounded(sq, kBFloat16);
  for (size_t i = 0; i < bv.size(); ++i)
    want.push_back(sq[i] * bv[i]);
  CHECK(b.pow(3).to_vector<double>() == rounded(want, kBFloat16));
  // Gradients stay pow's.
  Tensor g = tensor({2.0, 3.0}, TensorOptions().requires_grad(true));
  Tensor y = g.pow(3);
  CHECK(y.str() == "tensor([ 8., 27.], grad_fn=<PowBackward0>)");
  y.sum().backward();
  CHECK(g.grad().to_vector<float>() == std::vector<float>{12, 27});
}

TEST_CASE("16-bit composites compute in float32 and round once", "[elementwise]") {
  // sigmoid, gelu and rsqrt of float16 and bfloat16: the float32 result rounded to 16 bits, as
  // PyTorch's kernels give it (each step rounded, gelu's 1/sqrt(2) in bfloat16 is 0.707).
  manual_seed(9);
  Tensor x32 = (randn({2000}) * 3).eval();
  for (DType t : {kFloat16, kBFloat16}) {
    INFO(dtype_name(t));
    Tensor x = x32.to(t);
    Tensor xf = x.to(kFloat32); // the 16-bit values, exactly
    CHECK(sigmoid(x).to_vector<double>() == sigmoid(xf).to(t).to_vector<double>());
    CHECK(gelu(x).to_vector<double>() == gelu(xf).to(t).to_vector<double>());
    Tensor pos = x.abs() + 0.01;
    CHECK(rsqrt(pos).to_vector<double>() == rsqrt(pos.to(kFloat32)).to(t).to_vector<double>());
  }
}

TEST_CASE("isclose holds integers and bools to their tolerances", "[elementwise]") {
  // PyTorch's isclose: |a - b| <= atol + |rtol b| in every dtype (an integer's tolerance is a
  // float; bools count as floats), tolerances non-negative.
  CHECK(isclose(tensor({1, 2}), tensor({1, 3}), 0.5, 0.6).str() == "tensor([True, True])");
  CHECK(isclose(tensor({100, 2}), tensor({101, 3}), 0.01, 0.0).str() == "tensor([ True, False])");
  CHECK(isclose(tensor({true, false}), tensor({false, false}), 0.0, 1.0).str() ==
        "tensor([True, True])");
  CHECK(allclose(tensor({1, 2}), tensor({1, 3}), 0.5, 0.6));
  CHECK_FALSE(allclose(tensor({1, 2}), tensor({1, 3})));
  CHECK_THROWS_WITH(isclose(tensor({1.0}), tensor({1.1}), -1.0),
                    "rtol must be greater than or equal to zero, but got -1");
  CHECK_THROWS_WITH(isclose(tensor({1.0}), tensor({1.1}), 1e-5, -1.0),
                    "atol must be greater than or equal to zero, but got -1");
  // Floats as before: NaN equal only with equal_nan, infinities equal only to themselves.
  CHECK(isclose(tensor({NAN, INFINITY, 1.0}), tensor({NAN, INFINITY, 1.000001})).str() ==
        "tensor([False,  True,  True])");
  CHECK(isclose(tensor({NAN}), tensor({NAN}), 1e-5, 1e-8, true).item<bool>());
}

TEST_CASE("creation and losses at PyTorch's edges", "[elementwise]") {
  // arange into an integer dtype takes start and step to int64 first (a step of 1.5 is 1), the
  // length still counted in double; bool has no kernel.
  CHECK(arange(0, 5, 1.5, TensorOptions().dtype(kInt32)).str() ==
        "tensor([0, 1, 2, 3], dtype=torch.int32)");
  CHECK(arange(0.7, 5, 1.5, TensorOptions().dtype(kInt32)).str() ==
        "tensor([0, 1, 2], dtype=torch.int32)");
  CHECK(arange(0, 5, 1.5).str() == "tensor([0.0000, 1.5000, 3.0000, 4.5000])");
  CHECK_THROWS_WITH(arange(1, 4, TensorOptions().dtype(kBool)),
                    "\"arange_cpu\" not implemented for 'Bool'");
  // randint's range must lie within the dtype.
  CHECK_THROWS_WITH(randint(0, 300, {3}, TensorOptions().dtype(kUInt8)),
                    "to - 1 is out of bounds for unsigned char");
  CHECK_THROWS_WITH(randint(-3, 3, {3}, TensorOptions().dtype(kUInt8)),
                    "from is out of bounds for unsigned char");
  CHECK(randint(0, 256, {100}, TensorOptions().dtype(kUInt8)).dtype() == kUInt8);
  // softmax takes floats only, as PyTorch's kernels.
  CHECK_THROWS_WITH(nn::functional::softmax(tensor({1, 2, 3}), 0),
                    "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'");
  CHECK_THROWS_WITH(nn::functional::log_softmax(tensor({{1, 2}, {3, 4}}), 0),
                    "\"log_softmax_kernel_impl\" not implemented for 'Long'");
  // cross_entropy skips targets equal to ignore_index (-100): the mean over the others.
  Tensor logits = tensor({{2.0, 1.0, 0.1}, {0.5, 2.5, 0.3}}).requires_grad_();
  Tensor loss = nn::functional::cross_entropy(logits, tensor({0, -100}));
  const double want =
      -(2.0 - std::log(std::exp(2.0) + std::exp(1.0) + std::exp(0.1))); // -log_softmax[0][0]
  CHECK(loss.item<double>() == Approx(want).epsilon(1e-6));
  loss.backward();
  CHECK(logits.grad()[1].to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK(std::isnan(
      nn::functional::cross_entropy(logits.detach(), tensor({-100, -100})).item<double>()));
}

TEST_CASE("div with a rounding mode and round with decimals, as PyTorch", "[elementwise]") {
  Tensor ints = tensor({7, -7});
  CHECK(div(ints, 2, "trunc").to_vector<int64_t>() == std::vector<int64_t>{3, -3});
  CHECK(div(ints, 2, "trunc").dtype() == kInt64);
  CHECK(ints.div(tensor({2, 2}), "floor").to_vector<int64_t>() == std::vector<int64_t>{3, -4});
  CHECK(div(ints, 2, std::nullopt).to_vector<double>() == std::vector<double>{3.5, -3.5});
  Tensor floats = tensor({7.5, -7.5});
  CHECK(div(floats, 2.0, "trunc").to_vector<double>() == std::vector<double>{3, -3});
  CHECK(div(floats, 2.0, "floor").to_vector<double>() == std::vector<double>{3, -4});
  CHECK_THROWS_WITH(div(ints, 2, "round"), "div expected rounding_mode to be one of None, "
                                           "'trunc', or 'floor' but found 'round'");
  CHECK_THROWS_WITH(div(ints, 0, "trunc"), "ZeroDivisionError");
  CHECK_THROWS_WITH(div(tensor({true}), tensor({true}), "trunc"),
                    "\"div_trunc_cpu\" not implemented for 'Bool'");
  // A rounded quotient passes zeros back: DivBackward2 (a tensor divisor), DivBackward3 (a number).
  Tensor x = tensor({3.0, -1.5}).requires_grad_();
  Tensor y = tensor({2.0, 2.0}).requires_grad_();
  Tensor q = x.div(y, "floor");
  CHECK(q.grad_fn()->name() == "DivBackward2");
  CHECK(x.div(2.0, "trunc").grad_fn()->name() == "DivBackward3");
  q.sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0});
  CHECK(y.grad().to_vector<double>() == std::vector<double>{0, 0});

  // round(decimals): x * 10^d rounded half to even, divided back; negative d to tens, ...
  CHECK(round(tensor({1.2345f, -2.5f, 0.125f}), 2).to_vector<float>() ==
        std::vector<float>{1.23f, -2.5f, 0.12f});
  CHECK(tensor({1234.5678, 1250.0}).round(-2).to_vector<double>() ==
        std::vector<double>{1200, 1200});
  CHECK(tensor({2.5}).to(kFloat16).round(0).to_vector<double>() == std::vector<double>{2});
  CHECK_THROWS_WITH(round(tensor({1, 2}), 1), "\"round_cpu\" not implemented for 'Long'");
  Tensor r = tensor({1.25}).requires_grad_().round(1);
  CHECK(r.grad_fn()->name() == "RoundBackward1");
}
