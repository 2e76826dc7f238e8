// Warnings on stderr, as PyTorch's Python front end shows them.
#include "lib/core/warning.h"

#include <fmt/format.h>

namespace tj::core {

void warn_once(std::atomic<bool>& shown, std::string_view message) {
  if (!shown.exchange(true)) fmt::print(stderr, "UserWarning: {}\n", message);
}

} // namespace tj::core
