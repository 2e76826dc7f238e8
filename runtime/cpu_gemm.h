// The CPU's matrix product: packed panels, cache blocking and the generated microkernel
// (codegen/llvm/llvm_gemm.h), on the thread pool.
//
// The threads split C into a grid of blocks of whole tiles, one each, chosen for the least work
// on the busiest thread; each computes its block alone, packing what it reads, so a product has
// one barrier, at its end. Within a block the usual three levels: B is packed KC x NC at a time,
// A MC x KC at a time (in L2), and the microkernel walks one NR-wide panel of B (in L1) down the
// MR-high panels of A. Packing reads any strides, so transposed, sliced and broadcast operands
// are read where they lie, and pads the edges with zeros: edge tiles run the same microkernel
// into a scratch tile.
#pragma once
#include <cstdint>
#include <string>

#include "codegen/llvm/llvm_gemm.h"
#include "runtime/gemm_plan.h"
#include "tensorjit/dtype.h"

namespace tj::rt::cpu {

// A strided matrix per batch index, in elements: (b, i, j) at data + b * batch + i * row + j * col.
struct GemmMatrix {
  const void* data = nullptr;
  int64_t row = 0, col = 0, batch = 0;
};

// c = a @ b for `batch` matrices: a (m x k), b (k x n), c (m x n) with c.col == 1, float32 or
// float64; or bfloat16 operands into a float32 c, where llvmjit::gemm_bf16_dot(). k > 0. With an
// epilogue, each row of each MC x NC block goes to it on the thread that computed the block, as
// soon as the block's last KC step has stored it (in the cache still).
void gemm(DType dtype, int64_t batch, int64_t m, int64_t n, int64_t k, const GemmMatrix& a,
          const GemmMatrix& b, void* c, int64_t c_row, int64_t c_batch,
          const GemmEpilogue* epilogue = nullptr);

// The blocks, in elements: multiples of the microkernel's MR, k_unroll and NR.
struct GemmBlocking {
  int64_t mc = 0, kc = 0, nc = 0;
};

// KC such that an NR-wide panel of B, KC deep, fills half of L1 (the other half streams A's
// panels and C's tile), but at least 12 NR: a wide tile's k steps are long enough that its panels
// stream from L2, and C's tile is loaded and stored once per KC steps; MC such that the MC x KC
// block of A fills half of L2; NC such that the KC x NC block of B fills a quarter of the
// last-level cache, at most 4096 columns.
// TJ_GEMM_BLOCKS=MC,KC,NC (read once) overrides them, for tuning.
GemmBlocking gemm_blocking(const llvmjit::GemmMicrokernel& uk);

// gemm() with a given microkernel (its dtype) and blocking: tests run other tiles, and blocks
// small enough that small products cross every block's edge.
void gemm_with(const llvmjit::GemmMicrokernel& uk, const GemmBlocking& blocking, int64_t batch,
               int64_t m, int64_t n, int64_t k, const GemmMatrix& a, const GemmMatrix& b, void* c,
               int64_t c_row, int64_t c_batch, const GemmEpilogue* epilogue = nullptr);

// One column-major call of a plan (gemm_plan.h), as cuBLAS defines it, computed on the CPU
// (dtype: the operands', as gemm() above).
void gemm(DType dtype, const GemmCall& call, const void* a, const void* b, void* c,
          const GemmEpilogue* epilogue = nullptr);

// Whether the packed product pays for itself: a (rows x k) @ (k x cols) product that is not
// small in every dim, nor a matrix-vector product in disguise (fewer than 8 rows or columns
// would leave most of a tile's lanes idle), nor a sum of fewer than 16 products (it writes
// about as much as it computes: a fused reduction was as fast or faster, 0.2 against 0.2-0.36
// ms for 512x12x784). Others are fused reductions.
bool gemm_worthwhile(int64_t rows, int64_t cols, int64_t k);

// "microkernel 14x32 float32 (512-bit vectors), blocks MC 336 KC 384 NC 4096", for dumps.
std::string gemm_describe(DType dtype);

} // namespace tj::rt::cpu
