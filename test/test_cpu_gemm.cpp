// The CPU GEMM (runtime/cpu_gemm.h): the driver against a double-precision triple loop over
// tiles, blocks that small products cross, strides, transposes and broadcast batches; and the
// products the frontend hands it (Call nodes) against the reference interpreter, the fused
// reductions it replaced, finite differences, and PyTorch's printed results.
#include <catch2/catch.hpp>
#include <tensorjit/tensorjit.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "codegen/llvm/llvm_gemm.h"
#include "lib/frontend/tensor_impl.h"
#include "runtime/cpu_gemm.h"
#include "test/support/tolerance.h"

using namespace tj;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A bfloat16 operand of the driver, as its bits: from a double rounded to the nearest even.
struct Bf16 {
  uint16_t bits = 0;
  Bf16() = default;
  explicit Bf16(double x) {
    const float f = float(x);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    bits = uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  }
  explicit operator double() const {
    const uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

// A strided operand: rows x cols at (row, col) strides inside a larger buffer, `batch` matrices
// (batch stride 0: one matrix broadcast).
template <class T> struct Operand {
  std::vector<T> data;
  rt::cpu::GemmMatrix m;
  T at(int64_t b, int64_t i, int64_t j) const { return data[b * m.batch + i * m.row + j * m.col]; }
};

enum class Layout { RowMajor, Transposed, Padded, Broadcast };

template <class T>
Operand<T> make_operand(std::mt19937& rng, int64_t batch, int64_t rows, int64_t cols, Layout l) {
  Operand<T> o;
  int64_t matrix = rows * cols;
  switch (l) {
  case Layout::RowMajor:
    o.m = {nullptr, cols, 1, matrix};
    break;
  case Layout::Transposed:
    o.m = {nullptr, 1, rows, matrix};
    break;
  case Layout::Padded: // every row 3 elements longer, every matrix one row more
    matrix = (rows + 1) * (cols + 3);
    o.m = {nullptr, cols + 3, 1, matrix};
    break;
  case Layout::Broadcast:
    o.m = {nullptr, cols, 1, 0};
    break;
  }
  o.data.resize(size_t(matrix * (l == Layout::Broadcast ? 1 : batch)));
  std::uniform_real_distribution<double> u(-1, 1);
  for (T& x : o.data)
    x = T(u(rng));
  o.m.data = o.data.data();
  return o;
}

// T: the operands' type; C: the result's (float32 for bfloat16 operands). With `epilogue`, the
// driver's epilogue makes each element 2 c + 1 and counts its visits: once each, after the last
// KC step (an earlier visit's change would be added to).
template <class T, class C = T>
void check_product(const llvmjit::GemmMicrokernel& uk, const rt::cpu::GemmBlocking& blocking,
                   int64_t batch, int64_t m, int64_t n, int64_t k, Layout la, Layout lb,
                   std::mt19937& rng, bool epilogue = false) {
  const Operand<T> a = make_operand<T>(rng, batch, m, k, la),
                   b = make_operand<T>(rng, batch, k, n, lb);
  const int64_t c_row = n + 1, c_batch = m * c_row; // C's rows padded: the padding stays
  std::vector<C> c(size_t(batch * c_batch), std::numeric_limits<C>::quiet_NaN());
  std::vector<int> visits(c.size(), 0);
  const rt::GemmEpilogue twice_plus_one = [&](void* run, int64_t count) {
    C* x = static_cast<C*>(run);
    for (int64_t i = 0; i < count; ++i) {
      ++visits[size_t(x + i - c.data())];
      x[i] = C(2 * double(x[i]) + 1);
    }
  };
  rt::cpu::gemm_with(uk, blocking, batch, m, n, k, a.m, b.m, c.data(), c_row, c_batch,
                     epilogue ? &twice_plus_one : nullptr);
  const double eps = std::numeric_limits<C>::epsilon();
  int64_t bad = 0;
  std::string first;
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 0, scale = 0;
        for (int64_t p = 0; p < k; ++p) {
          want += double(a.at(bi, i, p)) * double(b.at(bi, p, j));
          scale += std::abs(double(a.at(bi, i, p)) * double(b.at(bi, p, j)));
        }
        const size_t at = size_t(bi * c_batch + i * c_row + j);
        double got = c[at];
        if (epilogue) {
          if (visits[at] != 1 && bad++ == 0)
            first = fmt::format("({}, {}, {}): {} visits", bi, i, j, visits[at]);
          got = (got - 1) / 2; // exact in binary, but for 2 c + 1's rounding
          scale += 1;
        }
        if (!(std::abs(got - want) <= 2 * double(k) * eps * scale + 1e-30)) {
          if (bad++ == 0) first = fmt::format("({}, {}, {}): {} vs {}", bi, i, j, got, want);
        }
      }
      if (!std::isnan(c[size_t(bi * c_batch + i * c_row + n)]) && bad++ == 0)
        first = fmt::format("padding of row {} written", i);
    }
  INFO(fmt::format("{} blocks {},{},{}: batch {} m {} n {} k {} layouts {} {}{}", uk.describe(),
                   blocking.mc, blocking.kc, blocking.nc, batch, m, n, k, int(la), int(lb),
                   epilogue ? ", with an epilogue" : ""));
  INFO(first);
  CHECK(bad == 0);
}

