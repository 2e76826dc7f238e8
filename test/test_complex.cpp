// Complex dtypes: printing as PyTorch, promotion, arithmetic against std::complex, the parts,
// views and writes of complex memory, .npy files, eig/eigvals, the lowering to pairs of reals
// against the reference interpreter, and PyTorch's errors.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <complex>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "lib/frontend/tensor_impl.h"
#include "lib/interp/interpreter.h"
#include "lib/ir/scalar_semantics.h"

using namespace tj;
using Catch::Contains;
using cd = std::complex<double>;

namespace {

std::string printed(const auto& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

Tensor ctensor(const std::vector<cd>& v, DType t = kComplex128) {
  std::vector<double> re, im;
  for (const cd& z : v) {
    re.push_back(z.real());
    im.push_back(z.imag());
  }
  const DType part = t == kComplex64 ? kFloat32 : kFloat64;
  return complex(tensor(re, dtype(part)), tensor(im, dtype(part)));
}

// Values around every branch of the formulas: all quadrants, the axes, zero, large and tiny.
std::vector<cd> samples() {
  return {{1, 2}, {-2.5, 0.5},    {0, -1},           {-3, -4},   {0.25, 0}, {-1, 0},
          {0, 0}, {1e200, 1e200}, {1e-200, -3e-200}, {7, -1e-3}, {-0.5, 2}, {3, 0.75}};
}

void check_close(const Tensor& got, const std::vector<cd>& want, double tol) {
  std::vector<cd> g = got.to_vector<cd>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    if (g[i] == want[i]) continue; // infinities included
    const double scale = std::max(1.0, std::abs(want[i]));
    CHECK(std::abs(g[i].real() - want[i].real()) <= tol * scale);
    CHECK(std::abs(g[i].imag() - want[i].imag()) <= tol * scale);
  }
}

} // namespace

TEST_CASE("complex: printed as PyTorch prints", "[complex]") {
  CHECK(printed(complex(tensor({1.0f, 0.0f}), tensor({2.0f, -1.0f}))) ==
        "tensor([1.+2.j, 0.-1.j])");
  CHECK(printed(ctensor({{1, 2}, {0, -1}})) == "tensor([1.+2.j, 0.-1.j], dtype=torch.complex128)");
  CHECK(printed(ctensor({{1.5, -2.25}}, kComplex64)[0]) == "tensor(1.5000-2.2500j)");
  CHECK(printed(ctensor({{1, 2}, {0, -1}, {-2.5, 0.5}}, kComplex64)) ==
        "tensor([ 1.0000+2.0000j,  0.0000-1.0000j, -2.5000+0.5000j])");
  CHECK(printed(ctensor({{1e-5, 1}, {1, 1e5}}, kComplex64)) ==
        "tensor([1.0000e-05+1.0000e+00j, 1.0000e+00+1.0000e+05j])");
  // Each part has its own formatter: integral imaginary parts beside fractional real ones.
  CHECK(printed(ctensor({{0.5, 1}, {-1.25, -3}}, kComplex64)) ==
        "tensor([ 0.5000+1.j, -1.2500-3.j])");
  CHECK(printed(zeros({2, 2}, kComplex64)) ==
        "tensor([[0.+0.j, 0.+0.j],\n        [0.+0.j, 0.+0.j]])");
  CHECK(printed(zeros({0}, kComplex64)) == "tensor([], dtype=torch.complex64)");
  // Python's repr of the scalars item() returns.
  CHECK(ctensor({{0, -1}})[0].item().str() == "-1j");
  CHECK(ctensor({{1.5, 2}})[0].item().str() == "(1.5+2j)");
  CHECK(ctensor({{-0.0, 1}})[0].item().str() == "(-0+1j)");
  CHECK(ctensor({{1.5, 2}})[0].item<cd>() == cd(1.5, 2));
}

namespace {

// Tiny, moderate and huge parts of both signs, zeros of both signs included.
template <class T> std::vector<std::complex<T>> inverse_grid(double huge) {
  const std::vector<double> m = {0, 1e-30, 1e-10, 1e-4, 0.5, 1, 2, 1e4, huge};
  std::vector<std::complex<T>> out;
  for (double a : m)
    for (double b : m)
      for (double sa : {1.0, -1.0})
        for (double sb : {1.0, -1.0})
          out.emplace_back(T(sa * a), T(sb * b));
  return out;
}

// C's casin, cacos, casinh, catan and catanh (through std::, as PyTorch's CPU kernels) to 4
// ulps of each part, signs of zeros included.
template <class T> void check_inverse_functions(DType t, double huge) {
  using C = std::complex<T>;
  const std::vector<C> z = inverse_grid<T>(huge);
  std::vector<cd> zd(z.begin(), z.end());
  Tensor Z = ctensor(zd, t);
  const std::vector<std::pair<const char*, std::pair<Tensor, C (*)(const C&)>>> cases = {
      {"asin", {Z.asin(), [](const C& w) { return std::asin(w); }}},
      {"acos", {Z.acos(), [](const C& w) { return std::acos(w); }}},
      {"asinh", {Z.asinh(), [](const C& w) { return std::asinh(w); }}},
      {"atan", {Z.atan(), [](const C& w) { return std::atan(w); }}},
      {"atanh", {Z.atanh(), [](const C& w) { return std::atanh(w); }}}};
  auto close = [](T g, T w) {
    if (std::signbit(g) != std::signbit(w)) return false;
    if (g == w) return true;
    const T eps = std::numeric_limits<T>::epsilon();
    return std::abs(g - w) <= 4 * eps * std::max(std::abs(w), std::numeric_limits<T>::min());
  };
  for (const auto& [name, c] : cases) {
    const std::vector<C> got = c.first.template to_vector<C>();
    REQUIRE(got.size() == z.size());
    for (size_t i = 0; i < z.size(); ++i) {
      const C want = c.second(z[i]);
      INFO(name << "(" << z[i] << "): got " << got[i] << ", want " << want);
      CHECK(close(got[i].real(), want.real()));
      CHECK(close(got[i].imag(), want.imag()));
    }
  }
}

} // namespace

TEST_CASE("complex: inverse trigonometric functions to a few ulps of C's", "[complex]") {
  SECTION("complex128") { check_inverse_functions<double>(kComplex128, 1e200); }
  SECTION("complex64") { check_inverse_functions<float>(kComplex64, 1e20); }
}

