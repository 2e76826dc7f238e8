// The CPU executor: walks each launch's outer dims and calls the kernel per row.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "runtime/kernel_cache.h"
#include "runtime/launch.h"
#include "runtime/stats_counters.h"
#include "runtime/thread_pool.h"
#include "tensorjit/config.h"
#include "tensorjit/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tj::rt {
namespace {

// Elements below which a launch runs on the calling thread only.
constexpr int64_t kGrain = 32768;

// The tiles a transposing launch is walked in (see TileShape) and the launches walked so: those
// with at least kMinTiled rows and columns.
constexpr int64_t kMinTiled = 32;
constexpr int64_t kCacheLine = 64;
// How far ahead (columns) packing a tile prefetches the column it will copy.
constexpr int64_t kPrefetchColumns = 32;

// An input read across memory along the rows (each element on its own cache
// line) but along memory down the columns: a transpose. Read row by row, it
// wastes most of every line it touches.
bool transposed_input(const Launch& l, size_t s) {
  const size_t nd = l.domain.size();
  if (!l.slots[s].storage || l.kernel.slots[s].role != kir::Slot::Role::Input) return false;
  const int64_t item = static_cast<int64_t>(itemsize(l.kernel.slots[s].dtype));
  const int64_t across = std::abs(l.slots[s].strides[nd - 1]) * item;
  const int64_t down = std::abs(l.slots[s].strides[nd - 2]) * item;
  return across >= kCacheLine && down > 0 && down < kCacheLine;
}

} // namespace

bool walks_in_tiles(const Launch& l) {
  const size_t nd = l.domain.size();
  if (l.r != 1 || nd < 2 || l.domain[nd - 1] < kMinTiled || l.domain[nd - 2] < kMinTiled)
    return false;
  if (l.kernel.scatters()) return false; // its elements run in order
  if (l.kernel.gathers()) return false;  // read at places a packed tile does not hold
  for (size_t s = 0; s < l.slots.size(); ++s)
    if (transposed_input(l, s)) return true;
  return false;
}

namespace {

// Each column of a packed tile is a separate short run of memory that no hardware prefetcher
// predicts, so the column kPrefetchColumns ahead (the walk moves across) is prefetched,
// its first and last element, while this one is copied. Integer arithmetic: past the last tile
// the address lies outside the buffer, which a prefetch may touch but a pointer may not point to.
void prefetch_next_column(const char* column, int64_t down, int64_t across, int64_t rows,
                          int64_t size) {
  const auto next = reinterpret_cast<uintptr_t>(column) +
                    static_cast<uintptr_t>(kPrefetchColumns * across * size);
  __builtin_prefetch(reinterpret_cast<const void*>(next));
  __builtin_prefetch(
      reinterpret_cast<const void*>(next + static_cast<uintptr_t>((rows - 1) * down * size)));
}

// Copies a rows x cols block, element (r, c) at src[r * down + c * across],
// into dst row-major with rows `stride` elements long. Walking r innermost reads along
// memory. Elements move as bytes (a memcpy of one element compiles to one load):
// user memory may be unaligned, and its elements are not T's.
template <typename T>
void pack(const char* src, int64_t down, int64_t across, int64_t rows, int64_t cols, char* dst,
          int64_t stride) {
  constexpr int64_t size = sizeof(T);
  for (int64_t c = 0; c < cols; ++c) {
    const char* column = src + c * across * size;
    prefetch_next_column(column, down, across, rows, size);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + (r * stride + c) * size, column + r * down * size, size);
  }
}

#if defined(__x86_64__)
// A block of B x B elements of `size` bytes, B = 16 / size, transposed in 16-byte registers: B
// loads along memory (a column of the tile each), log2(B) rounds that interleave the first half
// of the registers with the second, B stores (a row of the tile each). Each round rotates the
// bits of an element's (register, lane) index by one, so log2(B) of them swap the two.
template <int size> __m128i interleave_lo(__m128i a, __m128i b) {
  if constexpr (size == 1) return _mm_unpacklo_epi8(a, b);
  if constexpr (size == 2) return _mm_unpacklo_epi16(a, b);
  if constexpr (size == 4) return _mm_unpacklo_epi32(a, b);
  if constexpr (size == 8) return _mm_unpacklo_epi64(a, b);
}
template <int size> __m128i interleave_hi(__m128i a, __m128i b) {
  if constexpr (size == 1) return _mm_unpackhi_epi8(a, b);
  if constexpr (size == 2) return _mm_unpackhi_epi16(a, b);
  if constexpr (size == 4) return _mm_unpackhi_epi32(a, b);
  if constexpr (size == 8) return _mm_unpackhi_epi64(a, b);
}

template <int size>
void pack_block_sse2(const char* src, int64_t across, char* dst, int64_t stride) {
  constexpr int B = 16 / size;
  __m128i v[B], t[B];
  for (int c = 0; c < B; ++c)
    v[c] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + c * across * size));
  for (int round = 1; round < B; round *= 2) {
    for (int i = 0; i < B / 2; ++i) {
      t[2 * i] = interleave_lo<size>(v[i], v[i + B / 2]);
      t[2 * i + 1] = interleave_hi<size>(v[i], v[i + B / 2]);
    }
    std::copy(t, t + B, v);
  }
  for (int r = 0; r < B; ++r)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + r * stride * size), v[r]);
}

