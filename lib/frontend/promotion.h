// PyTorch's result_type over tensors and wrapped Python-style scalars.
#pragma once
#include <initializer_list>
#include <string>
#include <utility>

#include "lib/frontend/graph_builders.h"
#include "lib/frontend/tensor_impl.h"
#include "tensorjit/tensor.h"

namespace tj::fe {

// An operand of an elementwise op: a tensor's node, or a scalar wrapped as a
// 0-d constant that takes part in promotion only by category.
struct Operand {
  NodePtr node;
  bool wrapped;
  Tensor tensor; // the tensor operand (undefined for a wrapped scalar)
  // The operand as a tensor: itself, or its scalar's constant.
  Tensor as_tensor() const { return tensor.defined() ? tensor : detail::wrap(node); }
};
Operand operand(const Tensor& t);
Operand operand(const Scalar& s);

DType result_type(std::initializer_list<Operand> ops);
// "Float", "Long", ...: PyTorch's C++ names used in "not implemented for" errors.
const char* cpp_type_name(DType t);
// "float", "unsigned char", "c10::Half", ...: the names caffe2::TypeMeta gives (GCC's spelling of
// the C++ types), which some of PyTorch's messages print.
const char* type_meta_name(DType t);
// "torch.FloatTensor", ...: the legacy type names some of PyTorch's messages use.
std::string legacy_type_name(DType t);

// The least and greatest finite values of a real dtype, as doubles (int64's as +-2^63).
std::pair<double, double> finite_range(DType t);

// PyTorch's checked conversion of a scalar to the dtype a kernel computes in (Scalar::to<T>, as
// fill_, clamp and an integer pow's exponent take theirs): throws "value cannot be converted to
// type uint8_t without overflow" where `s` lies outside t's finite range (infinities and NaN fit
// a float dtype; a negative integer fits uint8 down to -255, wrapping; anything fits bool).
void check_scalar_fits(const Scalar& s, DType t);

// The dtype a float reduction or product of `t` computes in: 16-bit floats in float32, as
// PyTorch's reductions do (the result is cast back); other dtypes their own.
inline DType float_accumulator(DType t) { return t == kFloat16 || t == kBFloat16 ? kFloat32 : t; }

} // namespace tj::fe
