// Writes through memory that elements share, as PyTorch 1.13 decides them (ATen's
// MemoryOverlap): fills of expanded tensors, inputs that overlap what they overwrite, and the
// sign of zero in relu and clamp. Every expected string was printed by PyTorch 1.13.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

using namespace tj;
using namespace tj::indexing;

namespace {
const char* const kInternal =
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation.";
const char* const kPartial =
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
    "a single memory location. Please clone() the tensor before performing the operation.";
} // namespace

TEST_CASE("one value fills an expanded tensor; anything else raises", "[aliasing][inplace]") {
  Tensor a = zeros({1, 1});
  Tensor b = a.expand({4, 2});
  b.fill_(-1);
  CHECK(a.str() == "tensor([[-1.]])");
  CHECK(b.str() == "tensor([[-1., -1.],\n        [-1., -1.],\n        [-1., -1.],\n"
                   "        [-1., -1.]])");

  Tensor c = ones({1, 3});
  c.expand({4, 3}).zero_();
  CHECK(c.str() == "tensor([[0., 0., 0.]])");

  Tensor d = zeros({1, 3});
  d.expand({4, 3}).fill_(tensor(2.5));
  CHECK(d.str() == "tensor([[2.5000, 2.5000, 2.5000]])");

  // Slices with one value fill (PyTorch's setitem); masks and indices write a location where
  // any element naming it is selected.
  Tensor e = zeros({1, 3});
  e.expand({4, 3}).index_put_({Slice(1, 3)}, 5);
  CHECK(e.str() == "tensor([[5., 5., 5.]])");
  Tensor f = zeros({1, 3});
  f.expand({2, 3}).index_put_({tensor({{true, false, false}, {false, false, true}})}, 7);
  CHECK(f.str() == "tensor([[7., 0., 7.]])");
  Tensor g = zeros({3, 1});
  g.expand({3, 4}).index_put_({tensor({0, 2})}, 7);
  CHECK(g.str() == "tensor([[7.],\n        [0.],\n        [7.]])");
  Tensor h = zeros({3, 1});
  h.expand({3, 4}).index_put_({tensor({0, 2})}, tensor(7.));
  CHECK(h.str() == "tensor([[7.],\n        [0.],\n        [7.]])");
  Tensor k = zeros({1, 3});
  k.expand({2, 3}).masked_fill_(tensor({{true, false, false}, {false, false, true}}), 2.);
  CHECK(k.str() == "tensor([[2., 0., 2.]])");

  // A value that may differ per element: PyTorch's error, and nothing changed.
  Tensor m = zeros({1, 3});
  Tensor me = m.expand({2, 3});
  CHECK_THROWS_WITH(me.add_(1), kInternal);
  CHECK_THROWS_WITH(me.copy_(ones({2, 3})), kInternal);
  CHECK_THROWS_WITH(me.copy_(tensor(3.)), kInternal);
  CHECK_THROWS_WITH(me.relu_(), kInternal);
  CHECK_THROWS_WITH(me.index_put_({tensor({0})}, ones({1, 3})), kInternal);
  CHECK_THROWS_WITH(add_out(me, ones({2, 3}), ones({2, 3})), kInternal);
  CHECK(m.str() == "tensor([[0., 0., 0.]])");
}

TEST_CASE("an input sharing part of what it overwrites raises", "[aliasing][inplace]") {
  Tensor x = arange(4.);
  x.eval();
  CHECK_THROWS_WITH(x.narrow(0, 0, 3).copy_(x.narrow(0, 1, 3)), kPartial);
  CHECK_THROWS_WITH(x.narrow(0, 0, 3).add_(x.narrow(0, 1, 3)), kPartial);
  CHECK_THROWS_WITH(x.add_(x[0]), kPartial);
  CHECK_THROWS_WITH(x.mul_(x.narrow(0, 1, 1)), kPartial);
  CHECK_THROWS_WITH(x.index_put_({Slice(1, 4)}, x.narrow(0, 0, 3)), kPartial);
  Tensor y = arange(4.).reshape({2, 2});
  CHECK_THROWS_WITH(y.add_(y.t()), kPartial);
  CHECK_THROWS_WITH(y.copy_(y.t()), kPartial);
  // out= arguments: each input against the output.
  Tensor z = arange(6.);
  Tensor zo = z.narrow(0, 1, 3);
  CHECK_THROWS_WITH(add_out(zo, z.narrow(0, 0, 3), z.narrow(0, 3, 3)), kPartial);
  // index_put_ with indices: the value may not share the tensor's memory at all.
  CHECK_THROWS_WITH(x.index_put_({tensor({0, 1})}, x.narrow(0, 2, 2)), kPartial);
  CHECK_THROWS_WITH(x.index_put_({tensor({0, 1})}, x.narrow(0, 1, 2)), kPartial);
  CHECK(x.str() == "tensor([0., 1., 2., 3.])"); // nothing was written
  CHECK(y.str() == "tensor([[0., 1.],\n        [2., 3.]])");
  CHECK(z.str() == "tensor([0., 1., 2., 3., 4., 5.])");
}

