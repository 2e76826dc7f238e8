// The expression language of `tjc -e`: a small, Python-like subset of
// PyTorch programs, run through the public API. docs/tjc.md gives its grammar.
#pragma once
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <tensorjit/tensorjit.h>

namespace tj::tjc {

struct ExprResult {
  // What the program printed: print(...) calls, and (with echo) the repr of
  // each expression statement's value, as Python's REPL shows it.
  std::string printed;
  // The value of the last statement when it is a tensor or a tuple/list of
  // tensors; its name is the variable's for `x = ...` or a bare `x`, else
  // "out" ("out0", "out1", ... for several).
  std::vector<std::string> names;
  std::vector<Tensor> tensors;
};

// Runs `source`. With `echo` false, expression statements are evaluated but
// not shown (so that their graphs stay lazy for --emit). Errors throw
// tj::Error with located_message(filename, source, line, col, ...): an
// unknown name, a wrong argument, a syntax error, and the library's own
// errors raised by a call (located at that call). With `live`, what the
// program prints goes there statement by statement instead of into
// `printed`, so that the output before an error is shown, as Python does.
ExprResult run_expr(std::string_view source, bool echo, std::string_view filename = "<expr>",
                    std::ostream* live = nullptr);

} // namespace tj::tjc