// 8 x 8 blocks of 4-byte elements transposed in AVX2 registers: 8 loads along memory, 24
// shuffles, 8 stores, where the element loop below takes 8 instructions per element.
__attribute__((target("avx2"))) void pack8x8(const char* src, int64_t across, char* dst,
                                             int64_t stride) {
  __m256 v[8], t[8];
  for (int c = 0; c < 8; ++c)
    v[c] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + c * across * 4));
  for (int c = 0; c < 8; c += 2) {
    t[c] = _mm256_unpacklo_ps(v[c], v[c + 1]);
    t[c + 1] = _mm256_unpackhi_ps(v[c], v[c + 1]);
  }
  for (int c = 0; c < 8; c += 4)
    for (int k = 0; k < 2; ++k) {
      v[c + 2 * k] = _mm256_shuffle_ps(t[c + k], t[c + k + 2], 0x44);
      v[c + 2 * k + 1] = _mm256_shuffle_ps(t[c + k], t[c + k + 2], 0xee);
    }
  // v[k], k < 4: rows k and k + 4 of columns 0..3; v[k + 4]: the same rows of columns 4..7.
  for (int k = 0; k < 4; ++k) {
    float* lo = reinterpret_cast<float*>(dst + k * stride * 4);
    float* hi = reinterpret_cast<float*>(dst + (k + 4) * stride * 4);
    _mm256_storeu_ps(lo, _mm256_permute2f128_ps(v[k], v[k + 4], 0x20));
    _mm256_storeu_ps(hi, _mm256_permute2f128_ps(v[k], v[k + 4], 0x31));
  }
}

// 4 x 4 blocks of 8-byte elements in AVX2 registers: 4 loads, 8 shuffles, 4 stores.
__attribute__((target("avx2"))) void pack4x4(const char* src, int64_t across, char* dst,
                                             int64_t stride) {
  __m256d v[4];
  for (int c = 0; c < 4; ++c)
    v[c] = _mm256_loadu_pd(reinterpret_cast<const double*>(src + c * across * 8));
  // Rows 0 and 2 of columns (0, 1) and (2, 3); rows 1 and 3 likewise.
  const __m256d even01 = _mm256_unpacklo_pd(v[0], v[1]), odd01 = _mm256_unpackhi_pd(v[0], v[1]);
  const __m256d even23 = _mm256_unpacklo_pd(v[2], v[3]), odd23 = _mm256_unpackhi_pd(v[2], v[3]);
  auto row = [&](int r) { return reinterpret_cast<double*>(dst + r * stride * 8); };
  _mm256_storeu_pd(row(0), _mm256_permute2f128_pd(even01, even23, 0x20));
  _mm256_storeu_pd(row(1), _mm256_permute2f128_pd(odd01, odd23, 0x20));
  _mm256_storeu_pd(row(2), _mm256_permute2f128_pd(even01, even23, 0x31));
  _mm256_storeu_pd(row(3), _mm256_permute2f128_pd(odd01, odd23, 0x31));
}

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

#if defined(__x86_64__)
// pack() of B x B blocks, each transposed in registers by `block`, the edges element by element.
// Needs the elements along r adjacent in memory (down == 1).
template <typename T, int64_t B, auto block>
void pack_in_blocks(const char* src, int64_t across, int64_t rows, int64_t cols, char* dst,
                    int64_t stride) {
  constexpr int64_t size = sizeof(T);
  const int64_t rows_b = rows / B * B, cols_b = cols / B * B;
  for (int64_t c = 0; c < cols_b; c += B) {
    for (int64_t k = 0; k < B; ++k)
      prefetch_next_column(src + (c + k) * across * size, 1, across, rows, size);
    for (int64_t r = 0; r < rows_b; r += B)
      block(src + (r + c * across) * size, across, dst + (r * stride + c) * size, stride);
  }
  if (rows_b < rows)
    pack<T>(src + rows_b * size, 1, across, rows - rows_b, cols_b, dst + rows_b * stride * size,
            stride);
  if (cols_b < cols)
    pack<T>(src + cols_b * across * size, 1, across, rows, cols - cols_b, dst + cols_b * size,
            stride);
}
#endif

// pack() in blocks transposed in registers where the elements along r are adjacent: 32-byte
// (AVX2) ones for 4- and 8-byte elements where the CPU has AVX2, 16-byte ones otherwise. Other
// strides (and other CPUs) take the element loop.
template <typename T>
void pack_blocked(const char* src, int64_t down, int64_t across, int64_t rows, int64_t cols,
                  char* dst, int64_t stride) {
  constexpr int size = sizeof(T);
#if defined(__x86_64__)
  if (down == 1) {
    if constexpr (size == 4)
      if (has_avx2()) return pack_in_blocks<T, 8, pack8x8>(src, across, rows, cols, dst, stride);
    if constexpr (size == 8)
      if (has_avx2()) return pack_in_blocks<T, 4, pack4x4>(src, across, rows, cols, dst, stride);
    return pack_in_blocks<T, 16 / size, pack_block_sse2<size>>(src, across, rows, cols, dst,
                                                               stride);
  }
#endif
  pack<T>(src, down, across, rows, cols, dst, stride);
}

// A transposing launch's tiles: `rows` rows, each one call of the kernel and, in a transposed
// input, a run of memory that packing reads along; `cols` columns, each output row's run.
//
// Where the transposed inputs come from memory (larger than kLargeTransposed), long runs both
// ways matter most: rows of 4 KB of floats, 1024 of them, and 64 columns (an output run of 256
// bytes) took tj-bench's transposed 4096 x 4096 float32 read (x.t() * 2 + 1) from 5.2-5.6 to
// 4.7-5.1 ms on a 2-core Zen 4 beside 64 x 128 tiles (2048 x 64: 4.7-4.8; 1024 x 128: 4.8-4.9;
// 512 x 64: 5.0; 1024 x 32, a call per 32 elements: 5.7-5.8). Such a tile holds 256 KB of each
// packed input, which L2 keeps while the kernel reads it back. Where they sit in the cache, the
// kernel calls count instead: 64 x 128 tiles of floats (a transposed 256 x 256 in 16 us, where
// the large tiles' twice as many calls took 29), longer rows of narrower elements.
struct TileShape {
  int64_t rows, cols;
};
constexpr int64_t kTileBytes = int64_t{256} << 10, kLargeTransposed = int64_t{8} << 20;

