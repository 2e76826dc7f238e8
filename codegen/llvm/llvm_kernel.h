// Private to codegen/llvm: a kir::Kernel as one LLVM IR function (loops, slots, reductions).
#pragma once
#include <llvm/IR/Module.h>

#include <functional>
#include <memory>
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

// For functions built directly in LLVM IR rather than lowered from a kir::Kernel (the GEMM
// microkernel, llvm_gemm.cpp): the host, and compiling a module that `build` fills with the
// external function `symbol`, at the full code generation level (no pass is skipped, and
// SelectionDAG selects everything), into loaded machine code or the text of its IR or assembly.
LoweringTarget host_lowering_target();
enum class Emit { Load, IR, Asm };
struct BuiltFunction {
  void* address = nullptr;    // Emit::Load: the function
  std::shared_ptr<void> code; // Emit::Load: keeps the machine code alive
  std::string text;           // Emit::IR, Emit::Asm
};
BuiltFunction compile_built(const std::string& symbol,
                            const std::function<void(llvm::Module&)>& build, Emit emit);

} // namespace tj::llvmjit::detail
