// Scalar semantics of the primitives: conversions, integer and float ops, Philox.
#include "lib/ir/scalar_semantics.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <complex>
#include <limits>

#include "lib/ir/scalar_rules.h"
#include "tensorjit/error.h"

namespace tj::ir {

uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)
    return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // rounds to inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): round abs / 2^-24 to an integer, ties to even.
    float a = std::bit_cast<float>(abs);
    float scaled = a * 16777216.0f; // exact: a power-of-two scale
    float r = std::nearbyint(scaled);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd; // rebias exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (abs >> 13));
}

float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_bfloat_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bfloat_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

double round_to_dtype(double v, DType t) {
  switch (t) {
  case kFloat64:
    return v;
  case kFloat32:
    return static_cast<float>(v);
  case kFloat16:
    return half_bits_to_float(float_to_half_bits(static_cast<float>(v)));
  case kBFloat16:
    return bfloat_bits_to_float(float_to_bfloat_bits(static_cast<float>(v)));
  default:
    return v;
  }
}

double int_to_float(int64_t v, DType t) {
  if (t == kFloat64) return static_cast<double>(v);
  return round_to_dtype(static_cast<float>(v), t); // float16/bfloat16 via float32, as PyTorch
}

Scalar to_dtype(const Scalar& v, DType t) {
  if (t == kBool) return Scalar(v.to_bool());
  const bool real = v.is_floating_point() || v.is_complex(); // a complex value's real part
  if (is_complex(t)) {
    const DType part = real_part_dtype(t);
    const double re = real ? round_to_dtype(v.to_double(), part) : int_to_float(v.to_int(), part);
    return Scalar(std::complex<double>(re, round_to_dtype(v.imag(), part)));
  }
  if (is_floating_point(t))
    return Scalar(real ? round_to_dtype(v.to_double(), t) : int_to_float(v.to_int(), t));
  if (real) return Scalar(float_to_int(v.to_double(), t));
  return Scalar(wrap_to_dtype(v.to_int(), t));
}

int64_t wrap_to_dtype(int64_t v, DType t) {
  switch (t) {
  case kBool:
    return v != 0;
  case kUInt8:
    return static_cast<uint8_t>(v);
  case kInt8:
    return static_cast<int8_t>(v);
  case kInt16:
    return static_cast<int16_t>(v);
  case kInt32:
    return static_cast<int32_t>(v);
  default:
    return v;
  }
}

int64_t float_to_int(double v, DType t) {
  if (t == kBool) return v != 0.0; // NaN is true
  if (std::isnan(v)) return 0;
  int64_t i;
  if (v >= 9223372036854775807.0)
    i = std::numeric_limits<int64_t>::max();
  else if (v <= -9223372036854775808.0)
    i = std::numeric_limits<int64_t>::min();
  else
    i = static_cast<int64_t>(v);
  return wrap_to_dtype(i, t);
}

double eval_float(Op op, double a, double b) {
  switch (op) {
  case Op::Neg:
    return -a;
  case Op::Abs:
    return std::fabs(a);
  case Op::Floor:
    return std::floor(a);
  case Op::Ceil:
    return std::ceil(a);
  case Op::Round:
    return std::nearbyint(a);
  case Op::Trunc:
    return std::trunc(a);
  case Op::Sqrt:
    return std::sqrt(a);
  case Op::Recip:
    return 1.0 / a;
#define TJ_MATH_FN(name, op, grad_fn)                                                              \
  case Op::op:                                                                                     \
    return std::name(a);
#include "tensorjit/elementwise_functions.def"
  case Op::Add:
    return a + b;
  case Op::Sub:
    return a - b;
  case Op::Mul:
    return a * b;
  case Op::Div:
    return a / b;
  case Op::Fmod:
    return std::fmod(a, b);
  case Op::Pow:
    return std::pow(a, b);
  case Op::Max:
    return rules::tj_fmax(a, b);
  case Op::Min:
    return rules::tj_fmin(a, b);
  case Op::LogAddExp:
    return rules::tj_logaddexp(a, b);
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints)                                              \
  case Op::op:                                                                                     \
    return std::name(a, b);
#include "tensorjit/elementwise_functions.def"
  default:
    return std::numeric_limits<double>::quiet_NaN();
  }
}

