#include "runtime/lapack.h"

#include <fmt/format.h>

#include <cmath>
#include <complex>
// LAPACK's complex numbers as std::complex, whose layout they share.
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

#include <algorithm>
#include <limits>
#include <mutex>

#include "runtime/thread_pool.h"
#include "tensorjit/error.h"

// OpenBLAS's thread count, where LAPACK is OpenBLAS's (weak: absent with another LAPACK).
extern "C" {
__attribute__((weak)) void openblas_set_num_threads(int threads);
__attribute__((weak)) int openblas_get_num_threads();
}

namespace tj::rt::lapack {
namespace {

// While the pool factors batch entries in parallel, each entry's BLAS runs on its own thread:
// OpenBLAS's threads would otherwise contend with the pool's for the same cores (measured: a
// batch of 64 SVDs ran 2-3x slower than one thread looping over it). A single matrix keeps
// OpenBLAS's threads.
class SerialBlas {
public:
  explicit SerialBlas(bool active)
      : active_(active && openblas_set_num_threads && openblas_get_num_threads) {
    if (!active_) return;
    saved_ = openblas_get_num_threads();
    openblas_set_num_threads(1);
  }
  ~SerialBlas() {
    if (active_) openblas_set_num_threads(saved_);
  }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;

private:
  bool active_;
  int saved_ = 1;
};

// LAPACKE's functions by element type.
template <class T> struct Fn;
template <> struct Fn<float> {
  static constexpr auto getrf = &LAPACKE_sgetrf;
  static constexpr auto getrs = &LAPACKE_sgetrs;
  static constexpr auto potrf = &LAPACKE_spotrf;
  static constexpr auto geqrf = &LAPACKE_sgeqrf;
  static constexpr auto orgqr = &LAPACKE_sorgqr;
  static constexpr auto gesdd = &LAPACKE_sgesdd;
  static constexpr auto syevd = &LAPACKE_ssyevd;
  static constexpr auto geev = &LAPACKE_sgeev;
  static constexpr auto gelsy = &LAPACKE_sgelsy;
  static constexpr auto gels = &LAPACKE_sgels;
  static constexpr auto gelsd = &LAPACKE_sgelsd;
  static constexpr auto gelss = &LAPACKE_sgelss;
};
template <> struct Fn<double> {
  static constexpr auto getrf = &LAPACKE_dgetrf;
  static constexpr auto getrs = &LAPACKE_dgetrs;
  static constexpr auto potrf = &LAPACKE_dpotrf;
  static constexpr auto geqrf = &LAPACKE_dgeqrf;
  static constexpr auto orgqr = &LAPACKE_dorgqr;
  static constexpr auto gesdd = &LAPACKE_dgesdd;
  static constexpr auto syevd = &LAPACKE_dsyevd;
  static constexpr auto geev = &LAPACKE_dgeev;
  static constexpr auto gelsy = &LAPACKE_dgelsy;
  static constexpr auto gels = &LAPACKE_dgels;
  static constexpr auto gelsd = &LAPACKE_dgelsd;
  static constexpr auto gelss = &LAPACKE_dgelss;
};

template <> struct Fn<std::complex<float>> {
  static constexpr auto getrf = &LAPACKE_cgetrf;
  static constexpr auto getrs = &LAPACKE_cgetrs;
  static constexpr auto potrf = &LAPACKE_cpotrf;
  static constexpr auto geqrf = &LAPACKE_cgeqrf;
  static constexpr auto orgqr = &LAPACKE_cungqr;
  static constexpr auto gesdd = &LAPACKE_cgesdd;
  static constexpr auto syevd = &LAPACKE_cheevd;
  static constexpr auto geev = &LAPACKE_cgeev;
  static constexpr auto gelsy = &LAPACKE_cgelsy;
  static constexpr auto gels = &LAPACKE_cgels;
  static constexpr auto gelsd = &LAPACKE_cgelsd;
  static constexpr auto gelss = &LAPACKE_cgelss;
};
template <> struct Fn<std::complex<double>> {
  static constexpr auto getrf = &LAPACKE_zgetrf;
  static constexpr auto getrs = &LAPACKE_zgetrs;
  static constexpr auto potrf = &LAPACKE_zpotrf;
  static constexpr auto geqrf = &LAPACKE_zgeqrf;
  static constexpr auto orgqr = &LAPACKE_zungqr;
  static constexpr auto gesdd = &LAPACKE_zgesdd;
  static constexpr auto syevd = &LAPACKE_zheevd;
  static constexpr auto geev = &LAPACKE_zgeev;
  static constexpr auto gelsy = &LAPACKE_zgelsy;
  static constexpr auto gels = &LAPACKE_zgels;
  static constexpr auto gelsd = &LAPACKE_zgelsd;
  static constexpr auto gelss = &LAPACKE_zgelss;
};

// The real type of T's singular values and eigenvalues.
template <class T> struct RealOf { using type = T; };
template <class T> struct RealOf<std::complex<T>> { using type = T; };
template <class T> using Real = typename RealOf<T>::type;

constexpr int kCol = LAPACK_COL_MAJOR;
lapack_int ld(int64_t rows) { return static_cast<lapack_int>(std::max<int64_t>(1, rows)); }
lapack_int li(int64_t x) { return static_cast<lapack_int>(x); }

// LAPACKE checks inputs for NaNs and refuses them; LAPACK itself (and PyTorch, which calls it)
// lets NaNs flow into the results.
void no_nan_checks() {
  static std::once_flag once;
  std::call_once(once, [] { LAPACKE_set_nancheck(0); });
}

int64_t count_of(const Matrices& m) {
  int64_t c = 1;
  for (int64_t d : m.batch)
    c *= d;
  return c;
}

// Entry `e` of `m` into a column-major workspace with leading dim `ldw`.
template <class T> void load(const Matrices& m, int64_t e, T* w, int64_t ldw) {
  int64_t at = m.offset;
  for (size_t d = m.batch.size(); d-- > 0;) {
    at += (e % m.batch[d]) * m.batch_strides[d];
    e /= m.batch[d];
  }
  const T* base = static_cast<const T*>(m.data) + at;
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j)
      w[i + j * ldw] = base[i * m.row + j * m.col];
}

// A rows x cols column-major matrix (leading dim ldw) written row-major at `out`; returns the
// place after it.
template <class T> T* store(const T* w, int64_t ldw, int64_t rows, int64_t cols, T* out) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      *out++ = w[i + j * ldw];
  return out;
}

