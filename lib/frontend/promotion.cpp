// Type promotion: dimensioned tensors over 0-d tensors over wrapped scalars.
#include "lib/frontend/promotion.h"

#include <optional>

#include "lib/frontend/tensor_impl.h"

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

std::string legacy_type_name(DType t) {
  return std::string("torch.") + cpp_type_name(t) + "Tensor";
}

} // namespace tj::fe
