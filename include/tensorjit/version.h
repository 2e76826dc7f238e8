// The version of the tensorjit library a program runs with.
#pragma once

namespace tj {

// "MAJOR.MINOR.PATCH" of the library loaded at run time (which may be newer
// than the headers a program was compiled with), e.g. "0.1.0".
const char* version();

} // namespace tj
