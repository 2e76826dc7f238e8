// The library's version, from the project's version in CMakeLists.txt.
#include "tensorjit/version.h"

#ifndef TJ_VERSION_STRING
#error "the build defines TJ_VERSION_STRING (CMakeLists.txt)"
#endif

namespace tj {

const char* version() { return TJ_VERSION_STRING; }

} // namespace tj