// Runs fn(entry, row of out) for every batch entry on the pool; the first failure, in entry
// order (the same whatever the threads).
template <class T, class F>
Failure each(const char* routine, int64_t count, void* out, int64_t out_row, F fn) {
  no_nan_checks();
  std::vector<lapack_int> infos(static_cast<size_t>(count), 0);
  SerialBlas serial(count > 1 && num_threads() > 1);
  parallel_for(count, 1, 1, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e)
      infos[static_cast<size_t>(e)] = fn(e, static_cast<T*>(out) + e * out_row);
  });
  for (int64_t e = 0; e < count; ++e)
    if (lapack_int info = infos[static_cast<size_t>(e)]; info != 0) {
      if (info < 0 && info != kNonFinite) // an argument LAPACK rejects: ours to fix
        throw Error(fmt::format("internal error: LAPACK's {} rejects argument {}", routine, -info));
      return {e, info};
    }
  return {};
}

template <class T> Failure lu_t(const Matrices& a, void* out, int64_t out_row) {
  const int64_t n = a.rows;
  return each<T>("getrf", count_of(a), out, out_row, [&](int64_t e, T* o) {
    std::vector<T> w(static_cast<size_t>(n * n));
    std::vector<lapack_int> piv(static_cast<size_t>(n));
    load(a, e, w.data(), n);
    lapack_int info = Fn<T>::getrf(kCol, li(n), li(n), w.data(), ld(n), piv.data());
    o = store(w.data(), n, n, n, o);
    for (int64_t i = 0; i < n; ++i)
      o[i] = static_cast<T>(piv[static_cast<size_t>(i)]);
    return std::min<lapack_int>(info, 0); // a zero pivot is a singular A's det, no error
  });
}

// A X = B through the LU of A (as PyTorch 1.13 solves, so that results agree to the bit); B the
// identity where b is null.
template <class T>
Failure solve_t(const Matrices& a, const Matrices* b, void* out, int64_t out_row) {
  const int64_t n = a.rows, k = b ? b->cols : n;
  return each<T>(b ? "getrf/getrs (solve)" : "getrf/getrs (inv)", count_of(a), out, out_row,
                 [&](int64_t e, T* o) {
                   std::vector<T> w(static_cast<size_t>(n * n)), x(static_cast<size_t>(n * k));
                   std::vector<lapack_int> piv(static_cast<size_t>(n));
                   load(a, e, w.data(), n);
                   if (b)
                     load(*b, e, x.data(), n);
                   else
                     for (int64_t i = 0; i < n; ++i)
                       x[static_cast<size_t>(i + i * n)] = 1;
                   lapack_int info = Fn<T>::getrf(kCol, li(n), li(n), w.data(), ld(n), piv.data());
                   if (info != 0) return info;
                   info = Fn<T>::getrs(kCol, 'N', li(n), li(k), w.data(), ld(n), piv.data(),
                                       x.data(), ld(n));
                   store(x.data(), n, n, k, o);
                   return info;
                 });
}

