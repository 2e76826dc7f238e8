// The LLVM backend: lowers a kir::Kernel to LLVM IR and compiles it for the host with ORC LLJIT.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "codegen/kernel_ir.h"

namespace tj::llvmjit {

// The C signature of every compiled kernel (see kernel_ir.h); r and rstride are read only by
// kernels with Reduce values.
using KernelFn = void (*)(int64_t n, void* const* ptrs, const int64_t* base, const int64_t* stride,
                          const uint64_t* params, int32_t* err, int64_t r, const int64_t* rstride);

struct CompiledKernel {
  KernelFn fn = nullptr;
  double compile_ms = 0; // lowering + optimization + machine code, wall time
};

// Compiles a kernel for the host CPU (thread-safe; may be called from several threads).
// opt_level 0..3: 0 unoptimized; 1 the kernel pipeline without loop vectorization; 2 and 3 (the
// default) the kernel pipeline, the same for both. Throws std::runtime_error with the LLVM error
// text and the kernel's str() on failure (std::logic_error from kir::verify for a malformed
// kernel). The machine code lives as long as the returned object.
std::shared_ptr<CompiledKernel> compile(const kir::Kernel& k, int opt_level);

// compile() in two steps, for caches that keep machine code: an object file defining one
// function named `symbol` (unique to this process), and loading it into the JIT. load throws
// std::runtime_error when the object cannot be linked.
struct ObjectCode {
  std::string symbol;
  std::string object;
};
ObjectCode compile_object(const kir::Kernel& k, int opt_level);
std::shared_ptr<CompiledKernel> load(const ObjectCode& code);

// Everything the machine code of `k` depends on, as text: the unoptimized LLVM IR, the pass
// pipeline, the target CPU and features, LLVM's version. Equal identities give equal code.
std::string identity(const kir::Kernel& k, int opt_level);

// Text of the optimized LLVM IR module, and of the host assembly, for dumps (tjc --emit=llvm|asm).
std::string emit_llvm_ir(const kir::Kernel& k, int opt_level);
std::string emit_asm(const kir::Kernel& k, int opt_level);

// "znver5 +avx512f,... +libmvec" : host CPU name and features (and whether kernels call glibc's
// vector math library), part of cache keys.
std::string host_target_id();

} // namespace tj::llvmjit
