// The Catch2 main of the test executable.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // Tests count compiles: unless TJ_CACHE_DIR names a cache (as the disk cache test does for
  // its child processes), kernels from earlier runs in the user's cache must not answer.
  if (!std::getenv("TJ_CACHE_DIR")) tj::config().cache_dir.clear();
  return Catch::Session().run(argc, argv);
}
