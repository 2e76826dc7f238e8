// The kernel IR: what the scheduler emits and every backend lowers.
//
// A kernel computes elements i = 0..n-1 of one row of its iteration space.
// Every slot is an array seen through an affine index: element i of slot k
// is at base[k] + i * stride[k] (elements, not bytes). The executor walks the
// outer dimensions and calls the kernel once per row (or part of a row), so a
// kernel knows nothing of sizes: the same code serves every shape.
//
// A kernel may also loop over j in [0, r) for each i, where element (i, j) of
// slot k is at base[k] + i * stride[k] + j * rstride[k]: a slot "moves along
// j" when its rstride is not Broadcast, and a value that reads such a slot
// (transitively, not through a Reduce) varies along j. Such values exist only
// inside the loops over j, of which each i runs, in order:
//  - reduction loops: a Reduce value accumulates its operand over j. It runs
//    in loop L when its operand uses the results of L reductions in a chain
//    (a variance's mean is loop 0, its sum of squares loop 1), and its result
//    is one value per i, usable after that loop (by later loops too);
//  - a store loop, when the kernel stores to slots that move along j: row
//    elements computed from the row and the reductions of it (a softmax's
//    exp(x - max) / sum in one kernel, reading the row once from memory).
//    It runs j in order: a Scan value there is, at j, the accumulation of
//    its operand over 0..j (a cumsum, and what is computed from it).
// Values that do not vary along j are computed once per i, as soon as the
// reductions they use are done; stores to slots that do not move along j
// happen once per i after the loops, and never of a value that varies.
//
// Compiled kernels have the C signature
//   void kernel(int64_t n, void* const* ptrs, const int64_t* base,
//               const int64_t* stride, const uint64_t* params, int32_t* err,
//               int64_t r, const int64_t* rstride);
// (a kernel that does not loop over j, see has_row_loops, ignores r and rstride).
// ptrs[k] is slot k's buffer (unused for Index slots); params[p] holds the
// bits of parameter p (floats: IEEE bits, float32 in the low half; integers
// sign-extended; bool 0/1). A kernel ORs error bits into *err: kErrDivideByZero
// when an integer division or remainder by zero happened, kErrIndex when a
// gather's or a scattering store's index was out of range; it leaves *err untouched otherwise.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/ir/op.h"
#include "tensorjit/dtype.h"

namespace tj::kir {

using ir::Op;

// Rows a store loop writes around the cache (Slot::stream) after reduction loops are at most this
// long: a backend may keep a row's values for later loops in scratch memory of this many elements.
// (A store loop alone, a scan's, keeps nothing: its rows may be longer.)
constexpr int64_t kMaxStreamRow = 4096;

constexpr int32_t kErrDivideByZero = 1;
constexpr int32_t kErrIndex = 2;

// What is known of a slot's stride when the kernel is compiled; the value of
// a Strided stride comes at run time. Pairs: 2 (a part of complex numbers,
// the other part between), so that a backend can vectorize it as such.
enum class StrideKind : uint8_t { Contiguous, Broadcast, Strided, Pairs };

struct Slot {
  enum class Role : uint8_t { Input, Output, Index };
  Role role;
  DType dtype; // element type of Input/Output; int64 for Index
  StrideKind stride;
  StrideKind rstride = StrideKind::Broadcast; // along the reduction loop
  // An output written around the cache (non-temporal stores where the backend has them): it is
  // larger than the cache, so caching it would only evict data and cost a read of each line
  // before it is written. Only an output that is not scattered and is contiguous along the
  // element loop of a kernel without row loops, or along j of a row that the store loop writes;
  // one per kernel.
  bool stream = false;
  // A slot whose every element lies one element after that of slot `next_to`: an earlier slot of
  // the same role and dtype, over the same memory, with the same strides, neither gathered nor
  // scattered (the imaginary parts of complex numbers next to their real parts). A backend may
  // address it from that slot: the LLVM one does, so that the loop vectorizer sees the two as
  // one interleaved access (a wide load and shuffles; a shuffle and a wide store). -1: none.
  int32_t next_to = -1;
};

// One SSA value of the kernel body. Operands refer to earlier values.
//   Buffer: load slot `slot`          Const: parameter `param`
//   Iota:   the index of slot `slot`  Philox: word `imm` at counter src[1]+src[0],
//                                             key src[2] (all int64 values)
//   Gather: slot `slot` at a data-dependent place: element (i, j) of the slot
//     plus src[0] * src[1] elements, where src[0] must lie in [0, src[2]) (all
//     int64: the index, and parameters for the gathered dim's stride and
//     size); out of range, it sets kErrIndex and reads at index 0. For an
//     Index slot, the element's position.
//   Unary/Binary/Where/Cast: the op of the tensor graph on src[0..arity).
//   ReduceSum/Prod/Max/Min: the accumulation of src[0] over the reduction
//     loop (initial 0, 1, lowest, highest; Max/Min propagate NaN). Floating
//     sums must be accurate to pairwise-summation level, not a naive chain.
//   ScanSum/Prod/Max/Min: the accumulation of src[0] over j' <= j, in order
//     (initial as the Reduce's), rounded at each step: only in the store loop,
//     and no Reduce reads one. A backend may combine integers (which wrap to
//     the same bits in any order) and extrema in another order; floating
//     sums and products in order only.
// ALU ops never take float16 or bfloat16 operands: the scheduler computes
// those in float32 with explicit casts, so backends only convert them.
struct Value {
  Op op;
  DType dtype;
  int32_t src[3] = {-1, -1, -1};
  int32_t slot = -1;  // Buffer, Iota, Gather
  int64_t imm = 0;    // Philox: the word
  int32_t param = -1; // Const
  bool operator==(const Value&) const = default;
};

// A store of `value` to element i of slot `slot`; or, scattering (at >= 0), to that element plus
// at * stride elements, where at must lie in [0, bound) (all three int64 values: the index, and
// parameters for the scattered dim's stride and size): out of range, it sets kErrIndex and stores
// nothing. A scattering store may meet an element another store of the launch writes, so its
// launch runs its elements in order (later writes win), and with `add` it adds value to the
// element (not for bool). Scattering kernels do not loop over j.
struct Store {
  int32_t slot;
  int32_t value;
  int32_t at = -1, stride = -1, bound = -1;
  bool add = false;
  bool scatters() const { return at >= 0; }
  // The values the store reads (-1 for those a plain store lacks).
  std::array<int32_t, 4> operands() const { return {value, at, stride, bound}; }
  bool operator==(const Store&) const = default;
};

struct Kernel {
  std::string name; // human-readable, not part of identity
  std::vector<Slot> slots;
  std::vector<DType> params;
  std::vector<Value> values; // in topological order
  std::vector<Store> stores;

