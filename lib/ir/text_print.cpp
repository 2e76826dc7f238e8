// The tensor graph's text form, printed (docs/ir.md): what parse_graph reads back.
#include "lib/ir/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "lib/ir/routine.h"
#include "lib/ir/scalar_semantics.h"
#include "tensorjit/config.h"
#include "tensorjit/error.h"

namespace tj::ir {
namespace {

// A value of dtype `t` that reads back to the same bits: floats in the
// shortest form that round-trips in their own precision.
std::string float_literal(double d, DType t) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (t == kFloat64) return fmt::format("{}", d);
  return fmt::format("{}", static_cast<float>(d));
}

// A complex value is one word, its parts joined by the imaginary part's sign: 1.5-2j.
std::string literal(const Scalar& v, DType t) {
  if (t == kBool) return v.to_bool() ? "true" : "false";
  if (is_complex(t)) {
    const DType part = real_part_dtype(t);
    std::string im = float_literal(v.imag(), part);
    return float_literal(v.to_double(), part) + (im[0] == '-' ? "" : "+") + im + "j";
  }
  if (!is_floating_point(t)) return fmt::format("{}", v.to_int());
  return float_literal(v.to_double(), t);
}

Scalar element(const char* p, DType t) {
  if (t == kBool) return Scalar(load_int(p, t) != 0);
  if (is_complex(t)) return Scalar(load_complex(p, t));
  if (is_floating_point(t)) return Scalar(load_float(p, t));
  return Scalar(load_int(p, t));
}

std::string view_attrs(const View& v) {
  return fmt::format(" strides={} offset={}", shape_str(v.strides), v.offset);
}

// The attributes of a node after its operands (docs/ir.md lists them per op).
std::string attrs(const Node& n) {
  switch (n.op) {
  case Op::Buffer:
  case Op::Iota:
    return view_attrs(n.view);
  case Op::Philox:
    return fmt::format(" seed={} counter={} word={}", n.args[0], n.args[1], n.args[2]) +
           view_attrs(n.view);
  case Op::ReduceSum:
  case Op::ReduceProd:
  case Op::ReduceMax:
  case Op::ReduceMin:
    return " axes=" + shape_str(n.args);
  case Op::ScanSum:
  case Op::ScanProd:
  case Op::ScanMax:
  case Op::ScanMin:
  case Op::ScanLogSumExp:
    return fmt::format(" axis={}", n.args[0]);
  case Op::Permute:
    return " perm=" + shape_str(n.args);
  case Op::Gather:
    return fmt::format(" dim={}", n.args[0]);
  case Op::Scatter:
    return fmt::format(" dim={} accumulate={}", n.args[0], n.args[1]);
  case Op::Slice: {
    std::vector<int64_t> start, step;
    for (size_t i = 0; i + 1 < n.args.size(); i += 2) {
      start.push_back(n.args[i]);
      step.push_back(n.args[i + 1]);
    }
    return fmt::format(" start={} step={}", shape_str(start), shape_str(step));
  }
  case Op::AsStrided:
    return fmt::format(" strides={} offset={}", shape_str({n.args.begin(), n.args.end() - 1}),
                       n.args.back());
  case Op::Call: {
    std::string out;
    const Routine r = routine(n);
    for (size_t i = 0; i < num_params(r); ++i)
      out += fmt::format(" {}={}", info(r).params[i], n.args[i + 1]);
    if (r == Routine::Lstsq) out += " rcond=" + literal(n.value, kFloat64);
    return out;
  }
  case Op::Assign:
    return fmt::format(" strides={} offset={} in_place={}",
                       shape_str({n.args.begin(), n.args.end() - 2}), n.args[n.args.size() - 2],
                       n.args.back());
  default:
    return "";
  }
}

std::string type_str(const Node& n) {
  std::string s = fmt::format("{}{}", short_dtype_name(n.dtype), shape_str(n.shape));
  if ((n.op == Op::Const || n.op == Op::Iota || n.op == Op::Philox) && n.device.is_cuda())
    s += " on " + n.device.str();
  return s;
}

} // namespace

