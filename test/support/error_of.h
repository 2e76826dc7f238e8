// The message of the tj::Error a callable raises, or "(no error)".
#pragma once
#include <tensorjit/error.h>

#include <functional>
#include <string>

namespace tj::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace tj::test
