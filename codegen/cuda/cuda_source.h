// Lowering of the kernel IR to CUDA C++ source, compiled by NVRTC.
//
// One kernel of the kernel IR becomes one __global__ function `tj_kernel`
// over the whole iteration domain of a launch (not one row, as on the CPU).
// The domain's rank is compiled in; sizes and strides come at launch time in
// one by-value argument of 64-bit words, in this order:
//
//   total                 number of domain elements (outputs of a reduction)
//   r                     reduction extent (1 without reduction)
//   group                 threads that share one output of a reduction: 1..256,
//                         a power of two (ignored without reduction)
//   dom[nd]               domain sizes, outermost first
//   base[ns]              element offset of each slot at index (0, ..., 0)
//   stride[ns][nd]        element stride of each slot per domain dim
//   rstride[ns]           element stride of each slot along the reduction
//   param[max(np, 1)]     parameter bits, as in kernel_ir.h
//   ptr[ns]               device pointers (0 for Index slots)
//   err                   device pointer to an int32 error word
//
// Blocks have kBlockThreads threads. Output slots never alias input slots.
#pragma once
#include <cstdint>
#include <string>

#include "codegen/kernel_ir.h"

namespace tj::cudagen {

inline constexpr int kBlockThreads = 256;
inline constexpr const char* kEntry = "tj_kernel";

struct Source {
  std::string code;
  bool may_fail = false; // ORs bits into the error word (kir::kErrDivideByZero, kErrIndex)
};

// The translation unit for kernel `k` over a domain of rank `nd` (>= 1).
// `index32`: the domain has fewer than 2^31 elements, so element indices are
// 32-bit (offsets stay 64-bit); it is part of a compiled kernel's identity.
Source generate(const kir::Kernel& k, int nd, bool index32);

// Number of 64-bit words of the launch argument.
size_t arg_words(const kir::Kernel& k, int nd);

} // namespace tj::cudagen
