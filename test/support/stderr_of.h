// What a callable prints on stderr (warnings go through C stdio).
#pragma once
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

namespace tj::test {

// The descriptor is pointed at a temporary file while `f` runs.
inline std::string stderr_of(const std::function<void()>& f) {
  std::fflush(stderr);
  FILE* tmp = std::tmpfile();
  const int saved = dup(fileno(stderr));
  dup2(fileno(tmp), fileno(stderr));
  f();
  std::fflush(stderr);
  dup2(saved, fileno(stderr));
  close(saved);
  std::rewind(tmp);
  std::string out;
  for (int c; (c = std::fgetc(tmp)) != EOF;)
    out += static_cast<char>(c);
  std::fclose(tmp);
  return out;
}

} // namespace tj::test
