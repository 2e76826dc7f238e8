// tj::Error, the one exception type for user errors.
#pragma once
#include <stdexcept>
#include <string>

namespace tj {

// Thrown for every user error. Messages follow PyTorch's wording where
// PyTorch has one, so that users can search for them.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

} // namespace tj
