// cuBLAS, loaded at run time like the driver: matrix products on CUDA devices.
#pragma once
#include <cstdint>

#include "cuda_driver.h"
#include "tensorjit/dtype.h"

namespace tj::rt::cuda {

// Whether cuBLAS (libcublas.so.13/12/11) could be loaded.
bool blas_available();

// C[b] = A[b] @ B[b] for `batch` row-major, contiguous matrices: A is n x k, B is k x m,
// C is n x m, consecutive in memory. float32 and float64 only; float32 without TF32, as
// PyTorch's default. Queued on the device's stream.
void gemm_batched(int dev, DType t, int64_t batch, int64_t n, int64_t m, int64_t k, CUdeviceptr a,
                  CUdeviceptr b, CUdeviceptr c);

} // namespace tj::rt::cuda
