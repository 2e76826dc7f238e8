// The CUDA backend: code generation checked everywhere (NVRTC and ptxas need
// no GPU), and the op suite run on a device against the CPU where there is one.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_source.h"
#include "codegen/cuda/nvrtc_compile.h"
#include "runtime/cuda_driver.h"
#include "runtime/disk_cache.h"
#include "runtime/kernel_cache.h"
#include "tensorjit/tensorjit.h"
#include "test/support/temp_dir.h"

using namespace tj;

namespace {

bool have_gpu() {
  if (cuda::is_available()) return true;
  WARN("no CUDA device here: the device part of this test did not run");
  return false;
}

// Inputs with negative, zero, fractional and large values, on `d`.
struct Inputs {
  Tensor f32, f64, g32, i64, j64, i32, i16, i8, u8, b, h, bf, m2, m3;
  explicit Inputs(Device d) {
    std::vector<double> xs = {-3.5, -2.0, -1.25, -0.5, -0.0, 0.0, 0.25, 0.75, 1.0, 1.5, 2.5, 7.0};
    std::vector<double> ys = {1.5, -2.0, 0.5, 3.0, 2.0, -1.0, 0.125, -4.0, 2.0, 0.5, -1.5, 3.0};
    std::vector<int64_t> is = {-7, -3, -1, 0, 1, 2, 3, 5, 100, -128, 127, 300};
    f32 = tensor<double>(xs, {12}, kFloat32).to(d);
    f64 = tensor<double>(xs, {12}, kFloat64).to(d);
    g32 = tensor<double>(ys, {12}, kFloat32).to(d);
    i64 = tensor<int64_t>(is, {12}).to(d);
    j64 = tensor<int64_t>(std::vector<int64_t>(is.rbegin(), is.rend()), {12}).to(d);
    i32 = i64.to(kInt32);
    i16 = i64.to(kInt16);
    i8 = i64.to(kInt8);
    u8 = i64.to(kUInt8);
    b = i64.gt(0);
    h = f32.to(kFloat16);
    bf = f32.to(kBFloat16);
    manual_seed(7);
    m2 = rand({37, 53}).to(d);
    m3 = randn({4, 33, 65}).to(d);
  }
};

struct OpResult {
  std::string name;
  Tensor value;      // undefined when building or computing it threw
  std::string error; // what it threw
};

// Results of many ops, computed where their inputs live.
std::vector<OpResult> op_suite(Device d) {
  Inputs x(d);
  std::vector<OpResult> r;
  auto add = [&](std::string name, const std::function<Tensor()>& f) {
    try {
      Tensor t = f();
      t.eval();
      r.push_back({std::move(name), t, {}});
    } catch (const std::exception& e) {
      r.push_back({std::move(name), Tensor(), e.what()});
    }
  };
  for (auto [name, t] : {std::pair{"f32", x.f32}, {"f64", x.f64}}) {
    std::string n(name);
    add("neg " + n, [&] { return -t; });
    add("abs " + n, [&] { return t.abs(); });
    add("floor " + n, [&] { return t.floor(); });
    add("ceil " + n, [&] { return t.ceil(); });
    add("round " + n, [&] { return t.round(); });
    add("trunc " + n, [&] { return t.trunc(); });
    add("sqrt " + n, [&] { return t.abs().sqrt(); });
    add("reciprocal " + n, [&] { return t.reciprocal(); });
    add("exp " + n, [&] { return t.exp(); });
    add("expm1 " + n, [&] { return t.expm1(); });
    add("log " + n, [&] { return t.abs().log(); });
    add("log1p " + n, [&] { return t.abs().log1p(); });
    add("log2 " + n, [&] { return t.abs().log2(); });
    add("sin " + n, [&] { return t.sin(); });
    add("cos " + n, [&] { return t.cos(); });
    add("tan " + n, [&] { return t.tan(); });
    add("tanh " + n, [&] { return t.tanh(); });
    add("sigmoid " + n, [&] { return t.sigmoid(); });
    add("erf " + n, [&] { return t.erf(); });
    add("atan " + n, [&] { return t.atan(); });
    add("asin " + n, [&] { return (t / 8).asin(); });
    add("pow " + n, [&] { return t.abs().pow(x.g32.to(t.dtype())); });
    add("atan2 " + n, [&] { return atan2(t, x.g32.to(t.dtype())); });
    add("div " + n, [&] { return t / x.g32; });
    add("fmod " + n, [&] { return fmod(t, x.g32); });
    add("remainder " + n, [&] { return remainder(t, x.g32); });
    add("floor_divide " + n, [&] { return floor_divide(t, x.g32); });
    add("maximum " + n, [&] { return maximum(t, x.g32.to(t.dtype())); });
    add("minimum " + n, [&] { return minimum(t, x.g32.to(t.dtype())); });
    add("lt " + n, [&] { return t < x.g32; });
    add("where " + n, [&] { return where(t > 0, t, x.g32.to(t.dtype()) * 2); });
    add("gelu " + n, [&] { return nn::functional::gelu(t); });
    add("relu " + n, [&] { return relu(t); });
    add("clamp " + n, [&] { return clamp(t, -1.0, 2.0); });
  }
  for (auto [name, t] :
       {std::pair{"i64", x.i64}, {"i32", x.i32}, {"i16", x.i16}, {"i8", x.i8}, {"u8", x.u8}}) {
    std::string n(name);
    Tensor y = x.j64.to(t.dtype());
    add("add " + n, [&] { return t + y; });
    add("sub " + n, [&] { return t - y; });
    add("mul " + n, [&] { return t * y * 3; });
    add("neg " + n, [&] { return -t; });
    add("abs " + n, [&] { return t.abs(); });
    add("max " + n, [&] { return maximum(t, y); });
    add("min " + n, [&] { return minimum(t, y); });
    add("and " + n, [&] { return t & y; });
    add("or " + n, [&] { return t | y; });
    add("xor " + n, [&] { return t ^ y; });
    add("not " + n, [&] { return ~t; });
    add("eq " + n, [&] { return t == y; });
    add("le " + n, [&] { return t <= y; });
    add("div " + n, [&] { return floor_divide(t, where(y == 0, ones_like(y), y)); });
    add("rem " + n, [&] { return remainder(t, where(y == 0, ones_like(y), y)); });
    add("pow " + n, [&] { return t.pow(2); });
    add("to float " + n, [&] { return t.to(kFloat32) * 0.5; });
    add("sum " + n, [&] { return t.sum(); });
    add("amax " + n, [&] { return t.amax(); });
  }
  for (DType to :
       {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64}) {
    for (auto [name, t] : {std::pair{"f32", x.f32 * 50},
                           {"f64", x.f64 * 1e10},
                           {"i64", x.i64},
                           {"u8", x.u8},
                           {"b", x.b},
                           {"h", x.h},
                           {"bf", x.bf}})
      add(fmt::format("cast {} to {}", name, dtype_name(to)), [&] { return t.to(to); });
  }
  add("half arithmetic", [&] { return x.h * x.h + x.h; });
  add("bfloat arithmetic", [&] { return x.bf * x.bf - x.bf; });
  add("logical", [&] { return logical_and(x.b, x.f32 > 0); });
  add("bool sum", [&] { return x.b.sum(); });
  add("any", [&] { return x.b.any(); });
  add("all", [&] { return x.b.all(); });
  // Reductions in every layout.
  add("sum rows", [&] { return x.m2.sum({1}); });
  add("sum cols", [&] { return x.m2.sum({0}); });
  add("sum all", [&] { return x.m2.sum(); });
  add("prod", [&] { return (x.m2 + 0.5).prod(1); });
  add("amax rows", [&] { return x.m2.amax({1}); });
  add("amin cols", [&] { return x.m2.amin({0}); });
  add("argmax", [&] { return x.m3.argmax(2); });
  add("argmin", [&] { return x.m3.argmin(1); });
  add("mean", [&] { return x.m3.mean({0, 2}); });
  add("var", [&] { return x.m3.var({1}); });
  add("std", [&] { return x.m3.std(); });
  add("norm", [&] { return x.m3.norm(); });
  add("logsumexp", [&] { return logsumexp(x.m3, {2}); });
  add("softmax", [&] { return nn::functional::softmax(x.m3, -1); });
  add("log_softmax", [&] { return nn::functional::log_softmax(x.m3, 1); });
  add("layer_norm", [&] { return nn::functional::layer_norm(x.m3, {65}); });
  add("transpose sum", [&] { return x.m3.transpose(0, 2).sum({1}); });
  // Scans along rows and columns, fused with what they read and what reads them, in chains
  // (cummax's index reads its maximum) and beside a reduction of the row.
  add("cumsum rows", [&] { return (x.m2 * 2).cumsum(1) + 1; });
  add("cumsum cols", [&] { return x.m3.cumsum(1); });
  add("cumprod", [&] { return (x.m2 * 0.01 + 1).cumprod(1); });
  add("cumsum i64", [&] { return x.i64.cumsum(0); });
  add("cummax", [&] { return std::get<1>(x.m3.cummax(2)); });
  add("cummin", [&] { return std::get<0>(x.m2.cummin(0)); });
  add("cumsum over the sum", [&] { return x.m2.cumsum(1) / x.m2.abs().sum({1}, true); });
  add("logcumsumexp", [&] { return logaddexp(x.m3, x.m3 * 2).logcumsumexp(2); });
  // Gathers: rows of a matrix, columns of a transposed one, fused with what uses them.
  Tensor pick = tensor(std::vector<int64_t>{5, 0, 36, 2, 5}).to(d);
  add("index_select rows", [&] { return index_select(x.m2, 0, pick) * 2; });
  add("index_select cols", [&] { return index_select(x.m3.transpose(1, 2), 1, pick).exp(); });
  add("gather", [&] { return gather(x.m2, 1, (x.m2 * 50).to(kInt64).narrow(1, 0, 7)); });
  // Scatters: places distinct within each row (a GPU leaves any one of repeated writes), and
  // sums at repeated places (a gather's gradient), in float32 and through float16's CAS loop.
  TensorOptions on_d = TensorOptions().dtype(kInt64).device(d);
  Tensor places =
      ((arange(7, on_d) * 7).unsqueeze(0) + arange(37, on_d).unsqueeze(1)).remainder(53);
  add("scatter", [&] { return scatter(x.m2 * 2, 1, places, x.m2.exp()); });
  for (DType t : {kFloat32, kFloat16})
    add(t == kFloat32 ? "scatter add" : "scatter add half", [&, t] {
      Tensor w = x.m2.to(t).detach().requires_grad_(true);
      (index_select(w, 0, pick) * 2).sum().backward();
      return w.grad();
    });
  add("matmul", [&] { return matmul(x.m2, x.m2.t()); });
  add("bmm", [&] { return matmul(x.m3, x.m3.transpose(1, 2)); });
  add("sum f64 keepdim", [&] { return x.m3.to(kFloat64).sum({1}, true); });
  add("arange", [&] { return arange(0, 100, 3, TensorOptions().device(d)); });
  add("linspace", [&] { return linspace(-1, 1, 17, TensorOptions().device(d)); });
  add("eye", [&] { return eye(5, 7, TensorOptions().device(d)); });
  manual_seed(123);
  add("rand", [&] { return rand({1000}, TensorOptions().device(d)); });
  add("rand f64", [&] { return rand({333}, TensorOptions().device(d).dtype(kFloat64)); });
  add("randint", [&] { return randint(-50, 50, {1000}, TensorOptions().device(d)); });
  add("randn", [&] { return randn({1000}, TensorOptions().device(d)); });
  add("rand half", [&] { return rand({100}, TensorOptions().device(d).dtype(kFloat16)); });
  return r;
}

} // namespace

