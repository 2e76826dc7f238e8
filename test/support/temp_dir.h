// A fresh scratch directory for a test, removed with everything in it at scope exit.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace tj::test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "tj-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // The path of `name` inside the directory.
  std::string file(const std::string& name) const { return (path / name).string(); }
};

} // namespace tj::test