template <class T> Failure cholesky_t(const Matrices& a, bool upper, void* out, int64_t out_row) {
  const int64_t n = a.rows;
  return each<T>("potrf", count_of(a), out, out_row, [&](int64_t e, T* o) {
    std::vector<T> w(static_cast<size_t>(n * n));
    load(a, e, w.data(), n);
    lapack_int info = Fn<T>::potrf(kCol, upper ? 'U' : 'L', li(n), w.data(), ld(n));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        o[i * n + j] = (upper ? j >= i : j <= i) ? w[static_cast<size_t>(i + j * n)] : T(0);
    return info;
  });
}

template <class T> Failure qr_t(const Matrices& a, int mode, void* out, int64_t out_row) {
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  const int64_t qcols = mode == 1 ? m : k, rrows = mode == 1 ? m : k;
  return each<T>("geqrf/orgqr", count_of(a), out, out_row, [&](int64_t e, T* o) {
    // Room for a complete Q's m columns; orgqr reads only the first k.
    std::vector<T> w(static_cast<size_t>(m * std::max(n, m)));
    std::vector<T> tau(static_cast<size_t>(std::max<int64_t>(k, 1)));
    load(a, e, w.data(), m);
    lapack_int info = Fn<T>::geqrf(kCol, li(m), li(n), w.data(), ld(m), tau.data());
    if (info != 0) return info;
    T* r = o + (mode == 2 ? 0 : m * qcols);
    for (int64_t i = 0; i < rrows; ++i)
      for (int64_t j = 0; j < n; ++j)
        r[i * n + j] = j >= i ? w[static_cast<size_t>(i + j * m)] : T(0);
    if (mode == 2 || m == 0) return info;
    info = Fn<T>::orgqr(kCol, li(m), li(qcols), li(k), w.data(), ld(m), tau.data());
    store(w.data(), m, m, qcols, o);
    return info;
  });
}

template <class T>
Failure svd_t(const Matrices& a, bool full, bool vectors, void* out, int64_t out_row) {
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  const int64_t ucols = full ? m : k, vrows = full ? n : k;
  const char jobz = !vectors ? 'N' : full ? 'A' : 'S';
  return each<T>("gesdd", count_of(a), out, out_row, [&](int64_t e, T* o) {
    std::vector<T> w(static_cast<size_t>(m * n));
    std::vector<Real<T>> s(static_cast<size_t>(k));
    std::vector<T> u(static_cast<size_t>(vectors ? m * ucols : 1));
    std::vector<T> vt(static_cast<size_t>(vectors ? vrows * n : 1));
    load(a, e, w.data(), m);
    if (k == 0 && vectors && full) { // gesdd writes nothing; PyTorch's U and Vh are identities
      for (int64_t i = 0; i < m; ++i)
        u[static_cast<size_t>(i * (m + 1))] = 1;
      for (int64_t i = 0; i < n; ++i)
        vt[static_cast<size_t>(i * (n + 1))] = 1;
    }
    lapack_int info = Fn<T>::gesdd(kCol, jobz, li(m), li(n), w.data(), ld(m), s.data(), u.data(),
                                   ld(m), vt.data(), ld(vrows));
    if (info == -5) info = kNonFinite; // LAPACKE counts the layout as argument 1
    if (!vectors) {
      std::copy(s.begin(), s.end(), o);
      return info;
    }
    o = store(u.data(), m, m, ucols, o);
    o = std::copy(s.begin(), s.end(), o);
    store(vt.data(), vrows, vrows, n, o);
    return info;
  });
}

template <class T>
Failure eigh_t(const Matrices& a, bool upper, bool vectors, void* out, int64_t out_row) {
  const int64_t n = a.rows;
  return each<T>("syevd", count_of(a), out, out_row, [&](int64_t e, T* o) {
    std::vector<T> w(static_cast<size_t>(n * n));
    std::vector<Real<T>> values(static_cast<size_t>(n));
    load(a, e, w.data(), n);
    lapack_int info = Fn<T>::syevd(kCol, vectors ? 'V' : 'N', upper ? 'U' : 'L', li(n), w.data(),
                                   ld(n), values.data());
    std::copy(values.begin(), values.end(), o);
    if (vectors) store(w.data(), n, n, n, o + n);
    return info;
  });
}

