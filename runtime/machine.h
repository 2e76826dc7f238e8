// Facts of the host machine that scheduling decisions use.
#pragma once
#include <cstdint>

namespace tj::rt {

// The output size from which CPU kernels write around the cache (kir::Slot::stream):
// config().stream_store_bytes, or when that is 0 the last-level cache's size, at most 32 MiB
// (a server's L3 is shared by a core complex of about that size, and a virtual machine
// often reports the whole socket's); negative: never.
int64_t stream_store_bytes();

} // namespace tj::rt