TEST_CASE("complex: promotion with real dtypes and scalars", "[complex]") {
  Tensor c64 = zeros({2}, kComplex64), c128 = zeros({2}, kComplex128);
  CHECK((ones({2}) + c64).dtype() == kComplex64);
  CHECK((ones({2}, kFloat64) + c64).dtype() == kComplex128);
  CHECK((ones({2}, kInt64) * c64).dtype() == kComplex64);
  CHECK((ones({2}, kFloat16) - c64).dtype() == kComplex64);
  CHECK((c64 / c128).dtype() == kComplex128);
  const Scalar i(cd(0, 1));
  CHECK((ones({2}) * i).dtype() == kComplex64);
  CHECK((ones({2}, kFloat64) * i).dtype() == kComplex128);
  CHECK((arange(3) * i).dtype() == kComplex64);
  // A 0-d complex128 tensor keeps a float32 tensor's precision, as PyTorch's categories do.
  CHECK((ones({2}) + ctensor({{1, 1}}).reshape({})).dtype() == kComplex64);
  CHECK(promote_types(kFloat64, kComplex64) == kComplex128);
  CHECK(promote_types(kInt8, kComplex128) == kComplex128);
  CHECK(zeros({1}, kComplex64).to(kFloat64).dtype() == kFloat64);
  CHECK(ones({2}).to(kComplex64).to_vector<std::complex<float>>()[1] == std::complex<float>(1, 0));
}

TEST_CASE("complex: arithmetic and functions against std::complex", "[complex]") {
  const std::vector<cd> a = samples();
  std::vector<cd> b = a;
  std::rotate(b.begin(), b.begin() + 3, b.end());
  b[3] = {2, -1}; // no zero divisor in the quotients below
  for (DType t : {kComplex128, kComplex64}) {
    INFO(dtype_name(t));
    const double tol = t == kComplex128 ? 1e-14 : 3e-6;
    // float32 cannot hold the extremes: those samples are scaled into its range.
    std::vector<cd> x = a, y = b;
    if (t == kComplex64)
      for (auto* v : {&x, &y})
        for (cd& z : *v)
          if (std::abs(z) > 1e30 || (z != 0.0 && std::abs(z) < 1e-30)) z = z / std::abs(z) * 3.0;
    Tensor X = ctensor(x, t), Y = ctensor(y, t);
    auto each = [&](auto f) {
      std::vector<cd> out;
      for (size_t i = 0; i < x.size(); ++i)
        out.push_back(f(x[i], y[i]));
      return out;
    };
    check_close(X + Y, each([](cd p, cd q) { return p + q; }), tol);
    check_close(X - Y, each([](cd p, cd q) { return p - q; }), tol);
    check_close(X / Y, each([](cd p, cd q) { return p / q; }), tol);
    check_close(-X, each([](cd p, cd) { return -p; }), tol);
    check_close(X.conj(), each([](cd p, cd) { return std::conj(p); }), tol);
    check_close(X.sqrt(), each([](cd p, cd) { return std::sqrt(p); }), tol);
    // Products and exponentials of the moderate samples (the extremes overflow in both).
    std::vector<cd> m = {x[0], x[1], x[2], x[3], x[4], x[5], x[9], x[10], x[11]};
    Tensor M = ctensor(m, t);
    auto each_m = [&](auto f) {
      std::vector<cd> out;
      for (const cd& z : m)
        out.push_back(f(z));
      return out;
    };
    check_close(
        M * M.flip({0}),
        [&] {
          std::vector<cd> out;
          for (size_t i = 0; i < m.size(); ++i)
            out.push_back(m[i] * m[m.size() - 1 - i]);
          return out;
        }(),
        tol);
    check_close(M.exp(), each_m([](cd z) { return std::exp(z); }), tol);
    check_close(M.log(), each_m([](cd z) { return std::log(z); }), tol);
    check_close(M.sin(), each_m([](cd z) { return std::sin(z); }), tol);
    check_close(M.cos(), each_m([](cd z) { return std::cos(z); }), tol);
    check_close(M.reciprocal(), each_m([](cd z) { return 1.0 / z; }), tol);
    check_close(M.tan(), each_m([](cd z) { return std::tan(z); }), tol);
    check_close(M.tanh(), each_m([](cd z) { return std::tanh(z); }), tol);
    check_close(M.sinh(), each_m([](cd z) { return std::sinh(z); }), tol);
    check_close(M.cosh(), each_m([](cd z) { return std::cosh(z); }), tol);
    check_close(M.log2(), each_m([](cd z) { return std::log(z) / std::log(2.0); }), tol);
    check_close(M.log10(), each_m([](cd z) { return std::log10(z); }), tol);
    check_close(M.asin(), each_m([](cd z) { return std::asin(z); }), tol);
    check_close(M.acos(), each_m([](cd z) { return std::acos(z); }), tol);
    check_close(M.atan(), each_m([](cd z) { return std::atan(z); }), tol);
    check_close(M.asinh(), each_m([](cd z) { return std::asinh(z); }), tol);
    check_close(M.acosh(), each_m([](cd z) { return std::acosh(z); }), tol);
    check_close(M.atanh(), each_m([](cd z) { return std::atanh(z); }), tol);
    // Powers: the exponents computed otherwise (0.5, -1, 2, 3, ...), and exp(w log z).
    for (double e : {0.0, 1.0, 2.0, 3.0, -2.0, 0.5, -0.5, -1.0, 2.5, -1.75})
      check_close(M.pow(e), each_m([e](cd z) { return e == 0 ? cd(1) : std::pow(z, e); }), tol);
    const cd w(2, 1);
    check_close(M.pow(Scalar(w)), each_m([w](cd z) { return std::pow(z, w); }), tol);
    check_close(
        M.pow(M.flip({0})),
        [&] {
          std::vector<cd> out;
          for (size_t i = 0; i < m.size(); ++i)
            out.push_back(std::pow(m[i], m[m.size() - 1 - i]));
          return out;
        }(),
        tol);
    check_close(pow(2, M), each_m([](cd z) { return std::pow(cd(2), z); }), tol);
    // Real results: magnitudes without overflow, angles, parts.
    std::vector<double> mag = X.abs().to(kFloat64).to_vector<double>();
    std::vector<double> ang = X.angle().to(kFloat64).to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(mag[i] == Approx(std::abs(x[i])).epsilon(tol));
      CHECK(ang[i] == Approx(std::arg(x[i])).epsilon(tol).margin(tol));
    }
    CHECK(X.abs().dtype() == (t == kComplex64 ? kFloat32 : kFloat64));
    CHECK(equal(X.real(), complex(X.real(), X.imag()).real()));
    // Reductions and the product.
    cd sum = 0;
    for (const cd& z : m)
      sum += z;
    check_close(M.sum(), {sum}, tol);
    check_close(M.mean(), {sum / double(m.size())}, tol);
    check_close(M.reshape({3, 3}).sum(0),
                {m[0] + m[3] + m[6], m[1] + m[4] + m[7], m[2] + m[5] + m[8]}, tol);
    CHECK(equal(X == Y, X.eq(Y)));
    CHECK((X == X).all().item<bool>());
    CHECK(!(X != X).any().item<bool>());
  }
  // A complex product is four real products: against the broadcast product's sum.
  manual_seed(3);
  for (DType t : {kComplex64, kComplex128}) {
    const DType part = t == kComplex64 ? kFloat32 : kFloat64;
    Tensor A = complex(randn({2, 5, 7}, dtype(part)), randn({2, 5, 7}, dtype(part)));
    Tensor B = complex(randn({7, 3}, dtype(part)), randn({7, 3}, dtype(part)));
    Tensor want = (A.unsqueeze(-1) * B.unsqueeze(0).unsqueeze(1)).sum(2);
    Tensor got = A.matmul(B);
    CHECK(got.dtype() == t);
    CHECK(allclose(got, want, 1e-5, 1e-5));
    CHECK(allclose(A.mT().matmul(A), (A.mT().unsqueeze(-1) * A.unsqueeze(1)).sum(2), 1e-5, 1e-5));
  }
}

