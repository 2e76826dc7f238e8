// The schedule cache (schedule_cache.h).
#include "lib/pipeline/schedule_cache.h"

#include <bit>
#include <mutex>
#include <unordered_map>

#include "runtime/machine.h"
#include "runtime/stats_counters.h"
#include "tensorjit/config.h"

namespace tj::pipeline {
namespace {

// Entries kept at most: past it the cache starts again (a program that builds ever new
// structures would otherwise grow it without end).
constexpr size_t kMaxEntries = 1024;

uint64_t bits(double d) { return std::bit_cast<uint64_t>(d); }

class KeyBuilder {
public:
  explicit KeyBuilder(GraphKey& key) : key_(key) {}

  // False once the walk met a write or a call to perform: the key is of no use then.
  bool kernels_only = true;

  uint64_t visit(const ir::NodePtr& in) {
    const ir::Node* n = in->resolved();
    if (!kernels_only) return 0;
    if (ir::is_performed(n->op)) {
      kernels_only = false;
      return 0;
    }
    if (const uint64_t* known = index_.find(n)) return *known;
    // Sources first: a node's words name them by their indices (in place for up to four).
    uint64_t src_in_place[4];
    std::vector<uint64_t> src_more(n->src.size() > 4 ? n->src.size() : 0);
    uint64_t* src = n->src.size() > 4 ? src_more.data() : src_in_place;
    for (size_t k = 0; k < n->src.size(); ++k)
      src[k] = visit(n->src[k]);
    auto& w = key_.words;
    const bool buffer = n->op == ir::Op::Buffer;
    const size_t nargs = buffer ? 0 : n->args.size(); // a buffer's argument is its version
    w.push_back(uint64_t(n->op) | uint64_t(n->dtype) << 8 | uint64_t(n->device.type()) << 16 |
                uint64_t(n->device.index() + 1) << 32);
    w.push_back(n->shape.size());
    w.push_back(n->src.size());
    w.push_back(nargs);
    for (int64_t d : n->shape)
      w.push_back(uint64_t(d));
    w.insert(w.end(), src, src + n->src.size());
    if (!buffer)
      for (int64_t a : n->args)
        w.push_back(uint64_t(a));
    w.push_back(uint64_t(n->value.kind()));
    w.push_back(n->value.is_floating_point() || n->value.is_complex()
                    ? bits(n->value.to_double())
                    : uint64_t(n->value.to_int()));
    w.push_back(bits(n->value.imag()));
    if (ir::is_leaf(n->op)) {
      if (n->op == ir::Op::Philox) key_.random = true;
      if (buffer) w.push_back(storage_index(n->storage));
      w.push_back(uint64_t(n->view.offset));
      w.push_back(uint64_t(n->view.strides.size()));
      for (int64_t s : n->view.strides)
        w.push_back(uint64_t(s));
    }
    return index_.add(n);
  }

private:
  // By a map, not a search of key_.storages: a graph may read hundreds of tensors (a cat).
  uint64_t storage_index(const std::shared_ptr<rt::Storage>& s) {
    auto [it, fresh] = storage_index_.try_emplace(s.get(), key_.storages.size());
    if (fresh) key_.storages.push_back(s);
    return it->second;
  }

  // The nodes visited and their indices, in order: open addressing, so that a node costs no
  // allocation (a node-based map took one per node, 400 for a chain of 200 ops).
  class NodeIndex {
  public:
    const uint64_t* find(const ir::Node* n) const {
      if (slots_.empty()) return nullptr;
      for (size_t i = slot_of(n);; i = (i + 1) & (slots_.size() - 1)) {
        if (!slots_[i].node) return nullptr;
        if (slots_[i].node == n) return &slots_[i].index;
      }
    }
    uint64_t add(const ir::Node* n) { // n not present
      if (2 * (size_ + 1) > slots_.size()) grow();
      size_t i = slot_of(n);
      while (slots_[i].node)
        i = (i + 1) & (slots_.size() - 1);
      slots_[i] = {n, size_};
      return size_++;
    }

  private:
    struct Slot {
      const ir::Node* node = nullptr;
      uint64_t index = 0;
    };
    size_t slot_of(const ir::Node* n) const {
      return size_t((reinterpret_cast<uintptr_t>(n) >> 4) * 0x9E3779B97F4A7C15ULL >> 20) &
             (slots_.size() - 1);
    }
    void grow() {
      std::vector<Slot> old(std::max<size_t>(64, 2 * slots_.size()));
      old.swap(slots_);
      for (const Slot& s : old)
        if (s.node) {
          size_t i = slot_of(s.node);
          while (slots_[i].node)
            i = (i + 1) & (slots_.size() - 1);
          slots_[i] = s;
        }
    }
    std::vector<Slot> slots_;
    uint64_t size_ = 0;
  };