TileShape tile_shape(int64_t elements, size_t widest_packed) {
  const auto item = static_cast<int64_t>(widest_packed);
  if (elements * item < kLargeTransposed) return {64, std::max<int64_t>(128, 512 / item)};
  const int64_t cols = std::max<int64_t>(64, 256 / item);
  return {std::min<int64_t>(1024, kTileBytes / (cols * item)), cols};
}

// Each thread's packed tiles, kept from launch to launch: a tile is larger than what malloc
// hands out from its heap, so a buffer made per launch would be mapped and faulted in anew.
std::vector<char>& tile_buffer(size_t slot, size_t bytes) {
  thread_local std::vector<std::vector<char>> buffers;
  if (buffers.size() <= slot) buffers.resize(slot + 1);
  if (buffers[slot].size() < bytes) buffers[slot].resize(bytes);
  return buffers[slot];
}

// Walks a transposing launch in tiles. Each transposed input's
// tile is first packed into a small row-major buffer (reading it along
// memory), and the kernel reads the buffer: its stride is a run-time value,
// so the same compiled kernel serves, now over contiguous memory.
void run_tiled(const Launch& l, llvmjit::KernelFn fn, const std::vector<void*>& ptrs0,
               const std::vector<int64_t>& inner0, const int64_t* rstride,
               std::atomic<int32_t>& err) {
  const size_t nd = l.domain.size(), ns = l.slots.size();
  const int64_t rows = l.domain[nd - 2], cols = l.domain[nd - 1];
  size_t widest = 1;
  for (size_t s = 0; s < ns; ++s)
    if (transposed_input(l, s)) widest = std::max(widest, itemsize(l.kernel.slots[s].dtype));
  int64_t elements = 1;
  for (int64_t e : l.domain)
    elements *= e;
  const TileShape ts = tile_shape(elements, widest);
  const int64_t row_tiles = (rows + ts.rows - 1) / ts.rows,
                col_tiles = (cols + ts.cols - 1) / ts.cols;
  int64_t outer = 1;
  for (size_t d = 0; d + 2 < nd; ++d)
    outer *= l.domain[d];
  std::vector<char> packed(ns);
  // The item size of each output written along its rows through the cache (0 for other slots):
  // each row of a tile is a short run of memory that no hardware prefetcher predicts, so the same
  // row of the next tile along (c0 + ts.cols) is prefetched for writing while this one
  // computes. The transposed 4096 x 4096 read of tj-bench went from 17-19 to 10.5-11 ms. An
  // output written around the cache (a large one) is not prefetched: it would bring into the
  // cache the lines its stores then have to evict.
  std::vector<int64_t> out_item(ns, 0);
  for (size_t s = 0; s < ns; ++s) {
    packed[s] = transposed_input(l, s);
    if (l.kernel.slots[s].role == kir::Slot::Role::Output && l.slots[s].strides[nd - 1] == 1 &&
        !l.kernel.slots[s].stream)
      out_item[s] = static_cast<int64_t>(itemsize(l.kernel.slots[s].dtype));
  }
  auto body = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> base(ns), tile(ns), inner = inner0;
    std::vector<void*> ptrs = ptrs0;
    std::vector<char*> buffers(ns);
    for (size_t s = 0; s < ns; ++s)
      if (packed[s]) {
        buffers[s] =
            tile_buffer(s, size_t(ts.rows * ts.cols) * itemsize(l.kernel.slots[s].dtype)).data();
        ptrs[s] = buffers[s];
        inner[s] = 1;
      }
    int32_t local_err = 0;
    for (int64_t t = begin; t < end; ++t) {
      // Across the columns first (down the rows first was 1.2x slower).
      int64_t col_tile = t % col_tiles, row_tile = t / col_tiles % row_tiles;
      int64_t rem = t / col_tiles / row_tiles;
      const int64_t r0 = row_tile * ts.rows, c0 = col_tile * ts.cols;
      const int64_t nr = std::min(ts.rows, rows - r0), nc = std::min(ts.cols, cols - c0);
      for (size_t s = 0; s < ns; ++s)
        tile[s] =
            l.slots[s].base + r0 * l.slots[s].strides[nd - 2] + c0 * l.slots[s].strides[nd - 1];
      for (size_t d = nd - 2; d-- > 0;) {
        for (size_t s = 0; s < ns; ++s)
          tile[s] += rem % l.domain[d] * l.slots[s].strides[d];
        rem /= l.domain[d];
      }
      for (size_t s = 0; s < ns; ++s) {
        if (!packed[s]) continue;
        const size_t item = itemsize(l.kernel.slots[s].dtype);
        const char* src = static_cast<const char*>(ptrs0[s]) + tile[s] * int64_t(item);
        char* dst = buffers[s];
        const int64_t down = l.slots[s].strides[nd - 2], across = l.slots[s].strides[nd - 1];
        switch (item) {
        case 1:
          pack_blocked<uint8_t>(src, down, across, nr, nc, dst, ts.cols);
          break;
        case 2:
          pack_blocked<uint16_t>(src, down, across, nr, nc, dst, ts.cols);
          break;
        case 4:
          pack_blocked<uint32_t>(src, down, across, nr, nc, dst, ts.cols);
          break;
        default:
          pack_blocked<uint64_t>(src, down, across, nr, nc, dst, ts.cols);
          break;
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        for (size_t s = 0; s < ns; ++s) {
          base[s] = packed[s] ? r * ts.cols : tile[s] + r * l.slots[s].strides[nd - 2];
          if (out_item[s]) { // past the last tile the address lies outside: only prefetched
            const auto at = reinterpret_cast<uintptr_t>(ptrs0[s]) +
                            static_cast<uintptr_t>((base[s] + ts.cols) * out_item[s]);
            for (int64_t b = 0; b < ts.cols * out_item[s]; b += kCacheLine)
              __builtin_prefetch(reinterpret_cast<const void*>(at + static_cast<uintptr_t>(b)), 1);
          }
        }
        fn(nc, ptrs.data(), base.data(), inner.data(), l.params.data(), &local_err, 1, rstride);
      }
    }
    if (local_err) err.fetch_or(local_err);
  };
  parallel_for(outer * row_tiles * col_tiles, std::max<int64_t>(1, kGrain / (ts.rows * ts.cols)), 1,
               body);
}