std::vector<NodePtr> topological_order(const std::vector<NodePtr>& roots) {
  std::vector<NodePtr> order;
  std::unordered_set<const Node*> done;
  // Iterative post-order: graphs may be deeper than the stack.
  std::vector<std::pair<NodePtr, size_t>> stack;
  for (const auto& r : roots) {
    NodePtr n = resolve(r);
    if (done.count(n.get())) continue;
    stack.push_back({n, 0});
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->src.size()) {
        NodePtr s = resolve(node->src[next++]);
        if (!done.count(s.get())) stack.push_back({s, 0});
        continue;
      }
      if (done.insert(node.get()).second) order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

std::string print_graph(const std::vector<NodePtr>& roots, const PrintOptions& options) {
  std::vector<NodePtr> order = topological_order(roots);
  std::unordered_map<const Node*, size_t> id;
  for (size_t i = 0; i < order.size(); ++i)
    id[order[i].get()] = i;

  std::string out;
  std::map<const rt::Storage*, std::string> storages;
  std::unordered_set<std::string> taken;
  for (const auto& n : order) {
    if (n->op != Op::Buffer || storages.count(n->storage.get())) continue;
    const rt::Storage& st = *n->storage;
    std::string name = options.storage_name ? options.storage_name(st) : "";
    if (name.empty()) name = st.label();
    if (taken.count(name)) name.clear();
    for (size_t k = storages.size(); name.empty() || taken.count(name); ++k)
      name = fmt::format("s{}", k);
    taken.insert(name);
    storages[&st] = name;
    const int64_t count = static_cast<int64_t>(st.nbytes() / itemsize(n->dtype));
    out += fmt::format("storage {} : {}[{}]", name, short_dtype_name(n->dtype), count);
    if (st.device().is_cuda()) out += " on " + st.device().str();
    // The elements, read on the host where they are printed or handed out.
    auto host = [&] {
      return st.device().is_cuda() ? rt::copy_to_device(n->storage, kCPU) : n->storage;
    };
    if (count <= options.inline_limit) {
      std::vector<std::string> vals;
      const std::shared_ptr<rt::Storage> data = host();
      const char* p = static_cast<const char*>(data->data());
      for (int64_t i = 0; i < count; ++i)
        vals.push_back(literal(element(p + i * itemsize(n->dtype), n->dtype), n->dtype));
      out += fmt::format(" = [{}]", fmt::join(vals, ", "));
    } else if (options.external) {
      NodePtr data = make_buffer(host(), n->dtype, {count}, View{{1}, 0});
      if (std::string file = options.external(name, data); !file.empty())
        out += fmt::format(" = \"{}\"", file);
    }
    out += "\n";
  }

  for (const auto& n : order) {
    std::string line = fmt::format("%{} = {}", id[n.get()], name(n->op));
    if (n->op == Op::Buffer) line += " " + storages[n->storage.get()];
    if (n->op == Op::Const) line += " " + literal(n->value, n->dtype);
    if (n->op == Op::Call) line += fmt::format(" {}", name(routine(*n)));
    for (size_t i = 0; i < n->src.size(); ++i)
      line += fmt::format("{}%{}", i ? ", " : " ", id[resolve(n->src[i]).get()]);
    line += attrs(*n) + " : " + type_str(*n);
    if (Site site = n->site.load(std::memory_order_relaxed))
      line += fmt::format(" at \"{}\"", site);
    if (options.annotate)
      if (std::string note = options.annotate(*n); !note.empty()) line += "  # " + note;
    out += line + "\n";
  }
  for (size_t i = 0; i < roots.size(); ++i) {
    size_t k = id[resolve(roots[i]).get()];
    if (i < options.output_names.size() && !options.output_names[i].empty())
      out += fmt::format("output {} = %{}\n", options.output_names[i], k);
    else
      out += fmt::format("output %{}\n", k);
  }
  return out;
}

} // namespace tj::ir
