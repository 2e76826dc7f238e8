// Private to codegen/llvm: vector math routines of the project that kernels use in place of
// libmvec's where ours are faster at no loss of accuracy.
#pragma once
#include <string_view>

namespace llvm {
class Function;
class Module;
} // namespace llvm

namespace tj::llvmjit::detail {

// Our vector variant of libm's `scalar` (e.g. "expf") for vector-function-ABI ISA letter `isa`
// ('e': AVX-512) and `lanes` lanes, or nullptr when libmvec's is used. Kernels declare it; the
// vectorizer calls it.
const char* vmath_variant(std::string_view scalar, char isa, unsigned lanes);

// The attribute by which a libm function's declaration, and each of its narrower vector
// variants, names its widest variant on this CPU.
inline constexpr const char* kWidestVariantAttr = "tj-widest-variant";

// Replaces every call to a declaration that names a widest variant with a call to that variant
// (arguments repeated to fill its lanes, the result's first lanes kept), so that one routine
// computes a function everywhere in a kernel: in the vector loop, its vector epilogue and the
// scalar remainder alike. The math libraries' routines of different widths may differ in the
// last bit, which made a value depend on its position in a row (x[5:42].exp() against
// x.exp()[5:42]). Run after the loop vectorizer, before define_vmath.
void call_widest_variants(llvm::Module& m);

// Gives `f`, a declaration of one of our variants, its body, with internal linkage and always
// inline; false (nothing changed) for any other function.
bool define_vmath(llvm::Function& f);

} // namespace tj::llvmjit::detail
