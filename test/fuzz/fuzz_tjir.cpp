// libFuzzer target: the .tjir parser, and the printer on what it accepts.
// Any input must give a graph or a tj::Error: never a crash, a hang or a
// sanitizer report; and what parses prints to text that parses to the same
// print. Built with -DTJ_FUZZ=ON by clang (scripts/fuzz.sh).
#include <tensorjit/error.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "lib/ir/text.h"

namespace {

// Inline data only: a fuzzed file must not open paths of this machine.
std::shared_ptr<tj::rt::Storage> no_files(const tj::ir::StorageDecl& d) {
  if (!d.file.empty()) throw tj::Error("files are not read while fuzzing");
  return nullptr;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tj::ir::ParsedGraph g;
  try {
    g = tj::ir::parse_graph(text, "fuzz.tjir", no_files);
  } catch (const tj::Error&) {
    return 0;
  }
  tj::ir::PrintOptions all_inline;
  all_inline.inline_limit = std::numeric_limits<int64_t>::max();
  all_inline.output_names = g.output_names;
  std::string printed = tj::ir::print_graph(g.outputs, all_inline);
  tj::ir::ParsedGraph again = tj::ir::parse_graph(printed, "printed.tjir", no_files);
  if (tj::ir::print_graph(again.outputs, all_inline) != printed) __builtin_trap();
  return 0;
}
