// LLVM lowering of a kernel's reduction loops: accumulators, blocked sums, float extrema, the
// store loop over a row.
#include "codegen/llvm/kernel_lowering.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tj::llvmjit::detail {

KernelLowering::Accumulator KernelLowering::make_accumulator(int v) {
  const kir::Value& x = k_.values[v];
  Accumulator a{v, x.dtype, nullptr, nullptr};
  if (x.dtype == kFloat32 && (x.op == Op::ReduceSum || x.op == Op::ReduceProd)) a.acc = kFloat64;
  a.ty = ops_.reg_type(a.acc);
  a.init = identity(ir::combine_op(x.op), a.acc);
  a.part = a.acc, a.part_ty = a.ty, a.part_init = a.init;
  if (x.op == Op::ReduceSum && x.dtype == kFloat32) {
    a.part = kFloat32, a.part_ty = ops_.reg_type(kFloat32);
    a.part_init = llvm::ConstantFP::get(a.part_ty, 0.0);
  }
  return a;
}

// acc (op) x. Floating sums and products may be reassociated inside a block (that is what lets
// them vectorize); max/min are exact in any order.
llvm::Value* KernelLowering::accumulate(const Accumulator& a, llvm::Value* acc, llvm::Value* x,
                                        bool reassoc) {
  Op op = k_.values[a.value].op;
  if (a.bits != llvm::Intrinsic::not_intrinsic) return b_.CreateBinaryIntrinsic(a.bits, acc, x);
  if (!is_floating_point(a.acc)) {
    Op alu = op == Op::ReduceSum    ? Op::Add
             : op == Op::ReduceProd ? Op::Mul
             : op == Op::ReduceMax  ? Op::Max
                                    : Op::Min;
    return ops_.binary(alu, a.acc, acc, x); // wrapping; bool: or, and
  }
  if (op == Op::ReduceMax) return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, acc, x);
  if (op == Op::ReduceMin) return b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, acc, x);
  llvm::Value* r = op == Op::ReduceSum ? b_.CreateFAdd(acc, x) : b_.CreateFMul(acc, x);
  if (reassoc) llvm::cast<llvm::Instruction>(r)->setHasAllowReassoc(true);
  return r;
}

