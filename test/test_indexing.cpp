// Indexing, index_put_, split, chunk, flatten and reshape at their edges, as libtorch behaves:
// bools and 0-d tensors as indices, values with leading size-1 dims, one-element values through
// a mask, empty dims, the grad_fn names and the errors PyTorch gives.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

using namespace tj;
using namespace tj::indexing;

namespace {
std::vector<double> values(const Tensor& t) { return t.to(kFloat64).to_vector<double>(); }
} // namespace

TEST_CASE("split and chunk of a 0-d tensor throw PyTorch's errors", "[indexing][errors]") {
  CHECK_THROWS_WITH(tensor(1.0).split(1), "split expects at least a 1-dimensional tensor");
  CHECK_THROWS_WITH(tensor(1.0).split(std::vector<int64_t>{1}),
                    "split expects at least a 1-dimensional tensor");
  CHECK_THROWS_WITH(tensor(1.0).chunk(1), "chunk expects at least a 1-dimensional tensor");
  CHECK_THROWS_WITH(tensor(1.0).chunk(0), "chunk expects at least a 1-dimensional tensor");
}

TEST_CASE("chunk of an empty dim gives as many empty pieces as asked", "[indexing]") {
  std::vector<Tensor> pieces = zeros({0}).chunk(3);
  REQUIRE(pieces.size() == 3);
  for (const Tensor& p : pieces)
    CHECK(p.sizes() == Shape{0});
  pieces = zeros({2, 0}).chunk(2, 1);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[1].sizes() == Shape{2, 0});
  // split of an empty dim stays one piece.
  CHECK(zeros({0}).split(2).size() == 1);
}

TEST_CASE("pieces of split and chunk name their backward as PyTorch", "[indexing][autograd]") {
  Tensor a = ones({6}, requires_grad());
  std::vector<Tensor> p = a.split(4);
  CHECK(p[0].grad_fn()->name() == "SplitBackward0");
  CHECK(p[1].grad_fn()->name() == "SplitBackward0");
  CHECK(a.chunk(2)[1].grad_fn()->name() == "SplitBackward0");
  CHECK(a.split(std::vector<int64_t>{2, 4})[0].grad_fn()->name() == "SplitWithSizesBackward0");
  CHECK(zeros({0}, requires_grad()).chunk(2)[0].grad_fn()->name() == "SplitWithSizesBackward0");
  (p[0] * 2).sum().add(p[1].sum()).backward();
  CHECK(values(a.grad()) == std::vector<double>{2, 2, 2, 2, 1, 1});
}

TEST_CASE("a reshape that copies is an UnsafeView of a clone, as in PyTorch",
          "[indexing][autograd]") {
  Tensor m = ones({2, 3}, requires_grad());
  Tensor r = m.t().reshape({6});
  CHECK(r.grad_fn()->name() == "UnsafeViewBackward0");
  CHECK(r.grad_fn()->next_functions()[0].first->name() == "CloneBackward0");
  CHECK(m.t().flatten().grad_fn()->name() == "UnsafeViewBackward0");
  CHECK(m.reshape({6}).grad_fn()->name() == "ViewBackward0");
  (r * arange(6.0)).sum().backward();
  CHECK(values(m.grad()) == std::vector<double>{0, 2, 4, 1, 3, 5});
}

