// The tensor graph's text form (.tjir, docs/ir.md): a printer, and a parser
// that checks every node as strictly as the frontend builds them, so that a
// parsed graph can be scheduled and run like one built through the API. The printer is
// text_print.cpp; the parser and the verifier built on it, text_parse.cpp.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/ir/node.h"

namespace tj::ir {

struct PrintOptions {
  std::vector<std::string> output_names; // "output NAME = %N"; default unnamed
  // A storage's name (default s0, s1, ... in order of appearance).
  std::function<std::string(const rt::Storage&)> storage_name;
  // Storages of at most this many elements are written inline.
  int64_t inline_limit = 64;
  // Called for a larger storage (as a contiguous 1-d host Buffer node of its
  // elements): returns the file to reference, or "" to declare it without
  // data (an input to be supplied when the graph is loaded).
  std::function<std::string(const std::string& name, const NodePtr& data)> external;
  // A comment for a node's line ("" for none).
  std::function<std::string(const Node&)> annotate;
};

// The nodes below `roots` (realized nodes as their buffers), each once, in an
// order where every node comes after its inputs.
std::vector<NodePtr> topological_order(const std::vector<NodePtr>& roots);

std::string print_graph(const std::vector<NodePtr>& roots, const PrintOptions& options = {});

// A storage declaration as read, for the caller to supply its memory.
struct StorageDecl {
  std::string name;
  DType dtype;
  int64_t numel;
  Device device;
  bool has_inline = false;
  std::vector<Scalar> values; // inline data
  std::string file;           // or a file reference; neither: an input
};

struct ParsedGraph {
  std::vector<std::string> output_names;
  std::vector<NodePtr> outputs;
  std::vector<std::pair<std::string, NodePtr>> storages; // each as a 1-d Buffer
};

// Parses .tjir text. `storage_for` gives the memory of a declaration that
// has no inline data (or that the caller overrides; return null to use the
// inline data); its tj::Error messages are located at the declaration.
// Errors throw tj::Error with located_message(filename, ...).
// `device` replaces the device of every storage and leaf.
ParsedGraph
parse_graph(std::string_view text, std::string_view filename,
            const std::function<std::shared_ptr<rt::Storage>(const StorageDecl&)>& storage_for,
            std::optional<Device> device = std::nullopt);

// Checks every node below `roots` against its op's rules, the parser's: the graph is printed
// and parsed back over the same memory. Throws an internal tj::Error naming `stage` (the pass
// that made the graph), the node's line and the rule it breaks. Materialization runs it on the
// graph the frontend built and after each pass when config().verify is set (debug builds and
// the tests).
void verify(const std::vector<NodePtr>& roots, std::string_view stage);

} // namespace tj::ir
