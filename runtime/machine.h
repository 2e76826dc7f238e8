// Facts of the machine and its devices that graph building and scheduling decisions use: the
// one place they ask.
#pragma once
#include <cstdint>

#include "tensorjit/device.h"

namespace tj::rt {

// How a reduction into few outputs is split on a device so that all of it works.
struct ReductionSplit {
  // Outputs that keep the device busy by themselves: the CPU's threads, or a GPU's resident
  // blocks (8 per SM). Fewer outputs over a long reduction split it in two stages.
  int64_t busy_outputs;
  // The partial results of a long 1-d reduction's first stage.
  int64_t blocks;
  // Whether a reduction of everything into one value is taken as one long axis (a GPU wants
  // thousands of blocks, not the few an outer dim gives).
  bool flatten_whole;
};
ReductionSplit reduction_split(Device device);

// The CPU's data caches in bytes, read once; 0 where the system does not say. The last level
// counts at most 32 MiB: a server's L3 is shared by a core complex of about that size, and a
// virtual machine often reports the whole socket's.
struct CpuCaches {
  int64_t l1d, l2, l3;
};
const CpuCaches& cpu_caches();

// The output size from which CPU kernels write around the cache (kir::Slot::stream):
// config().stream_store_bytes, or when that is 0 the last-level cache's size (cpu_caches().l3,
// 32 MiB where unknown); negative: never.
int64_t stream_store_bytes();

} // namespace tj::rt
