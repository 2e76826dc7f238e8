// Seeded random property test of storage semantics: random view ops, in-place
// writes through random aliases, pending values and reads, checked against an
// eager model of storage + sizes/strides/offset (what PyTorch does).
//
// The seed is printed on failure; TJ_TEST_SEED (test/support/seed.h) picks another.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

#include "lib/ir/shape.h"
#include "tensorjit/tensorjit.h"
#include "test/support/seed.h"

namespace {

using namespace tj;

struct ModelView {
  size_t base;
  Shape sizes;
  std::vector<int64_t> strides;
  int64_t offset;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    return n;
  }
  // Storage positions of the elements, row-major.
  std::vector<int64_t> positions() const {
    std::vector<int64_t> out;
    std::vector<int64_t> idx(sizes.size(), 0);
    for (int64_t k = 0; k < numel(); ++k) {
      int64_t p = offset;
      for (size_t d = 0; d < sizes.size(); ++d)
        p += idx[d] * strides[d];
      out.push_back(p);
      for (size_t d = sizes.size(); d-- > 0;) {
        if (++idx[d] < sizes[d]) break;
        idx[d] = 0;
      }
    }
    return out;
  }
};

// PyTorch's is_non_overlapping_and_dense.
bool dense(const ModelView& m) {
  std::vector<size_t> dims;
  for (size_t d = 0; d < m.sizes.size(); ++d)
    if (m.sizes[d] != 1) dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](size_t x, size_t y) { return m.strides[x] < m.strides[y]; });
  int64_t expect = 1;
  for (size_t d : dims) {
    if (m.strides[d] != expect) return false;
    expect *= m.sizes[d];
  }
  return true;
}

// PyTorch's MemOverlapStatus::PARTIAL for two different tensors: both dense, in one storage,
// their memory ranges overlapping but not the same elements in the same order.
bool partial_overlap(const ModelView& a, const ModelView& b) {
  if (a.base != b.base || a.numel() == 0 || b.numel() == 0 || !dense(a) || !dense(b)) return false;
  const int64_t a_end = a.offset + a.numel(), b_end = b.offset + b.numel();
  if (a.offset == b.offset && a_end == b_end) return a.strides != b.strides;
  return a.offset < b_end && b.offset < a_end;
}

struct Alias {
  Tensor t;
  ModelView m;
};

struct Pending {
  Tensor t;
  std::vector<double> expected;
};

class Program {
public:
  explicit Program(uint64_t seed) : rng_(seed) {}

  void run(int steps) {
    for (int b = 0; b < 2; ++b)
      add_base();
    for (int s = 0; s < steps; ++s) {
      int op = pick(0, 99);
      if (op < 30)
        add_view();
      else if (op < 65)
        write();
      else if (op < 80)
        check(aliases_[pick_alias()]);
      else if (op < 90)
        keep_pending();
      else if (op < 95) {
        size_t i = pick_alias();
        trace("eval alias{}", i);
        aliases_[i].t.eval();
      } else if (op < 97) {
        size_t i = pick_alias();
        trace("numpy alias{}", i);
        (void)aliases_[i].t.numpy(); // pins: later writes are eager
      } else {
        add_base();
      }
    }
    for (const auto& a : aliases_)
      check(a);
    for (const auto& p : pending_)
      CHECK(p.t.to_vector<double>() == p.expected);
  }

private:
  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  size_t pick_alias() {
    return static_cast<size_t>(pick(0, static_cast<int64_t>(aliases_.size()) - 1));
  }

