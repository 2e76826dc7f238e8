// Type promotion: dimensioned tensors over 0-d tensors over wrapped scalars.
#include "lib/frontend/promotion.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <limits>
#include <optional>

#include "lib/frontend/tensor_impl.h"
#include "tensorjit/error.h"

namespace tj::fe {
namespace {

std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_complex(*higher)) return higher;
  // A complex lower category keeps a floating higher one's precision: float64 and a complex
  // scalar give complex128.
  if (is_complex(*lower)) return is_floating_point(*higher) ? complex_dtype(*higher) : *lower;
  if (is_floating_point(*higher)) return higher;
  if (*higher == kBool || is_floating_point(*lower)) return promote_types(*higher, *lower);
  return higher;
}

} // namespace

Operand operand(const Tensor& t) { return {detail::node_of(t), false, t}; }
Operand operand(const Scalar& s) { return {constant(s, s.dtype()), true, Tensor()}; }

DType result_type(std::initializer_list<Operand> ops) {
  std::optional<DType> dim, zero, wrapped;
  for (const auto& o : ops) {
    DType cur = o.node->dtype;
    if (o.wrapped && is_floating_point(cur)) cur = default_dtype();
    if (o.wrapped && is_complex(cur)) cur = complex_dtype(default_dtype());
    auto& slot = o.wrapped ? wrapped : (o.node->shape.empty() ? zero : dim);
    slot = slot ? promote_types(*slot, cur) : cur;
  }
  return *combine(dim, combine(zero, wrapped));
}

const char* cpp_type_name(DType t) {
  static const char* names[] = {"Bool",  "Byte",   "Char",         "Short",
                                "Int",   "Long",   "Half",         "BFloat16",
                                "Float", "Double", "ComplexFloat", "ComplexDouble"};
  static_assert(std::size(names) == kNumDTypes);
  return names[static_cast<int>(t)];
}

const char* type_meta_name(DType t) {
  static const char* names[] = {
      "bool",  "unsigned char", "signed char",         "short int",
      "int",   "long int",      "c10::Half",           "c10::BFloat16",
      "float", "double",        "c10::complex<float>", "c10::complex<double>"};
  static_assert(std::size(names) == kNumDTypes);
  return names[static_cast<int>(t)];
}

std::string legacy_type_name(DType t) {
  return std::string("torch.") + cpp_type_name(t) + "Tensor";
}

std::pair<double, double> finite_range(DType t) {
  switch (t) {
  case kBool:
    return {0, 1};
  case kUInt8:
    return {0, 255};
  case kInt8:
    return {-128, 127};
  case kInt16:
    return {-32768, 32767};
  case kInt32:
    return {-2147483648.0, 2147483647.0};
  case kInt64:
    return {-0x1p63, 0x1p63};
  case kFloat16:
    return {-65504, 65504};
  case kBFloat16:
    return {-0x1.fep127, 0x1.fep127};
  case kFloat32:
  case kComplex64:
    return {-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
  default:
    return {-std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
  }
}

void check_scalar_fits(const Scalar& s, DType t) {
  static const char* names[] = {"bool",
                                "uint8_t",
                                "int8_t",
                                "int16_t",
                                "int",
                                "int64_t",
                                "at::Half",
                                "at::BFloat16",
                                "float",
                                "double",
                                "c10::complex<float>",
                                "c10::complex<double>"};
  static_assert(std::size(names) == kNumDTypes);
  if (t == kBool) return; // anything converts to bool
  const auto [lo, hi] = finite_range(t);
  bool overflows = false;
  if (s.is_complex() && !is_complex(t) && s.imag() != 0) {
    overflows = true;
  } else if (s.is_integral() || s.is_bool()) {
    const int64_t v = s.to_int();
    if (t == kInt64) return;
    // A negative integer wraps into an unsigned type (so that u8 - 1 is u8 + 255) unless its
    // magnitude exceeds the type's range.
    if (t == kUInt8 && v < 0)
      overflows = v < -255;
    else
      overflows = double(v) < lo || double(v) > hi;
  } else {
    const double v = s.to_double();
    const bool floating = is_floating_point(t) || is_complex(t);
    if (std::isinf(v) && floating) return;
    // 2^63 itself is past int64's greatest value, which no double holds exactly.
    overflows = std::isnan(v) ? !floating : v < lo || v > hi || (t == kInt64 && v >= hi);
  }
  if (overflows)
    throw Error(fmt::format("value cannot be converted to type {} without overflow",
                            names[static_cast<int>(t)]));
}

} // namespace tj::fe
