// Private to codegen/llvm: a kir::Kernel as one LLVM IR function (loops, slots, reductions).
#pragma once
#include <llvm/IR/Module.h>

#include <string>

#include "codegen/kernel_ir.h"
#include "codegen/llvm/llvm_math.h"

namespace tj::llvmjit::detail {

// What the lowering needs of the target: the function attributes and the libmvec variants.
struct LoweringTarget {
  std::string cpu;
  std::string features;
  VecIsa isa;
};

// Adds to m the function `fname` computing k, with the C signature of kernel_ir.h:
//   void fname(i64 n, ptr ptrs, ptr base, ptr stride, ptr params, ptr err, i64 r, ptr rstride)
// Throws LowerError for a kernel it cannot lower.
llvm::Function* lower_kernel(const kir::Kernel& k, llvm::Module& m, const std::string& fname,
                             const LoweringTarget& target);

// After optimization: the vector stores to a slot written around the cache (kir::Slot::stream)
// whose alignment LLVM proves to be their size become non-temporal stores.
void mark_streaming_stores(llvm::Function& f);

} // namespace tj::llvmjit::detail