TEST_CASE("complex: powers with complex exponents keep the imaginary part", "[complex]") {
  // (1+1j)**(2+1j), (2-1j)**(2+1j), 2**(2+1j): PyTorch's -0.3097+0.8577j, 7.8897-0.9720j,
  // 3.0770+2.5558j.
  const cd w(2, 1);
  Tensor c = ctensor({{1, 1}, {2, -1}}, kComplex64);
  check_close(c.pow(Scalar(w)), {std::pow(cd(1, 1), w), std::pow(cd(2, -1), w)}, 1e-6);
  Tensor i = arange(1, 3).pow(Scalar(w));
  CHECK(i.dtype() == kComplex64);
  check_close(i, {1, std::pow(2.0, w)}, 1e-6);
  // A complex exponent without an imaginary part is the real one.
  check_close(c.pow(Scalar(cd(2, 0))), {{0, 2}, {3, -4}}, 1e-6);
  check_close(c.pow(0), {{1, 0}, {1, 0}}, 0);
  check_close(c.pow(ctensor({{0, 0}, {0, 0}}, kComplex64)), {{1, 0}, {1, 0}}, 0);
  check_close(ctensor({{0, 0}}).pow(ctensor({{2.5, 1}})), {{0, 0}}, 0);
  check_close(ones({2}).pow(c), {{1, 0}, {1, 0}}, 1e-6);
  // The magnitude of inf + nan j is inf, as hypot's.
  const double inf = std::numeric_limits<double>::infinity(),
               nan = std::numeric_limits<double>::quiet_NaN();
  for (DType t : {kComplex64, kComplex128})
    CHECK(equal(ctensor({{inf, nan}, {nan, -inf}}, t).abs(),
                full({2}, inf, dtype(real_part_dtype(t)))));
  // A product by a complex 1 is a complex multiplication: (inf + 0j) * 1 is inf + nanj.
  for (const Tensor& p : {ctensor({{inf, 0}}) * 1, ctensor({{inf, 0}}) * ctensor({{1, 0}}),
                          ctensor({{inf, 0}}) / 1}) {
    CHECK(p.real().item<double>() == inf);
    CHECK(std::isnan(p.imag().item<double>()));
  }
}

TEST_CASE("complex: square roots on the branch cut and near overflow", "[complex]") {
  for (DType t : {kComplex64, kComplex128}) {
    INFO(dtype_name(t));
    // The imaginary part takes the sign bit of z's: sqrt(-1 - 0j) is -1j.
    Tensor z = ctensor({{-1, -0.0}, {-1, 0}, {4, -0.0}}, t);
    std::vector<cd> got = z.sqrt().to_vector<cd>();
    CHECK(got[0] == cd(0, -1));
    CHECK(got[1] == cd(0, 1));
    CHECK(got[2] == cd(2, 0));
    CHECK(std::signbit(got[2].imag()));
    check_close(ctensor({{-4, -0.0}}, t).rsqrt(), {{0, 0.5}}, 1e-7);
  }
  // Neither |z| nor |Re z| + |z| overflows.
  const std::vector<cd> f = {{3e38, 3e38}, {-3e38, 1}, {3e38, 0}};
  check_close(ctensor(f, kComplex64).sqrt(), {std::sqrt(f[0]), std::sqrt(f[1]), std::sqrt(f[2])},
              1e-6);
  const std::vector<cd> d = {{1e308, 1e308}, {-1e308, 1}, {1.7e308, -1.7e308}};
  check_close(ctensor(d).sqrt(), {std::sqrt(d[0]), std::sqrt(d[1]), std::sqrt(d[2])}, 1e-15);
}

TEST_CASE("complex: add and sub with alpha, full and arange", "[complex]") {
  Tensor a = ctensor({{1, 2}, {-1, 0.5}}), b = ctensor({{0.5, -1}, {2, 3}});
  check_close(a.add(b, 2.5), {cd(1, 2) + 2.5 * cd(0.5, -1), cd(-1, 0.5) + 2.5 * cd(2, 3)}, 1e-15);
  const cd al(2, 1);
  check_close(a.sub(b, Scalar(al)), {cd(1, 2) - al * cd(0.5, -1), cd(-1, 0.5) - al * cd(2, 3)},
              1e-15);
  check_close(a.add(b, Scalar(al)), {cd(1, 2) + al * cd(0.5, -1), cd(-1, 0.5) + al * cd(2, 3)},
              1e-15);
  CHECK_THROWS_WITH(ones({2}).add(ones({2}), Scalar(al)),
                    "For non-complex input tensors, argument alpha must not be a complex number.");
  CHECK_THROWS_WITH(
      arange(2).add(arange(2), 2.5),
      "For integral input tensors, argument alpha must not be a floating point number.");
  Tensor f = full({2}, Scalar(cd(1, 2)));
  CHECK(f.dtype() == kComplex64);
  check_close(f, {{1, 2}, {1, 2}}, 0);
  CHECK_THROWS_WITH(arange(3, kComplex64), "\"arange_cpu\" not implemented for 'ComplexFloat'");
}

TEST_CASE("complex: products, storages and the grad_fn of statistics", "[complex]") {
  Tensor z = ctensor({{1, 1}, {2, -1}, {-1, 0.5}});
  check_close(z.prod(), {{-3.5, 0.5}}, 1e-15);
  check_close(z.reshape({3, 1}).expand({3, 2}).prod(0), {{-3.5, 0.5}, {-3.5, 0.5}}, 1e-15);
  check_close(z.prod(0, true), {{-3.5, 0.5}}, 1e-15);
  check_close(zeros({0}, kComplex64).prod(), {{1, 0}}, 0);
  Tensor r = z.detach().requires_grad_();
  CHECK(r.var().grad_fn()->name() == "VarBackward0");
  CHECK(r.std().grad_fn()->name() == "StdBackward0");
  CHECK(r.cumprod(0).grad_fn()->name() == "CumprodBackward0");
  CHECK(r.prod().grad_fn()->name() == "ProdBackward0");
  Tensor x = ones({2}).requires_grad_();
  Tensor ang = x.angle();
  CHECK(ang.grad_fn()->name() == "AngleBackward0");
  ang.sum().backward();
  CHECK(equal(x.grad(), zeros({2})));
  // A storage prints each element as a Python complex.
  CHECK(printed(ctensor({{1.5, 2}, {0, -1}}).storage()) ==
        " (1.5+2j)\n -1j\n[torch.ComplexDoubleStorage of size 2]");
}