// Reduction loop `loop`, from the current block of the element loop. On return the builder is
// after the nest, where that loop's Reduce values hold their results.
void KernelLowering::reduction_loop(int loop) {
  if (std::find(kept_from_.begin(), kept_from_.end(), loop) != kept_from_.end()) {
    if (keep_scratch_ && !keep_row_) { // once per row; rows longer than the scratch keep in place
      llvm::Type* mt = ops_.mem_type(k_.slots[stream_].dtype);
      llvm::Value* in_place =
          b_.CreateInBoundsGEP(mt, slots_[stream_].ptr, element_index(stream_), "keep.in.place");
      keep_row_ = b_.CreateSelect(b_.CreateICmpSLE(arg(kR), b_.getInt64(kKeepScratch)),
                                  keep_scratch_, in_place, "keep.row");
    }
  }
  auto* i64 = b_.getInt64Ty();
  llvm::Value* r = arg(kR);
  auto* outer = b_.GetInsertBlock();
  auto* block = llvm::BasicBlock::Create(ctx_, "red.block", f_, done_);
  auto* inner = llvm::BasicBlock::Create(ctx_, "red.loop", f_, done_);
  auto* block_end = llvm::BasicBlock::Create(ctx_, "red.block.end", f_, done_);
  auto* after = llvm::BasicBlock::Create(ctx_, "red.after", f_, done_);
  llvm::Value* err_outer = ops_.err;
  const std::vector<llvm::Value*> outer_vals = vals_; // per i: visible inside the loop and after
  std::vector<Accumulator> accs;
  int64_t block_len = kReduceBlock;
  for (size_t v = 0; v < k_.values.size(); ++v) {
    if (plan_.loop_of[v] != loop) continue;
    std::vector<Accumulator> bits = float_extremum_bits(int(v));
    if (!bits.empty()) {
      accs.insert(accs.end(), bits.begin(), bits.end());
      continue;
    }
    accs.push_back(make_accumulator(int(v)));
    if (accs.back().part != accs.back().acc) block_len = kNarrowReduceBlock;
  }
  b_.CreateCondBr(b_.CreateICmpSGT(r, b_.getInt64(0)), block, after);

  // Block header: [jb, jend).
  b_.SetInsertPoint(block);
  auto* jb = b_.CreatePHI(i64, 2, "jb");
  auto* err_block = b_.CreatePHI(err_ty(), 2, "err.block");
  for (Accumulator& a : accs)
    a.block_total = b_.CreatePHI(a.ty, 2, "red.total");
  llvm::Value* jend = b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::smin, b_.CreateAdd(jb, b_.getInt64(block_len), "", true, true), r);
  if (loop > 0 && loop == plan_.reduce_loops - 1 && block_len == kNarrowReduceBlock)
    prefetch_next_row(jb, jend);
  const bool fuses = fused_store_ && loop == plan_.reduce_loops - 1;
  if (fuses) {
    block_start_ = jb;
    block_start_aligned_ = b_.CreateAnd(jb, b_.getInt64(~(block_len - 1)), "jb.aligned");
  }
  llvm::BasicBlock* block_tail = b_.GetInsertBlock();
  b_.CreateBr(inner);

  // The inner loop over j: the values feeding the reductions, and the partial accumulations.
  b_.SetInsertPoint(inner);
  auto* j = b_.CreatePHI(i64, 2, "j");
  auto* err_inner = b_.CreatePHI(err_ty(), 2, "err.inner");
  for (Accumulator& a : accs)
    a.partial = b_.CreatePHI(a.part_ty, 2, "red.partial");
  j_ = j;
  ops_.err = err_inner;
  vals_ = outer_vals;
  loop_values(loop);
  for (Accumulator& a : accs) {
    const kir::Value& v = k_.values[a.value];
    llvm::Value* x =
        a.bits != llvm::Intrinsic::not_intrinsic
            ? b_.CreateBitCast(ops_.cast(vals_[v.src[0]], k_.values[v.src[0]].dtype, v.dtype), a.ty)
            : ops_.cast(vals_[v.src[0]], k_.values[v.src[0]].dtype, a.part);
    a.partial_next = accumulate(a, a.partial, x, /*reassoc=*/true);
  }
  if (fuses) fused_store_();
  llvm::Value* j_next = b_.CreateAdd(j, b_.getInt64(1), "j.next", true, true);
  llvm::BasicBlock* inner_latch = b_.GetInsertBlock();
  // Four vectors a step, whatever the body: the order of a block's sum is then the same in the
  // pipelined rows (whose body is longer, and which LLVM would interleave less) as in the plain.
  loop_hint(b_.CreateCondBr(b_.CreateICmpEQ(j_next, jend), block_end, inner),
            "llvm.loop.interleave.count", llvm::ConstantAsMetadata::get(b_.getInt32(4)));
  llvm::Value* err_loop = ops_.err;
  j->addIncoming(jb, block_tail);
  j->addIncoming(j_next, inner_latch);
  err_inner->addIncoming(err_block, block_tail);
  err_inner->addIncoming(err_loop, inner_latch);
  for (Accumulator& a : accs) {
    a.partial->addIncoming(a.part_init, block_tail);
    a.partial->addIncoming(a.partial_next, inner_latch);
  }

  // Block end: add the block's partial to the total, in order.
  b_.SetInsertPoint(block_end);
  for (Accumulator& a : accs)
    a.total_next = accumulate(a, a.block_total, ops_.cast(a.partial_next, a.part, a.acc),
                              /*reassoc=*/false);
  no_unroll(b_.CreateCondBr(b_.CreateICmpEQ(jend, r), after, block));
  jb->addIncoming(b_.getInt64(0), outer);
  jb->addIncoming(jend, block_end);
  err_block->addIncoming(err_outer, outer);
  err_block->addIncoming(err_loop, block_end);
  for (Accumulator& a : accs) {
    a.block_total->addIncoming(a.init, outer);
    a.block_total->addIncoming(a.total_next, block_end);
  }

  // After the nest: the results (the initial values when r <= 0).
  b_.SetInsertPoint(after);
  j_ = nullptr;
  vals_ = outer_vals;
  auto* err_after = b_.CreatePHI(err_ty(), 2, "err.after");
  err_after->addIncoming(err_outer, outer);
  err_after->addIncoming(err_loop, block_end);
  ops_.err = err_loop == err_inner ? err_outer : err_after; // no division inside: unchanged
  std::vector<llvm::PHINode*> results;
  for (Accumulator& a : accs) {
    results.push_back(b_.CreatePHI(a.ty, 2, "red.result"));
    results.back()->addIncoming(a.init, outer);
    results.back()->addIncoming(a.total_next, block_end);
  }
  for (size_t x = 0; x < accs.size(); ++x) {              // after all the phis
    if (accs[x].bits != llvm::Intrinsic::not_intrinsic) { // smax, umax, umin
      vals_[accs[x].value] =
          float_extremum(accs[x].value, results[x], results[x + 1], results[x + 2]);
      x += 2;
      continue;
    }
    vals_[accs[x].value] = ops_.cast(results[x], accs[x].acc, k_.values[accs[x].value].dtype);
  }
}

namespace {
// The bits of +inf and -inf of float type `fty`.
std::pair<llvm::APInt, llvm::APInt> inf_bits(llvm::Type* fty) {
  llvm::APInt pinf = llvm::APFloat::getInf(fty->getFltSemantics()).bitcastToAPInt();
  llvm::APInt ninf = pinf;
  ninf.setSignBit();
  return {pinf, ninf};
}
} // namespace

// A float32 or float64 max or min along a row, exact (NaN propagates, -0 < +0) from the signed
// maximum, the unsigned maximum and the unsigned minimum of its values' bits: three integer
// operations per vector, where LLVM expands a vector llvm.maximum into six. Bits in signed order
// rank the non-negative floats (+NaN above +inf); in unsigned order, every negative float above
// every other, ranked by magnitude (-NaN above -inf). Empty rows give -inf and +inf.
std::vector<KernelLowering::Accumulator> KernelLowering::float_extremum_bits(int v) {
  const kir::Value& x = k_.values[v];
  const bool is_max = x.op == Op::ReduceMax;
  if ((!is_max && x.op != Op::ReduceMin) || (x.dtype != kFloat32 && x.dtype != kFloat64)) return {};
  const DType it = x.dtype == kFloat32 ? kInt32 : kInt64;
  llvm::Type* ty = ops_.reg_type(it);
  const unsigned w = ty->getIntegerBitWidth();
  const auto [pinf, ninf] = inf_bits(ops_.reg_type(x.dtype));
  std::vector<Accumulator> accs;
  for (auto [id, init] : {std::pair{llvm::Intrinsic::smax, llvm::APInt::getSignedMinValue(w)},
                          std::pair{llvm::Intrinsic::umax, llvm::APInt::getZero(w)},
                          std::pair{llvm::Intrinsic::umin, is_max ? ninf : pinf}}) {
    Accumulator a{v, it, ty, llvm::ConstantInt::get(ty, init)};
    a.part = it, a.part_ty = ty, a.part_init = a.init, a.bits = id;
    accs.push_back(a);
  }
  return accs;
}

