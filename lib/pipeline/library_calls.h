// Who performs a Call node's routine (ops.def, ir/routine.h), on which device: the one place
// where the frontend asks whether a library computes a product, and where materialization
// finds the library that performs it.
#pragma once
#include <functional>
#include <string>
#include <string_view>

#include "lib/ir/node.h"
#include "lib/ir/routine.h"
#include "runtime/gemm_plan.h"
#include "runtime/lapack.h"

namespace tj::pipeline {

// A column-major BLAS: runs one planned call (runtime/gemm_plan.h). `lib_a`, `lib_b` and `lib_c`
// are the library's operands (our b, our a, the result): Buffer nodes whose storage the call's
// offsets index, in elements.
struct GemmLibrary {
  std::string name; // for dumps: "cuBLAS"
  std::function<void(const rt::GemmCall& call, const ir::Node& lib_a, const ir::Node& lib_b,
                     const ir::Node& lib_c)>
      run;
  // run() with work on C's values as they are final (rt::GemmEpilogue), where the library is ours
  // (the CPU GEMM); empty elsewhere.
  std::function<void(const rt::GemmCall& call, const ir::Node& lib_a, const ir::Node& lib_b,
                     const ir::Node& lib_c, const rt::GemmEpilogue& epilogue)>
      run_with_epilogue;
  // For dumps, where the library is ours: how it computes products of a dtype (its schedule
  // line), and the text of its generated code at a stage ("llvm", "asm"); empty otherwise.
  std::function<std::string(DType)> describe;
  std::function<std::string(DType, std::string_view stage)> code;
};

// The library that computes a (batch, n, k) x (batch, k, m) product of operands of `dtype` on
// `device`, or null: cuBLAS on a CUDA device for float32 and float64 (once loaded), sizes in its
// 32-bit range; on the CPU the packed GEMM (runtime/cpu_gemm.h) for the float32 and float64
// products worth packing (config().cpu_gemm), and for bfloat16 ones into float32 where the CPU
// has the bfloat16 dot instruction; on the CPU, the model a test installs, before that (float32
// and float64). Where none does, a product is a reduction that fuses like any other (and a Call
// of gemm is performed by such kernels). `describe` and `code` take the operands' dtype too.
const GemmLibrary* gemm_library(Device device, DType dtype, int64_t n, int64_t m, int64_t k,
                                int64_t batch);

// Tests without a GPU have a model of the library compute float32/float64 products on the CPU
// while one of these lives (one at a time); nothing else sets it.
class ScopedGemmOverride {
public:
  explicit ScopedGemmOverride(GemmLibrary library);
  ~ScopedGemmOverride();
  ScopedGemmOverride(const ScopedGemmOverride&) = delete;
  ScopedGemmOverride& operator=(const ScopedGemmOverride&) = delete;
};

// Performs the factorization a Call node `call` names (not Gemm), with its attributes, through
// LAPACK on host matrices of `dtype` (one per operand), writing its parts into `out`, `out_row`
// elements per batch entry. Nothing to do for an empty result. Materialization and the reference
// interpreter both call it.
rt::lapack::Failure factor_with_lapack(const ir::Node& call, DType dtype,
                                       const std::vector<rt::lapack::Matrices>& ops, void* out,
                                       int64_t out_row);

} // namespace tj::pipeline
