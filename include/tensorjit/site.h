// Provenance: every graph node remembers where the user's program built it
// ("model.cpp:42 (softmax)"), shown by dumps, kernel listings and errors.
#pragma once
#include <cstdint>
#include <source_location>

namespace tj {

// The place in the user's source that called an API function. Every function
// that builds tensors from others or from values takes one as its last
// argument (those that wrap memory, from_blob and load_npy, do not),
// defaulted: `Caller where = {}` captures the line of the call (the default
// argument of the constructor is evaluated where the outer default is used).
// Pass one on to attribute a helper's tensors to its own caller:
//   Tensor block(const Tensor& x, tj::Caller where = {}) {
//     return tj::relu(x.matmul(w, where), where);
//   }
class Caller {
public:
  Caller(std::source_location where = std::source_location::current()) : where_(where) {}
  const std::source_location& location() const { return where_; }

private:
  std::source_location where_;
};

namespace detail {

// Makes the caller's place (named `what`) the site of the nodes built while it
// lives. API functions open one (`api`); it is ignored inside another API call,
// so a composite op keeps its caller's line, and for calls from the library's
// own sources (operators, printing, optimizers), which keep the enclosing site.
// ir::Scope opens a user's one, which always applies.
class CallSite {
public:
  CallSite(const Caller& where, const char* what, bool api = true);
  // Makes an already-made site current, as an API call's would be (a null one
  // leaves the current site): a backward node builds at its op's site.
  explicit CallSite(const char* site);
  ~CallSite();
  CallSite(const CallSite&) = delete;
  CallSite& operator=(const CallSite&) = delete;

private:
  const char* saved_;
  bool saved_api_;
};

} // namespace detail
} // namespace tj
