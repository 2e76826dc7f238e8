// Scheduling: lowering fused elementwise graphs to the kernel IR.
#include "lib/schedule/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "lib/frontend/graph_builders.h"
#include "lib/ir/scalar_semantics.h"
#include "lib/ir/text.h"
#include "lib/passes/lower_complex.h"
#include "runtime/machine.h"
#include "tensorjit/config.h"

namespace tj::sched {
namespace {

using ir::Node;
using ir::NodePtr;
using ir::Op;
using kir::Slot;

// How the kernel's iteration index i reaches a node's elements:
// node index k = offset[k] + sum_d coef[k][d] * i_d.
// Below a Gather, one more column than the domain's holds the gathered index:
// i_cols-1 is the kernel value `data` (checked against `bound`).
struct Access {
  std::vector<int64_t> offset;
  std::vector<std::vector<int64_t>> coef;
  size_t cols = 0; // number of domain dims (and the gathered index's column)
  int32_t data = -1, bound = -1;

  // The rows of an n-dim node indexed by the first n of `cols` domain dims.
  static Access identity(size_t n, size_t cols) {
    Access a{std::vector<int64_t>(n, 0),
             std::vector<std::vector<int64_t>>(n, std::vector<int64_t>(cols, 0)), cols};
    for (size_t k = 0; k < n; ++k)
      a.coef[k][k] = 1;
    return a;
  }
  // Affine map of a leaf's view: element offset and per-domain-dim strides.
  std::pair<int64_t, std::vector<int64_t>> through(const ir::View& v, size_t ndomain) const {
    int64_t base = v.offset;
    std::vector<int64_t> strides(ndomain, 0);
    for (size_t k = 0; k < offset.size(); ++k) {
      base += v.strides[k] * offset[k];
      for (size_t d = 0; d < ndomain; ++d)
        strides[d] += v.strides[k] * coef[k][d];
    }
    return {base, strides};
  }
  bool constant_row(size_t k) const {
    for (int64_t c : coef[k])
      if (c) return false;
    return true;
  }
  // The element stride that the gathered index's column has through a leaf's view (0 without one).
  int64_t data_stride(const ir::View& v, size_t ndomain) const {
    int64_t s = 0;
    if (data >= 0)
      for (size_t k = 0; k < offset.size(); ++k)
        s += v.strides[k] * coef[k][ndomain];
    return s;
  }
  bool operator<(const Access& o) const {
    return std::tie(offset, coef, data, bound) < std::tie(o.offset, o.coef, o.data, o.bound);
  }
};

constexpr size_t kMaxOutputsPerKernel = 16;

// Reductions over rows at most this long (elements) are computed by the kernel that uses them,
// with several loops over each row: a row softmax's max, sum and quotient, or a variance's mean
// and sum of squares. The row stays in the core's cache (64 KiB of float32) between the loops,
// so memory is read once. Longer rows take a kernel per reduction, whose loops stream memory.
constexpr int64_t kRowLocal = 16384;

// Outputs written around the cache are so in runs of at least this many bytes: each run starts
// with a few cached stores up to a 64-byte boundary.
constexpr int64_t kPage = 4096;

// Raised while lowering when a node must be computed into memory first.
struct NeedsRealize {
  NodePtr node;
  const char* why; // shown by the schedule dump
};
// Raised when a kernel with several loops over each row would not read its rows as one run of
// memory (a slot whose row dims do not merge, or that is strided along the row: a transposed
// input, whose column every loop would walk again): the kernel is planned again with one loop.
struct NotRowLocal {};

// Why a node is computed by a kernel of its own.
constexpr const char* kWhyReduceLoop =
    "its reduced dims do not form one loop over memory (a permuted or broadcast source)";
constexpr const char* kWhyNestedReduce = "a reduction read inside another reduction's loop";
constexpr const char* kWhyReduceIndex =
    "a reduction read at other elements than its own outputs (broadcast or reshaped)";
constexpr const char* kWhyReshape = "a reshape across dims that no affine index can follow";
constexpr const char* kWhyStrided = "a strided view that no affine index can follow";
constexpr const char* kWhyGatherGather = "a gather read through another gather's index";
constexpr const char* kWhyScan =
    "a scan read other than along the rows of a kernel over its dim (reduced, sliced or reshaped)";
constexpr const char* kWhyOverlap =
    "an in-place write whose value reads the destination elsewhere than where it writes";

// Maps a node's index to its Reshape source's index, if that map is affine.
std::optional<Access> reshape_access(const Node& n, const Access& a) {
  const ir::Shape& src = n.src[0]->shape;
  const ir::Shape& dst = n.shape;
  size_t nd = a.cols;
  Access out{std::vector<int64_t>(src.size(), 0),
             std::vector<std::vector<int64_t>>(src.size(), std::vector<int64_t>(nd, 0)), nd, a.data,
             a.bound};
  std::vector<size_t> sd, dd; // non-singleton dims
  for (size_t i = 0; i < src.size(); ++i)
    if (src[i] != 1) sd.push_back(i);
  for (size_t j = 0; j < dst.size(); ++j)
    if (dst[j] != 1) dd.push_back(j);
  size_t i = 0, j = 0;
  while (i < sd.size() && j < dd.size()) {
    size_t i0 = i, j0 = j;
    int64_t ps = src[sd[i++]], pd = dst[dd[j++]];
    while (ps != pd) {
      if (ps < pd && i < sd.size())
        ps *= src[sd[i++]];
      else if (pd < ps && j < dd.size())
        pd *= dst[dd[j++]];
      else
        return std::nullopt;
    }
    // Linear index within the group, from the node's dims (row-major).
    std::vector<int64_t> lin_coef(nd, 0);
    int64_t lin_off = 0, mult = 1;
    bool constant = true;
    for (size_t q = j; q-- > j0;) {
      size_t k = dd[q];
      lin_off += a.offset[k] * mult;
      for (size_t d = 0; d < nd; ++d)
        lin_coef[d] += a.coef[k][d] * mult;
      constant &= a.constant_row(k);
      mult *= dst[k];
    }
    if (i - i0 == 1) {
      out.offset[sd[i0]] = lin_off;
      out.coef[sd[i0]] = lin_coef;
    } else if (constant) {
      for (size_t q = i; q-- > i0;) {
        out.offset[sd[q]] = lin_off % src[sd[q]];
        lin_off /= src[sd[q]];
      }
    } else {
      return std::nullopt;
    }
  }
  if (i != sd.size() || j != dd.size()) return std::nullopt;
  return out;
}

uint64_t param_bits(const Scalar& v, DType t) {
  if (t == kFloat64) return std::bit_cast<uint64_t>(v.to_double());
  if (t == kFloat32) return std::bit_cast<uint32_t>(static_cast<float>(v.to_double()));
  if (t == kBool) return v.to_bool();
  int64_t i =
      v.is_floating_point() ? ir::float_to_int(v.to_double(), t) : ir::wrap_to_dtype(v.to_int(), t);
  return static_cast<uint64_t>(i);
}

bool is_half(DType t) { return t == kFloat16 || t == kBFloat16; }

// The first reduction a kernel computing `n` might fuse: reached through
// elementwise and movement ops, with as many outputs as the kernel.
const Node* find_reduce(const NodePtr& in, int64_t outputs, std::unordered_set<const Node*>& seen) {
  NodePtr n = ir::resolve(in);
  if (!n->loops || !seen.insert(n.get()).second) return nullptr;
  if (ir::is_reduce(n->op)) return n->numel() == outputs ? n.get() : nullptr;
  for (const auto& s : n->src)
    if (const Node* r = find_reduce(s, outputs, seen)) return r;
  return nullptr;
}

std::vector<int64_t> reduced_sizes(const Node& r) {
  std::vector<int64_t> sizes;
  for (int64_t ax : r.args)
    sizes.push_back(r.src[0]->shape[ax]);
  return sizes;
}

// Whether reduction `r` runs over short trailing dims of its input: then a kernel may loop over
// its rows several times (kRowLocal), on the CPU and on a GPU alike.
bool row_local(const Node& r) {
  const size_t nd = r.src[0]->shape.size(), m = r.args.size();
  int64_t len = 1;
  for (size_t k = 0; k < m; ++k) {
    if (r.args[k] != static_cast<int64_t>(nd - m + k)) return false;
    len *= r.src[0]->shape[r.args[k]];
  }
  return len <= kRowLocal;
}

// A row-local reduction of an input of shape `shape`, reached through elementwise and movement
// ops: the kernel computing elements of `shape` from it ("x - max(x)") can loop over each row.
const Node* find_row_reduce(const NodePtr& in, const ir::Shape& shape,
                            std::unordered_set<const Node*>& seen) {
  NodePtr n = ir::resolve(in);
  if (!n->loops || !seen.insert(n.get()).second) return nullptr;
  if (ir::is_reduce(n->op)) return n->src[0]->shape == shape && row_local(*n) ? n.get() : nullptr;
  for (const auto& s : n->src)
    if (const Node* r = find_row_reduce(s, shape, seen)) return r;
  return nullptr;
}

// A scan reached through elementwise ops, permutations, broadcasts and gathers' indices, whose
// scanned dim is one of `shape`'s dims: a kernel computing elements of `shape` from it
// ("cumsum(x) / n") can loop over that dim in order. Returns the scan and that dim.
std::optional<std::pair<const Node*, size_t>> find_scan(const NodePtr& in, std::vector<size_t> dims,
                                                        std::unordered_set<const Node*>& seen) {
  NodePtr n = ir::resolve(in);
  if (!n->loops || !seen.insert(n.get()).second) return std::nullopt;
  if (ir::is_scan(n->op)) return std::pair{n.get(), dims[static_cast<size_t>(n->args[0])]};
  if (n->op == Op::Permute) {
    std::vector<size_t> below(dims.size());
    for (size_t i = 0; i < dims.size(); ++i)
      below[static_cast<size_t>(n->args[i])] = dims[i];
    return find_scan(n->src[0], std::move(below), seen);
  }
  if (n->op == Op::Gather) return find_scan(n->src[1], std::move(dims), seen); // the index
  if (!ir::is_alu(n->op) && n->op != Op::Expand) return std::nullopt;
  for (const auto& s : n->src)
    if (auto r = find_scan(s, dims, seen)) return r;
  return std::nullopt;
}

class KernelBuilder {
public:
  // Moved, never copied: the memo's keys point into accesses_.
  KernelBuilder(KernelBuilder&&) = default;
  KernelBuilder(const KernelBuilder&) = delete;
  // Iterates over `out` and, when `reduce` is given, over its reduced axes.
  // With `local`, reductions read inside its loop are computed in the kernel too when the rows
  // are row-local (a variance's mean).
  KernelBuilder(const ir::Shape& out, const Node* reduce, bool local)
      : nout_(out.size()), domain_(out) {
    if (reduce) {
      red_sizes_ = reduced_sizes(*reduce);
      domain_.insert(domain_.end(), red_sizes_.begin(), red_sizes_.end());
      nest_ = local && row_local(*reduce);
    }
  }
  // Iterates over `shape` with its last dims as rows, computing the row-local reductions of
  // `row_reduce`'s size that it reads (softmax).
  KernelBuilder(const ir::Shape& shape, const Node& row_reduce)
      : nout_(shape.size() - row_reduce.args.size()), domain_(shape),
        red_sizes_(reduced_sizes(row_reduce)), nest_(true), rows_(true) {}

