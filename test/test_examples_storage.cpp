// Two tutorials' storage, view, in-place and NumPy examples, with the outputs they print.
// Random inputs are replaced by the values the tutorials print, or the check is made against
// values computed here.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

using namespace tj;
using namespace tj::indexing;

namespace {
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// Restores the default print options when a test ends.
struct PrintOptionsGuard {
  ~PrintOptionsGuard() { reset_printoptions(); }
};
} // namespace

TEST_CASE("examples, storage: the storage under a view, indexed and written", "[examples][views]") {
  Tensor t = arange(10.).view({2, 5});
  CHECK(t.str() == "tensor([[0., 1., 2., 3., 4.],\n        [5., 6., 7., 8., 9.]])");
  TypedStorage storage = t.storage();
  CHECK(storage.str() == " 0.0\n 1.0\n 2.0\n 3.0\n 4.0\n 5.0\n 6.0\n 7.0\n 8.0\n 9.0\n"
                         "[torch.FloatStorage of size 10]");
  CHECK(storage[3].item<double>() == 3.0);
  storage[3] = 10.0;
  CHECK(storage.str() == " 0.0\n 1.0\n 2.0\n 10.0\n 4.0\n 5.0\n 6.0\n 7.0\n 8.0\n 9.0\n"
                         "[torch.FloatStorage of size 10]");
  CHECK(t[0][3].item<double>() == 10.0); // the tensor views the storage it wrote
  CHECK(t.sizes() == Shape{2, 5});
  CHECK(t.storage_offset() == 0);
  CHECK(t.stride() == std::vector<int64_t>{5, 1});

  // A view's storage is the whole block, whatever the view.
  Tensor row = t[1];
  CHECK(row.storage_offset() == 5);
  CHECK(row.storage().size() == 10);
  CHECK(t.t().storage().str() == storage.str());
  CHECK(tensor({1, 2}).storage().str() == " 1\n 2\n[torch.LongStorage of size 2]");
  CHECK(tensor({true, false}).storage().str() == " True\n False\n[torch.BoolStorage of size 2]");
  CHECK(tensor({0.1, 1e16, -2.5}, kFloat64).storage().str() ==
        " 0.1\n 1e+16\n -2.5\n[torch.DoubleStorage of size 3]");
  CHECK(tensor({0.1}).storage().str() == " 0.10000000149011612\n[torch.FloatStorage of size 1]");
  CHECK_THROWS_WITH(storage[10], "index 10 out of range for storage of size 10");
  CHECK(tensor(std::vector<float>{}).storage().str() == " \n[torch.FloatStorage of size 0]");
}

TEST_CASE("examples, storage: transposes flip the strides", "[examples][views]") {
  Tensor t = tensor({{3, 1, 2}, {4, 1, 7}});
  CHECK(t.str() == "tensor([[3, 1, 2],\n        [4, 1, 7]])");
  CHECK(t.t().str() == "tensor([[3, 4],\n        [1, 1],\n        [2, 7]])");
  CHECK(t.t().sizes() == Shape{3, 2});
  CHECK(equal(t.t(), t.transpose(0, 1)));

  Tensor z = zeros({1, 2, 3});
  CHECK(z.str() == "tensor([[[0., 0., 0.],\n         [0., 0., 0.]]])");
  CHECK(z.stride() == std::vector<int64_t>{6, 3, 1});
  CHECK(z.transpose(0, 1).str() == "tensor([[[0., 0., 0.]],\n\n        [[0., 0., 0.]]])");
  CHECK(z.transpose(0, 1).sizes() == Shape{2, 1, 3});
  CHECK(z.transpose(0, 1).stride() == std::vector<int64_t>{3, 6, 1});
  CHECK(z.transpose(0, 2).str() == "tensor([[[0.],\n         [0.]],\n\n        [[0.],\n         "
                                   "[0.]],\n\n        [[0.],\n         [0.]]])");
  CHECK(z.transpose(0, 2).sizes() == Shape{3, 2, 1});
  CHECK(z.transpose(0, 2).stride() == std::vector<int64_t>{1, 3, 6});
  CHECK(z.transpose(1, 2).str() == "tensor([[[0., 0.],\n         [0., 0.],\n         [0., 0.]]])");
  CHECK(z.transpose(1, 2).sizes() == Shape{1, 3, 2});
  CHECK(z.transpose(1, 2).stride() == std::vector<int64_t>{6, 1, 3});
}