  bool has_reduction() const;
  bool has_scan() const;
  // Whether a store scatters: then the elements run in order on a CPU (see Store).
  bool scatters() const;
  // Whether a value gathers: reads a slot at a data-dependent place of the domain.
  bool gathers() const;
  // Whether the kernel loops over j: it reduces or stores rows (it takes r and rstride).
  bool has_row_loops() const;
  // Whether slot s is read by a Gather or written by a scattering store: where its elements lie
  // depends on data.
  bool placed_by_data(int32_t s) const;

  // Structural identity: equal kernels compile to the same code.
  uint64_t hash() const;
  bool same_structure(const Kernel& o) const;
  // The documented text form (docs/ir.md).
  std::string str() const;
  // The first thing that differs from `o`, in words ("slot1 is float64, not
  // float32"), or "" when the structures are equal: why a kernel missed a
  // cache that holds a similar one.
  std::string difference(const Kernel& o) const;
};

// Where a kernel computes each value, from the rules above; both backends lower this.
struct LoopPlan {
  int reduce_loops = 0;    // reduction loops, run in order for each i
  bool store_loop = false; // then a loop over j that stores rows
  // per_i[s][v]: v is computed once per i, after the first s reduction loops (s <= reduce_loops).
  std::vector<std::vector<char>> per_i;
  // in_loop[l][v]: v is computed per (i, j) in loop l: the reduction loops, then the store loop.
  std::vector<std::vector<char>> in_loop;
  // loop_of[v]: the loop a Reduce value accumulates in (-1 for other values).
  std::vector<int> loop_of;
  // varying[v]: v depends on j, so it exists only inside loops.
  std::vector<char> varying;
  // More than the one reduction loop of a plain reduction: the backends' tiled and
  // multi-threaded reduction schemes do not apply.
  bool several() const { return reduce_loops > 1 || store_loop; }
};
LoopPlan plan_loops(const Kernel& k);
// The two contexts of an elementwise kernel or a kernel with one reduction loop: in_loop[v],
// v is computed per element of the loop (a Reduce value reads it, transitively); after_loop[v],
// v is computed after the loop (the stores need it, up to the Reduce values, which the loop
// delivers). Elementwise kernels compute their after_loop values.
struct LoopSplit {
  std::vector<char> in_loop, after_loop;
};
LoopSplit split_at_reduction(const Kernel& k);
// Whether slot s moves along j (its rstride is not Broadcast) in a kernel that loops over j.
inline bool moves_along_j(const Slot& s) { return s.rstride != StrideKind::Broadcast; }

// Checks the invariants above; throws an internal error naming the kernel.
void verify(const Kernel& k);

} // namespace tj::kir