  void add_base() {
    Shape sizes;
    int nd = static_cast<int>(pick(1, 3));
    for (int d = 0; d < nd; ++d)
      sizes.push_back(pick(1, 5));
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v)
      x = static_cast<double>(pick(-9, 9));
    // Some bases start lazy (computed), some as memory.
    Tensor t = tensor(v, {n}, kFloat64).view(sizes);
    if (pick(0, 1)) t = t * 1 + 0 * t;
    if (pick(0, 1)) t.eval();
    storage_.push_back(v);
    trace("alias{} = base{} [{}] {}", aliases_.size(), storage_.size() - 1, fmt::join(sizes, ","),
          t.is_realized() ? "memory" : "lazy");
    ModelView m{storage_.size() - 1, sizes, ir::contiguous_strides(sizes), 0};
    aliases_.push_back({t, m});
  }

  void add_view() {
    const Alias& a = aliases_[pick_alias()];
    ModelView m = a.m;
    int64_t nd = static_cast<int64_t>(m.sizes.size());
    Tensor t;
    switch (pick(0, 6)) {
    case 0: { // transpose
      if (nd < 2) return;
      int64_t d0 = pick(0, nd - 1), d1 = pick(0, nd - 1);
      t = a.t.transpose(d0, d1);
      std::swap(m.sizes[d0], m.sizes[d1]);
      std::swap(m.strides[d0], m.strides[d1]);
      break;
    }
    case 1: { // select
      if (nd < 2) return;
      int64_t d = pick(0, nd - 1);
      if (m.sizes[d] == 0) return;
      int64_t i = pick(0, m.sizes[d] - 1);
      t = a.t.select(d, i);
      m.offset += i * m.strides[d];
      m.sizes.erase(m.sizes.begin() + d);
      m.strides.erase(m.strides.begin() + d);
      break;
    }
    case 2: { // slice with a step
      int64_t d = pick(0, nd - 1);
      int64_t n = m.sizes[d];
      int64_t start = pick(0, n), stop = pick(start, n), step = pick(1, 3);
      std::vector<indexing::TensorIndex> ix(static_cast<size_t>(d), indexing::Slice());
      ix.emplace_back(indexing::Slice(start, stop, step));
      t = a.t.index(ix);
      m.offset += start * m.strides[d];
      m.sizes[d] = (stop - start + step - 1) / step;
      m.strides[d] *= step;
      break;
    }
    case 3: { // unsqueeze
      int64_t d = pick(0, nd);
      t = a.t.unsqueeze(d);
      int64_t st = d >= nd ? 1 : m.sizes[d] * m.strides[d];
      m.sizes.insert(m.sizes.begin() + d, 1);
      m.strides.insert(m.strides.begin() + d, st);
      break;
    }
    case 4: {                   // flatten, when the strides allow a view
      std::vector<int64_t> big; // dims of size > 1 must chain contiguously
      for (int64_t d = 0; d < nd; ++d)
        if (m.sizes[d] != 1) big.push_back(d);
      bool ok = true;
      for (size_t k = 0; k + 1 < big.size(); ++k)
        ok &= m.strides[big[k]] == m.strides[big[k + 1]] * m.sizes[big[k + 1]];
      if (!ok || nd < 2 || m.numel() == 0) return;
      t = a.t.view({-1});
      // The innermost stride of a dim of size > 1; with none, the last stride (PyTorch's
      // computeStride starts its chunk there).
      int64_t inner = m.strides.back();
      for (int64_t d = nd; d-- > 0;)
        if (m.sizes[d] != 1) {
          inner = m.strides[d];
          break;
        }
      m.sizes = {m.numel()};
      m.strides = {inner};
      break;
    }
    case 5: { // diagonal
      if (nd < 2) return;
      int64_t off = pick(-1, 1);
      t = a.t.diagonal(off, 0, 1);
      int64_t len = off >= 0 ? std::min(m.sizes[0], m.sizes[1] - off)
                             : std::min(m.sizes[0] + off, m.sizes[1]);
      len = std::max<int64_t>(len, 0);
      int64_t o = m.offset;
      if (len > 0) o += off >= 0 ? off * m.strides[1] : -off * m.strides[0];
      ModelView v{m.base, {}, {}, o};
      for (int64_t d = 2; d < nd; ++d) {
        v.sizes.push_back(m.sizes[d]);
        v.strides.push_back(m.strides[d]);
      }
      v.sizes.push_back(len);
      v.strides.push_back(m.strides[0] + m.strides[1]);
      m = v;
      break;
    }
    default: { // narrow
      int64_t d = pick(0, nd - 1);
      int64_t start = pick(0, m.sizes[d]), len = pick(0, m.sizes[d] - start);
      t = a.t.narrow(d, start, len);
      m.offset += start * m.strides[d];
      m.sizes[d] = len;
      break;
    }
    }
    trace("alias{} = view of alias{}: sizes [{}] strides [{}] offset {}", aliases_.size(),
          &a - &aliases_[0], fmt::join(m.sizes, ","), fmt::join(m.strides, ","), m.offset);
    REQUIRE(t.sizes() == m.sizes);
    for (size_t d = 0; d < m.sizes.size(); ++d) // a size-1 dim's stride is free
      if (m.sizes[d] != 1) REQUIRE(t.stride()[d] == m.strides[d]);
    REQUIRE(t.storage_offset() == m.offset);
    aliases_.push_back({t, m});
  }

  void write() {
    Alias& a = aliases_[pick_alias()];
    std::vector<int64_t> pos = a.m.positions();
    std::vector<double>& s = storage_[a.m.base];
    int op = static_cast<int>(pick(0, 3));
    double v = static_cast<double>(pick(-5, 5));
    std::vector<double> next(pos.size());
    if (op == 3) { // copy_ from another alias of the same shape, read before the write
      Alias& src = aliases_[pick_alias()];
      if (src.m.sizes != a.m.sizes) return;
      if (&src != &a && partial_overlap(a.m, src.m)) { // PyTorch's error; nothing written
        trace("copy from alias{}: partial overlap", &src - &aliases_[0]);
        CHECK_THROWS_WITH(a.t.copy_(src.t), Catch::Contains("refer to a single memory location"));
        return;
      }
      std::vector<int64_t> sp = src.m.positions();
      for (size_t i = 0; i < pos.size(); ++i)
        next[i] = storage_[src.m.base][sp[i]];
      trace("copy from alias{}:", &src - &aliases_[0]);
      a.t.copy_(src.t);
    } else {
      for (size_t i = 0; i < pos.size(); ++i)
        next[i] = op == 0 ? v : op == 1 ? s[pos[i]] + v : s[pos[i]] * 2;
      if (op == 0) a.t.fill_(v);
      if (op == 1) a.t.add_(v);
      if (op == 2) a.t.mul_(2);
    }
    for (size_t i = 0; i < pos.size(); ++i)
      s[pos[i]] = next[i];
    trace("write op {} value {} into alias{}", op, v, &a - &aliases_[0]);
  }

  void keep_pending() {
    const Alias& a = aliases_[pick_alias()];
    std::vector<double> e;
    for (int64_t p : a.m.positions())
      e.push_back(storage_[a.m.base][p] * 3 - 1);
    pending_.push_back({a.t * 3 - 1, e});
    trace("pending{} from alias{}", pending_.size() - 1, &a - &aliases_[0]);
  }

  template <typename... A> void trace(fmt::format_string<A...> f, A&&... args) {
    if (std::getenv("TJ_TRACE")) fmt::print("{}\n", fmt::format(f, std::forward<A>(args)...));
  }

  void check(const Alias& a) {
    trace("check alias{}", &a - &aliases_[0]);
    std::vector<double> e;
    for (int64_t p : a.m.positions())
      e.push_back(storage_[a.m.base][p]);
    std::vector<double> got = a.t.to_vector<double>();
    if (got != e) trace("  MISMATCH got [{}] want [{}]", fmt::join(got, ","), fmt::join(e, ","));
    CHECK(got == e);
  }

  std::mt19937_64 rng_;
  std::vector<std::vector<double>> storage_;
  std::vector<Alias> aliases_;
  std::vector<Pending> pending_;
};

} // namespace

TEST_CASE("random views, aliased writes and reads match an eager model of storage",
          "[views][property]") {
  uint64_t seed = tj::test::test_seed(4181526832);
  INFO("seed (TJ_TEST_SEED): " << seed);
  std::mt19937_64 seeds(seed);
  for (int program = 0; program < 60; ++program) {
    INFO("program " << program);
    Program p(seeds());
    p.run(40);
  }
}