TEST_CASE("complex: views, writes and memory", "[complex]") {
  Tensor z = ctensor({{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}}).reshape({2, 3});
  CHECK(z.t().is_contiguous() == false);
  check_close(z.t().reshape({6}), {{1, 2}, {7, 8}, {3, 4}, {9, 10}, {5, 6}, {11, 12}}, 0);
  // The conjugate transpose, mH and adjoint(); of a real matrix, its transpose.
  check_close(z.mH().reshape({6}), {{1, -2}, {7, -8}, {3, -4}, {9, -10}, {5, -6}, {11, -12}}, 0);
  check_close(z.unsqueeze(0).adjoint().reshape({6}),
              {{1, -2}, {7, -8}, {3, -4}, {9, -10}, {5, -6}, {11, -12}}, 0);
  Tensor r = arange(6, kFloat64).reshape({2, 3});
  CHECK(equal(r.mH(), r.mT()));
  CHECK_THROWS_WITH(r[0].mH(), "tensor.mH is only supported on matrices or batches of matrices. "
                               "Got 1-D tensor.");
  CHECK_THROWS_WITH(r[0].adjoint(), "tensor.adjoint() is only supported on matrices or batches "
                                    "of matrices. Got 1-D tensor.");
  check_close(z.slice(1, 0, 3, 2).reshape({4}), {{1, 2}, {5, 6}, {7, 8}, {11, 12}}, 0);
  check_close(z.select(0, 1).flip({0}), {{11, 12}, {9, 10}, {7, 8}}, 0);
  check_close(z[0].unsqueeze(0).expand({2, 3}).sum(0), {{2, 4}, {6, 8}, {10, 12}}, 0);
  check_close(index_select(z, 1, tensor(std::vector<int64_t>{2, 0})).reshape({4}),
              {{5, 6}, {1, 2}, {11, 12}, {7, 8}}, 0);
  // In-place writes through views of complex memory.
  Tensor w = z.clone();
  w.select(1, 1).add_(ctensor({{0, 1}, {0, -1}}));
  w[0][0] = Scalar(cd(-1, -1));
  check_close(w.reshape({6}), {{-1, -1}, {3, 5}, {5, 6}, {7, 8}, {9, 9}, {11, 12}}, 0);
  check_close(z.reshape({6}).slice(0, 0, 2), {{1, 2}, {3, 4}},
              0); // the clone's source is untouched
  // Memory handed out: interleaved parts, as std::complex.
  Tensor c = ctensor({{1.5, -2}, {0, 3}}, kComplex64);
  c.eval();
  CHECK(c.data_ptr<std::complex<float>>()[1] == std::complex<float>(0, 3));
  CHECK(c.numpy().dtype == "<c8");
  const auto path = std::filesystem::temp_directory_path() / "tj_complex_test.npy";
  for (DType t : {kComplex64, kComplex128}) {
    Tensor v = ctensor({{1.5, -2}, {0, 3}, {-1e-3, 7}}, t);
    save_npy(v, path.string());
    Tensor back = load_npy(path.string());
    CHECK(back.dtype() == t);
    CHECK(equal(back, v));
  }
  // A big-endian file, as NumPy writes '>c8': each part's bytes swapped on its own.
  {
    std::string header = "{'descr': '>c8', 'fortran_order': False, 'shape': (2,), }";
    header.append(128 - 10 - header.size() - 1, ' ');
    header += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size());
    bytes += '\0';
    bytes += header;
    for (float f : {1.5f, -2.0f, 0.0f, 3.0f}) {
      char b[4];
      std::memcpy(b, &f, 4);
      bytes.append({b[3], b[2], b[1], b[0]});
    }
    std::ofstream(path, std::ios::binary) << bytes;
    CHECK(equal(load_npy(path.string()), ctensor({{1.5, -2}, {0, 3}}, kComplex64)));
  }
  std::filesystem::remove(path);
}

TEST_CASE("complex: composites, random numbers and in-place writes", "[complex]") {
  Tensor z = ctensor({{1, 0.5}, {-2, 3}}, kComplex64);
  // var is the mean squared magnitude of the deviations; std its root; norms of magnitudes.
  CHECK(z.var().item<double>() == Approx(7.625));
  CHECK(z.std().item<double>() == Approx(std::sqrt(7.625)));
  CHECK(z.var().dtype() == kFloat32);
  CHECK(norm(z, 2, {0}, false).item<double>() == Approx(std::sqrt(1.25 + 13)));
  check_close(z.cumsum(0), {{1, 0.5}, {-1, 3.5}}, 1e-6);
  check_close(z.pow(2), {{0.75, 1}, {-5, -12}}, 1e-6);
  check_close(z.sigmoid(),
              {1.0 / (1.0 + std::exp(-cd(1, 0.5))), 1.0 / (1.0 + std::exp(-cd(-2, 3)))}, 1e-6);
  check_close(where(tensor({true, false}), z, zeros({2})), {{1, 0.5}, {0, 0}}, 0);
  check_close(cat({z, z.conj()}), {{1, 0.5}, {-2, 3}, {1, -0.5}, {-2, -3}}, 0);
  // Random complex numbers: both parts drawn, E|z|^2 = 1 for randn.
  manual_seed(5);
  Tensor r = randn({20000}, kComplex64);
  CHECK(r.dtype() == kComplex64);
  CHECK(std::abs((r.abs() * r.abs()).mean().item<double>() - 1.0) < 0.05);
  CHECK(std::abs(r.imag().mean().item<double>()) < 0.05);
  Tensor u = rand({1000}, kComplex128);
  CHECK(u.imag().min().item<double>() >= 0.0);
  CHECK(u.imag().max().item<double>() < 1.0);
  // In-place writes: complex into complex, real into complex; never complex into real.
  Tensor w = z.clone();
  w.mul_(z);
  check_close(w, {{0.75, 1}, {-5, -12}}, 1e-6);
  w.copy_(tensor({1.0f, 2.0f}));
  check_close(w, {{1, 0}, {2, 0}}, 0);
  w.fill_(Scalar(cd(1, 2)));
  check_close(w, {{1, 2}, {1, 2}}, 0);
  Tensor real = zeros({2});
  CHECK_THROWS_WITH(real.add_(z), "result type ComplexFloat can't be cast to the desired output "
                                  "type Float");
  CHECK_THROWS_WITH(z.clone().abs_(), "In-place abs is not supported for complex tensors.");
  // Explicit casts discard the imaginary part, as PyTorch's do; ops that take reals refuse.
  CHECK(equal(z.to(kFloat32), tensor({1.0f, -2.0f})));
  CHECK(equal(z.to(kInt64), tensor(std::vector<int64_t>{1, -2})));
  CHECK(equal(ctensor({{0, 0}, {0, 1}}).to(kBool), tensor({false, true})));
  CHECK_THROWS_WITH(nn::functional::softmax(z, 0), Contains("not implemented for 'ComplexFloat'"));
  CHECK_THROWS_WITH(z.clamp(0, 1), "clamp is not supported for complex types");
  CHECK_THROWS_WITH(z.sign(), Contains("torch.sign is not intended to support complex numbers"));
}

