// LLVM lowering of a kernel's structure: element loop, slots, reduction nests, error flag.
#include "codegen/llvm/llvm_kernel.h"

#include <fmt/format.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/Transforms/Utils/Local.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace tj::llvmjit::detail {
namespace {

// The name of the alias scope of a slot written around the cache: how mark_streaming_stores
// finds its stores once the vectorizer has widened them (it keeps their alias scopes).
constexpr const char* kStreamScope = "stream";

// The longest row whose values kept for later loops go to a scratch row on the stack when the
// row output is written around the cache (at most 32 KiB: kernels run on the caller's stack). The
// scheduler streams no longer row; one would keep them in the output row, correct but slow.
constexpr int64_t kKeepScratch = kir::kMaxStreamRow;

using ir::Op;
using kir::Slot;
using kir::StrideKind;
using Role = kir::Slot::Role;

// Elements per block of the reduction loop: each block is summed on its own (vectorized, in
// several lanes) and the block sums are then added in order, which keeps floating-point sums
// within a few ulp of pairwise summation. A float32 sum adds each block in float32 and the block
// sums in float64 (as PyTorch's cascade sum): its blocks are shorter, so that a lane of a
// 16-lane loop adds 16 elements (error within 20 * 2^-24 of the sum of magnitudes, below
// pairwise summation's bound from 2^20 elements up), where a float64 add per element would
// cost two conversions and two adds per vector.
constexpr int64_t kReduceBlock = 2048;
constexpr int64_t kNarrowReduceBlock = 256;
// The tiled nest (column reductions, matmul): the accumulators of a tile of outputs take at most
// kTileBytes of stack (L1-resident), and a tile is as wide as that allows, up to kMaxTile
// outputs, so that a matmul reads its right operand in long contiguous runs (a whole row of 1024
// floats per j). Measured on Zen 5 for 1024^3 float32: tiles of 1024-2048 are 1.5x faster than
// 256; the loop is bound by the L3 bandwidth, so accumulators in registers gain nothing.
constexpr int64_t kTileBytes = 16384;
constexpr int64_t kMaxTile = 2048, kMinTile = 64;
// Calls with fewer outputs than this take the element loop instead of the tiled nest when the
// reduction also reads memory contiguous along j (matmul): its dot products then vectorize along
// j, while a tile of a few outputs runs the scalar remainder of its loop. Measured crossover for
// 1024 x 1024 x n matmuls: n = 8 (n = 2: 1.3 ms as dot products, 3.6 ms tiled).
constexpr int64_t kMinTiledN = 8;
// j per block of a tiled floating sum: each block is summed on its own and then added to the
// total, so a float64 output's error grows like kTileSumBlock + r / kTileSumBlock terms rather
// than a chain of r, as with the blocks of the row path. A float32 sum adds blocks of
// kNarrowTileBlock terms in float32 and their sums in float64, as the row path's lanes do.
constexpr int64_t kTileSumBlock = 64;
constexpr int64_t kNarrowTileBlock = 16;

enum Arg : unsigned { kN, kPtrs, kBase, kStride, kParams, kErr, kR, kRStride, kNumArgs };

// The kernel as
//   entry:     if (n <= 0) return
//   preheader: slot pointers, bases, strides, params and loop-invariant inputs
//   loop:      for i in [0, n): for each reduction loop (kir::LoopPlan): the values per i it
//              needs, the reduction nest; the values per i after them; [the store loop]; stores
//   done:      if any error (kernel_ir.h): *err |= its bits
// The element loop is a canonical counted loop with no calls but vectorizable libm calls, so the
// loop vectorizer widens it; a reduction nest is
//   for each block [jb, jb + kReduceBlock) of [0, r): for j in the block: accumulate
// with the accumulation reassociable within a block, so that its inner loop vectorizes too; the
// store loop (a row written from the row and its reductions) is a plain loop over j. When
// the kernel has one reduction loop and no store loop, the outputs are contiguous and the
// reduction reads memory contiguous along j only through slots that are the same for every i
// (column sums; matmul, whose left operand is one scalar per j), the nest is instead tiled over i:
//   for each tile [i0, i0 + T) of [0, n): for j in [0, r):
//     the values independent of i (per_j_), then for i in the tile: accumulate
// followed by the values after the reduction for each i of the tile. The loop over the tile is
// the one that vectorizes: for a matmul it is acc[i] += a * b[j, i], a row of the right operand.
class KernelLowering {
public:
  KernelLowering(const kir::Kernel& k, llvm::Module& m, const LoweringTarget& t)
      : k_(k), m_(m), ctx_(m.getContext()), b_(ctx_), ops_(b_, t.isa), target_(t) {}

  llvm::Function* run(const std::string& fname);

private:
  struct SlotState {
    llvm::Value* ptr = nullptr;       // the slot's buffer
    llvm::Value* base = nullptr;      // i64
    llvm::Value* stride = nullptr;    // i64: constant unless Strided
    llvm::Value* rstride = nullptr;   // i64 along the reduction loop: constant unless Strided
    llvm::Value* row = nullptr;       // &buffer[base]
    llvm::Value* invariant = nullptr; // an input the same for every (i, j): loaded once
    llvm::MDNode* scope = nullptr;    // {this slot's scope}
    llvm::MDNode* noalias = nullptr;  // the scopes this slot's accesses never alias
  };
  // One Reduce value's accumulator.
  struct Accumulator {
    int value;
    DType acc;      // float32 sums and products accumulate in float64
    llvm::Type* ty; // register type of acc
    llvm::Value* init;
    // The type of a block's partial sum: float32 for a float32 sum (kNarrowReduceBlock,
    // kNarrowTileBlock), else acc.
    DType part = kFloat64;
    llvm::Type* part_ty = nullptr;
    llvm::Value* part_init = nullptr;
    // A float32 or float64 max or min along a row takes three accumulators of its values' bits
    // (float_extremum_bits), each of which says which; anything else none.
    llvm::Intrinsic::ID bits = llvm::Intrinsic::not_intrinsic;
    llvm::PHINode* block_total = nullptr; // sum of the blocks so far
    llvm::PHINode* partial = nullptr;     // within the current block
    llvm::Value* partial_next = nullptr;
    llvm::Value* total_next = nullptr;
  };