  // Iterates over `shape` with dim `scan_dim` as rows, in order: the scans along it that it
  // reads run in its store loop (cumsum). The other dims keep their order.
  KernelBuilder(const ir::Shape& shape, size_t scan_dim)
      : nout_(shape.size() - 1), red_sizes_{shape[scan_dim]}, rows_(true), scans_(true) {
    for (size_t d = 0; d < shape.size(); ++d)
      if (d != scan_dim) order_.push_back(d);
    order_.push_back(scan_dim);
    for (size_t d : order_)
      domain_.push_back(shape[d]);
  }

  // The kernel's outputs: element k of the roots' shape at domain dim order_[k]'s place.
  Access root_access(size_t ndim) const {
    if (order_.empty()) return Access::identity(ndim, domain_.size());
    Access a = Access::identity(ndim, domain_.size());
    for (size_t c = 0; c < order_.size(); ++c) {
      std::fill(a.coef[order_[c]].begin(), a.coef[order_[c]].end(), 0);
      a.coef[order_[c]][c] = 1;
    }
    return a;
  }

  int32_t lower(const NodePtr& in, const Access& a) {
    NodePtr n = ir::resolve(in);
    // A kernel reads its nodes through few distinct accesses: each is copied once, and the memo
    // is keyed by its copy's address (copying the access per node was a fifth of scheduling an
    // elementwise chain).
    const std::pair<const Node*, const Access*> key{n.get(), &*accesses_.insert(a).first};
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    int32_t v = lower_uncached(n, a);
    memo_.emplace(key, v);
    keep_.push_back(n);
    return v;
  }