TEST_CASE("complex: the pairs of reals agree with the reference interpreter", "[complex][interp]") {
  manual_seed(7);
  Tensor x = randn({4, 5}, dtype(kFloat64)), y = randn({4, 5}, dtype(kFloat64));
  Tensor c = complex(x, y);
  Tensor e = (c * c.conj() / (c + 2) + c.exp() - c.log() + c.sqrt()).sum(1, true) * c.t().sum(0);
  Tensor r = e.abs() + e.real() - e.imag() + e.angle();
  Tensor f = c.tanh() + c.tan() * c.sinh() - c.cosh() + c.log2() * c.log10() + c.pow(c.flip({1})) +
             c.pow(2.5) + c.prod(1, true) * c.var() + c.asin() * c.acos() + c.atan() - c.asinh() +
             c.acosh() * c.atanh();
  for (const Tensor& t : {e, r, f}) {
    interp::HostArray ref = interp::evaluate(detail::node_of(t));
    Tensor got = t.is_complex() ? stack({t.real(), t.imag()}, -1).contiguous() : t;
    std::vector<double> g = got.to_vector<double>();
    REQUIRE(g.size() == ref.f.size());
    for (size_t i = 0; i < g.size(); ++i)
      CHECK(g[i] == Approx(ref.f[i]).epsilon(1e-12).margin(1e-12));
  }
}

TEST_CASE("complex: eig and eigvals", "[complex][linalg]") {
  // The rotation by a right angle: eigenvalues +-i, as PyTorch prints them.
  Tensor A = tensor({{0.0, -1.0}, {1.0, 0.0}}, dtype(kFloat64));
  CHECK(printed(linalg::eigvals(A)) == "tensor([0.+1.j, 0.-1.j], dtype=torch.complex128)");
  CHECK(printed(linalg::eig(A)) ==
        "torch.return_types.linalg_eig(\n"
        "eigenvalues=tensor([0.+1.j, 0.-1.j], dtype=torch.complex128),\n"
        "eigenvectors=tensor([[0.7071+0.0000j, 0.7071-0.0000j],\n"
        "        [0.0000-0.7071j, 0.0000+0.7071j]], dtype=torch.complex128))");
  // A V = V diag(L) for random batches, with real and complex-conjugate eigenvalues.
  manual_seed(11);
  for (DType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat64 ? 1e-10 : 2e-4;
    for (const Shape& batch : {Shape{}, Shape{3}, Shape{2, 2}}) {
      Shape s = batch;
      s.insert(s.end(), {5, 5});
      Tensor M = randn(s, dtype(dt));
      auto [L, V] = linalg::eig(M);
      CHECK(L.dtype() == complex_dtype(dt));
      Tensor Mc = M.to(complex_dtype(dt));
      CHECK(allclose(Mc.matmul(V), V * L.unsqueeze(-2), tol, tol));
      CHECK(allclose(linalg::eigvals(M), L, tol, tol));
      // Each eigenvector has norm 1.
      CHECK(allclose((V.abs() * V.abs()).sum(-2), ones(L.sizes(), dtype(dt)), tol, tol));
    }
  }
  CHECK_THROWS_WITH(linalg::eig(ones({2, 3})), Contains("must be batches of square matrices"));
}

TEST_CASE("complex: linalg of complex matrices through LAPACK's c and z routines",
          "[complex][linalg]") {
  manual_seed(13);
  auto mH = [](const Tensor& a) { return a.mT().conj(); };
  for (DType t : {kComplex64, kComplex128}) {
    const DType part = real_part_dtype(t);
    const double tol = t == kComplex128 ? 1e-10 : 2e-4;
    auto crand = [&](Shape s) { return complex(randn(s, dtype(part)), randn(s, dtype(part))); };
    auto near = [&](const Tensor& a, const Tensor& b) { return allclose(a, b, tol, tol); };
    for (const Shape& batch : {Shape{}, Shape{3}}) {
      INFO(dtype_name(t) << " batch of " << batch.size() << " dims");
      auto with = [&](std::initializer_list<int64_t> last) {
        Shape s = batch;
        s.insert(s.end(), last);
        return s;
      };
      Tensor A = crand(with({4, 4})) + eye(4, dtype(t)) * 4.0, B = crand(with({4, 3}));
      Tensor I = eye(4, dtype(t)).expand(A.sizes());
      CHECK(near(A.matmul(linalg::solve(A, B)), B));
      CHECK(near(A.matmul(linalg::inv(A)), I));
      // det against slogdet, and against the product of the eigenvalues of a Hermitian matrix.
      auto [sign, logabsdet] = linalg::slogdet(A);
      CHECK(logabsdet.dtype() == part);
      CHECK(near(linalg::det(A), sign * logabsdet.exp()));
      Tensor H = A.matmul(mH(A)); // Hermitian positive-definite
      auto [ev, V] = linalg::eigh(H);
      CHECK(ev.dtype() == part);
      CHECK(near(H.matmul(V), V * ev.to(t).unsqueeze(-2)));
      CHECK(near(mH(V).matmul(V), I));
      CHECK(allclose(linalg::det(H).real(), ev.prod(-1), tol, tol * 100));
      CHECK(near(linalg::eigvalsh(H), ev));
      Tensor L = linalg::cholesky(H), U = linalg::cholesky(H, true);
      CHECK(near(L.matmul(mH(L)), H));
      CHECK(near(mH(U).matmul(U), H));
      CHECK(L.triu(1).abs().max().item<double>() == 0.0);
      auto [Q, R] = linalg::qr(B);
      CHECK(near(Q.matmul(R), B));
      CHECK(near(mH(Q).matmul(Q), eye(3, dtype(t)).expand(with({3, 3}))));
      auto [Us, S, Vh] = linalg::svd(B, false);
      CHECK(S.dtype() == part);
      CHECK(near(Us.matmul(S.to(t).unsqueeze(-1) * Vh), B));
      CHECK(near(linalg::svdvals(B), S));
      // Norms of complex matrices are real: the magnitudes' norms, the singular values' sums.
      CHECK(near(linalg::matrix_norm(B), B.abs().pow(2).sum({-2, -1}).sqrt()));
      CHECK(near(linalg::matrix_norm(B, "nuc"), S.sum(-1)));
      CHECK(linalg::vector_norm(B).dtype() == part);
      // eig of a complex matrix, lstsq by each driver, pinv and the rank.
      auto [ew, EV] = linalg::eig(A);
      CHECK(ew.dtype() == t);
      CHECK(near(A.matmul(EV), EV * ew.unsqueeze(-2)));
      CHECK(near(linalg::eigvals(A), ew));
      Tensor tall = crand(with({6, 3})), rhs = crand(with({6, 2}));
      Tensor normal = linalg::solve(mH(tall).matmul(tall), mH(tall).matmul(rhs));
      for (const char* driver : {"gelsy", "gels", "gelsd", "gelss"}) {
        INFO(driver);
        linalg::LstsqResult r = linalg::lstsq(tall, rhs, std::string(driver));
        CHECK(near(r.solution, normal));
        if (std::string(driver) != "gels") CHECK(r.rank.dtype() == kInt64);
        if (std::string(driver) == "gelsd") {
          CHECK(r.singular_values.dtype() == part);
          CHECK(near(r.residuals, (tall.matmul(r.solution) - rhs).abs().pow(2).sum(-2)));
        }
      }
      Tensor P = linalg::pinv(tall);
      CHECK(near(P.matmul(tall), eye(3, dtype(t)).expand(with({3, 3}))));
      CHECK(near(linalg::pinv(H, /*hermitian=*/true), linalg::inv(H)));
      CHECK(linalg::matrix_rank(tall.matmul(mH(tall))).eq(3).all().item<bool>());
    }
  }
  // det of a complex matrix with exact entries.
  Tensor M = complex(tensor({{1.0, 2.0}, {3.0, 4.0}}, dtype(kFloat64)),
                     tensor({{0.0, 1.0}, {0.0, 0.0}}, dtype(kFloat64)));
  CHECK(std::abs(linalg::det(M).item<cd>() - cd(-2, -3)) < 1e-14);
}

