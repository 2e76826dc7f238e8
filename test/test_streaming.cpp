// Outputs written around the cache (kir::Slot::stream): which kernels stream, and that streaming
// changes no value, wherever the output starts in memory and whatever its dtype.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <tensorjit/tensorjit.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include "test/support/seed.h"
#include "test/support/temp_dir.h"

using namespace tj;

namespace {

// Sets config().stream_store_bytes for a scope.
struct StreamFrom {
  explicit StreamFrom(int64_t bytes) : old(config().stream_store_bytes) {
    config().stream_store_bytes = bytes;
  }
  ~StreamFrom() { config().stream_store_bytes = old; }
  int64_t old;
};

// y = f(x) computed with and without streaming stores: {without, with}.
template <class F> std::pair<Tensor, Tensor> both_ways(const Tensor& x, F f) {
  Tensor cached, streamed;
  {
    StreamFrom never(-1);
    cached = f(x);
    cached.eval();
  }
  {
    StreamFrom always(1);
    // Runs of a page at least; rows (2-d) of at most 4096 elements (kir::kMaxStreamRow).
    if (x.size(-1) * static_cast<int64_t>(itemsize(x.dtype())) >= 4096 &&
        (x.dim() == 1 || x.size(-1) <= 4096))
      CHECK_THAT(ir::dump({f(x)}, "kernel"), Catch::Contains(", stream"));
    streamed = f(x);
    streamed.eval();
  }
  return {cached, streamed};
}

// ... equal bit for bit.
template <class F> void same_either_way(const Tensor& x, F f) {
  auto [cached, streamed] = both_ways(x, f);
  CHECK(equal(cached, streamed));
}

} // namespace

TEST_CASE("large outputs of elementwise kernels are written around the cache", "[streaming]") {
  Tensor x = rand({5000});
  {
    StreamFrom always(1);
    const std::string kernel = ir::dump({exp(x) * 2}, "kernel");
    CHECK_THAT(kernel, Catch::Contains("slot1 = out float32 contiguous, stream"));
#if defined(__x86_64__)
    // Vector stores at 64-byte boundaries, non-temporal.
    CHECK_THAT(ir::dump({exp(x) * 2}, "llvm"), Catch::Contains("!nontemporal"));
#endif
    // Not reductions (their outputs are small), nor runs shorter than a page.
    CHECK_THAT(ir::dump({x.sum()}, "kernel"), !Catch::Contains(", stream"));
    CHECK_THAT(ir::dump({(rand({500, 8}) * 2)}, "kernel"), Catch::Contains(", stream"));
    // Rows shorter than a page that follow on in memory are one run (a call per row: the
    // transposed read of 8 rows, gathered rows).
    CHECK_THAT(ir::dump({(rand({500, 8}).t() * 2)}, "kernel"), Catch::Contains(", stream"));
    Tensor ids = randint(0, 100, {300});
    CHECK_THAT(ir::dump({index_select(rand({100, 40}), 0, ids) * 2}, "kernel"),
               Catch::Contains(", stream"));
    // A transposed read, which the executor walks in tiles, streams too: each row of a tile is a
    // run of whole lines, fenced once per chunk (fenced per call, a tile row's, it was 4.5x
    // slower than through the cache).
    Tensor m = rand({256, 256});
    m.eval();
    CHECK_THAT(ir::dump({m.t() * 2}, "kernel"), Catch::Contains(", stream"));
    CHECK(equal(m.t() * 2, m.t().contiguous() * 2));
    // Rows and columns that end inside tiles and inside lines, against a loop.
    Tensor odd = rand({300, 301});
    std::vector<float> in = odd.to_vector<float>(), out = (odd.t() * 2 + 1).to_vector<float>();
    bool same = true;
    for (size_t i = 0; i < 301; ++i)
      for (size_t j = 0; j < 300; ++j)
        same &= out[i * 300 + j] == in[j * 301 + i] * 2 + 1;
    CHECK(same);
  }
  StreamFrom never(-1);
  CHECK_THAT(ir::dump({exp(x) * 2}, "kernel"), !Catch::Contains(", stream"));
  // By default only outputs larger than the cache stream.
  config().stream_store_bytes = 0;
  CHECK_THAT(ir::dump({exp(x) * 2}, "kernel"), !Catch::Contains(", stream"));
  CHECK_THAT(ir::dump({exp(rand({64 << 20})) * 2}, "kernel"), Catch::Contains(", stream"));
}

