// Kernel IR: hashing, text form and the verifier.
#include "codegen/kernel_ir.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace tj::kir {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

const char* slot_role(Slot::Role r) {
  switch (r) {
  case Slot::Role::Input:
    return "in";
  case Slot::Role::Output:
    return "out";
  case Slot::Role::Index:
    return "index";
  }
  return "?";
}

const char* stride_kind(StrideKind s) {
  switch (s) {
  case StrideKind::Contiguous:
    return "contiguous";
  case StrideKind::Broadcast:
    return "broadcast";
  case StrideKind::Strided:
    return "strided";
  case StrideKind::Pairs:
    return "pairs";
  }
  return "?";
}

} // namespace

uint64_t Kernel::hash() const {
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (const auto& s : slots)
    h = mix(h, (uint64_t(uint32_t(s.next_to)) << 40) | (uint64_t(s.stream) << 32) |
                   (uint64_t(s.rstride) << 24) | (uint64_t(s.role) << 16) |
                   (uint64_t(s.dtype) << 8) | uint64_t(s.stride));
  for (auto p : params)
    h = mix(h, uint64_t(p));
  for (const auto& v : values) {
    h = mix(h, (uint64_t(v.op) << 8) | uint64_t(v.dtype));
    for (int32_t s : v.src)
      h = mix(h, uint64_t(uint32_t(s)));
    h = mix(h, uint64_t(uint32_t(v.slot)));
    h = mix(h, uint64_t(v.imm));
    h = mix(h, uint64_t(uint32_t(v.param)));
  }
  for (const auto& s : stores) {
    h = mix(h, (uint64_t(uint32_t(s.slot)) << 32) | uint32_t(s.value));
    if (s.scatters())
      h = mix(h, (uint64_t(uint32_t(s.at)) << 32) ^ (uint64_t(uint32_t(s.stride)) << 16) ^
                     uint64_t(uint32_t(s.bound)) ^ (uint64_t(s.add) << 63));
  }
  return h;
}

bool Kernel::placed_by_data(int32_t s) const {
  return std::any_of(values.begin(), values.end(),
                     [&](const Value& v) { return v.op == Op::Gather && v.slot == s; }) ||
         std::any_of(stores.begin(), stores.end(),
                     [&](const Store& st) { return st.slot == s && st.scatters(); });
}

std::string Kernel::difference(const Kernel& o) const {
  if (slots.size() != o.slots.size())
    return fmt::format("{} slots, not {}", slots.size(), o.slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    const Slot &a = slots[i], &b = o.slots[i];
    if (a.role != b.role)
      return fmt::format("slot{} is {}, not {}", i, slot_role(a.role), slot_role(b.role));
    if (a.dtype != b.dtype)
      return fmt::format("slot{} is {}, not {}", i, short_dtype_name(a.dtype),
                         short_dtype_name(b.dtype));
    if (a.stride != b.stride)
      return fmt::format("slot{} is {}, not {}", i, stride_kind(a.stride), stride_kind(b.stride));
    if (a.rstride != b.rstride)
      return fmt::format("slot{} is {} along the reduction, not {}", i, stride_kind(a.rstride),
                         stride_kind(b.rstride));
    if (a.stream != b.stream)
      return fmt::format("slot{} is {}written around the cache", i, a.stream ? "" : "not ");
    if (a.next_to != b.next_to)
      return fmt::format("slot{} lies next to slot{}, not slot{}", i, a.next_to, b.next_to);
  }
  if (params != o.params) return fmt::format("its parameters differ in number or dtype");
  for (size_t i = 0; i < std::min(values.size(), o.values.size()); ++i) {
    const Value &a = values[i], &b = o.values[i];
    if (a.op != b.op) return fmt::format("%{} is {}, not {}", i, ir::name(a.op), ir::name(b.op));
    if (!(a == b)) return fmt::format("%{} ({}) differs in dtype or operands", i, ir::name(a.op));
  }
  if (values.size() != o.values.size())
    return fmt::format("{} values, not {}", values.size(), o.values.size());
  if (stores != o.stores) return "its stores differ";
  return "";
}

