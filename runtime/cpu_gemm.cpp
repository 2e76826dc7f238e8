// The packed, blocked CPU GEMM (cpu_gemm.h).
#include "runtime/cpu_gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "codegen/llvm/llvm_gemm.h"
#include "runtime/machine.h"
#include "runtime/thread_pool.h"

namespace tj::rt::cpu {
namespace {

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }
int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

int64_t or_else(int64_t bytes, int64_t fallback) { return bytes > 0 ? bytes : fallback; }

// TJ_GEMM_BLOCKS, read once; null when unset.
const GemmBlocking* blocks_from_env() {
  static const std::optional<GemmBlocking> set = []() -> std::optional<GemmBlocking> {
    const char* s = std::getenv("TJ_GEMM_BLOCKS");
    if (!s || !*s) return std::nullopt;
    GemmBlocking o{};
    if (std::sscanf(s, "%ld,%ld,%ld", &o.mc, &o.kc, &o.nc) != 3 || o.mc < 1 || o.kc < 1 || o.nc < 1)
      throw std::invalid_argument(fmt::format("TJ_GEMM_BLOCKS={}: expected MC,KC,NC", s));
    return o;
  }();
  return set ? &*set : nullptr;
}

} // namespace

GemmBlocking gemm_blocking(const llvmjit::GemmMicrokernel& uk) {
  if (const GemmBlocking* o = blocks_from_env())
    return {round_up(o->mc, uk.mr), round_up(o->kc, uk.k_unroll), round_up(o->nc, uk.nr)};
  const int64_t elem = int64_t(itemsize(uk.operands));
  const CpuCaches& caches = cpu_caches();
  const int64_t l1 = or_else(caches.l1d, 32 << 10), l2 = or_else(caches.l2, 1 << 20),
                l3 = or_else(caches.l3, 8 << 20);
  GemmBlocking b{};
  // With AVX-512's 14x32 tile the L1 rule gives KC 128; 384 (an A block of 336 rows) ran
  // 2048^3 at 190-205 GFLOP/s instead of 155-185 on a 2-core Zen 4, and 512 (252 rows) faster
  // again: 2048x512x2048 0.95-0.98x oneDNN -> 0.97-1.01x, 2048^3 0.95x -> 0.97-1.01x (fewer
  // passes over C, one where k is 512). A panel's k step is 128 bytes of B and 56 of A per 28
  // FMAs (28 cycles where a core does one 512-bit FMA a cycle, as Zen 4): L2 feeds that. AVX2's
  // 6x16 keeps the L1 rule's 256.
  b.kc = std::max<int64_t>(l1 / 2 / (uk.nr * elem), 16 * uk.nr) / uk.k_unroll * uk.k_unroll;
  b.kc = std::max(b.kc, uk.k_unroll);
  b.mc = std::max<int64_t>(uk.mr, l2 / 2 / (b.kc * elem) / uk.mr * uk.mr);
  b.nc = std::clamp<int64_t>(l3 / 4 / (b.kc * elem) / uk.nr * uk.nr, uk.nr, 4096 / uk.nr * uk.nr);
  return b;
}

