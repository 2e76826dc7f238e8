// Scalar rules written once for the host and the GPU: NaN-propagating max/min, integer division
// and remainder, integer power and the Philox rounds. lib/ir/scalar_semantics.cpp (the constant
// folder and the reference interpreter) includes this file; codegen/cuda/cuda_source.cpp puts its
// text, as CMake embeds it, in every CUDA kernel's prelude. So the file keeps to what both C++17
// and NVRTC compile: no standard library on the device side, no host-only types. (The LLVM lowering
// builds the same rules as IR in codegen/llvm/llvm_math.cpp; the tests compare it with these.)
#ifndef TJ_IR_SCALAR_RULES_H
#define TJ_IR_SCALAR_RULES_H

#ifdef __CUDACC_RTC__
#define TJ_RULE __device__ __forceinline__
#else
#include <cmath>
#define TJ_RULE inline
namespace tj::ir::rules {
using std::exp;
using std::fabs;
using std::isinf;
using std::log1p;
using std::signbit;
#endif

// NaN-propagating maximum and minimum with -0.0 < +0.0 (PyTorch's maximum/minimum, amax/amin).
template <class T> TJ_RULE T tj_fmax(T x, T y) {
  if (x != x || y != y) return x + y;
  if (x == y) return signbit(x) ? y : x;
  return x > y ? x : y;
}
template <class T> TJ_RULE T tj_fmin(T x, T y) {
  if (x != x || y != y) return x + y;
  if (x == y) return signbit(x) ? x : y;
  return x < y ? x : y;
}

// log(exp(x) + exp(y)) without overflow, as PyTorch's logaddexp: equal infinities give
// themselves (-inf and -inf: -inf), a NaN gives NaN.
template <class T> TJ_RULE T tj_logaddexp(T x, T y) {
  if (isinf(x) && x == y) return x;
  const T m = x < y ? y : x;
  return m + log1p(exp(-fabs(x - y)));
}

// Integer division and remainder (C's truncation; `%` is fmod's sign rule). Division by zero
// gives 0 and sets err, which the caller turns into PyTorch's "ZeroDivisionError". A signed
// x / -1 wraps (U is T's unsigned type, where negation is defined) and x % -1 is 0.
template <class T, class U> TJ_RULE T tj_sdiv(T x, T y, int& err) {
  if (y == 0) {
    err |= 1;
    return 0;
  }
  if (y == T(-1)) return T(U(0) - U(x));
  return T(x / y);
}
template <class T> TJ_RULE T tj_smod(T x, T y, int& err) {
  if (y == 0) {
    err |= 1;
    return 0;
  }
  if (y == T(-1)) return 0;
  return T(x % y);
}
template <class T> TJ_RULE T tj_udiv(T x, T y, int& err) {
  if (y == 0) {
    err |= 1;
    return 0;
  }
  return T(x / y);
}
template <class T> TJ_RULE T tj_umod(T x, T y, int& err) {
  if (y == 0) {
    err |= 1;
    return 0;
  }
  return T(x % y);
}

// Integer power by squaring, wrapping in U (T's unsigned type). A negative exponent gives 1 for
// base 1, +-1 for base -1 and 0 otherwise (the integer part of the true power).
template <class T, class U> TJ_RULE T tj_ipow(T x, T y) {
  if (y < 0) {
    if (x == 1) return 1;
    if (x == T(-1)) return (y & 1) ? T(-1) : T(1);
    return 0;
  }
  U result = 1, base = U(x);
  for (U e = U(y); e; e >>= 1) {
    if (e & 1) result *= base;
    base *= base;
  }
  return T(result);
}

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): the block
// (c0, c1, c2, c3) after ten rounds under the key (k0, k1). Counters are (low word, high word, 0,
// 0) of a 64-bit counter, as PyTorch's CUDA generator lays them out.
TJ_RULE void tj_philox_rounds(unsigned& c0, unsigned& c1, unsigned& c2, unsigned& c3, unsigned k0,
                              unsigned k1) {
#ifdef __CUDACC_RTC__
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    const unsigned hi0 = unsigned(p0 >> 32), lo0 = unsigned(p0);
    const unsigned hi1 = unsigned(p1 >> 32), lo1 = unsigned(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

#ifndef __CUDACC_RTC__
} // namespace tj::ir::rules
#endif
#undef TJ_RULE
#endif // TJ_IR_SCALAR_RULES_H
