// The persistent kernel cache: a second process loads every kernel from disk, and damaged
// entries are rejected and rebuilt. The processes are this test binary, run again.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <stdlib.h>
#include <tensorjit/tensorjit.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "test/support/temp_dir.h"

using namespace tj;
namespace fs = std::filesystem;

namespace {

// A workload of several kernels: elementwise, reductions, a softmax.
void workload() {
  manual_seed(1);
  Tensor x = rand({64, 100});
  Tensor y = nn::functional::softmax(x * 3 - 1, 1).sum({0}) + x.amax({0}) * x.mean({0});
  CHECK(y.sizes() == Shape{100});
  CHECK(std::isfinite(y.sum().item<double>()));
}

// Runs the hidden child test in a new process with `dir` as its cache; returns its exit status.
int run_child(const fs::path& dir, const char* expect) {
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string cmd =
      fmt::format("TJ_CACHE_DIR='{}' TJ_EXPECT={} '{}' '[.disk_cache_child]' -w NoTests "
                  ">/dev/null 2>&1",
                  dir.string(), expect, self);
  return std::system(cmd.c_str());
}

} // namespace

// Run only by the test below, in a child process: compiles or loads, as TJ_EXPECT says.
TEST_CASE("child process of the persistent cache test", "[.disk_cache_child]") {
  const char* expect = std::getenv("TJ_EXPECT");
  if (!expect) {
    WARN("run only as a child of the persistent cache test (TJ_EXPECT unset)");
    return;
  }
  reset_stats();
  workload();
  Stats s = stats();
  if (std::string(expect) == "compile") {
    CHECK(s.kernels_compiled > 0);
    CHECK(s.disk_cache_hits == 0);
  } else {
    CHECK(s.kernels_compiled == 0);
    CHECK(s.disk_cache_hits > 0);
  }
}

TEST_CASE("disk cache: a second process compiles nothing; damaged entries are rebuilt", "[cache]") {
  tj::test::TempDir scratch("tj-cache");
  const fs::path& dir = scratch.path;
  CHECK(run_child(dir, "compile") == 0);
  REQUIRE(fs::exists(dir / "cpu"));
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir / "cpu"))
    entries += e.path().extension() == ".bin";
  CHECK(entries > 2);
  CHECK(run_child(dir, "hit") == 0);
  // Damage every entry: flip a byte of each object, truncate one, replace one with junk.
  int i = 0;
  for (const auto& e : fs::directory_iterator(dir / "cpu")) {
    if (i == 0) {
      fs::resize_file(e.path(), 40);
    } else if (i == 1) {
      std::ofstream(e.path(), std::ios::trunc) << "not a cache entry";
    } else {
      std::fstream io(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(-17, std::ios::end);
      io.put('\x5a');
    }
    ++i;
  }
  CHECK(run_child(dir, "compile") == 0); // nothing damaged is loaded; everything is rebuilt
  CHECK(run_child(dir, "hit") == 0);     // and stored again
}
