// Matrix products computed by a column-major BLAS (cuBLAS on CUDA devices): the
// operands as they lie in memory, planned into library calls (runtime/gemm_plan.h).
#pragma once
#include <functional>

#include "gemm_plan.h"
#include "ir/node.h"

namespace tj::fe {

// Runs one planned call. `lib_a`, `lib_b` and `lib_c` are the library's operands (our b,
// our a, the result): Buffer nodes whose storage the call's offsets index, in elements.
using GemmRunner = std::function<void(const rt::GemmCall& call, const ir::Node& lib_a,
                                      const ir::Node& lib_b, const ir::Node& lib_c)>;

// a @ b for a (..., n, k) and b (..., k, m), batch dims broadcast, computed now: the
// operands are computed, planned as their memory lies (transposed, strided, sliced and
// broadcast views included; copied contiguous only where no call can address them), and
// `run` is called once per planned call. Returns the product, a new contiguous Buffer
// (zeros when k = 0, without a call).
ir::NodePtr blas_product(const ir::NodePtr& a, const ir::NodePtr& b, const GemmRunner& run);

// Tests without a GPU route CPU float32/float64 products through blas_product with a model
// of the library while one of these lives; nothing else sets it.
class ScopedBlasOverride {
public:
  explicit ScopedBlasOverride(GemmRunner run);
  ~ScopedBlasOverride();
  ScopedBlasOverride(const ScopedBlasOverride&) = delete;
  ScopedBlasOverride& operator=(const ScopedBlasOverride&) = delete;
};
// The runner set by a live ScopedBlasOverride, or null.
const GemmRunner* blas_override();

} // namespace tj::fe