TEST_CASE("flatten of a 0-d tensor checks its dims as PyTorch", "[indexing][errors]") {
  CHECK_THROWS_WITH(tensor(5.0).flatten(0, 1),
                    "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  CHECK_THROWS_WITH(tensor(5.0).flatten(-2),
                    "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
  CHECK(tensor(5.0).flatten(-1, 0).sizes() == Shape{1});
}

TEST_CASE("index_put_ drops a value's leading size-1 dims before broadcasting", "[indexing]") {
  Tensor x = zeros({3, 4});
  x.index_put_({0}, tensor({{1., 2., 3., 4.}}));
  CHECK(values(x[0]) == std::vector<double>{1, 2, 3, 4});
  x.index_put_({Slice(), 1}, tensor({{{5., 6., 7.}}}));
  CHECK(values(x.select(1, 1)) == std::vector<double>{5, 6, 7});
  Tensor y = zeros({3, 4});
  y.index_put_({Slice(0, 2)}, ones({1, 1, 2, 4}));
  CHECK(values(y.sum(1)) == std::vector<double>{4, 4, 0});
  // Advanced indices: integer tensors, masks, bools.
  Tensor z = zeros({3, 4});
  z.index_put_({tensor({0, 1})}, ones({1, 1, 4}));
  CHECK(values(z.sum(1)) == std::vector<double>{4, 4, 0});
  Tensor w = zeros({3, 4});
  w.index_put_({tensor({true, false, true})}, ones({1, 1, 4}));
  CHECK(values(w.sum(1)) == std::vector<double>{4, 0, 4});
  Tensor v = arange(6.0).view({2, 3});
  for (const std::vector<TensorIndex>& ix : std::vector<std::vector<TensorIndex>>{
           {true}, {None}, {"..."}, {true, "..."}, {None, Slice()}}) {
    Tensor a = zeros({2, 3});
    a.index_put_(ix, v.unsqueeze(0).unsqueeze(0));
    CHECK(equal(a, v));
  }
  // A lone false writes nothing, whatever the value.
  Tensor b = zeros({2, 3});
  b.index_put_({false}, ones({7}));
  CHECK(values(b.sum()) == std::vector<double>{0});
}

TEST_CASE("a bool index is an advanced index: a copy, broadcast with the others", "[indexing]") {
  Tensor b = arange(4.0);
  b.index({true}).fill_(9);
  b.index({Slice(), true}).fill_(9);
  CHECK(values(b) == std::vector<double>{0, 1, 2, 3});
  CHECK(b.index({Slice(), true}).sizes() == Shape{4, 1});
  CHECK(b.index({false}).sizes() == Shape{0, 4});
  CHECK(ones({2, 3}).index({true, true}).sizes() == Shape{1, 2, 3});
  CHECK(ones({2, 3, 4}).index({false, true, "..."}).sizes() == Shape{0, 2, 3, 4});
  CHECK(ones({2, 3}).index({Slice(), true, true, 1}).sizes() == Shape{2, 1});
  CHECK_THROWS_WITH(ones({2, 3}).index({false, tensor({0, 1}), "..."}),
                    "shape mismatch: indexing tensors could not be broadcast together with "
                    "shapes [0], [2]");
  CHECK(ones({2}, requires_grad()).index({true}).grad_fn()->name() == "IndexBackward0");
}

TEST_CASE("a 0-d integer tensor index selects, as an integer does", "[indexing]") {
  for (DType t : {kInt64, kInt32, kInt16}) {
    Tensor b = arange(4.0);
    b.index({tensor(1).to(t)}).fill_(9);
    CHECK(values(b) == std::vector<double>{0, 9, 2, 3});
  }
  Tensor a = arange(6.0).view({2, 3});
  CHECK(values(a.index({Slice(), tensor(-1)})) == std::vector<double>{2, 5});
  a.index_put_({tensor(1), tensor(0)}, 7.0);
  CHECK(values(a) == std::vector<double>{0, 1, 2, 7, 4, 5});
  CHECK_THROWS_WITH(arange(4.0).index({tensor(7)}),
                    "index 7 is out of bounds for dimension 0 with size 4");
  // 0-d bool tensors stay bools: a new dim, kept or emptied.
  CHECK(ones({2, 3}).index({tensor(true)}).sizes() == Shape{1, 2, 3});
  CHECK(ones({2, 3}).index({tensor(false), tensor(true)}).sizes() == Shape{0, 2, 3});
}

TEST_CASE("index_put_ through a lone mask with one value fills, whatever its dtype", "[indexing]") {
  Tensor x = zeros({3});
  x.index_put_({x.eq(0)}, tensor(5.0, dtype(kFloat64)));
  CHECK(x.str() == "tensor([5., 5., 5.])");
  Tensor y = zeros({3});
  y.index_put_({y.eq(0)}, tensor({5}));
  CHECK(y.str() == "tensor([5., 5., 5.])");
  Tensor z = zeros({2, 3});
  z.index_put_({Slice(), tensor({true, false, true})}, tensor({{{2}}}));
  CHECK(values(z) == std::vector<double>{2, 0, 2, 2, 0, 2});
  // Other indices, and 0-d bool tensors (integer indices in PyTorch), need the dtypes to match.
  const char* dtypes = "Index put requires the source and destination dtypes match, got Float for "
                       "the destination and Double for the source.";
  CHECK_THROWS_WITH(zeros({3}).index_put_({tensor({0})}, tensor(5.0, dtype(kFloat64))), dtypes);
  CHECK_THROWS_WITH(zeros({3}).index_put_({tensor(true)}, tensor(5.0, dtype(kFloat64))), dtypes);
  // The value's gradient flows through the fill.
  Tensor g = zeros({3});
  Tensor v = tensor(2.0, requires_grad());
  g.index_put_({tensor({true, false, true})}, v);
  CHECK(g.grad_fn()->name() == "IndexPutBackward0");
  (g * 3).sum().backward();
  CHECK(v.grad().item<double>() == 6);
}

TEST_CASE("index and index_put_ errors use PyTorch's wording", "[indexing][errors]") {
  Tensor a = arange(4);
  CHECK_THROWS_WITH(a.index_put_({a.gt(-1)}, tensor({1, 2, 3})),
                    "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing "
                    "result of shape [4]");
  CHECK_THROWS_WITH(zeros({3, 4}).index_put_({tensor({0, 1})}, ones({1, 2, 3})),
                    "shape mismatch: value tensor of shape [2, 3] cannot be broadcast to "
                    "indexing result of shape [2, 4]");
  CHECK_THROWS_WITH(zeros({3, 4}).index_put_({Slice(), 1}, tensor({1., 2.})),
                    "The expanded size of the tensor (3) must match the existing size (2) at "
                    "non-singleton dimension 0.  Target sizes: [3].  Tensor sizes: [2]");
  // An advanced index out of range is named by its place among the index tensors.
  CHECK_THROWS_WITH(zeros({2, 3, 4}).index({Slice(), tensor({3})}),
                    "index 3 is out of bounds for dimension 0 with size 3");
  CHECK_THROWS_WITH(zeros({2, 3, 4}).index({Slice(), tensor({0}), tensor({4})}),
                    "index 4 is out of bounds for dimension 1 with size 4");
  CHECK_THROWS_WITH(zeros({2, 3}).index_put_({Slice(), tensor({3})}, 1.0),
                    "index 3 is out of bounds for dimension 0 with size 3");
  // An integer is named by its place in the index list.
  CHECK_THROWS_WITH(zeros({2, 3}).index({None, 5}),
                    "index 5 is out of bounds for dimension 1 with size 2");
  CHECK_THROWS_WITH(zeros({10, 0}).index({Slice(), tensor({0, 1})}),
                    "index is out of bounds for dimension with size 0");
  CHECK_THROWS_WITH(zeros({10, 0}).index_put_({Slice(), tensor({0, 1})}, 1.0),
                    "index is out of bounds for dimension with size 0");
  CHECK(zeros({10, 0}).index({Slice(), tensor(std::vector<int64_t>{}, Shape{0})}).sizes() ==
        Shape{10, 0});
  const char* item = "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                     "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number";
  CHECK_THROWS_WITH(tensor(10).index({0}), item);
  CHECK_THROWS_WITH(tensor(10).index_put_({0}, 1), item);
  Tensor t = zeros({2});
  CHECK_THROWS_WITH(t.index({}), "Passing an empty index list to Tensor::index() is not valid "
                                 "syntax");
  CHECK_THROWS_WITH(t.index(std::vector<TensorIndex>{}),
                    "Passing an empty index list to Tensor::index() is not valid syntax");
  CHECK_THROWS_WITH(t.index_put_({}, 1),
                    "Passing an empty index list to Tensor::index_put_() is not valid syntax");
  CHECK_THROWS_WITH(t.index_put_({}, ones({2})),
                    "Passing an empty index list to Tensor::index_put_() is not valid syntax");
  CHECK_THROWS_WITH(t.index({"abc"}),
                    "Expected \"...\" to represent an ellipsis index, but got \"abc\"");
  // A write through the indices is a write to the leaf itself unless basic indices made a view
  // (PyTorch skips only a slice written as exactly [0, size)).
  const char* leaf = "a leaf Variable that requires grad is being used in an in-place operation.";
  const char* view =
      "a view of a leaf Variable that requires grad is being used in an in-place operation.";
  Tensor l = ones({2, 3}, requires_grad());
  CHECK_THROWS_WITH(l.index_put_({tensor({0})}, 5), leaf);
  CHECK_THROWS_WITH(l.index_put_({Slice(0, 2), tensor({0})}, 5), leaf);
  CHECK_THROWS_WITH(l.index_put_({"..."}, 5), leaf);
  CHECK_THROWS_WITH(l.index_put_({Slice(), tensor({0})}, 5), view);
  CHECK_THROWS_WITH(l.index_put_({0}, 5), view);
  CHECK_THROWS_WITH(l.index_put_({true}, 5), view);
}

TEST_CASE("roll and masked_select and scatter of a value name their backward as PyTorch",
          "[indexing][autograd]") {
  Tensor m = arange(6.0).view({2, 3}).requires_grad_();
  auto name = [](const Tensor& t) { return t.grad_fn() ? t.grad_fn()->name() : "None"; };
  // The node's inputs, by name: each edge goes straight to m's accumulator, as in PyTorch.
  auto inputs = [](const Tensor& t) {
    std::vector<std::string> out;
    for (const auto& [fn, nr] : t.grad_fn()->next_functions())
      out.push_back(fn ? fn->name() : "None");
    return out;
  };
  const std::vector<std::string> leaf{"AccumulateGrad"};
  CHECK(name(m.roll({1})) == "RollBackward0");
  CHECK(inputs(m.roll({1})) == leaf);
  CHECK(name(m.roll({1, -2}, {0, 1})) == "RollBackward0");
  CHECK(inputs(m.roll({1, -2}, {0, 1})) == leaf);
  CHECK(name(m.roll({3}, {1})) == "RollBackward0");
  const Tensor mask = tensor({true, false, true, false, true, true}).view({2, 3});
  CHECK(name(m.masked_select(mask)) == "MaskedSelectBackward0");
  CHECK(inputs(m.masked_select(mask)) == leaf);
  CHECK(name(m.masked_select(tensor({true, false, true}))) == "MaskedSelectBackward0");
  CHECK(inputs(m.masked_select(tensor({true, false, true}))) == leaf);
  const Tensor idx = tensor({{0}, {2}}, dtype(kInt64));
  CHECK(name(m.scatter(1, idx, 0.0)) == "ScatterBackward1");
  CHECK(inputs(m.scatter(1, idx, 0.0)) == leaf);
  CHECK(name(m.scatter(1, idx, zeros({2, 1}))) == "ScatterBackward0");
  CHECK(inputs(m.scatter(1, idx, zeros({2, 1}))) ==
        std::vector<std::string>{"AccumulateGrad", "None"});
}

TEST_CASE("gradients of roll and masked_select and scatter of a value and full slices",
          "[indexing][autograd]") {
  const Tensor w = arange(6.0).view({2, 3});
  auto grad_of = [](const Tensor& x, const std::function<Tensor(const Tensor&)>& f,
                    const Tensor& weights) {
    Tensor leaf = x.detach().clone().requires_grad_();
    (f(leaf) * weights).sum().backward();
    return values(leaf.grad());
  };
  const Tensor x = arange(6.0).view({2, 3}) + 1;
  // roll moves element i to i + shift: its gradient reads the weights shifted back.
  CHECK(grad_of(
            x, [](const Tensor& t) { return t.roll({1}); }, w) ==
        std::vector<double>{1, 2, 3, 4, 5, 0});
  CHECK(grad_of(
            x, [](const Tensor& t) { return t.roll({1}, {1}); }, w) ==
        std::vector<double>{1, 2, 0, 4, 5, 3});
  CHECK(grad_of(
            x,
            [](const Tensor& t) {
              return t.roll({1, -2}, {0, 1});
            },
            w) == std::vector<double>{4, 5, 3, 1, 2, 0});
  // masked_select: the weights where the mask holds, summed over the dims x was broadcast along.
  const Tensor row = tensor({true, false, true});
  CHECK(grad_of(
            x, [&](const Tensor& t) { return t.masked_select(row); }, tensor({1.0, 2, 3, 4})) ==
        std::vector<double>{1, 0, 2, 3, 0, 4});
  const Tensor mask = tensor({true, false, true, false, true, true}).view({2, 3});
  CHECK(grad_of(
            tensor({1.0, 2, 3}), [&](const Tensor& t) { return t.masked_select(mask); },
            tensor({1.0, 2, 3, 4})) == std::vector<double>{1, 3, 2 + 4});
  CHECK(grad_of(
            tensor(2.0), [&](const Tensor& t) { return t.masked_select(tensor(true)); },
            tensor({5.0})) == std::vector<double>{5});
  // scatter of a value: the written places take no gradient.
  const Tensor idx = tensor({{0}, {2}}, dtype(kInt64));
  CHECK(grad_of(
            x, [&](const Tensor& t) { return t.scatter(1, idx, 0.5); }, w) ==
        std::vector<double>{0, 1, 2, 3, 4, 0});
  CHECK(grad_of(
            x,
            [](const Tensor& t) {
              return t.index({Slice(), Slice()});
            },
            w) == values(w));
  // Central differences agree (the functions are linear in x: exact up to rounding).
  for (const auto& f : std::vector<std::function<Tensor(const Tensor&)>>{
           [](const Tensor& t) { return t.roll({2}, {1}); },
           [&](const Tensor& t) { return t.masked_select(mask) * 1.5; },
           [&](const Tensor& t) { return t.scatter(1, idx, -1.0); }}) {
    const Tensor wt = arange(static_cast<double>(f(x).numel())).view(f(x).sizes()) - 2;
    std::vector<double> got = grad_of(x, f, wt), base = values(x);
    for (size_t j = 0; j < base.size(); ++j) {
      auto at = [&](double d) {
        std::vector<double> v = base;
        v[j] += d;
        return (f(tensor(v, x.sizes(), dtype(kFloat64))) * wt).sum().item<double>();
      };
      CHECK(std::abs(got[j] - (at(1e-3) - at(-1e-3)) / 2e-3) < 1e-9);
    }
  }
}

TEST_CASE("rows scattered into a table by every thread come in the order of one", "[indexing]") {
  // Many rows, with repeated indices: the executor splits the table's rows between the threads,
  // and each row's writes must come in the launch's order, as a loop makes them (bit for bit).
  manual_seed(5);
  const int64_t rows = 3000, cols = 37, table = 200;
  for (DType index_dtype : {kInt64, kInt32}) {
    INFO((index_dtype == kInt64 ? "int64 indices" : "int32 indices"));
    Tensor ids = randint(0, table, {rows}, TensorOptions().dtype(index_dtype));
    Tensor values = randn({rows, cols});
    const std::vector<int64_t> id = ids.to(kInt64).to_vector<int64_t>();
    const std::vector<float> v = values.to_vector<float>();
    std::vector<float> sum(size_t(table * cols), 1.0f), last(size_t(table * cols), 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        sum[size_t(id[size_t(r)] * cols + c)] += v[size_t(r * cols + c)];
        last[size_t(id[size_t(r)] * cols + c)] = v[size_t(r * cols + c)];
      }
    CHECK(ones({table, cols}).index_add(0, ids, values).to_vector<float>() == sum);
    Tensor put = zeros({table, cols});
    put.index_put_({ids}, values);
    CHECK(put.to_vector<float>() == last);
  }
}

TEST_CASE("scatter_add and index_add, and the in-place scatter_, scatter_add_ and index_add_",
          "[indexing]") {
  // Against loops over the elements, repeated indices adding each.
  Tensor base = arange(12, TensorOptions().dtype(kFloat64)).reshape({3, 4});
  Tensor index = tensor({0, 2, 0, 1, 1, 1, 0, 0}, TensorOptions().dtype(kInt64)).reshape({2, 4});
  Tensor src = arange(100, 112, TensorOptions().dtype(kFloat64)).reshape({3, 4});
  std::vector<double> want = base.to_vector<double>(), s = src.to_vector<double>();
  std::vector<int64_t> ix = index.to_vector<int64_t>();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      want[static_cast<size_t>(ix[i * 4 + j] * 4 + j)] += s[static_cast<size_t>(i * 4 + j)];
  CHECK(scatter_add(base, 0, index, src).to_vector<double>() == want);
  Tensor in_place = base.clone();
  in_place.scatter_add_(0, index, src);
  CHECK(in_place.to_vector<double>() == want);
  // scatter_: written, not added.
  Tensor written = zeros({2, 3});
  written.scatter_(1, tensor({2, 0}, TensorOptions().dtype(kInt64)).reshape({2, 1}),
                   tensor({5.0f, 7.0f}).reshape({2, 1}));
  CHECK(written.to_vector<float>() == std::vector<float>{0, 0, 5, 7, 0, 0});
  written.scatter_(0, tensor({1, 1, 1}, TensorOptions().dtype(kInt64)).reshape({1, 3}), 9.0);
  CHECK(written.to_vector<float>() == std::vector<float>{0, 0, 5, 9, 9, 9});
  // index_add: source's slice i added at index[i] along dim, alpha times.
  Tensor t = ones({5, 3});
  Tensor added = t.index_add(0, tensor({0, 4, 2, 0}, TensorOptions().dtype(kInt64)),
                             arange(12, TensorOptions().dtype(kFloat32)).reshape({4, 3}), 2);
  CHECK(added.to_vector<float>() == std::vector<float>{1 + 0 + 18, 1 + 2 + 20, 1 + 4 + 22, 1, 1, 1,
                                                       1 + 12, 1 + 14, 1 + 16, 1, 1, 1, 1 + 6,
                                                       1 + 8, 1 + 10});
  // alpha is taken in self's dtype first (2.5 into int32 is 2; 2 into bool is true).
  CHECK(zeros({2}, TensorOptions().dtype(kInt32))
            .index_add(0, tensor({0, 0}, TensorOptions().dtype(kInt64)),
                       tensor({1, 3}, TensorOptions().dtype(kInt32)), 2.5)
            .to_vector<int32_t>() == std::vector<int32_t>{8, 0});
  CHECK(zeros({2}, TensorOptions().dtype(kBool))
            .index_add(0, tensor({1}, TensorOptions().dtype(kInt64)),
                       ones({1}, TensorOptions().dtype(kBool)), 2)
            .to_vector<bool>() == std::vector<bool>{false, true});
  Tensor cols = zeros({2, 4});
  cols.index_add_(1, tensor({3, 3}, TensorOptions().dtype(kInt32)), ones({2, 2}));
  CHECK(cols.to_vector<float>() == std::vector<float>{0, 0, 0, 2, 0, 0, 0, 2});
  // Bools add as "or".
  // 0-d self and source: one index, 0.
  Tensor one = scalar_tensor(1.0).requires_grad_();
  Tensor summed =
      one.index_add(0, tensor({0}, TensorOptions().dtype(kInt64)), scalar_tensor(2.0), 2);
  CHECK(summed.item<double>() == 5.0);
  CHECK(summed.dim() == 0);
  CHECK(summed.grad_fn()->name() == "IndexAddBackward0");
  CHECK_THROWS_WITH(
      one.index_add(0, tensor({1}, TensorOptions().dtype(kInt64)), scalar_tensor(2.0)),
      Catch::Contains("out of range"));
  Tensor flags = zeros({4}, TensorOptions().dtype(kBool));
  CHECK(flags
            .scatter_add(0, tensor({1, 1, 3}, TensorOptions().dtype(kInt64)),
                         ones({3}, TensorOptions().dtype(kBool)))
            .to_vector<bool>() == std::vector<bool>{false, true, false, true});
  // Gradients: self's passes through, source's is gathered (times alpha).
  Tensor w = ones({3, 2}, TensorOptions().requires_grad(true));
  Tensor v = ones({2, 2}, TensorOptions().requires_grad(true));
  Tensor g = arange(6, TensorOptions().dtype(kFloat32)).reshape({3, 2});
  Tensor out = w.index_add(0, tensor({2, 0}, TensorOptions().dtype(kInt64)), v, 3);
  CHECK(out.grad_fn()->name() == "IndexAddBackward0");
  (out * g).sum().backward();
  CHECK(w.grad().to_vector<float>() == g.to_vector<float>());
  CHECK(v.grad().to_vector<float>() == std::vector<float>{12, 15, 0, 3});
  Tensor w2 = ones({3, 2}, TensorOptions().requires_grad(true));
  CHECK(w2.scatter_add(0, tensor({{0, 1}}), v).grad_fn()->name() == "ScatterAddBackward0");
  // PyTorch's checks.
  Tensor y = ones({4});
  CHECK_THROWS_WITH(y.index_add_(0, tensor({0, 1, 2, 3}, TensorOptions().dtype(kInt64)), y),
                    Catch::Contains("unsupported operation: some elements of the input tensor and "
                                    "the written-to tensor refer to a single memory location"));
  auto idx = tensor({0, 1}, TensorOptions().dtype(kInt64));
  CHECK_THROWS_WITH(t.index_add(0, idx.reshape({1, 2}), ones({2, 3})),
                    "index_add_(): Index is supposed to be a vector");
  CHECK_THROWS_WITH(t.index_add(0, idx.to(kFloat32), ones({2, 3})),
                    "index_add_(): Expected dtype int32/int64 for index");
  CHECK_THROWS_WITH(t.index_add(0, idx, ones({2, 3}, TensorOptions().dtype(kFloat64))),
                    "index_add_(): self (Float) and source (Double) must have the same scalar "
                    "type");
  CHECK_THROWS_WITH(t.index_add(0, idx, ones({3, 3})),
                    "index_add_(): Number of indices (2) should be equal to source.size(dim) (3)");
  CHECK_THROWS_WITH(t.index_add(0, idx, ones({2, 4})),
                    "source tensor shape must match self tensor shape, excluding the specified "
                    "dimension. Got self.shape = [5, 3] source.shape = [2, 4]");
  CHECK_THROWS_WITH(t.index_add(0, tensor({0, 5}, TensorOptions().dtype(kInt64)), ones({2, 3})),
                    "index out of range in self");
  CHECK_THROWS_WITH(scatter_add(zeros({3}), 0, idx.to(kInt32), ones({2})),
                    "scatter_add(): Expected dtype int64 for index");
  CHECK_THROWS_WITH(scatter_add(zeros({3}), 0, idx, ones({2}, TensorOptions().dtype(kFloat64))),
                    "scatter_add(): Expected self.dtype to be equal to src.dtype");
}
