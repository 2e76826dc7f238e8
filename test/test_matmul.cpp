// matmul in every case of a tutorial (dot, mv, vector-matrix, mm, batched with
// broadcast) with its printed results, its shape and dtype errors in PyTorch
// 1.13's words, and values against a plain triple loop.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

using namespace tj;

TEST_CASE("examples: matmul cases and printed results", "[matmul][examples]") {
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

TEST_CASE("examples: printed products, elementwise product, sum and add_", "[matmul][examples]") {
  Tensor m = tensor({{1, 2}, {3, 4}});
  CHECK(matmul(m, tensor({{1}, {2}})).str() == "tensor([[ 5],\n        [11]])");
  CHECK(matmul(tensor({1, 2}), m).str() == "tensor([ 7, 10])");
  CHECK(matmul(tensor({{1, 2}}), m).str() == "tensor([[ 7, 10]])");
  CHECK(matmul(m, tensor({1, 2})).str() == "tensor([ 5, 11])");
  Tensor A = tensor({{1.0, 2.0}, {3.0, 4.0}}), x = tensor({5.0, 6.0});
  CHECK(matmul(A, x).str() == "tensor([17., 39.])");
  // Batched x batched, on the operands the seed prints.
  Tensor b1 = tensor({{{7, 5, 0, 0}, {8, 1, 9, 6}, {1, 0, 2, 9}},
                      {{4, 3, 9, 3}, {9, 3, 9, 8}, {5, 3, 2, 8}},
                      {{5, 6, 6, 5}, {7, 2, 5, 6}, {6, 5, 4, 0}},
                      {{8, 1, 7, 8}, {5, 4, 4, 8}, {4, 4, 9, 0}},
                      {{7, 4, 5, 3}, {3, 7, 3, 0}, {9, 9, 3, 1}}});
  Tensor b2 = tensor({{{8, 1, 7, 8, 4}, {1, 0, 4, 0, 4}, {9, 7, 0, 0, 1}, {4, 9, 9, 5, 9}},
                      {{2, 2, 2, 1, 4}, {9, 1, 1, 0, 3}, {0, 6, 7, 6, 9}, {1, 6, 4, 1, 0}},
                      {{5, 2, 5, 8, 1}, {8, 1, 2, 8, 0}, {3, 8, 9, 2, 7}, {0, 8, 8, 6, 8}},
                      {{5, 8, 6, 5, 2}, {4, 2, 7, 2, 4}, {9, 8, 5, 6, 4}, {3, 3, 4, 0, 2}},
                      {{5, 1, 2, 8, 2}, {4, 8, 3, 6, 5}, {8, 8, 0, 5, 1}, {3, 0, 8, 1, 1}}});
  CHECK(matmul(b1, b2).str() ==
        "tensor([[[ 61,   7,  69,  56,  48],\n         [170, 125, 114,  94,  99],\n"
        "         [ 62,  96,  88,  53,  87]],\n\n"
        "        [[ 38,  83,  86,  61, 106],\n         [ 53, 123, 116,  71, 126],\n"
        "         [ 45,  73,  59,  25,  47]],\n\n"
        "        [[ 91, 104, 131, 130,  87],\n         [ 66, 104, 132, 118,  90],\n"
        "         [ 82,  49,  76,  96,  34]],\n\n"
        "        [[131, 146, 122,  84,  64],\n         [101, 104, 110,  57,  58],\n"
        "         [117, 112,  97,  82,  60]],\n\n"
        "        [[100,  79,  50, 108,  42],\n         [ 67,  83,  27,  81,  44],\n"
        "         [108, 105,  53, 142,  67]]])");
  // Batched x broadcast matrix: the seed prints only the product; its operands are what
  // torch.manual_seed(0) draws next in the seed's order (its earlier draws match the printout).
  Tensor c1 = tensor({{{1, 7, 2, 2}, {2, 3, 3, 6}, {7, 8, 0, 5}},
                      {{0, 3, 5, 5}, {3, 6, 2, 2}, {5, 5, 9, 4}},
                      {{3, 3, 7, 3}, {8, 0, 7, 5}, {8, 2, 4, 7}},
                      {{3, 2, 5, 5}, {3, 9, 1, 8}, {0, 6, 7, 4}},
                      {{7, 6, 9, 3}, {8, 4, 4, 9}, {4, 4, 9, 9}}});
  Tensor c2 = tensor({{5, 7, 0, 3, 2}, {0, 8, 6, 1, 9}, {1, 6, 9, 8, 6}, {5, 1, 3, 5, 5}});
  CHECK(matmul(c1, c2).str() ==
        "tensor([[[ 17,  77,  66,  36,  87],\n         [ 43,  62,  63,  63,  79],\n"
        "         [ 60, 118,  63,  54, 111]],\n\n"
        "        [[ 30,  59,  78,  68,  82],\n         [ 27,  83,  60,  41,  82],\n"
        "         [ 54, 133, 123, 112, 129]],\n\n"
        "        [[ 37,  90,  90,  83,  90],\n         [ 72, 103,  78, 105,  83],\n"
        "         [ 79, 103,  69,  93,  93]],\n\n"
        "        [[ 45,  72,  72,  76,  79],\n         [ 56, 107,  87,  66, 133],\n"
        "         [ 27,  94, 111,  82, 116]],\n\n"
        "        [[ 59, 154, 126, 114, 137],\n         [ 89, 121,  87, 105, 121],\n"
        "         [ 74, 123, 132, 133, 143]]])");
  CHECK(matmul(c1, c2).sizes() == Shape{5, 3, 5});

  Tensor t = tensor({{1, 0, 3, 4}, {5, 0, 7, 8}, {9, 0, 11, 12}, {13, 0, 15, 16}}, dtype(kFloat32));
  const char* squares = "tensor([[  1.,   0.,   9.,  16.],\n        [ 25.,   0.,  49.,  64.],\n"
                        "        [ 81.,   0., 121., 144.],\n        [169.,   0., 225., 256.]])";
  CHECK((t * t).str() == squares);
  CHECK(t.mul(t).str() == squares);
  Tensor z3 = rand_like(t);
  mul_out(z3, t, t);
  CHECK(z3.str() == squares);
  Tensor agg = t.sum();
  CHECK(agg.str() == "tensor(104.)");
  CHECK(agg.item<double>() == 104.0);
  CHECK(t.str() == "tensor([[ 1.,  0.,  3.,  4.],\n        [ 5.,  0.,  7.,  8.],\n"
                   "        [ 9.,  0., 11., 12.],\n        [13.,  0., 15., 16.]])");
  t.add_(5);
  CHECK(t.str() == "tensor([[ 6.,  5.,  8.,  9.],\n        [10.,  5., 12., 13.],\n"
                   "        [14.,  5., 16., 17.],\n        [18.,  5., 20., 21.]])");
}

// Every message below is PyTorch 1.13's for the same call.
TEST_CASE("matmul shape errors", "[matmul][errors]") {
  CHECK_THROWS_WITH(mm(ones({2, 3}), ones({4, 5})),
                    "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  CHECK_THROWS_WITH(matmul(ones({2, 3}), ones({4, 5})),
                    "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  CHECK_THROWS_WITH(matmul(ones({3}), ones({4})),
                    "inconsistent tensor size, expected tensor [3] and src [4] to have the same "
                    "number of elements, but got 3 and 4 elements respectively");
  CHECK_THROWS_WITH(matmul(ones({2, 3}), ones({4})), "size mismatch, got 2, 2x3,4");
  CHECK_THROWS_WITH(matmul(ones({3}), ones({4, 2})),
                    "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)");
  CHECK_THROWS_WITH(matmul(ones({}), ones({3})),
                    "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
  CHECK_THROWS_WITH(matmul(ones({}), ones({2, 2})),
                    "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
  CHECK_THROWS_WITH(matmul(ones({2, 2}), ones({})),
                    "both arguments to matmul need to be at least 1D, but they are 2D and 0D");
  CHECK_THROWS_WITH(matmul(ones({}), ones({})),
                    "both arguments to matmul need to be at least 1D, but they are 0D and 0D");
  // mm, mv, bmm and dot on their own.
  CHECK_THROWS_WITH(mm(ones({2, 3, 1}), ones({3, 2})), "self must be a matrix");
  CHECK_THROWS_WITH(mm(ones({2, 3}), ones({3})), "mat2 must be a matrix");
  CHECK_THROWS_WITH(mv(ones({2, 3, 1}), ones({3})),
                    "vector + matrix @ vector expected, got 1, 3, 1");
  CHECK_THROWS_WITH(mv(ones({2, 3}), ones({3, 1})),
                    "vector + matrix @ vector expected, got 1, 2, 2");
  CHECK_THROWS_WITH(mv(ones({2, 3}), ones({4})), "size mismatch, got 2, 2x3,4");
  CHECK_THROWS_WITH(mv(ones({3, 2}).t(), ones({4})), "size mismatch, got 2, 2x3,4");
  CHECK_THROWS_WITH(bmm(ones({2, 3}), ones({2, 3, 2})), "batch1 must be a 3D tensor");
  CHECK_THROWS_WITH(bmm(ones({2, 2, 3}), ones({3, 2})), "batch2 must be a 3D tensor");
  CHECK_THROWS_WITH(
      bmm(ones({2, 2, 3}), ones({2, 4, 2})),
      "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].");
  CHECK_THROWS_WITH(
      bmm(ones({2, 2, 3}), ones({3, 3, 2})),
      "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3].");
  CHECK_THROWS_WITH(dot(ones({3, 1}), ones({3})), "1D tensors expected, but got 2D and 1D tensors");
  CHECK_THROWS_WITH(dot(ones({3}), ones({4})),
                    "inconsistent tensor size, expected tensor [3] and src [4] to have the same "
                    "number of elements, but got 3 and 4 elements respectively");
  CHECK_THROWS_WITH(tensordot(ones({2, 3}), ones({3, 2}), {1}, {0, 1}),
                    "both dimension lists should have same length");
  CHECK_THROWS_WITH(tensordot(ones({2, 3}), ones({4, 2}), {1}, {0}),
                    "contracted dimensions need to match, but first has size 3 in dim 1 and second "
                    "has size 4 in dim 0");
  CHECK_THROWS_WITH(tensordot(ones({2, 3}), ones({4, 2}), {-1}, {-2}),
                    "contracted dimensions need to match, but first has size 3 in dim -1 and "
                    "second has size 4 in dim -2");
}

// PyTorch folds a 3-D or larger operand's batch into rows when the other is a vector or a
// matrix (one mm or mv, on b^T and a^T when b has more dims), else it broadcasts the batch
// dims and calls bmm; the errors are those of the call it makes.
TEST_CASE("batched matmul shape errors", "[matmul][errors]") {
  CHECK_THROWS_WITH(matmul(ones({5, 3, 4}), ones({5, 2})),
                    "mat1 and mat2 shapes cannot be multiplied (15x4 and 5x2)");
  CHECK_THROWS_WITH(matmul(ones({2, 5, 4, 3}).transpose(2, 3), ones({5, 2})),
                    "mat1 and mat2 shapes cannot be multiplied (30x4 and 5x2)");
  CHECK_THROWS_WITH(matmul(ones({5, 3, 4}), ones({5})), "size mismatch, got 15, 15x4,5");
  CHECK_THROWS_WITH(matmul(ones({5, 4, 3}).transpose(1, 2), ones({5})),
                    "size mismatch, got 15, 15x4,5");
  CHECK_THROWS_WITH(matmul(ones({4}), ones({5, 3, 2})), "size mismatch, got 10, 10x3,4");
  CHECK_THROWS_WITH(matmul(ones({3, 4}), ones({5, 3, 2})),
                    "mat1 and mat2 shapes cannot be multiplied (10x3 and 4x3)");
  // A 3-D operand whose last two dims are transposed over a contiguous batch is not folded.
  CHECK_THROWS_WITH(
      matmul(ones({5, 4, 3}).transpose(1, 2), ones({5, 2})),
      "Expected size for first two dimensions of batch2 tensor to be: [5, 4] but got: [5, 5].");
  CHECK_THROWS_WITH(
      matmul(ones({3, 4}), ones({5, 2, 5}).transpose(1, 2)),
      "Expected size for first two dimensions of batch2 tensor to be: [5, 4] but got: [5, 5].");
  CHECK_THROWS_WITH(
      matmul(ones({5, 3, 4}), ones({5, 5, 2})),
      "Expected size for first two dimensions of batch2 tensor to be: [5, 4] but got: [5, 5].");
  CHECK_THROWS_WITH(
      matmul(ones({2, 5, 3, 4}), ones({5, 5, 2})),
      "Expected size for first two dimensions of batch2 tensor to be: [10, 4] but got: [10, 5].");
  CHECK_THROWS_WITH(
      matmul(ones({1, 3, 4}), ones({5, 3, 2})),
      "Expected size for first two dimensions of batch2 tensor to be: [5, 4] but got: [5, 3].");
  CHECK_THROWS_WITH(matmul(ones({2, 5, 3, 4}), ones({3, 4, 2})),
                    "The size of tensor a (5) must match the size of tensor b (3) at "
                    "non-singleton dimension 1");
  // The folded and transposed layouts still compute the product.
  CHECK(equal(matmul(arange(24.0).reshape({2, 4, 3}).transpose(1, 2), arange(8.0).reshape({4, 2})),
              matmul(arange(24.0).reshape({2, 4, 3}).transpose(1, 2).contiguous(),
                     arange(8.0).reshape({4, 2}))));
}

// A dtype mismatch names the dtype of the operand PyTorch's kernel dispatches on (the first
// of the mm, mv or bmm it calls), then the other; shape errors come first, except for dot.
TEST_CASE("matmul dtype errors", "[matmul][errors]") {
  const auto f64 = dtype(kFloat64), i64 = dtype(kInt64), i32 = dtype(kInt32);
  CHECK_THROWS_WITH(matmul(ones({2, 3}), ones({3, 2}, f64)),
                    "expected scalar type Float but found Double");
  CHECK_THROWS_WITH(mm(ones({2, 3}, f64), ones({3, 2})),
                    "expected scalar type Double but found Float");
  CHECK_THROWS_WITH(mm(ones({2, 3}, i32), ones({3, 2}, i64)),
                    "expected scalar type Int but found Long");
  CHECK_THROWS_WITH(matmul(ones({2, 3}), ones({3, 2}, i64)),
                    "expected scalar type Float but found Long");
  CHECK_THROWS_WITH(mm(ones({2, 3}), ones({4, 2}, f64)),
                    "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x2)");
  CHECK_THROWS_WITH(matmul(ones({2, 3}), ones({3}, f64)),
                    "expected scalar type Float but found Double");
  CHECK_THROWS_WITH(mv(ones({2, 3}, f64), ones({3})),
                    "expected scalar type Double but found Float");
  CHECK_THROWS_WITH(mv(ones({2, 3}), ones({4}, f64)), "size mismatch, got 2, 2x3,4");
  CHECK_THROWS_WITH(matmul(ones({3}, f64), ones({3, 2})),
                    "expected scalar type Double but found Float");
  CHECK_THROWS_WITH(matmul(ones({3}), ones({4, 2}, f64)),
                    "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)");
  CHECK_THROWS_WITH(bmm(ones({2, 2, 3}, i64), ones({2, 3, 2})),
                    "expected scalar type Long but found Float");
  CHECK_THROWS_WITH(
      bmm(ones({2, 2, 3}), ones({2, 4, 2}, f64)),
      "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].");
  // dot has its own words, and checks dtypes before sizes.
  CHECK_THROWS_WITH(matmul(ones({3}), ones({3}, f64)),
                    "dot : expected both vectors to have same dtype, but found Float and Double");
  CHECK_THROWS_WITH(dot(ones({3}, i64), ones({3})),
                    "dot : expected both vectors to have same dtype, but found Long and Float");
  CHECK_THROWS_WITH(dot(ones({3}), ones({4}, f64)),
                    "dot : expected both vectors to have same dtype, but found Float and Double");
  CHECK_THROWS_WITH(dot(ones({3, 1}), ones({4}, f64)),
                    "1D tensors expected, but got 2D and 1D tensors");
  // Batched: folded products name the folded operand first (b when it has more dims).
  CHECK_THROWS_WITH(matmul(ones({5, 3, 4}, f64), ones({4, 2})),
                    "expected scalar type Double but found Float");
  CHECK_THROWS_WITH(matmul(ones({5, 3, 4}, f64), ones({4})),
                    "expected scalar type Double but found Float");
  CHECK_THROWS_WITH(matmul(ones({4}, f64), ones({5, 4, 2})),
                    "expected scalar type Float but found Double");
  CHECK_THROWS_WITH(matmul(ones({3, 4}), ones({5, 4, 2}, f64)),
                    "expected scalar type Double but found Float");
  CHECK_THROWS_WITH(matmul(ones({3, 4}), ones({5, 2, 4}, f64).transpose(1, 2)),
                    "expected scalar type Float but found Double");
  CHECK_THROWS_WITH(matmul(ones({5, 3, 4}, f64), ones({5, 4, 2})),
                    "expected scalar type Double but found Float");
  CHECK_THROWS_WITH(matmul(ones({5, 3, 4}), ones({5, 2}, f64)),
                    "mat1 and mat2 shapes cannot be multiplied (15x4 and 5x2)");
  CHECK_THROWS_WITH(
      matmul(ones({5, 3, 4}), ones({5, 5, 2}, f64)),
      "Expected size for first two dimensions of batch2 tensor to be: [5, 4] but got: [5, 5].");
  CHECK_THROWS_WITH(tensordot(ones({2, 3}, f64), ones({3, 2}), {1}, {0}),
                    "expected scalar type Double but found Float");
}

TEST_CASE("16-bit float products multiply and add in float32", "[matmul]") {
  // As PyTorch's CPU kernels: (1 + 3/1024)^2 - 1 is 0.0058670044 rounded once to float16, where
  // the product rounded to float16 first gave 0.005859375. The products too small for the GEMM
  // library (dot, mv, a 1x2 by 2x1 mm, linear) all take the fused path.
  const double e = 1 + 3.0 / 1024;
  for (DType t : {kFloat16, kBFloat16}) {
    INFO(dtype_name(t));
    const double a0 = tensor({e}).to(t).item<double>(); // e in t
    const float want = tensor({a0 * a0 - 1}, TensorOptions().dtype(kFloat64)).to(t).item<float>();
    Tensor a = tensor({e, 1.0}).to(t), b = tensor({e, -1.0}).to(t);
    CHECK(dot(a, b).item<float>() == want);
    CHECK(mv(a.reshape({1, 2}), b).item<float>() == want);
    CHECK(mm(a.reshape({1, 2}), b.reshape({2, 1})).item<float>() == want);
    CHECK(nn::functional::linear(a.reshape({1, 2}), b.reshape({1, 2})).item<float>() == want);
  }
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
