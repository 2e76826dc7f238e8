// The seed of the randomized tests. A fixed default keeps every run (CI's included) the same;
// TJ_TEST_SEED=<n> replays or explores another seed, TJ_TEST_SEED=random draws a fresh one.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>

namespace tj::test {

inline uint64_t test_seed(uint64_t fallback) {
  const char* env = std::getenv("TJ_TEST_SEED");
  if (!env || !*env) return fallback;
  if (std::strcmp(env, "random") == 0) return std::random_device{}();
  return std::strtoull(env, nullptr, 0);
}

} // namespace tj::test
