// matmul in every case of seed 004 (dot, mv, vector-matrix, mm, batched with
// broadcast), its shape errors, and values against a plain triple loop.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

using namespace tj;

TEST_CASE("seed 004: matmul cases and printed results", "[matmul][seed]") {
  Tensor t = tensor({{1, 0, 3, 4}, {5, 0, 7, 8}, {9, 0, 11, 12}, {13, 0, 15, 16}}, dtype(kFloat32));
  CHECK(t.matmul(t.t()).str() ==
        "tensor([[ 26.,  58.,  90., 122.],\n        [ 58., 138., 218., 298.],\n"
        "        [ 90., 218., 346., 474.],\n        [122., 298., 474., 650.]])");
  Tensor v1 = tensor({4, 9, 3}), v2 = tensor({0, 3, 9});
  CHECK(matmul(v1, v2).str() == "tensor(54)");
  CHECK(matmul(v1, v2).sizes().empty());
  CHECK(dot(v1, v2).item<int64_t>() == 54);
  CHECK(matmul(ones({2, 2}), ones({2})).sizes() == Shape{2});
  CHECK(matmul(ones({2, 2}), ones({2, 1})).sizes() == Shape{2, 1});
  CHECK(matmul(ones({2}), ones({2, 2})).sizes() == Shape{2});
  CHECK(matmul(ones({1, 2}), ones({2, 2})).sizes() == Shape{1, 2});
  Tensor b1 = tensor({{{7, 3, 7, 3}, {1, 6, 6, 9}, {8, 6, 6, 8}},
                      {{4, 3, 6, 9}, {1, 4, 4, 1}, {9, 9, 9, 0}},
                      {{1, 2, 3, 0}, {5, 5, 2, 9}, {1, 8, 8, 3}},
                      {{6, 9, 1, 7}, {3, 5, 2, 1}, {0, 9, 3, 1}},
                      {{1, 0, 3, 6}, {6, 7, 9, 6}, {3, 4, 5, 0}}});
  Tensor r = matmul(b1, tensor({8, 2, 8, 2}));
  CHECK(r.str() == "tensor([[124,  86, 140],\n        [104,  50, 162],\n        [ 36,  84,  94],\n"
                   "        [ 88,  52,  44],\n        [ 44, 146,  72]])");
  CHECK(matmul(b1, ones({5, 4, 5}, dtype(kInt64))).sizes() == Shape{5, 3, 5});
  CHECK(matmul(b1, ones({4, 1}, dtype(kInt64))).sizes() == Shape{5, 3, 1});
  CHECK(matmul(ones({2, 1, 3, 4}), ones({5, 4, 2})).sizes() == Shape{2, 5, 3, 2});
}

TEST_CASE("matmul shape errors", "[matmul][errors]") {
  CHECK_THROWS_WITH(mm(ones({2, 3}), ones({4, 5})),
                    "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  CHECK_THROWS_WITH(matmul(ones({2, 3}), ones({4, 5})),
                    "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  CHECK_THROWS_WITH(matmul(ones({3}), ones({4})),
                    "inconsistent tensor size, expected tensor [3] and src [4] to have the same "
                    "number of elements, "
                    "but got 3 and 4 elements respectively");
  CHECK_THROWS_WITH(matmul(ones({2, 3}), ones({4})),
                    "size mismatch, got input (2), mat (2x3), vec (4)");
  CHECK_THROWS_WITH(matmul(ones({2, 3}), ones({3}, dtype(kFloat64))),
                    "expected m1 and m2 to have the same dtype, but got: float != double");
  CHECK_THROWS_WITH(matmul(ones({}), ones({3})),
                    "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
}

TEST_CASE("matmul values match a triple loop", "[matmul]") {
  manual_seed(11);
  for (auto [m, k, n] : {std::tuple{7, 13, 5}, std::tuple{64, 33, 17}, std::tuple{1, 100, 1}}) {
    Tensor a = randn({m, k}, dtype(kFloat64)), b = randn({k, n}, dtype(kFloat64));
    auto av = a.to_vector<double>(), bv = b.to_vector<double>();
    auto cv = matmul(a, b).to_vector<double>();
    auto ct = matmul(b.t(), a.t()).to_vector<double>(); // transposed operands, read in place
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double ref = 0;
        for (int q = 0; q < k; ++q)
          ref += av[i * k + q] * bv[q * n + j];
        CHECK(cv[i * n + j] == Approx(ref).epsilon(1e-12));
        CHECK(ct[j * m + i] == Approx(ref).epsilon(1e-12));
      }
  }
  Tensor x = arange(6).reshape({2, 3}), y = arange(12).reshape({3, 4});
  CHECK(tensordot(x, y, {1}, {0}).to_vector<int64_t>() == mm(x, y).to_vector<int64_t>());
}
