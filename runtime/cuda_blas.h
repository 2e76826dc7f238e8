// cuBLAS, loaded at run time like the driver: matrix products on CUDA devices.
#pragma once
#include <cstdint>

#include "runtime/cuda_driver.h"
#include "runtime/gemm_plan.h"
#include "tensorjit/dtype.h"

namespace tj::rt::cuda {

// Whether cuBLAS (libcublas.so.13/12/11) could be loaded.
bool blas_available();

// One planned gemmStridedBatched call (runtime/gemm_plan.h) on memory starting at a, b and c
// (the call's offsets are added). float32 and float64 only; float32 without TF32, as
// PyTorch's default. Queued on the device's stream.
void gemm(int dev, DType t, const GemmCall& call, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c);

} // namespace tj::rt::cuda
