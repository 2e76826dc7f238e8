// NVRTC: CUDA C++ source to CUBIN or PTX, without a GPU.
#pragma once
#include <string>
#include <vector>

namespace tj::cudagen {

struct Image {
  std::string data;   // CUBIN, or PTX text
  bool cubin = false; // false: PTX, for the driver to compile
  int arch = 0;       // the SM it was compiled for, e.g. 90
  double compile_ms = 0;
};

// Whether this build has NVRTC (linked from the CUDA toolkit when CMake found it).
bool nvrtc_available();
// "13.0"; empty without NVRTC.
std::string nvrtc_version();
// The SM architectures NVRTC can target, ascending.
std::vector<int> supported_archs();

// Compiles `source` (named `name` in messages) for compute capability `arch`
// (major * 10 + minor): CUBIN when NVRTC knows that SM and `want_cubin`,
// else PTX for the newest architecture it knows that is not newer. A
// compile error throws tj::Error with the log and the numbered source.
Image compile(const std::string& source, const std::string& name, int arch, bool want_cubin);

} // namespace tj::cudagen