llvm::Value* KernelLowering::float_extremum(int v, llvm::Value* smax, llvm::Value* umax,
                                            llvm::Value* umin) {
  const kir::Value& x = k_.values[v];
  llvm::Type* fty = ops_.reg_type(x.dtype);
  llvm::Type* ty = smax->getType();
  const auto [pinf, ninf] = inf_bits(fty);
  llvm::Value* nan = b_.CreateOr(b_.CreateICmpSGT(smax, llvm::ConstantInt::get(ty, pinf)),
                                 b_.CreateICmpUGT(umax, llvm::ConstantInt::get(ty, ninf)));
  // max: the largest non-negative, else the negative of least magnitude; min: the negative of
  // greatest magnitude, else the least non-negative.
  llvm::Value* bits =
      x.op == Op::ReduceMax
          ? b_.CreateSelect(b_.CreateICmpSGE(smax, llvm::ConstantInt::get(ty, 0)), smax, umin)
          : b_.CreateSelect(b_.CreateICmpSLT(umax, llvm::ConstantInt::get(ty, 0)), umax, umin);
  return b_.CreateSelect(nan, llvm::ConstantFP::getNaN(fty), b_.CreateBitCast(bits, fty));
}

// In a kernel with several loops over row i, the first reads the row from memory and the later
// ones work in the cache. When the last reduction loop is not the first and runs in short
// blocks (a float32 sum: softmax, log_softmax, layer_norm), each of its blocks [first, end)
// prefetches the same elements of row i + 1 that the first loop reads, so that memory is read
// while the later loops compute, a few lines at a time. (All of row i + 1 at once, after the
// first loop, waited for free line-fill buffers: softmax 4096 x 2048 ran 8% slower than with no
// prefetch.)
void KernelLowering::prefetch_next_row(llvm::Value* first, llvm::Value* end) {
  std::vector<int> rows;
  for (size_t v = 0; v < k_.values.size(); ++v) {
    const kir::Value& x = k_.values[v];
    if (x.op != Op::Buffer || !plan_.in_loop[0][v]) continue;
    const Slot& slot = k_.slots[x.slot];
    if (slot.rstride == StrideKind::Contiguous && slot.stride != StrideKind::Broadcast &&
        std::find(rows.begin(), rows.end(), x.slot) == rows.end())
      rows.push_back(x.slot);
  }
  if (rows.empty()) return;
  auto* i64 = b_.getInt64Ty();
  auto* outer = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, "prefetch", f_, done_);
  auto* after = llvm::BasicBlock::Create(ctx_, "prefetch.after", f_, done_);
  b_.CreateCondBr(b_.CreateICmpSLT(first, end), loop, after);
  b_.SetInsertPoint(loop);
  auto* j = b_.CreatePHI(i64, 2, "pj");
  llvm::Value* next_i = b_.CreateAdd(i_, b_.getInt64(1));
  for (int s : rows) {
    const SlotState& st = slots_[s];
    // Past the last row the address lies outside the buffer: a prefetch never faults, and the
    // address is not inbounds.
    llvm::Value* e = b_.CreateAdd(b_.CreateAdd(st.base, b_.CreateMul(next_i, st.stride)), j);
    llvm::Value* p = b_.CreateGEP(ops_.mem_type(k_.slots[s].dtype), st.ptr, e);
    b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                       {p, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
  }
  size_t item = 8; // a line per step of the narrowest row
  for (int s : rows)
    item = std::min(item, itemsize(k_.slots[s].dtype));
  const int64_t step = 64 / int64_t(item);
  llvm::Value* j_next = b_.CreateAdd(j, b_.getInt64(step));
  no_unroll(b_.CreateCondBr(b_.CreateICmpSLT(j_next, end), loop, after));
  j->addIncoming(first, outer);
  j->addIncoming(j_next, loop);
  b_.SetInsertPoint(after);
}

// The store loop, from the current block of the element loop: for j in [0, r), the row elements
// and their stores. The values per i are computed before it.
void KernelLowering::store_loop() {
  scan_acc_.assign(k_.values.size(), nullptr);
  for (size_t v = 0; v < k_.values.size(); ++v)
    if (ir::is_scan(k_.values[v].op) && plan_.in_loop.back()[v])
      scan_acc_[v] = scan_identity(int(v));
  auto body = [&] {
    loop_values(plan_.reduce_loops);
    store_outputs(/*rows=*/true);
  };
  if (stream_ < 0) {
    row_loop("row", body);
  } else { // the row's elements before its first 64-byte boundary through the cache
    llvm::Value* head = align_stream_row(stream_row(), arg(kR));
    row_loop("row.head", body, nullptr, head, RowPart::Head);
    row_loop("row", body, head, b_.CreateSub(arg(kR), head), RowPart::Streamed);
  }
  keep_row_ = nullptr;
  scan_acc_.assign(k_.values.size(), nullptr);
}

// Whether the store loop's scans can run a vector at a time (scan_blocks), combining in a tree:
// each combines 4- or 8-byte integers, whose sums and products wrap to the same bits in any order,
// or takes a maximum or minimum. Floating sums and products keep the plain loop's order, as
// PyTorch's does: in another, float64 partial sums that cancel or overflow round differently
// ([1, 1e17, -1e17, 0] scans to 1, 1e17, 0, 0 in order and to 1, 1e17, 1, 0 as a tree), and
// float32 results then differ in printed digits. They run rows side by side (scan_row_groups).
bool KernelLowering::scans_vectorize() const {
  if (!plan_.store_loop) return false;
  const std::vector<char>& in_row = plan_.in_loop.back();
  for (size_t v = 0; v < k_.values.size(); ++v) {
    const kir::Value& x = k_.values[v];
    if (!ir::is_scan(x.op) || !in_row[v]) continue;
    const size_t size = itemsize(x.dtype);
    const Op combine = ir::combine_op(x.op);
    if (size != 4 && size != 8) return false;
    if (combine != Op::Max && combine != Op::Min && !is_integral(x.dtype, true)) return false;
  }
  return true;
}