TEST_CASE("CUDA codegen: every kernel of the op suite compiles with NVRTC and passes ptxas",
          "[cuda]") {
  if (!cudagen::nvrtc_available()) {
    WARN("this build has no NVRTC: CUDA code generation was not checked");
    return;
  }
  for (const auto& res : op_suite(kCPU)) {
    INFO(res.name);
    CHECK(res.error.empty());
  }
  std::vector<kir::Kernel> kernels = rt::cached_kernels();
  REQUIRE(kernels.size() > 50);
  tj::test::TempDir dir("tj-cuda");
  int n = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < kernels.size(); ++i) {
    const kir::Kernel& k = kernels[i];
    // Domains of rank 1 and 3 alternate: both index paths get compiled.
    cudagen::Source src = cudagen::generate(k, i % 2 ? 3 : 1, i % 4 < 2);
    // PTX for Ampere, which ptxas then assembles for Ampere and Hopper.
    cudagen::Image ptx = cudagen::compile(src.code, k.name, 80, false);
    REQUIRE(!ptx.cubin);
    std::ofstream(dir.path / fmt::format("k{}.ptx", n++)) << ptx.data.c_str();
    if (i % 16 == 0) { // and CUBIN straight from NVRTC, as a device gets it
      cudagen::Image cubin = cudagen::compile(src.code, k.name, 90, true);
      CHECK(cubin.cubin);
      CHECK(!cubin.data.empty());
    }
  }
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  WARN(fmt::format("{} kernels lowered to CUDA and compiled by NVRTC in {:.0f} ms", n, ms));
  // The ops the CPU computes with several loops over each row, planned as for a GPU.
  namespace F = nn::functional;
  Tensor x = randn({6, 40});
  for (const Tensor& y : {F::softmax(x, 1), F::log_softmax(x, 1), F::layer_norm(x, {40}),
                          x.var({1}), x - x.mean({1}, true)}) {
    std::string ptx = ir::dump({y}, "ptx");
    CHECK(ptx.find(".entry") != std::string::npos);
  }