TEST_CASE("an output the kernel also reads is written through the cache", "[streaming]") {
  // A write into part of a tensor is made in its memory: each line is read just before it is
  // written, so it is in the cache. The kernels that ran are dumped as they materialize.
  StreamFrom always(1);
  test::TempDir dir;
  const Config saved = config();
  config().dump = "schedule,kernel";
  config().dump_dir = dir.path.string();
  Tensor t = zeros({4, 4096}), y = rand({4, 2048});
  tj::eval({t, y});
  t.narrow(1, 0, 2048).add_(y);
  t.eval();
  config() = saved;
  CHECK(equal(t.narrow(1, 0, 2048), y));
  CHECK(equal(t.narrow(1, 2048, 2048), zeros({4, 2048})));
  auto read = [](const std::string& path) {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  // The last materialization is the write: the highest-numbered dump in the fresh directory
  // (the dump counter runs on over the process, so other tests change where it starts).
  std::string last;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with("-schedule.txt") && name > last) last = name;
  }
  REQUIRE(!last.empty());
  const std::string number = last.substr(0, last.find('-'));
  const std::string schedule = read(dir.file(number + "-schedule.txt")),
                    kernel = read(dir.file(number + "-kernel.txt"));
  CHECK_THAT(schedule, Catch::Contains("an in-place write into existing memory"));
  CHECK_THAT(kernel, Catch::Contains("out float32"));
  CHECK_THAT(kernel, !Catch::Contains(", stream"));
  // A write into fresh memory still streams.
  CHECK_THAT(ir::dump({y * 2}, "kernel"), Catch::Contains(", stream"));
}

TEST_CASE("streaming stores change no value", "[streaming]") {
  for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kInt32, kInt64, kBool}) {
    INFO(dtype_name(t));
    // Lengths that leave a remainder after the vector loop, and one shorter than a boundary's gap.
    for (int64_t n : {5003, 4099, 1024}) {
      Tensor x = (rand({n}) * 100).to(t);
      same_either_way(x, [](const Tensor& v) { return (v * 3).to(v.dtype()); });
    }
  }
  // The kernel's error bits come through its loops: a zero divisor in the whole lines, and in
  // the last line (past them; fresh memory starts on a boundary, and a computation that may fail
  // is made in fresh memory before it is written anywhere else).
  StreamFrom always(1);
  Tensor a = arange(5000, dtype(kInt32));
  for (int64_t zero : {2500, 4999}) {
    INFO(zero);
    Tensor b = arange(5000, dtype(kInt32)) - zero;
    CHECK_THROWS_WITH(floor_divide(a, b).eval(), Catch::StartsWith("ZeroDivisionError"));
  }
}

TEST_CASE("gathered rows stream and prefetch the rows ahead; scattered ones too", "[streaming]") {
  // Rows that follow on in memory, one call each: a line a row's end shares with the next row's
  // start goes through the cache from both calls. Indices of both widths, repeated and in any
  // order; row lengths that end on, before and after a 64-byte boundary.
  for (int64_t w : {40, 264, 1000, 4}) {
    INFO(w);
    Tensor table = rand({97, w});
    for (DType it : {kInt64, kInt32}) {
      Tensor ids = randint(0, 97, {301}).to(it);
      tj::eval({table, ids});
      { // the rows follow on in memory: one run of at least a page (301 * 4 * 4 bytes and more)
        StreamFrom always(1);
        CHECK_THAT(ir::dump({index_select(table, 0, ids) * 2 + 1}, "kernel"),
                   Catch::Contains(", stream"));
      }
      same_either_way(table, [&](const Tensor& t) { return index_select(t, 0, ids) * 2 + 1; });
      Tensor expect = (index_select(table, 0, ids) * 2 + 1).contiguous();
      std::vector<int64_t> rows = ids.to(kInt64).to_vector<int64_t>();
      std::vector<float> got = expect.to_vector<float>(), all = table.to_vector<float>();
      bool same = true;
      for (size_t r = 0; r < rows.size(); ++r)
        for (int64_t c = 0; c < w; ++c)
          same &= got[r * size_t(w) + size_t(c)] == all[size_t(rows[r] * w + c)] * 2 + 1;
      CHECK(same);
    }
  }
  // Their gradient adds rows into the table where the indices say (repeated ones add up), the
  // executor prefetching the rows it will write.
  for (int64_t w : {264, 40}) {
    INFO(w);
    Tensor table = rand({97, w}).requires_grad_();
    Tensor ids = randint(0, 97, {1001}).to(kInt32), src = rand({1001, w});
    tj::eval({table, ids, src});
    (index_select(table, 0, ids) * src).sum().backward();
    std::vector<float> got = table.grad().to_vector<float>(), rows = src.to_vector<float>();
    std::vector<float> expect(size_t(97 * w), 0.0f);
    std::vector<int32_t> at = ids.to_vector<int32_t>();
    for (size_t r = 0; r < at.size(); ++r)
      for (int64_t c = 0; c < w; ++c)
        expect[size_t(at[r] * w + c)] += rows[r * size_t(w) + size_t(c)];
    CHECK(got == expect); // in order: each element's additions as a loop over the rows makes them
  }
  // An index out of range is still reported, rows ahead of it prefetching nothing.
  StreamFrom always(1);
  Tensor bad = cat({randint(0, 97, {200}), full({1}, 97, dtype(kInt64))});
  CHECK_THROWS_WITH((index_select(rand({97, 264}), 0, bad) * 2).eval(),
                    Catch::Contains("out of range"));
}