  void declare(const std::string& fname);
  void alias_scopes();
  void prepare_slot(int s);
  void classify();
  void choose_kept();
  void loop_values(int loop);
  llvm::Value* element_loop(llvm::BasicBlock* done);
  llvm::Value* pipelined_rows(llvm::BasicBlock* exit);
  using Loops = std::function<llvm::Value*(llvm::BasicBlock* exit)>;
  llvm::Value* either(llvm::Value* cond, const char* yes_name, const Loops& yes,
                      const char* no_name, const Loops& no, llvm::BasicBlock* done);
  llvm::Value* counted_loop(llvm::BasicBlock* exit, llvm::Value* count, llvm::Value* first,
                            bool cached);
  llvm::Value* streaming_loops(llvm::BasicBlock* done);
  llvm::Value* tiled_loops(llvm::BasicBlock* done);
  void store_outputs(bool rows);
  void scatter(const kir::Store& st);
  void reduction_loop(int loop);
  void store_loop();
  void row_loop(const char* name, const std::function<void()>& body, llvm::Value* first = nullptr,
                llvm::Value* count = nullptr, bool cached = true);
  llvm::Value* align_stream_row(llvm::Value* row, llvm::Value* count);
  llvm::Value* kept_address(int s);
  void prefetch_next_row(llvm::Value* first, llvm::Value* end);
  Accumulator make_accumulator(int v);
  std::vector<Accumulator> float_extremum_bits(int v);
  llvm::Value* float_extremum(int v, llvm::Value* smax, llvm::Value* umax, llvm::Value* umin);
  llvm::Value* accumulate(const Accumulator& a, llvm::Value* acc, llvm::Value* x, bool reassoc);
  void lower_values(const std::vector<char>& which);
  llvm::Value* lower_value(int v);
  llvm::Value* operand(int v, int a, DType want);
  llvm::Value* element_index(int s);
  llvm::Value* element_address(int s);
  llvm::Instruction* annotate(llvm::Instruction* access, int s);
  llvm::Value* arg(Arg a) { return f_->getArg(a); }
  // The error bits the kernel ORs into *err (kernel_ir.h), carried through the loops.
  llvm::Type* err_ty() { return b_.getInt32Ty(); }
  llvm::Value* no_err() { return b_.getInt32(0); }
  // Sets a hint on the loop whose latch branch this is (its llvm.loop metadata).
  // Hints set before on the same loop are kept.
  void loop_hint(llvm::Instruction* latch_branch, const char* name, llvm::Metadata* value) {
    llvm::SmallVector<llvm::Metadata*, 2> hint = {llvm::MDString::get(ctx_, name)};
    if (value) hint.push_back(value);
    llvm::SmallVector<llvm::Metadata*, 4> ops = {nullptr};
    if (llvm::MDNode* old = latch_branch->getMetadata(llvm::LLVMContext::MD_loop))
      for (unsigned i = 1; i < old->getNumOperands(); ++i)
        ops.push_back(old->getOperand(i));
    ops.push_back(llvm::MDNode::get(ctx_, hint));
    auto* md = llvm::MDNode::getDistinct(ctx_, ops);
    md->replaceOperandWith(0, md);
    latch_branch->setMetadata(llvm::LLVMContext::MD_loop, md);
  }
  // The outer loops of a nest are not unrolled: they gain nothing from it and would copy the
  // vectorized inner loop.
  void no_unroll(llvm::Instruction* latch_branch) {
    loop_hint(latch_branch, "llvm.loop.unroll.disable", nullptr);
  }
  // The elements before a streaming output's 64-byte boundary: at most 63 bytes, not worth a
  // vector loop.
  void head_loop(llvm::Instruction* latch_branch) {
    no_unroll(latch_branch);
    loop_hint(latch_branch, "llvm.loop.vectorize.enable",
              llvm::ConstantAsMetadata::get(b_.getFalse()));
  }
  // The loops over a tile are not interleaved: they are bound by the memory they stream, not by
  // latency, and often run fewer than 32 iterations (narrow outputs, the last tile): interleaved
  // 4 times, an 8-wide vector loop would leave those to the scalar remainder (a matmul 24 outputs
  // wide ran 2x slower).
  void interleave_once(llvm::Instruction* latch_branch) {
    loop_hint(latch_branch, "llvm.loop.interleave.count",
              llvm::ConstantAsMetadata::get(b_.getInt32(1)));
  }
  [[noreturn]] void bad(int v, const std::string& what) {
    throw LowerError(fmt::format("%{}: {}", v, what));
  }

  const kir::Kernel& k_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  OpLowering ops_;
  const LoweringTarget& target_;
  llvm::Function* f_ = nullptr;
  bool reduces_ = false;
  bool tiled_ = false;
  bool narrow_by_rows_ = false;       // tiled, but calls with n < kMinTiledN take the element loop
  llvm::BasicBlock* done_ = nullptr;  // after the loops: new blocks go before it
  llvm::Value* i_ = nullptr;          // element index
  llvm::Value* j_ = nullptr;          // reduction index, inside the reduction loop only
  int stream_ = -1;                   // the output slot written around the cache, if any
  llvm::Value* stream_row_ = nullptr; // its first element on a 64-byte boundary
  llvm::Value* stream_k_ = nullptr;   // and the index from there, inside the streaming loop only
  llvm::Value* keep_scratch_ = nullptr; // a row kept for later loops when stream_ is its slot
  llvm::Value* keep_row_ = nullptr;     // where the current row keeps it
  // Rows pipelined (pipelined_rows): the stores of row i - 1 run in the last reduction loop of
  // row i, lowered there by fused_store_, through fused_row_ (the streaming slot's row i - 1).
  bool pipelined_ = false;
  std::function<void()> fused_store_;
  llvm::Value* fused_row_ = nullptr;
  // The current block of a reduction loop starts at j = block_start_, a multiple of its length:
  // block_start_aligned_ says so to LLVM.
  llvm::Value* block_start_ = nullptr;
  llvm::Value* block_start_aligned_ = nullptr;
  std::vector<SlotState> slots_;
  std::vector<llvm::Value*> params_;
  std::vector<llvm::Value*> vals_; // of the current context (per i, or a loop over j)
  kir::LoopPlan plan_;             // which values each context computes
  // The tiled nest's contexts: the reduction loop, after it, and the values of the reduction loop
  // independent of i.
  std::vector<char> in_loop_, after_loop_, per_j_;
  // Values kept for later loops (choose_kept): the row output slot holding each (-1: none), and
  // the reduction loop that writes it there.
  std::vector<int> kept_in_, kept_from_;
};

llvm::Function* KernelLowering::run(const std::string& fname) {
  reduces_ = k_.has_row_loops();
  for (size_t s = 0; s < k_.slots.size(); ++s)
    if (k_.slots[s].stream) stream_ = static_cast<int>(s);
  declare(fname);
  classify();
  auto* i64 = b_.getInt64Ty();
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", f_);
  auto* pre = llvm::BasicBlock::Create(ctx_, "preheader", f_);
  auto* done = llvm::BasicBlock::Create(ctx_, "done", f_);
  auto* ret = llvm::BasicBlock::Create(ctx_, "ret", f_);
  done_ = done;

  b_.SetInsertPoint(entry);
  if (stream_ >= 0 && std::count(kept_in_.begin(), kept_in_.end(), stream_) > 0) {
    llvm::Value* fits = b_.CreateICmpSLE(arg(kR), b_.getInt64(kKeepScratch));
    llvm::Value* rows = b_.CreateSelect(fits, arg(kR), b_.getInt64(1));
    if (pipelined_) // rows i - 1 and i (pipelined_rows)
      rows = b_.CreateSelect(b_.CreateICmpSLE(arg(kR), b_.getInt64(kKeepScratch / 2)),
                             b_.CreateShl(arg(kR), 1), rows);
    auto* scratch = b_.CreateAlloca(ops_.mem_type(k_.slots[stream_].dtype), rows, "keep.scratch");
    scratch->setAlignment(llvm::Align(64));
    keep_scratch_ = scratch;
  }
  b_.CreateCondBr(b_.CreateICmpSGT(arg(kN), b_.getInt64(0)), pre, ret);

  // Preheader: everything loop-invariant, read only when n > 0.
  b_.SetInsertPoint(pre);
  alias_scopes();
  params_.assign(k_.params.size(), nullptr);
  for (size_t p = 0; p < k_.params.size(); ++p) {
    bool used = std::any_of(k_.values.begin(), k_.values.end(), [&](const kir::Value& v) {
      return v.op == Op::Const && v.param == int32_t(p);
    });
    if (!used) continue;
    llvm::Value* addr = b_.CreateConstInBoundsGEP1_64(i64, arg(kParams), p);
    params_[p] = ops_.param(b_.CreateLoad(i64, addr, fmt::format("param{}", p)), k_.params[p]);
  }
  for (size_t s = 0; s < k_.slots.size(); ++s)
    prepare_slot(int(s));

  // The loops; then the error flag, stored once after them.
  llvm::Value* err = nullptr;
  if (!tiled_) {
    err = element_loop(done);
    b_.SetInsertPoint(done);
    // Non-temporal stores are weakly ordered: they are made visible before the kernel returns
    // (and the thread pool reports it done).
    if (stream_ >= 0) b_.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent);
  } else if (!narrow_by_rows_) {
    err = tiled_loops(done);
    b_.SetInsertPoint(done);
  } else { // n < kMinTiledN: the element loop, whose reduction then reads contiguous memory
    err = either(
        b_.CreateICmpSGE(arg(kN), b_.getInt64(kMinTiledN)), "wide",
        [&](llvm::BasicBlock* exit) { return tiled_loops(exit); }, "narrow",
        [&](llvm::BasicBlock* exit) { return element_loop(exit); }, done);
  }
  if (!err) { // nothing divides integers
    b_.CreateBr(ret);
  } else {
    auto* set_err = llvm::BasicBlock::Create(ctx_, "set_err", f_, ret);
    b_.CreateCondBr(b_.CreateICmpNE(err, no_err()), set_err, ret);
    b_.SetInsertPoint(set_err);
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(err_ty(), arg(kErr)), err), arg(kErr));
    b_.CreateBr(ret);
  }
  b_.SetInsertPoint(ret);
  b_.CreateRetVoid();
  // Keep the libmvec declarations until the loop vectorizer has looked for them.
  if (!ops_.keep_alive.empty()) llvm::appendToCompilerUsed(m_, ops_.keep_alive);
  return f_;
}