// Scan within the vector x: in log2(lanes) steps, each combining every lane with the one d lanes
// before it (`none` before the first).
llvm::Value* KernelLowering::vector_scan(llvm::Value* x, llvm::Value* none,
                                         const Combine& combine) {
  const unsigned lanes = llvm::cast<llvm::FixedVectorType>(x->getType())->getNumElements();
  for (unsigned d = 1; d < lanes; d *= 2) {
    llvm::SmallVector<int, 16> mask(lanes);
    for (unsigned l = 0; l < lanes; ++l)
      mask[l] = l >= d ? int(l - d) : int(lanes + l);
    x = combine(b_.CreateShuffleVector(x, none, mask), x);
  }
  return x;
}

// Transposes a square of vectors (rows[g] lane c becomes rows[c] lane g), a power of two of them,
// in log2 steps: each interleaves the first half of the vectors with the second, the low lanes of
// each pair and then the high ones.
void KernelLowering::transpose(std::vector<llvm::Value*>& rows) {
  const size_t n = rows.size(), half = n / 2;
  llvm::SmallVector<int, 16> lo(n), hi(n);
  for (size_t l = 0; l < n; ++l) {
    lo[l] = int(l / 2 + (l % 2) * n);
    hi[l] = int(half + l / 2 + (l % 2) * n);
  }
  for (size_t step = 1; step < n; step *= 2) {
    std::vector<llvm::Value*> next(n);
    for (size_t k = 0; k < half; ++k) {
      next[2 * k] = b_.CreateShuffleVector(rows[k], rows[k + half], lo);
      next[2 * k + 1] = b_.CreateShuffleVector(rows[k], rows[k + half], hi);
    }
    rows = std::move(next);
  }
}

// The vectors `parts` (a power of two of them, of one type) end to end.
llvm::Value* KernelLowering::concat(std::vector<llvm::Value*> parts) {
  while (parts.size() > 1) {
    const unsigned n = llvm::cast<llvm::FixedVectorType>(parts[0]->getType())->getNumElements();
    llvm::SmallVector<int, 32> both(2 * n);
    std::iota(both.begin(), both.end(), 0);
    std::vector<llvm::Value*> next;
    for (size_t k = 0; k + 1 < parts.size(); k += 2)
      next.push_back(b_.CreateShuffleVector(parts[k], parts[k + 1], both));
    parts = std::move(next);
  }
  return parts[0];
}

