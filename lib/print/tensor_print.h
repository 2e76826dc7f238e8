// PyTorch's repr(tensor), character for character, from any element source.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tensorjit/dtype.h"
#include "tensorjit/functions.h"

namespace tj::detail {

// Where the printer reads elements: the value at a row-major linear index.
// For floating dtypes (float16/bfloat16 already widened) get_float is used; for
// integer dtypes and bool, get_int (bool: 0 or 1). Complex dtypes read their real parts with
// get_float and their imaginary parts with get_imag.
struct PrintSource {
  DType dtype;
  std::vector<int64_t> shape;
  std::function<double(int64_t)> get_float;
  std::function<int64_t(int64_t)> get_int;
  std::function<double(int64_t)> get_imag;
};

// The parts of the repr that come after the data.
struct PrintSuffixes {
  std::string device;         // empty for cpu; else e.g. "cuda:0" -> printed as device='cuda:0'
  std::string grad_fn;        // e.g. "AddBackward0" -> grad_fn=<AddBackward0>; empty if none
  bool requires_grad = false; // printed as requires_grad=True when there is no grad_fn
};

// PyTorch's repr(tensor) under the current print options:
// "tensor([[1., 2.],\n        [3., 4.]], dtype=torch.float64)".
std::string repr(const PrintSource& src, const PrintSuffixes& sfx = {});

} // namespace tj::detail
