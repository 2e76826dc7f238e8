// tj::ir::dump, print, save and load: every stage of a computation as text.
#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "codegen/cuda/cuda_source.h"
#include "codegen/cuda/nvrtc_compile.h"
#include "codegen/llvm/llvm_codegen.h"
#include "lib/autograd/node.h"
#include "lib/frontend/tensor_impl.h"
#include "lib/ir/routine.h"
#include "lib/ir/text.h"
#include "lib/passes/simplify.h"
#include "lib/pipeline/materialize.h"
#include "tensorjit/autograd.h"
#include "tensorjit/config.h"
#include "tensorjit/functions.h"
#include "tensorjit/ir.h"

namespace tj::ir {
namespace {

std::vector<NodePtr> nodes_of(const std::vector<Tensor>& tensors) {
  std::vector<NodePtr> out;
  for (const auto& t : tensors)
    out.push_back(detail::node_of(t));
  return out;
}

// "%3": the id print_graph gives a node of `roots`' graph.
std::unordered_map<const Node*, size_t> ids_of(const std::vector<NodePtr>& roots) {
  std::unordered_map<const Node*, size_t> id;
  auto order = topological_order(roots);
  for (size_t i = 0; i < order.size(); ++i)
    id[order[i].get()] = i;
  return id;
}

std::string kernel_header(size_t i, const rt::Launch& l) {
  return fmt::format("kernel {} {} over {}{}", i, l.kernel.name, shape_str(l.domain),
                     l.r > 1 ? fmt::format(" reducing {}", l.r) : "");
}

// A library call of a plan: what it computes and how.
std::string call_text(const detail::PlannedCall& c,
                      const std::unordered_map<const Node*, size_t>& id) {
  std::string out = fmt::format("call {} by {}", name(routine(*c.node)), c.library);
  if (!c.details.empty()) out += fmt::format("\n  {}", c.details);
  if (auto it = id.find(c.node.get()); it != id.end())
    out += fmt::format("\n  stores %{}", it->second);
  for (const rt::GemmCall& g : c.calls)
    out +=
        fmt::format("\n  gemm{} {}{} m={} n={} k={} lda={} ldb={} ldc={}",
                    g.batch > 1 ? fmt::format("StridedBatched x{}", g.batch) : "",
                    g.transa ? 'T' : 'N', g.transb ? 'T' : 'N', g.m, g.n, g.k, g.lda, g.ldb, g.ldc);
  if (ir::Site s = c.node->site.load(std::memory_order_relaxed))
    out += fmt::format("\n  from {}", s);
  return out + "\n";
}

// The schedule: each kernel and library call, in order, what it stores and why a kernel
// exists; then the simplified graph with each node's kernels.
std::string schedule_text(const std::vector<NodePtr>& simple, const detail::Plan& p) {
  auto id = ids_of(simple);
  std::unordered_map<const Node*, std::vector<size_t>> in_kernels;
  std::string out;
  auto calls_before = [&, next = size_t{0}](size_t k) mutable {
    for (; next < p.calls.size() && p.calls[next].before <= k; ++next)
      out += call_text(p.calls[next], id);
  };
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    calls_before(k);
    const auto& [launch, info] = p.kernels[k];
    std::vector<std::string> roots, nodes;
    for (const auto& r : info.roots)
      if (auto it = id.find(r.get()); it != id.end())
        roots.push_back(fmt::format("%{}", it->second));
    for (const auto& n : info.nodes)
      if (auto it = id.find(n.get()); it != id.end()) {
        if (in_kernels[n.get()].empty() || in_kernels[n.get()].back() != k)
          in_kernels[n.get()].push_back(k);
        if (!is_leaf(n->op)) nodes.push_back(fmt::format("%{}", it->second));
      }
    out += kernel_header(k, launch) + "\n";
    // A write's value is simplified on its own, so it may not be a node of this graph.
    if (!roots.empty()) out += fmt::format("  stores {}\n", fmt::join(roots, " "));
    if (!nodes.empty()) out += fmt::format("  computes {}\n", fmt::join(nodes, " "));
    out += fmt::format("  because {}\n", info.why);
    for (ir::Site s : info.sites())
      out += fmt::format("  from {}\n", s);
  }
  calls_before(p.kernels.size());
  if (p.kernels.empty() && p.calls.empty())
    out += "# no kernels: every value is memory or a constant\n";
  PrintOptions po;
  po.annotate = [&](const Node& n) -> std::string {
    auto it = in_kernels.find(&n);
    if (it == in_kernels.end()) return "";
    return fmt::format("kernel {}", fmt::join(it->second, ", "));
  };
  return out + "\n" + print_graph(simple, po);
}

std::string dot_text(const std::vector<NodePtr>& simple, const detail::Plan& p) {
  auto order = topological_order(simple);
  auto id = ids_of(simple);
  std::unordered_map<const Node*, size_t> home; // first kernel that computes the node
  for (size_t k = 0; k < p.kernels.size(); ++k)
    for (const auto& n : p.kernels[k].info.nodes)
      if (!is_leaf(n->op)) home.try_emplace(n.get(), k);
  std::string out = "digraph tensorjit {\n  rankdir=BT;\n  node [shape=box, fontname=monospace];\n";
  auto label = [&](const Node& n) {
    std::string extra = n.op == Op::Const ? " " + n.value.str() : "";
    return fmt::format("  n{} [label=\"%{} {}{}\\n{}{}\"];\n", id[&n], id[&n], name(n.op), extra,
                       short_dtype_name(n.dtype), shape_str(n.shape));
  };
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    out += fmt::format("  subgraph cluster_{} {{\n    label=\"{}\";\n", k,
                       kernel_header(k, p.kernels[k].launch));
    for (const auto& n : order)
      if (auto it = home.find(n.get()); it != home.end() && it->second == k)
        out += "  " + label(*n);
    out += "  }\n";
  }
  for (const auto& n : order)
    if (!home.count(n.get())) out += label(*n);
  for (const auto& n : order)
    for (const auto& s : n->src)
      out += fmt::format("  n{} -> n{};\n", id[resolve(s).get()], id[n.get()]);
  return out + "}\n";
}