// The store loops of `rows`: of the current row for scan_blocked_ kernels, of a group of rows
// side by side for scan_grouped_ ones. For each block of kScanBlock elements of the rows: a loop
// per row computing what each scan accumulates into a stack buffer (vectorized by LLVM); the
// scans over the buffers; a loop per row computing the row's elements from the scanned buffers
// and storing them. One row scans its buffer a vector at a time, combining within a vector in a
// tree (scans_vectorize says which scans that leaves unchanged); a group scans its buffers in
// order, a column of the group at a time: a square of vectors, one per row, is transposed in
// registers so that each vector holds a column (scan_across). A row output written around the
// cache takes the elements before its 64-byte boundary as a block of their own, so that the
// stores of every later block are aligned and can bypass the cache (one row only).
void KernelLowering::scan_blocks(const ScanRow& first, int64_t group, llvm::Value* rows) {
  auto* i64 = b_.getInt64Ty();
  const size_t nv = k_.values.size();
  const int64_t G = group;
  const int64_t B = G > 1 ? kScanGroupBlock : kScanBlock; // elements of a row per block
  const std::vector<char>& in_row = plan_.in_loop.back();
  std::vector<int32_t> scans, operands;
  for (size_t v = 0; v < nv; ++v)
    if (ir::is_scan(k_.values[v].op) && in_row[v]) {
      scans.push_back(int32_t(v));
      operands.push_back(k_.values[v].src[0]);
    }
  // A float maximum or minimum of one row scans integer keys that order as the floats do (the
  // sign-magnitude bits made two's complement; a NaN first made the one key that wins): a vector
  // of them combines in one instruction, where float_max_min took ten.
  std::vector<char> keyed(nv, 0);
  for (int32_t v : scans) {
    const Op op = ir::combine_op(k_.values[v].op);
    keyed[v] = G == 1 && (k_.values[v].dtype == kFloat32 || k_.values[v].dtype == kFloat64) &&
               (op == Op::Max || op == Op::Min);
  }
  auto key_type = [&](int32_t v) { return k_.values[v].dtype == kFloat64 ? kInt64 : kInt32; };
  auto flip = [&](llvm::Value* bits) { // its own inverse
    const unsigned n = bits->getType()->getScalarSizeInBits();
    llvm::Value* low = llvm::ConstantInt::get(bits->getType(), llvm::APInt::getSignedMaxValue(n));
    llvm::Value* sign = b_.CreateAShr(bits, llvm::ConstantInt::get(bits->getType(), n - 1));
    return b_.CreateXor(bits, b_.CreateAnd(sign, low));
  };
  auto key_of = [&](int32_t v, llvm::Value* x) {
    llvm::Type* ft = x->getType();
    const bool is_max = ir::combine_op(k_.values[v].op) == Op::Max;
    llvm::Value* nan = llvm::ConstantFP::get(
        ft, llvm::APFloat::getQNaN(ft->getScalarType()->getFltSemantics(), /*Negative=*/!is_max));
    x = b_.CreateSelect(b_.CreateFCmpUNO(x, x), nan, x);
    llvm::Type* it = b_.getIntNTy(ft->getScalarSizeInBits());
    if (auto* vt = llvm::dyn_cast<llvm::VectorType>(ft))
      it = llvm::VectorType::get(it, vt->getElementCount());
    return flip(b_.CreateBitCast(x, it));
  };
  auto value_of = [&](int32_t v, llvm::Value* key) {
    llvm::Type* ft = ops_.reg_type(k_.values[v].dtype);
    if (auto* vt = llvm::dyn_cast<llvm::VectorType>(key->getType()))
      ft = llvm::VectorType::get(ft, vt->getElementCount());
    return b_.CreateBitCast(flip(key), ft);
  };
  llvm::IRBuilder<> allocas(&f_->getEntryBlock(), f_->getEntryBlock().begin());
  std::vector<llvm::AllocaInst*> buf(nv, nullptr);
  std::vector<llvm::FixedVectorType*> vty(nv, nullptr);
  for (int32_t v : scans) {
    llvm::Type* t = ops_.reg_type(keyed[v] ? key_type(v) : k_.values[v].dtype);
    const unsigned lanes =
        G > 1 ? unsigned(G) : unsigned(kScanVectorBytes / itemsize(k_.values[v].dtype));
    vty[v] = llvm::FixedVectorType::get(t, lanes);
    buf[v] = allocas.CreateAlloca(llvm::ArrayType::get(t, uint64_t(G * B)), nullptr, "scan.buf");
    buf[v]->setAlignment(llvm::Align(64));
    if (G > 1 && scan_math_) { // a call's last group may have lanes no row fills: zeros there,
      // not stack garbage that sends vector exp and log1p to their slow paths (NaN, subnormals)
      llvm::IRBuilder<> init(buf[v]->getNextNode());
      init.CreateMemSet(buf[v], init.getInt8(0),
                        uint64_t(G * B) * (t->getPrimitiveSizeInBits() / 8), llvm::Align(64));
    }
  }
  // Row g's element jj of scan v's buffer (g a constant, or the loop's row in each_row).
  auto at_row = [&](int32_t v, llvm::Value* g, llvm::Value* jj) {
    if (g) jj = b_.CreateAdd(jj, b_.CreateMul(g, b_.getInt64(B), "", true, true), "", true, true);
    return b_.CreateInBoundsGEP(buf[v]->getAllocatedType(), buf[v], {b_.getInt64(0), jj});
  };
  auto at = [&](int32_t v, int64_t g, llvm::Value* jj) {
    return at_row(v, g > 0 ? b_.getInt64(g) : nullptr, jj);
  };
  // `body` for each of the rows, with i_ and vals_ the row's and its index in the group (null
  // for the one row of scan_blocked_ kernels).
  auto each_row = [&](const char* name, const std::function<void(llvm::Value*)>& body) {
    if (G == 1) {
      i_ = first.i;
      vals_ = first.vals;
      return body(nullptr);
    }
    group_rows(name, first.i, rows, body);
  };
  // The scans in stages: a scan of what another scan computes (cummax's indices, where the
  // running maximum was reached) goes in a later stage, once that scan's buffer is complete.
  std::vector<int> stage(nv, 0);
  int stages = 1;
  for (int32_t v : scans) {
    std::vector<int32_t> todo = {k_.values[v].src[0]};
    std::vector<char> seen(nv, 0);
    while (!todo.empty()) {
      const int32_t u = todo.back();
      todo.pop_back();
      if (u < 0 || seen[u] || !in_row[u]) continue;
      seen[u] = 1;
      if (ir::is_scan(k_.values[u].op))
        stage[v] = std::max(stage[v], stage[u] + 1);
      else
        todo.insert(todo.end(), std::begin(k_.values[u].src), std::end(k_.values[u].src));
    }
    stages = std::max(stages, stage[v] + 1);
  }
  // Row g's values at jb + jj of the scans of stages before `before`, from their buffers.
  auto scanned = [&](llvm::Value* g, llvm::Value* jj, int before) {
    for (int32_t v : scans)
      if (stage[v] < before) {
        vals_[v] = b_.CreateLoad(vty[v]->getElementType(), at_row(v, g, jj));
        if (keyed[v]) vals_[v] = value_of(v, vals_[v]);
      }
  };
  // What scan v starts from, in its buffer's type.
  auto start = [&](int32_t v) { return keyed[v] ? key_of(v, scan_identity(v)) : scan_identity(v); };
  // What each scan carries into the next block: one row's in every lane (scan_buffer), or each
  // row of a group's in its lane (scan_across).
  std::vector<llvm::Value*> carry(nv, nullptr);
  for (int32_t v : scans)
    carry[v] = b_.CreateVectorSplat(vty[v]->getNumElements(), start(v));
  auto combine = [&](int32_t v, llvm::Value* x, llvm::Value* y) {
    return ops_.binary(ir::combine_op(k_.values[v].op), keyed[v] ? key_type(v) : k_.values[v].dtype,
                       x, y);
  };

  // A loop over [0, count) in steps of `lanes` elements from the current block (count > 0),
  // `body` lowering a step from its index t and the carried value (returning the next); leaves
  // the carry after the loop in carry[v].
  auto vector_loop = [&](int32_t v, llvm::Value* count, int64_t lanes, const char* name,
                         const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& body) {
    llvm::Value* vectors = b_.CreateLShr(b_.CreateAdd(count, b_.getInt64(lanes - 1)),
                                         b_.getInt64(llvm::Log2_64(uint64_t(lanes))));
    llvm::BasicBlock* from = b_.GetInsertBlock();
    auto* loop = llvm::BasicBlock::Create(ctx_, name, f_, done_);
    auto* loop_end = llvm::BasicBlock::Create(ctx_, fmt::format("{}.end", name), f_, done_);
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    auto* t = b_.CreatePHI(i64, 2, "t");
    auto* c = b_.CreatePHI(vty[v], 2, "carry");
    llvm::Value* c_next = body(t, c);
    llvm::Value* t_next = b_.CreateAdd(t, b_.getInt64(1), "", true, true);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    auto* br = b_.CreateCondBr(b_.CreateICmpEQ(t_next, vectors), loop_end, loop);
    no_unroll(br);
    no_vectorize(br); // already in vectors: the loop vectorizer need not look at it
    t->addIncoming(b_.getInt64(0), from);
    t->addIncoming(t_next, latch);
    c->addIncoming(carry[v], from);
    c->addIncoming(c_next, latch);
    b_.SetInsertPoint(loop_end);
    carry[v] = c_next;
  };
  // The element of v's buffer where a block of count elements ends, per row.
  auto last = [&](int32_t v, int64_t g, llvm::Value* count) {
    return b_.CreateLoad(vty[v]->getElementType(), at(v, g, b_.CreateSub(count, b_.getInt64(1))));
  };

  // Scan v over the first count elements of its buffer, a vector at a time, from carry[v]
  // (updated to what follows them). Lanes past count scan what an earlier block left there, or
  // nothing defined; no lane before them reads them, nor does anything after.
  auto scan_buffer = [&](int32_t v, llvm::Value* count) {
    const int64_t lanes = vty[v]->getNumElements();
    vector_loop(v, count, lanes, "scan.vec", [&](llvm::Value* t, llvm::Value* c) {
      llvm::Value* p = at(v, 0, b_.CreateMul(t, b_.getInt64(lanes), "", true, true));
      // The carry's next value is its combination with the vector's total, which lane lanes - 1
      // of the result also holds: one operation per vector on the chain.
      llvm::Value* x =
          vector_scan(b_.CreateAlignedLoad(vty[v], p, llvm::Align(kScanVectorBytes)),
                      b_.CreateVectorSplat(unsigned(lanes), start(v)),
                      [&](llvm::Value* a, llvm::Value* b) { return combine(v, a, b); });
      b_.CreateAlignedStore(combine(v, c, x), p, llvm::Align(kScanVectorBytes));
      llvm::SmallVector<int, 16> top(size_t(lanes), int(lanes - 1));
      return combine(v, c, b_.CreateShuffleVector(x, top));
    });
    // After a partial last vector, lane lanes - 1 is past the block: the carry is the block's last
    // element, read back from the buffer (a head block's, which the next blocks carry on from).
    llvm::Value* partial =
        b_.CreateICmpNE(b_.CreateAnd(count, b_.getInt64(lanes - 1)), b_.getInt64(0));
    carry[v] = b_.CreateSelect(partial, b_.CreateVectorSplat(unsigned(lanes), last(v, 0, count)),
                               carry[v]);
  };
  // Scan v over the first count elements of each row's buffer, a square of L rows by L columns
  // at a time (L lanes of a kScanVectorBytes vector; G / L squares side by side, independent
  // chains): the square transposed, each column combined with the carry in order (lane l is row
  // l's chain), and transposed back. The carry after a partial last square is each row's last
  // element, read back from its buffer.
  auto scan_across = [&](int32_t v, llvm::Value* count) {
    llvm::Type* t_ty = vty[v]->getElementType();
    const int64_t L = std::min<int64_t>(G, kScanVectorBytes / (t_ty->getScalarSizeInBits() / 8));
    auto* square_ty = llvm::FixedVectorType::get(t_ty, unsigned(L));
    const llvm::Align align(uint64_t(L) * t_ty->getScalarSizeInBits() / 8);
    vector_loop(v, count, L, "scan.cols", [&](llvm::Value* t, llvm::Value* c) {
      llvm::Value* jj = b_.CreateMul(t, b_.getInt64(L), "", true, true);
      std::vector<llvm::Value*> ends;
      for (int64_t q = 0; q < G / L; ++q) {
        llvm::SmallVector<int, 16> lanes(static_cast<size_t>(L));
        std::iota(lanes.begin(), lanes.end(), int(q * L));
        llvm::Value* cq = b_.CreateShuffleVector(c, lanes);
        std::vector<llvm::Value*> square(static_cast<size_t>(L));
        for (int64_t l = 0; l < L; ++l)
          square[size_t(l)] = b_.CreateAlignedLoad(square_ty, at(v, q * L + l, jj), align);
        transpose(square);
        for (llvm::Value*& col : square)
          col = cq = combine(v, cq, col);
        transpose(square);
        for (int64_t l = 0; l < L; ++l)
          b_.CreateAlignedStore(square[size_t(l)], at(v, q * L + l, jj), align);
        ends.push_back(cq);
      }
      return concat(ends);
    });
    llvm::Value* partial = b_.CreateICmpNE(b_.CreateAnd(count, b_.getInt64(L - 1)), b_.getInt64(0));
    llvm::Value* ends = llvm::PoisonValue::get(vty[v]);
    for (int64_t g = 0; g < G; ++g)
      ends = b_.CreateInsertElement(ends, last(v, g, count), uint64_t(g));
    carry[v] = b_.CreateSelect(partial, ends, carry[v]);
  };

  // Block [jb, jb + count), 0 < count <= kScanBlock: per stage, what its scans accumulate into
  // their buffers, then the scans; then the rows' elements from the buffers, and their stores.
  auto block = [&](llvm::Value* jb, llvm::Value* count, RowPart part) {
    for (int st = 0; st < stages; ++st) {
      std::vector<int32_t> now, roots;
      for (size_t s = 0; s < scans.size(); ++s)
        if (stage[scans[s]] == st) {
          now.push_back(scans[s]);
          roots.push_back(operands[s]);
        }
      each_row("scan.in.rows", [&](llvm::Value* g) {
        row_loop(
            "scan.in",
            [&] {
              llvm::Value* jj = b_.CreateSub(j_, jb);
              scanned(g, jj, st);
              loop_values(plan_.reduce_loops, &roots);
              for (size_t s = 0; s < now.size(); ++s)
                b_.CreateStore(keyed[now[s]] ? key_of(now[s], vals_[roots[s]]) : vals_[roots[s]],
                               at_row(now[s], g, jj));
            },
            jb, count, RowPart::Cached, /*interleave=*/G == 1);
      });
      for (int32_t v : now)
        G > 1 ? scan_across(v, count) : scan_buffer(v, count);
    }
    each_row("scan.out.rows", [&](llvm::Value* g) {
      if (part == RowPart::Streamed)
        stream_row_ = b_.CreateIntrinsic(
            llvm::Intrinsic::ptrmask, {b_.getPtrTy(), i64},
            {b_.CreateGEP(ops_.mem_type(k_.slots[stream_].dtype), stream_row(), jb),
             b_.getInt64(~uint64_t(63))},
            nullptr, "stream.block");
      row_loop(
          "scan.out",
          [&] {
            scanned(g, b_.CreateSub(j_, jb), stages);
            loop_values(plan_.reduce_loops);
            store_outputs(/*rows=*/true);
          },
          jb, count, part, /*interleave=*/G == 1);
    });
  };

  // The blocks of [from, to), from carry (updated to what follows them). Streamed blocks start
  // on a 64-byte boundary of the streaming row: ptrmask tells LLVM.
  auto blocks = [&](const char* name, llvm::Value* from, llvm::Value* to, RowPart part) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* loop = llvm::BasicBlock::Create(ctx_, name, f_, done_);
    auto* after = llvm::BasicBlock::Create(ctx_, fmt::format("{}.after", name), f_, done_);
    llvm::Value* err_outer = ops_.err;
    b_.CreateCondBr(b_.CreateICmpSLT(from, to), loop, after);
    b_.SetInsertPoint(loop);
    auto* jb = b_.CreatePHI(i64, 2, "jb");
    auto* err_in = b_.CreatePHI(err_ty(), 2, "err.block");
    std::vector<llvm::PHINode*> carry_in(nv, nullptr);
    const std::vector<llvm::Value*> carry_outer = carry;
    for (int32_t v : scans)
      carry[v] = carry_in[v] = b_.CreatePHI(vty[v], 2, "scan.carry");
    ops_.err = err_in;
    llvm::Value* count = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateSub(to, jb),
                                                  b_.getInt64(B), nullptr, "count");
    block(jb, count, part);
    llvm::Value* jb_next = b_.CreateAdd(jb, b_.getInt64(B), "jb.next", true, true);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    no_unroll(b_.CreateCondBr(b_.CreateICmpSLT(jb_next, to), loop, after));
    jb->addIncoming(from, pre);
    jb->addIncoming(jb_next, latch);
    b_.SetInsertPoint(after);
    for (int32_t v : scans) {
      carry_in[v]->addIncoming(carry_outer[v], pre);
      carry_in[v]->addIncoming(carry[v], latch);
      auto* out = b_.CreatePHI(vty[v], 2, "scan.carry.after");
      out->addIncoming(carry_outer[v], pre);
      out->addIncoming(carry[v], latch);
      carry[v] = out;
    }
    loop_err_after(err_in, err_outer, pre, ops_.err, latch, "err.block.after");
    stream_row_ = nullptr;
  };

  llvm::Value* r = arg(kR);
  if (stream_ < 0) {
    blocks("scan.block", b_.getInt64(0), r, RowPart::Cached);
  } else if (G == 1) { // the head through the cache (the whole row where it is not aligned to
                       // its elements)
    llvm::Value* head = align_stream_row(stream_row(), r);
    blocks("scan.head", b_.getInt64(0), head, RowPart::Head);
    blocks("scan.block", head, r, RowPart::Streamed);
  } else { // the same where the group's rows share their offset from a 64-byte boundary, else
           // the whole rows through the cache; in vectors (a head of a whole row is no short one)
    i_ = first.i;
    const SlotState& st = slots_[stream_];
    const uint64_t item = itemsize(k_.slots[stream_].dtype);
    llvm::Value* shared = b_.CreateICmpEQ(
        b_.CreateAnd(b_.CreateMul(st.stride, b_.getInt64(item)), b_.getInt64(63)), b_.getInt64(0));
    llvm::Value* head = b_.CreateSelect(shared, align_stream_row(stream_row(), r), r, "head");
    blocks("scan.head", b_.getInt64(0), head, RowPart::Cached);
    blocks("scan.block", head, r, RowPart::Streamed);
  }
  i_ = first.i;
  vals_ = first.vals;
}