template <class T, class C = T> void check_driver(DType dtype) {
  std::mt19937 rng(11);
  const int64_t lanes = llvmjit::gemm_vector_lanes(dtype);
  // The host's tile, and others the generator makes: one row, one vector, odd heights, wide rows.
  std::vector<std::shared_ptr<const llvmjit::GemmMicrokernel>> kernels{
      llvmjit::gemm_microkernel(dtype), llvmjit::compile_gemm_microkernel(dtype, 1, lanes),
      llvmjit::compile_gemm_microkernel(dtype, 3, 2 * lanes),
      llvmjit::compile_gemm_microkernel(dtype, 5, lanes),
      llvmjit::compile_gemm_microkernel(dtype, 2, 4 * lanes)};
  const Layout layouts[] = {Layout::RowMajor, Layout::Transposed, Layout::Padded,
                            Layout::Broadcast};
  std::uniform_int_distribution<int> pick(0, 3);
  const int64_t sizes[] = {1, 2, 7, 13, 33, 70};
  std::uniform_int_distribution<size_t> size(0, std::size(sizes) - 1);
  for (const auto& uk : kernels) {
    const rt::cpu::GemmBlocking host = rt::cpu::gemm_blocking(*uk);
    // Blocks of two tiles and eight steps of k: small products cross every block edge.
    const rt::cpu::GemmBlocking tiny{2 * uk->mr, 2 * uk->k_unroll, 2 * uk->nr};
    for (const auto& blocking : {host, tiny})
      for (int trial = 0; trial < 12; ++trial) {
        const int64_t batch = trial % 3 == 0 ? 3 : 1;
        Layout la = layouts[pick(rng)], lb = layouts[pick(rng)];
        check_product<T, C>(*uk, blocking, batch, sizes[size(rng)], sizes[size(rng)],
                            sizes[size(rng)], la, lb, rng, trial % 2 == 1);
      }
  }
  // A product over several KC and MC blocks and both threads at the host's blocking.
  check_product<T, C>(*kernels[0], rt::cpu::gemm_blocking(*kernels[0]), 1, 301, 95, 700,
                      Layout::RowMajor, Layout::Transposed, rng);
  check_product<T, C>(*kernels[0], rt::cpu::gemm_blocking(*kernels[0]), 1, 64, 300, 701,
                      Layout::RowMajor, Layout::Transposed, rng);
  // With an epilogue: wider than its runs of columns, deeper than a KC step, on both threads.
  check_product<T, C>(*kernels[0], rt::cpu::gemm_blocking(*kernels[0]), 1, 301, 700, 401,
                      Layout::RowMajor, Layout::Transposed, rng, true);
  check_product<T, C>(*kernels[0], rt::cpu::gemm_blocking(*kernels[0]), 4, 30, 40, 50,
                      Layout::Transposed, Layout::Broadcast, rng, true);
  // Rows of one tile, so that the threads split the columns despite the epilogue.
  check_product<T, C>(*kernels[0], rt::cpu::gemm_blocking(*kernels[0]), 1, 5, 700, 300,
                      Layout::Transposed, Layout::RowMajor, rng, true);
}

} // namespace