bool Kernel::same_structure(const Kernel& o) const {
  if (slots.size() != o.slots.size() || params != o.params || values != o.values ||
      stores != o.stores)
    return false;
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].role != o.slots[i].role || slots[i].dtype != o.slots[i].dtype ||
        slots[i].stride != o.slots[i].stride || slots[i].rstride != o.slots[i].rstride ||
        slots[i].stream != o.slots[i].stream)
      return false;
  return true;
}

bool Kernel::has_reduction() const {
  for (const auto& v : values)
    if (ir::is_reduce(v.op)) return true;
  return false;
}

bool Kernel::has_scan() const {
  return std::any_of(values.begin(), values.end(),
                     [](const Value& v) { return ir::is_scan(v.op); });
}

bool Kernel::gathers() const {
  return std::any_of(values.begin(), values.end(),
                     [](const Value& v) { return v.op == Op::Gather; });
}

bool Kernel::scatters() const {
  return std::any_of(stores.begin(), stores.end(), [](const Store& s) { return s.scatters(); });
}

bool Kernel::has_row_loops() const {
  if (has_reduction()) return true;
  for (const auto& st : stores)
    if (moves_along_j(slots[st.slot])) return true;
  return false;
}

LoopSplit split_at_reduction(const Kernel& k) {
  const size_t nv = k.values.size();
  LoopSplit r{std::vector<char>(nv, 0), std::vector<char>(nv, 0)};
  for (const Store& st : k.stores)
    for (int32_t v : st.operands())
      if (v >= 0) r.after_loop[size_t(v)] = 1;
  // Values only read values before them: one pass from the last spreads both marks.
  for (size_t v = nv; v-- > 0;) {
    const Value& x = k.values[v];
    const bool reduce = ir::is_reduce(x.op);
    for (int32_t s : x.src) {
      if (s < 0) continue;
      if (reduce || r.in_loop[v]) r.in_loop[size_t(s)] = 1;
      if (r.after_loop[v] && !reduce) r.after_loop[size_t(s)] = 1;
    }
    if (reduce) r.after_loop[v] = 0;
  }
  return r;
}

LoopPlan plan_loops(const Kernel& k) {
  const size_t nv = k.values.size();
  LoopPlan p;
  p.loop_of.assign(nv, -1);
  // stage[v]: reductions in a chain below v; varying[v]: v depends on j.
  std::vector<int> stage(nv, 0);
  std::vector<char>& varying = p.varying;
  std::vector<char> live(nv, 0);
  varying.assign(nv, 0);
  // Only what the stores need is computed (a kernel may hold values nothing uses).
  for (const auto& st : k.stores)
    for (int32_t v : st.operands())
      if (v >= 0) live[v] = 1;
  for (size_t v = nv; v-- > 0;)
    if (live[v])
      for (int32_t s : k.values[v].src)
        if (s >= 0) live[s] = 1;
  for (size_t v = 0; v < nv; ++v) {
    const Value& x = k.values[v];
    if (x.op == Op::Buffer || x.op == Op::Iota || x.op == Op::Gather)
      varying[v] = moves_along_j(k.slots[x.slot]);
    for (int32_t s : x.src)
      if (s >= 0) {
        stage[v] = std::max(stage[v], stage[s]);
        varying[v] |= varying[s];
      }
    varying[v] |= ir::is_scan(x.op); // its value moves with j, whatever its operand does
    if (ir::is_reduce(x.op) && live[v]) {
      p.loop_of[v] = stage[v];
      p.reduce_loops = std::max(p.reduce_loops, stage[v] + 1);
      stage[v] += 1;
      varying[v] = 0;
    }
  }
  for (const auto& st : k.stores)
    p.store_loop |= moves_along_j(k.slots[st.slot]);
  p.per_i.assign(size_t(p.reduce_loops) + 1, std::vector<char>(nv, 0));
  for (size_t v = 0; v < nv; ++v)
    if (live[v] && !varying[v] && !ir::is_reduce(k.values[v].op)) p.per_i[stage[v]][v] = 1;
  // A loop computes the varying values its reductions or stores need; the rest comes from per i.
  p.in_loop.assign(size_t(p.reduce_loops) + (p.store_loop ? 1 : 0), std::vector<char>(nv, 0));
  auto need = [&](std::vector<char>& in, int32_t root) {
    std::vector<int32_t> todo{root};
    while (!todo.empty()) {
      int32_t v = todo.back();
      todo.pop_back();
      if (!varying[v] || in[v]) continue;
      in[v] = 1;
      for (int32_t s : k.values[v].src)
        if (s >= 0) todo.push_back(s);
    }
  };
  for (size_t v = 0; v < nv; ++v)
    if (p.loop_of[v] >= 0) need(p.in_loop[p.loop_of[v]], k.values[v].src[0]);
  if (p.store_loop)
    for (const auto& st : k.stores)
      if (moves_along_j(k.slots[st.slot])) need(p.in_loop.back(), st.value);
  return p;
}