int ptx_arch() {
  auto archs = cudagen::supported_archs();
  if (archs.empty()) throw Error("ptx: NVRTC knows no GPU architecture");
  for (int a : archs)
    if (a == 90) return 90;
  return archs.back();
}

// The stages that lower each planned kernel.
std::string per_kernel(const detail::Plan& p, std::string_view stage) {
  std::string out;
  if (p.kernels.empty())
    out = "# no kernels: every value is memory, a constant or a library call's\n";
  if ((stage == "cuda" || stage == "ptx") && !cudagen::nvrtc_available())
    throw Error(
        fmt::format("dump: stage '{}' needs the CUDA backend, which this build lacks", stage));
  const int opt = config().opt_level;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const rt::Launch& l = p.kernels[k].launch;
    const bool llvm_text = stage == "llvm" || stage == "asm";
    std::string head = kernel_header(k, l);
    const std::string comment = llvm_text ? "; " : "// ";
    out += comment + head + "\n";
    for (ir::Site s : p.kernels[k].info.sites())
      out += fmt::format("{}from {}\n", comment, s);
    if (stage == "kernel") {
      out += l.kernel.str();
    } else if (stage == "llvm") {
      out += llvmjit::emit_llvm_ir(l.kernel, opt);
    } else if (stage == "asm") {
      out += llvmjit::emit_asm(l.kernel, opt);
    } else {
      rt::CudaForm f = rt::cuda_form(l);
      cudagen::Source src = cudagen::generate(l.kernel, f.nd, f.index32);
      if (stage == "cuda")
        out += src.code;
      else {
        std::string ptx = cudagen::compile(src.code, l.kernel.name, ptx_arch(), false).data;
        // NVRTC's PTX size counts the terminating NUL.
        while (!ptx.empty() && ptx.back() == '\0')
          ptx.pop_back();
        out += ptx;
      }
    }
    if (!out.empty() && out.back() != '\n') out += "\n";
    if (k + 1 < p.kernels.size()) out += "\n";
  }
  // The code our own library calls run (the CPU GEMM's microkernel), once per kind of call.
  std::unordered_set<std::string> shown;
  for (const detail::PlannedCall& c : p.calls) {
    if (!c.code) continue;
    const std::string text = c.code(stage);
    if (text.empty() || !shown.insert(c.details).second) continue;
    const std::string comment = stage == "llvm" || stage == "asm" ? "; " : "// ";
    out += fmt::format("\n{}call {} by {}: {}\n{}", comment, name(routine(*c.node)), c.library,
                       c.details, text);
  }
  return out;
}

