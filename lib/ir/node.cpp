// Hash-consing of tensor-graph nodes, and their iterative destruction.
#include "lib/ir/node.h"

#include "lib/core/free_list.h"

#include "lib/ir/scalar_semantics.h"
#include "tensorjit/error.h"
#include "tensorjit/site.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <source_location>
#include <string>
#include <tuple>
#include <unordered_map>

namespace tj::ir {
namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

uint64_t scalar_bits(const Scalar& s) {
  if (s.is_complex())
    return std::bit_cast<uint64_t>(s.to_double()) * 31 + std::bit_cast<uint64_t>(s.imag());
  return s.is_floating_point() ? std::bit_cast<uint64_t>(s.to_double())
                               : static_cast<uint64_t>(s.to_int());
}

bool same_scalar(const Scalar& a, const Scalar& b) {
  if (a.is_complex() || b.is_complex())
    return a.kind() == b.kind() &&
           std::bit_cast<uint64_t>(a.to_double()) == std::bit_cast<uint64_t>(b.to_double()) &&
           std::bit_cast<uint64_t>(a.imag()) == std::bit_cast<uint64_t>(b.imag());
  return a.kind() == b.kind() && scalar_bits(a) == scalar_bits(b);
}

// What identifies a node: make_node looks it up before allocating one.
struct Key {
  Op op;
  DType dtype;
  const Shape& shape;
  const std::vector<NodePtr>& src;
  const std::vector<int64_t>& args;
  const Scalar& value;
  const rt::Storage* storage;
  const View& view;
  Device device;
};

size_t hash_of(const Key& n) {
  size_t h = mix(static_cast<size_t>(n.op), static_cast<size_t>(n.dtype));
  for (int64_t d : n.shape)
    h = mix(h, static_cast<size_t>(d));
  for (const auto& s : n.src)
    h = mix(h, s->hash);
  for (int64_t a : n.args)
    h = mix(h, static_cast<size_t>(a));
  h = mix(h, scalar_bits(n.value) ^ static_cast<size_t>(n.value.kind()));
  h = mix(h, reinterpret_cast<size_t>(n.storage));
  for (int64_t s : n.view.strides)
    h = mix(h, static_cast<size_t>(s));
  h = mix(h,
          static_cast<size_t>(n.device.type()) * 1024 + static_cast<size_t>(n.device.index() + 1));
  h = mix(h, static_cast<size_t>(n.view.offset));
  return h < 2 ? h + 2 : h; // 0 and 1 mark the table's empty and erased slots
}

bool same_node(const Node& a, const Key& b) {
  if (a.op != b.op || a.dtype != b.dtype || a.shape != b.shape || a.args != b.args ||
      a.storage.get() != b.storage || !(a.view == b.view) || !same_scalar(a.value, b.value) ||
      a.device != b.device || a.src.size() != b.src.size())
    return false;
  for (size_t i = 0; i < a.src.size(); ++i)
    if (a.src[i] != b.src[i]) return false;
  return true;
}

// The live nodes by hash: open addressing with linear probing, so that registering a node
// allocates nothing (a node-based multimap cost a malloc and a free per node, and building a
// graph is mostly that). A slot holds a node's hash and address; a node erases its own slot
// as it dies, under the table's lock, so an address found there is alive or blocked in its
// destructor, which lock() on its weak self-reference tells apart.
class NodeSet {
public:
  template <class Match> const Node* find(size_t hash, Match&& match) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.hash == kEmpty) return nullptr;
      if (s.hash == hash && match(s.node)) return s.node;
    }
  }
  void insert(size_t hash, const Node* node) {
    if ((used_ + 1) * 2 > slots_.size()) rehash();
    size_t i = hash & mask();
    while (slots_[i].hash > kErased)
      i = (i + 1) & mask();
    if (slots_[i].hash == kEmpty) ++used_;
    slots_[i] = {hash, node};
    ++live_;
  }
  void erase(size_t hash, const Node* node) {
    if (slots_.empty()) return;
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.hash == kEmpty) return;
      if (s.hash == hash && s.node == node) {
        s = {kErased, nullptr};
        --live_;
        return;
      }
    }
  }
  size_t size() const { return live_; }