#ifdef TJ_PTXAS
  // ptxas takes one input file per run.
  for (const char* sm : {"sm_80", "sm_90"}) {
    for (int i = 0; i < n; ++i) {
      std::string one = fmt::format("{} -arch={} -o /dev/null {} 2>&1", TJ_PTXAS, sm,
                                    (dir.path / fmt::format("k{}.ptx", i)).string());
      INFO(one);
      CHECK(std::system(one.c_str()) == 0);
    }
  }
#else
  WARN("ptxas was not found: PTX was compiled by NVRTC but not validated by ptxas");
#endif
}

TEST_CASE("CUDA codegen: a compile error shows the log and the numbered source", "[cuda]") {
  if (!cudagen::nvrtc_available()) return;
  try {
    cudagen::compile("extern \"C\" __global__ void tj_kernel() {\n  undeclared_name = 1;\n}\n",
                     "broken", 90, true);
    FAIL("no error");
  } catch (const Error& e) {
    std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("NVRTC failed to compile kernel broken"));
    CHECK_THAT(msg, Catch::Contains("undeclared_name"));
    CHECK_THAT(msg, Catch::Contains("   2 |   undeclared_name = 1;"));
  }
}

TEST_CASE("disk cache: entries round-trip, and damaged files are misses", "[cuda][cache]") {
  tj::test::TempDir dir("tj-cuda");
  std::string saved = config().cache_dir;
  config().cache_dir = dir.path.string();
  rt::disk_cache::store("test", "key one", "content one");
  CHECK(rt::disk_cache::load("test", "key one") == std::optional<std::string>("content one"));
  CHECK(!rt::disk_cache::load("test", "key two"));
  // Flip one content byte of the one entry: the checksum rejects it.
  for (auto& f : std::filesystem::directory_iterator(dir.path / "test")) {
    std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(-1, std::ios::end);
    io.put('X');
  }
  CHECK(!rt::disk_cache::load("test", "key one"));
  // Truncated: a miss too.
  rt::disk_cache::store("test", "key one", "content one");
  for (auto& f : std::filesystem::directory_iterator(dir.path / "test"))
    std::filesystem::resize_file(f.path(), 20);
  CHECK(!rt::disk_cache::load("test", "key one"));
  config().cache_dir = saved;
}

