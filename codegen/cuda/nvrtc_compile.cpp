// NVRTC compilation, with errors that show the compiler log and the numbered source.
#include "codegen/cuda/nvrtc_compile.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "tensorjit/error.h"

#ifdef TJ_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace tj::cudagen {

#ifdef TJ_HAVE_NVRTC

namespace {

void check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS)
    throw Error(fmt::format("NVRTC error in {}: {}", call, nvrtcGetErrorString(r)));
}

std::string numbered(const std::string& source) {
  std::istringstream in(source);
  std::string line, out;
  for (int n = 1; std::getline(in, line); ++n)
    out += fmt::format("{:4} | {}\n", n, line);
  return out;
}

} // namespace

bool nvrtc_available() { return true; }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return fmt::format("{}.{}", major, minor);
}

std::vector<int> supported_archs() {
  int n = 0;
  check(nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<size_t>(n));
  if (n) check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  std::sort(archs.begin(), archs.end());
  return archs;
}

Image compile(const std::string& source, const std::string& name, int arch, bool want_cubin) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int> archs = supported_archs();
  if (archs.empty()) throw Error("NVRTC supports no GPU architecture");
  const bool known = std::find(archs.begin(), archs.end(), arch) != archs.end();
  int target = arch;
  if (!known) {
    // The newest architecture NVRTC knows that the device can run (PTX is forward compatible).
    auto it = std::upper_bound(archs.begin(), archs.end(), arch);
    if (it == archs.begin())
      throw Error(fmt::format("NVRTC {} cannot compile for sm_{}: its oldest target is sm_{}",
                              nvrtc_version(), arch, archs.front()));
    target = *std::prev(it);
  }
  Image img;
  img.arch = target;
  img.cubin = want_cubin && known;
  std::string arch_opt =
      fmt::format("--gpu-architecture={}_{}", img.cubin ? "sm" : "compute", target);
  // No contraction of a*b+c into fma: results must match the CPU's to the bit.
  const char* opts[] = {arch_opt.c_str(), "--std=c++17", "--fmad=false",
                        "--device-as-default-execution-space"};

  nvrtcProgram prog;
  check(nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  struct Guard {
    nvrtcProgram* p;
    ~Guard() { nvrtcDestroyProgram(p); }
  } guard{&prog};
  nvrtcResult r = nvrtcCompileProgram(prog, int(std::size(opts)), opts);
  if (r != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size) nvrtcGetProgramLog(prog, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
    throw Error(fmt::format("NVRTC failed to compile kernel {} for {}_{} ({}):\n{}\n\nsource:\n{}",
                            name, img.cubin ? "sm" : "compute", target, nvrtcGetErrorString(r), log,
                            numbered(source)));
  }
  size_t size = 0;
  if (img.cubin) {
    check(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    img.data.resize(size);
    check(nvrtcGetCUBIN(prog, img.data.data()), "nvrtcGetCUBIN");
  } else {
    check(nvrtcGetPTXSize(prog, &size), "nvrtcGetPTXSize");
    img.data.resize(size);
    check(nvrtcGetPTX(prog, img.data.data()), "nvrtcGetPTX");
  }
  img.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return img;
}

#else // no NVRTC in this build

bool nvrtc_available() { return false; }
std::string nvrtc_version() { return {}; }
std::vector<int> supported_archs() { return {}; }
Image compile(const std::string&, const std::string& name, int, bool) {
  throw Error(fmt::format("cannot compile CUDA kernel {}: this build of tensorjit has no NVRTC "
                          "(configure with the CUDA toolkit present and TJ_CUDA=ON)",
                          name));
}

#endif

} // namespace tj::cudagen