namespace {

// Grown on demand, 64-byte aligned, one per thread: packing buffers outlive a call.
class Scratch {
public:
  void* get(size_t bytes) {
    if (bytes > size_) {
      data_.reset(static_cast<char*>(std::aligned_alloc(64, round_up(int64_t(bytes), 64))));
      if (!data_) throw std::bad_alloc();
      size_ = bytes;
    }
    return data_.get();
  }

private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
  size_t size_ = 0;
};

thread_local Scratch t_a_panels, t_b_panels;

// One element moved as bytes: a pair of bfloat16 moves as a 32-bit word that its memory does not
// hold as one (a load of the word's type would break the aliasing rules).
template <class T> void copy_one(T* d, const T* s) { std::memcpy(d, s, sizeof(T)); }

// d[p * ld_d + j] = s[j * ld_s + p] for j < w, p < kc: a transposing copy, in 4x4 (float) or 2x2
// (double) blocks transposed in SSE registers. Packing a row-major A or a transposed B is such a
// copy; element by element it was 15% of a 128x784x512 product (x @ w.t()).
template <class T>
void transpose_copy(T* d, int64_t ld_d, const T* s, int64_t ld_s, int64_t w, int64_t kc) {
  int64_t j = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4) { // float, or a pair of bfloat16 as one word: moved, not computed
    auto load = [](const T* x) { return _mm_loadu_ps(reinterpret_cast<const float*>(x)); };
    auto store = [](T* x, __m128 v) { _mm_storeu_ps(reinterpret_cast<float*>(x), v); };
    for (; j + 4 <= w; j += 4) {
      int64_t p = 0;
      for (; p + 4 <= kc; p += 4) {
        __m128 r0 = load(s + (j + 0) * ld_s + p), r1 = load(s + (j + 1) * ld_s + p),
               r2 = load(s + (j + 2) * ld_s + p), r3 = load(s + (j + 3) * ld_s + p);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        store(d + (p + 0) * ld_d + j, r0);
        store(d + (p + 1) * ld_d + j, r1);
        store(d + (p + 2) * ld_d + j, r2);
        store(d + (p + 3) * ld_d + j, r3);
      }
      for (; p < kc; ++p)
        for (int64_t jj = j; jj < j + 4; ++jj)
          copy_one(d + p * ld_d + jj, s + jj * ld_s + p);
    }
  } else {
    for (; j + 2 <= w; j += 2) {
      int64_t p = 0;
      for (; p + 2 <= kc; p += 2) {
        const __m128d r0 = _mm_loadu_pd(s + j * ld_s + p),
                      r1 = _mm_loadu_pd(s + (j + 1) * ld_s + p);
        _mm_storeu_pd(d + p * ld_d + j, _mm_unpacklo_pd(r0, r1));
        _mm_storeu_pd(d + (p + 1) * ld_d + j, _mm_unpackhi_pd(r0, r1));
      }
      for (; p < kc; ++p)
        for (int64_t jj = j; jj < j + 2; ++jj)
          copy_one(d + p * ld_d + jj, s + jj * ld_s + p);
    }
  }
#endif
  for (; j < w; ++j)
    for (int64_t p = 0; p < kc; ++p)
      copy_one(d + p * ld_d + j, s + j * ld_s + p);
}

// Panels of `mr` rows of the rows x kc block at a: dst[panel][p][i], rows and p padded with
// zeros to mr and kcp.
template <class T>
void pack_a(T* dst, const T* a, int64_t rs, int64_t cs, int64_t rows, int64_t kc, int64_t kcp,
            int64_t mr) {
  for (int64_t r0 = 0; r0 < rows; r0 += mr) {
    const int64_t h = std::min(mr, rows - r0);
    T* d = dst + r0 * kcp;
    if (h < mr || kcp > kc) std::memset(d, 0, sizeof(T) * size_t(mr * kcp));
    if (cs == 1) {
      transpose_copy(d, mr, a + r0 * rs, rs, h, kc);
    } else if (rs == 1) { // a transposed A: each step along k is a run of the panel's rows
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(d + p * mr, a + r0 + p * cs, sizeof(T) * size_t(h));
    } else {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t i = 0; i < h; ++i)
          d[p * mr + i] = a[(r0 + i) * rs + p * cs];
    }
  }
}

// Panels of `nr` columns of the kc x cols block at b: dst[panel][p][j], padded as pack_a.
template <class T>
void pack_b(T* dst, const T* b, int64_t rs, int64_t cs, int64_t cols, int64_t kc, int64_t kcp,
            int64_t nr) {
  for (int64_t c0 = 0; c0 < cols; c0 += nr) {
    const int64_t w = std::min(nr, cols - c0);
    T* d = dst + c0 * kcp;
    if (w < nr || kcp > kc) std::memset(d, 0, sizeof(T) * size_t(nr * kcp));
    if (cs == 1) {
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(d + p * nr, b + p * rs + c0, sizeof(T) * size_t(w));
    } else if (rs == 1) {
      transpose_copy(d, nr, b + c0 * cs, cs, w, kc);
    } else {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t j = 0; j < w; ++j)
          d[p * nr + j] = b[p * rs + (c0 + j) * cs];
    }
  }
}

// bfloat16 operands (their bits), packed in pairs along k (llvm_gemm.h): dst[panel][q][i][e] is
// row i's element 2q + e, padded as pack_a. A pair that lies in memory as one aligned 32-bit
// word (rows contiguous along k, an even row stride) moves as a word, through transpose_copy.
using Bf16 = uint16_t;

bool words(const Bf16* x, int64_t stride) {
  return stride % 2 == 0 && reinterpret_cast<uintptr_t>(x) % 4 == 0;
}

