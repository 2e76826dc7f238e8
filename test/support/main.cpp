// The Catch2 main of the test executable.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // Tests count compiles: unless TJ_CACHE_DIR names a cache (as the disk cache test does for
  // its child processes), kernels from earlier runs in the user's cache must not answer.
  if (!std::getenv("TJ_CACHE_DIR")) tj::config().cache_dir.clear();
  // Every graph the tests materialize is checked against its ops' rules, as built and after
  // each pass (TJ_VERIFY=0 turns it off, to time the suite without it).
  const char* verify = std::getenv("TJ_VERIFY");
  tj::config().verify = !verify || std::atoi(verify) != 0;
  return Catch::Session().run(argc, argv);
}