// Whether a scattering launch's stores move along domain dim d for every scattering slot: then
// its slices along d write apart (a scatter's output is fresh row-major memory, where the index
// only moves along the scattered dim).
bool scatters_apart_along(const Launch& l, size_t d) {
  bool apart = l.domain.size() >= 2;
  for (const auto& st : l.kernel.stores)
    apart &= !st.scatters() || l.slots[size_t(st.slot)].strides[d] != 0;
  return apart;
}

// Rows of a table that a launch reads or writes at places its data picks: a Gather's or a
// scattering store's, whose index is the same along the launch's rows (an embedding's rows and
// their gradient). Such a row lies anywhere in the table, where no hardware prefetcher finds it,
// so the executor reads the index of the launch's row about 8 KiB of rows on and prefetches that
// row (for writing, a scatter's) while this one runs. 63,550 rows of 264 floats on two threads
// of a Zen 4, from a table in memory (138 MB): gathered 7.1-8.6 -> 5.7-6.6 ms, their gradient
// scattered 11.2-17.5 -> 7.7-9.9 ms. From a 17 MB table that neighbours evicted from the cache,
// gathered 8.0-8.6 -> 4.1-4.9 ms; while it stays in the cache, the same either way. (8 rows
// ahead; 4 and 16 were slower in a plain C++ loop.)
struct PlacedRow {
  int slot = -1, index = -1;      // the table's slot; the slot holding each row's index
  size_t index_size = 0;          // bytes of an index: int64 or int32
  uint64_t stride = 0, bound = 0; // elements between the table's rows; its rows
  bool write = false;
};

std::vector<PlacedRow> placed_rows(const Launch& l) {
  const size_t nd = l.domain.size();
  const kir::Kernel& k = l.kernel;
  std::vector<PlacedRow> rows;
  if (l.r != 1 || nd < 2 || k.has_row_loops()) return rows;
  auto param = [&](int32_t v) -> const uint64_t* {
    const kir::Value& x = k.values[size_t(v)];
    return x.op == ir::Op::Const && x.param >= 0 ? &l.params[size_t(x.param)] : nullptr;
  };
  // The table in `slot`, along the launch's rows, at index value `at`.
  auto add = [&](int slot, int32_t at, int32_t stride, int32_t bound, bool write) {
    const kir::Value* index = &k.values[size_t(at)];
    if (index->op == ir::Op::Cast) index = &k.values[size_t(index->src[0])];
    if (k.slots[size_t(slot)].stride != kir::StrideKind::Contiguous ||
        index->op != ir::Op::Buffer ||
        k.slots[size_t(index->slot)].stride != kir::StrideKind::Broadcast ||
        !l.slots[size_t(index->slot)].storage || !param(stride) || !param(bound))
      return;
    const DType t = k.slots[size_t(index->slot)].dtype;
    if (t == kInt64 || t == kInt32)
      rows.push_back({slot, index->slot, itemsize(t), *param(stride), *param(bound), write});
  };
  for (const kir::Value& v : k.values)
    if (v.op == ir::Op::Gather && k.slots[size_t(v.slot)].role == kir::Slot::Role::Input)
      add(v.slot, v.src[0], v.src[1], v.src[2], false);
  for (const kir::Store& st : k.stores)
    if (st.scatters()) add(st.slot, st.at, st.stride, st.bound, true);
  return rows;
}

// The index of a launch's row in `p`'s index slot (base: that slot's base at the row).
int64_t index_at(const PlacedRow& p, void* const* ptrs, int64_t base) {
  const char* at = static_cast<const char*>(ptrs[p.index]) + base * int64_t(p.index_size);
  if (p.index_size == 8) {
    int64_t v = 0;
    std::memcpy(&v, at, 8);
    return v;
  }
  int32_t v = 0;
  std::memcpy(&v, at, 4);
  return v;
}