template <class T> struct IsComplex : std::false_type {};
template <class T> struct IsComplex<std::complex<T>> : std::true_type {};

// Whether a workspace holds finite numbers only: geev takes a NaN or an infinity for an illegal
// argument (and says so on stderr), so PyTorch refuses them before, as this does.
template <class T> bool all_finite(const std::vector<T>& w) {
  return std::all_of(w.begin(), w.end(), [](const T& x) {
    if constexpr (IsComplex<T>::value)
      return std::isfinite(x.real()) && std::isfinite(x.imag());
    else
      return std::isfinite(x);
  });
}

// geev of complex matrices: the eigenvalues and eigenvectors come complex; their parts are
// written as numbers of T, as the real routine's are.
template <class T>
Failure complex_eig_t(const Matrices& a, bool vectors, void* out, int64_t out_row) {
  const int64_t n = a.rows;
  return each<T>("geev", count_of(a), out, out_row, [&](int64_t e, T* o) {
    std::vector<T> w(static_cast<size_t>(n * n)), vr(static_cast<size_t>(vectors ? n * n : 1));
    std::vector<T> values(static_cast<size_t>(n));
    load(a, e, w.data(), n);
    if (!all_finite(w)) return static_cast<lapack_int>(kNonFinite);
    T unused = 0;
    lapack_int info = Fn<T>::geev(kCol, 'N', vectors ? 'V' : 'N', li(n), w.data(), ld(n),
                                  values.data(), &unused, 1, vr.data(), ld(n));
    if (info != 0) return info;
    for (int64_t i = 0; i < n; ++i) {
      o[i] = values[static_cast<size_t>(i)].real();
      o[n + i] = values[static_cast<size_t>(i)].imag();
    }
    if (vectors)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const T v = vr[static_cast<size_t>(i + j * n)];
          o[2 * n + i * n + j] = v.real();
          o[2 * n + n * n + i * n + j] = v.imag();
        }
    return info;
  });
}

template <class T> Failure real_eig_t(const Matrices& a, bool vectors, void* out, int64_t out_row) {
  const int64_t n = a.rows;
  return each<T>("geev", count_of(a), out, out_row, [&](int64_t e, T* o) {
    std::vector<T> w(static_cast<size_t>(n * n)), vr(static_cast<size_t>(vectors ? n * n : 1));
    T* wr = o;
    T* wi = o + n;
    load(a, e, w.data(), n);
    if (!all_finite(w)) return static_cast<lapack_int>(kNonFinite);
    T unused = 0;
    lapack_int info = Fn<T>::geev(kCol, 'N', vectors ? 'V' : 'N', li(n), w.data(), ld(n), wr, wi,
                                  &unused, 1, vr.data(), ld(n));
    if (!vectors || info != 0) return info;
    // Column j of VR is a real eigenvector, or with j + 1 the parts of a conjugate pair's.
    T* re = o + 2 * n;
    T* im = re + n * n;
    for (int64_t j = 0; j < n; ++j) {
      const T* c = vr.data() + j * n;
      if (wi[j] != 0 && j + 1 < n) {
        const T* d = c + n;
        for (int64_t i = 0; i < n; ++i) {
          re[i * n + j] = re[i * n + j + 1] = c[i];
          im[i * n + j] = d[i];
          im[i * n + j + 1] = -d[i];
        }
        ++j;
      } else {
        for (int64_t i = 0; i < n; ++i) {
          re[i * n + j] = c[i];
          im[i * n + j] = 0;
        }
      }
    }
    return info;
  });
}

template <class T> Failure eig_t(const Matrices& a, bool vectors, void* out, int64_t out_row) {
  if constexpr (IsComplex<T>::value)
    return complex_eig_t<T>(a, vectors, out, out_row);
  else
    return real_eig_t<T>(a, vectors, out, out_row);
}