TEST_CASE("examples, storage: indexing, views, in-place ops and the NumPy bridge",
          "[examples][views]") {
  Tensor x = rand({3, 4});
  std::vector<double> xv = values(x);
  CHECK(values(x.index({Slice()})) == xv);
  CHECK(values(x.index({Slice(), 2})) == std::vector<double>{xv[2], xv[6], xv[10]});
  CHECK(values(x.index({1, Slice()})) == std::vector<double>{xv[4], xv[5], xv[6], xv[7]});
  CHECK(x.index({2, 3}).item<double>() == xv[11]);
  CHECK(x.index({2, 3}).dim() == 0);
  CHECK(x.index({Slice(-1, None)}).sizes() == Shape{1, 4});
  CHECK(x[-1].sizes() == Shape{4});
  CHECK(values(x[-1]) == values(x.index({Slice(-1, None)})));
  CHECK(x.index({Slice(0, 1)}).sizes() == Shape{1, 4});
  CHECK(x.index({Slice(None, -1)}).sizes() == Shape{2, 4});
  Tensor stepped = x.index({Slice(0, 3, 2)});
  CHECK(stepped.sizes() == Shape{2, 4});
  CHECK(values(stepped[1]) == values(x[2]));
  CHECK(x.index({None}).sizes() == Shape{1, 3, 4});

  Tensor t1 = arange(1, 5).view({2, 2});
  Tensor t2 = tensor({{1, 1}, {0, 0}});
  CHECK((t1 + t2).str() == "tensor([[2, 3],\n        [3, 4]])");
  CHECK((t1 + 1).str() == "tensor([[2, 3],\n        [4, 5]])");

  Tensor a = tensor({1, 2}), b = tensor({1, 1});
  a.add_(b);
  CHECK(a.str() == "tensor([2, 3])");
  a.zero_();
  CHECK(a.str() == "tensor([0, 0])");

  // In place keeps the tensor (its storage); reassignment makes a new one.
  Tensor o = ones({1});
  Tensor same_storage = o.view({1});
  o.add_(1);
  CHECK(o.str() == "tensor([2.])");
  CHECK(same_storage.str() == "tensor([2.])");
  o = o.add(1);
  CHECK(o.str() == "tensor([3.])");
  CHECK(same_storage.str() == "tensor([2.])");
  o = o + 1;
  CHECK(o.str() == "tensor([4.])");

  Tensor v = tensor({{1, 2, 3}, {4, 5, 6}});
  CHECK(v.view({6}).str() == "tensor([1, 2, 3, 4, 5, 6])");
  CHECK(v.view({3, 2}).str() == "tensor([[1, 2],\n        [3, 4],\n        [5, 6]])");
  CHECK(v.view({3, -1}).str() == v.view({3, 2}).str());
  CHECK(v.t().str() == "tensor([[1, 4],\n        [2, 5],\n        [3, 6]])");

  Tensor r = rand({2, 3});
  NumpyArray n = r.numpy();
  CHECK(n.dtype == "<f4");
  r.zero_();
  for (int i = 0; i < 6; ++i)
    CHECK(static_cast<const float*>(n.data)[i] == 0.0f);
  CHECK(r.str() == "tensor([[0., 0., 0.],\n        [0., 0., 0.]])");

  double host[6] = {0.55892276, 0.06026952, 0.72496545, 0.65659463, 0.27697739, 0.29141587};
  Tensor from = from_blob(host, {2, 3}, kFloat64);
  CHECK(from.str() == "tensor([[0.5589, 0.0603, 0.7250],\n        [0.6566, 0.2770, 0.2914]], "
                      "dtype=torch.float64)");
}

