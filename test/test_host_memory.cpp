// The host allocator keeps freed blocks from 64 KiB up for the next storage of their size class:
// memory the C library would hand back to the system faults again page by page when reused.
#include <catch2/catch.hpp>

#include "runtime/storage.h"

using namespace tj;

TEST_CASE("host memory: freed blocks of 64 KiB and more are reused, by size class", "[memory]") {
  for (size_t bytes : {size_t{100} << 10, size_t{256} << 10, size_t{1000} << 10, size_t{3} << 20}) {
    INFO(bytes);
    void* first = nullptr;
    {
      auto s = rt::Storage::allocate(bytes);
      first = s->data();
      CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
    }
    // A little smaller: the same class (64 KiB steps below 1 MiB, 2 MiB steps from there).
    {
      auto again = rt::Storage::allocate(bytes - 4096);
      CHECK(again->data() == first);
      CHECK(again->nbytes() == bytes - 4096);
    }
    // Another class does not take the block freed just now.
    auto other = rt::Storage::allocate(bytes + (bytes < (size_t{1} << 20) ? 64 << 10 : 2 << 20));
    CHECK(other->data() != first);
  }
}