TEST_CASE("CUDA devices: names, availability and clear errors", "[cuda]") {
  CHECK(Device("cuda:1").str() == "cuda:1");
  CHECK(Device("cuda").str() == "cuda:0");
  CHECK(Device("cuda").is_cuda());
  CHECK_THROWS_WITH(Device("gpu"),
                    "Expected one of cpu, cuda device type at start of device string: gpu");
  if (!cuda::is_available()) {
    CHECK(cuda::device_count() == 0);
    CHECK_THROWS_WITH(ones({2}, TensorOptions().device("cuda")),
                      Catch::StartsWith("CUDA is not available: "));
    CHECK_THROWS_WITH(ones({2}).cuda(), Catch::StartsWith("CUDA is not available: "));
    return;
  }
  CHECK(cuda::device_count() >= 1);
  CHECK_THROWS_WITH(ones({2}, TensorOptions().device(Device(kCUDA, 99))),
                    "CUDA error: invalid device ordinal");
}

TEST_CASE("CUDA: the op suite on the device matches the CPU", "[cuda][gpu]") {
  if (!have_gpu()) return;
  auto cpu = op_suite(kCPU);
  auto gpu = op_suite(Device("cuda"));
  REQUIRE(cpu.size() == gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    const Tensor& want = cpu[i].value;
    const Tensor& got = gpu[i].value;
    INFO(cpu[i].name << ": " << gpu[i].error);
    REQUIRE(want.defined());
    CHECK(gpu[i].error.empty());
    if (!got.defined()) continue;
    CHECK(got.device() == Device(kCUDA, 0));
    CHECK(got.dtype() == want.dtype());
    CHECK(got.sizes() == want.sizes());
    Tensor g = got.cpu();
    INFO("cpu: " << want.str().substr(0, 600) << "\ncuda: " << g.str().substr(0, 600));
    // Transcendental functions may differ by a few ulps (CUDA's libdevice vs glibc); every
    // other op, every cast and every random number must agree to the bit.
    if (want.is_floating_point()) {
      Tensor a = want.to(kFloat64), b = g.to(kFloat64);
      bool nan_match = equal(a.isnan(), b.isnan());
      CHECK(nan_match);
      // Reductions sum in another order: the absolute part scales with the largest value.
      double tol = want.dtype() == kFloat64 ? 1e-12 : want.dtype() == kFloat32 ? 2e-6 : 1e-2;
      double scale = want.numel()
                         ? 1.0 + where(a.isfinite(), a.abs(), zeros_like(a)).amax().item<double>()
                         : 1.0;
      Tensor ok = isclose(a, b, tol, 16 * tol * scale, /*equal_nan=*/true);
      CHECK(ok.all().item<bool>());
    } else {
      CHECK(equal(want, g));
    }
  }
}