private:
  static constexpr size_t kEmpty = 0, kErased = 1;
  struct Slot {
    size_t hash = kEmpty;
    const Node* node = nullptr;
  };
  size_t mask() const { return slots_.size() - 1; }
  // Four times the live nodes' room (at least 1024 slots), dropping the erased slots: the table
  // grows again when half full.
  void rehash() {
    size_t cap = 1024;
    while (cap < 4 * (live_ + 1))
      cap *= 2;
    std::vector<Slot> old(cap);
    old.swap(slots_);
    used_ = live_ = 0;
    for (const Slot& s : old)
      if (s.hash > kErased) insert(s.hash, s.node);
  }

  std::vector<Slot> slots_;
  size_t used_ = 0; // live and erased slots: probes stop only at an empty one
  size_t live_ = 0;
};

struct Entry {
  const Node* raw;
  std::weak_ptr<const Node> weak;
};

// The table of live nodes. Equal nodes are found here and shared, which makes
// common-subexpression elimination free and equality a pointer compare.
struct Table {
  std::mutex mu;
  NodeSet nodes;
  // Buffer nodes by storage, so that an in-place write can find who reads the
  // version it is about to overwrite.
  std::unordered_multimap<const rt::Storage*, Entry> buffers;
};
Table& table() {
  static Table* t = new Table; // never destroyed: nodes may outlive static destruction
  return *t;
}

// Destroying a long chain recursively would overflow the stack: children are
// queued and released one at a time by the outermost destructor.
thread_local bool tl_draining = false;
thread_local std::vector<NodePtr>* tl_pending = nullptr;

} // namespace

Node::~Node() {
  {
    auto& t = table();
    std::lock_guard lock(t.mu);
    t.nodes.erase(hash, this);
    if (op == Op::Buffer) {
      auto [lo, hi] = t.buffers.equal_range(storage.get());
      for (auto b = lo; b != hi; ++b)
        if (b->second.raw == this) {
          t.buffers.erase(b);
          break;
        }
    }
  }
  if (!tl_pending) tl_pending = new std::vector<NodePtr>;
  for (auto& s : src)
    tl_pending->push_back(std::move(s));
  if (realized) tl_pending->push_back(std::move(realized));
  if (tl_draining) return;
  tl_draining = true;
  while (!tl_pending->empty()) {
    NodePtr p = std::move(tl_pending->back());
    tl_pending->pop_back();
    p.reset();
  }
  tl_draining = false;
}

thread_local Site tl_site = nullptr;
thread_local uint64_t tl_realized_found = 0;

uint64_t realized_nodes_found() { return tl_realized_found; }
thread_local bool tl_site_api = false;

Site current_site() { return tl_site; }

Site intern_site(std::string_view text) {
  static std::mutex mu;
  static auto* pool = new std::set<std::string, std::less<>>; // never freed: nodes keep pointers
  std::lock_guard lock(mu);
  auto it = pool->find(text);
  if (it == pool->end()) it = pool->emplace(text).first;
  return it->c_str();
}

Site make_site(std::string_view file, uint32_t line, std::string_view what) {
  size_t slash = file.find_last_of('/');
  if (slash != std::string_view::npos) file = file.substr(slash + 1);
  return intern_site(fmt::format("{}:{} ({})", file, line, what));
}

} // namespace tj::ir