void pack_pairs(Bf16* dst, const Bf16* x, int64_t step, int64_t along, int64_t count, int64_t kc,
                int64_t kcp, int64_t width) {
  // x's element (j, p) at x[j * step + p * along], for j < count of the panel's `width`.
  for (int64_t j0 = 0; j0 < count; j0 += width) {
    const int64_t h = std::min(width, count - j0);
    Bf16* d = dst + j0 * kcp;
    const Bf16* s = x + j0 * step;
    if (h < width || kcp > kc) std::memset(d, 0, sizeof(Bf16) * size_t(width * kcp));
    int64_t q = 0;
    if (along == 1 && words(s, step)) {
      q = kc / 2;
      transpose_copy(reinterpret_cast<uint32_t*>(d), width, reinterpret_cast<const uint32_t*>(s),
                     step / 2, h, q);
    }
    // Else the pair's two elements from their two runs along the panel (rows 2q and 2q + 1 of
    // a row-major B), interleaved; a last odd element's partner stays the padding's zero.
    for (; 2 * q < kc; ++q) {
      const Bf16* even = s + 2 * q * along;
      Bf16* to = d + q * width * 2;
      for (int64_t i = 0; i < h; ++i)
        to[2 * i] = even[i * step];
      if (2 * q + 1 < kc)
        for (int64_t i = 0; i < h; ++i)
          to[2 * i + 1] = even[along + i * step];
    }
  }
}