TEST_CASE("CUDA: reductions over the middle and last dims of a 3-d tensor", "[cuda][gpu]") {
  if (!have_gpu()) return;
  Tensor x = arange(2 * 3 * 5).reshape({2, 3, 5}).to(kFloat64).sin();
  Tensor g = x.cuda();
  INFO(x.str());
  CHECK(equal(g.argmax(2).cpu(), x.argmax(2)));
  CHECK(equal(g.argmin(1).cpu(), x.argmin(1)));
  CHECK(allclose(g.sum({1}).cpu(), x.sum({1})));
  CHECK(allclose(g.sum({1}, true).cpu(), x.sum({1}, true)));
  CHECK(equal(g.to(kInt64).sum({1}).cpu(), x.to(kInt64).sum({1})));
  CHECK(equal((g * 100).to(kInt64).amax({2}).cpu(), (x * 100).to(kInt64).amax({2})));
  CHECK(equal((g * 100).to(kInt64).amin({1}).cpu(), (x * 100).to(kInt64).amin({1})));
  CHECK(allclose(g.to(kFloat32).sum({1}).cpu(), x.to(kFloat32).sum({1})));
  CHECK(g.argmax(2).cpu().str() == x.argmax(2).str());
  CHECK(g.sum({1}).cpu().str() == x.sum({1}).str());
}