TEST_CASE("streaming stores into memory at any offset", "[streaming]") {
  StreamFrom always(1);
  const int64_t n = 6000;
  Tensor x = rand({n});
  // A view starting 1..17 floats past a 64-byte boundary: the first elements go through the
  // cache until the next boundary; the elements around the view are untouched.
  for (int64_t at : {1, 5, 15, 16, 17}) {
    Tensor out = full({n + 40}, -1.0);
    out.narrow(0, at, n).copy_(x * 2);
    CHECK(equal(out.narrow(0, at, n), x * 2));
    CHECK(equal(out.narrow(0, 0, at), full({at}, -1.0)));
    CHECK(equal(out.narrow(0, at + n, 40 - at), full({40 - at}, -1.0)));
  }
  // Memory not aligned to the element size: every store goes through the cache.
  std::vector<char> bytes(4 * n + 1, 0);
  Tensor blob = from_blob(bytes.data() + 1, {n}, kFloat32);
  blob.copy_(x + 1);
  std::vector<float> back(n);
  std::memcpy(back.data(), bytes.data() + 1, 4 * n);
  CHECK(back == (x + 1).to_vector<float>());
}

TEST_CASE("rows written by a store loop stream, and keep their values in scratch", "[streaming]") {
  namespace F = nn::functional;
  manual_seed(test::test_seed(41)); // the same inputs whichever tests ran before in the process
  for (DType t : {kFloat32, kFloat64, kFloat16}) {
    INFO(dtype_name(t));
    for (int64_t len : {3001, 1024, 5000}) { // 5000: longer than a streaming row may be
      Tensor x = (randn({37, len}) * 3).to(t);
      x.eval();
      // Every element's exp goes through the same routine, the streamed row's head and the
      // cached loop's 16 lanes alike: even float16 results agree to the bit.
      same_either_way(x, [](const Tensor& v) { return F::softmax(v, 1); });
      same_either_way(x, [](const Tensor& v) { return F::log_softmax(v, 1); });
      same_either_way(x, [](const Tensor& v) { return F::layer_norm(v, {v.size(1)}); });
    }
  }
  StreamFrom always(1);
  // Rows shorter than a page do not stream.
  CHECK_THAT(ir::dump({F::softmax(rand({40, 100}), 1)}, "kernel"), !Catch::Contains(", stream"));
  // Rows at any offset: each row's elements before its 64-byte boundary go through the cache.
  Tensor x = randn({37, 3000});
  Tensor expect = F::softmax(x, 1);
  for (int64_t at : {1, 3, 16}) {
    Tensor out = full({37, 3020}, -1.0);
    out.narrow(1, at, 3000).copy_(F::softmax(x, 1));
    CHECK(allclose(out.narrow(1, at, 3000), expect));
    CHECK(equal(out.narrow(1, 0, at), full({37, at}, -1.0)));
  }
}

