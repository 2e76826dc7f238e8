// The worker pool behind parallel_for: every index runs exactly once, back to back and after the
// workers have gone to sleep, and a task's exception reaches the caller.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/thread_pool.h"
#include "tensorjit/config.h"

namespace {

// Runs parallel_for over [0, n) and checks that each index was visited once.
void check_covers(int64_t n, int64_t grain, int64_t align) {
  std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
  tj::rt::parallel_for(n, grain, align, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      seen[static_cast<size_t>(i)].fetch_add(1);
  });
  int64_t wrong = 0;
  for (auto& s : seen)
    wrong += s.load() != 1;
  REQUIRE(wrong == 0);
}

} // namespace

TEST_CASE("parallel_for visits every index once, launch after launch", "[thread_pool]") {
  // Back to back, so that the workers are still polling for the next job when it comes.
  for (int rep = 0; rep < 2000; ++rep)
    check_covers(1 + rep % 97 * 41, 1 + rep % 7, 1 + rep % 3);
}

TEST_CASE("parallel_for wakes workers that went to sleep", "[thread_pool]") {
  for (int rep = 0; rep < 5; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2)); // past the workers' polling
    check_covers(4096, 16, 1);
  }
  // With no polling at all (TJ_SPIN_US=0), every launch wakes the workers.
  const int spin = tj::config().spin_us;
  tj::config().spin_us = 0;
  for (int rep = 0; rep < 200; ++rep)
    check_covers(4096, 16, 1);
  tj::config().spin_us = spin;
}

TEST_CASE("parallel_for passes a task's exception to the caller", "[thread_pool]") {
  for (int rep = 0; rep < 200; ++rep) {
    const int64_t bad = rep % 64;
    REQUIRE_THROWS_WITH(tj::rt::parallel_for(64, 1, 1,
                                             [&](int64_t b, int64_t e) {
                                               if (b <= bad && bad < e)
                                                 throw std::runtime_error("task failed");
                                             }),
                        "task failed");
    check_covers(1000, 8, 1); // the pool still works
  }
}
