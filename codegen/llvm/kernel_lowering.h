// Private to codegen/llvm: the class that lowers one kir::Kernel to an LLVM function, shared by
// the files that define its parts: llvm_kernel.cpp (the loop structure: element loop, rows,
// streaming stores, slots, stores), llvm_kernel_reduce.cpp (reduction loops and accumulators),
// llvm_kernel_tiled.cpp (the tiled nest of column reductions) and llvm_kernel_values.cpp (values,
// addresses and operands).
#pragma once
#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>

#include <functional>
#include <string>
#include <vector>

#include "codegen/kernel_ir.h"
#include "codegen/llvm/llvm_kernel.h"
#include "codegen/llvm/llvm_math.h"

namespace tj::llvmjit::detail {

// The name of the alias scope of a slot written around the cache: how mark_streaming_stores
// finds its stores once the vectorizer has widened them (it keeps their alias scopes).
inline constexpr const char* kStreamScope = "stream";

// The longest row whose values kept for later loops go to a scratch row on the stack when the
// row output is written around the cache (at most 32 KiB: kernels run on the caller's stack). The
// scheduler streams no longer row; one would keep them in the output row, correct but slow.
inline constexpr int64_t kKeepScratch = kir::kMaxStreamRow;

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
inline constexpr int64_t kReduceBlock = 2048;
inline constexpr int64_t kNarrowReduceBlock = 256;
// The tiled nest (column reductions, matmul): the accumulators of a tile of outputs take at most
// kTileBytes of stack (L1-resident), and a tile is as wide as that allows, up to kMaxTile
// outputs, so that a matmul reads its right operand in long contiguous runs (a whole row of 1024
// floats per j). Measured on Zen 5 for 1024^3 float32: tiles of 1024-2048 are 1.5x faster than
// 256; the loop is bound by the L3 bandwidth, so accumulators in registers gain nothing.
inline constexpr int64_t kTileBytes = 16384;
inline constexpr int64_t kMaxTile = 2048, kMinTile = 64;
// Calls with fewer outputs than this take the element loop instead of the tiled nest when the
// reduction also reads memory contiguous along j (matmul): its dot products then vectorize along
// j, while a tile of a few outputs runs the scalar remainder of its loop. Measured crossover for
// 1024 x 1024 x n matmuls: n = 8 (n = 2: 1.3 ms as dot products, 3.6 ms tiled).
inline constexpr int64_t kMinTiledN = 8;
// j per block of a tiled floating sum: each block is summed on its own and then added to the
// total, so a float64 output's error grows like kTileSumBlock + r / kTileSumBlock terms rather
// than a chain of r, as with the blocks of the row path. A float32 sum adds blocks of
// kNarrowTileBlock terms in float32 and their sums in float64, as the row path's lanes do.
inline constexpr int64_t kTileSumBlock = 64;
inline constexpr int64_t kNarrowTileBlock = 16;
// Rows a scan along j runs side by side (scan_row_groups), in blocks of kScanGroupBlock elements
// of each (scan_blocks). Each row's scan is a chain of dependent operations that keeps its order;
// the group's rows are the lanes of a vector, so a step combines a column of the group. Cumsum
// over rows of 8192 x 1024 float32 (float64 sums), one Zen 4 thread: 4.5 ms; 8 rows (two chains)
// 4.6, 16 rows 5.4; blocks of 128 the same, of 256 5.0 (the group's buffers crowd the L1).
inline constexpr int64_t kScanRowGroup = 4;
inline constexpr int64_t kScanGroupBlock = 64;
// Shorter rows run the group in one loop over j, scalar chains side by side (rows_in_step): per
// block, each row's loops cost more than a short row's work. float32 cumsum over 2^23 elements,
// one Zen 4 thread, in blocks / in one loop: rows of 3 41 / 6-11 ms, 24 17-19 / 4.4-7, 32 4.8 /
// 4.3, 64 4.3 / 4.6, 128 6.2 / 11.4, 1024 5.0-6.3 / 6.1-9.4 (least of three runs each).
inline constexpr int64_t kScanGroupMinRow = 64;
// The group of a scan whose combination calls vector math (logcumsumexp's exp and log1p, a chain
// of some 50 cycles a step): a full vector of float32 rows. 4096 x 256 float32, one Zen 4 thread:
// 4.9 ms, against 10.7 for 4 rows and 11.0 for 4 scalar chains; 16 rows (two vectors) 5.1.
inline constexpr int64_t kScanRowGroupMath = 8;
// A store loop whose scans can run in vector registers (scan_blocks) goes through its row in
// blocks of this many elements: a loop computing what the scans accumulate into a stack buffer,
// the scans over it a vector at a time, and a loop computing and storing the row from them.
inline constexpr int64_t kScanBlock = 256;
// The vectors those scans run in: 256 bits. On Zen 4, 512-bit ones made the scan loop about 1.6x
// slower (cumsum over rows of 8192 x 1024 float32, one thread: 8.0 ms, against 4.8-4.9).
inline constexpr int64_t kScanVectorBytes = 32;

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
// A kernel that scans along j where its memory runs along i (a cumsum down columns) is tiled
// the same way (scan_tiles), with the store loop's work for each (j, i) and the scans carried
// from j - 1 in the tile's stack arrays.
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
  void loop_values(int loop, const std::vector<int32_t>* roots = nullptr);
  llvm::Value* element_loop(llvm::BasicBlock* done);
  llvm::Value* pipelined_rows(llvm::BasicBlock* exit);
  llvm::Value* scan_row_groups(llvm::BasicBlock* exit);
  llvm::Value* row_group_loop(llvm::BasicBlock* exit, llvm::Value* count, bool blocked);
  using Loops = std::function<llvm::Value*(llvm::BasicBlock* exit)>;
  llvm::Value* either(llvm::Value* cond, const char* yes_name, const Loops& yes,
                      const char* no_name, const Loops& no, llvm::BasicBlock* done);
  llvm::Value* in_two_parts(llvm::Value* split, llvm::Value* n, const char* first_name,
                            const Loops& first, const char* rest_name, const Loops& rest,
                            llvm::BasicBlock* done);
  llvm::Value* counted_loop(llvm::BasicBlock* exit, llvm::Value* count, llvm::Value* first,
                            bool cached);
  llvm::Value* streaming_loops(llvm::BasicBlock* done);
  llvm::Value* tiled_loops(llvm::BasicBlock* done);
  llvm::Value* scan_tiles(llvm::BasicBlock* done);
  struct TileErr {
    llvm::AllocaInst* slot = nullptr;
    bool divides = false; // whether a loop stored to it
  };
  TileErr tile_err();
  void with_tile_err(TileErr& e, const std::function<void()>& emit);
  llvm::Value* tile_err_at(const TileErr& e, llvm::BasicBlock* done);
  void tile_loop(llvm::BasicBlock* bb, llvm::BasicBlock* from, llvm::Value* count,
                 llvm::BasicBlock* exit, bool interleave,
                 const std::function<void(llvm::Value*)>& emit);
  void store_outputs(bool rows);
  void scatter(const kir::Store& st);
  void reduction_loop(int loop);
  void store_loop();
  bool scans_vectorize() const;
  // A row the store loop runs: its index and its values per i.
  struct ScanRow {
    llvm::Value* i;
    std::vector<llvm::Value*> vals;
  };
  void scan_blocks(const ScanRow& first, int64_t group, llvm::Value* rows);
  void group_rows(const char* name, llvm::Value* first, llvm::Value* count,
                  const std::function<void(llvm::Value*)>& body);
  void rows_in_step(const std::vector<ScanRow>& rows);
  void transpose(std::vector<llvm::Value*>& rows);
  llvm::Value* concat(std::vector<llvm::Value*> parts);
  llvm::Value* stream_row();
  using Combine = std::function<llvm::Value*(llvm::Value*, llvm::Value*)>;
  llvm::Value* vector_scan(llvm::Value* x, llvm::Value* none, const Combine& combine);
  llvm::Value* identity(Op combine, DType t);
  llvm::Value* scan_identity(int v);
  // How a row loop writes the streaming slot (kir::Slot::stream), if the kernel has one: through
  // the cache, as the elements before its 64-byte boundary (a head: short, not vectorized), or
  // around the cache from that boundary on.
  enum class RowPart { Cached, Head, Streamed };
  llvm::Value* loop_err(llvm::PHINode* in, llvm::Value* outer, llvm::BasicBlock* pre,
                        llvm::Value* loop, llvm::BasicBlock* latch);
  void loop_err_after(llvm::PHINode* in, llvm::Value* outer, llvm::BasicBlock* pre,
                      llvm::Value* loop, llvm::BasicBlock* latch, const char* name);
  void row_loop(const char* name, const std::function<void()>& body, llvm::Value* first = nullptr,
                llvm::Value* count = nullptr, RowPart part = RowPart::Cached,
                bool interleave = true);
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
    no_vectorize(latch_branch);
  }
  void no_vectorize(llvm::Instruction* latch_branch) {
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
  bool scan_tiled_ = false;            // scans down memory that runs along i: scan_tiles
  bool scan_grouped_ = false;          // scans along rows, scan_group_ at a time: scan_row_groups
  int64_t scan_group_ = kScanRowGroup; // or kScanRowGroupMath
  bool scan_math_ = false; // the row's values call the math library: no rows left to the plain loop
  bool scan_blocked_ = false;         // scans along rows in vector registers: scan_blocks
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
  // The store loop's scans: each one's accumulation before the current j (null for other values).
  std::vector<llvm::Value*> scan_acc_;
  kir::LoopPlan plan_; // which values each context computes
  // The tiled nest's contexts: the reduction loop, after it, and the values of the reduction loop
  // independent of i.
  std::vector<char> in_loop_, after_loop_, per_j_;
  // Values kept for later loops (choose_kept): the row output slot holding each (-1: none), and
  // the reduction loop that writes it there.
  std::vector<int> kept_in_, kept_from_;
};

} // namespace tj::llvmjit::detail
