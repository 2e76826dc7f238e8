// The factorizations behind tj::linalg (ir/routine.h's LAPACK routines) as tensors: the frontend
// functions and the differentiation of loaded graphs (ir::differentiate) share them.
#pragma once
#include <vector>

#include "lib/ir/routine.h"
#include "tensorjit/tensor.h"

namespace tj::detail {

// The parts routine `r` computes from `operands` (float32 or float64, one dtype, equal batch
// dims), each a tensor of (batch..., part): one Call node read through views. The routine's
// gradient is recorded on the parts as one op (PyTorch's grad_fn), where it has one. On a CUDA
// device the routine runs on copies in host memory.
// `value`: the Call's (lstsq's rcond).
std::vector<Tensor> factor(ir::Routine r, const std::vector<Tensor>& operands,
                           const std::vector<int64_t>& params, Scalar value = {});

// The gradient of P = pinv(A) (PyTorch's pinv_backward), g P's gradient.
Tensor pinv_backward(const Tensor& g, const Tensor& P, const Tensor& A);

} // namespace tj::detail