  GraphKey& key_;
  NodeIndex index_;
  std::unordered_map<const rt::Storage*, uint64_t> storage_index_;
};

// Four independent multiply chains over the words, then mixed: a single chain waited on each
// multiply in turn (thousands of words for a chain of ops).
struct KeyHash {
  size_t operator()(const std::vector<uint64_t>& w) const {
    constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
    uint64_t h[4] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL, 0x100000001b3ULL, w.size()};
    size_t i = 0;
    for (; i + 4 <= w.size(); i += 4)
      for (int k = 0; k < 4; ++k)
        h[k] = (h[k] ^ w[i + size_t(k)]) * kMul;
    for (; i < w.size(); ++i)
      h[0] = (h[0] ^ w[i]) * kMul;
    // Each lane's high bits carry its words' high bits: folded in whole, then mixed down.
    uint64_t x = ((h[0] * kMul ^ h[1]) * kMul ^ h[2]) * kMul ^ h[3];
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return size_t(x ^ (x >> 31));
  }
};

struct Cache {
  std::mutex mu;
  std::unordered_map<std::vector<uint64_t>, std::shared_ptr<const CachedSchedule>, KeyHash> map;
};
Cache& cache() {
  static Cache* c = new Cache; // never destroyed: materializations may run at exit
  return *c;
}

} // namespace

std::optional<GraphKey> graph_key(const std::vector<ir::NodePtr>& roots) {
  const Config& c = config();
  if (!c.schedule_cache || !c.dump.empty() || c.debug >= 2) return std::nullopt;
  GraphKey key;
  key.words.reserve(16 * roots.size() + 64);
  // The settings that schedules depend on.
  key.words.push_back(uint64_t(c.fusion));
  key.words.push_back(uint64_t(rt::stream_store_bytes()));
  key.words.push_back(uint64_t(c.ordered_scans));
  KeyBuilder b(key);
  std::vector<uint64_t> root_index;
  for (const auto& r : roots)
    root_index.push_back(b.visit(r));
  if (!b.kernels_only) return std::nullopt;
  key.words.push_back(root_index.size());
  key.words.insert(key.words.end(), root_index.begin(), root_index.end());
  return key;
}

void remember_schedule(const GraphKey& key, const std::vector<ir::NodePtr>& roots,
                       const std::vector<rt::Launch>& launches,
                       const std::vector<std::shared_ptr<rt::Storage>>& allocated) {
  if (key.random) return;
  auto cached = std::make_shared<CachedSchedule>();
  std::unordered_map<const rt::Storage*, int64_t> source;
  for (size_t i = 0; i < key.storages.size(); ++i)
    source.emplace(key.storages[i].get(), int64_t(i));
  for (const auto& s : allocated)
    if (source.emplace(s.get(), -1 - int64_t(cached->allocations.size())).second)
      cached->allocations.push_back({s->nbytes(), s->device()});
  auto where = [&](const rt::Storage* s) -> std::optional<int64_t> {
    auto it = source.find(s);
    if (it == source.end()) return std::nullopt;
    return it->second;
  };
  for (size_t l = 0; l < launches.size(); ++l) {
    rt::Launch t = launches[l];
    for (size_t s = 0; s < t.slots.size(); ++s) {
      if (!t.slots[s].storage) continue;
      const auto at = where(t.slots[s].storage.get());
      if (!at) return; // memory the key does not describe
      cached->bindings.push_back({l, s, *at});
      t.slots[s].storage = nullptr;
    }
    cached->launches.push_back(std::move(t));
  }
  for (const auto& r : roots) {
    const ir::Node* v = r->resolved();
    const auto at = v->op == ir::Op::Buffer ? where(v->storage.get()) : std::nullopt;
    if (!at) return;
    cached->results.push_back({*at, v->dtype, v->shape, v->view});
  }
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  if (c.map.size() >= kMaxEntries) c.map.clear();
  c.map.insert_or_assign(key.words, std::move(cached));
}

std::shared_ptr<const CachedSchedule> find_schedule(const GraphKey& key) {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  auto it = c.map.find(key.words);
  if (it == c.map.end()) return nullptr;
  ++rt::counters().schedule_cache_hits;
  return it->second;
}

BoundSchedule bind(const CachedSchedule& cached, const GraphKey& key) {
  std::vector<std::shared_ptr<rt::Storage>> fresh;
  fresh.reserve(cached.allocations.size());
  for (const auto& a : cached.allocations)
    fresh.push_back(rt::Storage::allocate(a.bytes, a.device));
  auto storage = [&](int64_t source) {
    return source >= 0 ? key.storages[size_t(source)] : fresh[size_t(-1 - source)];
  };
  BoundSchedule b{cached.launches, {}};
  for (const auto& x : cached.bindings)
    b.launches[x.launch].slots[x.slot].storage = storage(x.source);
  for (const auto& r : cached.results)
    b.results.push_back(storage(r.source));
  return b;
}

void clear_schedule_cache() {
  Cache& c = cache();
  std::lock_guard lock(c.mu);
  c.map.clear();
}

} // namespace tj::pipeline