// C (T) from operands of Op: T itself, or bfloat16 bits into float32.
template <class T, class Op = T> struct Product {
  const llvmjit::GemmMicrokernel& uk;
  GemmBlocking blk;
  int64_t m, n, k;
  const Op* a;
  int64_t a_rs, a_cs;
  const Op* b;
  int64_t b_rs, b_cs;
  T* c;
  int64_t c_rs;
  const GemmEpilogue* epilogue;

  void pack_a_block(Op* dst, const Op* x, int64_t rows, int64_t depth, int64_t kcp) const {
    if constexpr (std::is_same_v<Op, Bf16>)
      pack_pairs(dst, x, a_rs, a_cs, rows, depth, kcp, uk.mr);
    else
      pack_a(dst, x, a_rs, a_cs, rows, depth, kcp, uk.mr);
  }
  void pack_b_panel(Op* dst, const Op* x, int64_t cols, int64_t depth, int64_t kcp) const {
    if constexpr (std::is_same_v<Op, Bf16>)
      pack_pairs(dst, x, b_cs, b_rs, cols, depth, kcp, uk.nr);
    else
      pack_b(dst, x, b_rs, b_cs, cols, depth, kcp, uk.nr);
  }

  // One tile: rows x cols of C at (i0, j0), from packed panels ap and bp.
  void tile(const Op* ap, const Op* bp, int64_t kcp, int64_t i0, int64_t j0,
            bool accumulate) const {
    const int64_t h = std::min(uk.mr, m - i0), w = std::min(uk.nr, n - j0);
    T* ct = c + i0 * c_rs + j0;
    if (h == uk.mr && w == uk.nr) {
      uk.fn(kcp, ap, bp, ct, c_rs, accumulate);
      return;
    }
    alignas(64) T edge[32 * 64 / sizeof(T)]; // a tile is at most 32 vectors of 64 bytes
    uk.fn(kcp, ap, bp, edge, uk.nr, 0);
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j)
        ct[i * c_rs + j] =
            accumulate ? ct[i * c_rs + j] + edge[i * uk.nr + j] : edge[i * uk.nr + j];
  }

  // The rows [i0, i1) and columns [j0, j1) of C, start to end, on this thread with its own
  // packed panels.
  void block(int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t kc) const {
    const int64_t rows = i1 - i0, cols = j1 - j0;
    // Blocks evened out over this thread's part, so that none is a sliver.
    const int64_t mc = round_up(ceil_div(rows, ceil_div(rows, blk.mc)), uk.mr);
    const int64_t nc = round_up(ceil_div(cols, ceil_div(cols, blk.nc)), uk.nr);
    Op* bp = static_cast<Op*>(t_b_panels.get(sizeof(Op) * size_t(kc * nc)));
    Op* ap = static_cast<Op*>(t_a_panels.get(sizeof(Op) * size_t(mc * kc)));
    for (int64_t jc = j0; jc < j1; jc += nc) {
      const int64_t w = std::min(nc, j1 - jc);
      for (int64_t pc = 0; pc < k; pc += kc) {
        const int64_t depth = std::min(kc, k - pc), kcp = round_up(depth, uk.k_unroll);
        for (int64_t c0 = 0; c0 < w; c0 += uk.nr)
          pack_b_panel(bp + c0 * kcp, b + pc * b_rs + (jc + c0) * b_cs, std::min(uk.nr, w - c0),
                       depth, kcp);
        for (int64_t ic = i0; ic < i1; ic += mc) {
          const int64_t h = std::min(mc, i1 - ic);
          pack_a_block(ap, a + ic * a_rs + pc * a_cs, h, depth, kcp);
          if (epilogue && pc + kc >= k) {
            // The last KC step, with an epilogue: a strip of MR rows at a time, the block's
            // width, so that each strip is final while it is in the cache still, and the
            // epilogue takes each of its rows as one run. (Run after the whole MC x NC block,
            // 252 x 784 floats outgrew L2 and the epilogue read C back from L3: w - lr * g^T x
            // at 512x784x128 cost 100 us over the product, more than a pass after it. Runs of
            // 256 columns instead cost more in calls and short streams than they saved.)
            for (int64_t ir = 0; ir < h; ir += uk.mr) {
              for (int64_t c0 = 0; c0 < w; c0 += uk.nr)
                tile(ap + ir * kcp, bp + c0 * kcp, kcp, ic + ir, jc + c0, pc > 0);
              for (int64_t i = ic + ir; i < ic + std::min(h, ir + uk.mr); ++i)
                (*epilogue)(c + i * c_rs + jc, w);
            }
            continue;
          }
          for (int64_t c0 = 0; c0 < w; c0 += uk.nr)
            for (int64_t ir = 0; ir < h; ir += uk.mr)
              tile(ap + ir * kcp, bp + c0 * kcp, kcp, ic + ir, jc + c0, pc > 0);
        }
      }
    }
  }

  // C = A B on up to `threads` threads. They split C into a grid of blocks of whole tiles, one
  // block each, which each computes alone, packing the panels of A and B it reads: one barrier,
  // at the end. Threads that share rows pack the same panels of A (and columns, of B), so the
  // grid is the one with the least work on the busiest thread, its tiles' FMAs and its packing
  // (about an element a cycle, where a core does two vectors of FMAs a cycle). The sums run
  // over the same KC steps whatever the grid: the thread count changes no bit.
  //
  // With an epilogue, a grid that splits C's columns costs more: each of a thread's rows of C
  // then borders another thread's in the middle of the row, and the epilogue's runs along it
  // met the other core's lines there (the prefetchers read past a run's end). On a 2-core Zen
  // 4, w - lr * g^T x at 512x784x128 spent about 400 cycles a row of C in its epilogue over a
  // grid of two column blocks, 10x the epilogue's time on one thread; over two row blocks, the
  // same as on one.
  void run(int64_t threads) const {
    const int64_t nk = ceil_div(k, blk.kc), kc = round_up(ceil_div(k, nk), uk.k_unroll);
    const int64_t row_tiles = ceil_div(m, uk.mr), col_tiles = ceil_div(n, uk.nr);
    const double fmas_per_cycle = 2.0 * double(uk.vector_bytes / int64_t(sizeof(T)));
    int64_t tm = 1, tn = 1;
    double best = -1;
    for (int64_t r = 1; r <= std::min(threads, row_tiles); ++r)
      for (int64_t q = 1; q <= std::min(threads / r, col_tiles); ++q) {
        const int64_t rt = ceil_div(row_tiles, r), ct = ceil_div(col_tiles, q);
        // Cycles per step of k, and the shared rows' once per product.
        const double shared_rows = epilogue && q > 1 ? 400.0 * double(rt * uk.mr) : 0.0;
        const double cost = double(k) * (double(rt * ct * uk.mr * uk.nr) / fmas_per_cycle +
                                         double(rt * uk.mr + ct * uk.nr)) +
                            shared_rows;
        if (best < 0 || cost < best) best = cost, tm = r, tn = q;
      }
    const int64_t rows_per = ceil_div(row_tiles, tm) * uk.mr,
                  cols_per = ceil_div(col_tiles, tn) * uk.nr;
    auto task = [&](int64_t t) {
      const int64_t i0 = t / tn * rows_per, j0 = t % tn * cols_per;
      if (i0 < m && j0 < n)
        block(i0, std::min(m, i0 + rows_per), j0, std::min(n, j0 + cols_per), kc);
    };
    if (tm * tn == 1) return task(0);
    parallel_for(tm * tn, 1, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t)
        task(t);
    });
  }
};