// The current row of the streaming slot (at i_).
llvm::Value* KernelLowering::stream_row() {
  return b_.CreateInBoundsGEP(ops_.mem_type(k_.slots[stream_].dtype), slots_[stream_].ptr,
                              element_index(stream_));
}

// The identity of a reduction's or a scan's combining op in dtype t: 0, 1, or the lowest or
// highest value of t (-inf for LogAddExp).
llvm::Value* KernelLowering::identity(Op combine, DType t) {
  llvm::Type* ty = ops_.reg_type(t);
  if (is_floating_point(t))
    return llvm::ConstantFP::get(ty, combine == Op::Add                               ? 0.0
                                     : combine == Op::Mul                             ? 1.0
                                     : combine == Op::Max || combine == Op::LogAddExp ? -HUGE_VAL
                                                                                      : HUGE_VAL);
  const unsigned bits = ty->getIntegerBitWidth();
  const bool uns = t == kBool || t == kUInt8;
  switch (combine) {
  case Op::Add:
    return llvm::ConstantInt::get(ty, 0);
  case Op::Mul:
    return llvm::ConstantInt::get(ty, 1);
  case Op::Max:
    return llvm::ConstantInt::get(ty, uns ? llvm::APInt::getMinValue(bits)
                                          : llvm::APInt::getSignedMinValue(bits));
  default:
    return llvm::ConstantInt::get(ty, uns ? llvm::APInt::getMaxValue(bits)
                                          : llvm::APInt::getSignedMaxValue(bits));
  }
}