  // Stores `value` to `storage` through `view` (default: contiguous from 0).
  void store(const NodePtr& root, int32_t value, std::shared_ptr<rt::Storage> storage,
             std::optional<ir::View> view = std::nullopt) {
    ir::View v = view ? *view : ir::View{ir::contiguous_strides(root->shape), 0};
    if (!order_.empty()) {
      std::vector<int64_t> in_order;
      for (size_t d : order_)
        in_order.push_back(v.strides[d]);
      v.strides = std::move(in_order);
    }
    v.strides.resize(domain_.size(), 0);
    int32_t s = add_slot(Slot::Role::Output, root->dtype, storage, v.offset, v.strides);
    k_.stores.push_back({s, convert(value, root->dtype)});
  }

  // Stores `value` as `scatter` says, into `storage` through `view` (of shape scatter.base).
  void scatter_store(const NodePtr& root, int32_t value, const Scatter& scatter,
                     std::shared_ptr<rt::Storage> storage, const ir::View& view) {
    const auto dim = static_cast<size_t>(scatter.dim);
    std::vector<int64_t> strides = view.strides;
    strides[dim] = 0; // the index places the element along dim
    strides.resize(domain_.size(), 0);
    int32_t s = add_slot(Slot::Role::Output, root->dtype, std::move(storage), view.offset, strides);
    kir::Store st{s, convert(value, root->dtype)};
    st.at = convert(lower(scatter.index, root_access(domain_.size())), kInt64);
    st.stride = int_param(view.strides[dim]);
    st.bound = int_param(scatter.base[dim]);
    st.add = scatter.accumulate;
    k_.stores.push_back(st);
  }

  // Marks each slot that lies one element after an earlier one like it (kir::Slot::next_to): the
  // imaginary parts of complex numbers whose real parts the kernel also reads, or also writes.
  void pair_slots() {
    auto placed = [&](size_t x) { return k_.placed_by_data(static_cast<int32_t>(x)); };
    for (size_t s = 0; s < slots_.size(); ++s) {
      const Slot& slot = k_.slots[s];
      if (slot.stride != kir::StrideKind::Pairs || slot.role == Slot::Role::Index || placed(s))
        continue;
      for (size_t o = 0; o < s; ++o)
        if (k_.slots[o].role == slot.role && k_.slots[o].dtype == slot.dtype &&
            k_.slots[o].stride == slot.stride && k_.slots[o].rstride == slot.rstride &&
            k_.slots[o].next_to < 0 && slots_[o].storage &&
            slots_[o].storage == slots_[s].storage && slots_[o].strides == slots_[s].strides &&
            slots_[o].rstride == slots_[s].rstride && slots_[s].base == slots_[o].base + 1 &&
            !placed(o)) {
          k_.slots[s].next_to = static_cast<int32_t>(o);
          break;
        }
    }
  }

  // Whether a store into `s` could overwrite an element before the kernel reads it.
  bool reads_other_elements_of(const rt::Storage* s) const {
    const rt::SlotBinding* out = nullptr;
    for (size_t i = 0; i < slots_.size(); ++i)
      if (k_.slots[i].role == Slot::Role::Output && slots_[i].storage.get() == s) out = &slots_[i];
    auto gathered = [&](size_t slot) {
      return std::any_of(k_.values.begin(), k_.values.end(), [&](const kir::Value& v) {
        return v.op == Op::Gather && v.slot == static_cast<int32_t>(slot);
      });
    };
    for (size_t i = 0; i < slots_.size(); ++i)
      if (k_.slots[i].role == Slot::Role::Input && slots_[i].storage.get() == s &&
          (!red_sizes_.empty() || slots_[i].base != out->base ||
           slots_[i].strides != out->strides || gathered(i)))
        return true;
    return false;
  }

  // Every node lowered so far (and leaves made for views of memory).
  const std::vector<NodePtr>& lowered() const { return keep_; }

  rt::Launch finish(std::string name) {
    k_.name = std::move(name);
    rt::Launch l;
    // Merge dims that every slot walks contiguously, and drop singleton dims,
    // so rows are as long as possible; output and reduction dims separately.
    std::vector<int64_t> dom, red;
    std::vector<std::vector<int64_t>> st(slots_.size()), rst(slots_.size());
    auto collapse = [&](size_t from, size_t to, std::vector<int64_t>& sizes,
                        std::vector<std::vector<int64_t>>& out) {
      for (size_t d = from; d < to; ++d) {
        if (domain_[d] == 1) continue;
        bool merge = !sizes.empty();
        for (size_t s = 0; s < slots_.size() && merge; ++s)
          merge = out[s].back() == slots_[s].strides[d] * domain_[d];
        if (merge) {
          sizes.back() *= domain_[d];
          for (size_t s = 0; s < slots_.size(); ++s)
            out[s].back() = slots_[s].strides[d];
        } else {
          sizes.push_back(domain_[d]);
          for (size_t s = 0; s < slots_.size(); ++s)
            out[s].push_back(slots_[s].strides[d]);
        }
      }
    };
    collapse(0, nout_, dom, st);
    collapse(nout_, domain_.size(), red, rst);
    // A kernel that scans has no other plan: its rows may be strided (a cumsum down columns).
    const bool several_loops = rows_ || nested_;
    if (several_loops && !scans_) {
      bool runs = red.size() <= 1;
      for (size_t s = 0; s < slots_.size() && runs && !red.empty(); ++s)
        runs = k_.slots[s].role == Slot::Role::Index || std::abs(rst[s].back()) <= 1;
      if (!runs) throw NotRowLocal{};
    }
    // One loop over j: reduced dims that do not merge (a permuted or broadcast
    // source) are made contiguous in memory first.
    if (red.size() > 1) throw NeedsRealize{unmerged_reduction_input(), kWhyReduceLoop};
    if (dom.empty()) {
      dom.push_back(1);
      for (auto& s : st)
        s.push_back(0);
    }
    auto kind = [](int64_t stride) {
      return stride == 1   ? kir::StrideKind::Contiguous
             : stride == 0 ? kir::StrideKind::Broadcast
                           : kir::StrideKind::Strided;
    };
    for (size_t s = 0; s < slots_.size(); ++s) {
      k_.slots[s].stride = st[s].back() == 2 ? kir::StrideKind::Pairs : kind(st[s].back());
      slots_[s].strides = st[s];
      slots_[s].rstride = red.empty() ? 0 : rst[s].back();
      k_.slots[s].rstride = kind(slots_[s].rstride);
    }
    pair_slots();
    stream_large_outputs(dom, red.empty() ? 1 : red[0], !k_.has_row_loops(),
                         rows_ && red.size() == 1 &&
                             (red[0] <= kir::kMaxStreamRow || !k_.has_reduction()));
    kir::verify(k_);
    l.kernel = std::move(k_);
    l.domain = std::move(dom);
    l.r = red.empty() ? 1 : red[0];
    l.slots = std::move(slots_);
    l.params = std::move(params_);
    return l;
  }

private:
  // Marks the outputs of a CPU kernel that are larger than the cache (rt::stream_store_bytes)
  // and written in contiguous runs of at least a page: they are written around it. The runs are
  // the element loop of an elementwise kernel, or rows that the store loop of a kernel with
  // several loops over a row writes (the row output of a softmax). One output at most. Not an
  // output the kernel also reads (an in-place write into existing memory: a slice's add_, a
  // tensor whose memory is shared): its lines are in the cache when written, and writing them
  // around it ran 2.9x slower (add_ on 4096 x 4096 float32, 1.4 -> 4.1 ms).
  void stream_large_outputs(const std::vector<int64_t>& dom, int64_t r, bool elementwise,
                            bool rows) {
    const int64_t from = rt::stream_store_bytes();
    if ((!elementwise && !rows) || from < 0 || k_.scatters()) return; // scatters run in order
    int64_t n = r;
    for (int64_t d : dom)
      n *= d;
    bool marked = false; // the backend streams one output per kernel
    for (size_t s = 0; s < slots_.size(); ++s) {
      kir::Slot& slot = k_.slots[s];
      const auto item = static_cast<int64_t>(itemsize(slot.dtype));
      // What the element loop writes without a gap: its row, and the rows that follow on in
      // memory (a launch run row by row, whose rows are adjacent: gathered rows).
      int64_t run = dom.empty() ? 1 : dom.back();
      for (size_t d = dom.empty() ? 0 : dom.size() - 1;
           elementwise && d-- > 0 && slots_[s].strides[d] == run;)
        run *= dom[d];
      const bool runs = elementwise
                            ? slot.stride == kir::StrideKind::Contiguous && run * item >= kPage
                            : slot.rstride == kir::StrideKind::Contiguous && r * item >= kPage;
      const bool read_too = std::any_of(slots_.begin(), slots_.end(), [&](const auto& other) {
        return &other != &slots_[s] && other.storage == slots_[s].storage;
      });
      // Memory not aligned to its element size would take the cached path throughout.
      slot.stream = !marked && slot.role == Slot::Role::Output && runs && !read_too &&
                    slots_[s].storage->device().is_cpu() && n * item >= from &&
                    reinterpret_cast<uintptr_t>(slots_[s].storage->data()) % item == 0;
      marked |= slot.stream;
    }
  }

