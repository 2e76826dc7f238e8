// Sorting and order statistics (sort, argsort, topk, median, unbind): PyTorch's orders (stable,
// NaN above every number), indices, errors and gradients.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "tensorjit/tensorjit.h"

namespace {

using namespace tj;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Equal, NaN to NaN.
bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }

} // namespace

TEST_CASE("sort and argsort: stable, NaN last ascending and first descending", "[sorting]") {
  Tensor x = tensor({3.0, 1.0, kNaN, 2.0, 1.0});
  auto [up, up_at] = sort(x);
  CHECK(same(up.to_vector<double>(), {1, 1, 2, 3, kNaN}));
  CHECK(ints(up_at) == std::vector<int64_t>{1, 4, 3, 0, 2});
  auto [down, down_at] = x.sort(-1, true);
  CHECK(same(down.to_vector<double>(), {kNaN, 3, 2, 1, 1}));
  CHECK(ints(down_at) == std::vector<int64_t>{2, 0, 3, 1, 4});
  CHECK(ints(argsort(x)) == ints(up_at));
  CHECK(ints(std::get<1>(x.sort(true, 0, false))) == ints(up_at));
  // Along dim 0 of an integer matrix, exact past 2^53.
  Tensor m = tensor(std::vector<int64_t>{3, 1, 1, 2, 2, 0}, {3, 2});
  auto [cols, cols_at] = m.sort(0);
  CHECK(ints(cols) == std::vector<int64_t>{1, 0, 2, 1, 3, 2});
  CHECK(ints(cols_at) == std::vector<int64_t>{1, 2, 2, 0, 0, 1});
  const int64_t big = int64_t{1} << 62;
  Tensor wide = tensor(std::vector<int64_t>{big + 1, big}, {2});
  CHECK(ints(std::get<0>(wide.sort())) == std::vector<int64_t>{big, big + 1});
  // A 0-d tensor is its own sort, at index 0.
  auto [one, one_at] = sort(scalar_tensor(5.0));
  CHECK(one.dim() == 0);
  CHECK(one.item<double>() == 5.0);
  CHECK(one_at.item<int64_t>() == 0);
  CHECK(one_at.dtype() == kInt64);
  CHECK_THROWS_WITH(sort(tensor({1.0, 2.0}).to(kComplex64)),
                    "sort(): input tensor must be of non-complex type");
  CHECK_THROWS_WITH(sort(x, 1), "Dimension out of range (expected to be in range of [-1, 0], but "
                                "got 1)");
}

TEST_CASE("sort agrees with std::stable_sort over every slice of a 3-d tensor", "[sorting]") {
  manual_seed(3);
  Tensor x = randint(0, 4, {4, 7, 5}).to(kFloat32); // many ties
  auto [values, at] = x.sort(1, true);
  const std::vector<float> v = x.to_vector<float>(), got = values.to_vector<float>();
  const std::vector<int64_t> idx = ints(at);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t k = 0; k < 5; ++k) {
      std::vector<int64_t> want(7);
      for (int64_t j = 0; j < 7; ++j)
        want[size_t(j)] = j;
      std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) {
        return v[size_t((i * 7 + a) * 5 + k)] > v[size_t((i * 7 + b) * 5 + k)];
      });
      for (int64_t j = 0; j < 7; ++j) {
        const size_t at_ = size_t((i * 7 + j) * 5 + k);
        CHECK(idx[at_] == want[size_t(j)]);
        CHECK(got[at_] == v[size_t((i * 7 + want[size_t(j)]) * 5 + k)]);
      }
    }
}

TEST_CASE("topk: the largest or smallest k, NaN the largest, with PyTorch's errors", "[sorting]") {
  Tensor x = tensor({1.0, 5.0, 3.0, 5.0, kNaN});
  auto [top, top_at] = topk(x, 2);
  CHECK(same(top.to_vector<double>(), {kNaN, 5}));
  CHECK(ints(top_at) == std::vector<int64_t>{4, 1});
  auto [low, low_at] = x.topk(3, 0, false);
  CHECK(same(low.to_vector<double>(), {1, 3, 5}));
  CHECK(ints(low_at) == std::vector<int64_t>{0, 2, 1});
  CHECK(std::get<0>(topk(x, 0)).numel() == 0);
  Tensor rows = tensor(std::vector<double>{4, 9, 1, 7, 2, 8}, {2, 3});
  auto [best, best_at] = rows.topk(1, 1);
  CHECK(best.sizes() == Shape{2, 1});
  CHECK(ints(best_at) == std::vector<int64_t>{1, 2});
  auto [own, own_at] = topk(scalar_tensor(2.0), 0);
  CHECK(own.item<double>() == 2.0);
  CHECK(own_at.item<int64_t>() == 0);
  CHECK_THROWS_WITH(topk(x, 6), "selected index k out of range");
  CHECK_THROWS_WITH(topk(x, -1), "selected index k out of range");
  CHECK_THROWS_WITH(topk(tensor({true, false}), 1), "\"topk_cpu\" not implemented for 'Bool'");
}

