// Warnings as PyTorch's Python front end shows them: "UserWarning: ..." on stderr, once.
#pragma once
#include <atomic>
#include <cstdint>
#include <string_view>

namespace tj::core {

// A warning of one place in the code, shown the first time it is given (Python's default filter
// shows a warning once per place): `static core::WarnOnce warn; warn(message);`.
class WarnOnce {
public:
  void operator()(std::string_view message);

private:
  std::atomic<uint64_t> shown_in_{0}; // the generation it was last shown in
};

// Every WarnOnce warns again (a new generation), as Python's warnings.resetwarnings: for tests.
void reset_warnings();

} // namespace tj::core