// What scan v starts from.
llvm::Value* KernelLowering::scan_identity(int v) {
  return identity(ir::combine_op(k_.values[v].op), k_.values[v].dtype);
}

// A plain loop over j in [first, first + count) (default [0, r)) from the current block of the
// element loop, with `body` lowering what it computes; the values per i are visible inside, the
// loop's own values not after it.
void KernelLowering::row_loop(const char* name, const std::function<void()>& body,
                              llvm::Value* first, llvm::Value* count, RowPart part,
                              bool interleave) {
  auto* i64 = b_.getInt64Ty();
  llvm::Value* r = count ? count : arg(kR);
  auto* outer = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, fmt::format("{}.loop", name), f_, done_);
  auto* after = llvm::BasicBlock::Create(ctx_, fmt::format("{}.after", name), f_, done_);
  llvm::Value* err_outer = ops_.err;
  const std::vector<llvm::Value*> outer_vals = vals_;
  b_.CreateCondBr(b_.CreateICmpSGT(r, b_.getInt64(0)), loop, after);

  b_.SetInsertPoint(loop);
  auto* j = b_.CreatePHI(i64, 2, "j");
  auto* err_in = b_.CreatePHI(err_ty(), 2, "err.row");
  // A scan carries its accumulation from j - 1 (from before the loop at its first j).
  const std::vector<llvm::Value*> scan_outer = scan_acc_;
  for (size_t v = 0; v < scan_acc_.size(); ++v)
    if (scan_outer[v]) scan_acc_[v] = b_.CreatePHI(scan_outer[v]->getType(), 2, "scan");
  j_ = first ? b_.CreateAdd(first, j, "", /*HasNUW=*/true, /*HasNSW=*/true) : j;
  stream_k_ = part == RowPart::Streamed ? j : nullptr;
  ops_.err = err_in;
  body();
  stream_k_ = nullptr;
  llvm::Value* j_next = b_.CreateAdd(j, b_.getInt64(1), "j.next", true, true);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  auto* br = b_.CreateCondBr(b_.CreateICmpEQ(j_next, r), after, loop);
  if (part == RowPart::Head) head_loop(br);
  if (!interleave) interleave_once(br);
  llvm::Value* err_loop = ops_.err;
  j->addIncoming(b_.getInt64(0), outer);
  j->addIncoming(j_next, latch);
  std::vector<llvm::Value*> scan_latch(scan_acc_.size(), nullptr);
  for (size_t v = 0; v < scan_acc_.size(); ++v) {
    if (!scan_outer[v]) continue;
    auto* phi = llvm::cast<llvm::PHINode>(scan_acc_[v]);
    scan_latch[v] = vals_[v] ? vals_[v] : phi;
    phi->addIncoming(scan_outer[v], outer);
    phi->addIncoming(scan_latch[v], latch);
  }

  b_.SetInsertPoint(after);
  j_ = nullptr;
  vals_ = outer_vals;
  for (size_t v = 0; v < scan_acc_.size(); ++v) {
    if (!scan_outer[v]) continue;
    auto* phi = b_.CreatePHI(scan_outer[v]->getType(), 2, "scan.after");
    phi->addIncoming(scan_outer[v], outer);
    phi->addIncoming(scan_latch[v], latch);
    scan_acc_[v] = phi;
  }
  loop_err_after(err_in, err_outer, outer, err_loop, latch, "err.row.after");
}

