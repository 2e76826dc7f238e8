// Loading cuBLAS and calling its strided batched GEMM.
#include "cuda_blas.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "tensorjit/error.h"

namespace tj::rt::cuda {
namespace {

using Handle = struct cublasContext*;
using Status = int;
constexpr int kOpN = 0;

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

} // namespace

bool blas_available() { return unavailable_reason().empty() && blas() != nullptr; }

void gemm_batched(int dev, DType t, int64_t batch, int64_t n, int64_t m, int64_t k, CUdeviceptr a,
                  CUdeviceptr b, CUdeviceptr c) {
  if (!blas()) throw Error("cuBLAS is not available (libcublas.so could not be loaded)");
  Handle h = handle(dev);
  // Row-major C = A B is column-major C^T = B^T A^T: B's buffer is the first operand.
  const int M = int(m), N = int(n), K = int(k), batches = int(batch);
  if (t == kFloat32) {
    const float one = 1, zero = 0;
    blas_check(blas()->sgemm(h, kOpN, kOpN, M, N, K, &one, reinterpret_cast<const float*>(b), M,
                             k * m, reinterpret_cast<const float*>(a), K, n * k, &zero,
                             reinterpret_cast<float*>(c), M, n * m, batches),
               "cublasSgemmStridedBatched");
  } else if (t == kFloat64) {
    const double one = 1, zero = 0;
    blas_check(blas()->dgemm(h, kOpN, kOpN, M, N, K, &one, reinterpret_cast<const double*>(b), M,
                             k * m, reinterpret_cast<const double*>(a), K, n * k, &zero,
                             reinterpret_cast<double*>(c), M, n * m, batches),
               "cublasDgemmStridedBatched");
  } else {
    throw Error(fmt::format("internal error: cuBLAS GEMM on {}", dtype_name(t)));
  }
}

} // namespace tj::rt::cuda