TEST_CASE("cpu gemm: tiles, blocks, strides and batches against a double loop", "[gemm]") {
  SECTION("float32") { check_driver<float>(kFloat32); }
  SECTION("float64") { check_driver<double>(kFloat64); }
  SECTION("bfloat16 pairs into float32") {
    // Where the CPU has the dot instruction; elsewhere bfloat16 products are float32 ones.
    if (llvmjit::gemm_bf16_dot()) {
      check_driver<Bf16, float>(kBFloat16);
      const auto uk = llvmjit::gemm_microkernel(kBFloat16);
      CHECK(uk->dtype == kFloat32);
      CHECK(uk->k_unroll % 2 == 0);
      CHECK(contains(llvmjit::gemm_microkernel_asm(kBFloat16), "vdpbf16ps"));
    } else {
      WARN("no AVX512_BF16 on this CPU: the bfloat16 microkernel is not run");
      CHECK_THROWS_AS(llvmjit::gemm_microkernel(kBFloat16), std::invalid_argument);
    }
  }
}

TEST_CASE("cpu gemm: tiles the host cannot hold and other dtypes are refused", "[gemm]") {
  const int64_t lanes = llvmjit::gemm_vector_lanes(kFloat32);
  CHECK_THROWS_AS(llvmjit::compile_gemm_microkernel(kFloat32, 4, lanes + 1), std::invalid_argument);
  CHECK_THROWS_AS(llvmjit::compile_gemm_microkernel(kFloat32, 33, lanes), std::invalid_argument);
  CHECK_THROWS_AS(llvmjit::gemm_microkernel(kInt32), std::invalid_argument);
  const std::string asm_text = llvmjit::gemm_microkernel_asm(kFloat32);
  CHECK(contains(asm_text, "vfmadd")); // FMAs, not multiplies and adds
}

TEST_CASE("cpu gemm: products are Call nodes, with bias and relu fused into their epilogue",
          "[gemm]") {
  manual_seed(21);
  Tensor x = randn({40, 33}), w = randn({50, 33}), b = randn({50});
  eval({x, w, b});
  auto layer = [&] { return relu(matmul(x, w.t()) + b); };
  config().cpu_gemm = false;
  Tensor want = layer();
  want.eval();
  config().cpu_gemm = true;
  Tensor got = layer();
  const std::string schedule = ir::dump({got}, "schedule");
  INFO(schedule);
  CHECK(contains(schedule, "call gemm by the CPU GEMM\n  microkernel "));
  // Bias and relu: one kernel, which the GEMM runs on C's blocks. Kernels head their lines
  // ("microkernel 14x32" in the call's line is no kernel).
  CHECK(contains(schedule, "; epilogue: kernel 0\n"));
  CHECK(contains(schedule, "\nkernel 0 "));
  CHECK(contains(schedule, "because the GEMM's epilogue"));
  // The asm stage shows the microkernel after the kernels.
  const std::string asm_text = ir::dump({got}, "asm");
  CHECK(contains(asm_text, "; call gemm by the CPU GEMM: microkernel "));
  CHECK(asm_text.find("; kernel 0") < asm_text.find("; call gemm"));
  CHECK_FALSE(contains(schedule, "\nkernel 1 "));
  reset_stats();
  got.eval();
  CHECK(stats().library_calls == 1);
  CHECK(allclose(got, want, 1e-5, 1e-5));
}