TEST_CASE("median: the lower middle value, NaN first, and its index along a dim", "[sorting]") {
  CHECK(median(tensor({3.0, 1.0, 4.0, 2.0})).item<double>() == 2.0);
  CHECK(std::isnan(tensor({3.0, kNaN, 1.0}).median().item<double>()));
  CHECK(median(tensor(std::vector<int32_t>{7, 3, 5}, {3})).item<int64_t>() == 5);
  Tensor x = tensor(std::vector<double>{3, 1, 2, kNaN, 0, kNaN}, {2, 3});
  auto [mid, mid_at] = x.median(1);
  CHECK(same(mid.to_vector<double>(), {2, kNaN}));
  CHECK(ints(mid_at) == std::vector<int64_t>{2, 0});
  auto [kept, kept_at] = median(x, 1, true);
  CHECK(kept.sizes() == Shape{2, 1});
  CHECK(kept_at.sizes() == Shape{2, 1});
  // Ties: the middle of the stable order.
  auto [tie, tie_at] = tensor({2.0, 1.0, 2.0, 2.0}).median(0);
  CHECK(tie.item<double>() == 2.0);
  CHECK(tie_at.item<int64_t>() == 0);
  CHECK_THROWS_WITH(median(zeros({0})), "median() input tensor cannot be empty");
  CHECK_THROWS_WITH(median(zeros({2, 0}), 1),
                    "median(): Expected reduction dim 1 to have non-zero size.");
  CHECK_THROWS_WITH(median(tensor({true})), "\"median_cpu\" not implemented for 'Bool'");
}

TEST_CASE("sort, topk and median gradients go to the places chosen", "[sorting][autograd]") {
  Tensor x = tensor({3.0, 1.0, 2.0}).requires_grad_();
  Tensor values = std::get<0>(x.sort());
  CHECK(values.grad_fn()->name() == "SortBackward0");
  (values * tensor({1.0, 2.0, 3.0})).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{3, 1, 2});

  Tensor y = tensor({1.0, 4.0, 2.0, 8.0}).requires_grad_();
  Tensor top = std::get<0>(y.topk(2));
  CHECK(top.grad_fn()->name() == "TopkBackward0");
  (top * tensor({10.0, 1.0})).sum().backward();
  CHECK(y.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 10});

  // median(): shared by the elements equal to it (MedianBackward0).
  Tensor z = tensor({1.0, 2.0, 2.0, 3.0}).requires_grad_();
  Tensor m = z.median();
  CHECK(m.grad_fn()->name() == "MedianBackward0");
  m.backward();
  CHECK(z.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0});

  // median(dim): to the index returned (MedianBackward1).
  Tensor w = tensor(std::vector<double>{5, 1, 3, 2, 9, 4}, {2, 3}).requires_grad_();
  Tensor md = std::get<0>(w.median(1));
  CHECK(md.grad_fn()->name() == "MedianBackward1");
  (md * tensor({1.0, 2.0})).sum().backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{0, 0, 1, 0, 0, 2});
}

TEST_CASE("unbind: views of each slice, named as PyTorch names them", "[sorting][views]") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 4}, {2, 2}).requires_grad_();
  std::vector<Tensor> cols = x.unbind(1);
  REQUIRE(cols.size() == 2);
  CHECK(cols[0].to_vector<double>() == std::vector<double>{1, 3});
  CHECK(unbind(x)[1].to_vector<double>() == std::vector<double>{3, 4});
  CHECK(cols[1].grad_fn()->name() == "UnbindBackward0");
  (cols[0] * 2 + cols[1]).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{2, 1, 2, 1});
  CHECK_THROWS_WITH(scalar_tensor(1.0).unbind(), "Dimension specified as 0 but tensor has no "
                                                 "dimensions");
  CHECK_THROWS_WITH(
      cols[0].mul_(2),
      Catch::Contains("Output 0 of UnbindBackward0 is a view and is being modified inplace"));
}
