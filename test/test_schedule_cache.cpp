// The schedule cache (lib/pipeline/schedule_cache.h): a graph of the same structure over other
// memory reuses its schedule and gives the values a fresh schedule gives; graphs that differ in a
// leaf's strides, dtype, device, aliasing or a constant do not share one. The whole suite runs
// with the cache on and, in CI, off (TJ_SCHEDULE_CACHE=0).
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <functional>
#include <string>
#include <vector>

#include "lib/pipeline/schedule_cache.h"

using namespace tj;

namespace {

struct CacheOn {
  CacheOn() : old(config().schedule_cache) {
    config().schedule_cache = true;
    pipeline::clear_schedule_cache();
  }
  ~CacheOn() { config().schedule_cache = old; }
  bool old;
};

// The values `f` computes with the schedule cache off: a fresh schedule.
std::vector<double> fresh(const std::function<Tensor()>& f) {
  config().schedule_cache = false;
  Tensor t = f();
  t.eval(); // before the cast, which would fuse with it
  std::vector<double> v = t.to(kFloat64).to_vector<double>();
  config().schedule_cache = true;
  return v;
}

// Materializes f() and returns how many materializations found their schedule cached.
int64_t hits_of(const std::function<Tensor()>& f, std::vector<double>* values = nullptr) {
  Tensor t = f();
  reset_stats();
  t.eval();
  const int64_t hits = stats().schedule_cache_hits;
  if (values) *values = t.to(kFloat64).to_vector<double>();
  return hits;
}

} // namespace

TEST_CASE("schedule cache: the same structure over other memory reuses the schedule",
          "[schedule_cache]") {
  CacheOn on;
  manual_seed(3);
  // Each kind of schedule: elementwise, a whole reduction in two stages (a launch whose output
  // the next reads), row-local softmax, a scan, a transposed read, a gather.
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> kinds{
      {"elementwise", [](const Tensor& x) { return exp(x) * x + 1; }},
      {"sum", [](const Tensor& x) { return (x * 2).sum(); }},
      {"softmax", [](const Tensor& x) { return nn::functional::softmax(x, 1); }},
      {"cumsum", [](const Tensor& x) { return x.cumsum(1); }},
      {"transposed", [](const Tensor& x) { return x.t() * 2 + 1; }},
      {"gather",
       [](const Tensor& x) {
         return index_select(x, 0, tensor({3, 0, 0, 511})) * 2;
       }},
      {"reshaped", [](const Tensor& x) { return (x + 1).reshape({-1}); }},
  };
  for (const auto& [name, f] : kinds) {
    INFO(name);
    std::vector<Tensor> xs;
    for (int i = 0; i < 3; ++i)
      xs.push_back(randn({512, 300}));
    eval(xs);
    std::vector<double> got;
    CHECK(hits_of([&] { return f(xs[0]); }) == 0);
    for (int i = 1; i < 3; ++i) {
      CHECK(hits_of([&] { return f(xs[size_t(i)]); }, &got) == 1);
      CHECK(got == fresh([&] { return f(xs[size_t(i)]); }));
    }
  }
}