// The element loop over i, from the end of the preheader (the reduction nest inside, if any).
// Returns the error flag at `done`, or nullptr when nothing divides integers.
llvm::Value* KernelLowering::element_loop(llvm::BasicBlock* done) {
  if (stream_ >= 0 && !reduces_) return streaming_loops(done);
  if (!pipelined_) return counted_loop(done, arg(kN), nullptr, true);
  // Pipelined where the streaming slot's rows all start on a 64-byte boundary (so that its stores
  // from the reduction loop's blocks are aligned) and a kept row fits the scratch twice.
  auto* i64 = b_.getInt64Ty();
  const SlotState& st = slots_[stream_];
  const int64_t item = int64_t(itemsize(k_.slots[stream_].dtype));
  llvm::Value* aligned =
      b_.CreateICmpEQ(b_.CreateAnd(b_.CreateOr(b_.CreatePtrToInt(st.row, i64),
                                               b_.CreateMul(st.stride, b_.getInt64(item))),
                                   b_.getInt64(63)),
                      b_.getInt64(0));
  if (keep_scratch_)
    aligned = b_.CreateAnd(aligned, b_.CreateICmpSLE(arg(kR), b_.getInt64(kKeepScratch / 2)));
  return either(
      aligned, "piped", [&](llvm::BasicBlock* exit) { return pipelined_rows(exit); }, "plain",
      [&](llvm::BasicBlock* exit) { return counted_loop(exit, arg(kN), nullptr, true); }, done);
}

// Two versions of the loops from the current block: `yes` where cond holds, `no` where it does
// not, each lowered into blocks named after it and ending at `done`. Returns the error flag at
// `done` (nullptr when neither divides integers), where it leaves the builder.
llvm::Value* KernelLowering::either(llvm::Value* cond, const char* yes_name, const Loops& yes,
                                    const char* no_name, const Loops& no, llvm::BasicBlock* done) {
  auto* yes_bb = llvm::BasicBlock::Create(ctx_, yes_name, f_, done);
  auto* no_bb = llvm::BasicBlock::Create(ctx_, no_name, f_, done);
  b_.CreateCondBr(cond, yes_bb, no_bb);
  auto lower = [&](llvm::BasicBlock* bb, const char* name, const Loops& loops) {
    auto* exit = llvm::BasicBlock::Create(ctx_, fmt::format("{}.exit", name), f_, done);
    b_.SetInsertPoint(bb);
    llvm::Value* err = loops(exit);
    b_.SetInsertPoint(exit);
    b_.CreateBr(done);
    return std::pair{err, exit};
  };
  const auto [err_yes, exit_yes] = lower(yes_bb, yes_name, yes);
  const auto [err_no, exit_no] = lower(no_bb, no_name, no);
  b_.SetInsertPoint(done);
  if (!err_yes && !err_no) return nullptr;
  auto* phi = b_.CreatePHI(err_ty(), 2, "err.any");
  phi->addIncoming(err_yes ? err_yes : no_err(), exit_yes);
  phi->addIncoming(err_no ? err_no : no_err(), exit_no);
  return phi;
}

// for i in [first, first + count) (first: 0 when null), count > 0, then to `exit`; `cached`:
// the streaming slot, if any, is written through the cache (the iterations before its 64-byte
// boundary). Returns the error flag at `exit`, or nullptr when nothing divides integers.
llvm::Value* KernelLowering::counted_loop(llvm::BasicBlock* exit, llvm::Value* count,
                                          llvm::Value* first, bool cached) {
  auto* i64 = b_.getInt64Ty();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, cached ? "loop" : "stream.loop", f_, exit);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  auto* k = b_.CreatePHI(i64, 2, "k");
  auto* err_in = b_.CreatePHI(err_ty(), 2, "err.acc");
  i_ = first ? b_.CreateAdd(first, k, "i", /*HasNUW=*/true, /*HasNSW=*/true) : k;
  stream_k_ = cached ? nullptr : k;
  ops_.err = err_in;
  vals_.assign(k_.values.size(), nullptr);
  for (int l = 0; l < plan_.reduce_loops; ++l) {
    lower_values(plan_.per_i[l]);
    reduction_loop(l);
  }
  lower_values(plan_.per_i[plan_.reduce_loops]);
  if (plan_.store_loop) store_loop();
  store_outputs(/*rows=*/false);
  llvm::Value* next = b_.CreateAdd(k, b_.getInt64(1), "k.next", /*HasNUW=*/true, /*HasNSW=*/true);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  auto* br = b_.CreateCondBr(b_.CreateICmpEQ(next, count), exit, loop);
  if (reduces_) no_unroll(br);
  // An elementwise loop is not interleaved: 16 lanes a step keep the memory busy, and a second
  // copy of the body cost 0.3 ms of compile time for no speed (gelu, rows of 24 and 40 floats).
  if (!reduces_) interleave_once(br);
  if (stream_ >= 0 && cached && !reduces_) head_loop(br);
  k->addIncoming(b_.getInt64(0), pre);
  k->addIncoming(next, latch);
  stream_k_ = nullptr;
  if (ops_.err == err_in) {
    err_in->replaceAllUsesWith(no_err());
    err_in->eraseFromParent();
    return nullptr;
  }
  err_in->addIncoming(no_err(), pre); // an OR reduction over the loop
  err_in->addIncoming(ops_.err, latch);
  return ops_.err;
}

