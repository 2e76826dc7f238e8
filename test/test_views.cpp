// Storage, views and strides, in-place writes through aliases, indexing,
// joining and the NumPy bridge: the tutorials' examples and PyTorch's rules.
#include <catch2/catch.hpp>

#include "test/support/callable.h"
#include <tensorjit/tensorjit.h>

#include <cstring>

#include "lib/frontend/tensor_impl.h"
#include "lib/interp/interpreter.h"
#include "test/support/tolerance.h"

using namespace tj;
using namespace tj::indexing;

namespace {
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
} // namespace

TEST_CASE("views answer stride, storage_offset and is_contiguous as PyTorch", "[views]") {
  Tensor z = zeros({1, 2, 3});
  CHECK(z.stride() == std::vector<int64_t>{6, 3, 1});
  Tensor t = z.transpose(0, 2);
  CHECK(t.sizes() == Shape{3, 2, 1});
  CHECK(t.stride() == std::vector<int64_t>{1, 3, 6});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.contiguous().is_contiguous());
  CHECK(t.contiguous().stride() == std::vector<int64_t>{2, 1, 1});

  Tensor a = arange(24).view({2, 3, 4});
  CHECK(a.select(1, 2).stride() == std::vector<int64_t>{12, 1});
  CHECK(a.select(1, 2).storage_offset() == 8);
  CHECK(a.narrow(2, 1, 2).storage_offset() == 1);
  CHECK(a.narrow(2, 1, 2).sizes() == Shape{2, 3, 2});
  CHECK(a.index({Slice(), Slice(None, None, 2), -1}).stride() == std::vector<int64_t>{12, 8});
  CHECK(a.index({Slice(), Slice(None, None, 2), -1}).storage_offset() == 3);
  CHECK(a.permute({2, 0, 1}).stride() == std::vector<int64_t>{1, 12, 4});
  CHECK(a.unsqueeze(1).stride() == std::vector<int64_t>{12, 12, 4, 1});
  CHECK(a.unsqueeze(3).stride() == std::vector<int64_t>{12, 4, 1, 1});
  // expand: a new dim of size 1 strides over the dims inside it; broadcast dims read one element.
  Tensor v = arange(3);
  CHECK(v.expand({1, 3}).stride() == std::vector<int64_t>{3, 1});
  CHECK(v.expand({2, 1, 3}).stride() == std::vector<int64_t>{0, 3, 1});
  CHECK(zeros({4, 1}).expand({3, 1, 4, 1}).stride() == std::vector<int64_t>{0, 4, 1, 1});
  CHECK(v.expand({1, 3}).t().stride() == std::vector<int64_t>{1, 3});
  // The *_like functions, clone and flip lay their result out as their input (preserve_format).
  Tensor tt = arange(6, dtype(kFloat32)).view({2, 3}).t();
  Tensor p = zeros({2, 3, 4}).permute({2, 0, 1});
  for (const Tensor& x : {empty_like(tt), zeros_like(tt), ones_like(tt), full_like(tt, 2),
                          rand_like(tt), randn_like(tt), tt.clone(), flip(tt, {0})})
    CHECK(x.stride() == std::vector<int64_t>{1, 3});
  CHECK(empty_like(p).stride() == std::vector<int64_t>{1, 12, 4});
  CHECK(flip(p, {0}).stride() == std::vector<int64_t>{1, 12, 4});
  CHECK(values(flip(tt, {0})) == std::vector<double>{2, 5, 1, 4, 0, 3});
  CHECK(values(full_like(tt, 2)) == std::vector<double>(6, 2));
  CHECK(ones_like(tt, requires_grad()).is_leaf());
  CHECK(ones_like(tt, requires_grad()).requires_grad());
  // A view of an empty tensor to its own shape keeps its strides.
  Tensor e = empty({0, 3}).t();
  CHECK(e.view({3, 0}).stride() == std::vector<int64_t>{1, 3});
  CHECK(e.reshape({3, 0}).stride() == std::vector<int64_t>{1, 3});
  CHECK(a.expand({5, 2, 3, 4}).stride() == std::vector<int64_t>{0, 12, 4, 1});
  CHECK(a[0].diagonal().stride() == std::vector<int64_t>{5});
  CHECK(values(a[0].diagonal()) == std::vector<double>{0, 5, 10});
  CHECK(values(a[0].diagonal(1)) == std::vector<double>{1, 6, 11});
  CHECK(values(a[0].diagonal(-1)) == std::vector<double>{4, 9});
  CHECK(a.T().sizes() == Shape{4, 3, 2});
  CHECK(a.mT().sizes() == Shape{2, 4, 3});
  CHECK(a.flatten(1).sizes() == Shape{2, 12});
  Tensor m = arange(6).view({2, 3});
  Tensor alias = m;
  m.t_();
  CHECK(alias.sizes() == Shape{3, 2});
  CHECK(m.stride() == std::vector<int64_t>{1, 3});
}

TEST_CASE("a view costs no kernel and copies nothing", "[views]") {
  Tensor x = rand({64, 48}).eval();
  const char* p = static_cast<const char*>(x.data_ptr());
  reset_stats();
  Tensor v = x.t().narrow(0, 4, 8).index({Slice(1, None, 3)}).unsqueeze(0).squeeze(0);
  CHECK(stats().kernels_launched == 0);
  CHECK(stats().bytes_allocated == 0);
  CHECK(v.is_realized());
  CHECK(static_cast<const char*>(v.data_ptr()) == p + v.storage_offset() * 4);
}

TEST_CASE("elementwise ops over a transposed, sliced input are one kernel", "[views][fusion]") {
  Tensor x = rand({256, 128}).eval();
  std::vector<double> xv = values(x);
  reset_stats();
  Tensor a = x.t().index({Slice(2, 100, 2), Slice(None, None, 3)}); // (49, 86)
  // Views of a computed value index it: no copy in between.
  Tensor y = ((a * 2 + 1).exp().t().unsqueeze(0) - a.t()).narrow(1, 5, 40).squeeze(0);
  y.eval();
  CHECK(stats().kernels_launched == 1);
  std::vector<double> got = values(y);
  REQUIRE(got.size() == 40 * 49);
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 49; ++j) {
      // y[i][j] = f(a[j][i + 5]) with a[j][k] = x[3k][2 + 2j]
      double v = xv[static_cast<size_t>(3 * (i + 5) * 128 + 2 + 2 * j)];
      CHECK(got[i * 49 + j] == Approx(std::exp(v * 2 + 1) - v).epsilon(1e-6));
    }
  // Flattening a transposed value copies it, as in PyTorch; the result is the same.
  Tensor flat = (a * 2 + 1).exp().t().reshape({-1}) - a.t().flatten();
  std::vector<double> fv = values(flat);
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 49; ++j)
      CHECK(fv[(i + 5) * 49 + j] == got[i * 49 + j]);
}

TEST_CASE("transposed reads walked in tiles give every element once", "[views][executor]") {
  // Large enough that the CPU executor walks tiles and packs the transposed
  // input; odd sizes leave partial tiles on both edges.
  // 45 x 70 is inside one tile; 150 x 300 crosses tiles both ways (runtime/executor.cpp) but for
  // 1- and 2-byte elements, whose tiles are 512 and 256 columns wide.
  for (auto [h, w] : {std::pair<int64_t, int64_t>{45, 70}, {150, 300}})
    for (DType t : {kInt8, kFloat16, kInt32, kFloat32, kFloat64}) {
      INFO(dtype_name(t) << " " << h << "x" << w);
      Tensor x = arange(h * w).view({h, w}).remainder(101).to(t).eval();
      Tensor row = arange(h).remainder(7).to(t);
      Tensor y = (x.t() * 2 + row).eval(); // (w, h): reads x across, row broadcast
      std::vector<double> xv = values(x), yv = values(y);
      for (int64_t i = 0; i < w; ++i)
        for (int64_t j = 0; j < h; ++j) {
          double expect = xv[j * w + i] * 2 + double(j % 7);
          if (t == kInt8)
            expect = static_cast<double>(static_cast<int8_t>(static_cast<int>(expect)));
          REQUIRE(yv[i * h + j] == expect);
        }
    }
  // Outer dims, a stepped transposed slice, and an in-place write through a
  // transposed view of the tensor it reads.
  Tensor a = arange(3 * 40 * 90, TensorOptions().dtype(kFloat32)).view({3, 40, 90}).eval();
  Tensor p = a.permute({0, 2, 1}).index({Slice(), Slice(None, None, 2)}); // (3, 45, 40)
  Tensor q = (p + 0.5).eval();
  std::vector<double> av = values(a), qv = values(q);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 45; ++i)
      for (int64_t j = 0; j < 40; ++j)
        REQUIRE(qv[(b * 45 + i) * 40 + j] == av[(b * 40 + j) * 90 + 2 * i] + 0.5);
  Tensor m = arange(80 * 80, TensorOptions().dtype(kFloat32)).view({80, 80}).eval();
  Tensor before = m.clone();
  m.t().mul_(2);
  CHECK(values(m) == values(before * 2));
}