  // A reduction is computed in this kernel only once per output element: at
  // the identity access, over the kernel's reduced sizes.
  bool fusable_reduce(const Node& n, const Access& a) const {
    if (red_sizes_.empty() || reduced_sizes(n) != red_sizes_ || a.data >= 0) return false;
    // Each output dim of the kernel must index exactly one kept dim of the
    // reduction (and every other row be constant zero), so that it is
    // computed once per output element: a permutation, or a reshape that
    // adds or drops size-1 dims.
    // (Domain dims of size 1 index nothing: their coefficients do not matter.)
    std::vector<bool> used(nout_, false);
    for (size_t k = 0; k < n.shape.size(); ++k) {
      if (a.offset[k] != 0) return false;
      int found = -1;
      for (size_t d = 0; d < a.cols; ++d) {
        if (a.coef[k][d] == 0 || domain_[d] == 1) continue;
        if (a.coef[k][d] != 1 || found >= 0 || d >= nout_ || used[d] || domain_[d] != n.shape[k])
          return false;
        found = static_cast<int>(d);
      }
      if (found >= 0)
        used[found] = true;
      else if (n.shape[k] != 1)
        return false;
    }
    for (size_t d = 0; d < nout_; ++d)
      if (!used[d] && domain_[d] != 1) return false;
    return true;
  }

  int32_t lower_reduce(const NodePtr& n, const Access& a) {
    // A reduction needed inside another's loop (var's mean) is computed first, unless the rows
    // are short enough to be looped over again.
    if (inside_reduce_ && !nest_) throw NeedsRealize{n, kWhyNestedReduce};
    if (!fusable_reduce(*n, a))
      throw NeedsRealize{n, inside_reduce_ ? kWhyNestedReduce : kWhyReduceIndex};
    nested_ |= inside_reduce_ > 0;
    reduce_srcs_.push_back(n->src[0]);
    Access src = a;
    for (size_t m = 0; m < n->args.size(); ++m) {
      size_t axis = static_cast<size_t>(n->args[m]);
      std::fill(src.coef[axis].begin(), src.coef[axis].end(), 0);
      src.coef[axis][nout_ + m] = 1;
    }
    ++inside_reduce_;
    const DType acc = is_half(n->dtype) ? kFloat32 : n->dtype; // as every ALU op
    int32_t v = convert(lower(n->src[0], src), acc);
    --inside_reduce_;
    return convert(emit({n->op, acc, {v, -1, -1}, -1, 0}), n->dtype);
  }

  // A scan is computed by the store loop of a kernel over rows, when each output element reads
  // it at its own element along the row (j) and the scan runs along the row from its start.
  int32_t lower_scan(const NodePtr& n, const Access& a) {
    const auto axis = static_cast<size_t>(n->args[0]);
    const size_t j = nout_;
    // The scanned dim is j exactly, and no other dim moves along j.
    bool along_rows =
        rows_ && !inside_reduce_ && a.data < 0 && domain_.size() == j + 1 && a.offset[axis] == 0;
    for (size_t k = 0; k < n->shape.size() && along_rows; ++k)
      for (size_t d = 0; d < a.cols && along_rows; ++d)
        if (domain_[d] != 1 && (k == axis || d == j))
          along_rows = a.coef[k][d] == (k == axis && d == j ? 1 : 0);
    if (!along_rows) throw NeedsRealize{n, kWhyScan};
    const DType acc = is_half(n->dtype) ? kFloat32 : n->dtype; // as every ALU op
    int32_t v = convert(lower(n->src[0], a), acc);
    if (domain_[j] == 1) { // one element: no loop, the operand from the scan's start
      NodePtr start = fe::constant(ir::combine_op(n->op) == Op::Add ? Scalar(0) : Scalar(1), acc);
      keep_.push_back(start);
      if (ir::combine_op(n->op) == Op::Add || ir::combine_op(n->op) == Op::Mul)
        v = alu(ir::combine_op(n->op), acc, {lower(start, a), v});
      return convert(v, n->dtype);
    }
    return convert(emit({n->op, acc, {v, -1, -1}, -1, 0}), n->dtype);
  }

  int32_t lower_standing_for(const NodePtr& n, const NodePtr& leaf, const Access& a) {
    NodePtr outer = std::exchange(leaf_origin_, n);
    int32_t v = lower(leaf, a);
    leaf_origin_ = std::move(outer);
    return v;
  }