TEST_CASE("examples, storage: NumPy memory, casts, promotion and in-place ops",
          "[examples][views]") {
  PrintOptionsGuard restore;
  Tensor x = tensor({{-0.05147836, 0.6646777, 0.54277486, 2.5307057, 0.9185137},
                     {-0.25555766, 0.55434686, 1.6044122, 0.8425406, -1.0667061},
                     {-0.52467006, 0.21967238, 0.87380797, 0.8046722, 0.7197009}});
  NumpyArray y = x.numpy();
  CHECK(y.shape == std::vector<int64_t>{3, 5});
  CHECK(y.strides == std::vector<int64_t>{20, 4});

  double a[5] = {1, 1, 1, 1, 1};
  Tensor b = from_blob(a, {5}, kFloat64);
  CHECK(b.str() == "tensor([1., 1., 1., 1., 1.], dtype=torch.float64)");
  Tensor c = b.to(kInt64);
  CHECK(dtype_name(c.dtype()) == "torch.int64");
  CHECK(c.str() == "tensor([1, 1, 1, 1, 1])");
  CHECK(dtype_name(b.dtype()) == "torch.float64");

  Tensor xr = tensor({{0.4959, -0.8125629425, -0.7801, 0.9866, 0.5365},
                      {-0.9082, 0.1658, -1.2888, -2.4009, 0.5765},
                      {-0.4390, -0.6147, -1.3412, -0.0609, -1.0023}});
  Tensor resb = xr + b, resc = xr + c;
  CHECK(resb.dtype() == kFloat64);
  CHECK(resc.dtype() == kFloat32);
  CHECK(resc.str() == "tensor([[ 1.4959,  0.1874,  0.2199,  1.9866,  1.5365],\n"
                      "        [ 0.0918,  1.1658, -0.2888, -1.4009,  1.5765],\n"
                      "        [ 0.5610,  0.3853, -0.3412,  0.9391, -0.0023]])");
  Tensor same = resb == resc;
  CHECK(same.dtype() == kBool);
  // Equal exactly where the float32 sum happens to be the float64 sum.
  std::vector<double> bv = values(resb), cv = values(resc);
  std::vector<bool> sv = same.to_vector<bool>();
  for (size_t i = 0; i < 15; ++i)
    CHECK(sv[i] == (bv[i] == cv[i]));
  set_printoptions(10);
  CHECK(resb.index({0, 1}).str() == "tensor(0.1874370575, dtype=torch.float64)");
  CHECK(resc.index({0, 1}).str() == "tensor(0.1874370575)");
  CHECK(xr.index({0, 1}).str() == "tensor(-0.8125629425)");
  reset_printoptions();

  Tensor A = tensor({{1.}, {2.}, {3.}, {4.}});
  Tensor B = tensor({{5., -5., 5., -5., 5.}});
  CHECK(A.sizes() == Shape{4, 1});
  CHECK(B.sizes() == Shape{1, 5});
  CHECK((A + B).str() == "tensor([[ 6., -4.,  6., -4.,  6.],\n"
                         "        [ 7., -3.,  7., -3.,  7.],\n"
                         "        [ 8., -2.,  8., -2.,  8.],\n"
                         "        [ 9., -1.,  9., -1.,  9.]])");

  // x.add_(xr) writes x, and y (its NumPy array) sees it; x.t_() transposes x itself.
  Tensor sum = x + xr;
  std::vector<double> expect = values(sum);
  x.add_(xr);
  CHECK(values(x) == expect);
  for (int i = 0; i < 15; ++i)
    CHECK(static_cast<const float*>(y.data)[i] == static_cast<float>(expect[i]));
  std::string transposed = x.t().str();
  x.t_();
  CHECK(x.str() == transposed);
  CHECK(x.sizes() == Shape{5, 3});

  double ones5[5] = {1, 1, 1, 1, 1};
  Tensor shared = from_blob(ones5, {5}, kFloat64);
  ones5[2] = 0;
  CHECK(shared.str() == "tensor([1., 1., 0., 1., 1.], dtype=torch.float64)");
  shared[3] = 5;
  CHECK(ones5[3] == 5);

  // The image-batch walk of the tutorial, at a smaller batch: permute, scale, narrow, kill channels.
  std::vector<uint8_t> pixels(4 * 8 * 8 * 3);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<uint8_t>(i * 37 % 256);
  Tensor imgs = from_blob(pixels.data(), {4, 8, 8, 3}, kUInt8).permute({0, 3, 1, 2}).to(kFloat32);
  imgs = imgs / 255;
  CHECK(imgs.sizes() == Shape{4, 3, 8, 8});
  CHECK(imgs.min().item<double>() == 0.0);
  CHECK(imgs.max().item<double>() == 1.0);
  Tensor first = narrow(imgs, 0, 0, 2);
  CHECK(first.sizes() == Shape{2, 3, 8, 8});
  first.narrow(1, 1, 2).fill_(0);
  CHECK(imgs.index({Slice(0, 2), Slice(1, 3)}).abs().sum().item<double>() == 0.0);
  CHECK(imgs.index({Slice(2, 4), Slice(1, 3)}).abs().sum().item<double>() > 0.0);
  CHECK(imgs.index({Slice(0, 2), 0}).sum().item<double>() > 0.0);
}
