// LLVM lowering of the tiled nest: column reductions and products, tiled over outputs.
#include "codegen/llvm/kernel_lowering.h"

#include <algorithm>
#include <cmath>

namespace tj::llvmjit::detail {

// The error flag of a tiled nest, whose loops carry it in a stack slot: 0 from here on.
KernelLowering::TileErr KernelLowering::tile_err() {
  llvm::IRBuilder<> allocas(&f_->getEntryBlock(), f_->getEntryBlock().begin());
  TileErr e{allocas.CreateAlloca(err_ty(), nullptr, "err.slot")};
  b_.CreateStore(no_err(), e.slot);
  return e;
}

// Lowers `emit` with ops_.err read from the slot, and stores it back if emit changed it.
void KernelLowering::with_tile_err(TileErr& e, const std::function<void()>& emit) {
  llvm::Value* before = b_.CreateLoad(err_ty(), e.slot);
  ops_.err = before;
  emit();
  if (ops_.err != before) {
    b_.CreateStore(ops_.err, e.slot);
    e.divides = true;
  }
}

// The flag at `done`, where it leaves the builder; nullptr when nothing divides integers.
llvm::Value* KernelLowering::tile_err_at(const TileErr& e, llvm::BasicBlock* done) {
  if (!e.divides) return nullptr;
  b_.SetInsertPoint(done);
  return b_.CreateLoad(err_ty(), e.slot);
}

// A loop over ii in [0, count) at `bb`, entered from `from`, with `emit` as its body, then to
// `exit`; `interleave`: a loop the vectorizer widens, not interleaved (interleave_once).
void KernelLowering::tile_loop(llvm::BasicBlock* bb, llvm::BasicBlock* from, llvm::Value* count,
                               llvm::BasicBlock* exit, bool interleave,
                               const std::function<void(llvm::Value*)>& emit) {
  b_.SetInsertPoint(bb);
  auto* ii = b_.CreatePHI(b_.getInt64Ty(), 2, "ii");
  emit(ii);
  llvm::Value* next = b_.CreateAdd(ii, b_.getInt64(1), "ii.next", true, true);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  auto* br = b_.CreateCondBr(b_.CreateICmpEQ(next, count), exit, bb);
  if (interleave) interleave_once(br);
  ii->addIncoming(b_.getInt64(0), from);
  ii->addIncoming(next, latch);
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
  TileErr err = tile_err();
  b_.CreateBr(tile);
  auto tile_loop = [&](llvm::BasicBlock* bb, llvm::BasicBlock* from, llvm::Value* t,
                       llvm::BasicBlock* exit, const std::function<void(llvm::Value*)>& emit) {
    this->tile_loop(bb, from, t, exit, bb == body || bb == fold, emit);
  };
  auto with_err = [&](const std::function<void()>& emit) { with_tile_err(err, emit); };

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
  return tile_err_at(err, done);
}

// The tiled nest of a kernel that scans down memory running along i (the class comment), from
// the end of the preheader: for each tile of outputs, each scan's accumulation in a stack array;
// for j in order, for ii across the tile (the loop that vectorizes), the store loop's values at
// (i0 + ii, j), the scans carried from the array and put back, and the row stores. Then the
// stores once per i, if any. Returns the error flag at `done`, or nullptr when nothing divides
// integers.
llvm::Value* KernelLowering::scan_tiles(llvm::BasicBlock* done) {
  const size_t nv = k_.values.size();
  llvm::Value* n = arg(kN);
  llvm::Value* r = arg(kR);
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::IRBuilder<> allocas(&f_->getEntryBlock(), f_->getEntryBlock().begin());
  std::vector<int> scans;
  int64_t bytes = 0; // per output of the tile
  for (size_t v = 0; v < nv; ++v)
    if (ir::is_scan(k_.values[v].op)) {
      scans.push_back(int(v));
      bytes += int64_t(itemsize(k_.values[v].dtype));
    }
  int64_t tile_size = kMaxTile;
  while (tile_size > kMinTile && tile_size * bytes > kTileBytes)
    tile_size /= 2;
  std::vector<llvm::AllocaInst*> acc(nv, nullptr);
  for (int v : scans) {
    acc[v] = allocas.CreateAlloca(
        llvm::ArrayType::get(ops_.reg_type(k_.values[v].dtype), tile_size), nullptr, "scan.acc");
    acc[v]->setAlignment(llvm::Align(64));
  }
  auto at = [&](int v, llvm::Value* ii) {
    return b_.CreateInBoundsGEP(acc[v]->getAllocatedType(), acc[v], {b_.getInt64(0), ii});
  };
  auto block = [&](const char* name) { return llvm::BasicBlock::Create(ctx_, name, f_, done); };
  auto* tile = block("scan.tile");
  auto* init = block("scan.init");
  auto* rcheck = block("scan.rcheck");
  auto* jloop = block("scan.j");
  auto* body = block("scan.body");
  auto* jlatch = block("scan.j.end");
  auto* post_pre = block("scan.after.pre");
  auto* post = block("scan.after");
  auto* tile_end = block("scan.tile.end");
  TileErr err = tile_err();
  b_.CreateBr(tile);
  auto with_err = [&](const std::function<void()>& emit) { with_tile_err(err, emit); };

  b_.SetInsertPoint(tile);
  auto* i0 = b_.CreatePHI(b_.getInt64Ty(), 2, "i0");
  llvm::Value* t =
      b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateSub(n, i0), b_.getInt64(tile_size));
  b_.CreateBr(init);
  tile_loop(init, tile, t, rcheck, false, [&](llvm::Value* ii) {
    for (int v : scans)
      b_.CreateStore(scan_identity(v), at(v, ii));
  });
  b_.SetInsertPoint(rcheck);
  b_.CreateCondBr(b_.CreateICmpSGT(r, b_.getInt64(0)), jloop, post_pre);