TEST_CASE("cpu gemm: epilogues give the unfused results, and leave the product to others",
          "[gemm]") {
  manual_seed(23);
  auto unfused = [](const std::function<Tensor()>& make) {
    config().fusion = false;
    Tensor t = make();
    t.eval();
    config().fusion = true;
    return t;
  };
  auto fused = [](const Tensor& t) {
    return contains(ir::dump({t}, "schedule"), "; epilogue: kernel ");
  };
  for (DType dtype : {kFloat32, kFloat64, kBFloat16}) {
    INFO(dtype_name(dtype));
    // Sizes off every block: C's columns in runs of 256 and a last short one, three KC steps.
    Tensor x = randn({301, 1000}).to(dtype), w = randn({700, 1000}).to(dtype),
           b = randn({700}).to(dtype), r = randn({301, 700}).to(dtype);
    eval({x, w, b, r});
    const double tol = dtype == kBFloat16 ? 2e-2 : 1e-4;
    // gelu(x @ w.t() + b) + r: bias, activation and residual on C's blocks (into C's memory,
    // or for bfloat16 results from a float32 C, into their own).
    auto layer = [&] { return nn::functional::gelu(matmul(x, w.t()) + b) + r; };
    Tensor got = layer();
    CHECK(fused(got));
    CHECK(allclose(got, unfused(layer), tol, tol));
    // A batch, and a scale and a cast.
    Tensor xb = x.reshape({7, 43, 1000});
    auto batched = [&] { return (matmul(xb, w.t()) * 0.5).to(kFloat64); };
    Tensor gotb = batched();
    CHECK(fused(gotb));
    CHECK(allclose(gotb, unfused(batched), tol, tol));
  }
  Tensor x = randn({64, 100}), w = randn({100, 80}), b = randn({80});
  eval({x, w, b});
  Tensor want = unfused([&] { return matmul(x, w); });
  // The product asked for beside its epilogue's target: computed once, not in its epilogue.
  Tensor y = matmul(x, w), z = relu(y + b);
  CHECK_FALSE(contains(ir::dump({y, z}, "schedule"), "epilogue"));
  eval({y, z});
  CHECK(allclose(y, want, 1e-5, 1e-5));
  CHECK(allclose(z, relu(want + b), 1e-5, 1e-5));
  // The product asked for after its epilogue wrote over it: computed again.
  Tensor y2 = matmul(x, w), z2 = relu(y2 + b);
  CHECK(fused(z2));
  z2.eval();
  CHECK(allclose(z2, relu(want + b), 1e-5, 1e-5));
  CHECK(allclose(y2, want, 1e-5, 1e-5));
  // Through autograd, whose backward reads relu's output and the operands (a fresh weight: this
  // product is not computed yet).
  Tensor wg = randn({100, 80}).requires_grad_();
  Tensor h = relu(matmul(x, wg) + b);
  CHECK(fused(h));
  h.eval();
  h.square().sum().backward();
  Tensor wg2 = wg.detach().clone().requires_grad_();
  config().fusion = false;
  Tensor loss2 = relu(matmul(x, wg2) + b).square().sum();
  loss2.backward();
  config().fusion = true;
  CHECK(allclose(wg.grad(), wg2.grad(), 1e-4, 1e-4));
}

TEST_CASE("cpu gemm: matmul's cases against the reference interpreter", "[gemm][matmul]") {
  manual_seed(22);
  struct Case {
    Shape a, b;
    bool transpose_b;
  };
  const Case cases[] = {
      {{40, 33}, {33, 50}, false},      {{40, 33}, {50, 33}, true},
      {{3, 17, 40}, {3, 40, 9}, false}, {{2, 1, 17, 40}, {3, 40, 9}, false},
      {{17, 40}, {4, 40, 64}, false},   {{4, 64, 40}, {12, 40}, true},
      {{129, 257}, {257, 31}, false},
  };
  for (DType dt : {kFloat32, kFloat64}) {
    for (const Case& c : cases) {
      Tensor a = randn(c.a, dtype(dt)), b = randn(c.b, dtype(dt));
      Tensor p = c.transpose_b ? matmul(a, b.transpose(-1, -2)) : matmul(a, b);
      INFO(test::shape_str(c.a) << " @ " << test::shape_str(c.b) << " " << short_dtype_name(dt));
      CHECK(contains(ir::dump({p}, "schedule"), "call gemm by the CPU GEMM"));
      const int64_t k = c.a.back();
      const interp::HostArray ref = interp::evaluate(detail::node_of(p));
      const double rel = 2 * double(k) * test::epsilon(dt);
      const test::Tolerance tol{rel, rel};
      const std::string diff = test::compare(test::read_back(p), ref, tol, "matmul");
      INFO(diff);
      CHECK(diff.empty());
    }
  }
}