template <class T>
Failure lstsq_t(const Matrices& a, const Matrices& b, int driver, double rcond_in, void* out,
                int64_t out_row) {
  const int64_t m = a.rows, n = a.cols, k = b.cols, ldb = std::max(m, n), kmin = std::min(m, n);
  static const char* const names[] = {"gelsy", "gels", "gelsd", "gelss"};
  return each<T>(names[driver], count_of(a), out, out_row, [&](int64_t e, T* o) {
    std::vector<T> w(static_cast<size_t>(m * n)), x(static_cast<size_t>(ldb * k));
    std::vector<Real<T>> s(static_cast<size_t>(std::max<int64_t>(kmin, 1)));
    load(a, e, w.data(), m);
    load(b, e, x.data(), ldb);
    const auto rcond = static_cast<Real<T>>(rcond_in);
    lapack_int info = 0, rank = 0;
    switch (driver) {
    case 0: {
      std::vector<lapack_int> jpvt(static_cast<size_t>(std::max<int64_t>(n, 1)), 0);
      info = Fn<T>::gelsy(kCol, li(m), li(n), li(k), w.data(), ld(m), x.data(), ld(ldb),
                          jpvt.data(), rcond, &rank);
      break;
    }
    case 1:
      info = Fn<T>::gels(kCol, 'N', li(m), li(n), li(k), w.data(), ld(m), x.data(), ld(ldb));
      break;
    default:
      info = (driver == 2 ? Fn<T>::gelsd : Fn<T>::gelss)(kCol, li(m), li(n), li(k), w.data(), ld(m),
                                                         x.data(), ld(ldb), s.data(), rcond, &rank);
    }
    o = store(x.data(), ldb, n, k, o);
    if (driver != 1) *o++ = static_cast<T>(rank);
    if (driver >= 2) o = std::copy(s.begin(), s.begin() + kmin, o);
    if (driver >= 1 && m > n) // rows n.. of the result hold the residual's components
      for (int64_t j = 0; j < k; ++j) {
        Real<T> sum = 0;
        for (int64_t i = n; i < m; ++i)
          sum += std::norm(x[static_cast<size_t>(i + j * ldb)]); // |x|^2
        o[j] = sum;
      }
    return info;
  });
}

} // namespace

Matrices strided(const void* data, const std::vector<int64_t>& shape,
                 const std::vector<int64_t>& strides, int64_t offset) {
  const size_t r = shape.size();
  return {data,
          offset,
          {shape.begin(), shape.end() - 2},
          {strides.begin(), strides.end() - 2},
          shape[r - 2],
          shape[r - 1],
          strides[r - 2],
          strides[r - 1]};
}

namespace {
// Runs f with a value of the element type of `dtype`.
template <class F> Failure by_dtype(DType dtype, F f) {
  if (dtype == kComplex64) return f(std::complex<float>{});
  if (dtype == kComplex128) return f(std::complex<double>{});
  return dtype == kFloat64 ? f(double{}) : f(float{});
}
} // namespace

Failure lu(DType dtype, const Matrices& a, void* out, int64_t out_row) {
  return by_dtype(dtype, [&](auto t) { return lu_t<decltype(t)>(a, out, out_row); });
}
Failure solve(DType dtype, const Matrices& a, const Matrices& b, void* out, int64_t out_row) {
  return by_dtype(dtype, [&](auto t) { return solve_t<decltype(t)>(a, &b, out, out_row); });
}
Failure inv(DType dtype, const Matrices& a, void* out, int64_t out_row) {
  return by_dtype(dtype, [&](auto t) { return solve_t<decltype(t)>(a, nullptr, out, out_row); });
}
Failure cholesky(DType dtype, const Matrices& a, bool upper, void* out, int64_t out_row) {
  return by_dtype(dtype, [&](auto t) { return cholesky_t<decltype(t)>(a, upper, out, out_row); });
}
Failure qr(DType dtype, const Matrices& a, int mode, void* out, int64_t out_row) {
  return by_dtype(dtype, [&](auto t) { return qr_t<decltype(t)>(a, mode, out, out_row); });
}
Failure svd(DType dtype, const Matrices& a, bool full, bool vectors, void* out, int64_t out_row) {
  return by_dtype(dtype,
                  [&](auto t) { return svd_t<decltype(t)>(a, full, vectors, out, out_row); });
}
Failure eig(DType dtype, const Matrices& a, bool vectors, void* out, int64_t out_row) {
  return by_dtype(dtype, [&](auto t) { return eig_t<decltype(t)>(a, vectors, out, out_row); });
}

Failure eigh(DType dtype, const Matrices& a, bool upper, bool vectors, void* out, int64_t out_row) {
  return by_dtype(dtype,
                  [&](auto t) { return eigh_t<decltype(t)>(a, upper, vectors, out, out_row); });
}
Failure lstsq(DType dtype, const Matrices& a, const Matrices& b, int driver, double rcond,
              void* out, int64_t out_row) {
  return by_dtype(dtype,
                  [&](auto t) { return lstsq_t<decltype(t)>(a, b, driver, rcond, out, out_row); });
}

} // namespace tj::rt::lapack