  b_.SetInsertPoint(jloop);
  auto* j = b_.CreatePHI(b_.getInt64Ty(), 2, "j");
  b_.CreateBr(body);
  tile_loop(body, jloop, t, jlatch, true, [&](llvm::Value* ii) {
    i_ = b_.CreateAdd(i0, ii, "i");
    j_ = j;
    with_err([&] {
      vals_.assign(nv, nullptr);
      for (int v : scans)
        scan_acc_[v] = b_.CreateLoad(ops_.reg_type(k_.values[v].dtype), at(v, ii));
      lower_values(plan_.per_i[0]);
      lower_values(plan_.in_loop.back());
      for (int v : scans)
        if (vals_[v]) b_.CreateStore(vals_[v], at(v, ii)); // unless nothing reads it
      store_outputs(/*rows=*/true);
    });
  });
  b_.SetInsertPoint(jlatch);
  llvm::Value* j_next = b_.CreateAdd(j, b_.getInt64(1), "j.next", true, true);
  no_unroll(b_.CreateCondBr(b_.CreateICmpEQ(j_next, r), post_pre, jloop));
  j->addIncoming(b_.getInt64(0), rcheck);
  j->addIncoming(j_next, jlatch);
  scan_acc_.assign(nv, nullptr);

  b_.SetInsertPoint(post_pre);
  b_.CreateBr(post);
  tile_loop(post, post_pre, t, tile_end, false, [&](llvm::Value* ii) {
    i_ = b_.CreateAdd(i0, ii, "i");
    j_ = nullptr;
    with_err([&] {
      vals_.assign(nv, nullptr);
      lower_values(plan_.per_i[0]);
      store_outputs(/*rows=*/false);
    });
  });
  b_.SetInsertPoint(tile_end);
  llvm::Value* i0_next = b_.CreateAdd(i0, b_.getInt64(tile_size), "i0.next", true, true);
  no_unroll(b_.CreateCondBr(b_.CreateICmpSLT(i0_next, n), tile, done));
  i0->addIncoming(b_.getInt64(0), pre);
  i0->addIncoming(i0_next, tile_end);
  return tile_err_at(err, done);
}

} // namespace tj::llvmjit::detail