TEST_CASE("CUDA: matrix products (cuBLAS) match the CPU", "[cuda][gpu]") {
  if (!have_gpu()) return;
  manual_seed(11);
  auto check = [](const Tensor& want, const Tensor& got, double tol) {
    INFO("cpu: " << want.str().substr(0, 300) << "\ncuda: " << got.str().substr(0, 300));
    CHECK(got.device().is_cuda());
    CHECK(got.sizes() == want.sizes());
    CHECK(allclose(got.cpu(), want, tol, tol));
  };
  Tensor a = rand({2, 1, 5, 7}, kFloat64), b = rand({3, 7, 4}, kFloat64);
  check(matmul(a, b), matmul(a.cuda(), b.cuda()), 1e-12); // broadcast batches
  Tensor m = rand({64, 48}), n = rand({80, 48});
  check(matmul(m, n.t()), matmul(m.cuda(), n.cuda().t()), 1e-5); // a transposed operand
  Tensor v = rand({48});
  check(mv(m, v), mv(m.cuda(), v.cuda()), 1e-5);
  check(dot(v, v), dot(v.cuda(), v.cuda()), 1e-5);
  check(matmul(v, n.t()), matmul(v.cuda(), n.t().cuda()), 1e-5);
  Tensor e = rand({3, 0}), f = rand({0, 2});
  check(matmul(e, f), matmul(e.cuda(), f.cuda()), 0); // k = 0: zeros
  Tensor ia = randint(-5, 5, {6, 7}), ib = randint(-5, 5, {7, 3});
  CHECK(equal(matmul(ia.cuda(), ib.cuda()).cpu(), matmul(ia, ib))); // integers: generated
  // A product is a lazy Call node: cuBLAS runs when the value is needed, once, and the bias and
  // relu after it are a kernel that reads its result.
  Tensor mc = m.cuda(), nc = n.cuda();
  eval({mc, nc});
  reset_stats();
  Tensor layer = relu(matmul(mc, nc.t()) + 1);
  CHECK(stats().library_calls == 0);
  CHECK(ir::dump({layer}, "schedule").find("call gemm by cuBLAS") != std::string::npos);
  layer.eval();
  CHECK(stats().library_calls == 1);
  check(relu(matmul(m, n.t()) + 1), layer, 1e-5);
}

TEST_CASE("CUDA: empty_cache returns the allocator's cached blocks to the driver", "[cuda][gpu]") {
  if (!have_gpu()) return;
  auto free_bytes = [] {
    rt::cuda::device(0); // its context current on this thread
    size_t free = 0, total = 0;
    rt::cuda::check(rt::cuda::driver().cuMemGetInfo(&free, &total), "cuMemGetInfo");
    return free;
  };
  {
    Tensor big = full({int64_t{64} << 20}, 1.0f, TensorOptions().device("cuda")); // 256 MiB
    big.eval();
    cuda::synchronize();
  }
  const size_t cached = free_bytes(); // the block is back in the cache, not the driver's
  cuda::empty_cache();
  CHECK(free_bytes() >= cached + (size_t{255} << 20));
}

TEST_CASE("CUDA: random numbers equal the CPU's to the bit", "[cuda][gpu]") {
  if (!have_gpu()) return;
  for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    manual_seed(99);
    Tensor c = rand({4097}, t);
    manual_seed(99);
    Tensor g = rand({4097}, TensorOptions().dtype(t).device("cuda"));
    CHECK(equal(c, g.cpu()));
  }
  manual_seed(5);
  Tensor c = randint(0, 1000, {5000});
  manual_seed(5);
  Tensor g = randint(0, 1000, {5000}, TensorOptions().device("cuda"));
  CHECK(equal(c, g.cpu()));
}