// The row loop of a kernel whose store loop streams its row (pipelined_), with the stores of row
// i - 1 inside the last reduction loop of row i: they stream out while that loop computes, where
// a store loop of their own waits for memory with the vector units idle (softmax 4096 x 2048 on
// 2 threads: 1.63 -> 1.48 ms). Row i - 1's values per row come through phis, its kept row from
// the other half of a scratch twice as long. The first iteration has no row i - 1: its stores
// write row 0 from zeros, the next iteration writes it again (outputs alias no input), and the
// errors they raise are dropped. The last row's store loop follows the loop.
llvm::Value* KernelLowering::pipelined_rows(llvm::BasicBlock* exit) {
  auto* i64 = b_.getInt64Ty();
  const size_t nv = k_.values.size();
  const int store = plan_.reduce_loops; // the store loop's index in plan_.in_loop
  const DType dt = k_.slots[stream_].dtype;
  llvm::Type* mt = ops_.mem_type(dt);
  // The values per row that the store loop reads: carried from row i - 1.
  std::vector<char> carried(nv, 0);
  auto carry = [&](int32_t v) {
    if (v >= 0 && !plan_.in_loop[size_t(store)][size_t(v)]) carried[size_t(v)] = 1;
  };
  for (size_t v = 0; v < nv; ++v)
    if (plan_.in_loop[size_t(store)][v])
      for (int32_t src : k_.values[v].src)
        carry(src);
  for (const kir::Store& st : k_.stores)
    if (kir::moves_along_j(k_.slots[st.slot])) carry(st.value);

  // The first iteration reads zeros for row -1: defined values, whatever its stores compute.
  if (keep_scratch_)
    b_.CreateMemSet(b_.CreateInBoundsGEP(mt, keep_scratch_, arg(kR)), b_.getInt8(0),
                    b_.CreateMul(arg(kR), b_.getInt64(int64_t(itemsize(dt)))), llvm::MaybeAlign());
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, "rows", f_, exit);
  auto* last = llvm::BasicBlock::Create(ctx_, "rows.last", f_, exit);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  auto* k = b_.CreatePHI(i64, 2, "k");
  auto* err_in = b_.CreatePHI(err_ty(), 2, "err.acc");
  std::vector<llvm::PHINode*> prev(nv, nullptr);
  std::vector<llvm::Value*> prev_vals(nv, nullptr);
  for (size_t v = 0; v < nv; ++v)
    if (carried[v])
      prev_vals[v] = prev[v] = b_.CreatePHI(ops_.reg_type(k_.values[v].dtype), 2, "prev");
  llvm::Value* first = b_.CreateICmpEQ(k, b_.getInt64(0), "first");
  llvm::Value* prev_i = b_.CreateSelect(first, k, b_.CreateSub(k, b_.getInt64(1)), "prev.i");
  llvm::Value *keep = nullptr, *prev_keep = nullptr;
  if (keep_scratch_) {
    llvm::Value* odd = b_.CreateAnd(k, b_.getInt64(1));
    keep = b_.CreateInBoundsGEP(mt, keep_scratch_, b_.CreateMul(odd, arg(kR)), "keep.row");
    prev_keep = b_.CreateInBoundsGEP(
        mt, keep_scratch_, b_.CreateMul(b_.CreateXor(odd, b_.getInt64(1)), arg(kR)), "keep.prev");
  }
  i_ = prev_i;
  j_ = nullptr;
  // Aligned at run time (element_loop): ptrmask tells LLVM.
  llvm::Value* prev_row = b_.CreateIntrinsic(
      llvm::Intrinsic::ptrmask, {b_.getPtrTy(), i64},
      {b_.CreateGEP(mt, slots_[stream_].ptr, element_index(stream_)), b_.getInt64(~uint64_t(63))},
      nullptr, "prev.row");
  i_ = k;
  ops_.err = err_in;
  vals_.assign(nv, nullptr);
  keep_row_ = keep;
  fused_store_ = [&] {
    const std::vector<llvm::Value*> row_vals = vals_;
    llvm::Value* row_i = i_;
    llvm::Value* row_keep = keep_row_;
    llvm::Value* err_before = ops_.err;
    vals_ = prev_vals;
    i_ = prev_i;
    keep_row_ = prev_keep;
    fused_row_ = prev_row;
    loop_values(store);
    store_outputs(/*rows=*/true);
    if (ops_.err != err_before) ops_.err = b_.CreateSelect(first, err_before, ops_.err);
    fused_row_ = nullptr;
    keep_row_ = row_keep;
    i_ = row_i;
    vals_ = row_vals;
  };
  for (int l = 0; l < plan_.reduce_loops; ++l) {
    lower_values(plan_.per_i[l]);
    reduction_loop(l);
  }
  fused_store_ = nullptr;
  lower_values(plan_.per_i[store]);
  store_outputs(/*rows=*/false);
  llvm::Value* next = b_.CreateAdd(k, b_.getInt64(1), "k.next", /*HasNUW=*/true, /*HasNSW=*/true);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  no_unroll(b_.CreateCondBr(b_.CreateICmpEQ(next, arg(kN)), last, loop));
  k->addIncoming(b_.getInt64(0), pre);
  k->addIncoming(next, latch);
  for (size_t v = 0; v < nv; ++v) {
    if (!prev[v]) continue;
    if (!vals_[v] || vals_[v]->getType() != prev[v]->getType())
      bad(int(v), "a value per row the pipelined store loop reads is missing or of another type");
    prev[v]->addIncoming(llvm::Constant::getNullValue(prev[v]->getType()), pre);
    prev[v]->addIncoming(vals_[v], latch);
  }
  if (ops_.err == err_in) {
    err_in->replaceAllUsesWith(no_err());
    err_in->eraseFromParent();
    ops_.err = no_err();
  } else {
    err_in->addIncoming(no_err(), pre);
    err_in->addIncoming(ops_.err, latch);
  }

  // The last row's stores (vals_, i_ and keep_row_ are still the last row's).
  b_.SetInsertPoint(last);
  store_loop();
  b_.CreateBr(exit);
  llvm::Value* err = ops_.err;
  return err == no_err() ? nullptr : err;
}

// Sets stream_row_ to the first 64-byte boundary at or after `row` (the streaming slot's first
// element of a run of `count`): a pointer whose alignment LLVM knows. Returns how many elements
// lie before it, at most count; all of them where row is not aligned to the element size.
llvm::Value* KernelLowering::align_stream_row(llvm::Value* row, llvm::Value* count) {
  auto* i64 = b_.getInt64Ty();
  const uint64_t item = itemsize(k_.slots[stream_].dtype);
  // Not inbounds: a run may end within 63 bytes of its buffer's end.
  llvm::Value* up = b_.CreateConstGEP1_64(b_.getInt8Ty(), row, 63);
  stream_row_ = b_.CreateIntrinsic(llvm::Intrinsic::ptrmask, {b_.getPtrTy(), i64},
                                   {up, b_.getInt64(~uint64_t(63))}, nullptr, "stream.row");
  llvm::Value* at = b_.CreatePtrToInt(row, i64);
  llvm::Value* gap = b_.CreateSub(b_.CreatePtrToInt(stream_row_, i64), at);
  llvm::Value* whole = b_.CreateICmpEQ(b_.CreateAnd(at, b_.getInt64(item - 1)), b_.getInt64(0));
  return b_.CreateSelect(
      whole,
      b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateUDiv(gap, b_.getInt64(item)), count),
      count, "head");
}

// An elementwise kernel with an output written around the cache (kir::Slot::stream): the
// elements before that output's first 64-byte boundary go through the cache, the rest through a
// loop whose stores to it are aligned, so that the vector stores can be non-temporal ones
// (mark_streaming_stores). Where the output is not aligned to its element size, every element
// goes through the cache.
llvm::Value* KernelLowering::streaming_loops(llvm::BasicBlock* done) {
  llvm::Value* n = arg(kN);
  llvm::Value* peel = align_stream_row(slots_[stream_].row, n);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, "head", f_, done);
  auto* head_exit = llvm::BasicBlock::Create(ctx_, "head.exit", f_, done);
  auto* mid = llvm::BasicBlock::Create(ctx_, "mid", f_, done);
  auto* body = llvm::BasicBlock::Create(ctx_, "stream", f_, done);
  auto* body_exit = llvm::BasicBlock::Create(ctx_, "stream.exit", f_, done);
  b_.CreateCondBr(b_.CreateICmpNE(peel, b_.getInt64(0)), head, mid);
  b_.SetInsertPoint(head);
  llvm::Value* head_err = counted_loop(head_exit, peel, nullptr, true);
  b_.SetInsertPoint(head_exit);
  b_.CreateBr(mid);

  b_.SetInsertPoint(mid);
  llvm::PHINode* mid_err = nullptr;
  if (head_err) {
    mid_err = b_.CreatePHI(err_ty(), 2, "err.head");
    mid_err->addIncoming(no_err(), pre);
    mid_err->addIncoming(head_err, head_exit);
  }
  llvm::Value* rest = b_.CreateSub(n, peel, "rest");
  b_.CreateCondBr(b_.CreateICmpNE(rest, b_.getInt64(0)), body, done);
  b_.SetInsertPoint(body);
  llvm::Value* body_err = counted_loop(body_exit, rest, peel, false);
  b_.SetInsertPoint(body_exit);
  if (mid_err && body_err) body_err = b_.CreateOr(mid_err, body_err);
  b_.CreateBr(done);

  b_.SetInsertPoint(done);
  if (!mid_err && !body_err) return nullptr;
  auto* err = b_.CreatePHI(err_ty(), 2, "err.any");
  err->addIncoming(mid_err ? static_cast<llvm::Value*>(mid_err) : no_err(), mid);
  err->addIncoming(body_err ? body_err : mid_err, body_exit);
  return err;
}