TEST_CASE("complex: errors in PyTorch's words", "[complex][errors]") {
  Tensor c = zeros({2}, kComplex64);
  CHECK_THROWS_WITH(ones({2}).imag(),
                    "imag is not implemented for tensors with non-complex dtypes.");
  CHECK(equal(ones({2}).real(), ones({2})));
  CHECK_THROWS_WITH(
      complex(ones({2}, kInt64), ones({2}, kInt64)),
      "Expected both inputs to be Half, Float or Double tensors but got Long and Long");
  CHECK_THROWS_WITH(complex(ones({2}), ones({2}, kFloat64)),
                    "Expected object of scalar type Float but got scalar type Double for second "
                    "argument");
  CHECK_THROWS_WITH(c.lt(c), "\"lt_cpu\" not implemented for 'ComplexFloat'");
  // Constants (zeros) of shapes that do not broadcast: the op's dtype is refused first, as for
  // tensors in memory.
  CHECK_THROWS_WITH(zeros({3}, kComplex64) < zeros({4}, kComplex64),
                    "\"lt_cpu\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(c.floor(), "floor is not supported for complex inputs");
  CHECK_THROWS_WITH(c > c, "\"gt_cpu\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(c >= 0, "\"ge_cpu\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(maximum(c, c), "maximum not implemented for complex tensors.");
  CHECK_THROWS_WITH(minimum(c, c), "minimum not implemented for complex tensors.");
  CHECK_THROWS_WITH(c.remainder(c), "\"remainder_cpu\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(floor_divide(c, c), "\"div_floor_cpu\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(c.erf(), "\"erf_cpu\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(c.max(), "\"max_all\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(unique(c), "\"unique\" not implemented for 'ComplexFloat'");
  CHECK_THROWS_WITH(unique(c.to(kComplex128)), "\"unique\" not implemented for 'ComplexDouble'");
  // nonzero counts an element where either part is nonzero.
  CHECK(nonzero(complex(tensor({0.0, 0.0, 1.0}), tensor({0.0, 2.0, 0.0}))).str() ==
        "tensor([[1],\n        [2]])");
  // A complex element has no one real or integer value: reading one as such is a bug, refused.
  const std::complex<float> one{1, 2};
  CHECK_THROWS_WITH(ir::load_int(&one, kComplex64), Contains("internal error"));
  CHECK_THROWS_WITH(ir::load_float(&one, kComplex64), Contains("internal error"));
  CHECK_THROWS_WITH(linalg::inv(zeros({2, 2}, kComplex128)).eval(),
                    Contains("The diagonal element 1 is zero"));
}

namespace {

// The gradient of the real loss L = Re(sum(f(xs) * conj(w))) (w random, fixed) against central
// differences along each input element's real part and, for a complex input, its imaginary
// part: PyTorch's convention, grad = dL/dx + i dL/dy. Inputs are float64 or complex128.
void complex_gradcheck(const std::string& name,
                       const std::function<Tensor(const std::vector<Tensor>&)>& f,
                       std::vector<Tensor> inputs) {
  INFO("op: " << name);
  for (auto& x : inputs)
    x = x.detach().clone().requires_grad_();
  Tensor out = f(inputs);
  const Tensor w =
      out.is_complex() ? randn(out.sizes(), kComplex128) : randn(out.sizes(), kFloat64);
  auto loss = [&](const std::vector<Tensor>& xs) {
    Tensor y = f(xs);
    return y.is_complex() ? (y.to(kComplex128) * w.conj()).real().sum()
                          : (y.to(kFloat64) * w).sum();
  };
  std::vector<Tensor> g = autograd::grad({loss(inputs)}, inputs, {}, std::nullopt, false, true);
  const double h = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    const bool cx = x.is_complex();
    const std::vector<double> re = (cx ? x.real() : x).detach().to_vector<double>();
    const std::vector<double> im =
        cx ? x.imag().detach().to_vector<double>() : std::vector<double>();
    const std::vector<cd> got =
        g[i].defined() ? g[i].to(kComplex128).to_vector<cd>() : std::vector<cd>(re.size());
    for (size_t k = 0; k < re.size(); ++k) {
      auto at = [&](double dre, double dim) {
        std::vector<double> r = re, m = im;
        r[k] += dre;
        if (cx) m[k] += dim;
        std::vector<Tensor> ys = inputs;
        NoGradGuard no_grad;
        Tensor rt = tensor(r, x.sizes(), kFloat64);
        ys[i] = cx ? complex(rt, tensor(m, x.sizes(), kFloat64)) : rt;
        return loss(ys).item<double>();
      };
      const cd want((at(h, 0) - at(-h, 0)) / (2 * h), cx ? (at(0, h) - at(0, -h)) / (2 * h) : 0);
      INFO("input " << i << " element " << k << ": analytic " << got[k] << ", numeric " << want);
      CHECK(std::abs(got[k] - want) <= 1e-5 * (1 + std::abs(want)));
    }
  }
}

} // namespace

TEST_CASE("complex: gradients (dL/dx + i dL/dy) against central differences",
          "[complex][autograd][gradcheck]") {
  manual_seed(11);
  const auto C = kComplex128;
  using Xs = std::vector<Tensor>;
  Tensor z = randn({2, 3}, C), v = randn({2, 3}, C) + 2, r = randn({2, 3}, kFloat64);
  Tensor away = z + 1.5; // off the branch cut of log and sqrt, away from 0
  complex_gradcheck("mul", [](const Xs& x) { return x[0] * x[1]; }, {z, v});
  complex_gradcheck("div", [](const Xs& x) { return x[0] / x[1]; }, {z, v});
  complex_gradcheck("add, sub, neg", [](const Xs& x) { return -(x[0] + x[1]) - x[0] * 2; }, {z, v});
  complex_gradcheck("real times complex", [](const Xs& x) { return x[0] * x[1]; }, {r, z});
  complex_gradcheck("complex over real", [](const Xs& x) { return x[0] / (x[1] * x[1] + 1); },
                    {z, r});
  complex_gradcheck("exp", [](const Xs& x) { return x[0].exp(); }, {z});
  complex_gradcheck("log", [](const Xs& x) { return x[0].log(); }, {away});
  complex_gradcheck("sqrt", [](const Xs& x) { return x[0].sqrt(); }, {away});
  complex_gradcheck("rsqrt", [](const Xs& x) { return x[0].rsqrt(); }, {away});
  complex_gradcheck("sin, cos", [](const Xs& x) { return x[0].sin() * x[0].cos(); }, {z});
  complex_gradcheck("reciprocal", [](const Xs& x) { return x[0].reciprocal(); }, {v});
  complex_gradcheck("sigmoid", [](const Xs& x) { return x[0].sigmoid(); }, {z * 0.5});
  complex_gradcheck("pow", [](const Xs& x) { return x[0].pow(2) * x[0].square(); }, {z});
  complex_gradcheck("pow, real exponents", [](const Xs& x) { return x[0].pow(2.5) + x[0].pow(3); },
                    {away});
  complex_gradcheck(
      "pow, complex exponents",
      [](const Xs& x) { return x[0].pow(x[1]) + x[0].pow(Scalar(cd(2, 1))) + pow(2, x[1]); },
      {away, v * 0.5});
  complex_gradcheck("pow, real base", [](const Xs& x) { return x[0].pow(x[1]); },
                    {r.abs() + 0.5, v * 0.5});
  complex_gradcheck(
      "tanh, tan, sinh, cosh",
      [](const Xs& x) { return x[0].tanh() + x[0].tan() * 0.5 + x[0].sinh() - x[0].cosh() * 2; },
      {z * 0.5});
  complex_gradcheck("asin, acos, atan",
                    [](const Xs& x) { return x[0].asin() + x[0].acos() * 2 + x[0].atan() * 3; },
                    {z * 0.5});
  complex_gradcheck("asinh, acosh, atanh",
                    [](const Xs& x) { return x[0].asinh() + x[0].acosh() * 2 + x[0].atanh() * 3; },
                    {z * 0.5});
  complex_gradcheck("log2, log10", [](const Xs& x) { return x[0].log2() + x[0].log10() * 3; },
                    {away});
  complex_gradcheck("add, sub with alpha",
                    [](const Xs& x) {
                      return x[0].sub(x[1], Scalar(cd(2, 1))) + x[1].add(x[0], 0.5) +
                             x[0].add(x[2], Scalar(cd(-1, 3)));
                    },
                    {z, v, r});
  complex_gradcheck(
      "var, std", [](const Xs& x) { return x[0].var(std::vector<int64_t>{1}) + x[0].std(); }, {z});
  complex_gradcheck("prod, cumprod",
                    [](const Xs& x) { return x[0].prod(1) + x[0].cumprod(1).sum(0).prod(); }, {z});
  complex_gradcheck("abs (real result)", [](const Xs& x) { return x[0].abs(); }, {z});
  complex_gradcheck("angle (real result)", [](const Xs& x) { return x[0].angle(); }, {z});
  complex_gradcheck("real, imag", [](const Xs& x) { return x[0].real() * x[0].imag(); }, {z});
  complex_gradcheck("conj", [](const Xs& x) { return x[0].conj() * x[0]; }, {z});
  complex_gradcheck("complex of parts", [](const Xs& x) { return complex(x[0], x[1]).exp(); },
                    {r, r.flip(1)});
  complex_gradcheck("polar", [](const Xs& x) { return polar(x[0], x[1]); }, {r.abs() + 0.5, r});
  complex_gradcheck("sum, mean, views",
                    [](const Xs& x) { return x[0].t().sum(1) * x[0].mean() + x[0][1]; }, {z});
  complex_gradcheck("cat, where, cumsum",
                    [](const Xs& x) {
                      Tensor c = cat({x[0], x[1]}, 0).cumsum(1);
                      return where(c.real() > 0, c, c * 2);
                    },
                    {z, v});
  complex_gradcheck("matmul", [](const Xs& x) { return x[0].matmul(x[1].t()).matmul(x[0]); },
                    {z, v});
  // Casts between real and complex: the real part, and back.
  Tensor A = randn({2, 3, 3}, C) + eye(3, kComplex128) * 3, B = randn({2, 3, 2}, C);
  complex_gradcheck("linalg.inv", [](const Xs& x) { return linalg::inv(x[0]); }, {A});
  complex_gradcheck("linalg.solve", [](const Xs& x) { return linalg::solve(x[0], x[1]); }, {A, B});
  complex_gradcheck("linalg.det", [](const Xs& x) { return linalg::det(x[0]); }, {A});
  complex_gradcheck("linalg.slogdet",
                    [](const Xs& x) {
                      auto [sign, logabsdet] = linalg::slogdet(x[0]);
                      return sign * logabsdet;
                    },
                    {A});
  // Factorizations of Hermitian matrices X X^H + 3 I (their functions read one triangle).
  auto hermitian = [](const Tensor& X) {
    return X.matmul(X.mT().conj()) + eye(X.size(-1), kComplex128) * 3;
  };
  complex_gradcheck("linalg.cholesky",
                    [&](const Xs& x) { return linalg::cholesky(hermitian(x[0])); }, {A});
  complex_gradcheck("linalg.cholesky (upper)",
                    [&](const Xs& x) { return linalg::cholesky(hermitian(x[0]), true); }, {A});
  // Eigen- and singular vectors are determined up to a phase each: losses of them that do not
  // depend on it (their magnitudes, the projector U U^H).
  complex_gradcheck("linalg.eigh",
                    [&](const Xs& x) {
                      auto [L, V] = linalg::eigh(hermitian(x[0]));
                      return L.unsqueeze(-2) * V.abs();
                    },
                    {A});
  // eig: its values, and its vectors' magnitudes (no phase), of real and complex matrices.
  for (const Tensor& M : {A, randn({2, 3, 3}, kFloat64)}) {
    complex_gradcheck("linalg.eig",
                      [](const Xs& x) {
                        auto [L, V] = linalg::eig(x[0]);
                        return L.unsqueeze(-2) * V.abs();
                      },
                      {M});
    complex_gradcheck("linalg.eigvals", [](const Xs& x) { return linalg::eigvals(x[0]); }, {M});
  }
  Tensor W = randn({2, 4, 3}, C), H = randn({2, 3, 4}, C);
  for (const Tensor& M : {W, H, A})
    complex_gradcheck("linalg.qr",
                      [](const Xs& x) {
                        auto [Q, R] = linalg::qr(x[0]);
                        return cat({Q.reshape({2, -1}), R.reshape({2, -1}) * 2}, -1);
                      },
                      {M});
  for (const Tensor& M : {W, H, A})
    complex_gradcheck("linalg.svd",
                      [](const Xs& x) {
                        auto [U, S, Vh] = linalg::svd(x[0], false);
                        Tensor P = U.matmul(Vh); // the polar factor: no phase of its own
                        return P * S.sum(-1).unsqueeze(-1).unsqueeze(-1) + U.abs().sum();
                      },
                      {M});
  // pinv of wide, tall and square matrices, and cross: one op each, PyTorch's formulas.
  for (const Tensor& M : {W, H, A})
    complex_gradcheck("linalg.pinv", [](const Xs& x) { return linalg::pinv(x[0]); }, {M});
  complex_gradcheck("linalg.cross", [](const Xs& x) { return linalg::cross(x[0], x[1]); },
                    {randn({2, 3}, C), randn({1, 3}, C)});
  CHECK(linalg::pinv(A.detach().requires_grad_()).grad_fn()->name() == "LinalgPinvBackward0");
  CHECK(linalg::cross(A.detach().requires_grad_(), A).grad_fn()->name() == "LinalgCrossBackward0");
  complex_gradcheck("casts", [](const Xs& x) { return (x[0].to(kFloat64) + x[1]).to(C) * x[0]; },
                    {z, r});

  // A complex leaf accumulates its gradient; a real loss of it is the usual start.
  Tensor leaf = randn({3}, C).requires_grad_();
  (leaf * leaf.conj()).real().sum().backward();
  CHECK(allclose(leaf.grad(), leaf.detach() * 2));
  // PyTorch's refusals: a complex scalar needs its gradient given; factorizations of complex
  // matrices have no gradient here yet.
  CHECK_THROWS_WITH((leaf * leaf).sum().backward(),
                    "grad can be implicitly created only for real scalar outputs");
}

TEST_CASE("complex: a result's parts are one kernel's two outputs stored as pairs",
          "[complex][fusion]") {
  Tensor z = randn({1000}, kComplex64), w = randn({1000}, kComplex64);
  eval({z, w});
  Tensor y = z * w.conj() + z;
  // Each part computed once, into every other element of the result's memory; the parts of z and
  // w read as interleaved pairs (a slot next to the other).
  const std::string kernels = ir::dump({y}, "kernel");
  INFO(kernels);
  CHECK(kernels.find("// kernel 1") == std::string::npos);
  CHECK_THAT(kernels, Contains("out float32 pairs, next to slot"));
  CHECK_THAT(kernels, Contains("in float32 pairs, next to slot"));
  reset_stats();
  y.eval();
  CHECK(stats().kernels_launched == 1);
  const auto a = z.to_vector<std::complex<float>>(), b = w.to_vector<std::complex<float>>();
  const auto got = y.to_vector<std::complex<float>>();
  for (size_t i = 0; i < a.size(); ++i) {
    const std::complex<float> want = a[i] * std::conj(b[i]) + a[i];
    CHECK(std::abs(got[i] - want) <= 1e-5f * (1 + std::abs(want)));
  }
}

TEST_CASE("complex: real() and imag() are views that write through", "[complex][views]") {
  Tensor z = complex(tensor({1.f, 2.f, 3.f}), tensor({4.f, 5.f, 6.f}));
  Tensor re = z.real(), im = z.imag();
  CHECK(re.dtype() == kFloat32);
  CHECK(re.stride() == std::vector<int64_t>{2});
  CHECK(im.storage_offset() == 1);
  re.mul_(2);
  im.narrow(0, 1, 2).fill_(0);
  CHECK(z.str() == "tensor([2.+4.j, 4.+0.j, 6.+0.j])");
  CHECK(re.str() == "tensor([2., 4., 6.])");
  // A write into z is seen through the views.
  z.add_(complex(ones({3}), ones({3})));
  CHECK(im.to_vector<float>() == std::vector<float>{5, 1, 1});
  // Views of views, transposed parts, copies into parts.
  Tensor m = complex(arange(6.f).reshape({2, 3}), zeros({2, 3}));
  m.t().imag()[2].copy_(tensor({7.f, 8.f}));
  CHECK(m.imag().to_vector<float>() == std::vector<float>{0, 0, 7, 0, 0, 8});
  CHECK(m.real().to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
  // Memory: the parts' pointer and numpy's strides in bytes.
  auto* zp = reinterpret_cast<float*>(z.data_ptr<std::complex<float>>());
  CHECK(im.data_ptr<float>() == zp + 1);
  NumpyArray a = re.numpy();
  CHECK(a.dtype == "<f4");
  CHECK(a.strides == std::vector<int64_t>{8});
  im.data_ptr<float>()[0] = -1; // memory handed out is written through
  CHECK(z[0].item().imag() == -1.0);
  // Autograd: the parts' gradients flow as before; a write through them into a tensor that
  // requires grad is refused.
  Tensor w = complex(ones({2}), ones({2})).requires_grad_();
  Tensor y = w * 2;
  CHECK_THROWS_WITH(y.real().mul_(2), Contains("through real() or imag() is not supported with "
                                               "autograd"));
}

TEST_CASE("complex: factorizations against the reference interpreter",
          "[complex][linalg][interp]") {
  manual_seed(5);
  const auto C = kComplex128;
  Tensor A = randn({2, 3, 3}, C) + eye(3, C) * 3, B = randn({2, 3, 2}, C);
  Tensor H = A.matmul(A.mT().conj()) + eye(3, C);
  auto qr = linalg::qr(A);
  auto svd = linalg::svd(A);
  const std::vector<std::pair<const char*, Tensor>> cases = {
      {"inv", linalg::inv(A)},
      {"solve", linalg::solve(A, B)},
      {"det", linalg::det(A)},
      {"cholesky", linalg::cholesky(H)},
      {"eigvalsh", linalg::eigvalsh(H)},
      {"svd", svd.U.matmul(svd.Vh) * svd.S.sum()},
      {"qr", qr.Q.matmul(qr.R)},
      {"eigvals", linalg::eigvals(A).abs()},
      {"complex64", linalg::inv(A.to(kComplex64))}};
  for (const auto& [name, t] : cases) {
    INFO(name);
    // The interpreter runs the graph (LAPACK's complex routines for its Calls) before the tensor
    // is computed.
    const interp::HostArray ref = interp::evaluate(detail::node_of(t));
    std::vector<double> got;
    if (t.is_complex())
      for (const auto& v : t.to(kComplex128).to_vector<cd>())
        got.insert(got.end(), {v.real(), v.imag()});
    else
      got = t.to(kFloat64).to_vector<double>();
    REQUIRE(got.size() == ref.f.size());
    const double tol = t.dtype() == kComplex64 ? 1e-5 : 1e-10;
    for (size_t k = 0; k < got.size(); ++k)
      CHECK(std::abs(got[k] - ref.f[k]) <= tol * (1 + std::abs(ref.f[k])));
  }
}