TEST_CASE("cpu gemm: 16-bit products accumulate in float32 and round once", "[gemm][matmul]") {
  manual_seed(23);
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor a = randn({24, 40}).to(dt), b = randn({40, 36}).to(dt);
    Tensor p = matmul(a, b);
    CHECK(p.dtype() == dt);
    CHECK(contains(ir::dump({p}, "schedule"), "call gemm by the CPU GEMM"));
    Tensor want = matmul(a.to(kFloat64), b.to(kFloat64)).to(dt);
    CHECK(allclose(p.to(kFloat64), want.to(kFloat64), 2 * test::epsilon(dt), 1e-3));
  }
}

TEST_CASE("cpu gemm: bfloat16 products by dot instructions", "[gemm][matmul]") {
  if (!llvmjit::gemm_bf16_dot()) {
    // Then they are float32 products (the test above), and a Call of bfloat16 finds no library.
    WARN("no AVX512_BF16 on this CPU: bfloat16 products are float32 ones here");
    CHECK(!contains(ir::dump({matmul(randn({40, 40}).to(kBFloat16), randn({40, 40}).to(kBFloat16))},
                             "schedule"),
                    "pairs"));
    return;
  }
  manual_seed(26);
  // Operands as they lie: rows along k (pairs move as words), columns along k (pairs gathered),
  // odd k (a half pair), odd offsets and strides (words not aligned), broadcast batches.
  Tensor big = randn({3, 70, 90}).to(kBFloat16);
  eval({big});
  struct Case {
    const char* what;
    Tensor a, b;
  };
  const std::vector<Case> cases{
      {"x @ w.t()", big[0].narrow(1, 0, 64), big[1].narrow(1, 0, 64).t()},
      {"x @ w", big[0].narrow(1, 0, 40), big[1].narrow(0, 0, 40)},
      {"odd k", big[0].narrow(1, 0, 33), big[1].narrow(1, 0, 33).t()},
      {"odd offset", big[0].narrow(1, 1, 48), big[2].narrow(1, 3, 48).t()},
      {"odd stride", big[0].narrow(0, 0, 45).narrow(1, 0, 89), big[1].narrow(1, 0, 89).t()},
      {"transposed a", big[0].narrow(0, 0, 50).t(), big[1].narrow(0, 0, 50)},
      {"broadcast batch", big.narrow(2, 0, 32), big[2].narrow(0, 0, 32)},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Tensor p = matmul(c.a, c.b);
    CHECK(p.dtype() == kBFloat16);
    CHECK(contains(ir::dump({p}, "schedule"), "bfloat16 pairs into float32"));
    // Each product of two bfloat16 values is exact in float32; the float32 sums differ from
    // the double product by a few float32 ulps of the sum of magnitudes, then one rounding to
    // bfloat16.
    Tensor want = matmul(c.a.to(kFloat64), c.b.to(kFloat64));
    Tensor scale = matmul(c.a.to(kFloat64).abs(), c.b.to(kFloat64).abs());
    Tensor err = (p.to(kFloat64) - want).abs() - (want.abs() * 0x1p-8 + scale * 1e-6);
    CHECK(err.max().item<double>() <= 0);
    // The same product through the float32 GEMM, rounded once, agrees but for the order of
    // the float32 sums: at most one bfloat16 ulp apart.
    Tensor f32 = matmul(c.a.to(kFloat32), c.b.to(kFloat32)).to(kBFloat16);
    CHECK(((p.to(kFloat64) - f32.to(kFloat64)).abs() - f32.to(kFloat64).abs() * 0x1p-7 - 1e-30)
              .max()
              .item<double>() <= 0);
  }
  // The interpreter, the text form and the graph's gradient take the Call of bfloat16 operands.
  Tensor a = big[0].narrow(1, 0, 48), b = big[1].narrow(1, 0, 48).t();
  Tensor p = matmul(a, b);
  const std::string text = ir::dump({p}, "graph");
  INFO(text);
  CHECK(contains(text, "= Call gemm %"));
  // The text form: a product of bfloat16 operands is float32; mixed operands are refused.
  const std::string head = "storage a : bfloat16[6] = [1, 2, 3, 4, 5, 6]\n"
                           "storage b : float32[6] = [1, 2, 3, 4, 5, 6]\n"
                           "%0 = Buffer a strides=[3, 1] offset=0 : bfloat16[2, 3]\n"
                           "%1 = Buffer a strides=[2, 1] offset=0 : bfloat16[3, 2]\n"
                           "%2 = Buffer b strides=[2, 1] offset=0 : float32[3, 2]\n";
  CHECK_NOTHROW(ir::parse(head + "%3 = Call gemm %0, %1 : float32[2, 2]\noutput %3\n"));
  CHECK_THROWS_WITH(ir::parse(head + "%3 = Call gemm %0, %1 : bfloat16[2, 2]\noutput %3\n"),
                    Catch::Contains("computes in float32 or float64"));
  CHECK_THROWS_WITH(ir::parse(head + "%3 = Call gemm %0, %2 : float32[2, 2]\noutput %3\n"),
                    Catch::Contains("or be bfloat16 for float32"));
  const test::Tolerance tol = test::tolerance(kBFloat16, test::Accuracy::Arithmetic);
  const test::Expectation e = test::expect(p, tol, "bf16 product");
  REQUIRE(e.expected);
  const std::string diff = test::compare(test::read_back(p), *e.expected, tol, "bf16 product");
  INFO(diff);
  CHECK(diff.empty());
  // A Call built for the library and performed where none takes it is computed by kernels, the
  // bfloat16 operands cast exactly to float32.
  Tensor late = matmul(a * 2, b); // a new Call (a * 2 is exact)
  CHECK(contains(ir::dump({late}, "graph"), "= Call gemm %"));
  config().cpu_gemm = false;
  CHECK(!contains(ir::dump({late}, "schedule"), "call gemm"));
  late.eval();
  config().cpu_gemm = true;
  CHECK(allclose(late.to(kFloat64), p.to(kFloat64) * 2, 0x1p-7, 0));
  // Gradients through it, as through the float32 product.
  Tensor x = a.detach().requires_grad_(), y = b.detach().requires_grad_();
  matmul(x, y).to(kFloat32).sum().backward();
  Tensor gx = ones({70, 70}).matmul(b.to(kFloat32).t());
  CHECK(allclose(x.grad().to(kFloat32), gx, 1e-2, 1e-2));
}

