// Private to codegen/llvm: lowering of kernel-IR scalar ops (ALU, casts, Philox, libm calls).
#pragma once
#include <llvm/IR/IRBuilder.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/kernel_ir.h"

namespace tj::llvmjit::detail {

// The libmvec instruction sets whose vector variants the host can call; all false when libmvec
// could not be loaded (math then stays scalar libm calls).
struct VecIsa {
  bool sse = false;    // 'b': 128-bit
  bool avx2 = false;   // 'd': 256-bit
  bool avx512 = false; // 'e': 512-bit
};

// A kernel the backend cannot lower (an op on a dtype it does not apply to, mismatched operand
// dtypes). compile() adds the kernel's text.
struct LowerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Emits the scalar code of one element at the builder's insertion point. Values are in register
// form: bool i1, uint8/int8 i8, int16 i16, ..., float16 half, bfloat16 i16 (its bits), float32
// float, float64 double. No fast-math flags anywhere: results are bit-for-bit those of scalar C++
// (libm results excepted: every element's from the widest vector variant, call_widest_variants).
class OpLowering {
public:
  OpLowering(llvm::IRBuilder<>& b, VecIsa isa) : b_(b), ctx_(b.getContext()), isa_(isa) {}

  llvm::Type* reg_type(DType t);
  llvm::Type* mem_type(DType t);
  llvm::Value* to_reg(llvm::Value* loaded, DType t);
  llvm::Value* to_mem(llvm::Value* v, DType t);
  // A kernel parameter from its uint64 bits.
  llvm::Value* param(llvm::Value* bits, DType t);

  llvm::Value* cast(llvm::Value* v, DType from, DType to);
  llvm::Value* unary(ir::Op op, DType t, llvm::Value* x);
  // t is the operands' dtype; comparisons return i1.
  llvm::Value* binary(ir::Op op, DType t, llvm::Value* x, llvm::Value* y);
  // Word `word` of Philox4x32-10 at counter ctr (int64), key (int64), zero-extended to i64.
  llvm::Value* philox(llvm::Value* ctr, llvm::Value* key, int64_t word);

  // i32: OR of the error bits (kir::kErrDivideByZero, kir::kErrIndex) of everything lowered so
  // far. The caller seeds it (a loop phi) and reads it back after the body.
  llvm::Value* err = nullptr;
  // Vector-variant declarations that must survive until the loop vectorizer has run.
  std::vector<llvm::GlobalValue*> keep_alive;

private:
  llvm::Value* to_f32(llvm::Value* v, DType from);
  llvm::Value* f32_to_bf16(llvm::Value* f);
  llvm::Value* int_div_mod(bool is_div, DType t, llvm::Value* x, llvm::Value* y);
  llvm::Value* int_pow(DType t, llvm::Value* x, llvm::Value* y);
  llvm::Value* float_max_min(bool is_max, llvm::Value* x, llvm::Value* y);
  llvm::Value* libm(const char* base, DType t, llvm::ArrayRef<llvm::Value*> args);
  // `scalar` applied to each lane of the vectors `args` (of one length), as a vector: for a
  // vector width the math library has no variant of.
  llvm::Value* lanewise(llvm::ArrayRef<llvm::Value*> args,
                        llvm::function_ref<llvm::Value*(llvm::ArrayRef<llvm::Value*>)> scalar);
  std::string variant_symbol(const std::string& name, char isa, unsigned lanes, unsigned nargs);
  std::string variant_name(llvm::Module& m, const std::string& name, llvm::Type* ty, unsigned lanes,
                           unsigned nargs);
  std::string vector_variants(llvm::Module& m, const std::string& name, llvm::Type* ty,
                              unsigned nargs);

  llvm::IRBuilder<>& b_;
  llvm::LLVMContext& ctx_;
  VecIsa isa_;
};

} // namespace tj::llvmjit::detail
