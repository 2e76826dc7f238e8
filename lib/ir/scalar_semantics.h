// What each op means on one scalar, per dtype: the single definition used by
// the constant folder and the reference interpreter. The rules CUDA kernels need
// as well live in lib/ir/scalar_rules.h, shared as text; the LLVM lowering builds
// the same rules as IR, and test/test_ops_vs_interp.cpp holds them together.
#pragma once
#include <complex>
#include <cstdint>
#include <cstring>

#include "lib/ir/op.h"
#include "tensorjit/dtype.h"
#include "tensorjit/scalar.h"

namespace tj::ir {

// IEEE binary16 / bfloat16 conversions, round to nearest even.
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bfloat_bits(float f);
float bfloat_bits_to_float(uint16_t b);

// Rounds a double to the precision of a floating dtype (float64: unchanged).
// float16/bfloat16 go through float32 first, as PyTorch's conversions do.
double round_to_dtype(double v, DType t);
// An integer converted to a floating dtype with a single rounding.
double int_to_float(int64_t v, DType t);
// A scalar as the value it has in dtype `t` (rounded, wrapped or truncated).
Scalar to_dtype(const Scalar& v, DType t);
// Wraps an integer to the width and signedness of an integral dtype (bool: != 0).
int64_t wrap_to_dtype(int64_t v, DType t);
// Float to integer dtype: NaN -> 0, saturate to int64, then wrap to the width.
int64_t float_to_int(double v, DType t);

// Results of unary and binary ops for floating dtypes (computed in double,
// then rounded by the caller) and for integral dtypes (exact, wrapped).
double eval_float(Op op, double a, double b = 0.0);
// `div_by_zero` is set when an integer Div or Mod divides by zero.
int64_t eval_int(Op op, DType t, int64_t a, int64_t b, bool* div_by_zero);
// Comparisons on floats and on integers (uint8 and bool compare as unsigned
// values, which their wrapped int64 representation already is).
bool eval_compare_float(Op op, double a, double b);
bool eval_compare_int(Op op, int64_t a, int64_t b);

// One element of dtype `t` at `p`, widened: floats to double, the rest to int64.
double load_float(const void* p, DType t);
int64_t load_int(const void* p, DType t);
// One element as a complex number (a real dtype's value with a zero imaginary part).
std::complex<double> load_complex(const void* p, DType t);
// Writes `v` converted to dtype `t` (as to_dtype does) at `p`.
void store_scalar(void* p, const Scalar& v, DType t);

// Philox4x32-10: the four output words for a 64-bit counter and key.
void philox4x32(uint64_t counter, uint64_t key, uint32_t out[4]);

} // namespace tj::ir
