// A model of cuBLAS's gemmStridedBatched on the CPU: the column-major semantics of each
// argument (transposes, leading dimensions, batch strides, pointer offsets), with the
// library's argument checks, and bounds checks on every element it reads or writes (a GPU
// would read out of bounds silently). The planning code's calls are run through it in tests
// that have no GPU.
#pragma once
#include <cstddef>
#include <vector>

#include "lib/pipeline/library_calls.h"
#include "runtime/gemm_plan.h"

namespace tj::test {

// C = op(A) op(B) for one planned call (alpha 1, beta 0), over memory of the given lengths
// in elements. Accumulates in double. Throws std::logic_error where cuBLAS would return
// CUBLAS_STATUS_INVALID_VALUE, or where an element lies outside its memory.
template <typename T>
void gemm_model(const rt::GemmCall& call, const T* a, size_t a_len, const T* b, size_t b_len, T* c,
                size_t c_len);

// While it lives, the model is the library that computes float32 and float64 products on any
// device (pipeline/library_calls.h): the CPU builds them as Call nodes and materialization
// hands them to the model. Counts the calls.
struct ModelBlas {
  ModelBlas();
  int calls = 0;
  std::vector<rt::GemmCall> seen;
  pipeline::ScopedGemmOverride scope;
};

} // namespace tj::test