namespace tj::detail {

namespace {

// Calls from the library's own sources (lib/, include/, tools/): their place means nothing to the
// user. The sources' root is where this file's name, under whatever path mapping the build used,
// leaves off "lib/ir/node.cpp".
bool from_library(std::string_view file) {
  static const std::optional<std::string_view> root = []() -> std::optional<std::string_view> {
    std::string_view self = std::source_location::current().file_name();
    constexpr std::string_view tail = "lib/ir/node.cpp";
    // Unknown without a root to tell the library's files from a user's "lib/...".
    if (!self.ends_with(tail) || self.size() == tail.size()) return std::nullopt;
    return self.substr(0, self.size() - tail.size());
  }();
  if (!root || !file.starts_with(*root)) return false;
  file.remove_prefix(root->size());
  return file.starts_with("lib/") || file.starts_with("include/") || file.starts_with("tools/");
}

} // namespace

CallSite::CallSite(const Caller& caller, const char* what, bool api)
    : saved_(ir::tl_site), saved_api_(ir::tl_site_api) {
  if (api && ir::tl_site_api) return;
  const std::source_location& where = caller.location();
  if (!api) { // a user's scope: its name may be any string, so no cache
    ir::tl_site = ir::make_site(where.file_name(), where.line(), what);
    ir::tl_site_api = false;
    return;
  }
  // API calls repeat (a loop of ops) and name themselves with literals: their text is made once
  // per place. A null entry is a call from the library itself, which leaves the enclosing site.
  using Key = std::tuple<const char*, uint32_t, const char*>;
  struct Hash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(std::get<0>(k)) ^ (size_t{std::get<1>(k)} << 20) ^
             std::hash<const void*>()(std::get<2>(k));
    }
  };
  thread_local std::unordered_map<Key, ir::Site, Hash> known;
  const Key key{where.file_name(), where.line(), what};
  auto it = known.find(key);
  if (it == known.end()) {
    ir::Site made = from_library(where.file_name())
                        ? nullptr
                        : ir::make_site(where.file_name(), where.line(), what);
    it = known.emplace(key, made).first;
  }
  if (!it->second) return;
  ir::tl_site = it->second;
  ir::tl_site_api = true;
}

CallSite::CallSite(const char* site) : saved_(ir::tl_site), saved_api_(ir::tl_site_api) {
  if (!site) return; // an unknown place leaves the current one
  ir::tl_site = site;
  ir::tl_site_api = true;
}

CallSite::~CallSite() {
  ir::tl_site = saved_;
  ir::tl_site_api = saved_api_;
}

} // namespace tj::detail

