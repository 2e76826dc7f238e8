// Element types and PyTorch's type promotion.
#pragma once
#include <cstdint>
#include <string>

namespace tj {

// Ordered by PyTorch's promotion lattice within each category.
enum class DType : uint8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Complex64,  // a pair of float32: real, imaginary
  Complex128, // a pair of float64
};
inline constexpr int kNumDTypes = 12;

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kInt8 = DType::Int8;
inline constexpr DType kInt16 = DType::Int16;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kComplex64 = DType::Complex64;
inline constexpr DType kComplex128 = DType::Complex128;
inline constexpr DType kFloat = kFloat32;
inline constexpr DType kDouble = kFloat64;
inline constexpr DType kHalf = kFloat16;
inline constexpr DType kCFloat = kComplex64;
inline constexpr DType kCDouble = kComplex128;
inline constexpr DType kComplexFloat = kComplex64;
inline constexpr DType kComplexDouble = kComplex128;
inline constexpr DType kShort = kInt16;
inline constexpr DType kInt = kInt32;
inline constexpr DType kLong = kInt64;
inline constexpr DType kByte = kUInt8;
inline constexpr DType kChar = kInt8;

size_t itemsize(DType t);
bool is_floating_point(DType t);
bool is_integral(DType t, bool include_bool = false);
inline bool is_complex(DType t) { return t == DType::Complex64 || t == DType::Complex128; }
// The dtype of a complex dtype's parts (float32 for complex64); other dtypes are their own.
DType real_part_dtype(DType t);
// The complex dtype whose parts have dtype `t` (PyTorch's toComplexType): float64 gives
// complex128; other real dtypes complex64 (there is no complex32); complex dtypes are their own.
DType complex_dtype(DType t);
// "torch.float32", as PyTorch prints it.
std::string dtype_name(DType t);
// "float32": the name without the module, as the text forms write it.
std::string short_dtype_name(DType t);
// NumPy's type string for the host byte order, e.g. "<f4", "|b1".
std::string numpy_str(DType t);

// The default floating dtype (float32 unless changed).
DType default_dtype();
void set_default_dtype(DType t);

// PyTorch's torch.promote_types.
DType promote_types(DType a, DType b);

} // namespace tj