TEST_CASE("cpu gemm: gradients through it against finite differences", "[gemm][autograd]") {
  manual_seed(24);
  // Sizes at which the backward's products (g @ b.t(), a.t() @ g) are GEMM calls too.
  Tensor a = randn({20, 33}, dtype(kFloat64)).requires_grad_();
  Tensor b = randn({33, 18}, dtype(kFloat64)).requires_grad_();
  Tensor bias = randn({18}, dtype(kFloat64));
  auto f = [&](const Tensor& x, const Tensor& y) { return tanh(matmul(x, y) + bias).sum(); };
  CHECK(contains(ir::dump({matmul(a, b)}, "schedule"), "call gemm by the CPU GEMM"));
  reset_stats();
  f(a, b).backward();
  eval({a.grad(), b.grad()});
  CHECK(stats().library_calls >= 3); // the forward product and both gradients' products
  // Central differences of f in a few elements of each operand (rounding in f leaves them
  // about 1e-9 off: the margin).
  auto numeric = [&](bool of_a, int64_t i, int64_t j) {
    const double h = 1e-6;
    Tensor x = a.detach(), y = b.detach();
    Tensor& t = of_a ? x : y;
    Tensor step = zeros_like(t);
    step.index_put_({i, j}, h);
    const double fp = of_a ? f(x + step, y).item<double>() : f(x, y + step).item<double>();
    const double fm = of_a ? f(x - step, y).item<double>() : f(x, y - step).item<double>();
    return (fp - fm) / (2 * h);
  };
  std::mt19937 rng(5);
  for (bool of_a : {true, false}) {
    const Tensor& t = of_a ? a : b;
    for (int trial = 0; trial < 6; ++trial) {
      const int64_t i = int64_t(rng() % uint64_t(t.size(0))),
                    j = int64_t(rng() % uint64_t(t.size(1)));
      CHECK(t.grad().index({i, j}).item<double>() ==
            Approx(numeric(of_a, i, j)).epsilon(1e-6).margin(1e-8));
    }
  }
}