TEST_CASE("CUDA: printing, item, transfers and device errors", "[cuda][gpu]") {
  if (!have_gpu()) return;
  Tensor g = tensor({1.5, 2.0, -3.0}).cuda();
  CHECK(g.str() == "tensor([ 1.5000,  2.0000, -3.0000], device='cuda:0')");
  CHECK((g * 2).sum().item<double>() == 1.0);
  CHECK(g.to(kInt32).str() == "tensor([ 1,  2, -3], device='cuda:0', dtype=torch.int32)");
  CHECK(g.cpu().device() == Device(kCPU));
  CHECK(g.to("cuda:0", kFloat64).dtype() == kFloat64);
  // A 0-d CPU tensor joins a CUDA computation; other mixes are errors.
  CHECK((g + scalar_tensor(1.0)).device().is_cuda());
  CHECK_THROWS_WITH(g + tensor({1.0, 2.0, 3.0}),
                    "Expected all tensors to be on the same device, but found at least two "
                    "devices, cuda:0 and cpu!");
  CHECK_THROWS_WITH(g.numpy(), Catch::StartsWith("can't convert cuda:0 device type tensor"));
  CHECK(zeros_like(g).device().is_cuda());
  // Results that are constants stay on the tensor's device.
  Tensor ig = tensor({1, 2}).cuda();
  CHECK(ig.isnan().device().is_cuda());
  CHECK(ig.isfinite().device().is_cuda());
  CHECK(g.sum().var().device().is_cuda());
  Tensor filled = zeros({3}, TensorOptions().device("cuda"));
  filled.fill_(2.5);
  CHECK(filled.device().is_cuda());
  CHECK(filled.sum().item<double>() == 7.5);
  CHECK(where(g > 0, g, 0.0).device().is_cuda());
  // copy_ brings values to the destination's device; in-place results cannot change device.
  Tensor dst = zeros({3}, TensorOptions().device("cuda"));
  dst.copy_(tensor({1.0, 2.0, 3.0}));
  CHECK(dst.device().is_cuda());
  CHECK(dst.sum().item<double>() == 6.0);
  Tensor host0 = scalar_tensor(1.0);
  CHECK_THROWS_WITH(host0.add_(g), Catch::StartsWith("Expected all tensors to be on the same"));
  CHECK_THROWS_WITH(mm(rand({2, 3}).cuda(), rand({3, 2})),
                    Catch::StartsWith("Expected all tensors to be on the same device"));
  CHECK_THROWS_WITH(matmul(rand({3}, kFloat64).cuda(), rand({3, 2}).cuda()),
                    "expected scalar type Double but found Float");
  // Views move as their elements.
  Tensor m = arange(12).reshape({3, 4});
  CHECK(equal(m.t().cuda().cpu(), m.t()));
  CHECK(equal(m.cuda().t().contiguous().cpu(), m.t()));
  CHECK_THROWS_WITH(floor_divide(tensor({1, 2}).cuda(), tensor({0, 1}).cuda()).eval(),
                    Catch::StartsWith("ZeroDivisionError"));
}