TEST_CASE("streamed rows are pipelined: row i's stores run in the loop of row i + 1",
          "[streaming]") {
  namespace F = nn::functional;
  {
    StreamFrom always(1);
    // Rows on 64-byte boundaries take the pipelined row loop ("rows"); the kernel keeps the
    // plain one for others.
    const std::string ir = ir::dump({F::softmax(randn({8, 1024}), 1)}, "llvm");
    CHECK_THAT(ir, Catch::Contains("rows.last:"));
    CHECK_THAT(ir, Catch::Contains("plain:"));
  }
  // Every number of rows a thread's chunk may hold (the first row's stores are written twice, the
  // last row's after the loop), against the plain rows.
  for (DType t : {kFloat32, kFloat64}) {
    INFO(dtype_name(t));
    const int64_t len = t == kFloat32 ? 1024 : 512;
    for (int64_t rows : {1, 2, 3, 5, 64}) {
      INFO(rows);
      Tensor x = (randn({rows, len}) * 3).to(t);
      x.eval();
      same_either_way(x, [](const Tensor& v) { return F::softmax(v, 1); });
      same_either_way(x, [](const Tensor& v) { return F::log_softmax(v, 1); });
      same_either_way(x, [](const Tensor& v) { return F::layer_norm(v, {v.size(1)}); });
    }
  }
  StreamFrom always(1);
  // Two row outputs of one kernel.
  Tensor x = randn({9, 1024});
  x.eval();
  Tensor s = F::softmax(x, 1), l = F::log_softmax(x, 1);
  tj::eval({s, l});
  CHECK(allclose(s, exp(l)));
  CHECK(allclose(l, x - x.logsumexp(1, true)));
  // The first iteration's stores divide by zero, a row -1's: that error is dropped, and a row's
  // own is raised.
  Tensor a = arange(5 * 1024, dtype(kInt32)).reshape({5, 1024}).remainder(997) + 1;
  Tensor q = floor_divide(a, a.amax(1, true)); // one kernel, whose stores divide
  q.eval();
  CHECK(equal(q, floor_divide(a.to(kFloat64), a.amax(1, true).to(kFloat64)).to(kInt32)));
  Tensor z = a * (arange(5).reshape({5, 1}) != 3).to(kInt32); // row 3: zeros
  CHECK_THROWS_WITH(floor_divide(z, z.amax(1, true)).eval(),
                    Catch::StartsWith("ZeroDivisionError"));
}

TEST_CASE("random row kernels compute the same with and without streaming", "[streaming]") {
  // Programs shaped like a softmax or a layer_norm: 1 to 3 stages, each a reduction along the row
  // of the values so far and an elementwise op mixing them with it. Rows that start on 64-byte
  // boundaries and rows that do not, 1 to 9 of them, written through the cache and around it:
  // equal bit for bit, except that a math function (kept for a later loop, or computed in the
  // store loop) may be computed by the scalar libm routine in one and by the vector one in the
  // other, where an element falls in a loop's remainder.
  std::mt19937_64 seeds(test::test_seed(20261126));
  for (int prog = 0; prog < 40; ++prog) {
    const uint64_t seed = seeds();
    std::mt19937_64 rng(seed);
    const DType t = rng() % 2 ? kFloat32 : kFloat64;
    const int64_t lens[] = {1024, 1040, 1030}; // rows of 4096, 4160 and 4120 bytes in float32
    const int64_t len = lens[rng() % 3] / (t == kFloat64 ? 2 : 1);
    const int64_t rows = 1 + int64_t(rng() % 9);
    INFO(fmt::format("program {} (seed {}): {} x {} {}", prog, seed, rows, len, dtype_name(t)));
    Tensor x = (randn({rows, len}) * 3).to(t);
    x.eval();
    bool math = false;
    auto [cached, streamed] = both_ways(x, [seed, &math](const Tensor& x0) {
      std::mt19937_64 r(seed + 1); // the same program both times
      Tensor v = x0;
      for (uint64_t stage = 0, n = 1 + r() % 3; stage < n; ++stage) {
        Tensor red;
        switch (r() % 4) {
        case 0:
          red = v.sum({1}, true);
          break;
        case 1:
          red = v.amax({1}, true);
          break;
        case 2:
          red = v.amin({1}, true);
          break;
        default:
          red = v.mean({1}, true);
        }
        switch (r() % 5) {
        case 0:
          v = v - red;
          break;
        case 1:
          v = v * red;
          break;
        case 2:
          v = v / (red.abs() + 1);
          break;
        case 3:
          v = exp(-(v - red).abs());
          math = true;
          break;
        default:
          v = tanh(v - red);
          math = true;
        }
      }
      return v;
    });
    INFO((math ? "with math functions" : "without math functions"));
    if (math) {
      const double tol = t == kFloat32 ? 1e-5 : 1e-12;
      CHECK(allclose(cached, streamed, tol, tol));
    } else {
      CHECK(equal(cached, streamed));
    }
  }
}

TEST_CASE("a reduction over size-1 dims is not an elementwise kernel", "[streaming]") {
  StreamFrom always(1);
  // Its size-1 reduced dim disappears from the loops, but the kernel still reduces.
  Tensor r = rand({5000, 1});
  r.eval();
  CHECK(equal(r.sum(1), r.reshape({5000})));
  CHECK(equal(r.amax(-1), r.reshape({5000})));
  CHECK(equal(r.mean({-1}, true), r));
}