TEST_CASE("large transposed reads walked in tall tiles give every element once",
          "[views][executor]") {
  // A transposed input of 8 MB or more is walked in tiles of 1024 rows (512 of 8-byte elements)
  // by 256 / item columns (64 at least), blocks of each transposed in registers for every element
  // size (runtime/executor.cpp). Sizes that end inside tiles and inside blocks both ways.
  struct Case {
    int64_t h, w;
    DType t;
  };
  for (Case c : {Case{2901, 3003, kInt8}, Case{2101, 2050, kFloat16}, Case{1500, 1500, kFloat32},
                 Case{1031, 1021, kFloat64}}) {
    INFO(dtype_name(c.t) << " " << c.h << "x" << c.w);
    Tensor x = arange(c.h * c.w).view({c.h, c.w}).remainder(101).to(c.t).eval();
    Tensor row = arange(c.h).remainder(7).to(c.t);
    std::vector<double> xv = values(x), yv = values(x.t() * 2 + row);
    int64_t wrong = 0;
    for (int64_t i = 0; i < c.w; ++i)
      for (int64_t j = 0; j < c.h; ++j) {
        double expect = xv[size_t(j * c.w + i)] * 2 + double(j % 7);
        if (c.t == kInt8)
          expect = static_cast<double>(static_cast<int8_t>(static_cast<int>(expect)));
        wrong += yv[size_t(i * c.h + j)] != expect;
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("short rows with an operand the same in every row run as flat runs",
          "[views][executor]") {
  // The executor walks rows shorter than 256 elements as flat runs, a repeated operand (a bias)
  // laid end to end (runtime/executor.cpp); against the interpreter, with runs that end inside
  // a row, operands it cannot repeat (a column, a view written in place) and rows of one.
  manual_seed(31);
  test::OracleBatch batch(1);
  Tensor bias = randn({24}), wide = randn({48}), col = randn({40, 1});
  batch.add(rand({1000, 24}) * 2 + bias, test::Accuracy::Arithmetic, "random rows + bias");
  batch.add(randn({1000, 24}).eval() * 2 + bias, test::Accuracy::Arithmetic, "rows + bias");
  batch.add(randn({5, 40, 24}, dtype(kFloat64)) + bias.to(kFloat64), test::Accuracy::Arithmetic,
            "3-d rows + bias");
  batch.add(randn({5, 40, 24}).eval() + bias + col, test::Accuracy::Arithmetic, "+ a column");
  batch.add(randn({700, 24}).eval() - wide.index({Slice(None, None, 2)}),
            test::Accuracy::Arithmetic, "a strided bias");
  batch.add(arange(600 * 24).view({600, 24}).remainder(7) * bias, test::Accuracy::Arithmetic,
            "indices * bias");
  batch.add((randn({300, 7}).eval() * 50).to(kInt8) * arange(7).to(kInt8), test::Accuracy::Exact,
            "int8 rows wrap");
  batch.add(randn({1000, 1}).eval() + randn({1}), test::Accuracy::Arithmetic, "rows of one");
  batch.add(randn({1000, 24}).eval() + randn({1}).expand({24}), test::Accuracy::Arithmetic,
            "a broadcast scalar");
  TJ_CHECK_BATCH(batch);
  // Written in place through a view: its rows are not the flat run.
  Tensor t = zeros({100, 48});
  t.eval();
  t.narrow(1, 0, 24).add_(bias);
  CHECK(equal(t.narrow(1, 0, 24), bias.expand({100, 24})));
  CHECK(equal(t.narrow(1, 24, 24), zeros({100, 24})));
}

TEST_CASE("clone keeps a dense layout's strides and copies the rest contiguous", "[views]") {
  Tensor a = arange(24).view({2, 3, 4});
  Tensor p = a.permute({2, 0, 1});
  Tensor c = p.clone();
  CHECK(c.stride() == p.stride());
  CHECK(c.storage_offset() == 0);
  CHECK(values(c) == values(p));
  c[1][1][2] = -1; // a copy: the original keeps its values
  CHECK(a[1][2][1].item<int64_t>() == 21);
  CHECK(c[1][1][2].item<int64_t>() == -1);
  CHECK(a.transpose(0, 2).clone().stride() == a.transpose(0, 2).stride());
  // A size-1 dim keeps whatever stride it had.
  Tensor u = a[0].t().unsqueeze(1);
  CHECK(u.clone().stride() == u.stride());
  // Not dense (a step, a broadcast, a slice): contiguous, as PyTorch.
  CHECK(a.index({Slice(), Slice(), Slice(None, None, 2)}).clone().stride() ==
        std::vector<int64_t>{6, 2, 1});
  CHECK(a[0].expand({2, 3, 4}).clone().stride() == std::vector<int64_t>{12, 4, 1});
  // Not dense but not broadcast: dense strides in the same order, as PyTorch.
  CHECK(a.narrow(2, 1, 2).transpose(0, 2).clone().stride() == std::vector<int64_t>{1, 2, 6});
  CHECK(values(a.narrow(2, 1, 2).transpose(0, 2).clone()) ==
        values(a.narrow(2, 1, 2).transpose(0, 2)));
  CHECK(
      repeat(a.transpose(0, 2), {1, 1, 1}).is_contiguous()); // repeat's result is always row-major
  CHECK(values(a.narrow(2, 1, 2).clone()) == values(a.narrow(2, 1, 2)));
  // contiguous() and reshape copies are always row-major.
  CHECK(p.contiguous().stride() == std::vector<int64_t>{6, 3, 1});
  CHECK(values(p.reshape({24})) == values(p));
  CHECK(p.reshape({2, 12}).stride() == std::vector<int64_t>{12, 1});
}

TEST_CASE("examples: view and reshape share memory; clone does not", "[views][examples]") {
  Tensor x = randn({5, 3});
  std::vector<double> x0 = values(x);
  Tensor y = x.view({15});
  y.index_put_({0}, 100);
  CHECK(x[0][0].item<double>() == 100);
  Tensor z = x.view({-1, 5});
  CHECK(z.sizes() == Shape{3, 5});
  Tensor q = x.reshape({15});
  q[0] = 250;
  CHECK(x[0][0].item<double>() == 250);
  CHECK(z[0][0].item<double>() == 250);
  Tensor x_cp = x.clone().view({15});
  x -= 1;
  CHECK(x[0][0].item<double>() == 249);
  CHECK(x_cp[0].item<double>() == 250);
  for (int64_t i = 1; i < 15; ++i) {
    CHECK(x_cp[i].item<float>() == static_cast<float>(x0[i]));
    CHECK(y[i].item<float>() == static_cast<float>(x0[i]) - 1.0f);
  }
  CHECK_THROWS_WITH(x.t().view({15}),
                    "view size is not compatible with input tensor's size and stride (at least "
                    "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                    "instead.");
  Tensor r = x.t().reshape({15}); // a copy: the transpose cannot be viewed flat
  r[0] = 7;
  CHECK(x[0][0].item<double>() == 249);
}

TEST_CASE("examples: indexing and assignment", "[views][examples]") {
  Tensor t = ones({4, 4});
  CHECK(t[0].str() == "tensor([1., 1., 1., 1.])");
  CHECK(t.index({Slice(), 0}).str() == "tensor([1., 1., 1., 1.])");
  t.index_put_({"...", -1}, 100);
  CHECK(t.str() == "tensor([[  1.,   1.,   1., 100.],\n"
                   "        [  1.,   1.,   1., 100.],\n"
                   "        [  1.,   1.,   1., 100.],\n"
                   "        [  1.,   1.,   1., 100.]])");
  t.index_put_({Slice(), 1}, 10);
  CHECK(t.str() == "tensor([[  1.,  10.,   1., 100.],\n"
                   "        [  1.,  10.,   1., 100.],\n"
                   "        [  1.,  10.,   1., 100.],\n"
                   "        [  1.,  10.,   1., 100.]])");
  Tensor t1 = cat({t, t, t}, 1);
  CHECK(t1.str() ==
        "tensor([[  1.,  10.,   1., 100.,   1.,  10.,   1., 100.,   1.,  10.,   1., 100.],\n"
        "        [  1.,  10.,   1., 100.,   1.,  10.,   1., 100.,   1.,  10.,   1., 100.],\n"
        "        [  1.,  10.,   1., 100.,   1.,  10.,   1., 100.,   1.,  10.,   1., 100.],\n"
        "        [  1.,  10.,   1., 100.,   1.,  10.,   1., 100.,   1.,  10.,   1., 100.]])");
  Tensor t0 = cat({t, t, t}, 0);
  CHECK(t0.sizes() == Shape{12, 4});
  CHECK(values(t0.index({Slice(8, 12)})) == values(t));

  Tensor a = arange(0, 12).reshape({3, 4});
  CHECK(cat({a, a}).sizes() == Shape{6, 4});
  CHECK(stack({a, a}).sizes() == Shape{2, 3, 4});
  CHECK(cat({a, a}).str() == "tensor([[ 0,  1,  2,  3],\n"
                             "        [ 4,  5,  6,  7],\n"
                             "        [ 8,  9, 10, 11],\n"
                             "        [ 0,  1,  2,  3],\n"
                             "        [ 4,  5,  6,  7],\n"
                             "        [ 8,  9, 10, 11]])");
  CHECK(stack({a, a}).str() == "tensor([[[ 0,  1,  2,  3],\n"
                               "         [ 4,  5,  6,  7],\n"
                               "         [ 8,  9, 10, 11]],\n"
                               "\n"
                               "        [[ 0,  1,  2,  3],\n"
                               "         [ 4,  5,  6,  7],\n"
                               "         [ 8,  9, 10, 11]]])");
  CHECK(stack({a, a}, 2).sizes() == Shape{3, 4, 2});
  CHECK(values(stack({a, a}, -1).select(2, 1)) == values(a));
}

TEST_CASE("writes through any alias are seen by every alias", "[views][inplace]") {
  Tensor a = zeros({3, 4});
  Tensor b = a;
  a[0][1] = 561;
  CHECK(b[0][1].item<double>() == 561);

  Tensor x = arange(12).view({3, 4}).to(kFloat32);
  Tensor snapshot = x * 1; // computed later, from the values before the writes
  x.narrow(1, 1, 2).fill_(0);
  CHECK(values(x) == std::vector<double>{0, 0, 0, 3, 4, 0, 0, 7, 8, 0, 0, 11});
  x.index_put_({Slice(), 1}, 5);
  x.t()[3].add_(100); // column 3
  CHECK(values(x) == std::vector<double>{0, 5, 0, 103, 4, 5, 0, 107, 8, 5, 0, 111});
  CHECK(values(snapshot) == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});

  Tensor d = zeros({3, 3});
  d.diagonal().copy_(tensor({1.0, 2.0, 3.0}));
  CHECK(values(d) == std::vector<double>{1, 0, 0, 0, 2, 0, 0, 0, 3});
  Tensor row = d[1];
  d += 1;
  CHECK(values(row) == std::vector<double>{1, 3, 1});
  Tensor m = ones({2, 3});
  m.index_put_({m > 0}, 0);
  CHECK(values(m) == std::vector<double>(6, 0.0));
  Tensor n = arange(6).view({2, 3});
  n.index_put_({n > 2}, -1);
  CHECK(values(n) == std::vector<double>{0, 1, 2, -1, -1, -1});
}

TEST_CASE("values read before a write keep the old version", "[views][inplace]") {
  Tensor x = arange(6).to(kFloat64).eval();
  Tensor lazy = x.t() + 1; // pending, reads the buffer
  Tensor lazy_view = x.narrow(0, 2, 3) * 10;
  Tensor computed = (x * 2).eval();
  x[2] = 50; // the old memory is still read: the write goes to a copy
  x.mul_(2);
  CHECK(values(lazy) == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(values(lazy_view) == std::vector<double>{20, 30, 40});
  CHECK(values(computed) == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(values(x) == std::vector<double>{0, 2, 100, 6, 8, 10});

  // Nothing else reads it: the write goes into the memory itself.
  Tensor y = zeros({1000}).eval();
  NumpyArray before = y.numpy();
  y[3] = 1;
  CHECK(y.numpy().data == before.data);
  CHECK(y[3].item<double>() == 1);
  Tensor u = zeros({1000}).eval();
  reset_stats();
  u[10] = 3;
  u.eval();
  CHECK(stats().bytes_allocated == 0);
  CHECK(u[10].item<double>() == 3);

  // Two tensors of one constant are one node, computed once: memory handed out for one is not
  // written by the other's in-place op (0-d ones too, which are kept for reuse).
  for (const Shape& shape : {Shape{3}, Shape{}}) {
    Tensor a = zeros(shape), z = zeros(shape);
    float* p = a.data_ptr<float>();
    z.add_(1);
    CHECK(p[0] == 0);
    CHECK(a.sum().item<double>() == 0);
    CHECK(z.sum().item<double>() == double(z.numel()));
    Tensor w = zeros(shape); // made after the memory was handed out
    w.add_(2);
    CHECK(p[0] == 0);
    CHECK(w.sum().item<double>() == 2.0 * double(w.numel()));
  }

  // A value reading other elements of what it overwrites: PyTorch's error where the layouts
  // are dense (test_aliasing.cpp); where they are not, the old values, as if cloned first.
  Tensor s = arange(5).to(kFloat32);
  s.eval();
  CHECK_THROWS_WITH(s.narrow(0, 1, 4).copy_(s.narrow(0, 0, 4)), Catch::Contains("Please clone()"));
  CHECK(values(s) == std::vector<double>{0, 1, 2, 3, 4});
  Tensor g = arange(12).to(kFloat32).view({3, 4});
  g.eval();
  g.index({Slice(), Slice(1, 3)}).copy_(g.index({Slice(), Slice(0, 2)}));
  CHECK(values(g) == std::vector<double>{0, 0, 1, 3, 4, 4, 5, 7, 8, 8, 9, 11});
}

TEST_CASE("in-place results keep the tensor's dtype and shape, with PyTorch's errors",
          "[views][inplace][errors]") {
  Tensor i = arange(4);
  CHECK_THROWS_WITH(i.add_(1.5), "result type Float can't be cast to the desired output type Long");
  CHECK_THROWS_WITH(ones({3}).add_(ones({2, 3})),
                    "output with shape [3] doesn't match the broadcast shape [2, 3]");
  CHECK_THROWS_WITH(ones({1, 3}).expand({2, 3}).add_(1),
                    "unsupported operation: more than one element of the written-to tensor refers "
                    "to a single memory location. Please clone() the tensor before performing the "
                    "operation.");
  CHECK(values(i) == std::vector<double>{0, 1, 2, 3}); // failed ops changed nothing
  i.fill_(2.7);                                        // fill_ and copy_ cast anything
  CHECK(values(i) == std::vector<double>{2, 2, 2, 2});
  i.copy_(tensor({1.9, -1.9, 0.5, 3.0}));
  CHECK(values(i) == std::vector<double>{1, -1, 0, 3});
  Tensor f = zeros({2, 3});
  f.copy_(tensor({1, 2, 3})); // broadcast
  CHECK(values(f) == std::vector<double>{1, 2, 3, 1, 2, 3});
  Tensor out = empty({3});
  add_out(out, ones({3}), ones({3}));
  CHECK(values(out) == std::vector<double>{2, 2, 2});
}

TEST_CASE("every elementwise op has an in-place form that writes through views",
          "[views][inplace]") {
  Tensor base = (arange(12, TensorOptions().dtype(kFloat64)).view({3, 4}) + 1) / 13;
  struct Unary {
    const char* name;
    Tensor (*op)(const Tensor&);
    Tensor& (*inplace)(Tensor&);
  };
  for (Unary u : {Unary{"neg", TJ_METHOD(neg), TJ_METHOD(neg_)},
                  Unary{"abs", TJ_METHOD(abs), TJ_METHOD(abs_)},
                  Unary{"sign", TJ_METHOD(sign), TJ_METHOD(sign_)},
                  Unary{"ceil", TJ_METHOD(ceil), TJ_METHOD(ceil_)},
                  Unary{"floor", TJ_METHOD(floor), TJ_METHOD(floor_)},
                  Unary{"round", TJ_METHOD(round), TJ_METHOD(round_)},
                  Unary{"trunc", TJ_METHOD(trunc), TJ_METHOD(trunc_)},
                  Unary{"sqrt", TJ_METHOD(sqrt), TJ_METHOD(sqrt_)},
                  Unary{"rsqrt", TJ_METHOD(rsqrt), TJ_METHOD(rsqrt_)},
                  Unary{"exp", TJ_METHOD(exp), TJ_METHOD(exp_)},
                  Unary{"exp2", TJ_METHOD(exp2), TJ_METHOD(exp2_)},
                  Unary{"expm1", TJ_METHOD(expm1), TJ_METHOD(expm1_)},
                  Unary{"log", TJ_METHOD(log), TJ_METHOD(log_)},
                  Unary{"log2", TJ_METHOD(log2), TJ_METHOD(log2_)},
                  Unary{"log10", TJ_METHOD(log10), TJ_METHOD(log10_)},
                  Unary{"log1p", TJ_METHOD(log1p), TJ_METHOD(log1p_)},
                  Unary{"sin", TJ_METHOD(sin), TJ_METHOD(sin_)},
                  Unary{"cos", TJ_METHOD(cos), TJ_METHOD(cos_)},
                  Unary{"tan", TJ_METHOD(tan), TJ_METHOD(tan_)},
                  Unary{"asin", TJ_METHOD(asin), TJ_METHOD(asin_)},
                  Unary{"acos", TJ_METHOD(acos), TJ_METHOD(acos_)},
                  Unary{"atan", TJ_METHOD(atan), TJ_METHOD(atan_)},
                  Unary{"sinh", TJ_METHOD(sinh), TJ_METHOD(sinh_)},
                  Unary{"cosh", TJ_METHOD(cosh), TJ_METHOD(cosh_)},
                  Unary{"tanh", TJ_METHOD(tanh), TJ_METHOD(tanh_)},
                  Unary{"sigmoid", TJ_METHOD(sigmoid), TJ_METHOD(sigmoid_)},
                  Unary{"relu", TJ_METHOD(relu), TJ_METHOD(relu_)},
                  Unary{"erf", TJ_METHOD(erf), TJ_METHOD(erf_)},
                  Unary{"reciprocal", TJ_METHOD(reciprocal), TJ_METHOD(reciprocal_)},
                  Unary{"square", TJ_METHOD(square), TJ_METHOD(square_)}}) {
    INFO(u.name);
    Tensor x = base.clone();
    Tensor col = x.narrow(1, 1, 2); // written through a view; the rest stays
    Tensor expect = x.clone();
    expect.narrow(1, 1, 2).copy_(u.op(col));
    Tensor& r = u.inplace(col);
    CHECK(&r == &col);
    CHECK(values(x) == values(expect));
  }
  Tensor i = arange(6).view({2, 3});
  CHECK_THROWS_WITH(i.sqrt_(), "result type Float can't be cast to the desired output type Long");
  Tensor f = arange(6, TensorOptions().dtype(kFloat32));
  f.gt_(2);
  CHECK(values(f) == std::vector<double>{0, 0, 0, 1, 1, 1});
  Tensor g = arange(6, TensorOptions().dtype(kFloat32)) - 2;
  g.pow_(2).clamp_(1, 3);
  CHECK(values(g) == std::vector<double>{3, 1, 1, 1, 3, 3});
  Tensor m = arange(7) - 3;
  m.remainder_(tensor({2})).mul_(-1);
  CHECK(values(m) == std::vector<double>{-1, 0, -1, 0, -1, 0, -1});
  Tensor n = arange(7) - 3;
  n.floor_divide_(2);
  CHECK(values(n) == std::vector<double>{-2, -1, -1, 0, 0, 1, 1});
  Tensor b = tensor({true, false, true});
  b.logical_xor_(tensor({true, true, false})).logical_not_();
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false, false});
  Tensor k = tensor({12, 10});
  k.bitwise_and_(tensor({10, 6})).bitwise_not_();
  CHECK(values(k) == std::vector<double>{-9, -3});

  // Integer division by a zero known now throws now and writes nothing.
  Tensor d = tensor({5, 7, 9}).eval();
  Tensor before = d * 1;
  CHECK_THROWS_WITH(d.floor_divide_(0), Catch::StartsWith("ZeroDivisionError"));
  CHECK_THROWS_WITH(d.remainder_(0), Catch::StartsWith("ZeroDivisionError"));
  CHECK_THROWS_WITH(d.fmod(0), Catch::StartsWith("ZeroDivisionError"));
  CHECK(values(d) == std::vector<double>{5, 7, 9});
  CHECK(values(before) == std::vector<double>{5, 7, 9});
  // By a zero computed later: the materialization that computes it throws.
  Tensor lazy = d.floor_divide(tensor({1, 0, 2}));
  CHECK_THROWS_WITH(lazy.eval(), Catch::StartsWith("ZeroDivisionError"));
  CHECK(values(d) == std::vector<double>{5, 7, 9});
  // Written in place, a division by a tensor is computed at the call, as PyTorch does: a zero
  // throws there, and the tensor and its aliases keep their values instead of a write that can
  // never happen.
  Tensor alias = d.view({3});
  CHECK_THROWS_WITH(d.floor_divide_(tensor({1, 0, 2}) * 1), Catch::StartsWith("ZeroDivisionError"));
  CHECK_THROWS_WITH(d.fmod_(tensor({0, 1, 2})), Catch::StartsWith("ZeroDivisionError"));
  CHECK(values(alias) == std::vector<double>{5, 7, 9});
  CHECK(values(d) == std::vector<double>{5, 7, 9});
  d.remainder_(tensor({2, 4, 5}));
  CHECK(values(alias) == std::vector<double>{1, 3, 4});
  // A nonzero constant divisor cannot fail: the write stays lazy.
  Tensor e = tensor({8, 9}).eval();
  e.floor_divide_(2);
  CHECK_FALSE(e.is_realized());
  CHECK(values(e) == std::vector<double>{4, 4});
}

TEST_CASE("out variants cast, resize and check as PyTorch", "[views][inplace]") {
  Tensor a = arange(6, TensorOptions().dtype(kFloat32)).view({2, 3}), b = ones({2, 3});
  Tensor out = zeros({2, 3});
  Tensor alias = out.view({6});
  add_out(out, a, b);
  CHECK(values(alias) == std::vector<double>{1, 2, 3, 4, 5, 6}); // written in place
  sub_out(out, a, b, 2);
  CHECK(values(out) == std::vector<double>{-2, -1, 0, 1, 2, 3});
  Tensor d64 = zeros({2, 3}, kFloat64);
  mul_out(d64, a, a);
  CHECK(d64.dtype() == kFloat64);
  CHECK(values(d64) == std::vector<double>{0, 1, 4, 9, 16, 25});
  Tensor i = zeros({2, 3}, kInt64);
  CHECK_THROWS_WITH(div_out(i, a, b),
                    "result type Float can't be cast to the desired output type Long");
  CHECK(values(i) == std::vector<double>(6, 0)); // a failed op writes nothing
  // Another shape: out is resized to the result's; its old views keep the old storage.
  Tensor small = zeros({2});
  Tensor old_view = small.view({2});
  matmul_out(small, a, a.t());
  CHECK(small.sizes() == Shape{2, 2});
  CHECK(values(small) == std::vector<double>{5, 14, 14, 50});
  CHECK(values(old_view) == std::vector<double>{0, 0});
  Tensor z = empty({3}, kInt32);
  zeros_out(z, {2, 2});
  CHECK(z.sizes() == Shape{2, 2});
  CHECK(z.dtype() == kInt32);
  ones_out(z, {2, 2});
  CHECK(values(z) == std::vector<double>{1, 1, 1, 1});
  full_out(z, {4}, 7);
  CHECK(values(z) == std::vector<double>{7, 7, 7, 7});
  arange_out(z, 1, 9, 2);
  CHECK(values(z) == std::vector<double>{1, 3, 5, 7});
  arange_out(z, 3);
  CHECK(values(z) == std::vector<double>{0, 1, 2});
  Tensor undefined;
  CHECK_THROWS_WITH(add_out(undefined, a, b), "out: the tensor is undefined");
}

TEST_CASE("view, index and join errors use PyTorch's wording", "[views][errors]") {
  Tensor a = zeros({3, 4});
  CHECK_THROWS_WITH(a.expand({3, 5}), "The expanded size of the tensor (5) must match the "
                                      "existing size (4) at non-singleton dimension 1.  Target "
                                      "sizes: [3, 5].  Tensor sizes: [3, 4]");
  CHECK_THROWS_WITH(a.narrow(1, 5, 1),
                    "start out of range (expected to be in range of [-4, 4], but got 5)");
  CHECK_THROWS_WITH(a.narrow(1, 2, 3), "start (2) + length (3) exceeds dimension size (4).");
  CHECK_THROWS_WITH(a.select(0, 3),
                    "select(): index 3 out of range for tensor of size [3, 4] at dimension 0");
  CHECK_THROWS_WITH(a[5],
                    "select(): index 5 out of range for tensor of size [3, 4] at dimension 0");
  CHECK_THROWS_WITH(a.index({0, 4}), "index 4 is out of bounds for dimension 1 with size 4");
  CHECK_THROWS_WITH(a.index({0, 0, 0}), "too many indices for tensor of dimension 2");
  CHECK_THROWS_WITH(a.index({"...", 0, "..."}), "an index can only have a single ellipsis ('...')");
  CHECK_THROWS_WITH(a.index({Slice(None, None, -1)}), "step must be greater than zero");
  CHECK_THROWS_WITH(a.index({ones({4}, kBool)}),
                    "The shape of the mask [4] at index 0 does not match the shape of the indexed "
                    "tensor [3, 4] at index 0");
  CHECK_THROWS_WITH(a.index({ones({2})}),
                    "tensors used as indices must be long, int, byte or bool tensors");
  CHECK_THROWS_WITH(a.diagonal(0, 1, 1), "diagonal dimensions cannot be identical 1, 1");
  CHECK_THROWS_WITH(a.permute({0, 0}), "permute(): duplicate dims are not allowed.");
  CHECK_THROWS_WITH(cat({a, zeros({3, 5})}), "Sizes of tensors must match except in dimension 0. "
                                             "Expected size 4 but got size 5 for tensor number 1 "
                                             "in the list.");
  CHECK_THROWS_WITH(cat({a, zeros({3})}),
                    "Tensors must have same number of dimensions: got 2 and 1");
  CHECK_THROWS_WITH(cat({}), "torch.cat(): expected a non-empty list of Tensors");
  // Empty 1-D tensors are skipped, but the errors count them.
  CHECK_THROWS_WITH(cat({tensor(std::vector<float>{}), zeros({3, 4}), zeros({3, 5})}),
                    "Sizes of tensors must match except in dimension 0. Expected size 4 but got "
                    "size 5 for tensor number 2 in the list.");
  CHECK_THROWS_WITH(cat({zeros({3, 4}), tensor(std::vector<float>{}), zeros({3, 5})}),
                    "Sizes of tensors must match except in dimension 0. Expected size 4 but got "
                    "size 5 for tensor number 2 in the list.");
  CHECK_THROWS_WITH(cat({tensor(std::vector<float>{}), tensor(1.0)}),
                    "zero-dimensional tensor (at position 1) cannot be concatenated");
  CHECK(cat({zeros({3, 4}), tensor(std::vector<float>{}), zeros({3, 5})}, 1).sizes() ==
        Shape{3, 9});
  CHECK_THROWS_WITH(stack({a, zeros({4, 3})}),
                    "stack expects each tensor to be equal size, but got [3, 4] at entry 0 and "
                    "[4, 3] at entry 1");
  CHECK_THROWS_WITH(zeros({2, 2, 2}).t(),
                    "t() expects a tensor with <= 2 dimensions, but self is 3D");
  CHECK_THROWS_WITH(from_blob(nullptr, {3}), "from_blob: the data pointer is null");
  CHECK_THROWS_AS(a.squeeze(2), Error);
  CHECK_THROWS_AS(a.transpose(0, 2), Error);
}

TEST_CASE("advanced indexing with integer and bool tensors", "[views][indexing]") {
  Tensor a = arange(12).view({3, 4});
  Tensor idx = tensor({2, 0});
  CHECK(values(a.index({idx})) == std::vector<double>{8, 9, 10, 11, 0, 1, 2, 3});
  CHECK(a.index({idx}).sizes() == Shape{2, 4});
  CHECK(values(a.index({Slice(), idx})) == std::vector<double>{2, 0, 6, 4, 10, 8});
  CHECK(values(a.index({tensor({0, 2}), tensor({1, 3})})) == std::vector<double>{1, 11});
  // Separated advanced indices put the broadcast dims first.
  Tensor b = arange(24).view({2, 3, 4});
  CHECK(b.index({tensor({1, 0}), Slice(), tensor({0, 3})}).sizes() == Shape{2, 3});
  CHECK(values(b.index({tensor({1, 0}), Slice(), tensor({0, 3})})) ==
        std::vector<double>{12, 16, 20, 3, 7, 11});
  CHECK(b.index({Slice(), tensor({{0, 1}, {2, 2}})}).sizes() == Shape{2, 2, 2, 4});
  CHECK(values(a.index({a > 5})) == std::vector<double>{6, 7, 8, 9, 10, 11});
  CHECK(values(a.index({tensor({true, false, true})})) ==
        std::vector<double>{0, 1, 2, 3, 8, 9, 10, 11});
  CHECK(a.index({None, Slice(), None}).sizes() == Shape{1, 3, 1, 4});
  CHECK(a.index({true}).sizes() == Shape{1, 3, 4});
  CHECK(a.index({false}).sizes() == Shape{0, 3, 4});
  CHECK_THROWS_WITH(a.index({tensor({3})}), "index 3 is out of bounds for dimension 0 with size 3");

  Tensor c = zeros({3, 4});
  c.index_put_({tensor({0, 2}), tensor({1, 3})}, tensor({5.0f, 6.0f}));
  CHECK(values(c) == std::vector<double>{0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6});
  c.index_put_({Slice(), tensor({0})}, 9.0);
  CHECK(values(c.select(1, 0)) == std::vector<double>{9, 9, 9});
  CHECK_THROWS_WITH(c.index_put_({tensor({0})}, tensor({1, 2, 3, 4})),
                    "Index put requires the source and destination dtypes match, got Float for "
                    "the destination and Long for the source.");
}

TEST_CASE("joining and selection ops", "[views][indexing]") {
  Tensor a = arange(12).view({3, 4});
  auto parts = split(a, 2, 1);
  REQUIRE(parts.size() == 2);
  CHECK(values(parts[1]) == std::vector<double>{2, 3, 6, 7, 10, 11});
  parts[1].zero_(); // a view: writes reach `a`
  CHECK(a[0][3].item<int64_t>() == 0);
  auto ch = chunk(arange(5), 2);
  REQUIRE(ch.size() == 2);
  CHECK(ch[1].sizes() == Shape{2});
  CHECK(split(arange(5), std::vector<int64_t>{1, 4})[1].sizes() == Shape{4});
  Tensor x = arange(1, 10).to(kFloat32).view({3, 3});
  CHECK(trace(x).item<double>() == 15);
  CHECK(trace(x).str() == "tensor(15.)");
  CHECK(values(diag(x)) == std::vector<double>{1, 5, 9});
  CHECK(values(diag(x, 1)) == std::vector<double>{2, 6});
  CHECK(diag(tensor({1.0f, 2.0f}), 1).sizes() == Shape{3, 3});
  CHECK(values(diag(tensor({1.0f, 2.0f}), 1)) == std::vector<double>{0, 1, 0, 0, 0, 2, 0, 0, 0});
  CHECK(values(diag(tensor({1.0f, 2.0f}), -1)) == std::vector<double>{0, 0, 0, 1, 0, 0, 0, 2, 0});
  CHECK(values(triu(x)) == std::vector<double>{1, 2, 3, 0, 5, 6, 0, 0, 9});
  CHECK(values(tril(x, -1)) == std::vector<double>{0, 0, 0, 4, 0, 0, 7, 8, 0});
  CHECK(values(flip(x, {0})) == std::vector<double>{7, 8, 9, 4, 5, 6, 1, 2, 3});
  CHECK(values(flip(x, {0, 1})) == std::vector<double>{9, 8, 7, 6, 5, 4, 3, 2, 1});
  CHECK(values(roll(arange(5), {2})) == std::vector<double>{3, 4, 0, 1, 2});
  CHECK(values(roll(x, {1}, {1})) == std::vector<double>{3, 1, 2, 6, 4, 5, 9, 7, 8});
  CHECK(values(repeat(tensor({1, 2}), {2, 2})) == std::vector<double>{1, 2, 1, 2, 1, 2, 1, 2});
  CHECK(repeat(tensor({1, 2}), {2, 2}).sizes() == Shape{2, 4});
  // PyTorch names the result's first negative size, and the result's shape.
  CHECK_THROWS_WITH(zeros({3, 4}).repeat({2, -1}),
                    "Trying to create tensor with negative dimension -4: [6, -4]");
  CHECK_THROWS_WITH(zeros({3, 4}).repeat({1, 2, -1}),
                    "Trying to create tensor with negative dimension -4: [1, 6, -4]");
  CHECK(zeros({0, 4}).repeat({-1, 1}).sizes() == Shape{0, 4});
  CHECK(values(index_select(x, 1, tensor({2, 0}))) == std::vector<double>{3, 1, 6, 4, 9, 7});
  CHECK(values(masked_select(x, x > 6)) == std::vector<double>{7, 8, 9});
  CHECK(values(gather(x, 1, tensor({{0, 0}, {1, 0}, {2, 2}}))) ==
        std::vector<double>{1, 1, 5, 4, 9, 9});
  CHECK(values(scatter(zeros({2, 3}), 0, tensor({{1, 0, 1}}), 7.0)) ==
        std::vector<double>{0, 7, 0, 7, 0, 7});
  CHECK(values(nonzero(tensor({0, 3, 0, 4}))) == std::vector<double>{1, 3});
  CHECK(values(unique(tensor({3, 1, 3, 2, 1}))) == std::vector<double>{1, 2, 3});
  CHECK(unique(tensor({3, 1, 3})).dtype() == kInt64);
  CHECK(values(where(x > 4, x, zeros_like(x))) == std::vector<double>{0, 0, 0, 0, 5, 6, 7, 8, 9});

  // The same ops as members, as libtorch has them.
  Tensor i2 = tensor({2, 0});
  CHECK(equal(x.index_select(1, i2), index_select(x, 1, i2)));
  CHECK(equal(x.gather(1, tensor({{0}, {1}, {2}})), gather(x, 1, tensor({{0}, {1}, {2}}))));
  CHECK(equal(x.scatter(0, tensor({{1, 0, 1}}), 7.0), scatter(x, 0, tensor({{1, 0, 1}}), 7.0)));
  CHECK(equal(x.masked_select(x > 6), masked_select(x, x > 6)));
  CHECK(x.split(2).size() == 2);
  CHECK(x.split({1, 2}, 1)[1].sizes() == Shape{3, 2});
  CHECK(x.chunk(3, 1).size() == 3);
  CHECK(equal(x.flip(0), flip(x, {0})));
  CHECK(equal(x.roll(1, 1), roll(x, {1}, {1})));
  CHECK(equal(x.repeat({2, 1}), repeat(x, {2, 1})));
  CHECK(equal(x.diag(1), diag(x, 1)));
  CHECK(equal(x.trace(), trace(x)));
  CHECK(equal(x.triu(1), triu(x, 1)));
  CHECK(equal(x.tril(), tril(x)));
  CHECK(equal(x.softmax(1), nn::functional::softmax(x, 1)));
  CHECK(equal(x.log_softmax(0), nn::functional::log_softmax(x, 0)));

  // masked_fill: the value cast to the tensor's dtype, the mask broadcast; PyTorch's errors.
  CHECK(x.masked_fill(x > 6, -1).str() == "tensor([[ 1.,  2.,  3.],\n        [ 4.,  5.,  6.],\n"
                                          "        [-1., -1., -1.]])");
  CHECK(values(arange(4).masked_fill(tensor({true, false, true, false}), 2.7)) ==
        std::vector<double>{2, 1, 2, 3});
  CHECK(values(x.masked_fill(tensor({true, false, false}), tensor(0.5))) ==
        std::vector<double>{0.5, 2, 3, 0.5, 5, 6, 0.5, 8, 9});
  CHECK(x.masked_fill(ones({2, 3, 3}, dtype(kBool)), 0).sizes() == Shape{2, 3, 3});
  CHECK_THROWS_WITH(x.masked_fill(x, 0),
                    "masked_fill_ only supports boolean masks, but got mask with dtype float");
  CHECK_THROWS_WITH(x.masked_fill(tensor({1, 0, 1}).to(kUInt8), 0),
                    "masked_fill_ only supports boolean masks, but got mask with dtype unsigned "
                    "char");
  CHECK_THROWS_WITH(x.masked_fill(x > 1, tensor({1.0f})),
                    "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                    "1 dimension(s).");
  Tensor y = x.clone();
  Tensor row = y[1];
  y.masked_fill_(y > 4, 0);
  CHECK(values(row) == std::vector<double>{4, 0, 0}); // written in place: views see it
  CHECK_THROWS_WITH(y.masked_fill_(ones({2, 3, 3}, dtype(kBool)), 0),
                    "output with shape [3, 3] doesn't match the broadcast shape [2, 3, 3]");
  Tensor w = x.clone().requires_grad_(true);
  CHECK(w.masked_fill(w > 4, 0).grad_fn()->name() == "MaskedFillBackward0");
  Tensor g = (w * 1).masked_fill_(w > 4, 0);
  CHECK(g.grad_fn()->name() == "MaskedFillBackward0");
  g.sum().backward();
  CHECK(values(w.grad()) == std::vector<double>{1, 1, 1, 1, 0, 0, 0, 0, 0});
}

TEST_CASE("numpy() and from_blob share memory both ways", "[views][numpy]") {
  Tensor t = ones({5});
  NumpyArray n = t.numpy();
  CHECK(n.dtype == "<f4");
  CHECK(n.shape == std::vector<int64_t>{5});
  CHECK(n.strides == std::vector<int64_t>{4});
  t.add_(1); // visible through the array before add_ returns
  const float* f = static_cast<const float*>(n.data);
  for (int i = 0; i < 5; ++i)
    CHECK(f[i] == 2.0f);
  CHECK(t.str() == "tensor([2., 2., 2., 2., 2.])");
  t[1] = 7;
  CHECK(f[1] == 7.0f);
  static_cast<float*>(n.data)[0] = -3; // and the other way
  CHECK(t[0].item<float>() == -3.0f);

  double host[5] = {1, 1, 1, 1, 1};
  Tensor b = from_blob(host, {5}, kFloat64);
  CHECK(b.str() == "tensor([1., 1., 1., 1., 1.], dtype=torch.float64)");
  for (double& v : host)
    v += 1;
  CHECK(b.str() == "tensor([2., 2., 2., 2., 2.], dtype=torch.float64)");
  b.index_put_({2}, 0);
  CHECK(host[2] == 0);
  Tensor lazy = b * 1; // pending: keeps the values before the next write
  b.mul_(10);
  CHECK(host[0] == 20);
  CHECK(values(lazy) == std::vector<double>{2, 2, 0, 2, 2});
  Tensor tv = t.view({5, 1}).t();
  NumpyArray nv = tv.numpy();
  CHECK(nv.shape == std::vector<int64_t>{1, 5});
  CHECK(nv.data == n.data);

  // Strided user memory: the storage is the block, the tensor views it.
  int32_t block[6] = {0, 1, 2, 3, 4, 5};
  Tensor s = from_blob(block, {2, 3}, {1, 2}, kInt32);
  CHECK(values(s) == std::vector<double>{0, 2, 4, 1, 3, 5});
  s[1][2] = 50;
  CHECK(block[5] == 50);
}

TEST_CASE("repeated in-place writes into a slice accumulate in the same memory",
          "[views][inplace]") {
  Tensor target = zeros({64, 64}).eval();
  const void* p = target.numpy().data;
  for (int i = 0; i < 5; ++i) {
    target.narrow(1, 0, 32).add_(1);
    target.eval();
  }
  CHECK(target.numpy().data == p);
  CHECK(target[3][31].item<double>() == 5);
  CHECK(target[3][32].item<double>() == 0);
  Tensor lazy = zeros({64, 64}).eval();
  for (int i = 0; i < 5; ++i)
    lazy.narrow(1, 0, 32).add_(1);
  CHECK(lazy.sum().item<double>() == 5 * 64 * 32);
}

namespace {
// Materializes `t` and compares it with the interpreter's value of the same graph, exactly.
void check_exact_vs_interp(const Tensor& t) {
  auto ref = interp::evaluate(detail::node_of(t));
  auto got = t.to_vector<double>();
  REQUIRE(got.size() == (ref.is_float() ? ref.f.size() : ref.i.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == ref.as_double(i));
  }
}

// The float32 sum of `terms` over `dims` against the interpreter's (float64, rounded once):
// within the bound of the JIT's float32 partial sums (docs/architecture.md), an ulp of the result
// and 20 * 2^-24 of the sum of magnitudes.
void check_sum_vs_interp(const Tensor& terms, IntArrayRef dims) {
  REQUIRE(terms.dtype() == kFloat32);
  Tensor t = terms.sum(dims);
  auto ref = interp::evaluate(detail::node_of(t));
  auto mag = interp::evaluate(detail::node_of(terms.abs().sum(dims)));
  auto got = t.to_vector<double>();
  REQUIRE(got.size() == ref.f.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << ref.as_double(i));
    CHECK(std::fabs(got[i] - ref.as_double(i)) <=
          0x1p-24 * (2 * std::fabs(ref.as_double(i)) + 20 * mag.as_double(i)));
  }
}
} // namespace

TEST_CASE("gather and index_select read through a Gather node, fused with their users",
          "[views][gather]") {
  manual_seed(21);
  Tensor x = randn({6, 5, 7});
  x.eval();
  Tensor rows = tensor(std::vector<int64_t>{4, 0, -1, 4, 2});
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("dim " << dim);
    Tensor idx = rows.remainder(x.size(dim));
    Tensor y = index_select(x, dim, idx);
    check_exact_vs_interp(y);
    // A slice of the selection is the source's slice at that index.
    const int64_t at = idx[1].item<int64_t>(), size = x.size(dim);
    CHECK(equal(index_select(y, dim, tensor(std::vector<int64_t>{1})),
                x.narrow(dim, (at + size) % size, 1)));
  }
  // Sources in other layouts, computed sources, and every dtype.
  check_exact_vs_interp(index_select(x.transpose(0, 2), 1, rows.abs().remainder(5)));
  check_exact_vs_interp(index_select(x.narrow(2, 1, 5).abs().sqrt() * 2, 2, rows.abs()));
  check_exact_vs_interp(
      index_select(x[0][1].expand({4, 7}), 0, tensor(std::vector<int64_t>{3, 1})));
  check_exact_vs_interp(index_select(arange(10) * 3, 0, rows.abs()));
  for (DType t : {kBool, kUInt8, kInt8, kInt16, kInt32, kFloat16, kBFloat16, kFloat64}) {
    Tensor in_memory = x.mul(10).to(t);
    check_exact_vs_interp(index_select(in_memory, 1, rows.abs())); // computed
    in_memory.eval();
    check_exact_vs_interp(index_select(in_memory, 1, rows.abs())); // read from memory
  }
  // A source transposed in the domain's last two dims (the executor's tiled walk), and a gather
  // inside a column reduction (the tiled reduction nest): a weighted sum of selected rows.
  Tensor big = randn({3, 40, 48});
  big.eval();
  check_exact_vs_interp(
      index_select(big.permute({0, 2, 1}), 0, tensor(std::vector<int64_t>{2, 0})));
  Tensor table = randn({50, 16}), weights = randn({7, 16});
  eval({table, weights});
  Tensor pick = tensor(std::vector<int64_t>{3, 49, 0, 3, 7, 1, 2});
  pick.eval();
  reset_stats();
  Tensor bag = (index_select(table, 0, pick) * weights).sum({0});
  bag.eval();
  CHECK(stats().kernels_launched == 1);
  Tensor want = (index_select(table, 0, pick).contiguous() * weights).sum({0});
  CHECK(allclose(bag, want));
  // gather along each dim, with an index smaller than the source in the other dims.
  Tensor gi = randint(0, 5, {3, 4, 2});
  check_exact_vs_interp(gather(x, 1, gi));
  check_exact_vs_interp(gather(x.permute({2, 0, 1}), 2, gi.permute({2, 0, 1})));
  check_exact_vs_interp(gather(x, 0, randint(0, 6, {2, 5, 7})) +
                        gather(x, 2, randint(0, 7, {2, 5, 7})));

  // Fused: the source is never copied, and the selection feeds its users in one kernel.
  Tensor r5 = rows.remainder(5);
  r5.eval(); // (an index is read at the call)
  reset_stats();
  Tensor fused = (index_select(x * 2, 1, r5) + 1).sum({2});
  fused.eval();
  CHECK(stats().kernels_launched == 1);
  check_sum_vs_interp(index_select(x * 2, 1, rows.remainder(5)) + 1, {2});
  // A gather of a gather: the inner one is computed first.
  Tensor twice = index_select(index_select(x, 0, rows.abs()), 0, tensor(std::vector<int64_t>{2}));
  CHECK(equal(twice, x.narrow(0, 1, 1)));
}

TEST_CASE("advanced indexing reads through Gather nodes, fused with their users",
          "[views][gather][indexing]") {
  manual_seed(22);
  Tensor x = randn({6, 5, 7});
  x.eval();
  Tensor rows = tensor(std::vector<int64_t>{4, 0, -1, 4, 2});
  Tensor grid = tensor({{1, -2}, {0, 3}}, dtype(kInt64));
  Tensor mask = tensor({true, false, true, true, false});
  eval({rows, grid, mask});
  // One index tensor (or a 1-d mask): one Gather, fused with the computed source and the users.
  reset_stats();
  Tensor fused = ((x * 2).index({rows}) + 1).sum({2});
  fused.eval();
  CHECK(stats().kernels_launched == 1);
  check_sum_vs_interp((x * 2).index({rows}) + 1, {2});
  // Sums of gathered rows, long enough for the vectorized row loop (an embedding table).
  Tensor table = randn({40, 257});
  Tensor picks = randint(-40, 40, {300});
  eval({table, picks});
  check_sum_vs_interp((table * 2).index({picks}), {1});
  check_exact_vs_interp(index_select(table, 0, picks.remainder(40)).amax({1}));
  reset_stats();
  Tensor by_grid = (x.exp().index({Slice(), grid}) - 1).eval();
  CHECK(stats().kernels_launched == 1);
  CHECK(by_grid.sizes() == Shape{6, 2, 2, 7});
  check_exact_vs_interp(x.abs().sqrt().index({Slice(), grid}) - 1);
  CHECK(equal(by_grid.select(1, 0).select(1, 1), x.exp().select(1, 3) - 1)); // -2 is row 3
  check_exact_vs_interp(x.transpose(0, 2).index({Ellipsis, grid}));
  check_exact_vs_interp(x.index({Slice(), mask}) * 3);
  check_exact_vs_interp(
      x.narrow(2, 1, 5).index({1, Slice(), tensor({true, false, true, true, false})}));
  for (DType t : {kBool, kUInt8, kInt16, kFloat16, kBFloat16, kFloat64}) {
    Tensor in_memory = x.mul(10).to(t);
    check_exact_vs_interp(in_memory.index({Slice(), grid}));
    in_memory.eval();
    check_exact_vs_interp(in_memory.index({grid, Slice(), grid}));
  }
  // Several index tensors and masks over several dims: one flat Gather of the source.
  check_exact_vs_interp(x.index({rows, Slice(), tensor({0, 6, 1, 2, 3})}));
  check_exact_vs_interp((x + 1).permute({2, 0, 1}).index({x.select(1, 0).t() > 0}));
  CHECK(x.index({grid}).grad_fn() == nullptr);
  Tensor w = x.clone().requires_grad_(true);
  CHECK(w.index({grid}).grad_fn()->name() == "IndexBackward0");
  CHECK(w.index({rows, Slice(), rows}).grad_fn()->name() == "IndexBackward0");
  CHECK_THROWS_WITH(x.index({rows, Slice(), grid}),
                    "shape mismatch: indexing tensors could not be broadcast together with "
                    "shapes [5], [2, 2]");
  CHECK_THROWS_WITH(x.index({Slice(), grid * 3}),
                    "index -6 is out of bounds for dimension 0 with size 5");
  CHECK(x.index({Slice(), tensor(std::vector<int64_t>{}, Shape{0})}).sizes() == Shape{6, 0, 7});
  // A 0-d mask adds a dim, as a bool does; the result is a copy.
  CHECK(x.index({tensor(true)}).sizes() == Shape{1, 6, 5, 7});
  CHECK(x.index({tensor(false)}).sizes() == Shape{0, 6, 5, 7});
  CHECK(x.index({Slice(), tensor(true), 2}).sizes() == Shape{6, 1, 7});
  CHECK(equal(x.index({Slice(), tensor(true)}).squeeze(1), x));
  // The gradient of a 2-d index adds into the source's own shape: no buffer as many times
  // larger as the index has rows.
  Tensor embedding = randn({2000, 64}).requires_grad_(true);
  Tensor lookups = randint(0, 2000, {64, 1});
  eval({embedding, lookups});
  reset_stats();
  embedding.index({lookups}).sum().backward();
  CHECK(stats().bytes_allocated < 8 * 2000 * 64 * 4);
  Tensor counts = zeros({2000});
  for (int64_t r : lookups.to_vector<int64_t>())
    counts[r] += 1;
  CHECK(equal(embedding.grad(), counts.unsqueeze(1).expand({2000, 64})));
}

TEST_CASE("gathers check their index at the call, and write in place safely", "[views][gather]") {
  Tensor x = arange(12).reshape({3, 4}).to(kFloat32);
  CHECK_THROWS_WITH(index_select(x, 0, tensor(std::vector<int64_t>{3})),
                    "index out of range in self");
  CHECK_THROWS_WITH(index_select(x, 0, tensor(std::vector<int64_t>{-1})),
                    "index out of range in self");
  CHECK_THROWS_WITH(index_select(tensor(5.0), 0, tensor(std::vector<int64_t>{0, 0})),
                    "index_select(): Index to scalar can have only 1 value, got 2 value(s)");
  CHECK_THROWS_WITH(gather(x, 1, tensor(std::vector<int64_t>{0, -5}).reshape({1, 2})),
                    "index -5 is out of bounds for dimension 1 with size 4");
  // A permutation of x's rows written back into x: the kernel must not read rows it wrote.
  Tensor y = x.clone();
  y.eval();
  y.copy_(index_select(y, 0, tensor(std::vector<int64_t>{2, 0, 1})));
  CHECK(equal(y, cat({x.narrow(0, 2, 1), x.narrow(0, 0, 2)})));
  // A graph from text whose computed index leaves the dim: the kernel reports it.
  const char* bad = "%0 = Iota strides=[1] offset=0 : int64[4]\n"
                    "%1 = Const 2 : int64[4]\n"
                    "%2 = Mul %0, %1 : int64[4]\n"
                    "%3 = Iota strides=[1] offset=0 : int64[5]\n"
                    "%4 = Gather %3, %2 dim=0 : int64[4]\n"
                    "output %4\n";
  ir::Graph g = ir::parse(bad);
  CHECK_THROWS_WITH(g.outputs[0].eval(), Catch::Contains("index out of range in self"));
  const char* good = "%0 = Iota strides=[1] offset=0 : int64[3]\n"
                     "%1 = Const 2 : int64[3]\n"
                     "%2 = Mul %0, %1 : int64[3]\n"
                     "%3 = Iota strides=[1] offset=0 : int64[5]\n"
                     "%4 = Gather %3, %2 dim=0 : int64[3]\n"
                     "output %4\n";
  CHECK(equal(ir::parse(good).outputs[0], tensor(std::vector<int64_t>{0, 2, 4})));
}

TEST_CASE("scatter and index_put_ with tensors write through Scatter nodes", "[views][scatter]") {
  manual_seed(23);
  Tensor x = randn({6, 5, 7});
  Tensor src = randn({6, 5, 7});
  eval({x, src});
  // Along each dim, with repeated places (later writes win), an index smaller than the base in
  // the other dims, and a src larger than the index.
  for (int64_t dim : {0, 1, 2}) {
    INFO("dim " << dim);
    Tensor idx = randint(0, x.size(dim), {4, 3, 5});
    idx.eval();
    check_exact_vs_interp(scatter(x * 2, dim, idx, src + 1));
    check_exact_vs_interp(scatter(x.transpose(0, 2).contiguous().transpose(0, 2), dim, idx, src));
    check_exact_vs_interp(scatter(x, dim, idx, 0.5));
  }
  for (DType t : {kBool, kUInt8, kInt8, kInt16, kInt32, kFloat16, kBFloat16, kFloat64}) {
    INFO(dtype_name(t));
    Tensor base = x.mul(10).to(t), value = src.mul(10).to(t);
    Tensor idx = randint(0, 5, {6, 5, 7});
    check_exact_vs_interp(scatter(base, 1, idx, value));
    eval({base, value});
    check_exact_vs_interp(scatter(base, 1, idx, value));
  }
  // Large enough that slices of the outermost dim run on several threads, each in order.
  Tensor wide = randn({400, 200}), wide_src = randn({400, 150});
  Tensor wide_idx = randint(0, 200, {400, 150});
  eval({wide, wide_src, wide_idx});
  check_exact_vs_interp(scatter(wide, 1, wide_idx, wide_src));
  check_exact_vs_interp(scatter(wide.t().contiguous(), 0, wide_idx.t(), wide_src.t()));
  // Rows written at the rows their indices name (an embedding's gradient): chunks of columns
  // run on several threads, each over every row in order, so the last write still wins.
  Tensor table = randn({300, 256}), rows_src = randn({4000, 256});
  Tensor rows_idx = randint(0, 300, {4000, 1}).expand({4000, 256});
  eval({table, rows_src, rows_idx});
  check_exact_vs_interp(scatter(table, 0, rows_idx, rows_src));
  check_exact_vs_interp(scatter(table * 2, 0, rows_idx, rows_src + 1));
  // Lazy and fused: one kernel computes the base, one computes the values and scatters them.
  Tensor idx = randint(0, 5, {6, 5, 7});
  idx.eval();
  reset_stats();
  Tensor y = scatter(x.exp(), 1, idx, src * 3);
  CHECK(stats().materializations == 0);
  y.eval();
  CHECK(stats().kernels_launched == 2);
  CHECK(equal(scatter(tensor({1.0f, 2.0f, 3.0f}), 0, tensor(std::vector<int64_t>{2, 0, 2}),
                      tensor({7.0f, 8.0f, 9.0f})),
              tensor({8.0f, 2.0f, 9.0f})));
  // A 0-d scatter, and an empty index.
  CHECK(scatter(tensor(5.0f), 0, tensor(int64_t{0}), tensor(7.0f)).str() == "tensor(7.)");
  CHECK(equal(scatter(x, 0, zeros({0, 5, 7}, dtype(kInt64)), src), x));
  // PyTorch's errors, at the call.
  Tensor sq = zeros({3, 3});
  CHECK_THROWS_WITH(scatter(sq, 0, tensor({{0, 1, 4}}, dtype(kInt64)), ones({1, 3})),
                    "index 4 is out of bounds for dimension 0 with size 3");
  CHECK_THROWS_WITH(scatter(sq, 0, tensor({{0, -1, 2}}, dtype(kInt64)), ones({1, 3})),
                    "index -1 is out of bounds for dimension 0 with size 3");
  CHECK_THROWS_WITH(scatter(sq, 0, tensor({{0, 1, 2}}, dtype(kInt64)), ones({1, 2})),
                    "Expected index [1, 3] to be smaller than self [3, 3] apart from dimension 0 "
                    "and to be smaller size than src [1, 2]");
  CHECK_THROWS_WITH(scatter(sq, 1, zeros({4, 3}, dtype(kInt64)), 1.0),
                    "Expected index [4, 3] to be smaller than self [3, 3] apart from dimension 1");
  CHECK_THROWS_WITH(scatter(sq, 1, zeros({3}, dtype(kInt64)), 1.0),
                    "Index tensor must have the same number of dimensions as self tensor");
  CHECK_THROWS_WITH(scatter(sq, 1, zeros({1, 3}, dtype(kInt32)), 1.0),
                    "scatter(): Expected dtype int64 for index");
  CHECK_THROWS_WITH(scatter(sq, 1, zeros({1, 3}, dtype(kInt64)), ones({3, 3}, dtype(kFloat64))),
                    "scatter(): Expected self.dtype to be equal to src.dtype");
  CHECK_THROWS_WITH(gather(sq, 0, tensor({{0, -1, 2}}, dtype(kInt64))),
                    "index -1 is out of bounds for dimension 0 with size 3");
  Tensor w = x.clone().requires_grad_(true);
  CHECK(scatter(w, 1, idx, src).grad_fn()->name() == "ScatterBackward0");

  // index_put_ with index tensors: a Scatter of the flattened view, written back lazily.
  Tensor z = x.clone();
  Tensor r = tensor(std::vector<int64_t>{4, 0, -1, 4}),
         c = tensor(std::vector<int64_t>{1, 2, 3, 1});
  Tensor v = tensor({1.0f, 2.0f, 3.0f, 4.0f});
  eval({z, r, c, v});
  reset_stats();
  z.index_put_({r, Slice(), c}, v.unsqueeze(1));
  CHECK(stats().materializations == 0);
  Tensor want = x.clone();
  for (int64_t k = 0; k < 4; ++k) {
    const int64_t row = (r[k].item<int64_t>() + 6) % 6, col = c[k].item<int64_t>();
    want.select(0, row).select(1, col).fill_(v[k].item<double>()); // later writes win
  }
  CHECK(equal(z, want));
  Tensor t2 = x.clone().transpose(0, 2);
  Tensor before = t2.clone();
  t2.index_put_({c, Slice(), r}, tensor(-1.0f));
  CHECK(equal(t2.index({c, Slice(), r}), full({4, 5}, -1.0f)));
  CHECK(equal(t2.index({Slice(0, 1)}), before.index({Slice(0, 1)})));
  CHECK(equal(x.clone().index_put_({x > 0.5}, tensor(0.0f)), x.masked_fill(x > 0.5, 0.0f)));
  // One index tensor: a Scatter along its dim, later writes winning; a 2-d index, a value
  // broadcast over the selection, and a 1-d mask with values.
  Tensor one = x.clone();
  Tensor pairs = tensor({{2, -1}, {0, 2}}, dtype(kInt64));
  one.index_put_({Slice(), pairs}, src.narrow(1, 0, 1).unsqueeze(1).expand({6, 2, 2, 7}));
  Tensor want_one = x.clone();
  want_one.select(1, 4).copy_(src.select(1, 0));
  want_one.select(1, 0).copy_(src.select(1, 0));
  want_one.select(1, 2).copy_(src.select(1, 0));
  CHECK(equal(one, want_one));
  Tensor dup = zeros({5});
  dup.index_put_({tensor(std::vector<int64_t>{1, 3, 1})}, tensor({1.0f, 2.0f, 3.0f}));
  CHECK(values(dup) == std::vector<double>{0, 3, 0, 2, 0});
  Tensor masked = x.clone();
  Tensor rows_mask = tensor({true, false, false, true, false, true});
  masked.index_put_({rows_mask}, full({3, 5, 7}, 9.0f));
  CHECK(equal(masked, where(rows_mask.view({6, 1, 1}), full({}, 9.0f), x)));
  Tensor bools = zeros({3, 4}, dtype(kBool));
  bools.index_put_({tensor(std::vector<int64_t>{0, 2}), tensor(std::vector<int64_t>{1, 3})},
                   tensor(true));
  CHECK(bools.str() ==
        "tensor([[False,  True, False, False],\n        [False, False, False, False],"
        "\n        [False, False, False,  True]])");

  // A graph from text: a Scatter whose computed index leaves the dim is the kernel's error.
  const char* bad = "%0 = Iota strides=[1] offset=0 : int64[4]\n"
                    "%1 = Const 2 : int64[4]\n"
                    "%2 = Mul %0, %1 : int64[4]\n"
                    "%3 = Const 0 : float32[5]\n"
                    "%4 = Const 1 : float32[4]\n"
                    "%5 = Scatter %3, %2, %4 dim=0 accumulate=1 : float32[5]\n"
                    "output %5\n";
  CHECK_THROWS_WITH(ir::parse(bad).outputs[0].eval(),
                    Catch::Contains("index out of range in self"));
  const char* good = "%0 = Iota strides=[1] offset=0 : int64[4]\n"
                     "%1 = Const 2 : int64[4]\n"
                     "%2 = Fmod %0, %1 : int64[4]\n"
                     "%3 = Const 0 : float32[5]\n"
                     "%4 = Const 1.5 : float32[4]\n"
                     "%5 = Scatter %3, %2, %4 dim=0 accumulate=1 : float32[5]\n"
                     "output %5\n";
  CHECK(equal(ir::parse(good).outputs[0], tensor({3.0f, 3.0f, 0.0f, 0.0f, 0.0f})));
  CHECK_THROWS_WITH(ir::parse("%0 = Const false : bool[5]\n%1 = Const 1 : int64[2]\n"
                              "%2 = Const true : bool[2]\n"
                              "%3 = Scatter %0, %1, %2 dim=0 accumulate=1 : bool[5]\n"),
                    Catch::Contains("does not accumulate bool"));
}

TEST_CASE("gradients of reads at data-dependent places accumulate through Scatter nodes",
          "[views][scatter][autograd]") {
  manual_seed(24);
  // An embedding lookup's gradient: repeated rows add up, in one scattering kernel.
  Tensor table = randn({50, 16}).requires_grad_(true);
  Tensor ids = randint(0, 50, {300});
  eval({table, ids});
  (table.index({ids}) * 2).sum().backward();
  Tensor counts = zeros({50});
  for (int64_t i : ids.to_vector<int64_t>())
    counts[i] += 2;
  CHECK(equal(table.grad(), counts.unsqueeze(1).expand({50, 16})));
  // gather, index_select and the flat path of several index tensors: the gradient is the
  // interpreter's scatter-add of the same graph, exactly.
  Tensor x = randn({6, 5, 7}, dtype(kFloat64)).requires_grad_(true);
  x.eval();
  Tensor gi = randint(0, 5, {6, 3, 7});
  Tensor r = randint(0, 6, {9}), c = randint(0, 7, {9});
  eval({gi, r, c});
  for (int variant = 0; variant < 3; ++variant) {
    INFO("variant " << variant);
    x.set_grad(Tensor());
    Tensor y = variant == 0   ? gather(x, 1, gi)
               : variant == 1 ? index_select(x, 2, c)
                              : x.index({r, Slice(), c});
    Tensor g = randn(y.sizes(), dtype(kFloat64));
    (y * g).sum().backward();
    // The same gradient, summed on the host.
    std::vector<double> want(static_cast<size_t>(x.numel()), 0.0);
    auto gv = g.to_vector<double>();
    auto gix = gi.to_vector<int64_t>();
    auto rv = r.to_vector<int64_t>(), cv = c.to_vector<int64_t>();
    for (size_t k = 0; k < gv.size(); ++k) {
      int64_t i0, i1, i2;
      if (variant == 0) {
        i0 = int64_t(k) / 21, i1 = gix[k], i2 = int64_t(k) % 7;
      } else if (variant == 1) {
        i0 = int64_t(k) / 45, i1 = int64_t(k) / 9 % 5, i2 = cv[k % 9];
      } else {
        i0 = rv[k / 5], i1 = int64_t(k) % 5, i2 = cv[k / 5];
      }
      want[size_t(i0 * 35 + i1 * 7 + i2)] += gv[k];
    }
    auto got = x.grad().to_vector<double>();
    for (size_t k = 0; k < want.size(); ++k)
      CHECK(got[k] == Approx(want[k]).epsilon(1e-12));
  }
  // index_put_: the written places take the value's gradient, the rest keep the base's.
  Tensor b = randn({4, 3}).requires_grad_(true), v = randn({2}).requires_grad_(true);
  Tensor pos_r = tensor(std::vector<int64_t>{1, 3}), pos_c = tensor(std::vector<int64_t>{2, 0});
  Tensor out = b * 1;
  out.index_put_({pos_r, pos_c}, v);
  CHECK(out.grad_fn()->name() == "IndexPutBackward0");
  (out * out).sum().backward();
  Tensor keep = ones({4, 3});
  keep[1][2] = 0;
  keep[3][0] = 0;
  CHECK(allclose(b.grad(), 2 * b.detach() * keep));
  CHECK(allclose(v.grad(), 2 * v.detach()));
}

TEST_CASE("joining and selection errors use PyTorch's wording", "[views][errors]") {
  Tensor a = zeros({3, 4});
  const std::string dim2 = "Dimension out of range (expected to be in range of [-2, 1], but got 2)";
  const std::string dim3 = "Dimension out of range (expected to be in range of [-3, 2], but got 3)";
  CHECK_THROWS_WITH(cat({a, a}, 2), dim2);
  CHECK_THROWS_WITH(cat({a, a}, -3),
                    "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  CHECK_THROWS_WITH(stack({a, a}, 3), dim3);
  CHECK_THROWS_WITH(index_select(a, 2, tensor({0})), dim2);
  CHECK_THROWS_WITH(gather(a, 2, zeros({3, 4}, kInt64)), dim2);
  CHECK_THROWS_WITH(flip(a, {2}), dim2);
  CHECK_THROWS_WITH(roll(a, {1}, {2}), dim2);
  CHECK_THROWS_WITH(split(a, 2, 2), dim2);
  CHECK_THROWS_WITH(split(a, std::vector<int64_t>{1, 1}, 2), dim2);
  CHECK_THROWS_WITH(chunk(a, 2, 2), dim2);
  CHECK_THROWS_WITH(a.unsqueeze(3), dim3);
  CHECK_THROWS_WITH(a.unsqueeze(-4),
                    "Dimension out of range (expected to be in range of [-3, 2], but got -4)");
  CHECK_THROWS_WITH(a.permute({0, 2}), dim2);
  CHECK_THROWS_WITH(a.transpose(0, 2), dim2);
  CHECK_THROWS_WITH(a.squeeze(2), dim2);

  CHECK_THROWS_WITH(flip(a, {0, 0}), "dim 0 appears multiple times in the list of dims");
  CHECK_THROWS_WITH(flip(a, {1, -1}), "dim 1 appears multiple times in the list of dims");
  CHECK_THROWS_WITH(roll(a, {1, 2}, {0}), "shifts and dimensions must align. shifts: 2, dims:1");
  CHECK_THROWS_WITH(roll(a, {1, 2}), "shifts and dimensions must align. shifts: 2, dims:0");
  CHECK_THROWS_WITH(roll(a, {}), "`shifts` required");
  // Negative sizes are named before the sum is checked.
  CHECK_THROWS_WITH(split(a, std::vector<int64_t>{-1, 4}, 0),
                    "split_with_sizes expects split_sizes have only non-negative entries, but got "
                    "split_sizes=[-1, 4]");
  CHECK_THROWS_WITH(a.to(kBool).trace(), "\"trace\" not implemented for 'Bool'");
  CHECK_THROWS_WITH(a.to(kFloat16).trace(), "\"trace\" not implemented for 'Half'");
  CHECK_THROWS_WITH(a.repeat({2}), "Number of dimensions of repeat dims can not be smaller than "
                                   "number of dimensions of tensor");
  CHECK_THROWS_WITH(split(a, std::vector<int64_t>{1, 1}, 0),
                    "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size "
                    "at dimension 0), but got split_sizes=[1, 1]");
  CHECK_THROWS_WITH(chunk(a, 0), "chunk expects `chunks` to be greater than 0, got: 0");
  CHECK_THROWS_WITH(index_select(a, 0, tensor({{0}})),
                    "index_select(): Index is supposed to be a vector");
  CHECK_THROWS_WITH(index_select(a, 0, tensor({0.0})),
                    "index_select(): Expected dtype int32 or int64 for index");
  CHECK_THROWS_WITH(index_select(a, 0, tensor({3})), "index out of range in self");
  CHECK_THROWS_WITH(gather(a, 1, zeros({3}, kInt64)),
                    "Index tensor must have the same number of dimensions as input tensor");
  CHECK_THROWS_WITH(gather(a, 1, zeros({3, 4}, kInt32)),
                    "gather(): Expected dtype int64 for index");
  CHECK_THROWS_WITH(gather(a, 1, zeros({3}, kInt32)), "gather(): Expected dtype int64 for index");
  CHECK_THROWS_WITH(masked_select(a, ones({3, 4})),
                    "masked_select: expected BoolTensor or ByteTensor for mask");
  CHECK_THROWS_WITH(masked_select(a, tensor({1, 0, 1, 0})),
                    "masked_select: expected BoolTensor or ByteTensor for mask");
  CHECK_THROWS_WITH(masked_select(a, ones({5}, kBool)), "The size of tensor a (5) must match the "
                                                        "size of tensor b (4) at non-singleton "
                                                        "dimension 1");
  CHECK_THROWS_WITH(masked_select(zeros({2, 4}), ones({3, 1}, kBool)),
                    "The size of tensor a (3) must match the size of tensor b (2) at "
                    "non-singleton dimension 0");
  CHECK_THROWS_WITH(diag(zeros({2, 2, 2})), "matrix or a vector expected");
  CHECK_THROWS_WITH(diag(tensor(1.0)), "matrix or a vector expected");
  CHECK_THROWS_WITH(trace(zeros({3})), "trace: expected a matrix, but got tensor with dim 1");
  const std::string dim_1d =
      "Dimension out of range (expected to be in range of [-1, 0], but got -2)";
  CHECK_THROWS_WITH(triu(zeros({3})), dim_1d);
  CHECK_THROWS_WITH(tril(zeros({3})), dim_1d);
  CHECK_THROWS_WITH(stack({}), "stack expects a non-empty TensorList");
  CHECK_THROWS_WITH(cat({tensor(1.0), tensor(2.0)}),
                    "zero-dimensional tensor (at position 0) cannot be concatenated");
  CHECK_THROWS_WITH(cat({zeros({2}), tensor(2.0)}),
                    "zero-dimensional tensor (at position 1) cannot be concatenated");
  // A failed in-place op leaves the tensor's values as they were.
  Tensor x = arange(12, TensorOptions().dtype(kFloat32)).view({3, 4});
  const std::vector<double> x0 = values(x);
  CHECK_THROWS_WITH(x.index_put_({tensor({3})}, 1.0),
                    "index 3 is out of bounds for dimension 0 with size 3");
  CHECK_THROWS_WITH(x.index_put_({tensor({0}), tensor({5})}, 1.0),
                    "index 5 is out of bounds for dimension 1 with size 4");
  CHECK_THROWS_WITH(x.index_put_({tensor({-4})}, 1.0),
                    "index -4 is out of bounds for dimension 0 with size 3");
  CHECK(values(x) == x0);
  CHECK_THROWS_WITH(x.masked_fill_(ones({2, 3, 4}, kBool), 0),
                    "output with shape [3, 4] doesn't match the broadcast shape [2, 3, 4]");
  CHECK(values(x) == x0);
  Tensor cube = arange(8, TensorOptions().dtype(kFloat32)).view({2, 2, 2});
  CHECK_THROWS_WITH(cube.t_(), "t_() expects a tensor with <= 2 dimensions, but self is 3D");
  CHECK(cube.sizes() == Shape{2, 2, 2});
  CHECK(values(cube) == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});
  Tensor v = tensor({1.0f, 2.0f, 3.0f});
  CHECK_THROWS_WITH(v.copy_(zeros({2})), "The size of tensor a (3) must match the size of tensor "
                                         "b (2) at non-singleton dimension 0");
  CHECK(values(v) == std::vector<double>{1, 2, 3});
}

TEST_CASE("gather, scatter and index_select take and check indices as PyTorch 1.13",
          "[views][gather][scatter][errors]") {
  Tensor a = zeros({3, 4});
  // scatter checks dtypes before ranks and shapes.
  CHECK_THROWS_WITH(a.scatter(1, zeros({3}, kInt32), 1.0),
                    "scatter(): Expected dtype int64 for index");
  CHECK_THROWS_WITH(a.scatter(1, zeros({3}, kInt32), zeros({3})),
                    "scatter(): Expected dtype int64 for index");
  CHECK_THROWS_WITH(a.scatter(1, zeros({3, 4}, kInt64), zeros({3, 3}, kFloat64)),
                    "scatter(): Expected self.dtype to be equal to src.dtype");
  CHECK_THROWS_WITH(a.scatter(1, zeros({3}, kInt64), 1.0),
                    "Index tensor must have the same number of dimensions as self tensor");
  CHECK_THROWS_WITH(a.scatter(1, zeros({3, 4}, kInt64), zeros({3, 3})),
                    "Expected index [3, 4] to be smaller than self [3, 4] apart from dimension 1 "
                    "and to be smaller size than src [3, 3]");
  CHECK_THROWS_WITH(zeros({3}).scatter(0, zeros({2}, kInt64), zeros({1})),
                    "Expected index [2] to be smaller than self [3] apart from dimension 0 and to "
                    "be smaller size than src [1]");

  // A 0-d tensor counts as a vector of one.
  CHECK(tensor(5.0).gather(0, tensor({0})).str() == "tensor([5.])");
  CHECK(tensor(5.0).gather(0, tensor({0, 0})).str() == "tensor([5., 5.])");
  CHECK(tensor({4.0, 5.0, 6.0}).gather(0, tensor(2)).str() == "tensor(6.)");
  CHECK_THROWS_WITH(tensor(5.0).gather(0, tensor({1})),
                    "index 1 is out of bounds for dimension 0 with size 1");
  // index_select of a 0-d tensor takes exactly one index.
  CHECK(tensor(5.0).index_select(0, tensor({0})).str() == "tensor(5.)");
  CHECK_THROWS_WITH(tensor(5.0).index_select(0, tensor({0, 0})),
                    "index_select(): Index to scalar can have only 1 value, got 2 value(s)");
  CHECK(tensor(5.0).scatter(0, tensor({0}), tensor({7.0})).str() == "tensor(7.)");
  CHECK(tensor(5.0).scatter(0, tensor({0}), 7.0).str() == "tensor(7.)");
  CHECK(tensor(5.0).scatter(0, tensor(0), tensor(7.0)).str() == "tensor(7.)");
  CHECK(tensor({4.0, 5.0, 6.0}).scatter(0, tensor(2), tensor(9.0)).str() == "tensor([4., 5., 9.])");
  CHECK_THROWS_WITH(tensor(5.0).scatter(0, tensor({{0}}), 1.0),
                    "Index tensor must have the same number of dimensions as self tensor");
  CHECK_THROWS_WITH(tensor(5.0).scatter(0, tensor({0}), ones({1, 1})),
                    "Index tensor must have the same number of dimensions as src tensor");

  // An empty index: nothing is checked of its shape (nor, by gather, of its dtype).
  CHECK(a.gather(1, zeros({0}, kInt32)).str() == "tensor([])");
  CHECK(a.gather(1, zeros({2, 0, 7}, kInt64)).sizes() == Shape{2, 0, 7});
  CHECK(values(a.scatter(1, zeros({0}, kInt32), 1.0)) == values(a));
  CHECK(values(a.scatter(1, zeros({2, 0, 7}, kInt64), zeros({1}))) == values(a));
  CHECK_THROWS_WITH(a.scatter(1, zeros({0}, kInt64), zeros({2}, kFloat64)),
                    "scatter(): Expected self.dtype to be equal to src.dtype");
  Tensor w = ones({3, 4}).requires_grad_(true);
  Tensor none = w.gather(1, zeros({0}, kInt64));
  CHECK(none.grad_fn()->name() == "GatherBackward0");
  (none.sum() + w.scatter(1, zeros({0}, kInt64), 1.0).sum()).backward();
  CHECK(values(w.grad()) == std::vector<double>(12, 1.0));

  // index_select takes int32 and int64 indices only.
  CHECK(index_select(a, 0, tensor({0}, kInt32)).sizes() == Shape{1, 4});
  CHECK_THROWS_WITH(index_select(a, 0, tensor({0}, kInt8)),
                    "index_select(): Expected dtype int32 or int64 for index");
  CHECK_THROWS_WITH(index_select(a, 0, tensor({0}, kInt16)),
                    "index_select(): Expected dtype int32 or int64 for index");
  // masked_select takes a uint8 mask too.
  CHECK(masked_select(arange(3), tensor({1, 0, 1}, kUInt8)).str() == "tensor([0, 2])");
}

TEST_CASE("0-d tensors: flip takes dim 0 while size and roll along a dim raise", "[views]") {
  // A 0-d tensor's size(d) and stride(d) have no dim to give (PyTorch's maybe_wrap_dim without
  // wrap_scalar); flip wraps its dims as a 1-d tensor's and reverses nothing.
  CHECK(tensor(5).flip({0}).str() == "tensor(5)");
  CHECK(tensor(5.0).flip({-1}).str() == "tensor(5.)");
  CHECK_THROWS_WITH(tensor(5).flip({1}),
                    "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  CHECK_THROWS_WITH(tensor(5).size(0), "Dimension specified as 0 but tensor has no dimensions");
  CHECK_THROWS_WITH(tensor(5).stride(-1), "Dimension specified as -1 but tensor has no dimensions");
  CHECK_THROWS_WITH(tensor(5).roll({1}, {-1}),
                    "Dimension specified as -1 but tensor has no dimensions");
  CHECK(tensor(5).roll({1}).str() == "tensor(5)");
}