// Prefetches the rows of `placed` that the launch's row about 8 KiB of rows after the current one
// reads or writes, where that row lies in the launch's plane (idx: the current row's index; base:
// its slots' bases, at the first of the `elems` elements a call takes).
void prefetch_ahead(const Launch& l, const std::vector<PlacedRow>& placed, void* const* ptrs,
                    const int64_t* base, const int64_t* idx, int64_t elems) {
  const size_t nd = l.domain.size();
  for (const PlacedRow& p : placed) {
    const auto item = int64_t(itemsize(l.kernel.slots[size_t(p.slot)].dtype));
    const int64_t bytes = elems * item;
    const int64_t ahead = std::clamp<int64_t>(8192 / std::max<int64_t>(bytes, 1), 1, 64);
    if (idx[nd - 2] + ahead >= l.domain[nd - 2]) continue;
    auto at = [&](int s) { return base[s] + ahead * l.slots[size_t(s)].strides[nd - 2]; };
    const int64_t row = index_at(p, ptrs, at(p.index));
    if (uint64_t(row) >= p.bound) continue; // the kernel reports it
    // Integer arithmetic: a prefetch may touch any address, a pointer may not point anywhere.
    const uintptr_t from = reinterpret_cast<uintptr_t>(ptrs[p.slot]) +
                           uintptr_t(at(p.slot) + row * int64_t(p.stride)) * uintptr_t(item);
    for (int64_t b = 0; b < bytes; b += kCacheLine)
      if (p.write)
        __builtin_prefetch(reinterpret_cast<const void*>(from + uintptr_t(b)), 1);
      else
        __builtin_prefetch(reinterpret_cast<const void*>(from + uintptr_t(b)));
  }
}

// A scattering launch whose one scattering store writes whole rows of a table at the rows its
// index names, the same along its innermost dim (an embedding's gradient, index_add along dim
// 0): each thread takes the launch's rows whose table row lies in its share of the table, every
// row in order, so two writes to one element come in the same order as on one thread. The table's
// row, or null where no such store exists.
const PlacedRow* scatters_whole_rows(const Launch& l, const std::vector<PlacedRow>& placed) {
  const size_t nd = l.domain.size();
  if (nd < 2 || l.domain[nd - 1] <= 0) return nullptr;
  const PlacedRow* write = nullptr;
  for (const PlacedRow& p : placed)
    if (p.write) {
      if (write) return nullptr;
      write = &p;
    }
  // The scatter is the launch's one store, and no input reads the table: an element's writes and
  // reads then all come from the rows its index names, which one thread runs in order.
  if (!write || l.kernel.stores.size() != 1 || !l.kernel.stores[0].scatters() ||
      write->stride < uint64_t(l.domain[nd - 1]))
    return nullptr;
  const auto& storage = l.slots[size_t(write->slot)].storage;
  for (size_t s = 0; s < l.slots.size(); ++s)
    if (int(s) != write->slot && l.kernel.slots[s].role == kir::Slot::Role::Input &&
        l.slots[s].storage == storage)
      return nullptr;
  // The row its index names alone places a write: the table does not move along the outer dims.
  const SlotBinding& table = l.slots[size_t(write->slot)];
  for (size_t d = 0; d + 1 < nd; ++d)
    if (table.strides[d] != 0) return nullptr;
  return write;
}

// Splitting each row's columns instead (run_columns), the threads shared a cache line where their
// runs met, in the middle of every row and, for rows not on a line boundary, at its ends, and
// each write to such a line moved it from one core to the other: on a 2-core Zen 4, 63,550 rows
// of 264 floats added into a 16,384-row table (tj-bench's scatter add) took 8.2-8.8 ms (28-33% of
// the copy bandwidth), and 3.6-4.9 ms (50-73%) split by table rows. The shares are equal ranges of
// the table's rows: indices crowded into one range load one thread.
void run_by_table_row(const Launch& l, const PlacedRow& write, llvmjit::KernelFn fn,
                      const std::vector<void*>& ptrs, const std::vector<int64_t>& inner,
                      const int64_t* rstride, std::atomic<int32_t>& err) {
  const size_t nd = l.domain.size(), ns = l.slots.size();
  const int64_t cols = l.domain[nd - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < nd; ++d)
    rows *= l.domain[d];
  const auto item = int64_t(itemsize(l.kernel.slots[size_t(write.slot)].dtype));
  auto base_of = [&](int64_t row, size_t s) {
    int64_t b = l.slots[s].base;
    for (size_t d = nd - 1; d-- > 0;) {
      b += row % l.domain[d] * l.slots[s].strides[d];
      row /= l.domain[d];
    }
    return b;
  };
  const int64_t threads = std::min<int64_t>(num_threads(), rows);
  parallel_for(threads, 1, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      // This thread's share of the table's rows; an index out of range goes to the first, whose
      // kernel call reports it.
      const uint64_t lo = write.bound * uint64_t(t) / uint64_t(threads),
                     hi = write.bound * uint64_t(t + 1) / uint64_t(threads);
      std::vector<int64_t> mine;
      for (int64_t row = 0; row < rows; ++row) {
        const auto at = uint64_t(index_at(write, ptrs.data(), base_of(row, size_t(write.index))));
        if ((at >= lo && at < hi) || (t == 0 && at >= write.bound)) mine.push_back(row);
      }
      std::vector<int64_t> base(ns);
      int32_t local_err = 0;
      constexpr size_t kAhead = 8;
      for (size_t i = 0; i < mine.size(); ++i) {
        if (i + kAhead < mine.size()) {
          const int64_t ahead = mine[i + kAhead];
          const uint64_t at =
              uint64_t(index_at(write, ptrs.data(), base_of(ahead, size_t(write.index))));
          if (at < write.bound) {
            // Integer arithmetic: a prefetch may touch any address, a pointer may not.
            const uintptr_t from =
                reinterpret_cast<uintptr_t>(ptrs[size_t(write.slot)]) +
                uintptr_t(base_of(ahead, size_t(write.slot)) + int64_t(at * write.stride)) *
                    uintptr_t(item);
            for (int64_t b = 0; b < cols * item; b += kCacheLine)
              __builtin_prefetch(reinterpret_cast<const void*>(from + uintptr_t(b)), 1);
          }
        }
        for (size_t sl = 0; sl < ns; ++sl)
          base[sl] = base_of(mine[i], sl);
        fn(cols, ptrs.data(), base.data(), inner.data(), l.params.data(), &local_err, l.r, rstride);
      }
      if (local_err) err.fetch_or(local_err);
    }
  });
}

