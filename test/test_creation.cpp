// Creation functions and the Philox generator: values, dtypes, reproducibility.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <algorithm>
#include <array>
#include <numeric>

#include "lib/frontend/tensor_impl.h"
#include "lib/interp/interpreter.h"

using namespace tj;

TEST_CASE("ranges", "[creation]") {
  CHECK(arange(5).dtype() == kInt64);
  CHECK(arange(5).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(1, 10, 3).to_vector<int64_t>() == std::vector<int64_t>{1, 4, 7});
  CHECK(arange(0, 1, 0.25).dtype() == kFloat32);
  CHECK(arange(0, 1, 0.25).to_vector<float>() == std::vector<float>{0, 0.25f, 0.5f, 0.75f});
  CHECK(arange(5, 0, -2).to_vector<int64_t>() == std::vector<int64_t>{5, 3, 1});
  CHECK(linspace(0, 1, 5).to_vector<float>() == std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1});
  CHECK(linspace(-10, 10, 5).str() == "tensor([-10.,  -5.,   0.,   5.,  10.])");
  CHECK(logspace(2, 3, 4).str() == "tensor([ 100.0000,  215.4435,  464.1589, 1000.0000])");
  CHECK(eye(3).str() == "tensor([[1., 0., 0.],\n        [0., 1., 0.],\n        [0., 0., 1.]])");
  CHECK(eye(2, 3, dtype(kInt32)).to_vector<int32_t>() == std::vector<int32_t>{1, 0, 0, 0, 1, 0});
  CHECK(full({2}, 7).dtype() == kInt64);
  CHECK(full({2}, true).str() == "tensor([True, True])");
  CHECK(full({2}, 1.5).str() == "tensor([1.5000, 1.5000])");
  CHECK(zeros({0, 3}).str() == "tensor([], size=(0, 3))");
  CHECK_THROWS_WITH(arange(0, 1, 0), "step must be nonzero");
  CHECK_THROWS_WITH(zeros({-1, 2}), "Trying to create tensor with negative dimension -1: [-1, 2]");
}

TEST_CASE("integer ranges take their bounds in the dtype first, as PyTorch's kernels",
          "[creation]") {
  // arange: start, end and step truncated to int64 (the accumulate type); int64 counts its length
  // from the truncated values, the other integer types from the values as given.
  CHECK(arange(0, 5, 1.5, dtype(kInt64)).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(0, 5, 1.5, dtype(kInt32)).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(arange(-0.5, 3, 1, dtype(kInt64)).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2});
  CHECK_THROWS_WITH(arange(0, 5, 0.5, dtype(kInt64)), "step must be nonzero");
  CHECK_THROWS_WITH(arange(0, 5, 0.5, dtype(kInt32)), "step must be nonzero");
  CHECK_THROWS_WITH(arange(0, INFINITY, 1, dtype(kInt64)),
                    "value cannot be converted to type int64_t without overflow");
  // int64's length comes from the exact difference of its bounds.
  const int64_t big = int64_t{1} << 62;
  CHECK(arange(big, big + 3, dtype(kInt64)).to_vector<int64_t>() ==
        std::vector<int64_t>{big, big + 1, big + 2});
  CHECK_THROWS_WITH(linspace(0, 200, 3, dtype(kInt8)),
                    "value cannot be converted to type int8_t without overflow");
  // linspace and logspace: start and end truncated, the step in double.
  CHECK(linspace(0.9, 5.9, 3, dtype(kInt64)).to_vector<int64_t>() == std::vector<int64_t>{0, 2, 5});
  CHECK(logspace(0.5, 2.5, 3, 10.0, dtype(kInt64)).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 10, 100});
  CHECK(logspace(0.5, 2.5, 1, 10.0, dtype(kInt64)).to_vector<int64_t>() == std::vector<int64_t>{3});
  CHECK(linspace(0, 1, 1, dtype(kBool)).str() == "tensor([False])");
  CHECK_THROWS_WITH(linspace(0, 1, 5, dtype(kBool)), "\"linspace_cpu\" not implemented for 'Bool'");
  CHECK_THROWS_WITH(logspace(0, 1, 3, 10.0, dtype(kBool)),
                    "\"logspace_cpu\" not implemented for 'Bool'");
}

