// Schedules cached like kernels: a graph materialized again with the same structure (ops, dtypes,
// shapes, views, constants, devices; its leaves' memory as numbered parameters) reuses the
// launches planned the first time, with only the memory bound anew: no simplification and no
// scheduling. A training loop or a repeated expression then pays a walk of its graph, a lookup
// and the launches.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "lib/ir/node.h"
#include "runtime/launch.h"

namespace tj::pipeline {

// A graph's structure, position-independent: each distinct node in the order a depth-first walk
// from the roots first finishes it, leaves' memory by the order its storage first appears.
struct GraphKey {
  std::vector<uint64_t> words;
  std::vector<std::shared_ptr<rt::Storage>> storages; // the leaves' memory, numbered
  // Random numbers: each draw's counter is new, so the structure never comes again (but after a
  // manual_seed) and remembering it would only push out others.
  bool random = false;
};

// The key of the graph below `roots` (unrealized, resolved through realized nodes), or nothing
// where the cache does not apply: a write or a library call to perform, a setting that changes
// schedules from what they were (fusion, where outputs are streamed, ordered scans), dumps,
// planning.
std::optional<GraphKey> graph_key(const std::vector<ir::NodePtr>& roots);

// Where a launch slot's memory, or a root's value, lies on a replay: in a leaf's storage
// (source >= 0, numbered as GraphKey::storages) or in memory the schedule allocated
// (-1 - source indexes CachedSchedule::allocations).
struct CachedSchedule {
  struct Allocation {
    size_t bytes;
    Device device;
  };
  struct Binding {
    size_t launch, slot;
    int64_t source;
  };
  struct Result {
    int64_t source;
    DType dtype;
    ir::Shape shape;
    ir::View view;
  };
  std::vector<rt::Launch> launches; // without storage: the bindings give it
  std::vector<Binding> bindings;
  std::vector<Allocation> allocations;
  std::vector<Result> results; // one per root
};

// The schedule that computed `roots` (keyed by `key`) with `launches`, which stored the roots'
// values where they are now realized; `allocated`: the memory the schedule allocated (its marked
// nodes' buffers). The caller remembers only schedules that read no value computed before other
// than the key's leaves (ir::realized_nodes_found: simplification may build a node equal to one
// computed earlier, and read its memory, which may even be a leaf's, at another place than the
// key says). Nothing is kept either where a launch touches memory that is neither a leaf's nor
// allocated: the key does not say what a replay would bind there.
void remember_schedule(const GraphKey& key, const std::vector<ir::NodePtr>& roots,
                       const std::vector<rt::Launch>& launches,
                       const std::vector<std::shared_ptr<rt::Storage>>& allocated);

// The schedule remembered for `key`, or null. Shared: the cache may drop its entry meanwhile.
std::shared_ptr<const CachedSchedule> find_schedule(const GraphKey& key);

// The launches of `cached` bound to the memory of `key`'s leaves and fresh allocations, and
// the storage each root's value will lie in (parallel to CachedSchedule::results).
struct BoundSchedule {
  std::vector<rt::Launch> launches;
  std::vector<std::shared_ptr<rt::Storage>> results;
};
BoundSchedule bind(const CachedSchedule& cached, const GraphKey& key);

// Forgets every remembered schedule (tests; a change of settings needs none: they are keyed).
void clear_schedule_cache();

} // namespace tj::pipeline
