// Indexing, index_put_, split, chunk, flatten and reshape at their edges, as libtorch behaves:
// bools and 0-d tensors as indices, values with leading size-1 dims, one-element values through
// a mask, empty dims, the grad_fn names and the errors PyTorch gives.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cstdint>
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