template <class T, class Op = T>
void gemm_typed(const llvmjit::GemmMicrokernel& uk, const GemmBlocking& blk, int64_t batch,
                int64_t m, int64_t n, int64_t k, const GemmMatrix& a, const GemmMatrix& b, T* c,
                int64_t c_row, int64_t c_batch, const GemmEpilogue* epilogue) {
  auto product = [&](int64_t i) {
    return Product<T, Op>{uk,    blk,     m,
                          n,     k,       static_cast<const Op*>(a.data) + i * a.batch,
                          a.row, a.col,   static_cast<const Op*>(b.data) + i * b.batch,
                          b.row, b.col,   c + i * c_batch,
                          c_row, epilogue};
  };
  // Many small products: one per thread at a time; else each product on all threads.
  const int64_t threads = num_threads();
  if (batch >= threads && m * n * k <= (int64_t(1) << 24)) {
    parallel_for(batch, 1, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        product(i).run(1);
    });
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    product(i).run(threads);
}

} // namespace

void gemm_with(const llvmjit::GemmMicrokernel& uk, const GemmBlocking& blocking, int64_t batch,
               int64_t m, int64_t n, int64_t k, const GemmMatrix& a, const GemmMatrix& b, void* c,
               int64_t c_row, int64_t c_batch, const GemmEpilogue* epilogue) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (k <= 0) throw std::invalid_argument("cpu gemm: k must be positive");
  if (blocking.mc % uk.mr || blocking.kc % uk.k_unroll || blocking.nc % uk.nr)
    throw std::invalid_argument("cpu gemm: blocks must be multiples of the microkernel's tile");
  if (uk.operands == kBFloat16)
    gemm_typed<float, Bf16>(uk, blocking, batch, m, n, k, a, b, static_cast<float*>(c), c_row,
                            c_batch, epilogue);
  else if (uk.dtype == kFloat32)
    gemm_typed(uk, blocking, batch, m, n, k, a, b, static_cast<float*>(c), c_row, c_batch,
               epilogue);
  else
    gemm_typed(uk, blocking, batch, m, n, k, a, b, static_cast<double*>(c), c_row, c_batch,
               epilogue);
}

void gemm(DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k, const GemmMatrix& a,
          const GemmMatrix& b, void* c, int64_t c_row, int64_t c_batch,
          const GemmEpilogue* epilogue) {
  const auto uk = llvmjit::gemm_microkernel(dtype); // throws for other dtypes
  gemm_with(*uk, gemm_blocking(*uk), batch, m, n, k, a, b, c, c_row, c_batch, epilogue);
}

// Column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T: C^T's (j, i) lies at
// j * ldc + i, op(B)^T's (j, p) at B[j + p * ldb] when B is transposed (else B[p + j * ldb]), and
// op(A)^T's (p, i) at A[p + i * lda] when A is transposed (else A[i + p * lda]).
void gemm(DType dtype, const GemmCall& call, const void* a, const void* b, void* c,
          const GemmEpilogue* epilogue) {
  const int64_t elem = int64_t(itemsize(dtype)),
                c_elem = int64_t(itemsize(llvmjit::gemm_result_dtype(dtype)));
  auto at = [&](const void* p, int64_t offset) {
    return static_cast<const char*>(p) + offset * elem;
  };
  GemmMatrix lhs{at(b, call.offset_b), call.transb ? 1 : call.ldb, call.transb ? call.ldb : 1,
                 call.stride_b};
  GemmMatrix rhs{at(a, call.offset_a), call.transa ? 1 : call.lda, call.transa ? call.lda : 1,
                 call.stride_a};
  gemm(dtype, call.batch, call.n, call.m, call.k, lhs, rhs,
       static_cast<char*>(c) + call.offset_c * c_elem, call.ldc, call.stride_c, epilogue);
}

bool gemm_worthwhile(int64_t rows, int64_t cols, int64_t k) {
  return std::min(rows, cols) >= 8 && k >= 16 && std::max({rows, cols, k}) >= 32;
}

std::string gemm_describe(DType dtype) {
  const auto uk = llvmjit::gemm_microkernel(dtype);
  const GemmBlocking b = gemm_blocking(*uk);
  return fmt::format("microkernel {}, blocks MC {} KC {} NC {}", uk->describe(), b.mc, b.kc, b.nc);
}

} // namespace tj::rt::cpu