std::string Kernel::str() const {
  std::string s = fmt::format("kernel {} {{\n", name);
  for (size_t i = 0; i < slots.size(); ++i)
    s += fmt::format(
        "  slot{} = {} {} {}{}{}{}\n", i, slot_role(slots[i].role),
        short_dtype_name(slots[i].dtype), stride_kind(slots[i].stride),
        has_row_loops() ? fmt::format(", reduce {}", stride_kind(slots[i].rstride)) : "",
        slots[i].stream ? ", stream" : "",
        slots[i].next_to >= 0 ? fmt::format(", next to slot{}", slots[i].next_to) : "");
  for (size_t i = 0; i < params.size(); ++i)
    s += fmt::format("  param{} : {}\n", i, short_dtype_name(params[i]));
  for (size_t i = 0; i < values.size(); ++i) {
    const Value& v = values[i];
    std::string rhs;
    switch (v.op) {
    case Op::Buffer:
      rhs = fmt::format("load slot{}", v.slot);
      break;
    case Op::Const:
      rhs = fmt::format("param{}", v.param);
      break;
    case Op::Iota:
      rhs = fmt::format("index slot{}", v.slot);
      break;
    case Op::Philox:
      rhs = fmt::format("philox %{} + %{}, key %{}, word {}", v.src[0], v.src[1], v.src[2], v.imm);
      break;
    case Op::Gather:
      rhs = fmt::format("gather slot{} at %{} * %{}, bound %{}", v.slot, v.src[0], v.src[1],
                        v.src[2]);
      break;
    default: {
      rhs = std::string(ir::name(v.op));
      for (int k = 0; k < 3 && v.src[k] >= 0; ++k)
        rhs += fmt::format("{}%{}", k ? ", " : " ", v.src[k]);
    }
    }
    s += fmt::format("  %{} : {} = {}\n", i, short_dtype_name(v.dtype), rhs);
  }
  for (const auto& st : stores)
    if (st.scatters())
      s += fmt::format("  {} slot{} at %{} * %{}, bound %{}, %{}\n", st.add ? "add" : "store",
                       st.slot, st.at, st.stride, st.bound, st.value);
    else
      s += fmt::format("  store slot{}, %{}\n", st.slot, st.value);
  return s + "}\n";
}

