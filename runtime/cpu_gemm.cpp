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
  const int64_t elem = int64_t(itemsize(uk.dtype));
  const CpuCaches& caches = cpu_caches();
  const int64_t l1 = or_else(caches.l1d, 32 << 10), l2 = or_else(caches.l2, 1 << 20),
                l3 = or_else(caches.l3, 8 << 20);
  GemmBlocking b{};
  b.kc = std::max<int64_t>(uk.k_unroll, l1 / 2 / (uk.nr * elem) / uk.k_unroll * uk.k_unroll);
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

// d[p * ld_d + j] = s[j * ld_s + p] for j < w, p < kc: a transposing copy, in 4x4 (float) or 2x2
// (double) blocks transposed in SSE registers. Packing a row-major A or a transposed B is such a
// copy; element by element it was 15% of a 128x784x512 product (x @ w.t()).
template <class T>
void transpose_copy(T* d, int64_t ld_d, const T* s, int64_t ld_s, int64_t w, int64_t kc) {
  int64_t j = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    for (; j + 4 <= w; j += 4) {
      int64_t p = 0;
      for (; p + 4 <= kc; p += 4) {
        __m128 r0 = _mm_loadu_ps(s + (j + 0) * ld_s + p), r1 = _mm_loadu_ps(s + (j + 1) * ld_s + p),
               r2 = _mm_loadu_ps(s + (j + 2) * ld_s + p), r3 = _mm_loadu_ps(s + (j + 3) * ld_s + p);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(d + (p + 0) * ld_d + j, r0);
        _mm_storeu_ps(d + (p + 1) * ld_d + j, r1);
        _mm_storeu_ps(d + (p + 2) * ld_d + j, r2);
        _mm_storeu_ps(d + (p + 3) * ld_d + j, r3);
      }
      for (; p < kc; ++p)
        for (int64_t jj = j; jj < j + 4; ++jj)
          d[p * ld_d + jj] = s[jj * ld_s + p];
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
          d[p * ld_d + jj] = s[jj * ld_s + p];
    }
  }
#endif
  for (; j < w; ++j)
    for (int64_t p = 0; p < kc; ++p)
      d[p * ld_d + j] = s[j * ld_s + p];
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

template <class T> struct Product {
  const llvmjit::GemmMicrokernel& uk;
  GemmBlocking blk;
  int64_t m, n, k;
  const T* a;
  int64_t a_rs, a_cs;
  const T* b;
  int64_t b_rs, b_cs;
  T* c;
  int64_t c_rs;

  // One tile: rows x cols of C at (i0, j0), from packed panels ap and bp.
  void tile(const T* ap, const T* bp, int64_t kcp, int64_t i0, int64_t j0, bool accumulate) const {
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

  // C = A B; `parallel`: on the thread pool, else on this thread alone.
  void run(bool parallel) const {
    const int64_t threads = parallel ? num_threads() : 1;
    auto for_each = [&](int64_t count, auto&& body) {
      if (threads > 1 && count > 1)
        parallel_for(count, 1, 1, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i)
            body(i);
        });
      else
        for (int64_t i = 0; i < count; ++i)
          body(i);
    };
    // Balanced blocks: equal KC steps, NC steps, and MC blocks in a multiple of the threads
    // when there are rows enough for each to have whole panels.
    const int64_t nk = ceil_div(k, blk.kc), kc = round_up(ceil_div(k, nk), uk.k_unroll);
    const int64_t nn = ceil_div(n, blk.nc), nc = round_up(ceil_div(n, nn), uk.nr);
    int64_t nm = ceil_div(m, blk.mc);
    if (threads > 1 && m >= threads * uk.mr) nm = round_up(nm, threads);
    const int64_t mc = round_up(ceil_div(m, nm), uk.mr);
    nm = ceil_div(m, mc);
    T* bp = static_cast<T*>(t_b_panels.get(sizeof(T) * size_t(kc * nc)));
    for (int64_t jc = 0; jc < n; jc += nc) {
      const int64_t cols = std::min(nc, n - jc), panels = ceil_div(cols, uk.nr);
      // Rows too few for every thread: the columns split too.
      const int64_t nj = std::min(panels, nm >= threads ? 1 : ceil_div(threads, nm));
      const int64_t per = ceil_div(panels, nj);
      for (int64_t pc = 0; pc < k; pc += kc) {
        const int64_t depth = std::min(kc, k - pc), kcp = round_up(depth, uk.k_unroll);
        for_each(panels, [&](int64_t jp) {
          const int64_t c0 = jp * uk.nr;
          pack_b(bp + c0 * kcp, b + pc * b_rs + (jc + c0) * b_cs, b_rs, b_cs,
                 std::min(uk.nr, cols - c0), depth, kcp, uk.nr);
        });
        for_each(nm * nj, [&](int64_t task) {
          const int64_t ic = task / nj * mc, rows = std::min(mc, m - ic);
          const int64_t p0 = task % nj * per, p1 = std::min(panels, p0 + per);
          if (p0 >= p1) return;
          T* ap = static_cast<T*>(t_a_panels.get(sizeof(T) * size_t(mc * kcp)));
          pack_a(ap, a + ic * a_rs + pc * a_cs, a_rs, a_cs, rows, depth, kcp, uk.mr);
          for (int64_t jp = p0; jp < p1; ++jp)
            for (int64_t ir = 0; ir < rows; ir += uk.mr)
              tile(ap + ir * kcp, bp + jp * uk.nr * kcp, kcp, ic + ir, jc + jp * uk.nr, pc > 0);
        });
      }
    }
  }
};