// The error flag of a loop: `in`, its phi in the loop's header, enters as `outer` from `pre` and
// leaves as `loop` from `latch`. Returns the flag at the latch: `loop`, or `outer` where nothing
// in the loop sets bits (the phi goes).
llvm::Value* KernelLowering::loop_err(llvm::PHINode* in, llvm::Value* outer, llvm::BasicBlock* pre,
                                      llvm::Value* loop, llvm::BasicBlock* latch) {
  if (loop == in) { // nothing divides integers inside: the flag is unchanged
    in->replaceAllUsesWith(outer);
    in->eraseFromParent();
    return outer;
  }
  in->addIncoming(outer, pre);
  in->addIncoming(loop, latch);
  return loop;
}

// loop_err, for a loop that `pre` may skip: the flag after it, from the current block (the
// loop's exit), in ops_.err.
void KernelLowering::loop_err_after(llvm::PHINode* in, llvm::Value* outer, llvm::BasicBlock* pre,
                                    llvm::Value* loop, llvm::BasicBlock* latch, const char* name) {
  if (loop_err(in, outer, pre, loop, latch) == outer) {
    ops_.err = outer;
    return;
  }
  auto* after = b_.CreatePHI(err_ty(), 2, name);
  after->addIncoming(outer, pre);
  after->addIncoming(loop, latch);
  ops_.err = after;
}

} // namespace tj::llvmjit::detail