// The graph of `tensors` with the gradients of the first (summed when not a
// scalar) w.r.t. the leaves that require grad.
std::string grad_text(const std::vector<Tensor>& tensors) {
  if (tensors.empty() || !tensors[0].requires_grad())
    throw Error("dump: the 'grad' stage needs a first tensor that requires grad");
  std::vector<Tensor> leaves;
  std::vector<std::shared_ptr<autograd::FunctionNode>> stack{
      autograd::gradient_edge(tensors[0]).fn};
  std::unordered_set<const autograd::FunctionNode*> seen;
  while (!stack.empty()) {
    auto fn = std::move(stack.back());
    stack.pop_back();
    if (!fn || !seen.insert(fn.get()).second) continue;
    if (auto leaf = fn->leaf.lock()) leaves.push_back(Tensor(leaf));
    for (const auto& e : fn->next)
      stack.push_back(e.fn);
  }
  Tensor out = tensors[0].dim() == 0 ? tensors[0] : tensors[0].sum();
  std::vector<Tensor> grads =
      autograd::grad({out}, leaves, {}, /*retain_graph=*/true, /*create_graph=*/false);
  std::vector<Tensor> all = tensors;
  SaveOptions o;
  for (size_t i = 0; i < tensors.size(); ++i)
    o.output_names.push_back(fmt::format("out{}", i));
  for (size_t i = 0; i < grads.size(); ++i) {
    all.push_back(grads[i]);
    o.output_names.push_back(fmt::format("grad{}", i));
  }
  return print(all, o);
}

PrintOptions print_options(const SaveOptions& o) {
  PrintOptions po;
  po.output_names = o.output_names;
  po.inline_limit = o.inline_limit;
  std::unordered_map<const rt::Storage*, std::string> names;
  for (const auto& [name, t] : o.inputs) {
    // The memory under the tensor's views and pending in-place writes.
    NodePtr n = resolve(detail::node_of(t));
    while ((is_movement(n->op) || n->op == Op::Assign) && !n->src.empty())
      n = resolve(n->src[0]);
    if (n->op == Op::Buffer) names[n->storage.get()] = name;
  }
  po.storage_name = [names](const rt::Storage& s) {
    auto it = names.find(&s);
    return it == names.end() ? std::string() : it->second;
  };
  return po;
}

} // namespace

const std::vector<std::string>& stages() {
  static const std::vector<std::string> s{"graph", "simplified", "grad", "schedule", "kernel",
                                          "llvm",  "asm",        "cuda", "ptx",      "dot"};
  return s;
}

namespace {

// The stages of one graph. Several stages share its simplification and its
// plan, each made once, when a stage first needs it.
class StageDumper {
public:
  StageDumper(const std::vector<NodePtr>& roots, const std::vector<std::string>& output_names)
      : roots_(roots) {
    named_.output_names = output_names;
  }

  std::string text(std::string_view stage) {
    if (stage == "graph") return print_graph(roots_, named_);
    if (!simple_) simple_ = passes::simplify(roots_);
    if (stage == "simplified") return print_graph(*simple_, named_);
    if (!plan_) plan_ = detail::plan(*simple_);
    if (stage == "schedule") return schedule_text(*simple_, *plan_);
    if (stage == "dot") return dot_text(*simple_, *plan_);
    // The same kernels lower for either device: "cuda" and "ptx" show them as a GPU runs them.
    if (stage == "kernel" || stage == "llvm" || stage == "asm" || stage == "cuda" || stage == "ptx")
      return per_kernel(*plan_, stage);
    throw Error(fmt::format("dump: unknown stage '{}' (expected one of {})", stage,
                            fmt::join(stages(), ", ")));
  }

private:
  const std::vector<NodePtr>& roots_;
  PrintOptions named_;
  std::optional<std::vector<NodePtr>> simple_;
  std::optional<detail::Plan> plan_;
};

} // namespace

std::string dump_nodes(const std::vector<NodePtr>& roots, std::string_view stage,
                       const std::vector<std::string>& output_names) {
  std::string out;
  detail::with_deep_stack([&] { out = StageDumper(roots, output_names).text(stage); });
  return out;
}