// A scattering launch whose stores move along its innermost dim but not its outermost (an
// embedding's gradient: rows added into the rows their indices name): chunks of columns run in
// parallel, each over every row in order, so two writes to one element come in the same order
// as on one thread.
void run_columns(const Launch& l, llvmjit::KernelFn fn, const std::vector<void*>& ptrs,
                 const std::vector<int64_t>& inner, const int64_t* rstride,
                 std::atomic<int32_t>& err) {
  const size_t nd = l.domain.size(), ns = l.slots.size();
  const int64_t cols = l.domain[nd - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < nd; ++d)
    rows *= l.domain[d];
  const int64_t grain = std::max<int64_t>(16, kGrain / std::max<int64_t>(rows, 1));
  const std::vector<PlacedRow> placed = placed_rows(l);
  parallel_for(cols, grain, 16, [&](int64_t c0, int64_t c1) {
    std::vector<int64_t> idx(nd, 0), base(ns);
    int32_t local_err = 0;
    for (int64_t row = 0; row < rows; ++row) {
      for (size_t s = 0; s < ns; ++s) {
        int64_t b = l.slots[s].base + c0 * l.slots[s].strides[nd - 1];
        for (size_t d = 0; d + 1 < nd; ++d)
          b += idx[d] * l.slots[s].strides[d];
        base[s] = b;
      }
      if (!placed.empty()) prefetch_ahead(l, placed, ptrs.data(), base.data(), idx.data(), c1 - c0);
      fn(c1 - c0, ptrs.data(), base.data(), inner.data(), l.params.data(), &local_err, l.r,
         rstride);
      for (size_t d = nd - 1; d-- > 0;) {
        if (++idx[d] < l.domain[d]) break;
        idx[d] = 0;
      }
    }
    if (local_err) err.fetch_or(local_err);
  });
}

// Rows shorter than this many elements are walked as one flat run where the launch allows it
// (flat_rows); a call per row costs more than its elements. Flat calls take as many whole rows
// as fit in kFlatRun elements (at least one).
constexpr int64_t kShortRow = 256, kFlatRun = 1024;

// How a launch of short rows runs as one flat run of calls (run_flat): possible when every slot
// either lies row-major over the whole domain (element k of the flat index at base + k) or is the
// same in every row (a bias); the latter read from `repeated`, the row's elements laid end to end
// kFlatRun / w times, so that any run starting on a row boundary reads them with stride 1.
struct FlatRows {
  int64_t w = 0, run = 0;                  // the row's length; elements per call (a multiple of w)
  std::vector<std::vector<char>> repeated; // per slot: empty for a row-major one
};

std::optional<FlatRows> flat_rows(const Launch& l) {
  const size_t nd = l.domain.size();
  if (l.r != 1 || nd < 2 || l.kernel.scatters()) return std::nullopt;
  const int64_t w = l.domain[nd - 1];
  if (w <= 0 || w >= kShortRow) return std::nullopt;
  // Values that depend on where a row starts or ends: a scan runs along the row, a gather reads
  // at an access of the domain.
  if (l.kernel.gathers() || l.kernel.has_scan()) return std::nullopt;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < nd; ++d)
    rows *= l.domain[d];
  if (rows < 2) return std::nullopt;
  // Which slots repeat, decided for all before any is copied.
  std::vector<char> repeats(l.slots.size(), 0);
  for (size_t s = 0; s < l.slots.size(); ++s) {
    const kir::Slot& k = l.kernel.slots[s];
    const SlotBinding& b = l.slots[s];
    if (k.next_to >= 0 || k.stride == kir::StrideKind::Pairs) return std::nullopt;
    bool row_major = b.strides[nd - 1] == 1, same = true;
    for (size_t d = nd - 1; d-- > 0;) {
      row_major &= b.strides[d] == b.strides[d + 1] * l.domain[d + 1];
      same &= b.strides[d] == 0;
    }
    if (row_major) continue;
    if (!same || !b.storage || k.role != kir::Slot::Role::Input) return std::nullopt;
    repeats[s] = 1;
  }
  // Without a repeated slot the launch is one run already (its dims merge).
  if (std::find(repeats.begin(), repeats.end(), 1) == repeats.end()) return std::nullopt;
  FlatRows f{w, std::clamp<int64_t>(kFlatRun / w, 1, rows) * w, {}};
  f.repeated.resize(l.slots.size());
  for (size_t s = 0; s < l.slots.size(); ++s) {
    if (!repeats[s]) continue;
    const SlotBinding& b = l.slots[s];
    const int64_t item = static_cast<int64_t>(itemsize(l.kernel.slots[s].dtype));
    const char* src = static_cast<const char*>(b.storage->data());
    std::vector<char>& r = f.repeated[s];
    r.resize(size_t(f.run * item));
    for (int64_t e = 0; e < f.run; ++e)
      std::memcpy(r.data() + e * item, src + (b.base + e % w * b.strides[nd - 1]) * item,
                  size_t(item));
  }
  return f;
}

