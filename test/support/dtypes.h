// The dtypes tests sweep, and their names as tests print them and as PyTorch's errors do.
#pragma once
#include <array>
#include <string>

#include "lib/frontend/promotion.h"
#include "tensorjit/tensorjit.h"

namespace tj::test {

constexpr std::array<DType, kNumDTypes> kDTypes = {kBool,  kUInt8,   kInt8,     kInt16,   kInt32,
                                                   kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

// "float32"
inline std::string dname(DType t) { return dtype_name(t).substr(6); }
// PyTorch's C++ type names, as in "not implemented for 'Float'".
inline std::string cpp_name(DType t) { return fe::cpp_type_name(t); }

} // namespace tj::test