std::string dump(const std::vector<Tensor>& tensors, std::string_view stage,
                 const std::vector<std::string>& output_names) {
  if (stage == "grad") return grad_text(tensors);
  return dump_nodes(nodes_of(tensors), stage, output_names);
}

std::string print(const std::vector<Tensor>& tensors, const SaveOptions& options) {
  return print_graph(nodes_of(tensors), print_options(options));
}

void save(const std::vector<Tensor>& tensors, const std::string& path, const SaveOptions& options) {
  namespace fs = std::filesystem;
  PrintOptions po = print_options(options);
  fs::path p(path);
  std::string stem = p.stem().string();
  po.external = [&](const std::string& name, const NodePtr& data) {
    std::string file = fmt::format("{}.{}.npy", stem, name);
    save_npy(detail::wrap(data), (p.parent_path() / file).string());
    return file;
  };
  std::string text = print_graph(nodes_of(tensors), po);
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("save: cannot open '{}' for writing", path));
  f << text;
  if (!f.flush()) throw Error(fmt::format("save: failed writing '{}'", path));
}

Graph parse(std::string_view text, std::string_view filename, const std::string& directory,
            const LoadOptions& options) {
  const auto& inputs = options.inputs;
  auto storage_for = [&](const StorageDecl& d) -> std::shared_ptr<rt::Storage> {
    Tensor t;
    if (auto it = inputs.find(d.name); it != inputs.end())
      t = it->second;
    else if (!d.file.empty())
      t = load_npy((std::filesystem::path(directory) / d.file).string());
    else
      return nullptr;
    if (t.numel() != d.numel)
      throw Error(fmt::format("storage '{}' needs {} elements, its data has {}", d.name, d.numel,
                              t.numel()));
    // Data of another dtype is converted (np.save writes float64 by default).
    NodePtr n = resolve(detail::host_contiguous(t.to(d.dtype).reshape({d.numel})));
    auto st = rt::Storage::allocate(static_cast<size_t>(d.numel) * itemsize(d.dtype));
    if (d.numel > 0)
      std::memcpy(st->data(),
                  static_cast<const char*>(n->storage->data()) + n->view.offset * itemsize(d.dtype),
                  static_cast<size_t>(d.numel) * itemsize(d.dtype));
    return d.device.is_cuda() ? rt::copy_to_device(st, d.device) : st;
  };
  std::optional<Device> device;
  if (options.device) device = rt::checked_device(*options.device);
  ParsedGraph g = parse_graph(text, filename, storage_for, device);
  Graph out;
  out.output_names = std::move(g.output_names);
  for (auto& n : g.outputs)
    out.outputs.push_back(detail::wrap(std::move(n)));
  for (auto& [name, n] : g.storages)
    out.storages[name] = detail::wrap(std::move(n));
  return out;
}

Graph load_graph(const std::string& path, const LoadOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("load: cannot open '{}'", path));
  std::stringstream ss;
  ss << f.rdbuf();
  std::string dir = std::filesystem::path(path).parent_path().string();
  return parse(ss.str(), path, dir.empty() ? "." : dir, options);
}

std::vector<Tensor> load(const std::string& path) { return load_graph(path).outputs; }

} // namespace tj::ir

namespace tj::detail {

void dump_materialization(const std::vector<ir::NodePtr>& nodes) {
  static std::atomic<int> counter = 0;
  namespace fs = std::filesystem;
  const int number = counter++;
  std::error_code ec;
  fs::create_directories(config().dump_dir, ec);
  with_deep_stack([&] {
    ir::StageDumper stages(nodes, {});
    std::string_view list = config().dump;
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string stage(list.substr(0, comma));
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      if (stage.empty()) continue;
      fs::path file = fs::path(config().dump_dir) / fmt::format("{:04}-{}.txt", number, stage);
      std::string text;
      try {
        text = stages.text(stage);
      } catch (const std::exception& e) {
        text = fmt::format("# cannot dump '{}': {}\n", stage, e.what());
      }
      std::ofstream f(file, std::ios::binary);
      f << text;
      if (!f) fmt::print(stderr, "[tj] TJ_DUMP: cannot write {}\n", file.string());
    }
  });
}

} // namespace tj::detail
