// The kernel IR: what the scheduler emits and every backend lowers.
//
// A kernel computes elements i = 0..n-1 of one row of its iteration space.
// Every slot is an array seen through an affine index: element i of slot k
// is at base[k] + i * stride[k] (elements, not bytes). The executor walks the
// outer dimensions and calls the kernel once per row (or part of a row), so a
// kernel knows nothing of sizes: the same code serves every shape.
//
// A kernel may also reduce: then each of its n elements is the result of a
// loop over r reduction elements j, where element (i, j) of slot k is at
// base[k] + i * stride[k] + j * rstride[k]. Values feeding a Reduce value are
// computed per (i, j) inside that loop; the Reduce values, and everything
// computed from them, once per i after it. All Reduce values of a kernel
// share the one loop. Slots read after the loop have rstride Broadcast.
//
// Compiled kernels have the C signature
//   void kernel(int64_t n, void* const* ptrs, const int64_t* base,
//               const int64_t* stride, const uint64_t* params, int32_t* err,
//               int64_t r, const int64_t* rstride);
// (a kernel without Reduce values ignores r and rstride).
// ptrs[k] is slot k's buffer (unused for Index slots); params[p] holds the
// bits of parameter p (floats: IEEE bits, float32 in the low half; integers
// sign-extended; bool 0/1). A kernel sets *err to 1 when an integer division
// or remainder by zero happened, and leaves it untouched otherwise.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/op.h"
#include "tensorjit/dtype.h"

namespace tj::kir {

using ir::Op;

// What is known of a slot's stride when the kernel is compiled; the value of
// a Strided stride comes at run time.
enum class StrideKind : uint8_t { Contiguous, Broadcast, Strided };

struct Slot {
  enum class Role : uint8_t { Input, Output, Index };
  Role role;
  DType dtype; // element type of Input/Output; int64 for Index
  StrideKind stride;
  StrideKind rstride = StrideKind::Broadcast; // along the reduction loop
};

// One SSA value of the kernel body. Operands refer to earlier values.
//   Buffer: load slot `slot`          Const: parameter `slot`
//   Iota:   the index of slot `slot`  Philox: word `imm` at counter src[1]+src[0],
//                                             key src[2] (all int64 values)
//   Unary/Binary/Where/Cast: the op of the tensor graph on src[0..arity).
//   ReduceSum/Prod/Max/Min: the accumulation of src[0] over the reduction
//     loop (initial 0, 1, lowest, highest; Max/Min propagate NaN). Floating
//     sums must be accurate to pairwise-summation level, not a naive chain.
// ALU ops never take float16 or bfloat16 operands: the scheduler computes
// those in float32 with explicit casts, so backends only convert them.
struct Value {
  Op op;
  DType dtype;
  int32_t src[3] = {-1, -1, -1};
  int32_t slot = -1;
  int64_t imm = 0;
  bool operator==(const Value&) const = default;
};

struct Store {
  int32_t slot;
  int32_t value;
  bool operator==(const Store&) const = default;
};

struct Kernel {
  std::string name; // human-readable, not part of identity
  std::vector<Slot> slots;
  std::vector<DType> params;
  std::vector<Value> values; // in topological order
  std::vector<Store> stores;

  bool has_reduction() const;

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

// Checks the invariants above; throws an internal error naming the kernel.
void verify(const Kernel& k);

} // namespace tj::kir
