// Warnings on stderr, as PyTorch's Python front end shows them.
#include "lib/core/warning.h"

#include <fmt/format.h>

namespace tj::core {
namespace {
std::atomic<uint64_t> generation{1};
}

void WarnOnce::operator()(std::string_view message) {
  const uint64_t now = generation.load(std::memory_order_relaxed);
  if (shown_in_.exchange(now) != now) fmt::print(stderr, "UserWarning: {}\n", message);
}

void reset_warnings() { generation.fetch_add(1); }

} // namespace tj::core
