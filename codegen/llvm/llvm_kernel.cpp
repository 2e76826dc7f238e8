// LLVM lowering of a kernel's structure: the element loop, rows (pipelined, streamed), slots,
// stores, scatters, the error flag; and the entry points of llvm_kernel.h.
#include "codegen/llvm/kernel_lowering.h"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/Transforms/Utils/Local.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <algorithm>
#include <cmath>

namespace tj::llvmjit::detail {

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
  if (scan_tiled_) {
    err = scan_tiles(done);
    b_.SetInsertPoint(done);
  } else if (!tiled_) {
    err = element_loop(done);
    b_.SetInsertPoint(done); // its non-temporal stores are fenced by its caller (stores_visible)
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
  if (scan_grouped_) return scan_row_groups(done);
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
  if (plan_.store_loop) scan_blocked_ ? scan_blocks({i_, vals_}, 1, nullptr) : store_loop();
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
  llvm::Value* err = loop_err(err_in, no_err(), pre, ops_.err, latch); // an OR over the loop
  return err == no_err() ? nullptr : err;
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
  ops_.err = loop_err(err_in, no_err(), pre, ops_.err, latch);

  // The last row's stores (vals_, i_ and keep_row_ are still the last row's).
  b_.SetInsertPoint(last);
  store_loop();
  b_.CreateBr(exit);
  llvm::Value* err = ops_.err;
  return err == no_err() ? nullptr : err;
}

// The rows of a kernel that scans along j (and reduces nothing), scan_group_ at a time: rows of
// at least kScanGroupMinRow in blocks (scan_blocks), shorter ones in one loop over j with scalar
// chains side by side (rows_in_step: per block, each row's loops cost more than a short row's
// work); the rows left over one at a time in the plain loop. Each row's scans run in order, as
// in the plain loop, so sums and products are the same bits every way (and math calls go through
// one routine whatever their width: call_widest_variants). Where the row's values call the math
// library, the blocks' last group of a call holds the rows left instead: a step of the vector
// functions costs no less for one row than for a group. Returns the error flag at `exit`, or
// nullptr when nothing divides integers.
llvm::Value* KernelLowering::scan_row_groups(llvm::BasicBlock* exit) {
  llvm::Value* n = arg(kN);
  llvm::Value* grouped = b_.CreateAnd(n, b_.getInt64(~(scan_group_ - 1)), "grouped");
  llvm::Value* long_rows = b_.CreateICmpSGE(arg(kR), b_.getInt64(kScanGroupMinRow));
  auto groups = [&](llvm::Value* count, bool blocked) {
    return
        [this, count, blocked](llvm::BasicBlock* e) { return row_group_loop(e, count, blocked); };
  };
  auto rest = [&](llvm::BasicBlock* e) {
    return counted_loop(e, b_.CreateSub(n, grouped), grouped, true);
  };
  // Without math library calls along the row, the rows left over take the scalar loop, cheaper
  // than a group for one row (a cumsum of one long row: 8.1-8.5 ms, against 11.6-15.5 as a group
  // of one).
  if (!scan_math_)
    return in_two_parts(
        grouped, n, "groups",
        [&](llvm::BasicBlock* e) {
          return either(long_rows, "blocked", groups(grouped, true), "stepped",
                        groups(grouped, false), e);
        },
        "rest", rest, exit);
  return either(
      long_rows, "blocked", groups(n, true), "stepped",
      [&](llvm::BasicBlock* e) {
        return in_two_parts(grouped, n, "groups", groups(grouped, false), "rest", rest, e);
      },
      exit);
}

// Loops over [0, split) and then [split, n), each skipped where empty, lowered by `first` and
// `rest` into blocks named after them. Returns the error flag at `done` (both loops' bits), or
// nullptr when neither divides integers; leaves the builder there.
llvm::Value* KernelLowering::in_two_parts(llvm::Value* split, llvm::Value* n,
                                          const char* first_name, const Loops& first,
                                          const char* rest_name, const Loops& rest,
                                          llvm::BasicBlock* done) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto block = [&](const char* name) { return llvm::BasicBlock::Create(ctx_, name, f_, done); };
  auto* first_bb = block(first_name);
  auto* first_exit = block(fmt::format("{}.exit", first_name).c_str());
  auto* mid = block("mid");
  auto* rest_bb = block(rest_name);
  auto* rest_exit = block(fmt::format("{}.exit", rest_name).c_str());
  b_.CreateCondBr(b_.CreateICmpNE(split, b_.getInt64(0)), first_bb, mid);
  b_.SetInsertPoint(first_bb);
  llvm::Value* first_err = first(first_exit);
  b_.SetInsertPoint(first_exit);
  b_.CreateBr(mid);

