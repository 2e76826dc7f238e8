// The CPU GEMM's register-blocked microkernel, generated in LLVM IR with explicit vector types
// for the host's vector width and register count, and compiled once per dtype and process.
//
// The microkernel computes one MR x NR tile of C from packed panels (runtime/cpu_gemm.cpp packs
// them): A as kc groups of MR elements (column p of the MR rows), B as kc groups of NR elements
// (row p of the NR columns). kc is a multiple of `k_unroll` (packing pads with zeros). C's rows
// are ldc elements apart, each NR elements contiguous:
//   C[i * ldc + j] (+)= sum_p A[p * MR + i] * B[p * NR + j]
// storing when accumulate is 0, adding to C otherwise.
//
// bfloat16 operands (where the CPU has AVX512_BF16's dot instruction) come in pairs along k:
// A as kc / 2 groups of MR pairs (A[(q * MR + i) * 2 + e] is row i's element 2q + e), B as kc / 2
// groups of NR pairs; C and the accumulators are float32. Each product of two bfloat16 values is
// exact in float32, and the dot instruction adds a pair's two products to the accumulator in
// turn (denormal inputs and results as zero, as oneDNN's products do).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "tensorjit/dtype.h"

namespace tj::llvmjit {

using GemmMicrokernelFn = void (*)(int64_t kc, const void* a, const void* b, void* c, int64_t ldc,
                                   int64_t accumulate);

struct GemmMicrokernel {
  GemmMicrokernelFn fn = nullptr;
  DType dtype = kFloat32;    // C's and the accumulators'
  DType operands = kFloat32; // A's and B's: dtype, or bfloat16 into float32
  int64_t mr = 0, nr = 0;    // the tile
  int64_t k_unroll = 1;      // packed panels are padded to a multiple of it
  int64_t vector_bytes = 0;  // the vector width it was generated for
  double compile_ms = 0;
  std::string describe() const; // "14x32 float32 (512-bit vectors)"
};

// Whether the host has the bfloat16 dot instruction (AVX512_BF16) that the bfloat16 microkernel
// needs.
bool gemm_bf16_dot();

// The microkernel for float32, float64 or (gemm_bf16_dot()) bfloat16 operands on the host,
// compiled on first use (thread-safe).
// TJ_GEMM_TILE=MRxNR overrides the float32 tile chosen for the host, for tuning; float64 takes
// MR x NR/2, the same registers.
std::shared_ptr<const GemmMicrokernel> gemm_microkernel(DType dtype);

// A microkernel of another tile, compiled now (tests run every tile shape the generator can
// make): NR a multiple of the host vector's lanes, at most 32 accumulator vectors. Throws
// std::invalid_argument otherwise.
std::shared_ptr<const GemmMicrokernel> compile_gemm_microkernel(DType dtype, int64_t mr,
                                                                int64_t nr);

// What C and the accumulators hold for operands of `dtype`: float32 for bfloat16, else dtype.
DType gemm_result_dtype(DType dtype);

// The lanes of the host's vectors for the accumulators of dtype's operands.
int64_t gemm_vector_lanes(DType dtype);

// The microkernel's optimized LLVM IR and host assembly, for dumps.
std::string gemm_microkernel_ir(DType dtype);
std::string gemm_microkernel_asm(DType dtype);

} // namespace tj::llvmjit
