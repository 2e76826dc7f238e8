// The IR made visible: every stage of a computation as text, and the tensor
// graph's text form (.tjir), which parses back. docs/ir.md documents both.
#pragma once
#include <map>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "tensorjit/site.h"
#include "tensorjit/tensor.h"

namespace tj::ir {

// Names the nodes built while it lives after a region of the user's program
// (`tj::ir::Scope scope("attention");`), with the line it was opened at.
// Dumps, kernel listings and errors raised when computing them show it.
class Scope {
public:
  explicit Scope(const char* name, Caller where = {}) : site_(where, name, false) {}

private:
  detail::CallSite site_;
};

// The text of one stage of computing `tensors`, computing nothing:
//   "graph"       the tensor graph as built (.tjir)
//   "simplified"  after constant folding and algebraic identities (.tjir)
//   "grad"        the graph with the gradients of the first tensor (summed
//                 when it is not a scalar) w.r.t. every leaf that requires grad
//   "schedule"    which nodes each kernel computes, and why a boundary was placed
//   "kernel"      each kernel's kernel IR
//   "llvm", "asm" the optimized LLVM IR and the host assembly of each CPU kernel
//   "cuda", "ptx" the CUDA source and NVRTC's PTX of each kernel
//   "dot"         Graphviz of the graph, one cluster per kernel
// The graph stages name the outputs `output_names` when given. Throws
// tj::Error naming the stages for an unknown one.
std::string dump(const std::vector<Tensor>& tensors, std::string_view stage,
                 const std::vector<std::string>& output_names = {});

// The stage names dump() knows, in pipeline order.
const std::vector<std::string>& stages();

// A graph read from .tjir text: its outputs (named `output NAME = %N`, or
// "out0", "out1", ...) and its named storages.
struct Graph {
  std::vector<std::string> output_names;
  std::vector<Tensor> outputs;
  // Each declared storage as a 1-d tensor of its elements, by name.
  std::map<std::string, Tensor> storages;
};

struct LoadOptions {
  // Data for the storages of these names (a storage declared without data
  // must be given here); other dtypes are converted.
  std::map<std::string, Tensor> inputs;
  // Puts every storage and leaf on this device instead of the one written.
  std::optional<Device> device;
};

struct SaveOptions {
  std::vector<std::string> output_names; // default out0, out1, ...
  // Tensors whose storage is named: `tjc --run --input NAME=FILE.npy` replaces it.
  std::vector<std::pair<std::string, Tensor>> inputs;
  // Storages of at most this many elements are written inline; larger ones
  // go to .npy files beside the .tjir file (PATH without .tjir, then .NAME.npy).
  int64_t inline_limit = 64;
};

// The .tjir text of the graph of `tensors` (the "graph" stage of dump).
std::string print(const std::vector<Tensor>& tensors, const SaveOptions& options = {});

// Writes the .tjir form of `tensors`' graph to `path` (and the .npy files of
// its large storages). load() of it gives tensors with the same graph.
void save(const std::vector<Tensor>& tensors, const std::string& path,
          const SaveOptions& options = {});

// Reads a .tjir file. Errors name the file, line and column, with the line
// and a caret under the spot.
Graph load_graph(const std::string& path, const LoadOptions& options = {});
std::vector<Tensor> load(const std::string& path);

// .tjir text from memory; `filename` names it in errors, relative .npy
// paths are found in `directory`.
Graph parse(std::string_view text, std::string_view filename = "<string>",
            const std::string& directory = ".", const LoadOptions& options = {});

// `g` with the gradient of its output `output` (summed when not a scalar)
// with respect to each storage in `wrt` added as the output "grad_NAME":
// the graph is rebuilt through the differentiable ops.
Graph differentiate(const Graph& g, const std::string& output, const std::vector<std::string>& wrt);

} // namespace tj::ir