// The stores of slots that move along j (rows: in the store loop) or of those that do not.
void KernelLowering::store_outputs(bool rows) {
  for (const kir::Store& st : k_.stores) {
    if (kir::moves_along_j(k_.slots[st.slot]) != rows) continue;
    if (st.scatters()) {
      scatter(st);
      continue;
    }
    llvm::Value* x = ops_.to_mem(vals_[st.value], k_.slots[st.slot].dtype);
    annotate(b_.CreateStore(x, element_address(st.slot)), st.slot);
  }
}

// A scattering store: if at is in [0, bound), the element at + at * stride is written (or added
// to); else the error bit is set.
void KernelLowering::scatter(const kir::Store& st) {
  const DType t = k_.slots[st.slot].dtype;
  llvm::Value* at = vals_[st.at];
  llvm::Value* ok = b_.CreateICmpULT(at, vals_[st.bound]);
  llvm::Value* bit = b_.CreateSelect(ok, no_err(), b_.getInt32(kir::kErrIndex));
  ops_.err = ops_.err ? b_.CreateOr(ops_.err, bit) : bit;
  auto* write = llvm::BasicBlock::Create(ctx_, "scatter", f_);
  auto* next = llvm::BasicBlock::Create(ctx_, "scatter.next", f_);
  b_.CreateCondBr(ok, write, next);
  b_.SetInsertPoint(write);
  llvm::Type* mt = ops_.mem_type(t);
  llvm::Value* e = b_.CreateAdd(element_index(st.slot), b_.CreateMul(at, vals_[st.stride]));
  llvm::Value* p = b_.CreateInBoundsGEP(mt, slots_[st.slot].ptr, e);
  llvm::Value* x = vals_[st.value];
  if (st.add) { // 16-bit floats add in float32, as every ALU op
    const DType c = t == kFloat16 || t == kBFloat16 ? kFloat32 : t;
    llvm::Value* old = ops_.to_reg(annotate(b_.CreateLoad(mt, p), st.slot), t);
    if (c != t) {
      old = ops_.cast(old, t, c);
      x = ops_.cast(x, t, c);
    }
    x = ops_.binary(Op::Add, c, old, x);
    if (c != t) x = ops_.cast(x, c, t);
  }
  annotate(b_.CreateStore(ops_.to_mem(x, t), p), st.slot);
  b_.CreateBr(next);
  b_.SetInsertPoint(next);
}

void KernelLowering::declare(const std::string& fname) {
  auto* i64 = b_.getInt64Ty();
  auto* ptr = b_.getPtrTy();
  auto* fty =
      llvm::FunctionType::get(b_.getVoidTy(), {i64, ptr, ptr, ptr, ptr, ptr, i64, ptr}, false);
  f_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, fname, m_);
  f_->addFnAttr(llvm::Attribute::NoUnwind);
  f_->addFnAttr("target-cpu", target_.cpu);
  f_->addFnAttr("target-features", target_.features);
  // 512-bit vectors where the host has them, Intel's AVX-512 CPUs included (LLVM prefers 256 bits
  // there): 16 lanes call our own exp and tanh, and rows shorter than the main vector step get a
  // vector epilogue. Measured on an Intel Xeon (2 threads): gelu over 16M floats 23.5 -> 11.3 ms,
  // rows of 24 floats 57 -> 17 ms, softmax 1.2x, the 1024^3 matmul 1.3x; a compile costs about
  // 1 ms more (the epilogue loop).
  f_->addFnAttr("prefer-vector-width", "512");
  const char* names[] = {"n", "ptrs", "base", "stride", "params", "err", "r", "rstride"};
  for (unsigned a = 0; a < kNumArgs; ++a)
    f_->getArg(a)->setName(names[a]);
  for (unsigned a : {kPtrs, kBase, kStride, kParams, kRStride}) { // arrays only read
    f_->addParamAttr(a, llvm::Attribute::NoAlias);
    f_->addParamAttr(a, llvm::Attribute::NoCapture);
    f_->addParamAttr(a, llvm::Attribute::ReadOnly);
  }
  f_->addParamAttr(kErr, llvm::Attribute::NoCapture);
}

// Alias scopes: outputs alias no input and no other output (the kernel IR contract).
void KernelLowering::alias_scopes() {
  slots_.resize(k_.slots.size());
  llvm::MDBuilder mdb(ctx_);
  llvm::MDNode* domain = mdb.createAnonymousAliasScopeDomain("tjk");
  std::vector<llvm::Metadata*> scopes(k_.slots.size(), nullptr);
  for (size_t s = 0; s < k_.slots.size(); ++s)
    if (k_.slots[s].role != Role::Index)
      scopes[s] = mdb.createAnonymousAliasScope(
          domain, k_.slots[s].stream ? kStreamScope : fmt::format("slot{}", s));
  for (size_t s = 0; s < k_.slots.size(); ++s) {
    if (!scopes[s]) continue;
    std::vector<llvm::Metadata*> others;
    for (size_t o = 0; o < k_.slots.size(); ++o)
      if (o != s && scopes[o] &&
          (k_.slots[s].role == Role::Output || k_.slots[o].role == Role::Output))
        others.push_back(scopes[o]);
    slots_[s].scope = llvm::MDNode::get(ctx_, {scopes[s]});
    if (!others.empty()) slots_[s].noalias = llvm::MDNode::get(ctx_, others);
  }
}

void KernelLowering::prepare_slot(int s) {
  const Slot& slot = k_.slots[s];
  SlotState& st = slots_[s];
  auto reads = [&](std::initializer_list<Op> ops) {
    return std::any_of(k_.values.begin(), k_.values.end(), [&](const kir::Value& v) {
      return v.slot == s && std::find(ops.begin(), ops.end(), v.op) != ops.end();
    });
  };
  bool used = reads({Op::Buffer, Op::Iota, Op::Gather}) ||
              std::any_of(k_.stores.begin(), k_.stores.end(),
                          [&](const kir::Store& x) { return x.slot == s; });
  if (!used) return;
  auto* i64 = b_.getInt64Ty();
  auto load_i64 = [&](Arg array, const char* what) -> llvm::Value* {
    return b_.CreateLoad(i64, b_.CreateConstInBoundsGEP1_64(i64, arg(array), s),
                         fmt::format("{}{}", what, s));
  };
  auto known = [&](StrideKind kind, Arg array, const char* what) -> llvm::Value* {
    switch (kind) {
    case StrideKind::Contiguous:
      return b_.getInt64(1);
    case StrideKind::Broadcast:
      return b_.getInt64(0);
    case StrideKind::Pairs:
      return b_.getInt64(2);
    case StrideKind::Strided:
      return load_i64(array, what);
    }
    return nullptr;
  };
  st.base = load_i64(kBase, "base");
  st.stride = known(slot.stride, kStride, "stride");
  st.rstride = reduces_ ? known(slot.rstride, kRStride, "rstride") : b_.getInt64(0);
  if (slot.role == Role::Index) return;
  llvm::Type* mt = ops_.mem_type(slot.dtype);
  st.ptr = b_.CreateLoad(b_.getPtrTy(), b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), arg(kPtrs), s),
                         fmt::format("ptr{}", s));
  st.row = b_.CreateInBoundsGEP(mt, st.ptr, st.base, fmt::format("row{}", s));
  bool invariant =
      slot.stride == StrideKind::Broadcast && (!reduces_ || slot.rstride == StrideKind::Broadcast);
  if (invariant && slot.role == Role::Input && reads({Op::Buffer}))
    st.invariant = ops_.to_reg(annotate(b_.CreateLoad(mt, st.row), s), slot.dtype);
}