int64_t eval_int(Op op, DType t, int64_t a, int64_t b, bool* div_by_zero) {
  // Arithmetic in uint64 wraps without undefined behaviour; wrap_to_dtype narrows.
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  int64_t r = 0;
  switch (op) {
  case Op::Neg:
    r = static_cast<int64_t>(0 - ua);
    break;
  case Op::Abs:
    r = a < 0 ? static_cast<int64_t>(0 - ua) : a;
    break;
  case Op::BitNot:
    r = t == kBool ? !a : ~a;
    break;
  case Op::Not:
    r = !a;
    break;
  case Op::Add:
    r = static_cast<int64_t>(ua + ub);
    break;
  case Op::Sub:
    r = static_cast<int64_t>(ua - ub);
    break;
  case Op::Mul:
    r = static_cast<int64_t>(ua * ub);
    break;
  case Op::Div:
  case Op::Fmod: {
    int err = 0;
    r = op == Op::Div ? rules::tj_sdiv<int64_t, uint64_t>(a, b, err)
                      : rules::tj_smod<int64_t>(a, b, err);
    if (err) {
      if (div_by_zero) *div_by_zero = true;
      return 0;
    }
    break;
  }
  case Op::Pow:
    r = rules::tj_ipow<int64_t, uint64_t>(a, b);
    break;
  case Op::Max:
    r = a > b ? a : b;
    break;
  case Op::Min:
    r = a < b ? a : b;
    break;
  case Op::And:
    r = a & b;
    break;
  case Op::Or:
    r = a | b;
    break;
  case Op::Xor:
    r = a ^ b;
    break;
  default:
    r = 0;
  }
  return wrap_to_dtype(r, t);
}

namespace {
template <typename T> bool compare(Op op, T a, T b) {
  switch (op) {
  case Op::CmpEq:
    return a == b;
  case Op::CmpNe:
    return a != b;
  case Op::CmpLt:
    return a < b;
  case Op::CmpLe:
    return a <= b;
  default:
    return false;
  }
}
} // namespace

bool eval_compare_float(Op op, double a, double b) { return compare(op, a, b); }
bool eval_compare_int(Op op, int64_t a, int64_t b) { return compare(op, a, b); }

double load_float(const void* p, DType t) {
  auto get = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (t) {
  case kFloat64:
    return get(double{});
  case kFloat32:
    return get(float{});
  case kFloat16:
    return half_bits_to_float(get(uint16_t{}));
  case kBFloat16:
    return bfloat_bits_to_float(get(uint16_t{}));
  case kBool:
  case kUInt8:
  case kInt8:
  case kInt16:
  case kInt32:
  case kInt64:
    return static_cast<double>(load_int(p, t));
  default: // complex: no one real value (load_complex reads it)
    throw Error(fmt::format("internal error: load_float of a {} value", dtype_name(t)));
  }
}

std::complex<double> load_complex(const void* p, DType t) {
  if (t == kComplex64) {
    std::complex<float> v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  if (t == kComplex128) {
    std::complex<double> v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  return load_float(p, t);
}

int64_t load_int(const void* p, DType t) {
  auto get = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (t) {
  case kBool:
    return get(uint8_t{}) != 0;
  case kUInt8:
    return get(uint8_t{});
  case kInt8:
    return get(int8_t{});
  case kInt16:
    return get(int16_t{});
  case kInt32:
    return get(int32_t{});
  case kInt64:
    return get(int64_t{});
  case kFloat16:
  case kBFloat16:
  case kFloat32:
  case kFloat64:
    return float_to_int(load_float(p, t), kInt64);
  default: // complex: no one real value (load_complex reads it)
    throw Error(fmt::format("internal error: load_int of a {} value", dtype_name(t)));
  }
}

void philox4x32(uint64_t counter, uint64_t key, uint32_t out[4]) {
  unsigned c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  unsigned c2 = 0, c3 = 0;
  rules::tj_philox_rounds(c0, c1, c2, c3, static_cast<uint32_t>(key),
                          static_cast<uint32_t>(key >> 32));
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

void store_scalar(void* dst, const Scalar& v, DType t) {
  auto put = [&](auto x) { std::memcpy(dst, &x, sizeof(x)); };
  switch (t) {
  case kBool:
    put(static_cast<uint8_t>(v.to_bool()));
    break;
  case kFloat64:
    put(v.to_double());
    break;
  case kFloat32:
    put(static_cast<float>(v.to_double()));
    break;
  case kFloat16:
    put(float_to_half_bits(static_cast<float>(v.to_double())));
    break;
  case kBFloat16:
    put(float_to_bfloat_bits(static_cast<float>(v.to_double())));
    break;
  case kComplex64:
    put(std::complex<float>(v.to_complex()));
    break;
  case kComplex128:
    put(v.to_complex());
    break;
  default: {
    int64_t i = v.is_floating_point() || v.is_complex() ? float_to_int(v.to_double(), t)
                                                        : ir::wrap_to_dtype(v.to_int(), t);
    switch (t) {
    case kUInt8:
      put(static_cast<uint8_t>(i));
      break;
    case kInt8:
      put(static_cast<int8_t>(i));
      break;
    case kInt16:
      put(static_cast<int16_t>(i));
      break;
    case kInt32:
      put(static_cast<int32_t>(i));
      break;
    default:
      put(i);
      break;
    }
  }
  }
}

} // namespace tj::ir
