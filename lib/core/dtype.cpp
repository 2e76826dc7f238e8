// DType properties and PyTorch's promotion table.
#include "tensorjit/dtype.h"

#include <atomic>

#include "tensorjit/error.h"

namespace tj {

size_t itemsize(DType t) {
  switch (t) {
  case kBool:
  case kUInt8:
  case kInt8:
    return 1;
  case kInt16:
  case kFloat16:
  case kBFloat16:
    return 2;
  case kInt32:
  case kFloat32:
    return 4;
  case kInt64:
  case kFloat64:
  case kComplex64:
    return 8;
  case kComplex128:
    return 16;
  }
  return 0;
}

bool is_floating_point(DType t) {
  return t == kFloat16 || t == kBFloat16 || t == kFloat32 || t == kFloat64;
}

bool is_integral(DType t, bool include_bool) {
  return (t == kBool && include_bool) || t == kUInt8 || t == kInt8 || t == kInt16 || t == kInt32 ||
         t == kInt64;
}

DType real_part_dtype(DType t) {
  return t == kComplex64 ? kFloat32 : t == kComplex128 ? kFloat64 : t;
}

DType complex_dtype(DType t) {
  if (is_complex(t)) return t;
  return t == kFloat64 ? kComplex128 : kComplex64;
}

std::string dtype_name(DType t) {
  static const char* names[] = {"torch.bool",    "torch.uint8",     "torch.int8",
                                "torch.int16",   "torch.int32",     "torch.int64",
                                "torch.float16", "torch.bfloat16",  "torch.float32",
                                "torch.float64", "torch.complex64", "torch.complex128"};
  static_assert(std::size(names) == kNumDTypes);
  return names[static_cast<int>(t)];
}

std::string short_dtype_name(DType t) { return dtype_name(t).substr(6); }

std::string numpy_str(DType t) {
  // NumPy has no bfloat16: it is exposed as raw 16-bit words.
  static const char* names[] = {"|b1", "|u1", "|i1", "<i2", "<i4", "<i8",
                                "<f2", "<V2", "<f4", "<f8", "<c8", "<c16"};
  static_assert(std::size(names) == kNumDTypes);
  return names[static_cast<int>(t)];
}

namespace {
std::atomic<DType> g_default_dtype{kFloat32};
}

DType default_dtype() { return g_default_dtype.load(); }

void set_default_dtype(DType t) {
  if (t != kFloat32 && t != kFloat64)
    throw Error("only floating-point types are supported as the default type");
  g_default_dtype = t;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // A complex dtype takes the other's precision where that is higher: complex64 with
  // float64 gives complex128.
  if (is_complex(a) || is_complex(b))
    return promote_types(real_part_dtype(a), real_part_dtype(b)) == kFloat64 ? kComplex128
                                                                             : kComplex64;
  // PyTorch's table, rows and columns in DType order (b1 u1 i1 i2 i4 i8 f2 bf f4 f8).
  using D = DType;
  constexpr D b1 = D::Bool, u1 = D::UInt8, i1 = D::Int8, i2 = D::Int16, i4 = D::Int32,
              i8 = D::Int64, f2 = D::Float16, bf = D::BFloat16, f4 = D::Float32, f8 = D::Float64;
  static constexpr D table[10][10] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

} // namespace tj