// Which values each context computes: kir::plan_loops for the element loop, and
// kir::split_at_reduction for the tiled nest.
void KernelLowering::classify() {
  plan_ = kir::plan_loops(k_);
  choose_kept();
  const size_t nv = k_.values.size();
  kir::LoopSplit split = kir::split_at_reduction(k_);
  in_loop_ = std::move(split.in_loop);
  after_loop_ = std::move(split.after_loop);
  // Values of the reduction loop that do not depend on i: computed once per j for a whole tile.
  per_j_.assign(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    const kir::Value& x = k_.values[v];
    if (!in_loop_[v]) continue;
    if (x.op == Op::Buffer || x.op == Op::Iota)
      per_j_[v] = k_.slots[x.slot].stride == StrideKind::Broadcast;
    else if (x.op == Op::Gather) // the slot along i, and the index and its parameters
      per_j_[v] =
          k_.slots[x.slot].stride == StrideKind::Broadcast &&
          std::all_of(std::begin(x.src), std::end(x.src), [&](int32_t s) { return per_j_[s]; });
    else
      per_j_[v] = std::all_of(std::begin(x.src), std::end(x.src),
                              [&](int32_t s) { return s < 0 || per_j_[s]; });
  }
  // Tile over i when one slot read in the reduction loop is contiguous along i and every slot
  // contiguous along j is the same for every i (a scalar per j, broadcast over the tile). A
  // gathered slot's place moves with i through its index (rows of an embedding table).
  bool j_contiguous = false, i_contiguous = false, j_broadcast_contiguous = false;
  for (size_t v = 0; v < nv; ++v) {
    const Op op = k_.values[v].op;
    if (!in_loop_[v] || (op != Op::Buffer && op != Op::Gather)) continue;
    const Slot& slot = k_.slots[k_.values[v].slot];
    const bool along_j = slot.rstride == StrideKind::Contiguous;
    const bool same_for_every_i = slot.stride == StrideKind::Broadcast && op == Op::Buffer;
    j_contiguous |= along_j && !same_for_every_i;
    j_broadcast_contiguous |= along_j && same_for_every_i;
    i_contiguous |= slot.stride == StrideKind::Contiguous;
  }
  tiled_ = reduces_ && !plan_.several() && !j_contiguous && i_contiguous;
  narrow_by_rows_ = tiled_ && j_broadcast_contiguous;
  // Rows are pipelined when the store loop streams its row: not when a row store scatters, nor
  // when a value is kept in an output row (the first row's stores, written early, would
  // overwrite it).
  pipelined_ = !tiled_ && plan_.store_loop && stream_ >= 0 &&
               k_.slots[stream_].stride == StrideKind::Strided &&
               k_.slots[stream_].rstride == StrideKind::Contiguous;
  for (const kir::Store& st : k_.stores)
    pipelined_ &= !(st.scatters() && kir::moves_along_j(k_.slots[st.slot]));
  for (int s : kept_in_)
    pipelined_ &= s < 0 || s == stream_;
}

// Values computed in one loop over j and needed again by a later one are computed again there,
// unless they call the math library and the kernel stores rows: then such a value that a
// reduction loop accumulates (a softmax's exp(x - max), summed) is stored by that loop, as it
// computes it, into a row output slot of its dtype, and the later loops read it back. The store
// loop overwrites the row last.
// Outputs alias no other slot, so the row is the kernel's own scratch memory, and it is still in
// the cache when read back: a softmax computes exp once per element instead of twice.
void KernelLowering::choose_kept() {
  const size_t nv = k_.values.size();
  kept_in_.assign(nv, -1);
  kept_from_.assign(nv, -1);
  if (!plan_.store_loop) return;
  std::vector<char> calls_math(nv, 0), taken(k_.slots.size(), 0);
  for (size_t v = 0; v < nv; ++v) {
    const kir::Value& x = k_.values[v];
    if (!plan_.varying[v]) continue;
    calls_math[v] = ir::libm_name(x.op) != nullptr;
    for (int32_t s : x.src)
      if (s >= 0 && calls_math[s]) calls_math[v] = 1;
  }
  for (size_t r = 0; r < nv; ++r) {
    const int loop = plan_.loop_of[r];
    if (loop < 0) continue;
    const int32_t v = k_.values[r].src[0];
    if (!calls_math[v] || kept_in_[v] >= 0) continue;
    bool later = false;
    for (size_t l = size_t(loop) + 1; l < plan_.in_loop.size(); ++l)
      later |= plan_.in_loop[l][v] != 0;
    if (!later) continue;
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const Slot& slot = k_.slots[s];
      if (slot.role == Role::Output && kir::moves_along_j(slot) && !taken[s] &&
          slot.dtype == k_.values[v].dtype) {
        kept_in_[v] = int(s);
        kept_from_[v] = loop;
        taken[s] = 1;
        break;
      }
    }
  }
}

// Lowers what loop `loop` (a reduction loop, or the store loop after them) computes per (i, j):
// the values of plan_.in_loop it needs, reading back those an earlier loop kept and storing those
// it keeps itself.
void KernelLowering::loop_values(int loop) {
  const std::vector<char>& all = plan_.in_loop[size_t(loop)];
  std::vector<char> which(all.size(), 0);
  std::vector<int32_t> todo, kept;
  for (size_t v = 0; v < kept_in_.size(); ++v)
    if (kept_from_[v] == loop) kept.push_back(int32_t(v));
  for (size_t v = 0; v < all.size(); ++v)
    if (plan_.loop_of[v] == loop && all[k_.values[v].src[0]]) todo.push_back(k_.values[v].src[0]);
  if (loop == plan_.reduce_loops)
    for (const kir::Store& st : k_.stores)
      if (kir::moves_along_j(k_.slots[st.slot]) && all[st.value]) todo.push_back(st.value);
  while (!todo.empty()) {
    int32_t v = todo.back();
    todo.pop_back();
    if (which[v] || vals_[v]) continue;
    if (kept_in_[v] >= 0 && kept_from_[v] < loop) { // stored by an earlier loop
      const int s = kept_in_[v];
      llvm::Type* mt = ops_.mem_type(k_.slots[s].dtype);
      vals_[v] = ops_.to_reg(annotate(b_.CreateLoad(mt, kept_address(s)), s), k_.slots[s].dtype);
      continue;
    }
    which[v] = 1;
    for (int32_t s : k_.values[v].src)
      if (s >= 0 && all[s]) todo.push_back(s);
  }
  lower_values(which);
  for (int32_t v : kept) {
    const int s = kept_in_[v];
    annotate(b_.CreateStore(ops_.to_mem(vals_[v], k_.slots[s].dtype), kept_address(s)), s);
  }
}

// ---- reductions --------------------------------------------------------------------------------