  b_.SetInsertPoint(mid);
  llvm::PHINode* mid_err = nullptr;
  if (first_err) {
    mid_err = b_.CreatePHI(err_ty(), 2, "err.first");
    mid_err->addIncoming(no_err(), pre);
    mid_err->addIncoming(first_err, first_exit);
  }
  b_.CreateCondBr(b_.CreateICmpNE(split, n), rest_bb, done);
  b_.SetInsertPoint(rest_bb);
  llvm::Value* rest_err = rest(rest_exit);
  b_.SetInsertPoint(rest_exit);
  if (mid_err && rest_err) rest_err = b_.CreateOr(mid_err, rest_err);
  b_.CreateBr(done);

  b_.SetInsertPoint(done);
  if (!mid_err && !rest_err) return nullptr;
  auto* err = b_.CreatePHI(err_ty(), 2, "err.any");
  err->addIncoming(mid_err ? static_cast<llvm::Value*>(mid_err) : no_err(), mid);
  err->addIncoming(rest_err ? rest_err : mid_err, rest_exit);
  return err;
}

// for each group of scan_group_ rows in [0, count) (count > 0; a multiple of the group unless
// `blocked`, whose last group holds the rows left): the group's store loops (scan_blocks, with
// the rows as the lanes of the scans' vectors, where `blocked`; else rows_in_step), then the
// stores per row. Returns the error flag at `exit`, or nullptr when nothing divides integers.
llvm::Value* KernelLowering::row_group_loop(llvm::BasicBlock* exit, llvm::Value* count,
                                            bool blocked) {
  auto* i64 = b_.getInt64Ty();
  const size_t nv = k_.values.size();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, "group", f_, exit);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  auto* k = b_.CreatePHI(i64, 2, "k");
  auto* err_in = b_.CreatePHI(err_ty(), 2, "err.acc");
  ops_.err = err_in;
  llvm::Value* next = b_.CreateAdd(k, b_.getInt64(scan_group_), "k.next", true, true);
  if (blocked) {
    llvm::Value* rows = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateSub(count, k),
                                                 b_.getInt64(scan_group_), nullptr, "rows");
    i_ = k;
    vals_.assign(nv, nullptr);
    lower_values(plan_.per_i[0]);
    scan_blocks({k, vals_}, scan_group_, rows);
    group_rows("group.stores", k, rows, [&](llvm::Value*) { store_outputs(/*rows=*/false); });
  } else {
    std::vector<ScanRow> rows(static_cast<size_t>(scan_group_));
    for (size_t g = 0; g < rows.size(); ++g) {
      rows[g].i = i_ = b_.CreateAdd(k, b_.getInt64(int64_t(g)), "i", true, true);
      vals_.assign(nv, nullptr);
      lower_values(plan_.per_i[0]);
      rows[g].vals = vals_;
    }
    rows_in_step(rows);
    for (const ScanRow& row : rows) {
      i_ = row.i;
      vals_ = row.vals;
      store_outputs(/*rows=*/false);
    }
  }
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  no_unroll(b_.CreateCondBr(b_.CreateICmpSGE(next, count), exit, loop));
  k->addIncoming(b_.getInt64(0), pre);
  k->addIncoming(next, latch);
  llvm::Value* err = loop_err(err_in, no_err(), pre, ops_.err, latch);
  return err == no_err() ? nullptr : err;
}

// `body` for each of the `count` rows from `first` (count > 0), with i_ and vals_ the row's
// and its index in the group: a loop, whose values per i it computes again, so that the kernel
// holds one copy of what the body lowers. Kernels without reduction loops only (the values per
// i are all of plan_.per_i[0]); leaves i_ and vals_ as it found them, which the caller lowered
// before the loop, so they stay valid after it.
void KernelLowering::group_rows(const char* name, llvm::Value* first, llvm::Value* count,
                                const std::function<void(llvm::Value*)>& body) {
  auto* i64 = b_.getInt64Ty();
  const size_t nv = k_.values.size();
  llvm::Value* const caller_i = i_;
  std::vector<llvm::Value*> caller_vals = vals_;
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, name, f_, done_);
  auto* after = llvm::BasicBlock::Create(ctx_, fmt::format("{}.after", name), f_, done_);
  llvm::Value* err_outer = ops_.err;
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  auto* g = b_.CreatePHI(i64, 2, "g");
  auto* err_in = b_.CreatePHI(err_ty(), 2, "err.rows");
  ops_.err = err_in;
  i_ = b_.CreateAdd(first, g, "i", true, true);
  vals_.assign(nv, nullptr);
  lower_values(plan_.per_i[0]);
  body(g);
  llvm::Value* g_next = b_.CreateAdd(g, b_.getInt64(1), "g.next", true, true);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  no_unroll(b_.CreateCondBr(b_.CreateICmpSGE(g_next, count), after, loop));
  g->addIncoming(b_.getInt64(0), pre);
  g->addIncoming(g_next, latch);
  b_.SetInsertPoint(after);
  ops_.err = loop_err(err_in, err_outer, pre, ops_.err, latch);
  i_ = caller_i;
  vals_ = std::move(caller_vals);
}

