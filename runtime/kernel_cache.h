// The in-memory cache of compiled kernels, keyed by the kernel IR's structure.
#pragma once
#include <memory>

#include "codegen/kernel_ir.h"
#include "codegen/llvm/llvm_codegen.h"

namespace tj::rt {

// The compiled code for `k`, compiling it on a miss. Counts hits and compiles
// in tj::stats(); with TJ_DEBUG>=1 reports each compile on stderr.
std::shared_ptr<llvmjit::CompiledKernel> get_kernel(const kir::Kernel& k);

// Every kernel in the cache (tests lower them again, for other backends).
std::vector<kir::Kernel> cached_kernels();

} // namespace tj::rt