namespace tj::ir {

namespace {

// The nodes make_node passes over in its table under the lock, kept alive until after it: eight
// in place (a 64-bit hash seldom has two), not zeroed first (that was 2.5% of building a chain
// of ops), then on the heap.
class Passed {
public:
  Passed() = default;
  Passed(const Passed&) = delete;
  Passed& operator=(const Passed&) = delete;
  ~Passed() {
    for (size_t k = 0; k < n_; ++k)
      std::launder(reinterpret_cast<NodePtr*>(at(k)))->~NodePtr();
  }
  void add(NodePtr p) {
    if (n_ < kInPlace)
      new (at(n_++)) NodePtr(std::move(p));
    else
      more_.push_back(std::move(p)); // allocates: throws only out of memory
  }

private:
  static constexpr size_t kInPlace = 8;
  unsigned char* at(size_t k) { return buf_ + k * sizeof(NodePtr); }
  alignas(NodePtr) unsigned char buf_[kInPlace * sizeof(NodePtr)];
  size_t n_ = 0;
  std::vector<NodePtr> more_;
};

} // namespace

NodePtr make_node(Op op, DType dtype, Shape shape, std::vector<NodePtr> src,
                  std::vector<int64_t> args, Scalar value, std::shared_ptr<rt::Storage> storage,
                  View view, Device device) {
  if (storage) device = storage->device();
  if (!src.empty()) {
    device = src[0]->device;
    for (const auto& s : src)
      if (s->device != device)
        throw Error(fmt::format("internal error: {} node with inputs on {} and {}", name(op),
                                device.str(), s->device.str()));
  }
  const Key key{op, dtype, shape, src, args, value, storage.get(), view, device};
  const size_t hash = hash_of(key);
  // Every reference taken under the lock is dropped after it: dropping the last one while
  // holding it would re-enter the table from ~Node. So the new node and the nodes passed over
  // (unequal ones of the same hash: eight in place, as a 64-bit hash seldom has two, so that a
  // lookup allocates nothing) are declared before the lock.
  std::shared_ptr<Node> n;
  Passed passed;
  NodePtr found;
  auto& t = table();
  std::lock_guard lock(t.mu);
  t.nodes.find(hash, [&](const Node* e) {
    NodePtr alive = e->weak_from_this().lock(); // null: dying, blocked in ~Node on the lock
    if (alive && same_node(*alive, key)) {
      found = std::move(alive);
      return true;
    }
    if (alive) passed.add(std::move(alive));
    return false;
  });
  if (found) {
    if (found->realized) ++tl_realized_found;
    return found;
  }

  n = std::allocate_shared<Node>(core::FreeListAllocator<Node>());
  n->op = op;
  n->dtype = dtype;
  n->shape = std::move(shape);
  n->src = std::move(src);
  n->args = std::move(args);
  n->value = value;
  n->storage = std::move(storage);
  n->view = std::move(view);
  n->device = device;
  n->site.store(tl_site, std::memory_order_relaxed);
  n->hash = hash;
  int64_t depth = 0;
  for (const auto& s : n->src)
    depth = std::max(depth, s->realized ? 0 : s->depth);
  n->depth = is_leaf(op) ? 0 : depth + 1;
  const bool divides = (op == Op::Div || op == Op::Fmod) && is_integral(dtype, true) &&
                       !(n->src[1]->op == Op::Const && n->src[1]->value.to_int() != 0);
  n->complex = is_complex(dtype) || category(op) == OpCategory::Complex ||
               std::any_of(n->src.begin(), n->src.end(), [](const NodePtr& s) {
                 return is_complex(s->dtype) || (s->complex && !s->realized);
               });
  n->may_fail = divides || std::any_of(n->src.begin(), n->src.end(), [](const NodePtr& s) {
                  return s->may_fail && !s->realized;
                });
  // What may lie below, whether computed since or not: a walk that relies on these stops at
  // realized nodes by itself, and a realized node can be forgotten again (a failed launch, a
  // plan), which must not hide what lies below it.
  n->performs = is_performed(op) || std::any_of(n->src.begin(), n->src.end(),
                                                [](const NodePtr& s) { return s->performs; });
  n->loops = is_reduce(op) || is_scan(op) ||
             std::any_of(n->src.begin(), n->src.end(), [](const NodePtr& s) { return s->loops; });
  t.nodes.insert(hash, n.get());
  if (op == Op::Buffer) t.buffers.emplace(n->storage.get(), Entry{n.get(), n});
  return n;
}

NodePtr with_sources(const Node& n, std::vector<NodePtr> src) {
  return make_node(n.op, n.dtype, n.shape, std::move(src), n.args, n.value, n.storage, n.view,
                   n.device);
}

namespace {

// A shaped constant (a scalar operand taken into an op's result shape): the last eight a thread
// made are remembered by key, weakly, so that a loop of ops finds the one the previous op made
// without the node table (its hash, lock and probe: 6.5% of the instructions building a chain
// of ops took). Held weakly, a remembered constant keeps no memory it is evaluated into; one
// evaluated since is left to the table, which counts such finds.
NodePtr make_shaped_const(const Scalar& value, DType dtype, const Shape& shape, Device device) {
  struct Known {
    std::weak_ptr<const Node> node; // empty: a slot not used yet
    DType dtype = kFloat32;
    Device device;
    Scalar value;
    Shape shape;
  };
  struct Recent {
    std::array<Known, 8> known;
    size_t next = 0;
  };
  // On the heap: the library's thread-locals stay small (static TLS, CMakeLists.txt).
  thread_local const std::unique_ptr<Recent> ring = std::make_unique<Recent>();
  Recent& recent = *ring;
  // From the latest: a loop of ops finds the constant an op or two before made.
  const size_t n = recent.known.size();
  for (size_t back = 1; back <= n; ++back) {
    const Known& k = recent.known[(recent.next - back) % n];
    if (k.dtype != dtype || k.shape.size() != shape.size() || !same_scalar(k.value, value) ||
        !std::equal(shape.begin(), shape.end(), k.shape.begin()) || k.device != device)
      continue;
    if (NodePtr c = k.node.lock(); c && !c->realized) return c;
  }
  NodePtr made = make_node(Op::Const, dtype, shape, {}, {}, value, nullptr, {}, device);
  recent.known[recent.next++ % n] = {made, dtype, device, value, shape};
  return made;
}

} // namespace

NodePtr make_const(const Scalar& v, DType dtype, const Shape& shape, Device device) {
  // The value the constant has in its dtype: folding, the interpreter and
  // kernels then all see the same number, and equal constants hash-cons.
  const Scalar value = to_dtype(v, dtype);
  if (!shape.empty()) return make_shaped_const(value, dtype, shape, device);
  // The scalar constants this thread made last, held: an op with a scalar operand makes one and
  // drops it (its value is taken into the result's dtype and shape), so a loop of such ops made,
  // registered and destroyed a node per op. Held, a cached node is the table's node for its key,
  // and hash-consing is kept. Shaped ones are only remembered (make_shaped_const): evaluated
  // (zeros(n).eval()), a held one would keep its memory, which an in-place write would then have
  // to copy.
  struct Recent {
    std::array<NodePtr, 8> nodes;
    size_t next = 0;
  };
  thread_local Recent recent;
  const size_t count = recent.nodes.size();
  for (size_t back = 1; back <= count; ++back) { // from the latest
    NodePtr& c = recent.nodes[(recent.next - back) % count];
    if (!c) continue;
    // One computed since (its memory handed out: data_ptr(), numpy()) is let go: held, it
    // would give that memory to every new tensor of the same value.
    if (c->realized) {
      c.reset();
      continue;
    }
    if (c->dtype == dtype && c->device == device && same_scalar(c->value, value)) return c;
  }
  NodePtr n = make_node(Op::Const, dtype, {}, {}, {}, value, nullptr, {}, device);
  recent.nodes[recent.next++ % count] = n;
  return n;
}

NodePtr make_buffer(std::shared_ptr<rt::Storage> storage, DType dtype, Shape shape, View view) {
  auto version = static_cast<int64_t>(storage->version());
  return make_node(Op::Buffer, dtype, std::move(shape), {}, {version}, {}, std::move(storage),
                   std::move(view));
}

NodePtr make_empty(DType dtype, Shape shape, Device device) {
  auto storage = rt::Storage::allocate(static_cast<size_t>(numel(shape)) * itemsize(dtype), device);
  View v{contiguous_strides(shape), 0};
  return make_buffer(std::move(storage), dtype, std::move(shape), std::move(v));
}

std::optional<View> compose_strided(const Shape& shape, const View& view, const Shape& sizes,
                                    const std::vector<int64_t>& strides, int64_t offset) {
  if (is_contiguous(shape, view.strides)) return View{strides, view.offset + offset};
  auto m = strided_map(shape, sizes, strides, offset);
  if (!m) return std::nullopt;
  View out{std::vector<int64_t>(sizes.size(), 0), view.offset};
  for (size_t b = 0; b < shape.size(); ++b) {
    out.offset += m->offset[b] * view.strides[b];
    for (size_t k = 0; k < sizes.size(); ++k)
      out.strides[k] += m->coef[b][k] * view.strides[b];
  }
  return out;
}

std::vector<NodePtr> current_buffers(const rt::Storage* storage) {
  std::vector<NodePtr> out;
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto [lo, hi] = t.buffers.equal_range(storage);
  for (auto it = lo; it != hi; ++it)
    if (auto n = it->second.weak.lock();
        n && n->args.size() == 1 && static_cast<uint64_t>(n->args[0]) == storage->version())
      out.push_back(std::move(n));
  return out;
}

size_t live_node_count() {
  auto& t = table();
  std::lock_guard lock(t.mu);
  return t.nodes.size();
}

} // namespace tj::ir
