// Private to codegen/llvm: vector math routines of the project that kernels use in place of
// libmvec's where ours are faster at no loss of accuracy.
#pragma once
#include <string_view>

namespace llvm {
class Function;
}

namespace tj::llvmjit::detail {

// Our vector variant of libm's `scalar` (e.g. "expf") for vector-function-ABI ISA letter `isa`
// ('e': AVX-512) and `lanes` lanes, or nullptr when libmvec's is used. Kernels declare it; the
// vectorizer calls it.
const char* vmath_variant(std::string_view scalar, char isa, unsigned lanes);

// Gives `f`, a declaration of one of our variants, its body, with internal linkage and always
// inline; false (nothing changed) for any other function.
bool define_vmath(llvm::Function& f);

} // namespace tj::llvmjit::detail
