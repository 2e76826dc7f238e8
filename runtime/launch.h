// A kernel launch: a kernel of the kernel IR bound to memory over an iteration space.
#pragma once
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

#include "codegen/kernel_ir.h"
#include "runtime/storage.h"

namespace tj::llvmjit {
struct CompiledKernel;
}

namespace tj::rt {

struct SlotBinding {
  std::shared_ptr<Storage> storage; // null for Index slots
  int64_t base = 0;                 // element offset of iteration index (0, ..., 0)
  std::vector<int64_t> strides;     // element stride per domain dim
  int64_t rstride = 0;              // element stride along the reduction loop
};

struct Launch {
  kir::Kernel kernel;
  std::vector<int64_t> domain;    // iteration shape, innermost last
  int64_t r = 1;                  // reduction extent (1: no reduction)
  std::vector<SlotBinding> slots; // parallel to kernel.slots
  std::vector<uint64_t> params;   // parallel to kernel.params
};

// The shape a launch's kernel is compiled in for a GPU: the rank of its domain (at least 1), and
// whether 32-bit indices cover its `total` elements. The CUDA executor and the dumps of CUDA
// source and PTX agree through this.
struct CudaForm {
  int nd;
  bool index32;
  int64_t total;
};
inline CudaForm cuda_form(const Launch& l) {
  int64_t total = 1;
  for (int64_t d : l.domain)
    total *= d;
  return {std::max<int>(1, static_cast<int>(l.domain.size())), total <= INT32_MAX, total};
}

// Throws the error that the bits a kernel set in its error word (kir::kErrDivideByZero,
// kErrIndex) stand for; nothing when they are 0.
void raise_kernel_errors(int32_t bits);

// Whether the CPU executor walks this launch in square tiles (an input read across memory along
// rows but along it down columns: a transpose) instead of row by row.
bool walks_in_tiles(const Launch& l);

// An elementwise launch on the CPU run by its caller in pieces: ranges of its domain's elements
// in row-major order, each on the calling thread, from any threads at once. The CPU GEMM runs
// its epilogue so, on each run of C's rows as soon as it is final. `l` must outlive it.
class LaunchRanges {
public:
  // Compiles the kernel (or finds it in the cache). Throws for a launch that accepts() refuses.
  explicit LaunchRanges(const Launch& l);
  // A launch whose every iteration stores its own element once and reads no other element of
  // the memory it stores to: no loops over rows, no scattering stores, in host memory. (Whether
  // the stores lie as C does is the caller's question.)
  static bool accepts(const Launch& l);
  void run(int64_t begin, int64_t end) const;
  // After every range has run: counts the launch and raises the errors its kernel flagged.
  void finish() const;

private:
  const Launch& l_;
  std::shared_ptr<llvmjit::CompiledKernel> code_;
  std::vector<void*> ptrs_;
  std::vector<int64_t> inner_, rstride_;
  mutable std::atomic<int32_t> err_{0};
};

// Runs launches in order on their device: on the CPU, compiled kernels split
// each iteration space over the thread pool; on a GPU, one launch each.
void execute(const std::vector<Launch>& launches);
// One launch on a CUDA device (runtime/cuda_executor.cpp), queued on its stream.
void execute_cuda(const Launch& l);
// Compiles the kernels these CUDA launches need and the cache lacks, in parallel.
void prepare_cuda(const std::vector<const Launch*>& launches);

} // namespace tj::rt
