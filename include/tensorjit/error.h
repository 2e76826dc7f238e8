// tj::Error, the one exception type for user errors.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace tj {

// Thrown for every user error. Messages follow PyTorch's wording where
// PyTorch has one, so that users can search for them.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// The message of an error in source text: "FILE:LINE:COL: error: MESSAGE",
// then the line and a caret under column COL (LINE and COL count from 1).
std::string located_message(std::string_view file, std::string_view text, int line, int col,
                            std::string_view message);

} // namespace tj