TEST_CASE("CUDA: large reductions and elementwise kernels", "[cuda][gpu]") {
  if (!have_gpu()) return;
  manual_seed(3);
  Tensor x = rand({1 << 22});
  Tensor xg = x.cuda();
  double want = x.to(kFloat64).sum().item<double>();
  CHECK(xg.sum().item<double>() == Approx(want).epsilon(1e-6));
  CHECK(xg.to(kFloat64).sum().item<double>() == Approx(want).epsilon(1e-13));
  CHECK(xg.amax().item<double>() == x.amax().item<double>());
  Tensor m = rand({3000, 700});
  CHECK(allclose(m.cuda().sum({0}).cpu(), m.sum({0}), 1e-5, 1e-5));
  CHECK(allclose(m.cuda().sum({1}).cpu(), m.sum({1}), 1e-5, 1e-5));
  CHECK(equal(m.cuda().argmax(1).cpu(), m.argmax(1)));
  Tensor big = rand({5, 300000});
  CHECK(allclose(big.cuda().sum({1}).cpu(), big.sum({1}), 1e-5, 1e-3));
  // A whole-tensor sum of a transposed expression: split across blocks like a 1-d sum.
  Tensor sq = rand({2048, 2048});
  const double sq_want = (sq.t().to(kFloat64) * 2 + 1).sum().item<double>();
  CHECK((sq.cuda().t() * 2 + 1).sum().item<double>() == Approx(sq_want).epsilon(1e-6));
  CHECK((sq.cuda().t() * 2 + 1).amax().item<double>() == (sq.t() * 2 + 1).amax().item<double>());
}

TEST_CASE("CUDA: linalg factors through the CPU and returns to the device", "[cuda][gpu][linalg]") {
  if (!have_gpu()) return;
  manual_seed(31);
  const Device gpu("cuda");
  Tensor A = randn({3, 4, 4}, dtype(kFloat64)) + eye(4, dtype(kFloat64)) * 4;
  Tensor B = randn({3, 4, 2}, dtype(kFloat64));
  Tensor Ag = A.to(gpu), Bg = B.to(gpu);
  Tensor X = linalg::solve(Ag, Bg);
  CHECK(X.device() == Device(kCUDA, 0));
  CHECK(equal(X.cpu(), linalg::solve(A, B)));
  auto [U, S, Vh] = linalg::svd(Ag);
  CHECK(S.device() == Device(kCUDA, 0));
  CHECK(equal(S.cpu(), linalg::svd(A).S)); // (svdvals computes no vectors: other last bits)
  CHECK(allclose(linalg::det(Ag).cpu(), linalg::det(A), 1e-12, 1e-12));
  // Gradients flow back to the device.
  Tensor leaf = Ag.detach().requires_grad_();
  linalg::inv(leaf).sum().backward();
  CHECK(leaf.grad().device() == Device(kCUDA, 0));
  Tensor cpu_leaf = A.detach().requires_grad_();
  linalg::inv(cpu_leaf).sum().backward();
  CHECK(allclose(leaf.grad().cpu(), cpu_leaf.grad(), 1e-12, 1e-12));
}

TEST_CASE("CUDA: complex values compute as pairs of reals on the device", "[cuda][gpu][complex]") {
  if (!have_gpu()) return;
  manual_seed(17);
  for (DType t : {kComplex64, kComplex128}) {
    const DType part = real_part_dtype(t);
    Tensor a = complex(randn({4, 6}, dtype(part)), randn({4, 6}, dtype(part)));
    Tensor b = complex(randn({6, 3}, dtype(part)), randn({6, 3}, dtype(part)));
    Tensor ag = a.cuda(), bg = b.cuda();
    const double tol = t == kComplex64 ? 1e-5 : 1e-12;
    auto same = [&](const Tensor& cpu, const Tensor& gpu) {
      INFO("cpu: " << cpu.str() << "\ncuda: " << gpu.str());
      CHECK(gpu.device().is_cuda());
      CHECK(allclose(gpu.cpu(), cpu, tol, tol));
    };
    same(a * a.conj() / (a + 1) + a.exp() - a.sqrt(),
         ag * ag.conj() / (ag + 1) + ag.exp() - ag.sqrt());
    same(a.abs() + a.angle(), ag.abs() + ag.angle());
    same(a.sum(1), ag.sum(1));
    same(a.matmul(b), ag.matmul(bg));
    same(linalg::inv(a.narrow(1, 0, 4) + eye(4, dtype(t)) * 3),
         linalg::inv(ag.narrow(1, 0, 4) + eye(4, dtype(t)).cuda() * 3));
    CHECK(a.str() == ag.cpu().str());
  }
}