TEST_CASE("schedule cache: graphs whose kernels would differ do not share a schedule",
          "[schedule_cache]") {
  CacheOn on;
  manual_seed(4);
  Tensor a = randn({64, 48}), b = randn({64, 48}), wide = randn({64, 96});
  eval({a, b, wide});
  auto f = [](const Tensor& x, const Tensor& y) { return x * 3 + y; };
  std::vector<double> got;
  CHECK(hits_of([&] { return f(a, b); }) == 0);
  CHECK(hits_of([&] { return f(b, a); }, &got) == 1); // other memory, same structure
  CHECK(got == fresh([&] { return f(b, a); }));
  // Aliasing: both operands one memory.
  CHECK(hits_of([&] { return f(a, a); }, &got) == 0);
  CHECK(got == fresh([&] { return f(a, a); }));
  // Strides: a column slice of a wider matrix; then another slice of it (an offset).
  CHECK(hits_of([&] { return f(wide.slice(1, 0, 48), b); }, &got) == 0);
  CHECK(hits_of([&] { return f(wide.slice(1, 48, 96), b); }, &got) == 0);
  CHECK(got == fresh([&] { return f(wide.slice(1, 48, 96), b); }));
  // A transposed operand.
  Tensor at = randn({48, 64});
  at.eval();
  CHECK(hits_of([&] { return f(at.t(), b); }, &got) == 0);
  CHECK(got == fresh([&] { return f(at.t(), b); }));
  // Another dtype.
  Tensor a64 = a.to(kFloat64);
  a64.eval();
  CHECK(hits_of([&] { return f(a64, b); }, &got) == 0);
  CHECK(got == fresh([&] { return f(a64, b); }));
  // Another constant.
  CHECK(hits_of([&] { return a * 4 + b; }, &got) == 0);
  CHECK(got == fresh([&] { return a * 4 + b; }));
  // Another device.
  if (cuda::is_available()) {
    Tensor ag = a.cuda(), bg = b.cuda();
    eval({ag, bg});
    CHECK(hits_of([&] { return f(ag, bg); }, &got) == 0);
    CHECK(got == fresh([&] { return f(ag, bg); }));
    CHECK(hits_of([&] { return f(bg, ag); }, &got) == 1);
    CHECK(got == fresh([&] { return f(bg, ag); }));
  }
  // Fusion off schedules otherwise.
  config().fusion = false;
  CHECK(hits_of([&] { return f(a, b); }, &got) == 0);
  config().fusion = true;
}

TEST_CASE("schedule cache: writes, calls and errors", "[schedule_cache]") {
  CacheOn on;
  manual_seed(5);
  // An in-place write is performed, never replayed; what reads the memory after it sees it.
  Tensor x = randn({100}), y = randn({100});
  eval({x, y});
  std::vector<double> got;
  CHECK(hits_of([&] { return x * 2; }) == 0);
  x.add_(1);
  x.eval(); // the write, performed
  CHECK(hits_of([&] { return x * 2; }, &got) == 1);
  CHECK(got == fresh([&] { return x * 2; }));
  Tensor z = x.clone();
  z.eval();
  reset_stats();
  z.mul_(y);
  z.eval();
  CHECK(stats().schedule_cache_hits == 0);
  // A product is a library call: not cached.
  Tensor m = randn({64, 64});
  m.eval();
  CHECK(hits_of([&] { return matmul(m, m.t()) + 1; }) == 0);
  CHECK(hits_of([&] { return matmul(m, m.t()) + 1; }) == 0);
  // A replayed launch that fails says so as a fresh one does, naming the places that built the
  // graph it replays for.
  Tensor n = tensor({4, 5, 6}), d = tensor({1, 0, 2}), d2 = tensor({3, 1, 2});
  eval({n, d, d2});
  auto divide = [&](const Tensor& by) { return floor_divide(n, by); };
  divide(d2).eval();
  auto error_of = [&](const Tensor& by) {
    try {
      divide(by).eval();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  reset_stats();
  const std::string replayed = error_of(d);
  CHECK(stats().schedule_cache_hits == 1);
  config().schedule_cache = false;
  const std::string fresh_error = error_of(d);
  config().schedule_cache = true;
  CHECK(replayed.find("ZeroDivisionError") == 0);
  CHECK(replayed == fresh_error);
}

TEST_CASE("schedule cache: a value computed before that simplification finds is not a leaf",
          "[schedule_cache]") {
  CacheOn on;
  manual_seed(1);
  Tensor x = randn({64});
  x.eval();
  Tensor a = x + 1;
  Tensor keep = a * 3; // keeps a's node (x + 1) alive after a.eval()
  a.eval();
  // Simplification turns (x * 1) + 1 into a's node, computed in a's memory: this schedule reads
  // a's memory twice, where the structure reads a leaf (x) and another (a).
  Tensor y = (x * 1 + 1) * a;
  y.eval();
  Tensor x2 = randn({64}), b = randn({64});
  eval({x2, b});
  std::vector<double> got;
  CHECK(hits_of([&] { return (x2 * 1 + 1) * b; }, &got) == 0);
  CHECK(got == fresh([&] { return (x2 + 1) * b; }));
}
