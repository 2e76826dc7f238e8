// Loading the CUDA driver, devices and streams, copies, and the caching device allocator.
#include "runtime/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "tensorjit/error.h"

namespace tj::rt::cuda {
namespace {

constexpr CUresult kSuccess = 0;
constexpr CUresult kOutOfMemory = 2;
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrMaxThreadsPerMultiprocessor = 39;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr unsigned kStreamNonBlocking = 1;

struct Loaded {
  Driver api{};
  std::string error; // empty when loaded and initialized
};

template <typename F> bool resolve(void* lib, const char* name, F& fn, std::string& error) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn && error.empty()) error = fmt::format("libcuda.so.1 has no symbol {}", name);
  return fn != nullptr;
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.error = "no NVIDIA driver was found (libcuda.so.1 could not be loaded)";
    return l;
  }
  Driver& d = l.api;
  std::string& e = l.error;
  resolve(lib, "cuInit", d.cuInit, e);
  resolve(lib, "cuDriverGetVersion", d.cuDriverGetVersion, e);
  resolve(lib, "cuDeviceGetCount", d.cuDeviceGetCount, e);
  resolve(lib, "cuDeviceGet", d.cuDeviceGet, e);
  resolve(lib, "cuDeviceGetName", d.cuDeviceGetName, e);
  resolve(lib, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, e);
  resolve(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, e);
  resolve(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent, e);
  resolve(lib, "cuStreamCreate", d.cuStreamCreate, e);
  resolve(lib, "cuStreamSynchronize", d.cuStreamSynchronize, e);
  resolve(lib, "cuMemAlloc_v2", d.cuMemAlloc, e);
  resolve(lib, "cuMemFree_v2", d.cuMemFree, e);
  resolve(lib, "cuMemGetInfo_v2", d.cuMemGetInfo, e);
  resolve(lib, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync, e);
  resolve(lib, "cuMemcpyDtoHAsync_v2", d.cuMemcpyDtoHAsync, e);
  resolve(lib, "cuMemcpyDtoDAsync_v2", d.cuMemcpyDtoDAsync, e);
  resolve(lib, "cuMemsetD32Async", d.cuMemsetD32Async, e);
  resolve(lib, "cuModuleLoadData", d.cuModuleLoadData, e);
  resolve(lib, "cuModuleGetFunction", d.cuModuleGetFunction, e);
  resolve(lib, "cuLaunchKernel", d.cuLaunchKernel, e);
  resolve(lib, "cuEventCreate", d.cuEventCreate, e);
  resolve(lib, "cuEventRecord", d.cuEventRecord, e);
  resolve(lib, "cuEventSynchronize", d.cuEventSynchronize, e);
  resolve(lib, "cuEventElapsedTime", d.cuEventElapsedTime, e);
  resolve(lib, "cuEventDestroy_v2", d.cuEventDestroy, e);
  resolve(lib, "cuGetErrorName", d.cuGetErrorName, e);
  resolve(lib, "cuGetErrorString", d.cuGetErrorString, e);
  if (!e.empty()) return l;
  if (CUresult r = d.cuInit(0); r != kSuccess) {
    const char* s = "unknown error";
    d.cuGetErrorString(r, &s);
    e = fmt::format("the NVIDIA driver failed to initialize: {}", s);
    return l;
  }
  int count = 0;
  if (d.cuDeviceGetCount(&count) != kSuccess || count == 0) e = "no CUDA device was found";
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load(); // the library stays loaded for the process
  return l;
}

} // namespace

const std::string& unavailable_reason() { return loaded().error; }

const Driver& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw Error("CUDA is not available: " + l.error);
  return l.api;
}

void check(CUresult r, const char* call) {
  if (r == kSuccess) return;
  const Driver& d = loaded().api;
  const char* name = "?";
  const char* str = "unknown error";
  if (d.cuGetErrorName) d.cuGetErrorName(r, &name);
  if (d.cuGetErrorString) d.cuGetErrorString(r, &str);
  std::string c(call);
  c = c.substr(0, c.find('('));
  throw Error(fmt::format("CUDA driver error in {}: {} ({})", c, str, name));
}

namespace {

struct Devices {
  std::mutex mu;
  std::map<int, std::unique_ptr<DeviceInfo>> map;
};
Devices& devices() {
  static Devices* d = new Devices; // contexts live as long as the process
  return *d;
}

} // namespace