// The store loop of `rows` as one loop over j computing every row's elements and stores in each
// step, with a scalar scan accumulation per row and scan: the group's chains are independent, so
// the core overlaps them. From the current block; leaves the builder after the loop.
void KernelLowering::rows_in_step(const std::vector<ScanRow>& rows) {
  auto* i64 = b_.getInt64Ty();
  const size_t nv = k_.values.size(), G = rows.size();
  llvm::BasicBlock* jpre = b_.GetInsertBlock();
  auto* jloop = llvm::BasicBlock::Create(ctx_, "group.row", f_, done_);
  auto* jafter = llvm::BasicBlock::Create(ctx_, "group.row.after", f_, done_);
  llvm::Value* err_outer = ops_.err;
  b_.CreateCondBr(b_.CreateICmpSGT(arg(kR), b_.getInt64(0)), jloop, jafter);
  b_.SetInsertPoint(jloop);
  auto* j = b_.CreatePHI(i64, 2, "j");
  auto* err_j = b_.CreatePHI(err_ty(), 2, "err.row");
  std::vector<std::vector<llvm::PHINode*>> acc(G, std::vector<llvm::PHINode*>(nv, nullptr));
  for (size_t g = 0; g < G; ++g)
    for (size_t v = 0; v < nv; ++v)
      if (ir::is_scan(k_.values[v].op) && plan_.in_loop.back()[v])
        acc[g][v] = b_.CreatePHI(ops_.reg_type(k_.values[v].dtype), 2, "scan");
  j_ = j;
  ops_.err = err_j;
  std::vector<std::vector<llvm::Value*>> acc_next(G, std::vector<llvm::Value*>(nv, nullptr));
  for (size_t g = 0; g < G; ++g) {
    i_ = rows[g].i;
    vals_ = rows[g].vals;
    scan_acc_.assign(acc[g].begin(), acc[g].end());
    loop_values(plan_.reduce_loops);
    store_outputs(/*rows=*/true);
    for (size_t v = 0; v < nv; ++v)
      if (acc[g][v]) acc_next[g][v] = vals_[v] ? vals_[v] : acc[g][v];
  }
  llvm::Value* j_next = b_.CreateAdd(j, b_.getInt64(1), "j.next", true, true);
  llvm::BasicBlock* jlatch = b_.GetInsertBlock();
  no_unroll(b_.CreateCondBr(b_.CreateICmpEQ(j_next, arg(kR)), jafter, jloop));
  j->addIncoming(b_.getInt64(0), jpre);
  j->addIncoming(j_next, jlatch);
  for (size_t g = 0; g < G; ++g)
    for (size_t v = 0; v < nv; ++v)
      if (acc[g][v]) {
        acc[g][v]->addIncoming(scan_identity(int(v)), jpre);
        acc[g][v]->addIncoming(acc_next[g][v], jlatch);
      }
  llvm::Value* err_loop = ops_.err;
  j_ = nullptr;
  scan_acc_.assign(nv, nullptr);
  b_.SetInsertPoint(jafter);
  loop_err_after(err_j, err_outer, jpre, err_loop, jlatch, "err.row.after");
  i_ = rows[0].i;
  vals_ = rows[0].vals;
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
// elements before that output's first 64-byte boundary go through the cache, the whole lines
// after it through a loop whose stores to it are aligned, so that the vector stores can be
// non-temporal ones (mark_streaming_stores), and the elements past the last whole line through
// the cache again. A line is written all one way or all the other: where a call's last line is
// the next call's first (rows that follow on in memory), half written around the cache and half
// through it, every row paid for a partial write of the line to memory and a read of it
// (gathered rows of 264 floats: 13.6-14.1 ms so, 11.8-12.9 ms not). Where the output is not
// aligned to its element size, every element goes through the cache.
llvm::Value* KernelLowering::streaming_loops(llvm::BasicBlock* done) {
  llvm::Value* n = arg(kN);
  llvm::Value* peel = align_stream_row(slots_[stream_].row, n);
  llvm::Value* after = b_.CreateSub(n, peel, "after.head", true, true);
  const int64_t per_line = 64 / int64_t(itemsize(k_.slots[stream_].dtype));
  llvm::Value* lines = b_.CreateAnd(after, b_.getInt64(-per_line), "lines");
  llvm::Value* tail_at = b_.CreateAdd(peel, lines, "tail.at", true, true);
  auto lines_then_tail = [&](llvm::BasicBlock* e) {
    return in_two_parts(
        lines, after, "stream",
        [&](llvm::BasicBlock* x) { return counted_loop(x, lines, peel, false); }, "tail",
        [&](llvm::BasicBlock* x) {
          return counted_loop(x, b_.CreateSub(n, tail_at), tail_at, true);
        },
        e);
  };
  return in_two_parts(
      peel, n, "head", [&](llvm::BasicBlock* e) { return counted_loop(e, peel, nullptr, true); },
      "rest", lines_then_tail, done);
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
  scan_acc_.assign(nv, nullptr);
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
  // A scan runs its row in order, from its first element: not split over two rows' loops.
  pipelined_ &= !k_.has_scan();
  // A scan whose memory runs along i and not along j (a cumsum down columns) is tiled over i.
  if (k_.has_scan() && plan_.reduce_loops == 0) {
    bool along_j = false, along_i = false;
    for (size_t v = 0; v < nv; ++v) {
      const Op op = k_.values[v].op;
      if (!plan_.in_loop.back()[v] || (op != Op::Buffer && op != Op::Gather)) continue;
      const Slot& slot = k_.slots[k_.values[v].slot];
      along_j |= slot.rstride == StrideKind::Contiguous && slot.stride != StrideKind::Broadcast;
      along_i |= slot.stride == StrideKind::Contiguous;
    }
    for (const kir::Store& st : k_.stores) {
      const Slot& slot = k_.slots[st.slot];
      along_j |= slot.rstride == StrideKind::Contiguous;
      along_i |= slot.stride == StrideKind::Contiguous;
    }
    scan_tiled_ = along_i && !along_j;
  }
  // Along rows: in vectors where the scans allow it, else rows side by side (only with no
  // reduction loops before the store loop: their nest is per row).
  scan_blocked_ = k_.has_scan() && !scan_tiled_ && scans_vectorize();
  scan_grouped_ = k_.has_scan() && plan_.reduce_loops == 0 && !scan_tiled_ && !scan_blocked_;
  // Not bool scans: a vector of i1 in memory packs its lanes into bits, which the stack buffers
  // of scan_blocks do not.
  for (size_t v = 0; v < nv; ++v)
    if (ir::is_scan(k_.values[v].op) && plan_.in_loop.back()[v]) {
      scan_grouped_ &= ops_.reg_type(k_.values[v].dtype)->getScalarSizeInBits() >= 8;
      if (ir::combine_op(k_.values[v].op) == Op::LogAddExp) scan_group_ = kScanRowGroupMath;
    }
  for (size_t v = 0; scan_grouped_ && v < nv; ++v) {
    const Op op = k_.values[v].op;
    const Op math = ir::is_scan(op) ? ir::combine_op(op) : op;
    scan_math_ |= plan_.in_loop.back()[v] && (ir::libm_name(math) || math == Op::LogAddExp);
  }
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
// With `roots`, only what those values need (and nothing kept is stored).
void KernelLowering::loop_values(int loop, const std::vector<int32_t>* roots) {
  const std::vector<char>& all = plan_.in_loop[size_t(loop)];
  std::vector<char> which(all.size(), 0);
  std::vector<int32_t> todo, kept;
  if (roots) {
    todo = *roots;
  } else {
    for (size_t v = 0; v < kept_in_.size(); ++v)
      if (kept_from_[v] == loop) kept.push_back(int32_t(v));
    for (size_t v = 0; v < all.size(); ++v)
      if (plan_.loop_of[v] == loop && all[k_.values[v].src[0]]) todo.push_back(k_.values[v].src[0]);
    if (loop == plan_.reduce_loops)
      for (const kir::Store& st : k_.stores)
        if (kir::moves_along_j(k_.slots[st.slot]) && all[st.value]) todo.push_back(st.value);
  }
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