  int32_t lower_uncached(const NodePtr& n, const Access& a) {
    switch (ir::category(n->op)) {
    case ir::OpCategory::Leaf:
      return lower_leaf(n, a);
    case ir::OpCategory::Movement:
      // A leaf made here for n stands for n: what to compute if its slot must be in memory.
      if (NodePtr leaf = reshaped_leaf(n)) return lower_standing_for(n, leaf, a);
      if (NodePtr leaf = strided_leaf(n)) return lower_standing_for(n, leaf, a);
      return lower(n->src[0], move_access(n, a));
    case ir::OpCategory::Cast:
      return convert(lower(n->src[0], a), n->dtype);
    case ir::OpCategory::Reduce:
      return lower_reduce(n, a);
    case ir::OpCategory::Scan:
      return lower_scan(n, a);
    case ir::OpCategory::Gather:
      return lower_gather(n, a);
    case ir::OpCategory::Scatter:
    case ir::OpCategory::Mutation:
    case ir::OpCategory::Call:
      throw std::logic_error("scheduler: writes and calls are performed before scheduling");
    case ir::OpCategory::Complex:
      throw std::logic_error("scheduler: complex values are lowered to pairs before scheduling");
    default: {
      std::vector<int32_t> src;
      for (const auto& s : n->src)
        src.push_back(lower(s, a));
      return alu(n->op, n->dtype, src);
    }
    }
  }

  // The source read at the index's values along the gathered dim: an access with one more column.
  int32_t lower_gather(const NodePtr& n, const Access& a) {
    if (a.data >= 0) throw NeedsRealize{n, kWhyGatherGather}; // one gathered column per access
    const size_t dim = static_cast<size_t>(n->args[0]);
    Access b = a;
    b.data = convert(lower(n->src[1], a), kInt64);
    b.bound = int_param(n->src[0]->shape[dim]);
    b.cols = a.cols + 1;
    for (auto& row : b.coef)
      row.push_back(0);
    b.offset[dim] = 0;
    std::fill(b.coef[dim].begin(), b.coef[dim].end(), 0);
    b.coef[dim][a.cols] = 1;
    return lower(n->src[0], b);
  }

  // A reshape of memory (or of an index stream) is a new view of it when the
  // strides allow; otherwise the source is made contiguous first, which does.
  NodePtr reshaped_leaf(const NodePtr& n) {
    if (n->op != Op::Reshape) return nullptr;
    NodePtr src = ir::resolve(n->src[0]);
    if (!ir::has_view(src->op)) return nullptr;
    auto st = ir::view_strides(src->shape, src->view.strides, n->shape);
    if (!st) {
      if (ir::view_strides(src->shape, ir::contiguous_strides(src->shape), n->shape))
        throw NeedsRealize{n->src[0], kWhyReshape};
      return nullptr;
    }
    NodePtr leaf = ir::make_node(src->op, src->dtype, n->shape, {}, src->args, src->value,
                                 src->storage, ir::View{*st, src->view.offset}, src->device);
    keep_.push_back(leaf);
    return leaf;
  }

  // A strided view of memory (or of an index stream) is a view of it.
  NodePtr strided_leaf(const NodePtr& n) {
    if (n->op != Op::AsStrided) return nullptr;
    NodePtr src = ir::resolve(n->src[0]);
    if (!ir::has_view(src->op)) return nullptr;
    std::vector<int64_t> strides(n->args.begin(), n->args.end() - 1);
    auto v = ir::compose_strided(src->shape, src->view, n->shape, strides, n->args.back());
    if (!v) throw NeedsRealize{n->src[0], kWhyStrided};
    NodePtr leaf = ir::make_node(src->op, src->dtype, n->shape, {}, src->args, src->value,
                                 src->storage, *v, src->device);
    keep_.push_back(leaf);
    return leaf;
  }

  Access move_access(const NodePtr& n, const Access& a) {
    const Node& src = *n->src[0];
    switch (n->op) {
    case Op::Expand: {
      Access out = a;
      for (size_t k = 0; k < src.shape.size(); ++k)
        if (src.shape[k] == 1 && n->shape[k] != 1) {
          out.offset[k] = 0;
          std::fill(out.coef[k].begin(), out.coef[k].end(), 0);
        }
      return out;
    }
    case Op::Permute: {
      Access out = a;
      for (size_t i = 0; i < n->args.size(); ++i) {
        out.offset[n->args[i]] = a.offset[i];
        out.coef[n->args[i]] = a.coef[i];
      }
      return out;
    }
    case Op::Slice: {
      Access out = a;
      for (size_t k = 0; k < out.offset.size(); ++k) {
        int64_t start = n->args[2 * k], step = n->args[2 * k + 1];
        out.offset[k] = start + step * a.offset[k];
        for (auto& c : out.coef[k])
          c *= step;
      }
      return out;
    }
    case Op::Reshape:
      if (auto r = reshape_access(*n, a)) return *r;
      throw NeedsRealize{n->src[0], kWhyReshape};
    case Op::AsStrided: {
      std::vector<int64_t> strides(n->args.begin(), n->args.end() - 1);
      auto m = ir::strided_map(src.shape, n->shape, strides, n->args.back());
      if (!m) throw NeedsRealize{n->src[0], kWhyStrided};
      Access out{
          std::vector<int64_t>(src.shape.size(), 0),
          std::vector<std::vector<int64_t>>(src.shape.size(), std::vector<int64_t>(a.cols, 0)),
          a.cols, a.data, a.bound};
      for (size_t b = 0; b < src.shape.size(); ++b) {
        out.offset[b] = m->offset[b];
        for (size_t k = 0; k < n->shape.size(); ++k) {
          out.offset[b] += m->coef[b][k] * a.offset[k];
          for (size_t d = 0; d < a.cols; ++d)
            out.coef[b][d] += m->coef[b][k] * a.coef[k][d];
        }
      }
      return out;
    }
    default:
      throw std::logic_error("scheduler: unknown movement op");
    }
  }

  int32_t lower_leaf(const NodePtr& n, const Access& a) {
    switch (n->op) {
    case Op::Const: {
      DType pt = is_half(n->dtype) ? kFloat32 : n->dtype;
      auto [it, fresh] = param_memo_.try_emplace(n.get(), 0);
      if (fresh) {
        it->second = static_cast<int32_t>(k_.params.size());
        k_.params.push_back(pt);
        params_.push_back(param_bits(n->value, pt));
      }
      int32_t p = emit({Op::Const, pt, {-1, -1, -1}, -1, 0, it->second});
      return convert(p, n->dtype);
    }
    case Op::Buffer: {
      auto [base, strides] = a.through(n->view, domain_.size());
      int32_t s = add_slot(Slot::Role::Input, n->dtype, n->storage, base, strides,
                           leaf_origin_ ? leaf_origin_ : n);
      return gathered(a, n->view, s, n->dtype, {Op::Buffer, n->dtype, {-1, -1, -1}, s, 0});
    }
    case Op::Iota:
      return index_value(n, a);
    case Op::Philox: {
      int32_t idx = index_value(n, a);
      int32_t off = int_param(static_cast<int64_t>(n->args[1]));
      int32_t key = int_param(static_cast<int64_t>(n->args[0]));
      return emit({Op::Philox, kInt64, {idx, off, key}, -1, n->args[2]});
    }
    default:
      throw std::logic_error("scheduler: unknown leaf");
    }
  }

