// libFuzzer target: the .tjir parser, and the printer on what it accepts.
// Any input must give a graph or a tj::Error: never a crash, a hang or a
// sanitizer report. Built with -DTJ_FUZZ=ON by clang (scripts/fuzz.sh).
#include <tensorjit/tensorjit.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    tj::ir::Graph g = tj::ir::parse(text, "fuzz.tjir");
    // What parses prints, and the print parses to the same text.
    std::string printed = tj::ir::print(g.outputs);
    tj::ir::Graph again = tj::ir::parse(printed, "printed.tjir");
    if (tj::ir::print(again.outputs) != printed) __builtin_trap();
  } catch (const tj::Error&) {
  }
  return 0;
}