TEST_CASE("randperm checks its dtype as PyTorch", "[creation]") {
  CHECK(randperm(256, dtype(kUInt8)).to(kInt64).sum().item<int64_t>() == 255 * 128);
  CHECK_THROWS_WITH(randperm(300, dtype(kUInt8)),
                    "value cannot be converted to type uint8_t without overflow");
  CHECK_THROWS_WITH(randperm(2050, dtype(kFloat16)),
                    "n cannot be greater than 2049 for Half type.");
  CHECK(randperm(2049, dtype(kFloat16)).to(kInt64).sum().item<int64_t>() == 2049 * 1024);
  CHECK_THROWS_WITH(randperm(5, dtype(kBool)), "\"randperm\" not implemented for 'Bool'");
  CHECK_THROWS_WITH(rand({2}, dtype(kInt16)),
                    "\"check_uniform_bounds\" not implemented for 'Short'");
  CHECK_THROWS_WITH(randn({2}, dtype(kInt8)), "\"normal_kernel_cpu\" not implemented for 'Char'");
}

TEST_CASE("manual_seed makes random numbers reproducible", "[random]") {
  manual_seed(1729);
  Tensor r1 = rand({2, 3});
  Tensor r2 = rand({2, 3});
  manual_seed(1729);
  Tensor r3 = rand({2, 3});
  Tensor r4 = rand({2, 3});
  CHECK(equal(r1, r3));
  CHECK(equal(r2, r4));
  CHECK_FALSE(equal(r1, r2));
}

TEST_CASE("random numbers match the interpreter's Philox bit for bit", "[random]") {
  // The interpreter runs on one thread in plain C++: agreement on a large
  // tensor shows the values depend on neither threads nor vector width.
  manual_seed(7);
  for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    Tensor r = rand({100003}, dtype(t));
    auto node = detail::node_of(r);
    auto ref = interp::evaluate(node);
    auto got = r.to_vector<double>();
    REQUIRE(got.size() == ref.f.size());
    CHECK(std::equal(got.begin(), got.end(), ref.f.begin()));
    CHECK(*std::min_element(got.begin(), got.end()) >= 0.0);
    CHECK(*std::max_element(got.begin(), got.end()) < 1.0);
  }
  Tensor ri = randint(-5, 5, {100000});
  auto ref = interp::evaluate(detail::node_of(ri));
  CHECK(ri.to_vector<int64_t>() == ref.i);
}

namespace {
// Philox4x32-10 (Salmon et al., SC'11) of one counter: the words every random op draws from.
std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t key) {
  std::array<uint32_t, 4> c = {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32),
                               0, 0};
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t{c[0]} * 0xD2511F53u, p1 = uint64_t{c[2]} * 0xCD9E8D57u;
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}
} // namespace

TEST_CASE("the random streams are Philox words at fixed counters", "[random]") {
  // After manual_seed(s) the key is s and the counters start at 0; each op takes one counter
  // per element. The values must not change from one version to the next.
  const uint64_t seed = 0x1234567890abcdefULL;
  const int64_t n = 1000;
  manual_seed(seed);
  auto f32 = rand({n}).to_vector<float>();
  auto f64 = rand({n}, dtype(kFloat64)).to_vector<double>();
  auto ints = randint(-7, 1000003, {n}).to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    auto w = philox4x32(static_cast<uint64_t>(i), seed);
    CHECK(f32[i] == std::ldexp(static_cast<float>(w[0] >> 8), -24));
    auto v = philox4x32(static_cast<uint64_t>(n + i), seed);
    CHECK(f64[i] == std::ldexp(static_cast<double>((uint64_t{v[0]} << 21) + (v[1] >> 11)), -53));
    auto r = philox4x32(static_cast<uint64_t>(2 * n + i), seed);
    uint64_t bits = (uint64_t{r[0] & 0x7fffffffu} << 32) + r[1];
    CHECK(ints[i] == static_cast<int64_t>(bits % 1000010) - 7);
  }
}