  int32_t index_value(const NodePtr& n, const Access& a) {
    auto [base, strides] = a.through(n->view, domain_.size());
    int32_t s = add_slot(Slot::Role::Index, kInt64, nullptr, base, strides);
    return gathered(a, n->view, s, kInt64, {Op::Iota, kInt64, {-1, -1, -1}, s, 0});
  }

  // Slot s's element through `view`: `plain` where the access gathers nothing along it, else a
  // Gather value at the gathered index.
  int32_t gathered(const Access& a, const ir::View& view, int32_t s, DType t, kir::Value plain) {
    const int64_t stride = a.data_stride(view, domain_.size());
    if (stride == 0) return emit(plain);
    return emit({Op::Gather, t, {a.data, int_param(stride), a.bound}, s, 0});
  }

  int32_t int_param(int64_t v) {
    auto [it, fresh] = int_params_.try_emplace(v, 0);
    if (fresh) {
      it->second = static_cast<int32_t>(k_.params.size());
      k_.params.push_back(kInt64);
      params_.push_back(static_cast<uint64_t>(v));
    }
    return emit({Op::Const, kInt64, {-1, -1, -1}, -1, 0, it->second});
  }

  // `leaf`: what an input slot reads (the view a Buffer leaf was made for, if it was).
  int32_t add_slot(Slot::Role role, DType t, std::shared_ptr<rt::Storage> storage, int64_t base,
                   std::vector<int64_t> strides, NodePtr leaf = nullptr) {
    if (role != Slot::Role::Output) {
      for (size_t s = 0; s < slots_.size(); ++s)
        if (k_.slots[s].role == role && k_.slots[s].dtype == t && slots_[s].storage == storage &&
            slots_[s].base == base && slots_[s].strides == strides)
          return static_cast<int32_t>(s);
    }
    k_.slots.push_back({role, t, kir::StrideKind::Strided});
    slots_.push_back({std::move(storage), base, std::move(strides)});
    slot_leaf_.push_back(std::move(leaf));
    return static_cast<int32_t>(k_.slots.size() - 1);
  }

  // What to compute into memory when the reduced dims do not merge into one loop over j: the
  // Buffer read by a slot that walks them in more than one run, unless it is row-major already;
  // else a reduction's source not yet computed into row-major memory (several reductions of
  // different sources may share the kernel: each is computed at most once).
  NodePtr unmerged_reduction_input() const {
    auto row_major = [](const NodePtr& in) {
      NodePtr n = ir::resolve(in);
      return n->op == Op::Buffer && n->view.strides == ir::contiguous_strides(n->shape);
    };
    for (size_t s = 0; s < slots_.size(); ++s) {
      bool first = true, one_run = true;
      int64_t run = 0; // the stride of the run so far
      for (size_t d = nout_; d < domain_.size() && one_run; ++d) {
        if (domain_[d] == 1) continue;
        one_run = first || run == slots_[s].strides[d] * domain_[d];
        run = slots_[s].strides[d];
        first = false;
      }
      const NodePtr& leaf = slot_leaf_[s];
      if (!one_run && leaf && !row_major(leaf)) return leaf;
    }
    for (const NodePtr& src : reduce_srcs_)
      if (!row_major(src)) return src;
    throw std::logic_error("scheduler: the reduced dims of a kernel do not merge into one loop, "
                           "though every input it reduces is in row-major memory");
  }

  int32_t emit(kir::Value v) {
    auto [it, fresh] = cse_.try_emplace(key_of(v), 0);
    if (fresh) {
      it->second = static_cast<int32_t>(k_.values.size());
      k_.values.push_back(v);
    }
    return it->second;
  }

  using ValueKey = std::tuple<int, int, int32_t, int32_t, int32_t, int32_t, int64_t, int32_t>;
  static ValueKey key_of(const kir::Value& v) {
    return {int(v.op), int(v.dtype), v.src[0], v.src[1], v.src[2], v.slot, v.imm, v.param};
  }

  DType dtype_of(int32_t v) const { return k_.values[v].dtype; }

  // A Cast, going through float32 for the 16-bit float types.
  int32_t convert(int32_t v, DType to) {
    DType from = dtype_of(v);
    if (from == to) return v;
    if ((is_half(from) && to != kFloat32) || (is_half(to) && from != kFloat32 && from != kFloat64))
      v = convert(v, kFloat32);
    if (dtype_of(v) == to) return v;
    return emit({Op::Cast, to, {v, -1, -1}, -1, 0});
  }

  // An ALU op; 16-bit floats compute in float32 and are rounded back.
  int32_t alu(Op op, DType out, std::vector<int32_t> src) {
    for (int32_t& s : src)
      if (is_half(dtype_of(s))) s = convert(s, kFloat32);
    DType compute = is_half(out) ? kFloat32 : out;
    kir::Value v{op, compute, {-1, -1, -1}, -1, 0};
    for (size_t i = 0; i < src.size(); ++i)
      v.src[i] = src[i];
    return convert(emit(v), out);
  }

