// Bad input gets tj::Error with PyTorch's wording, never a crash.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

using namespace tj;

TEST_CASE("dtype errors", "[errors]") {
  CHECK_THROWS_WITH(bitwise_xor(ones({2}), ones({2})),
                    "\"bitwise_xor_cpu\" not implemented for 'Float'");
  CHECK_THROWS_WITH(~ones({2}, dtype(kFloat64)),
                    "\"bitwise_not_cpu\" not implemented for 'Double'");
  Tensor b = tensor({true, false});
  CHECK_THROWS_WITH(
      b - b,
      Catch::StartsWith("Subtraction, the `-` operator, with two bool tensors is not supported."));
  CHECK_THROWS_WITH(
      -b, Catch::StartsWith("Negation, the `-` operator, on a bool tensor is not supported."));
  CHECK_THROWS_WITH(arange(3).requires_grad_(),
                    "only Tensors of floating point dtype can require gradients");
  CHECK_THROWS_WITH(arange(3).pow(-1), "Integers to negative integer powers are not allowed.");
  CHECK_THROWS_WITH(
      where(ones({2}), ones({2}), zeros({2})),
      "where expected condition to be a boolean tensor, but got a tensor with dtype Float");
}

TEST_CASE("shape errors", "[errors]") {
  CHECK_THROWS_WITH(arange(6).reshape({4, 4}), "shape '[4, 4]' is invalid for input of size 6");
  CHECK_THROWS_WITH(arange(6).view({-1, -1}), "only one dimension can be inferred");
  CHECK_THROWS_WITH(
      arange(6).reshape({2, 3}).eval().t().view({6}),
      "view size is not compatible with input tensor's size and stride (at least one dimension "
      "spans across two contiguous subspaces). Use .reshape(...) instead.");
  CHECK_THROWS_WITH(ones({2, 3}).size(2),
                    "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  CHECK_THROWS_WITH(
      ones({2, 3}).expand({3, 3}),
      "The expanded size of the tensor (3) must match the existing size (2) at non-singleton "
      "dimension 0.  Target sizes: [3, 3].  Tensor sizes: [2, 3]");
}

TEST_CASE("run-time errors leave no half-computed state", "[errors]") {
  Tensor a = tensor({1, 2, 3}), z = tensor({1, 0, 1});
  Tensor q = floor_divide(a, z);
  CHECK_THROWS_WITH(q.eval(), Catch::StartsWith("ZeroDivisionError"));
  CHECK_FALSE(q.is_realized());
  CHECK_THROWS_WITH(q.eval(), Catch::StartsWith("ZeroDivisionError"));
  CHECK(floor_divide(a, tensor({1, 2, 2})).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1});
}

TEST_CASE("devices", "[errors]") {
  CHECK(Device("cpu").is_cpu());
  CHECK(Device("cuda:1").index() == 1);
  CHECK_THROWS_WITH(
      Device("tpu"),
      Catch::StartsWith("Expected one of cpu, cuda device type at start of device string"));
  if (!cuda::is_available())
    CHECK_THROWS_WITH(ones({2}, device(kCUDA)), Catch::StartsWith("CUDA is not available"));
}
