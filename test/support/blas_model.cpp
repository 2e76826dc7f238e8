#include "test/support/blas_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace tj::test {
namespace {

// The element's index in its memory, checked against the memory's length.
size_t checked(int64_t index, size_t len, const char* what) {
  if (index < 0 || static_cast<size_t>(index) >= len)
    throw std::logic_error(
        fmt::format("cuBLAS model: {} element {} outside memory of {}", what, index, len));
  return static_cast<size_t>(index);
}

void check_args(const rt::GemmCall& g) {
  auto fail = [](const char* what) {
    throw std::logic_error(fmt::format("cuBLAS model: invalid argument: {}", what));
  };
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0) fail("negative size");
  if (g.lda < std::max<int64_t>(1, g.transa ? g.k : g.m)) fail("lda < max(1, transa ? k : m)");
  if (g.ldb < std::max<int64_t>(1, g.transb ? g.n : g.k)) fail("ldb < max(1, transb ? n : k)");
  if (g.ldc < std::max<int64_t>(1, g.m)) fail("ldc < max(1, m)");
}

} // namespace

template <typename T>
void gemm_model(const rt::GemmCall& g, const T* a, size_t a_len, const T* b, size_t b_len, T* c,
                size_t c_len) {
  check_args(g);
  for (int64_t p = 0; p < g.batch; ++p) {
    const int64_t oa = g.offset_a + p * g.stride_a, ob = g.offset_b + p * g.stride_b,
                  oc = g.offset_c + p * g.stride_c;
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        double acc = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          // op(A)[i, l] and op(B)[l, j], each stored column-major with its leading dim.
          const int64_t ia = oa + (g.transa ? l + i * g.lda : i + l * g.lda);
          const int64_t ib = ob + (g.transb ? j + l * g.ldb : l + j * g.ldb);
          acc += double(a[checked(ia, a_len, "A")]) * double(b[checked(ib, b_len, "B")]);
        }
        c[checked(oc + i + j * g.ldc, c_len, "C")] = static_cast<T>(acc);
      }
  }
}

template void gemm_model<float>(const rt::GemmCall&, const float*, size_t, const float*, size_t,
                                float*, size_t);
template void gemm_model<double>(const rt::GemmCall&, const double*, size_t, const double*, size_t,
                                 double*, size_t);

ModelBlas::ModelBlas()
    : scope({"model",
             [this](const rt::GemmCall& call, const ir::Node& a, const ir::Node& b,
                    const ir::Node& c) {
               ++calls;
               seen.push_back(call);
               auto run = [&](auto zero) {
                 using T = decltype(zero);
                 auto len = [](const ir::Node& t) { return t.storage->nbytes() / sizeof(T); };
                 gemm_model<T>(call, static_cast<const T*>(a.storage->data()), len(a),
                               static_cast<const T*>(b.storage->data()), len(b),
                               static_cast<T*>(c.storage->data()), len(c));
               };
               if (c.dtype == kFloat32)
                 run(float{});
               else
                 run(double{});
             },
             {},
             {},
             {}}) {}

} // namespace tj::test