  size_t nout_;
  ir::Shape domain_; // output dims, then reduced dims
  std::vector<int64_t> red_sizes_;
  std::vector<NodePtr> reduce_srcs_; // of every reduction lowered, in order
  bool nest_ = false;                // reductions may be computed inside another's loop
  bool rows_ = false;                // a kernel over rows: its outputs move along j
  bool nested_ = false;              // a reduction was computed inside another's loop
  bool scans_ = false;               // a kernel over rows in order, for scans along them
  std::vector<size_t> order_;        // of a kernel that scans: the roots' dims in domain order
  int inside_reduce_ = 0;
  kir::Kernel k_;
  std::vector<rt::SlotBinding> slots_;
  std::vector<NodePtr> slot_leaf_; // parallel to slots_: the node each input slot's leaf reads
  NodePtr leaf_origin_;            // the node a leaf being lowered was made for, if any
  std::vector<uint64_t> params_;
  struct PairHash {
    size_t operator()(const std::pair<const Node*, const Access*>& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  std::set<Access> accesses_; // node-based: the memo's keys point into it
  std::unordered_map<std::pair<const Node*, const Access*>, int32_t, PairHash> memo_;
  std::vector<NodePtr> keep_; // keeps memo keys alive while building
  std::unordered_map<const Node*, int32_t> param_memo_;
  std::map<int64_t, int32_t> int_params_;
  struct ValueKeyHash {
    size_t operator()(const ValueKey& k) const {
      const auto& [op, dtype, s0, s1, s2, slot, imm, param] = k;
      size_t h = size_t(op) * 131 + size_t(dtype);
      for (int64_t x : {int64_t(s0), int64_t(s1), int64_t(s2), int64_t(slot), imm, int64_t(param)})
        h = h * 0x9e3779b97f4a7c15ULL + size_t(x);
      return h ^ (h >> 29);
    }
  };
  std::unordered_map<ValueKey, int32_t, ValueKeyHash> cse_;
};

// The builder of a kernel computing `roots`, all of shape `shape`: over the outputs of a reduction
// it computes (a sum), over rows with the row-local reductions it reads (a softmax), or over
// `shape` alone. Without `local`, no kernel loops over its rows more than once.
KernelBuilder builder_for(const std::vector<NodePtr>& roots, const ir::Shape& shape, bool local) {
  // A scan computed into memory (a root, or a dependency) loops over its dim, whatever
  // reductions its operand reads: they are computed first.
  for (const auto& r : roots)
    if (NodePtr n = ir::resolve(r); ir::is_scan(n->op) && n->shape == shape)
      return KernelBuilder(shape, static_cast<size_t>(n->args[0]));
  std::unordered_set<const Node*> seen;
  for (const auto& r : roots)
    if (const Node* reduce = find_reduce(r, ir::numel(shape), seen))
      return KernelBuilder(shape, reduce, local);
  if (local) {
    seen.clear();
    for (const auto& r : roots)
      if (const Node* reduce = find_row_reduce(r, shape, seen))
        return KernelBuilder(shape, *reduce);
  }
  seen.clear();
  std::vector<size_t> dims(shape.size());
  for (size_t d = 0; d < dims.size(); ++d)
    dims[d] = d;
  for (const auto& r : roots)
    if (auto scan = find_scan(r, dims, seen); scan && scan->first->shape.size() == shape.size())
      return KernelBuilder(shape, scan->second);
  return KernelBuilder(shape, nullptr, false);
}

// The first node below `n` that is not a Reshape: the value a reshape views.
NodePtr below_reshapes(NodePtr n) {
  while (n->op == Op::Reshape)
    n = ir::resolve(n->src[0]);
  return n;
}

std::string kernel_name(const std::vector<NodePtr>& roots) {
  std::string s = "k";
  for (const auto& r : roots) {
    s += "_";
    s += ir::name(r->op);
    if (s.size() > 40) break;
  }
  return s;
}

class Scheduler {
public:
  explicit Scheduler(bool fusion) : fusion_(fusion) {}

  std::vector<rt::Launch> run(const std::vector<Target>& targets) {
    if (!fusion_) {
      std::unordered_set<const Node*> seen;
      for (const auto& t : targets)
        realize_each(t.compute, seen);
    }
    // One kernel per distinct shape computes every target of that shape.
    // Reshapes at a target cost nothing: the source is computed into
    // contiguous memory, which the target then views.
    std::map<ir::Shape, std::vector<Target>> groups;
    std::vector<std::vector<Target>> writes; // in order
    for (const auto& t : targets) {
      if (t.dest) {
        if (t.joins_previous && !writes.empty())
          writes.back().push_back(t);
        else
          writes.push_back({t});
        continue;
      }
      NodePtr n = below_reshapes(ir::resolve(t.compute));
      groups[n->shape].push_back({t.mark, n, nullptr, {}, std::nullopt, t.why});
    }
    for (const auto& w : writes)
      write_targets(w);
    // Outputs per kernel are bounded: LLVM's code generation time grows
    // steeply with the size of one function.
    for (auto& [shape, group] : groups)
      for (size_t i = 0; i < group.size(); i += kMaxOutputsPerKernel)
        realize_group(
            std::vector<Target>(group.begin() + i,
                                group.begin() + std::min(group.size(), i + kMaxOutputsPerKernel)),
            group[i].why);
    return std::move(launches_);
  }

private:
  // Without fusion: every ALU node below `n` becomes its own kernel.
  void realize_each(const NodePtr& in, std::unordered_set<const Node*>& seen) {
    NodePtr n = ir::resolve(in);
    if (!seen.insert(n.get()).second || ir::is_leaf(n->op)) return;
    for (const auto& s : n->src)
      realize_each(s, seen);
    if (ir::is_alu(n->op) || n->op == Op::Gather)
      realize_group({{n, n}}, "fusion is off (TJ_FUSION=0): one kernel per op");
  }

  // A kernel of its own stores the values into existing memory: one target's, or those of
  // targets that join the first (of its shape, none scattering).
  void write_targets(const std::vector<Target>& ts) {
    const Target& t = ts.front();
    for (bool local = true;;) {
      std::vector<NodePtr> cs;
      for (const Target& w : ts)
        cs.push_back(ir::resolve(w.compute));
      const NodePtr& c = cs.front();
      try {
        // A scattering kernel computes no reduction: its elements run in order.
        KernelBuilder kb =
            t.scatter ? KernelBuilder(c->shape, nullptr, false) : builder_for(cs, c->shape, local);
        for (size_t i = 0; i < ts.size(); ++i) {
          int32_t v = kb.lower(cs[i], kb.root_access(c->ndim()));
          if (ts[i].scatter)
            kb.scatter_store(cs[i], v, *ts[i].scatter, ts[i].dest, ts[i].dest_view);
          else
            kb.store(cs[i], v, ts[i].dest, ts[i].dest_view);
        }
        for (size_t i = 0; i < ts.size(); ++i)
          if (kb.reads_other_elements_of(ts[i].dest.get())) throw NeedsRealize{cs[i], kWhyOverlap};
        rt::Launch l = kb.finish(kernel_name(cs));
        if (c->numel() > 0)
          add(std::move(l), kb, cs,
              t.scatter       ? "a scatter: values written where their index says, in order"
              : ts.size() > 1 ? t.why
                              : "an in-place write into existing memory");
        return;
      } catch (const NeedsRealize& need) {
        realize_dependency(need);
      } catch (const NotRowLocal&) {
        local = false;
      }
    }
  }