template <class T>
void gemm_typed(const llvmjit::GemmMicrokernel& uk, const GemmBlocking& blk, int64_t batch,
                int64_t m, int64_t n, int64_t k, const GemmMatrix& a, const GemmMatrix& b, T* c,
                int64_t c_row, int64_t c_batch) {
  auto product = [&](int64_t i) {
    return Product<T>{uk,    blk,   m,
                      n,     k,     static_cast<const T*>(a.data) + i * a.batch,
                      a.row, a.col, static_cast<const T*>(b.data) + i * b.batch,
                      b.row, b.col, c + i * c_batch,
                      c_row};
  };
  // Many small products: one per thread at a time; else each product on all threads.
  const int64_t threads = num_threads();
  if (batch >= threads && m * n * k <= (int64_t(1) << 24)) {
    parallel_for(batch, 1, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        product(i).run(false);
    });
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    product(i).run(true);
}

} // namespace

void gemm_with(const llvmjit::GemmMicrokernel& uk, const GemmBlocking& blocking, int64_t batch,
               int64_t m, int64_t n, int64_t k, const GemmMatrix& a, const GemmMatrix& b, void* c,
               int64_t c_row, int64_t c_batch) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (k <= 0) throw std::invalid_argument("cpu gemm: k must be positive");
  if (blocking.mc % uk.mr || blocking.kc % uk.k_unroll || blocking.nc % uk.nr)
    throw std::invalid_argument("cpu gemm: blocks must be multiples of the microkernel's tile");
  if (uk.dtype == kFloat32)
    gemm_typed(uk, blocking, batch, m, n, k, a, b, static_cast<float*>(c), c_row, c_batch);
  else
    gemm_typed(uk, blocking, batch, m, n, k, a, b, static_cast<double*>(c), c_row, c_batch);
}

void gemm(DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k, const GemmMatrix& a,
          const GemmMatrix& b, void* c, int64_t c_row, int64_t c_batch) {
  const auto uk = llvmjit::gemm_microkernel(dtype); // throws for other dtypes
  gemm_with(*uk, gemm_blocking(*uk), batch, m, n, k, a, b, c, c_row, c_batch);
}

// Column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T: C^T's (j, i) lies at
// j * ldc + i, op(B)^T's (j, p) at B[j + p * ldb] when B is transposed (else B[p + j * ldb]), and
// op(A)^T's (p, i) at A[p + i * lda] when A is transposed (else A[i + p * lda]).
void gemm(DType dtype, const GemmCall& call, const void* a, const void* b, void* c) {
  const int64_t elem = int64_t(itemsize(dtype));
  auto at = [&](const void* p, int64_t offset) {
    return static_cast<const char*>(p) + offset * elem;
  };
  GemmMatrix lhs{at(b, call.offset_b), call.transb ? 1 : call.ldb, call.transb ? call.ldb : 1,
                 call.stride_b};
  GemmMatrix rhs{at(a, call.offset_a), call.transa ? 1 : call.lda, call.transa ? call.lda : 1,
                 call.stride_a};
  gemm(dtype, call.batch, call.n, call.m, call.k, lhs, rhs,
       static_cast<char*>(c) + call.offset_c * elem, call.ldc, call.stride_c);
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