// Walks a launch of short rows as flat runs of f.run elements over the thread pool, each
// starting on a row boundary.
void run_flat(const Launch& l, const FlatRows& f, llvmjit::KernelFn fn,
              const std::vector<void*>& ptrs0, const int64_t* rstride, std::atomic<int32_t>& err) {
  const size_t ns = l.slots.size();
  int64_t total = 1;
  for (int64_t d : l.domain)
    total *= d;
  std::vector<void*> ptrs = ptrs0;
  std::vector<int64_t> inner(ns, 1);
  for (size_t s = 0; s < ns; ++s)
    if (!f.repeated[s].empty()) ptrs[s] = const_cast<char*>(f.repeated[s].data());
  const int64_t runs = (total + f.run - 1) / f.run;
  parallel_for(runs, std::max<int64_t>(1, kGrain / f.run), 1, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> base(ns);
    int32_t local_err = 0;
    for (int64_t c = lo; c < hi; ++c) {
      const int64_t start = c * f.run;
      for (size_t s = 0; s < ns; ++s)
        base[s] = f.repeated[s].empty() ? l.slots[s].base + start : 0;
      fn(std::min(f.run, total - start), ptrs.data(), base.data(), inner.data(), l.params.data(),
         &local_err, 1, rstride);
    }
    if (local_err) err.fetch_or(local_err);
  });
}

// The elements [begin, end) of the launch's domain, in row-major order, on this thread: a call
// per (part of a) row, each whole row first prefetching the `placed` rows of a later one.
void run_span(const Launch& l, llvmjit::KernelFn fn, void* const* ptrs, const int64_t* inner,
              const int64_t* rstride, int64_t begin, int64_t end, int32_t& err,
              const std::vector<PlacedRow>& placed = {}) {
  const size_t nd = l.domain.size(), ns = l.slots.size();
  // On the stack where they fit: the GEMM's epilogue calls this for every run of C's rows.
  constexpr size_t kInline = 32;
  int64_t idx_inline[kInline], base_inline[kInline];
  std::vector<int64_t> idx_heap(nd > kInline ? nd : 0), base_heap(ns > kInline ? ns : 0);
  int64_t* idx = nd > kInline ? idx_heap.data() : idx_inline;
  int64_t* base = ns > kInline ? base_heap.data() : base_inline;
  std::fill(idx, idx + nd, 0);
  int64_t rem = begin;
  for (size_t d = nd; d-- > 0;) {
    idx[d] = rem % l.domain[d];
    rem /= l.domain[d];
  }
  // Rows are short where the innermost dim is (a bias over a few features): from one whole row
  // to the next in the same plane the bases only step, and are not recomputed.
  bool stepped = false;
  for (int64_t pos = begin; pos < end;) {
    int64_t n = std::min(l.domain[nd - 1] - idx[nd - 1], end - pos);
    if (!stepped)
      for (size_t s = 0; s < ns; ++s) {
        int64_t b = l.slots[s].base;
        for (size_t d = 0; d < nd; ++d)
          b += idx[d] * l.slots[s].strides[d];
        base[s] = b;
      }
    if (!placed.empty() && idx[nd - 1] == 0) prefetch_ahead(l, placed, ptrs, base, idx, n);
    fn(n, ptrs, base, inner, l.params.data(), &err, l.r, rstride);
    pos += n;
    const bool whole_row = idx[nd - 1] == 0;
    idx[nd - 1] = 0;
    stepped = false;
    for (size_t d = nd - 1; d-- > 0;) {
      if (++idx[d] < l.domain[d]) {
        if (d == nd - 2 && whole_row) {
          for (size_t s = 0; s < ns; ++s)
            base[s] += l.slots[s].strides[d];
          stepped = true;
        }
        break;
      }
      idx[d] = 0;
    }
  }
}

// Walks the launch row by row, in chunks of whole and partial rows over the thread pool.
void run_rows(const Launch& l, llvmjit::KernelFn fn, const std::vector<void*>& ptrs,
              const std::vector<int64_t>& inner, const int64_t* rstride,
              std::atomic<int32_t>& err) {
  int64_t total = 1;
  for (int64_t d : l.domain)
    total *= d;
  // Work per output element is r: reductions split over fewer elements.
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(l.r, 1));
  int64_t align = l.r > 1 ? 1 : 64;
  const std::vector<PlacedRow> placed = placed_rows(l);
  // A kernel that walks memory along i for each j (a column sum or scan, tiled over i) reads a
  // run of every row per call. Threads sharing each row's 4 KiB page ran 2-2.5x slower than one
  // thread alone on a 2-core Zen 4 (float32 cumsum(0) of 8192 x 1024: 6.4 ms on two threads
  // taking 2 KiB each, 2.3 ms on one; sum(0) of 32768 x 256: 3.6 and 1.3 ms), while runs of whole
  // pages split well (4096 x 2048: 2.8 ms on two, 3.2 ms on one). So each call takes whole pages
  // of the innermost dim, or all of it where it is shorter (the next index along the outer dims
  // lies elsewhere: a sum over the middle dim of 64 x 4096 x 16 splits into runs of 16).
  const size_t nd = l.domain.size();
  if (l.r > 1 && nd > 0)
    for (size_t s = 0; s < l.slots.size(); ++s)
      if (l.slots[s].strides[nd - 1] == 1 && l.slots[s].rstride != 0 &&
          l.kernel.slots[s].role != kir::Slot::Role::Index) {
        const int64_t page = 4096 / int64_t(itemsize(l.kernel.slots[s].dtype));
        const int64_t run = std::min(page, l.domain[nd - 1]);
        grain = std::max(grain, run);
        align = std::max(align, run);
      }
  if (l.kernel.scatters() && total > 0) {
    // Its stores may meet, so its elements run in order (kernel_ir.h); but slices of the
    // outermost dim along which every scattering slot moves write apart, so those slices run in
    // parallel, each in order (run_columns splits the innermost dim).
    align = scatters_apart_along(l, 0) ? total / l.domain[0] : total;
    grain = (std::max(grain, align) + align - 1) / align * align;
  }
  parallel_for(total, grain, align, [&](int64_t begin, int64_t end) {
    int32_t local_err = 0;
    run_span(l, fn, ptrs.data(), inner.data(), rstride, begin, end, local_err, placed);
    if (local_err) err.fetch_or(local_err);
  });
}

