// LLVM lowering of a kernel's values: loads through slots, gathers, addresses and the ALU ops.
#include "codegen/llvm/kernel_lowering.h"

#include <algorithm>
#include <cmath>

namespace tj::llvmjit::detail {

void KernelLowering::lower_values(const std::vector<char>& which) {
  for (size_t v = 0; v < k_.values.size(); ++v)
    if (which[v] && !vals_[v]) vals_[v] = lower_value(int(v));
}

// Element index of slot s at (i, j): base + i * stride (+ j * rstride in the reduction loop).
llvm::Value* KernelLowering::element_index(int s) {
  const SlotState& st = slots_[s];
  llvm::Value* e = st.base;
  switch (k_.slots[s].stride) {
  case StrideKind::Contiguous:
    e = b_.CreateAdd(e, i_);
    break;
  case StrideKind::Broadcast:
    break;
  case StrideKind::Strided:
  case StrideKind::Pairs:
    e = b_.CreateAdd(e, b_.CreateMul(i_, st.stride));
    break;
  }
  if (!j_) return e;
  switch (k_.slots[s].rstride) {
  case StrideKind::Contiguous:
    return b_.CreateAdd(e, j_);
  case StrideKind::Broadcast:
    return e;
  case StrideKind::Strided:
  case StrideKind::Pairs:
    return b_.CreateAdd(e, b_.CreateMul(j_, st.rstride));
  }
  return e;
}

llvm::Value* KernelLowering::element_address(int s) {
  const SlotState& st = slots_[s];
  const Slot& slot = k_.slots[s];
  llvm::Type* mt = ops_.mem_type(slot.dtype);
  if (s == stream_ && stream_k_) return b_.CreateInBoundsGEP(mt, stream_row_, stream_k_);
  // One element after the other slot's: the loop vectorizer sees one interleaved access.
  if (slot.next_to >= 0) return b_.CreateConstInBoundsGEP1_64(mt, element_address(slot.next_to), 1);
  if (s == stream_ && fused_row_) // j from the block's start, whose alignment LLVM then knows
    return b_.CreateInBoundsGEP(mt, fused_row_,
                                b_.CreateAdd(block_start_aligned_, b_.CreateSub(j_, block_start_)));
  bool moves_with_j = j_ && slot.rstride != StrideKind::Broadcast;
  if (!moves_with_j && slot.stride == StrideKind::Contiguous)
    return b_.CreateInBoundsGEP(mt, st.row, i_);
  if (!moves_with_j && slot.stride == StrideKind::Broadcast) return st.row;
  return b_.CreateInBoundsGEP(mt, st.ptr, element_index(s));
}

// Where a value kept for later loops is in slot s's row: the slot itself, or for the streaming
// slot (written by the store loop around the cache) the kernel's scratch row, so that the cache
// holds the kept row and not the output.
llvm::Value* KernelLowering::kept_address(int s) {
  if (s != stream_ || !keep_row_) return element_address(s);
  return b_.CreateInBoundsGEP(ops_.mem_type(k_.slots[s].dtype), keep_row_, j_);
}

llvm::Instruction* KernelLowering::annotate(llvm::Instruction* access, int s) {
  if (slots_[s].scope) access->setMetadata(llvm::LLVMContext::MD_alias_scope, slots_[s].scope);
  if (slots_[s].noalias) access->setMetadata(llvm::LLVMContext::MD_noalias, slots_[s].noalias);
  return access;
}

// Operand a of value v, which must have dtype `want`.
llvm::Value* KernelLowering::operand(int v, int a, DType want) {
  int src = k_.values[v].src[a];
  DType have = k_.values[src].dtype;
  if (have != want)
    bad(v, fmt::format("{} operand %{} is {}, expected {}", ir::name(k_.values[v].op), src,
                       dtype_name(have), dtype_name(want)));
  return vals_[src];
}

llvm::Value* KernelLowering::lower_value(int idx) {
  const kir::Value& v = k_.values[idx];
  auto src_dtype = [&](int a) { return k_.values[v.src[a]].dtype; };
  switch (ir::category(v.op)) {
  case ir::OpCategory::Leaf:
    switch (v.op) {
    case Op::Buffer: {
      const Slot& slot = k_.slots[v.slot];
      if (slot.role != Role::Input) bad(idx, fmt::format("load of slot{}, not an input", v.slot));
      if (slot.dtype != v.dtype)
        bad(idx, fmt::format("load of {} slot{} as {}", dtype_name(slot.dtype), v.slot,
                             dtype_name(v.dtype)));
      if (slots_[v.slot].invariant) return slots_[v.slot].invariant;
      llvm::Type* mt = ops_.mem_type(slot.dtype);
      return ops_.to_reg(annotate(b_.CreateLoad(mt, element_address(v.slot)), v.slot), slot.dtype);
    }
    case Op::Const:
      if (k_.params[v.param] != v.dtype)
        bad(idx, fmt::format("param{} is {}, used as {}", v.param, dtype_name(k_.params[v.param]),
                             dtype_name(v.dtype)));
      return params_[v.param];
    case Op::Iota:
      return ops_.cast(element_index(v.slot), kInt64, v.dtype);
    case Op::Philox: {
      llvm::Value* ctr = b_.CreateAdd(ops_.cast(vals_[v.src[1]], src_dtype(1), kInt64),
                                      ops_.cast(vals_[v.src[0]], src_dtype(0), kInt64));
      llvm::Value* key = ops_.cast(vals_[v.src[2]], src_dtype(2), kInt64);
      return ops_.cast(ops_.philox(ctr, key, v.imm), kInt64, v.dtype);
    }
    default:
      bad(idx, "unknown leaf");
    }
  case ir::OpCategory::Unary:
    if (v.op == Op::Not) { // logical not of any dtype: !bool(x)
      if (v.dtype != kBool) bad(idx, "Not must produce bool");
      return ops_.unary(v.op, kBool, ops_.cast(vals_[v.src[0]], src_dtype(0), kBool));
    }
    return ops_.unary(v.op, v.dtype, operand(idx, 0, v.dtype));
  case ir::OpCategory::Binary:
    if (ir::is_comparison(v.op)) {
      if (v.dtype != kBool) bad(idx, "a comparison must produce bool");
      DType t = src_dtype(0);
      llvm::Value* x = vals_[v.src[0]];
      llvm::Value* y = operand(idx, 1, t);
      if (t == kFloat16 || t == kBFloat16) { // compared as the float32 values they hold
        x = ops_.cast(x, t, kFloat32);
        y = ops_.cast(y, t, kFloat32);
        t = kFloat32;
      }
      return ops_.binary(v.op, t, x, y);
    }
    return ops_.binary(v.op, v.dtype, operand(idx, 0, v.dtype), operand(idx, 1, v.dtype));
  case ir::OpCategory::Ternary: {
    llvm::Value* cond = ops_.cast(vals_[v.src[0]], src_dtype(0), kBool);
    return b_.CreateSelect(cond, operand(idx, 1, v.dtype), operand(idx, 2, v.dtype));
  }
  case ir::OpCategory::Cast:
    return ops_.cast(vals_[v.src[0]], src_dtype(0), v.dtype);
  case ir::OpCategory::Gather: {
    // The slot's element (i, j) plus index * stride; an index out of [0, bound) reads index 0 and
    // sets the error bit.
    llvm::Value* index = vals_[v.src[0]];
    llvm::Value* ok = b_.CreateICmpULT(index, vals_[v.src[2]]);
    llvm::Value* bit = b_.CreateSelect(ok, no_err(), b_.getInt32(kir::kErrIndex));
    ops_.err = ops_.err ? b_.CreateOr(ops_.err, bit) : bit;
    index = b_.CreateSelect(ok, index, b_.getInt64(0));
    llvm::Value* e = b_.CreateAdd(element_index(v.slot), b_.CreateMul(index, vals_[v.src[1]]));
    const Slot& slot = k_.slots[v.slot];
    if (slot.role == Role::Index) return e;
    llvm::Type* mt = ops_.mem_type(slot.dtype);
    llvm::Value* p = b_.CreateInBoundsGEP(mt, slots_[v.slot].ptr, e);
    return ops_.to_reg(annotate(b_.CreateLoad(mt, p), v.slot), slot.dtype);
  }
  case ir::OpCategory::Reduce:
    bad(idx, "a Reduce value used inside the reduction loop");
  case ir::OpCategory::Scan:
    if (!scan_acc_[idx]) bad(idx, "a scan outside the store loop");
    return ops_.binary(ir::combine_op(v.op), v.dtype, scan_acc_[idx], operand(idx, 0, v.dtype));
  case ir::OpCategory::Movement:
  case ir::OpCategory::Scatter:
  case ir::OpCategory::Mutation:
  case ir::OpCategory::Call:
  case ir::OpCategory::Complex:
    break;
  }
  bad(idx, fmt::format("{} cannot be lowered", ir::name(v.op)));
}

} // namespace tj::llvmjit::detail