TEST_CASE("distributions have the right moments", "[random]") {
  manual_seed(0);
  const int64_t n = 1 << 20;
  auto mean_std = [](const std::vector<double>& v) {
    double m = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
    double s = 0;
    for (double x : v)
      s += (x - m) * (x - m);
    return std::make_pair(m, std::sqrt(s / (v.size() - 1)));
  };
  auto [um, us] = mean_std(rand({n}).to_vector<double>());
  CHECK(um == Approx(0.5).margin(0.003));
  CHECK(us == Approx(std::sqrt(1.0 / 12)).margin(0.003));
  for (DType t : {kFloat32, kFloat64}) {
    auto [nm, ns] = mean_std(randn({n}, dtype(t)).to_vector<double>());
    CHECK(nm == Approx(0.0).margin(0.005));
    CHECK(ns == Approx(1.0).margin(0.005));
  }
  auto ints = randint(3, 9, {n}).to_vector<int64_t>();
  CHECK(*std::min_element(ints.begin(), ints.end()) == 3);
  CHECK(*std::max_element(ints.begin(), ints.end()) == 8);
  auto perm = randperm(1000).to_vector<int64_t>();
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  CHECK(sorted == iota);
  CHECK(perm != iota);
}

TEST_CASE("random ops fuse with their consumers", "[random][fusion]") {
  reset_stats();
  Tensor y = rand({4096}) * 2 - 1 + rand({4096}, kFloat64);
  y.eval();
  CHECK(stats().kernels_launched == 1);
}

TEST_CASE("randn is computed once: every use sees the same values", "[random]") {
  // Its libm functions could round differently in two kernels (vectorized or not).
  Tensor x = randn({4, 33, 65});
  CHECK(x.is_realized());
  Tensor m = x.amax({2}, true);
  CHECK((x == m).any(2).all().item<bool>());
  CHECK(x.argmax(2).amax().item<int64_t>() < 65);
}

TEST_CASE("like-functions keep shape and dtype", "[creation]") {
  Tensor x = empty({2, 2, 3}, dtype(kInt32));
  CHECK(zeros_like(x).dtype() == kInt32);
  CHECK(ones_like(x).sizes() == Shape{2, 2, 3});
  CHECK(full_like(x, 4).to_vector<int32_t>()[11] == 4);
  CHECK(rand_like(zeros({3}, dtype(kFloat64))).dtype() == kFloat64);
  CHECK_THROWS_WITH(rand_like(x), Catch::Contains("not implemented for 'Int'"));
}

TEST_CASE("from_blob shares memory both ways", "[creation]") {
  std::vector<float> data{1, 2, 3, 4, 5, 6};
  bool freed = false;
  {
    Tensor t = from_blob(data.data(), {2, 3}, [&](void*) { freed = true; });
    CHECK(t.data_ptr() == data.data());
    data[4] = 50; // written before materialization: seen
    CHECK((t * 2).to_vector<float>() == std::vector<float>{2, 4, 6, 8, 100, 12});
    t.data_ptr<float>()[0] = -1; // written through the tensor: seen by the owner
    CHECK(data[0] == -1);
    Tensor s = from_blob(data.data(), {3, 2}, {1, 3}); // a transposed view of the same memory
    CHECK(s.str() == "tensor([[-1.,  4.],\n        [ 2., 50.],\n        [ 3.,  6.]])");
    CHECK(s.stride() == std::vector<int64_t>{1, 3});
    CHECK_FALSE(s.is_contiguous());
  }
  CHECK(freed);
}

TEST_CASE("scalar_tensor takes the default dtype whatever the value's kind", "[creation]") {
  CHECK(scalar_tensor(3).dtype() == kFloat32);
  CHECK(scalar_tensor(true).dtype() == kFloat32);
  CHECK(scalar_tensor(3, kInt64).dtype() == kInt64);
  CHECK(scalar_tensor(3).item<double>() == 3.0);
}