void verify(const Kernel& k) {
  auto fail = [&](const std::string& what) {
    throw std::logic_error(
        fmt::format("internal error: kernel IR verifier: {}\n{}", what, k.str()));
  };
  for (size_t i = 0; i < k.values.size(); ++i) {
    const Value& v = k.values[i];
    int arity = ir::info(v.op).arity;
    if (v.op == Op::Philox || v.op == Op::Gather) arity = 3;
    for (int a = 0; a < 3; ++a) {
      bool used = a < arity;
      if (used && (v.src[a] < 0 || v.src[a] >= int32_t(i)))
        fail(fmt::format("%{} operand {}", i, a));
      if (!used && v.src[a] != -1) fail(fmt::format("%{} has extra operand", i));
    }
    bool leaf = ir::is_leaf(v.op);
    if (v.op == Op::Const) {
      if (v.param < 0 || size_t(v.param) >= k.params.size() || v.slot != -1)
        fail(fmt::format("%{} refers to a missing parameter", i));
    } else if ((leaf && v.op != Op::Philox) || v.op == Op::Gather) {
      if (v.slot < 0 || size_t(v.slot) >= k.slots.size())
        fail(fmt::format("%{} refers to a missing slot", i));
    }
    if (v.op != Op::Const && v.param != -1) fail(fmt::format("%{} has a parameter", i));
    if (v.op == Op::Gather) {
      for (int a = 0; a < 3; ++a)
        if (k.values[v.src[a]].dtype != kInt64)
          fail(fmt::format("%{} operand {} is not int64", i, a));
      const Slot& s = k.slots[v.slot];
      if (s.role == Slot::Role::Output ||
          v.dtype != (s.role == Slot::Role::Index ? kInt64 : s.dtype))
        fail(fmt::format("%{} gathers from slot{} as {}", i, v.slot, short_dtype_name(v.dtype)));
    }
    if (!leaf && v.op != Op::Cast && v.op != Op::Gather &&
        (v.dtype == kFloat16 || v.dtype == kBFloat16))
      fail(fmt::format("%{} computes in a 16-bit float type", i));
    if (ir::is_movement(v.op) || ir::is_performed(v.op))
      fail(fmt::format("%{} is a {} op, which kernels do not have", i, ir::name(v.op)));
  }
  // A streaming output (one at most): contiguous, stored once per element by the element loop,
  // or a row contiguous along j stored by the store loop.
  if (std::count_if(k.slots.begin(), k.slots.end(), [](const Slot& s) { return s.stream; }) > 1)
    fail("more than one slot streams");
  for (size_t s = 0; s < k.slots.size(); ++s) {
    const Slot& slot = k.slots[s];
    if (!slot.stream) continue;
    const bool scatters = std::any_of(k.stores.begin(), k.stores.end(), [&](const Store& st) {
      return st.slot == int32_t(s) && st.scatters();
    });
    const bool runs = k.has_row_loops() ? slot.rstride == StrideKind::Contiguous
                                        : slot.stride == StrideKind::Contiguous;
    if (slot.role != Slot::Role::Output || scatters || !runs)
      fail(fmt::format("slot{} streams, but is not an output written in contiguous runs", s));
  }
  // A slot next to another: an earlier one of its role, dtype and strides, neither gathered
  // nor scattered.
  for (size_t s = 0; s < k.slots.size(); ++s) {
    const Slot& slot = k.slots[s];
    if (slot.next_to < 0) continue;
    if (size_t(slot.next_to) >= s || slot.role == Slot::Role::Index ||
        k.slots[slot.next_to].role != slot.role || k.slots[slot.next_to].dtype != slot.dtype ||
        k.slots[slot.next_to].stride != slot.stride ||
        k.slots[slot.next_to].rstride != slot.rstride || k.placed_by_data(int32_t(s)) ||
        k.placed_by_data(slot.next_to))
      fail(fmt::format("slot{} lies next to slot{}, which is not an earlier slot like it", s,
                       slot.next_to));
  }
  for (const auto& st : k.stores) {
    if (st.slot < 0 || size_t(st.slot) >= k.slots.size() ||
        k.slots[st.slot].role != Slot::Role::Output)
      fail("store to a non-output slot");
    if (st.value < 0 || size_t(st.value) >= k.values.size()) fail("store of a missing value");
    if (k.values[st.value].dtype != k.slots[st.slot].dtype) fail("store changes the dtype");
    if (!st.scatters()) {
      if (st.stride != -1 || st.bound != -1 || st.add) fail("a plain store with scatter operands");
      continue;
    }
    for (int32_t v : {st.at, st.stride, st.bound})
      if (v < 0 || size_t(v) >= k.values.size() || k.values[v].dtype != kInt64)
        fail("a scattering store whose place is not three int64 values");
    if (st.add && k.slots[st.slot].dtype == kBool) fail("a scattering store adds bool");
    if (k.has_row_loops()) fail("a scattering store in a kernel that loops over j");
  }
  // A value that varies along j is stored only by the store loop, into a slot that moves along j.
  LoopPlan p = plan_loops(k);
  // A scan runs in the store loop, which a reduction loop never reads.
  for (size_t v = 0; v < k.values.size(); ++v)
    if (ir::is_scan(k.values[v].op)) {
      if (k.values[v].dtype == kBool) fail(fmt::format("%{} scans bool", v));
      for (const auto& in : p.in_loop)
        if (&in != &p.in_loop.back() && in[v])
          fail(fmt::format("%{}: a reduction loop reads a scan", v));
      if (!p.store_loop) fail(fmt::format("%{} scans in a kernel without a store loop", v));
    }
  for (const auto& st : k.stores)
    if (!moves_along_j(k.slots[st.slot]) && p.varying[st.value])
      fail(fmt::format("store slot{}, %{}: the value varies along the reduction, the slot "
                       "does not",
                       st.slot, st.value));
}

} // namespace tj::kir
