// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"), so one
// binary runs with and without an NVIDIA driver. Only what the runtime uses is
// declared here: the handful of types and entry points of cuda.h it needs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "tensorjit/device.h"

namespace tj::rt::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUevent = struct CUevent_st*;

// The entry points, resolved once. Names are the driver's exported symbols.
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemGetInfo)(size_t*, size_t*);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

// The loaded driver; throws a clear tj::Error when there is none.
const Driver& driver();
// Why the driver could not be loaded or initialized; empty when it was.
const std::string& unavailable_reason();

// Throws "CUDA driver error in <call>: <string> (<name>)" unless r is success.
void check(CUresult r, const char* call);
#define TJ_CU(call) ::tj::rt::cuda::check(::tj::rt::cuda::driver().call, #call)

// One device: its primary context, the stream every operation runs on, and
// what code generation and launch sizing need to know.
struct DeviceInfo {
  int index = 0;
  std::string name;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  int sm_major = 0, sm_minor = 0;
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int driver_version = 0;
};

// The device, its context made current on the calling thread.
const DeviceInfo& device(int index);

// Copies; host memory may be pageable. Device-to-host waits for the stream.
void copy_to_device(int dev, CUdeviceptr dst, const void* src, size_t n);
void copy_to_host(int dev, void* dst, CUdeviceptr src, size_t n);
void copy_on_device(int dev, CUdeviceptr dst, CUdeviceptr src, size_t n);
void synchronize(int dev);
// Waits for every device this process has used (and sets up none that it has not).
void synchronize_all();

// The caching device allocator: freed blocks are kept for reuse (the stream
// orders their later use after earlier work); on exhaustion the cache is
// released and the allocation retried before PyTorch's out-of-memory error.
CUdeviceptr allocate(int dev, size_t nbytes);
void release(int dev, CUdeviceptr p, size_t nbytes);
// Frees every cached block (tj::cuda::empty_cache).
void empty_cache();

} // namespace tj::rt::cuda