KernelLowering::Accumulator KernelLowering::make_accumulator(int v) {
  const kir::Value& x = k_.values[v];
  Accumulator a{v, x.dtype, nullptr, nullptr};
  if (x.dtype == kFloat32 && (x.op == Op::ReduceSum || x.op == Op::ReduceProd)) a.acc = kFloat64;
  a.ty = ops_.reg_type(a.acc);
  if (is_floating_point(a.acc)) {
    double init = x.op == Op::ReduceSum    ? 0.0
                  : x.op == Op::ReduceProd ? 1.0
                  : x.op == Op::ReduceMax  ? -HUGE_VAL
                                           : HUGE_VAL;
    a.init = llvm::ConstantFP::get(a.ty, init);
  } else {
    unsigned bits = a.ty->getIntegerBitWidth();
    bool uns = a.acc == kBool || a.acc == kUInt8;
    llvm::APInt init(bits, 0);
    switch (x.op) {
    case Op::ReduceSum:
      break;
    case Op::ReduceProd:
      init = llvm::APInt(bits, 1);
      break;
    case Op::ReduceMax:
      init = uns ? llvm::APInt::getMinValue(bits) : llvm::APInt::getSignedMinValue(bits);
      break;
    default:
      init = uns ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getSignedMaxValue(bits);
    }
    a.init = llvm::ConstantInt::get(a.ty, init);
  }
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
  auto body = [&] {
    loop_values(plan_.reduce_loops);
    store_outputs(/*rows=*/true);
  };
  if (stream_ < 0) {
    row_loop("row", body);
  } else { // the row's elements before its first 64-byte boundary through the cache
    llvm::Value* row = b_.CreateInBoundsGEP(ops_.mem_type(k_.slots[stream_].dtype),
                                            slots_[stream_].ptr, element_index(stream_));
    llvm::Value* head = align_stream_row(row, arg(kR));
    row_loop("row.head", body, nullptr, head, /*cached=*/true);
    row_loop("row", body, head, b_.CreateSub(arg(kR), head), /*cached=*/false);
  }
  keep_row_ = nullptr;
}

// A plain loop over j in [0, r) from the current block of the element loop, with `body` lowering
// what it computes; the values per i are visible inside, the loop's own values not after it.
void KernelLowering::row_loop(const char* name, const std::function<void()>& body,
                              llvm::Value* first, llvm::Value* count, bool cached) {
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
  j_ = first ? b_.CreateAdd(first, j, "", /*HasNUW=*/true, /*HasNSW=*/true) : j;
  stream_k_ = cached ? nullptr : j;
  ops_.err = err_in;
  body();
  stream_k_ = nullptr;
  llvm::Value* j_next = b_.CreateAdd(j, b_.getInt64(1), "j.next", true, true);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  auto* br = b_.CreateCondBr(b_.CreateICmpEQ(j_next, r), after, loop);
  if (count && cached) head_loop(br);
  llvm::Value* err_loop = ops_.err;
  j->addIncoming(b_.getInt64(0), outer);
  j->addIncoming(j_next, latch);
  err_in->addIncoming(err_outer, outer);
  err_in->addIncoming(err_loop, latch);

  b_.SetInsertPoint(after);
  j_ = nullptr;
  vals_ = outer_vals;
  if (err_loop == err_in) { // nothing divides integers inside: the flag is unchanged
    err_in->replaceAllUsesWith(err_outer);
    err_in->eraseFromParent();
    ops_.err = err_outer;
    return;
  }
  auto* err_after = b_.CreatePHI(err_ty(), 2, "err.row.after");
  err_after->addIncoming(err_outer, outer);
  err_after->addIncoming(err_loop, latch);
  ops_.err = err_after;
}

