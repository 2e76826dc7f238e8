// tjc: the compiler driver. Reads a .tjir file or an expression, then prints
// stages of its compilation, differentiates it, or runs it.
#include "tools/tjc/driver.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <tensorjit/tensorjit.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "tools/tjc/expr.h"

namespace tj::tjc {
namespace {

constexpr const char* kUsage = R"(usage: tjc FILE.tjir [options]
       tjc -e 'EXPR' [options]

Reads a tensor graph (a .tjir file, docs/ir.md) or builds one from an
expression (docs/tjc.md), then prints stages of its compilation or runs it.

  -e EXPR                 a program of the expression language, e.g.
                          'x = arange(6).reshape(2, 3); (x * 2).sum(0)'
  --emit=STAGE            print a stage (repeatable; each is headed when
                          several are asked for): graph, simplified, grad,
                          schedule, kernel, llvm, asm, cuda, ptx, dot
  --run                   compute the outputs and print them as PyTorch
                          does (the default without --emit; for -e the
                          program's own output)
  --input NAME=FILE.npy   data for the storage NAME (repeatable)
  --output DIR            also write each output to DIR/NAME.npy (computed:
                          with --emit, it implies --run)
  --device DEVICE         run on cpu (default) or cuda
  --time                  compile and run times, kernel counts (.tjir files)
  --grad OUTPUT --wrt IN  add the gradient of OUTPUT (summed) w.r.t. the
                          storage IN as the output grad_IN (IN may be a
                          comma-separated list)
  --version               the version of tjc and of the tensorjit library
  -h, --help              this text

Exit status: 0 success, 1 an error in the input (file, expression, data),
2 a usage error.
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  bool help = false;
  bool version = false;
  std::string file;
  std::optional<std::string> expr;
  std::vector<std::string> emit;
  bool run = false;
  bool time = false;
  std::map<std::string, std::string> inputs;
  std::string output_dir;
  std::optional<Device> device;
  std::string grad_of;
  std::vector<std::string> wrt;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

Options parse_args(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // "--flag=value" and "--flag value" are the same.
    std::string flag = a, value;
    bool inline_value = false;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      flag = a.substr(0, a.find('='));
      value = a.substr(a.find('=') + 1);
      inline_value = true;
    }
    auto take = [&]() -> std::string {
      if (inline_value) return value;
      if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value", flag));
      return args[++i];
    };
    auto no_value = [&] {
      if (inline_value) throw UsageError(fmt::format("{} takes no value", flag));
    };
    if (flag == "-h" || flag == "--help") {
      no_value();
      o.help = true;
      return o;
    } else if (flag == "--version") {
      no_value();
      o.version = true;
      return o;
    } else if (flag == "-e") {
      if (o.expr) throw UsageError("-e is given twice");
      o.expr = take();
    } else if (flag == "--emit") {
      for (const auto& s : split(take(), ',')) {
        if (std::find(ir::stages().begin(), ir::stages().end(), s) == ir::stages().end())
          throw UsageError(fmt::format("unknown stage '{}' (expected one of {})", s,
                                       fmt::join(ir::stages(), ", ")));
        o.emit.push_back(s);
      }
    } else if (flag == "--run") {
      no_value();
      o.run = true;
    } else if (flag == "--time") {
      no_value();
      o.time = true;
    } else if (flag == "--input") {
      std::string v = take();
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        throw UsageError(fmt::format("--input takes NAME=FILE.npy, got '{}'", v));
      o.inputs[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (flag == "--output") {
      o.output_dir = take();
    } else if (flag == "--device") {
      std::string v = take();
      try {
        o.device = Device(v);
      } catch (const std::exception&) {
        throw UsageError(fmt::format("--device takes cpu or cuda, got '{}'", v));
      }
    } else if (flag == "--grad") {
      o.grad_of = take();
    } else if (flag == "--wrt") {
      for (const auto& s : split(take(), ','))
        if (!s.empty()) o.wrt.push_back(s);
    } else if (a.rfind("-", 0) == 0 && a != "-") {
      throw UsageError(fmt::format("unknown option '{}'", a));
    } else {
      if (!o.file.empty()) throw UsageError("give one .tjir file");
      o.file = a;
    }
  }
  if (o.file.empty() && !o.expr) throw UsageError("give a .tjir file or -e EXPR");
  if (!o.file.empty() && o.expr) throw UsageError("give a .tjir file or -e EXPR, not both");
  if (o.grad_of.empty() != o.wrt.empty()) throw UsageError("--grad and --wrt go together");
  if (o.expr && (o.device || !o.inputs.empty() || o.time))
    throw UsageError("--device, --input and --time apply to .tjir files; in an expression "
                     "pass device='cuda' to the creation functions");
  if (o.expr && !o.grad_of.empty())
    throw UsageError("--grad applies to .tjir files; in an expression call backward()");
  if (std::find(o.emit.begin(), o.emit.end(), "grad") != o.emit.end() && o.file.size() &&
      o.grad_of.empty())
    throw UsageError("--emit=grad of a .tjir file needs --grad OUTPUT --wrt INPUT");
  // Writing the outputs computes them: with --emit too, they are run (and printed).
  if (o.time || (o.emit.empty() && !o.expr) || (!o.output_dir.empty() && !o.emit.empty()))
    o.run = true;
  return o;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

ir::Graph load(const Options& o) {
  ir::LoadOptions lo;
  lo.device = o.device;
  for (const auto& [name, path] : o.inputs)
    lo.inputs[name] = load_npy(path);
  ir::Graph g = ir::load_graph(o.file, lo);
  for (const auto& [name, path] : o.inputs)
    if (!g.storages.count(name))
      throw Error(fmt::format("--input {}: the graph has no storage named '{}'", name, name));
  if (!o.grad_of.empty()) g = ir::differentiate(g, o.grad_of, o.wrt);
  return g;
}

void emit(const Options& o, const std::vector<std::string>& names,
          const std::vector<Tensor>& outputs, std::ostream& out) {
  for (const auto& stage : o.emit) {
    if (o.emit.size() > 1) fmt::print(out, "# === {} ===\n", stage);
    // A file's gradient is already part of its graph (--grad).
    const std::string s = stage == "grad" && !o.file.empty() ? "graph" : stage;
    fmt::print(out, "{}", ir::dump(outputs, s, names));
  }
}

// Each output to DIR/NAME.npy, where --output asks for it.
void save_outputs(const Options& o, const std::vector<std::string>& names,
                  const std::vector<Tensor>& outputs) {
  if (o.output_dir.empty()) return;
  std::filesystem::create_directories(o.output_dir);
  for (size_t i = 0; i < outputs.size(); ++i)
    save_npy(outputs[i].cpu(),
             (std::filesystem::path(o.output_dir) / (names[i] + ".npy")).string());
}

void run_outputs(const Options& o, const std::vector<std::string>& names,
                 const std::vector<Tensor>& outputs, std::ostream& out) {
  reset_stats();
  auto t0 = std::chrono::steady_clock::now();
  eval(outputs);
  const double first_ms = ms_since(t0);
  const Stats first = stats();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs.size() > 1) fmt::print(out, "# {}\n", names[i]);
    fmt::print(out, "{}\n", outputs[i].str());
  }
  save_outputs(o, names, outputs);
  if (!o.time) return;
  fmt::print(out,
             "# first run: {:.3f} ms, {} kernels launched, {} compiled, {} from the memory "
             "cache, {} from the disk cache\n",
             first_ms, first.kernels_launched, first.kernels_compiled, first.memory_cache_hits,
             first.disk_cache_hits);
  // The same graph again, read afresh: its kernels are cached now.
  ir::Graph again = load(o);
  reset_stats();
  t0 = std::chrono::steady_clock::now();
  eval(again.outputs);
  const double second_ms = ms_since(t0);
  fmt::print(out, "# second run (kernels cached): {:.3f} ms, {} kernels launched, {} compiled\n",
             second_ms, stats().kernels_launched, stats().kernels_compiled);
}

int run_expression(const Options& o, std::ostream& out) {
  // Emitting keeps the graph lazy: the program's expression values are not shown.
  const bool echo = o.emit.empty() && !o.run;
  ExprResult r = run_expr(*o.expr, echo, "<expr>", &out);
  if (!o.emit.empty() || o.run) {
    if (r.tensors.empty())
      throw Error("the expression's last statement is not a tensor: nothing to emit or run");
    emit(o, r.names, r.tensors, out);
    if (o.run) run_outputs(o, r.names, r.tensors, out);
  } else if (!o.output_dir.empty()) { // the program printed its values; its outputs are saved
    if (r.tensors.empty())
      throw Error("the expression's last statement is not a tensor: nothing to write");
    save_outputs(o, r.names, r.tensors);
  }
  return 0;
}

} // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Options o;
  try {
    o = parse_args(args);
  } catch (const UsageError& e) {
    fmt::print(err, "tjc: {} (tjc --help lists the options)\n", e.what());
    return 2;
  }
  if (o.help) {
    out << kUsage;
    return 0;
  }
  if (o.version) {
    fmt::print(out, "tjc (tensorjit) {}\n", version());
    return 0;
  }
  try {
    if (o.expr) return run_expression(o, out);
    ir::Graph g = load(o);
    emit(o, g.output_names, g.outputs, out);
    if (o.run) run_outputs(o, g.output_names, g.outputs, out);
    return 0;
  } catch (const std::exception& e) {
    out.flush();
    fmt::print(err, "{}\n", e.what());
    return 1;
  }
}

} // namespace tj::tjc
