// Provenance: every graph node remembers where the user's program built it
// ("model.cpp:42 (softmax)"), shown by dumps, kernel listings and errors.
#pragma once
#include <cstdint>
#include <source_location>

namespace tj::detail {

// Makes `where` (named `what`) the site of the nodes built while it lives.
// API functions take a defaulted std::source_location and open one of these
// (`api`): one opened inside another API call is ignored, so a composite op
// keeps its caller's line. ir::Scope opens a user's one, which always applies.
class CallSite {
public:
  CallSite(const std::source_location& where, const char* what, bool api = true);
  ~CallSite();
  CallSite(const CallSite&) = delete;
  CallSite& operator=(const CallSite&) = delete;

private:
  const char* saved_;
  bool saved_api_;
};

} // namespace tj::detail