TEST_CASE("the destination itself, or the same elements, may be read", "[aliasing][inplace]") {
  Tensor x = arange(4.);
  x.add_(x);
  CHECK(x.str() == "tensor([0., 2., 4., 6.])");
  Tensor v = arange(4.);
  v.add_(v.view({4}));
  CHECK(v.str() == "tensor([0., 2., 4., 6.])");
  Tensor w = arange(4.);
  w.narrow(0, 1, 2).copy_(w.narrow(0, 1, 2));
  CHECK(w.str() == "tensor([0., 1., 2., 3.])");
  Tensor s = arange(6.);
  Tensor lo = s.narrow(0, 0, 3);
  add_out(lo, s.narrow(0, 0, 3), ones({3}));
  CHECK(s.str() == "tensor([1., 2., 3., 3., 4., 5.])");
  Tensor p = arange(6.);
  Tensor hi = p.narrow(0, 3, 3);
  mul_out(hi, p.narrow(0, 0, 3), p.narrow(0, 3, 3));
  CHECK(p.str() == "tensor([ 0.,  1.,  2.,  0.,  4., 10.])");
  // A mask that is the tensor itself; a fill with one of its own elements (read first).
  Tensor b = tensor({true, false, true});
  b.masked_fill_(b, false);
  CHECK(b.str() == "tensor([False, False, False])");
  Tensor f = arange(4.);
  f.fill_(f[2]);
  CHECK(f.str() == "tensor([2., 2., 2., 2.])");
  // Disjoint parts of one storage.
  Tensor d = arange(6.);
  d.narrow(0, 0, 3).add_(d.narrow(0, 3, 3));
  CHECK(d.str() == "tensor([3., 5., 7., 3., 4., 5.])");
}

TEST_CASE("relu and one-sided clamp keep the input on a tie, the sign of zero included",
          "[aliasing][elementwise]") {
  CHECK(relu(tensor({-0.0, 0.0, -1.0})).str() == "tensor([-0., 0., 0.])");
  Tensor r = tensor({-0.0, 0.0, -1.0});
  r.relu_();
  CHECK(r.str() == "tensor([-0., 0., 0.])");
  Tensor r2 = tensor({-0.0, 0.0, -1.0});
  r2.clamp_min_(0);
  CHECK(r2.str() == "tensor([-0., 0., 0.])");
  const double nan = std::nan("");
  CHECK(tensor({-0.0, 0.0, -1.0, nan}).clamp(0).str() == "tensor([-0., 0., 0., nan])");
  CHECK(tensor({-0.0, 0.0, -1.0}).clamp_min(0).str() == "tensor([-0., 0., 0.])");
  CHECK(tensor({-0.0, 0.0, 1.0, nan}).clamp(std::nullopt, 0).str() == "tensor([-0., 0., 0., nan])");
  CHECK(tensor({-0.0, 0.0, 1.0}).clamp(std::nullopt, -0.0).str() == "tensor([-0., 0., -0.])");
  CHECK(tensor({-0.0, 0.0, 1.0, -2.0}).clamp(0, 0).str() == "tensor([-0., 0., 0., 0.])");
  CHECK(tensor({-1.0, 0.5, 3.0}).clamp(2, 1).str() == "tensor([1., 1., 1.])");
  CHECK(tensor({-3, 0, 5}).clamp(-1, 2).str() == "tensor([-1,  0,  2])");
  // A sum starts from +0., as PyTorch's loop: a 0-d -0. sums (and averages) to 0.
  CHECK(tensor(-0.0).sum().str() == "tensor(0.)");
  CHECK(tensor(-0.0).mean().str() == "tensor(0.)");
  CHECK(tensor({-0.0, -0.0}).reshape({2, 1}).sum({1}).str() == "tensor([0., 0.])");
  CHECK(tensor(-0.0).prod().str() == "tensor(-0.)");
  // Long enough to take the vector loop.
  std::vector<double> zeros40(40, -0.0);
  zeros40.insert(zeros40.end(), {0.0, 0.0, 0.0});
  Tensor lr = relu(tensor(zeros40));
  CHECK(lr.to_vector<float>()[0] == 0.0f);
  CHECK(std::signbit(lr.to_vector<float>()[39]));
  CHECK(!std::signbit(lr.to_vector<float>()[40]));
}
