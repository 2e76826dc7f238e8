// Loading cuBLAS and calling its strided batched GEMM.
#include "runtime/cuda_blas.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "tensorjit/error.h"

namespace tj::rt::cuda {
namespace {

using Handle = struct cublasContext*;
using Status = int;
constexpr int kOpN = 0, kOpT = 1; // cublasOperation_t

struct Blas {
  Status (*create)(Handle*) = nullptr;
  Status (*set_stream)(Handle, CUstream) = nullptr;
  Status (*sgemm)(Handle, int, int, int, int, int, const float*, const float*, int, long long,
                  const float*, int, long long, const float*, float*, int, long long,
                  int) = nullptr;
  Status (*dgemm)(Handle, int, int, int, int, int, const double*, const double*, int, long long,
                  const double*, int, long long, const double*, double*, int, long long,
                  int) = nullptr;
  const char* (*status_string)(Status) = nullptr;
};

const Blas* load() {
  void* lib = nullptr;
  for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"})
    if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  if (!lib) return nullptr;
  static Blas b;
  b.create = reinterpret_cast<decltype(b.create)>(dlsym(lib, "cublasCreate_v2"));
  b.set_stream = reinterpret_cast<decltype(b.set_stream)>(dlsym(lib, "cublasSetStream_v2"));
  b.sgemm = reinterpret_cast<decltype(b.sgemm)>(dlsym(lib, "cublasSgemmStridedBatched"));
  b.dgemm = reinterpret_cast<decltype(b.dgemm)>(dlsym(lib, "cublasDgemmStridedBatched"));
  b.status_string =
      reinterpret_cast<decltype(b.status_string)>(dlsym(lib, "cublasGetStatusString"));
  if (!b.create || !b.set_stream || !b.sgemm || !b.dgemm) return nullptr;
  return &b;
}

const Blas* blas() {
  static const Blas* b = load();
  return b;
}

void blas_check(Status s, const char* call) {
  if (s == 0) return;
  const char* str = blas()->status_string ? blas()->status_string(s) : "unknown status";
  throw Error(fmt::format("cuBLAS error in {}: {} ({})", call, str, s));
}

// One handle per device, bound to the device's stream.
Handle handle(int dev) {
  static std::mutex mu;
  static std::map<int, Handle> handles;
  const DeviceInfo& info = device(dev);
  std::lock_guard lock(mu);
  auto it = handles.find(dev);
  if (it == handles.end()) {
    Handle h = nullptr;
    blas_check(blas()->create(&h), "cublasCreate");
    blas_check(blas()->set_stream(h, info.stream), "cublasSetStream");
    it = handles.emplace(dev, h).first;
  }
  return it->second;
}

template <typename T> T* at(CUdeviceptr base, int64_t offset) {
  return reinterpret_cast<T*>(base + CUdeviceptr(offset) * sizeof(T));
}

// One gemmStridedBatched call of the function `fn` (the float or the double one).
template <typename T, typename Fn>
void strided_batched(Fn fn, const char* name, Handle h, const GemmCall& g, CUdeviceptr a,
                     CUdeviceptr b, CUdeviceptr c) {
  const T one = 1, zero = 0;
  blas_check(fn(h, g.transa ? kOpT : kOpN, g.transb ? kOpT : kOpN, int(g.m), int(g.n), int(g.k),
                &one, at<const T>(a, g.offset_a), int(g.lda), g.stride_a,
                at<const T>(b, g.offset_b), int(g.ldb), g.stride_b, &zero, at<T>(c, g.offset_c),
                int(g.ldc), g.stride_c, int(g.batch)),
             name);
}

} // namespace

bool blas_available() { return unavailable_reason().empty() && blas() != nullptr; }

void gemm(int dev, DType t, const GemmCall& g, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) {
  if (!blas()) throw Error("cuBLAS is not available (libcublas.so could not be loaded)");
  if (t == kFloat32)
    strided_batched<float>(blas()->sgemm, "cublasSgemmStridedBatched", handle(dev), g, a, b, c);
  else if (t == kFloat64)
    strided_batched<double>(blas()->dgemm, "cublasDgemmStridedBatched", handle(dev), g, a, b, c);
  else
    throw Error(fmt::format("internal error: cuBLAS GEMM on {}", dtype_name(t)));
}

} // namespace tj::rt::cuda