TEST_CASE("cpu gemm: the same bits on any number of threads", "[gemm]") {
  // Each element's sum runs over the same KC steps in the same order whatever the split of rows
  // and columns between threads, so the thread count changes no bit.
  manual_seed(25);
  Tensor a = randn({301, 700}), b = randn({700, 95}), batch = randn({6, 40, 33});
  eval({a, b, batch});
  const int saved = config().num_threads;
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 5, 16}) {
    config().num_threads = threads;
    std::vector<float> one = matmul(a, b).to_vector<float>();
    std::vector<float> many = matmul(batch, batch.transpose(1, 2)).to_vector<float>();
    one.insert(one.end(), many.begin(), many.end());
    results.push_back(std::move(one));
  }
  config().num_threads = saved;
  for (size_t i = 1; i < results.size(); ++i)
    CHECK(results[i] == results[0]);
}

TEST_CASE("cpu gemm: an epilogue's error names the places that built its values", "[gemm]") {
  manual_seed(2);
  Tensor x = randn({64, 64}), w = randn({64, 64}), d = zeros({64, 64}, kInt32);
  eval({x, w, d});
  auto message = [&] {
    try {
      floor_divide(matmul(x, w).to(kInt32), d).eval();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string fused = message();
  INFO(fused);
  CHECK(fused.find("ZeroDivisionError\n(while computing values built at ") == 0);
  for (const char* op : {"(matmul)", "(to)", "(zeros)", "(floor_divide)"})
    CHECK(fused.find(op) != std::string::npos);
}

TEST_CASE("cpu gemm: a transposed operand's gradient is the transposed product, as it lies",
          "[gemm][autograd]") {
  manual_seed(24);
  // a = A.t() and b = B.t() lie column-major: their gradients are computed as the transposed
  // products (PyTorch's mm_mat1_backward / mm_mat2_backward), so A's and B's are contiguous
  // products. Against the same graph with the operands copied row-major first.
  for (DType dtype : {kFloat32, kFloat64, kComplex64}) {
    INFO(dtype_name(dtype));
    for (bool batched : {false, true}) {
      INFO("batched " << batched);
      const Shape sa = batched ? Shape{3, 37, 40} : Shape{37, 40};
      const Shape sb = batched ? Shape{3, 45, 37} : Shape{45, 37};
      Tensor A = randn(sa, dtype), B = randn(sb, dtype);
      Tensor R = randn(batched ? Shape{3, 40, 45} : Shape{40, 45}, dtype);
      eval({A, B, R});
      auto grads = [&](bool copied) {
        Tensor a0 = A.clone().requires_grad_(), b0 = B.clone().requires_grad_();
        Tensor a = a0.mT(), b = b0.mT();
        if (copied) a = a.contiguous(), b = b.contiguous();
        (matmul(a, b) * R).sum().abs().backward();
        return std::pair{a0.grad(), b0.grad()};
      };
      auto [ga, gb] = grads(false);
      auto [wa, wb] = grads(true);
      CHECK(allclose(ga, wa, 1e-4, 1e-4));
      CHECK(allclose(gb, wb, 1e-4, 1e-4));
    }
  }
  // A linear layer's SGD update w - lr * grad: the gradient product lies as w does and the
  // update is its epilogue, with no transposed pass between.
  Tensor x = randn({40, 33}), w = randn({50, 33}).requires_grad_(), b = randn({50});
  eval({x, w, b});
  nn::functional::relu(nn::functional::linear(x, w, b)).square().sum().backward();
  Tensor g = w.grad();
  Tensor updated = w.detach() - g * 0.01;
  const std::string schedule = ir::dump({updated}, "schedule");
  INFO(schedule);
  CHECK(contains(schedule, "; epilogue: kernel "));
  // relu's output (which the gradient product reads from memory) and the update: no third.
  CHECK(contains(schedule, "\nkernel 1 "));
  CHECK_FALSE(contains(schedule, "\nkernel 2 "));
  Tensor h = relu(matmul(x, w.detach().t()) + b);
  Tensor want = matmul((2 * h).t(), x);
  CHECK(allclose(updated, w.detach() - want * 0.01, 1e-4, 1e-4));
}
