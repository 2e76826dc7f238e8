#include "lib/pipeline/library_calls.h"

#include <fmt/format.h>

#include "codegen/llvm/llvm_gemm.h"
#include "runtime/cpu_gemm.h"
#include "runtime/cuda_blas.h"
#include "tensorjit/config.h"
#include "tensorjit/error.h"

namespace tj::pipeline {
namespace {

const GemmLibrary* g_override = nullptr;

} // namespace

ScopedGemmOverride::ScopedGemmOverride(GemmLibrary library) {
  g_override = new GemmLibrary(std::move(library));
}
ScopedGemmOverride::~ScopedGemmOverride() {
  delete g_override;
  g_override = nullptr;
}

const GemmLibrary* gemm_library(Device device, DType dtype, int64_t n, int64_t m, int64_t k,
                                int64_t batch) {
  // bfloat16 operands: the CPU GEMM's dot products alone take them.
  const bool pairs = dtype == kBFloat16;
  if ((dtype != kFloat32 && dtype != kFloat64 && !pairs) || !rt::gemm_sizes_fit(n, m, k, batch))
    return nullptr;
  if (pairs && (device.is_cuda() || g_override || !llvmjit::gemm_bf16_dot())) return nullptr;
  if (g_override && !device.is_cuda()) return g_override; // the model reads host memory
  if (!device.is_cuda()) {
    if (!config().cpu_gemm || !rt::cpu::gemm_worthwhile(n, m, k)) return nullptr;
    static const GemmLibrary cpu{
        "the CPU GEMM",
        [](const rt::GemmCall& call, const ir::Node& a, const ir::Node& b, const ir::Node& c) {
          rt::cpu::gemm(a.dtype, call, a.storage->data(), b.storage->data(), c.storage->data());
        },
        [](const rt::GemmCall& call, const ir::Node& a, const ir::Node& b, const ir::Node& c,
           const rt::GemmEpilogue& epilogue) {
          rt::cpu::gemm(a.dtype, call, a.storage->data(), b.storage->data(), c.storage->data(),
                        &epilogue);
        },
        [](DType dtype) { return rt::cpu::gemm_describe(dtype); },
        [](DType dtype, std::string_view stage) {
          return stage == "llvm"  ? llvmjit::gemm_microkernel_ir(dtype)
                 : stage == "asm" ? llvmjit::gemm_microkernel_asm(dtype)
                                  : std::string();
        }};
    return &cpu;
  }
  if (!rt::cuda::blas_available()) return nullptr;
  static const GemmLibrary cublas{
      "cuBLAS",
      [](const rt::GemmCall& call, const ir::Node& a, const ir::Node& b, const ir::Node& c) {
        auto base = [](const ir::Node& t) {
          return reinterpret_cast<rt::cuda::CUdeviceptr>(t.storage->data());
        };
        rt::cuda::gemm(c.device.index(), c.dtype, call, base(a), base(b), base(c));
      },
      {},
      {},
      {}};
  return &cublas;
}

rt::lapack::Failure factor_with_lapack(const ir::Node& call, DType t,
                                       const std::vector<rt::lapack::Matrices>& ops, void* o,
                                       int64_t row) {
  namespace la = rt::lapack;
  const ir::Routine r = ir::routine(call);
  const std::vector<int64_t> p = ir::routine_params(call);
  switch (r) {
  case ir::Routine::Lu:
    return la::lu(t, ops[0], o, row);
  case ir::Routine::Solve:
    return la::solve(t, ops[0], ops[1], o, row);
  case ir::Routine::Inv:
    return la::inv(t, ops[0], o, row);
  case ir::Routine::Cholesky:
    return la::cholesky(t, ops[0], p[0] != 0, o, row);
  case ir::Routine::Qr:
    return la::qr(t, ops[0], static_cast<int>(p[0]), o, row);
  case ir::Routine::Svd:
    return la::svd(t, ops[0], p[0] != 0, p[1] != 0, o, row);
  case ir::Routine::Eigh:
    return la::eigh(t, ops[0], p[0] != 0, p[1] != 0, o, row);
  case ir::Routine::Eig:
    return la::eig(t, ops[0], p[0] != 0, o, row);
  case ir::Routine::Lstsq:
    return la::lstsq(t, ops[0], ops[1], static_cast<int>(p[0]), call.value.to_double(), o, row);
  case ir::Routine::Gemm:
    break;
  }
  throw Error(fmt::format("internal error: LAPACK performs no {}", ir::name(r)));
}

} // namespace tj::pipeline