void run_launch(const Launch& l, llvmjit::KernelFn fn) {
  const size_t nd = l.domain.size(), ns = l.slots.size();
  std::vector<void*> ptrs(ns, nullptr);
  std::vector<int64_t> inner(ns), rstride(ns);
  for (size_t s = 0; s < ns; ++s) {
    if (l.slots[s].storage) ptrs[s] = l.slots[s].storage->data();
    inner[s] = l.slots[s].strides[nd - 1];
    rstride[s] = l.slots[s].rstride;
  }
  std::atomic<int32_t> err{0};
  const PlacedRow* table_row = nullptr;
  std::vector<PlacedRow> placed;
  if (l.kernel.scatters() && !scatters_apart_along(l, 0) && num_threads() > 1) {
    placed = placed_rows(l);
    table_row = scatters_whole_rows(l, placed);
  }
  if (walks_in_tiles(l))
    run_tiled(l, fn, ptrs, inner, rstride.data(), err);
  else if (table_row)
    run_by_table_row(l, *table_row, fn, ptrs, inner, rstride.data(), err);
  else if (l.kernel.scatters() && !scatters_apart_along(l, 0) && scatters_apart_along(l, nd - 1) &&
           l.domain[nd - 1] >= 32)
    run_columns(l, fn, ptrs, inner, rstride.data(), err);
  else if (auto flat = flat_rows(l))
    run_flat(l, *flat, fn, ptrs, rstride.data(), err);
  else
    run_rows(l, fn, ptrs, inner, rstride.data(), err);
  raise_kernel_errors(err);
}

} // namespace

LaunchRanges::LaunchRanges(const Launch& l) : l_(l) {
  if (!accepts(l)) throw std::logic_error("LaunchRanges: not an elementwise launch in host memory");
  code_ = get_kernel(l.kernel);
  const size_t nd = l.domain.size(), ns = l.slots.size();
  ptrs_.assign(ns, nullptr);
  inner_.resize(ns);
  rstride_.resize(ns);
  for (size_t s = 0; s < ns; ++s) {
    if (l.slots[s].storage) ptrs_[s] = l.slots[s].storage->data();
    inner_[s] = l.slots[s].strides[nd - 1];
    rstride_[s] = l.slots[s].rstride;
  }
}

bool LaunchRanges::accepts(const Launch& l) {
  if (l.domain.empty() || l.r != 1 || l.kernel.has_row_loops() || l.kernel.scatters()) return false;
  return std::none_of(l.slots.begin(), l.slots.end(), [](const SlotBinding& s) {
    return s.storage && s.storage->device().is_cuda();
  });
}

void LaunchRanges::run(int64_t begin, int64_t end) const {
  int32_t err = 0;
  const size_t ns = l_.slots.size();
  constexpr size_t kInline = 32;
  if (l_.domain.size() == 1 && ns <= kInline) {
    // A flat domain (most epilogues): one call, its bases a step from the slots' own. The GEMM
    // calls this for every row of C, where run_span's index arithmetic cost as much as the row.
    int64_t base[kInline];
    for (size_t s = 0; s < ns; ++s)
      base[s] = l_.slots[s].base + begin * l_.slots[s].strides[0];
    code_->fn(end - begin, ptrs_.data(), base, inner_.data(), l_.params.data(), &err, l_.r,
              rstride_.data());
  } else {
    run_span(l_, code_->fn, ptrs_.data(), inner_.data(), rstride_.data(), begin, end, err);
  }
  if (err) err_.fetch_or(err);
}

void LaunchRanges::finish() const {
  // Ranges run in parallel_for's chunks are fenced there; those run on the caller (a GEMM of one
  // block) here, once: a fence per range waited for every row's stores (a 512 x 784 update
  // w - lr * grad in the product's epilogue took 180 us over the product, fenced per row).
  stores_visible();
  ++counters().kernels_launched;
  raise_kernel_errors(err_.load());
}

void raise_kernel_errors(int32_t bits) {
  if (bits & kir::kErrDivideByZero) throw Error("ZeroDivisionError");
  if (bits & kir::kErrIndex)
    throw Error("index out of range in self"); // PyTorch's words for a gather past its dim
}

void execute(const std::vector<Launch>& launches) {
  auto on_gpu = [](const Launch& l) {
    for (const auto& s : l.slots)
      if (s.storage && s.storage->device().is_cuda()) return true;
    return false;
  };
  std::vector<const Launch*> gpu;
  for (const auto& l : launches)
    if (on_gpu(l)) gpu.push_back(&l);
  if (gpu.size() > 1) prepare_cuda(gpu);
  for (const auto& l : launches) {
    if (on_gpu(l)) {
      execute_cuda(l);
      continue;
    }
    auto code = get_kernel(l.kernel);
    auto t0 = std::chrono::steady_clock::now();
    run_launch(l, code->fn);
    ++counters().kernels_launched;
    if (config().debug >= 1) {
      double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      fmt::print(stderr, "[tj] launched {} over [{}] in {:.1f} us\n", l.kernel.name,
                 fmt::join(l.domain, ", "), us);
    }
  }
}

} // namespace tj::rt