// The tiled nest (see the class comment), from the end of the preheader. The accumulators of a
// tile and the error flag live in stack slots, which SROA turns back into registers where it can.
// Returns the error flag at `done`, or nullptr when nothing divides integers.
llvm::Value* KernelLowering::tiled_loops(llvm::BasicBlock* done) {
  auto* i64 = b_.getInt64Ty();
  llvm::Value* n = arg(kN);
  llvm::Value* r = arg(kR);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::IRBuilder<> allocas(&f_->getEntryBlock(), f_->getEntryBlock().begin());
  llvm::AllocaInst* err_slot = allocas.CreateAlloca(err_ty(), nullptr, "err.slot");
  // Per Reduce value: its accumulator, and whether its sum goes block-wise through `partial`
  // (floating sums, see kTileSumBlock).
  std::vector<Accumulator> accs;
  std::vector<char> blocked;
  int64_t block_len = kTileSumBlock;
  for (size_t v = 0; v < k_.values.size(); ++v)
    if (ir::is_reduce(k_.values[v].op)) {
      accs.push_back(make_accumulator(int(v)));
      const Accumulator& a = accs.back();
      blocked.push_back(k_.values[v].op == Op::ReduceSum && is_floating_point(a.acc) &&
                        (a.acc == k_.values[v].dtype || a.part != a.acc));
      if (a.part != a.acc) block_len = kNarrowTileBlock;
    }
  bool any_blocked = std::find(blocked.begin(), blocked.end(), 1) != blocked.end();
  const llvm::DataLayout& layout = m_.getDataLayout();
  int64_t bytes = 0; // per output of the tile
  for (size_t a = 0; a < accs.size(); ++a)
    bytes += int64_t(layout.getTypeAllocSize(accs[a].ty)) +
             (blocked[a] ? int64_t(layout.getTypeAllocSize(accs[a].part_ty)) : 0);
  int64_t tile_size = kMaxTile;
  while (tile_size > kMinTile && tile_size * bytes > kTileBytes)
    tile_size /= 2;
  // total[a]: the accumulator; partial[a]: the current block's sum (blocked ones only).
  std::vector<llvm::AllocaInst*> total(accs.size(), nullptr), partial(accs.size(), nullptr);
  auto array = [&](llvm::Type* ty, const char* name) {
    auto* x = allocas.CreateAlloca(llvm::ArrayType::get(ty, tile_size), nullptr, name);
    x->setAlignment(llvm::Align(64)); // whole cache lines for the vector accesses
    return x;
  };
  for (size_t a = 0; a < accs.size(); ++a) {
    total[a] = array(accs[a].ty, "acc");
    if (blocked[a]) partial[a] = array(accs[a].part_ty, "acc.block");
  }
  auto at = [&](llvm::AllocaInst* x, llvm::Value* ii) {
    return b_.CreateInBoundsGEP(x->getAllocatedType(), x, {b_.getInt64(0), ii});
  };
  auto into = [&](size_t a) { return blocked[a] ? partial[a] : total[a]; }; // what j adds to
  auto block = [&](const char* name) { return llvm::BasicBlock::Create(ctx_, name, f_, done); };
  auto* tile = block("tile");
  auto* init = block("tile.init");
  auto* rcheck = block("tile.rcheck");
  auto* jblock = block("tile.jblock");
  auto* jloop = block("tile.j");
  auto* body = block("tile.body");
  auto* jlatch = block("tile.j.end");
  auto* fold = any_blocked ? block("tile.fold") : nullptr;
  auto* jblock_end = block("tile.jblock.end");
  auto* post_pre = block("tile.after.pre");
  auto* post = block("tile.after");
  auto* tile_end = block("tile.end");
  b_.CreateStore(no_err(), err_slot);
  b_.CreateBr(tile);
  bool divides = false;
  // A loop over ii in [0, t) at `bb`, entered from `from`, with `emit` as its body.
  auto tile_loop = [&](llvm::BasicBlock* bb, llvm::BasicBlock* from, llvm::Value* t,
                       llvm::BasicBlock* exit, auto&& emit) {
    b_.SetInsertPoint(bb);
    auto* ii = b_.CreatePHI(i64, 2, "ii");
    emit(ii);
    llvm::Value* next = b_.CreateAdd(ii, b_.getInt64(1), "ii.next", true, true);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    auto* br = b_.CreateCondBr(b_.CreateICmpEQ(next, t), exit, bb);
    if (bb == body || bb == fold) interleave_once(br);
    ii->addIncoming(b_.getInt64(0), from);
    ii->addIncoming(next, latch);
  };
  auto with_err = [&](auto&& emit) { // ops_.err from and back to its stack slot
    llvm::Value* before = b_.CreateLoad(err_ty(), err_slot);
    ops_.err = before;
    emit();
    if (ops_.err != before) {
      b_.CreateStore(ops_.err, err_slot);
      divides = true;
    }
  };

  // tile: i0 and the tile's size t.
  b_.SetInsertPoint(tile);
  auto* i0 = b_.CreatePHI(i64, 2, "i0");
  llvm::Value* t =
      b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateSub(n, i0), b_.getInt64(tile_size));
  b_.CreateBr(init);
  tile_loop(init, tile, t, rcheck, [&](llvm::Value* ii) {
    for (size_t a = 0; a < accs.size(); ++a) {
      b_.CreateStore(accs[a].init, at(total[a], ii));
      if (blocked[a]) b_.CreateStore(accs[a].part_init, at(partial[a], ii));
    }
  });
  b_.SetInsertPoint(rcheck);
  b_.CreateCondBr(b_.CreateICmpSGT(r, b_.getInt64(0)), jblock, post_pre);

  // for each block [jb, jend) of [0, r) (one block unless a sum is blocked):
  b_.SetInsertPoint(jblock);
  auto* jb = b_.CreatePHI(i64, 2, "jb");
  llvm::Value* jend =
      any_blocked
          ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                     b_.CreateAdd(jb, b_.getInt64(block_len), "", true, true), r)
          : r;
  b_.CreateBr(jloop);

  //   for j in the block: the values that do not depend on i, then for ii: accumulate, in the
  //   order of j for every output.
  b_.SetInsertPoint(jloop);
  auto* j = b_.CreatePHI(i64, 2, "j");
  std::vector<llvm::Value*> per_j(k_.values.size(), nullptr);
  i_ = nullptr; // per_j_ values never read it
  j_ = j;
  with_err([&] {
    vals_.assign(k_.values.size(), nullptr);
    lower_values(per_j_);
    per_j = vals_;
  });
  b_.CreateBr(body);
  tile_loop(body, jloop, t, jlatch, [&](llvm::Value* ii) {
    i_ = b_.CreateAdd(i0, ii, "i");
    j_ = j;
    with_err([&] {
      vals_ = per_j;
      lower_values(in_loop_);
      for (size_t a = 0; a < accs.size(); ++a) {
        const kir::Value& v = k_.values[accs[a].value];
        const DType into_dt = blocked[a] ? accs[a].part : accs[a].acc;
        llvm::Value* x = ops_.cast(vals_[v.src[0]], k_.values[v.src[0]].dtype, into_dt);
        llvm::Value* p = at(into(a), ii);
        b_.CreateStore(accumulate(accs[a], b_.CreateLoad(ops_.reg_type(into_dt), p), x, false), p);
      }
    });
  });
  b_.SetInsertPoint(jlatch);
  llvm::Value* j_next = b_.CreateAdd(j, b_.getInt64(1), "j.next", true, true);
  no_unroll(b_.CreateCondBr(b_.CreateICmpEQ(j_next, jend), fold ? fold : jblock_end, jloop));
  j->addIncoming(jb, jblock);
  j->addIncoming(j_next, jlatch);

  //   fold the block's partial sums into the totals, in order, and restart them.
  if (fold)
    tile_loop(fold, jlatch, t, jblock_end, [&](llvm::Value* ii) {
      for (size_t a = 0; a < accs.size(); ++a) {
        if (!blocked[a]) continue;
        llvm::Value* p = at(partial[a], ii);
        llvm::Value* q = at(total[a], ii);
        llvm::Value* block_sum =
            ops_.cast(b_.CreateLoad(accs[a].part_ty, p), accs[a].part, accs[a].acc);
        b_.CreateStore(accumulate(accs[a], b_.CreateLoad(accs[a].ty, q), block_sum, false), q);
        b_.CreateStore(accs[a].part_init, p);
      }
    });
  b_.SetInsertPoint(jblock_end);
  no_unroll(b_.CreateCondBr(b_.CreateICmpEQ(jend, r), post_pre, jblock));
  jb->addIncoming(b_.getInt64(0), rcheck);
  jb->addIncoming(jend, jblock_end);

  // After the reduction, for each ii: the results, the values computed from them, the stores.
  b_.SetInsertPoint(post_pre);
  b_.CreateBr(post);
  tile_loop(post, post_pre, t, tile_end, [&](llvm::Value* ii) {
    i_ = b_.CreateAdd(i0, ii, "i");
    j_ = nullptr;
    vals_.assign(k_.values.size(), nullptr);
    for (size_t a = 0; a < accs.size(); ++a)
      vals_[accs[a].value] = ops_.cast(b_.CreateLoad(accs[a].ty, at(total[a], ii)), accs[a].acc,
                                       k_.values[accs[a].value].dtype);
    with_err([&] {
      lower_values(after_loop_);
      store_outputs(/*rows=*/false);
    });
  });
  b_.SetInsertPoint(tile_end);
  llvm::Value* i0_next = b_.CreateAdd(i0, b_.getInt64(tile_size), "i0.next", true, true);
  no_unroll(b_.CreateCondBr(b_.CreateICmpSLT(i0_next, n), tile, done));
  i0->addIncoming(b_.getInt64(0), pre);
  i0->addIncoming(i0_next, tile_end);
  if (!divides) return nullptr;
  b_.SetInsertPoint(done);
  return b_.CreateLoad(err_ty(), err_slot);
}

// ---- values ------------------------------------------------------------------------------------

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
  case ir::OpCategory::Movement:
  case ir::OpCategory::Scatter:
  case ir::OpCategory::Mutation:
  case ir::OpCategory::Call:
  case ir::OpCategory::Complex:
    break;
  }
  bad(idx, fmt::format("{} cannot be lowered", ir::name(v.op)));
}

} // namespace

llvm::Function* lower_kernel(const kir::Kernel& k, llvm::Module& m, const std::string& fname,
                             const LoweringTarget& target) {
  return KernelLowering(k, m, target).run(fname);
}

void mark_streaming_stores(llvm::Function& f) {
  const llvm::DataLayout& dl = f.getParent()->getDataLayout();
  auto streams = [](const llvm::StoreInst& st) {
    const llvm::MDNode* scopes = st.getMetadata(llvm::LLVMContext::MD_alias_scope);
    if (!scopes) return false;
    for (const llvm::MDOperand& op : scopes->operands()) {
      const auto* scope = llvm::dyn_cast<llvm::MDNode>(op);
      if (scope && scope->getNumOperands() > 2)
        if (const auto* name = llvm::dyn_cast<llvm::MDString>(scope->getOperand(2)))
          if (name->getString() == kStreamScope) return true;
    }
    return false;
  };
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& inst : bb) {
      auto* st = llvm::dyn_cast<llvm::StoreInst>(&inst);
      if (!st || !st->getValueOperand()->getType()->isVectorTy() || !streams(*st)) continue;
      // The scratch row on the stack that keeps a row's values is read back at once: cached.
      llvm::SmallVector<const llvm::Value*, 4> objects;
      llvm::getUnderlyingObjects(st->getPointerOperand(), objects);
      if (std::any_of(objects.begin(), objects.end(),
                      [](const llvm::Value* o) { return llvm::isa<llvm::AllocaInst>(o); }))
        continue;
      const uint64_t bytes = dl.getTypeStoreSize(st->getValueOperand()->getType());
      const llvm::Align known = llvm::getKnownAlignment(st->getPointerOperand(), dl, st);
      if (!llvm::isPowerOf2_64(bytes) || known.value() < bytes) continue;
      st->setAlignment(llvm::Align(bytes));
      st->setMetadata(
          llvm::LLVMContext::MD_nontemporal,
          llvm::MDNode::get(f.getContext(), llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(
                                                llvm::Type::getInt32Ty(f.getContext()), 1))));
    }
}

} // namespace tj::llvmjit::detail
