// Work split by the thread count (config().num_threads, TJ_NUM_THREADS): how many pieces each
// kind of CPU launch makes (tj::stats().parallel_chunks), that no result changes with the thread
// count, and that more threads than cores neither deadlock, nor change anything, nor poll.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include "runtime/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace tj;

namespace {

// Sets config().num_threads for a scope.
struct Threads {
  explicit Threads(int n) : old(config().num_threads) { config().num_threads = n; }
  ~Threads() { config().num_threads = old; }
  int old;
};

// The chunks that materializing `make()` splits its work into, with `threads` threads (the
// inputs are materialized before counting).
int64_t chunks(int threads, const std::function<Tensor()>& make) {
  Threads t(threads);
  Tensor y = make();
  reset_stats();
  y.eval();
  return stats().parallel_chunks;
}

} // namespace

TEST_CASE("launches split into chunks by the thread count", "[threads]") {
  Tensor x = rand({1 << 20}), big = rand({1 << 24}), m = randn({512, 512});
  Tensor wide = rand({64, 8192}), tall = rand({8192, 1024}), slabs = rand({64, 4096, 16});
  eval({x, big, m, wide, tall, slabs});
  for (int threads : {1, 2, 5, 16, 64}) {
    INFO(threads << " threads");
    // Elementwise: at most a chunk per thread, none under kGrain (32768) elements: 2^20 elements
    // make at most 32.
    CHECK(chunks(threads, [&] { return x * 2 + 1; }) == std::min(threads, 32));
    // A whole-tensor sum: 256 partial sums split over the threads, then their sum inline.
    CHECK(chunks(threads, [&] { return big.sum(); }) == (threads == 1 ? 2 : threads + 1));
    // Rows of a softmax: a chunk per thread, none under kGrain elements' work: 512 rows of 512
    // make at most 8.
    CHECK(chunks(threads, [&] { return nn::functional::softmax(m, 1); }) == std::min(threads, 8));
    // Down columns, each chunk takes whole 4 KiB pages of every row: 8192 columns of float32 make
    // at most 8 (5 threads: 4 of 2 pages), and 1024 columns one.
    const int64_t pages = (8192 / std::min(threads, 8) + 1023) / 1024 * 1024;
    CHECK(chunks(threads, [&] { return wide.sum({0}); }) == (8192 + pages - 1) / pages);
    CHECK(chunks(threads, [&] { return tall.cumsum(0); }) == 1);
    // Runs shorter than a page that share none: 64 slabs' columns of 16, at most 64 chunks.
    CHECK(chunks(threads, [&] { return slabs.sum({1}); }) == std::min(threads, 64));
    // A GEMM: a grid of blocks, one per thread at most, at least half the threads busy; on one
    // thread it runs on the caller, no parallel loop.
    const int64_t gemm = chunks(threads, [&] { return matmul(m, m.t()); });
    CHECK(gemm <= (threads == 1 ? 0 : threads));
    CHECK(gemm >= threads / 2);
  }
}

TEST_CASE("results do not change with the thread count", "[threads]") {
  manual_seed(33);
  Tensor x = randn({1 << 18}), m = randn({300, 700}), w = randn({90, 700});
  Tensor ids = randint(0, 300, {1000}), rows = randn({1000, 700});
  eval({x, m, w, ids, rows});
  auto everything = [&] {
    std::vector<Tensor> out{x.sum(),
                            (x * x).mean(),
                            nn::functional::softmax(m, 1),
                            nn::functional::layer_norm(m, {700}),
                            m.cumsum(1),
                            m.cumsum(0),
                            matmul(m, w.t()),
                            m.t() * 2 + 1};
    // Rows added at the rows their indices name (an embedding's gradient: a scatter).
    Tensor table = m.detach().requires_grad_();
    (index_select(table, 0, ids) * rows).sum().backward();
    out.push_back(table.grad());
    eval(out);
    // Scans along rows in kernels of their own (beside the softmax, they would join its row
    // loops): rows side by side through vector exp and log1p, whichever rows a thread's calls
    // begin at; along the middle dim of a 3-d tensor.
    std::vector<Tensor> scans{(m / 4).logcumsumexp(1), m.exp().cumsum(1),
                              (m / 4).reshape({3, 100, 700}).transpose(1, 2).logcumsumexp(2)};
    eval(scans);
    out.insert(out.end(), scans.begin(), scans.end());
    std::vector<std::vector<float>> values;
    for (const Tensor& t : out)
      values.push_back(t.to_vector<float>());
    return values;
  };
  std::vector<std::vector<float>> one;
  {
    Threads t(1);
    one = everything();
  }
  // More threads than this machine has cores (the pool's workers take the chunks in turn).
  for (int threads : {2, 3, 16, 64}) {
    INFO(threads << " threads");
    Threads t(threads);
    const auto many = everything();
    for (size_t i = 0; i < one.size(); ++i) {
      INFO("result " << i);
      CHECK(many[i] == one[i]);
    }
  }
}

TEST_CASE("threads that outnumber the cores sleep instead of polling", "[threads]") {
  Tensor x = rand({1 << 20});
  x.eval();
  const int old_spin = config().spin_us;
  auto polls = [&](int threads, int spin_us) {
    Threads t(threads);
    config().spin_us = spin_us;
    // A launch with these settings first, then a pause: a worker's poll after an earlier
    // launch (which may begin late on a loaded machine) is not counted.
    (x * 2).eval();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    reset_stats();
    for (int i = 0; i < 20; ++i)
      (x * float(i)).eval(); // 2^20 elements: a chunk per thread (up to 32), in parallel
    config().spin_us = old_spin;
    return stats().pool_polls;
  };
  const int cores = rt::cores();
  // More threads than cores: a polling thread would hold a core that another needs for its
  // chunk, so none polls, the caller included; every launch still completes.
  CHECK(polls(cores + 1, 200) == 0);
  if (cores < 64) CHECK(polls(64, 200) == 0);
  // As many threads as cores: the caller polls for the workers' end, and idle workers for the
  // next launch; with spin_us 0, nobody does.
  if (cores >= 2) {
    CHECK(polls(cores, 200) > 0);
    CHECK(polls(cores, 0) == 0);
  }
}