const DeviceInfo& device(int index) {
  const Driver& d = driver();
  auto& all = devices();
  std::lock_guard lock(all.mu);
  auto it = all.map.find(index);
  if (it == all.map.end()) {
    int count = 0;
    TJ_CU(cuDeviceGetCount(&count));
    if (index < 0 || index >= count) throw Error("CUDA error: invalid device ordinal");
    auto info = std::make_unique<DeviceInfo>();
    info->index = index;
    CUdevice dev;
    TJ_CU(cuDeviceGet(&dev, index));
    char name[256] = {};
    TJ_CU(cuDeviceGetName(name, sizeof(name), dev));
    info->name = name;
    TJ_CU(cuDeviceGetAttribute(&info->sm_major, kAttrComputeCapabilityMajor, dev));
    TJ_CU(cuDeviceGetAttribute(&info->sm_minor, kAttrComputeCapabilityMinor, dev));
    TJ_CU(cuDeviceGetAttribute(&info->sm_count, kAttrMultiprocessorCount, dev));
    TJ_CU(cuDeviceGetAttribute(&info->max_threads_per_sm, kAttrMaxThreadsPerMultiprocessor, dev));
    TJ_CU(cuDriverGetVersion(&info->driver_version));
    TJ_CU(cuDevicePrimaryCtxRetain(&info->ctx, dev));
    TJ_CU(cuCtxSetCurrent(info->ctx));
    TJ_CU(cuStreamCreate(&info->stream, kStreamNonBlocking));
    it = all.map.emplace(index, std::move(info)).first;
  }
  check(d.cuCtxSetCurrent(it->second->ctx), "cuCtxSetCurrent");
  return *it->second;
}

void copy_to_device(int dev, CUdeviceptr dst, const void* src, size_t n) {
  if (n == 0) return;
  const DeviceInfo& info = device(dev);
  TJ_CU(cuMemcpyHtoDAsync(dst, src, n, info.stream));
  // The source may be pageable memory that the caller frees right after.
  TJ_CU(cuStreamSynchronize(info.stream));
}

void copy_to_host(int dev, void* dst, CUdeviceptr src, size_t n) {
  if (n == 0) return;
  const DeviceInfo& info = device(dev);
  TJ_CU(cuMemcpyDtoHAsync(dst, src, n, info.stream));
  TJ_CU(cuStreamSynchronize(info.stream));
}

void copy_on_device(int dev, CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (n == 0) return;
  TJ_CU(cuMemcpyDtoDAsync(dst, src, n, device(dev).stream));
}

void synchronize(int dev) { TJ_CU(cuStreamSynchronize(device(dev).stream)); }

void synchronize_all() {
  std::vector<int> used;
  {
    auto& all = devices();
    std::lock_guard lock(all.mu);
    for (const auto& [index, info] : all.map)
      used.push_back(index);
  }
  for (int d : used)
    synchronize(d);
}

// ---- the caching allocator ---------------------------------------------------------------------

namespace {

// Small blocks are rounded to 512 bytes, large ones to 2 MiB, so that freed
// blocks fit later requests of similar size.
size_t round_size(size_t n) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20;
  if (n < (size_t{1} << 20)) return std::max(kSmall, (n + kSmall - 1) / kSmall * kSmall);
  return (n + kLarge - 1) / kLarge * kLarge;
}

struct Pool {
  std::mutex mu;
  std::map<int, std::multimap<size_t, CUdeviceptr>> free; // per device: size -> block
};
Pool& pool() {
  static Pool* p = new Pool; // device memory is reclaimed by the driver at exit
  return *p;
}

void free_cached(int dev, std::multimap<size_t, CUdeviceptr>& blocks) {
  device(dev);
  for (auto& [size, p] : blocks)
    driver().cuMemFree(p);
  blocks.clear();
}

} // namespace

CUdeviceptr allocate(int dev, size_t nbytes) {
  size_t size = round_size(nbytes);
  auto& p = pool();
  {
    std::lock_guard lock(p.mu);
    auto& blocks = p.free[dev];
    // Large blocks are reused only for requests of the same rounded size.
    auto it = blocks.find(size);
    if (it != blocks.end()) {
      CUdeviceptr ptr = it->second;
      blocks.erase(it);
      return ptr;
    }
  }
  device(dev);
  CUdeviceptr ptr = 0;
  CUresult r = driver().cuMemAlloc(&ptr, size);
  if (r == kOutOfMemory) {
    {
      std::lock_guard lock(p.mu);
      free_cached(dev, p.free[dev]);
    }
    r = driver().cuMemAlloc(&ptr, size);
    if (r == kOutOfMemory) {
      size_t free_b = 0, total_b = 0;
      driver().cuMemGetInfo(&free_b, &total_b);
      constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
      throw Error(
          fmt::format("CUDA out of memory. Tried to allocate {:.2f} GiB (GPU {}; {:.2f} GiB "
                      "total capacity; {:.2f} GiB free)",
                      double(size) / GiB, dev, double(total_b) / GiB, double(free_b) / GiB));
    }
  }
  check(r, "cuMemAlloc");
  return ptr;
}

void release(int dev, CUdeviceptr ptr, size_t nbytes) {
  auto& p = pool();
  std::lock_guard lock(p.mu);
  p.free[dev].emplace(round_size(nbytes), ptr);
}

void empty_cache() {
  auto& p = pool();
  std::lock_guard lock(p.mu);
  for (auto& [dev, blocks] : p.free)
    free_cached(dev, blocks);
}

} // namespace tj::rt::cuda
