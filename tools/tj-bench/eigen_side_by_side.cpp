// tj-bench-eigen: tensorjit's products beside Eigen's on the same data and threads, in one
// process. Eigen is a header library whose kernels are chosen when it is compiled, so this
// program is built for the machine it runs on (-march=native) with OpenMP (Eigen's GEMM threads),
// apart from tj-bench, which runs anywhere. Rows: the products of tensorjit's GEMM targets,
// `y = x @ w.t()` as a linear layer computes it, and relu(x @ w.t() + b) against Eigen's product
// followed by its bias and ReLU pass over row blocks on as many threads.
#include <Eigen/Core>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <tensorjit/tensorjit.h>

namespace {

double median_ms(int reps, const std::function<void()>& fn) {
  fn(); // warm: kernels compiled, memory faulted in
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <typename T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One row: m x k times (n x k)^T in T, optionally then bias and ReLU.
template <typename T>
void row(int64_t m, int64_t k, int64_t n, bool relu, int reps, int threads,
         const std::string& what) {
  const tj::DType dt = std::is_same_v<T, double> ? tj::kFloat64 : tj::kFloat32;
  const auto opts = tj::TensorOptions().dtype(dt);
  tj::Tensor x = tj::randn({m, k}, opts), w = tj::randn({n, k}, opts), b = tj::randn({n}, opts);
  tj::eval({x, w, b});
  const double ours = median_ms(reps, [&] {
    tj::Tensor y = tj::matmul(x, w.t());
    (relu ? tj::relu(y + b) : y).eval();
  });
  Eigen::Map<const RowMajor<T>> X(x.data_ptr<T>(), m, k), W(w.data_ptr<T>(), n, k);
  Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> B(b.data_ptr<T>(), n);
  RowMajor<T> Y(m, n);
  const double eigen = median_ms(reps, [&] {
    Y.noalias() = X * W.transpose();
    if (!relu) return;
      // Eigen's coefficient-wise expressions run on one thread: row blocks on each.
#pragma omp parallel for num_threads(threads)
    for (int64_t i = 0; i < m; ++i)
      Y.row(i) = (Y.row(i) + B).cwiseMax(T(0));
  });
  // Wait for OpenMP's idle team to stop spinning before the next row's tensorjit timing.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double flops = 2.0 * double(m) * double(n) * double(k);
  fmt::print("{:<44} tensorjit {:9.3f} ms {:7.1f} GFLOP/s | Eigen{} {:9.3f} ms {:7.1f} GFLOP/s | "
             "{:.2f}x Eigen\n",
             fmt::format("{}x{}x{} {}{}", m, k, n, tj::short_dtype_name(dt), what), ours,
             flops / ours / 1e6, relu ? " then bias, relu" : "", eigen, flops / eigen / 1e6,
             eigen / ours);
}

} // namespace

int main(int argc, char** argv) {
  int reps = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      fmt::print(stderr, "usage: tj-bench-eigen [--reps R]\n\n"
                         "Times tensorjit's products beside Eigen's (its GEMM on OpenMP threads) "
                         "on the same data and threads, medians of R (default 7).\n");
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  const int threads = tj::config().num_threads > 0
                          ? tj::config().num_threads
                          : static_cast<int>(std::thread::hardware_concurrency());
  Eigen::setNbThreads(threads);
  omp_set_num_threads(threads);
  fmt::print("tensorjit on {} threads; Eigen {}.{}.{} on {} ({}); medians of {}\n", threads,
             EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, Eigen::nbThreads(),
             Eigen::SimdInstructionSetsInUse(), reps);
  row<float>(1024, 1024, 1024, false, reps, threads, "");
  row<float>(2048, 512, 2048, false, reps, threads, "");
  row<float>(128, 784, 512, false, reps, threads, " (the MLP's first layer)");
  row<float>(2048, 2048, 2048, false, reps, threads, "");
  row<double>(1024, 1024, 1024, false, reps, threads, "");
  row<float>(4096, 1024, 1024, true, reps, threads, " relu(x @ w.t() + b)");
  return 0;
}
