// Warnings as PyTorch's Python front end shows them: "UserWarning: ..." on stderr, once.
#pragma once
#include <atomic>
#include <string_view>

namespace tj::core {

// Prints "UserWarning: MESSAGE" the first time `shown` is passed (Python's default filter shows
// a warning once per place in the code): each place keeps its own flag.
void warn_once(std::atomic<bool>& shown, std::string_view message);

} // namespace tj::core
