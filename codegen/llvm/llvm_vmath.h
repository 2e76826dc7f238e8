// Private to codegen/llvm: vector math routines of the project that kernels call in place of
// libmvec's where ours are faster at no loss of accuracy.
#pragma once
#include <string_view>
#include <vector>

namespace tj::llvmjit::detail {

struct VmathRoutine {
  const char* name; // the symbol kernels call
  void* address;
};

// The routines this build provides (none off x86-64). A kernel may call one only where the host
// has its instruction set: see vmath_variant.
const std::vector<VmathRoutine>& vmath_routines();

// Our vector variant of libm's `scalar` (e.g. "expf") for vector-function-ABI ISA letter `isa`
// ('e': AVX-512) and `lanes` lanes, or nullptr when libmvec's is used.
const char* vmath_variant(std::string_view scalar, char isa, unsigned lanes);

} // namespace tj::llvmjit::detail