  void realize_group(const std::vector<Target>& targets, const char* why) {
    for (bool local = true;;) {
      try {
        const ir::Shape& shape = targets[0].compute->shape;
        std::vector<NodePtr> computes;
        for (const auto& t : targets)
          computes.push_back(t.compute);
        KernelBuilder kb = builder_for(computes, shape, local);
        std::vector<int32_t> values;
        for (const auto& t : targets)
          values.push_back(kb.lower(t.compute, kb.root_access(shape.size())));
        std::vector<std::shared_ptr<rt::Storage>> storages;
        std::vector<NodePtr> roots;
        for (size_t i = 0; i < targets.size(); ++i) {
          const NodePtr& c = targets[i].compute;
          auto st = rt::Storage::allocate(static_cast<size_t>(c->numel()) * itemsize(c->dtype),
                                          c->device);
          kb.store(c, values[i], st);
          storages.push_back(st);
          roots.push_back(c);
        }
        rt::Launch l = kb.finish(kernel_name(roots));
        for (size_t i = 0; i < targets.size(); ++i) {
          const Target& t = targets[i];
          auto buffer = [&](const NodePtr& n) {
            NodePtr b = ir::make_buffer(storages[i], n->dtype, n->shape,
                                        ir::View{ir::contiguous_strides(n->shape), 0});
            // The memory holds what the program built there.
            b->site.store(n->site.load(std::memory_order_relaxed), std::memory_order_relaxed);
            return b;
          };
          t.mark->realized = buffer(t.mark);
          marked_.push_back(t.mark);
          // The computed node is realized too (unless it is memory already, as a clone's source).
          if (t.compute != t.mark && !t.compute->realized && t.compute->op != Op::Buffer) {
            t.compute->realized = buffer(t.compute);
            marked_.push_back(t.compute);
          }
        }
        if (ir::numel(shape) > 0) add(std::move(l), kb, roots, why);
        return;
      } catch (const NeedsRealize& need) {
        realize_dependency(need);
      } catch (const NotRowLocal&) {
        local = false;
      }
    }
  }

  // Computes the node that cannot be indexed affinely, so that a retry reads its memory.
  void realize_dependency(const NeedsRealize& need) {
    NodePtr dep = ir::resolve(need.node);
    // Computing a node gives its users memory to read: asked for again, it would loop.
    if (std::find(realized_for_.begin(), realized_for_.end(), need.node) != realized_for_.end())
      throw std::logic_error(fmt::format("scheduler: {} asked to be computed again ({})",
                                         ir::name(need.node->op), need.why));
    realized_for_.push_back(need.node);
    realize_group({{dep, below_reshapes(dep)}}, need.why);
  }

  void add(rt::Launch l, const KernelBuilder& kb, std::vector<NodePtr> roots, const char* why) {
    launches_.push_back(std::move(l));
    info_.push_back({kb.lowered(), std::move(roots), why});
  }

  bool fusion_;
  std::vector<NodePtr> realized_for_; // the nodes computed so that a kernel could read them
  std::vector<rt::Launch> launches_;

public:
  std::vector<NodePtr> marked_;  // every node given a buffer by this plan
  std::vector<KernelInfo> info_; // parallel to the launches
};

} // namespace

std::vector<ir::Site> KernelInfo::sites() const {
  std::vector<ir::Site> out;
  for (const auto& n : nodes)
    if (ir::Site s = n->site.load(std::memory_order_relaxed);
        s && std::find(out.begin(), out.end(), s) == out.end())
      out.push_back(s);
  return out;
}

namespace {

// The targets with complex values computed as pairs of reals (passes/lower_complex): a complex
// target's memory holds its pairs, so its destination view is the pairs' view. A complex result
// goes to memory allocated here, realized as complex memory (`fresh` receives the nodes given
// one). Where the pass built its pairs from two parts, the parts are two targets of one kernel
// over the values, each stored through a view of every other element: each part is computed
// once, and the loop runs along the values. Otherwise (the pairs of memory, of a library call, of
// a reduction; an in-place write, whose parts may read each other) the pair's dim goes first in
// the kernel's domain, for the same reason (a row of 2 would leave the vector loop nothing to do).
std::vector<Target> lowered_targets(const std::vector<Target>& targets,
                                    std::vector<NodePtr>& fresh) {
  std::vector<NodePtr> roots;
  for (const auto& t : targets) {
    roots.push_back(t.compute);
    if (t.scatter) roots.push_back(t.scatter->index);
  }
  std::vector<passes::RootParts> parts;
  std::vector<NodePtr> low = passes::lower_complex(roots, &parts);
  if (low == roots) return targets;
  if (config().verify) ir::verify(low, "lower_complex");
  std::vector<Target> out;
  size_t k = 0;
  for (const auto& t : targets) {
    Target l = t;
    const passes::RootParts made_of = parts[k];
    l.compute = low[k++];
    const bool pairs = is_complex(t.compute->dtype);
    if (pairs && !t.scatter) {
      const bool fresh_memory = !t.dest;
      if (fresh_memory) {
        const NodePtr& m = t.mark;
        l.dest =
            rt::Storage::allocate(static_cast<size_t>(m->numel()) * itemsize(m->dtype), m->device);
        l.dest_view = ir::View{ir::contiguous_strides(m->shape), 0};
        m->realized = ir::make_buffer(l.dest, m->dtype, m->shape, l.dest_view);
        m->realized->site.store(m->site.load(std::memory_order_relaxed), std::memory_order_relaxed);
        fresh.push_back(m);
      }
      l.dest_view = passes::pairs_view(l.dest_view);
      if (fresh_memory && made_of.re) {
        l.dest_view.strides.pop_back(); // the pair's dim
        Target im = l;
        l.compute = made_of.re;
        im.compute = made_of.im;
        im.dest_view.offset += 1;
        im.joins_previous = true;
        out.push_back(std::move(l));
        out.push_back(std::move(im));
        continue;
      }
      std::vector<int64_t> perm{l.compute->ndim() - 1};
      for (int64_t d = 0; d + 1 < l.compute->ndim(); ++d)
        perm.push_back(d);
      l.compute = fe::permute(l.compute, perm);
      std::rotate(l.dest_view.strides.rbegin(), l.dest_view.strides.rbegin() + 1,
                  l.dest_view.strides.rend());
    } else if (pairs && t.dest) {
      l.dest_view = passes::pairs_view(t.dest_view);
    }
    if (t.scatter) {
      l.scatter->index = low[k++];
      if (pairs) {
        l.scatter->index = passes::along_pairs(l.scatter->index);
        l.scatter->base.push_back(2);
      }
    }
    out.push_back(std::move(l));
  }
  return out;
}

} // namespace

std::vector<rt::Launch> schedule(const std::vector<Target>& targets, bool fusion,
                                 std::vector<NodePtr>* marked, std::vector<KernelInfo>* info) {
  Scheduler s(fusion);
  try {
    auto launches = s.run(lowered_targets(targets, s.marked_));
    if (marked) *marked = std::move(s.marked_);
    if (info) *info = std::move(s.info_);
    return launches;
  } catch (...) {
    for (const auto& n : s.marked_)
      n->realized.reset();
    throw;
  }
}

} // namespace tj::sched
