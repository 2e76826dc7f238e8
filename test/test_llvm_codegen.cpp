// Tests for codegen/llvm: hand-built kernels, JIT-compiled and run against scalar C++ references.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "codegen/llvm/llvm_codegen.h"
#include "test/support/seed.h"

namespace {

using namespace tj;
using ir::Op;
using kir::StrideKind;
using Role = kir::Slot::Role;
using llvmjit::CompiledKernel;

// ---- host types of each dtype ------------------------------------------------------------------

template <DType D> struct CTypeOf;
template <> struct CTypeOf<kBool> { using type = uint8_t; }; // 0/1 bytes
template <> struct CTypeOf<kUInt8> { using type = uint8_t; };
template <> struct CTypeOf<kInt8> { using type = int8_t; };
template <> struct CTypeOf<kInt16> { using type = int16_t; };
template <> struct CTypeOf<kInt32> { using type = int32_t; };
template <> struct CTypeOf<kInt64> { using type = int64_t; };
template <> struct CTypeOf<kFloat16> { using type = uint16_t; };  // bits
template <> struct CTypeOf<kBFloat16> { using type = uint16_t; }; // bits
template <> struct CTypeOf<kFloat32> { using type = float; };
template <> struct CTypeOf<kFloat64> { using type = double; };
template <DType D> using ctype = typename CTypeOf<D>::type;

template <DType D> using DT = std::integral_constant<DType, D>;
using Bool = DT<kBool>;
using U8 = DT<kUInt8>;
using I8 = DT<kInt8>;
using I16 = DT<kInt16>;
using I32 = DT<kInt32>;
using I64 = DT<kInt64>;
using F32 = DT<kFloat32>;
using F64 = DT<kFloat64>;

// ---- building and running kernels --------------------------------------------------------------

struct KernelBuilder {
  kir::Kernel k;

  int slot(Role r, DType t, StrideKind s, StrideKind rs = StrideKind::Broadcast) {
    k.slots.push_back({r, t, s, rs});
    return int(k.slots.size()) - 1;
  }
  int in(DType t, StrideKind s = StrideKind::Contiguous) { return slot(Role::Input, t, s); }
  int out(DType t, StrideKind s = StrideKind::Contiguous) { return slot(Role::Output, t, s); }
  int index(StrideKind s) { return slot(Role::Index, kInt64, s); }
  int param(DType t) {
    k.params.push_back(t);
    return int(k.params.size()) - 1;
  }
  int value(Op op, DType t, std::vector<int> src, int slot = -1, int64_t imm = 0) {
    kir::Value v{op, t};
    for (size_t i = 0; i < src.size(); ++i)
      v.src[i] = src[i];
    v.slot = slot;
    v.imm = imm;
    k.values.push_back(v);
    return int(k.values.size()) - 1;
  }
  int load(int s) { return value(Op::Buffer, k.slots[s].dtype, {}, s); }
  int cnst(int p) {
    int v = value(Op::Const, k.params[p], {});
    k.values[v].param = p;
    return v;
  }
  int iota(int s) { return value(Op::Iota, kInt64, {}, s); }
  int op(Op o, DType t, std::vector<int> src) { return value(o, t, std::move(src)); }
  void store(int s, int v) { k.stores.push_back({s, v}); }
};

// The arguments of one kernel call. Strides of Contiguous/Broadcast slots are set to a value the
// kernel must not read.
struct Call {
  std::vector<void*> ptrs;
  std::vector<int64_t> base, stride, rstride;
  std::vector<uint64_t> params;
  int64_t r = 0;
  int32_t err = 0;
  explicit Call(const kir::Kernel& k)
      : ptrs(k.slots.size(), nullptr), base(k.slots.size(), 0), stride(k.slots.size(), 12345),
        rstride(k.slots.size(), 12345), params(k.params.size() + 1, 0) {}
  void run(const CompiledKernel& ck, int64_t n) {
    ck.fn(n, ptrs.data(), base.data(), stride.data(), params.data(), &err, r, rstride.data());
  }
};

std::shared_ptr<CompiledKernel> jit(const kir::Kernel& k, int opt = 2) {
  auto ck = llvmjit::compile(k, opt);
  REQUIRE(ck);
  REQUIRE(ck->fn != nullptr);
  return ck;
}

// Compiles `out = op(args...)` (value dtype Out, operands In) and runs it over the arrays.
template <DType Out, DType In>
std::vector<ctype<Out>> run_op(Op op, std::vector<std::vector<ctype<In>>> args,
                               int32_t* err = nullptr, int opt = 2) {
  KernelBuilder kb;
  std::vector<int> srcs;
  for (size_t a = 0; a < args.size(); ++a)
    srcs.push_back(kb.load(kb.in(In)));
  int o = kb.out(Out);
  kb.store(o, kb.op(op, Out, srcs));
  auto ck = jit(kb.k, opt);
  size_t n = args[0].size();
  std::vector<ctype<Out>> result(n);
  Call call(kb.k);
  for (size_t a = 0; a < args.size(); ++a)
    call.ptrs[a] = args[a].data();
  call.ptrs[o] = result.data();
  call.run(*ck, int64_t(n));
  if (err) *err = call.err;
  return result;
}

// ---- float comparison --------------------------------------------------------------------------

// The error bound of a float32 sum (docs/architecture.md) relative to the sum of its terms'
// magnitudes: float32 partial sums of at most 16 terms (and a 4-level tree of 16 lanes) added
// in float64.
constexpr double kF32SumError = 20 * 0x1p-24;

template <class F> bool same_float(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(F)) == 0;
}

// Distance in units in the last place; +0 and -0 are equal, NaN only matches NaN.
template <class F> int64_t ulp_distance(F a, F b) {
  using I = std::conditional_t<sizeof(F) == 4, int32_t, int64_t>;
  constexpr int64_t kFar = std::numeric_limits<int64_t>::max();
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : kFar;
  if (a == b) return 0;
  if (std::signbit(a) != std::signbit(b)) return kFar;
  I ia = std::bit_cast<I>(a), ib = std::bit_cast<I>(b);
  return ia > ib ? int64_t(ia) - int64_t(ib) : int64_t(ib) - int64_t(ia);
}

template <class T> std::string show(T v) {
  std::ostringstream os;
  os.precision(17);
  if constexpr (sizeof(T) == 1)
    os << int(v);
  else
    os << v;
  return os.str();
}

// Counts mismatches of got vs. want over i, describing the first few.
template <class Pred, class Describe> size_t count_bad(size_t n, Pred&& ok, Describe&& describe) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (!ok(i) && bad++ < 4) UNSCOPED_INFO(describe(i));
  return bad;
}

// ---- inputs ------------------------------------------------------------------------------------

// Seeded by tj::test::test_seed; the seed is printed.
std::mt19937_64& rng() {
  static std::mt19937_64 r = [] {
    uint64_t seed = tj::test::test_seed(20240611);
    WARN("test_llvm_codegen random seed (TJ_TEST_SEED): " << seed);
    return std::mt19937_64(seed);
  }();
  return r;
}

template <class F> std::vector<F> float_specials() {
  const F inf = std::numeric_limits<F>::infinity();
  return {F(0),
          F(-0.0),
          F(1),
          F(-1),
          F(0.5),
          F(-0.5),
          F(2),
          F(-2),
          F(2.5),
          F(-2.5),
          F(3.5),
          F(10),
          F(-10),
          F(100),
          F(-100),
          F(1e-30),
          F(0.1),
          F(-0.1),
          F(3.14159265358979),
          inf,
          -inf,
          std::numeric_limits<F>::quiet_NaN(),
          std::numeric_limits<F>::denorm_min(),
          std::numeric_limits<F>::max()};
}

// Specials, then uniform values in [lo, hi]: n values in all.
template <class F> std::vector<F> float_inputs(size_t n, double lo, double hi) {
  std::vector<F> v = float_specials<F>();
  std::uniform_real_distribution<double> d(lo, hi);
  while (v.size() < n)
    v.push_back(F(d(rng())));
  return v;
}

template <class T> std::vector<T> int_specials() {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_same_v<T, uint8_t>)
    return {0, 1, 2, 3, 7, 100, 127, 128, 200, 254, 255};
  else
    return {L::min(), T(L::min() + 1), T(-7),   T(-3), T(-2), T(-1), 0, 1, 2, 3,
            7,        T(L::max() - 1), L::max()};
}

// All pairs of specials, then random pairs: two arrays of equal length.
template <DType D> std::array<std::vector<ctype<D>>, 2> int_pairs(size_t random_pairs) {
  using T = ctype<D>;
  std::array<std::vector<T>, 2> ab;
  if constexpr (D == kBool) {
    for (T a : {0, 1})
      for (T b : {0, 1})
        ab[0].push_back(a), ab[1].push_back(b);
    std::uniform_int_distribution<int> bit(0, 1);
    for (size_t i = 0; i < random_pairs; ++i)
      ab[0].push_back(T(bit(rng()))), ab[1].push_back(T(bit(rng())));
  } else {
    auto sp = int_specials<T>();
    for (T a : sp)
      for (T b : sp)
        ab[0].push_back(a), ab[1].push_back(b);
    std::uniform_int_distribution<int64_t> d(std::numeric_limits<T>::min(),
                                             std::numeric_limits<T>::max());
    std::uniform_int_distribution<int64_t> small(-9, 9);
    for (size_t i = 0; i < random_pairs; ++i) {
      ab[0].push_back(T(d(rng())));
      ab[1].push_back(T(i % 2 ? d(rng()) : small(rng()))); // small divisors too
    }
  }
  return ab;
}

// ---- scalar references -------------------------------------------------------------------------

// IEEE half from float32, rounding to nearest even (computed exactly in double).
uint16_t ref_f32_to_f16(float f) {
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return 0x7e00;
  double v = std::fabs(double(f));
  if (v >= 65520.0) return sign | 0x7c00;
  if (v < std::ldexp(1.0, -14)) return sign | uint16_t(std::nearbyint(v * std::ldexp(1.0, 24)));
  int e;
  std::frexp(v, &e); // v = m * 2^e, m in [0.5, 1)
  int exp = e - 1;
  double r = std::nearbyint(std::ldexp(v, 10 - exp)); // in [1024, 2048]
  if (r == 2048) r = 1024, ++exp;
  if (exp + 15 >= 31) return sign | 0x7c00;
  return sign | uint16_t((exp + 15) << 10) | uint16_t(r - 1024);
}

float ref_f16_to_f32(uint16_t h) {
  int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(double(man), -24);
  else if (exp == 31)
    v = man ? std::numeric_limits<double>::quiet_NaN() : HUGE_VAL;
  else
    v = std::ldexp(double(1024 + man), exp - 25);
  return float(h & 0x8000 ? -v : v);
}

uint16_t ref_f32_to_bf16(float f) {
  if (std::isnan(f)) return 0x7fc0;
  uint32_t b = std::bit_cast<uint32_t>(f);
  return uint16_t((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

float ref_bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

bool f16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

// A value of any dtype, as the reference sees it: floats exactly as double, ints as int64.
struct Scalar {
  bool is_float;
  double f;
  int64_t i;
};

template <DType D> Scalar to_scalar(ctype<D> v) {
  if constexpr (D == kFloat16)
    return {true, double(ref_f16_to_f32(v)), 0};
  else if constexpr (D == kBFloat16)
    return {true, double(ref_bf16_to_f32(v)), 0};
  else if constexpr (D == kFloat32 || D == kFloat64)
    return {true, double(v), 0};
  else
    return {false, 0, int64_t(v)};
}

// The kernel IR's Cast, in scalar C++.
template <DType D> ctype<D> ref_cast(Scalar s) {
  using T = ctype<D>;
  if constexpr (D == kFloat64) {
    return s.is_float ? s.f : double(s.i);
  } else if constexpr (D == kFloat32 || D == kFloat16 || D == kBFloat16) {
    float f = s.is_float ? float(s.f) : float(s.i); // float64 -> float32 first: two roundings
    if constexpr (D == kFloat32)
      return f;
    else if constexpr (D == kFloat16)
      return ref_f32_to_f16(f);
    else
      return ref_f32_to_bf16(f);
  } else if constexpr (D == kBool) {
    return s.is_float ? T(s.f != 0 || std::isnan(s.f)) : T(s.i != 0);
  } else {
    int64_t i = s.i;
    if (s.is_float) {
      if (std::isnan(s.f))
        i = 0;
      else if (s.f >= 0x1p63)
        i = std::numeric_limits<int64_t>::max();
      else if (s.f < -0x1p63)
        i = std::numeric_limits<int64_t>::min();
      else
        i = int64_t(s.f);
    }
    return T(uint64_t(i)); // wraps to the width
  }
}

template <DType D> ctype<D> ref_int_pow(ctype<D> a, ctype<D> b) {
  using T = ctype<D>;
  int64_t e = int64_t(b), base = int64_t(a);
  if (e < 0) return base == 1 ? T(1) : base == -1 ? T(e & 1 ? -1 : 1) : T(0);
  uint64_t r = 1, x = uint64_t(base);
  for (; e; e >>= 1, x *= x)
    if (e & 1) r *= x;
  return D == kBool ? T(r & 1) : T(r);
}

template <DType D> ctype<D> ref_int_binary(Op op, ctype<D> a, ctype<D> b, bool& err) {
  using T = ctype<D>;
  constexpr bool is_bool = D == kBool;
  constexpr bool uns = D == kBool || D == kUInt8;
  uint64_t ua = uint64_t(int64_t(a)), ub = uint64_t(int64_t(b));
  switch (op) {
  case Op::Add:
    return is_bool ? T(a | b) : T(ua + ub);
  case Op::Sub:
    return is_bool ? T(a ^ b) : T(ua - ub);
  case Op::Mul:
    return is_bool ? T(a & b) : T(ua * ub);
  case Op::Div:
    if (b == 0) return err = true, T(0);
    if (!uns && int64_t(b) == -1) return T(0 - ua);
    return T(a / b);
  case Op::Fmod:
    if (b == 0) return err = true, T(0);
    if (!uns && int64_t(b) == -1) return T(0);
    return T(a % b);
  case Op::Pow:
    return ref_int_pow<D>(a, b);
  case Op::Max:
    return std::max(a, b);
  case Op::Min:
    return std::min(a, b);
  case Op::And:
    return T(a & b);
  case Op::Or:
    return T(a | b);
  case Op::Xor:
    return T(a ^ b);
  default:
    FAIL("not an int binary op");
    return 0;
  }
}

template <DType D> ctype<D> ref_int_unary(Op op, ctype<D> a) {
  using T = ctype<D>;
  constexpr bool uns = D == kBool || D == kUInt8;
  uint64_t ua = uint64_t(int64_t(a));
  switch (op) {
  case Op::Neg:
    return D == kBool ? a : T(0 - ua);
  case Op::Abs:
    return uns || a >= 0 ? a : T(0 - ua);
  case Op::BitNot:
    return D == kBool ? T(!a) : T(~ua);
  case Op::Not:
    return T(!a);
  case Op::Floor:
  case Op::Ceil:
  case Op::Round:
  case Op::Trunc:
    return a;
  default:
    FAIL("not an int unary op");
    return 0;
  }
}

template <class F> F ref_max(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a; // +0 > -0
  return a > b ? a : b;
}

template <class F> F ref_min(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

// Philox4x32-10 (Random123's philox4x32_R with R = 10).
std::array<uint32_t, 4> ref_philox(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    if (r) k[0] += 0x9E3779B9u, k[1] += 0xBB67AE85u;
    uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1],
         uint32_t(p0)};
  }
  return c;
}

// libmvec's documented bound (glibc manual, "Errors in Math Functions") is 4 ulp.
constexpr int kVecMathUlp = 4;

bool host_has(const char* feature) {
  return llvmjit::host_target_id().find(std::string("+") + feature + ",") != std::string::npos;
}

} // namespace

// ---- float ops ---------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("llvm: float unary ops", "[llvm]", F32, F64) {
  constexpr DType D = TestType::value;
  using F = ctype<D>;
  const int opt = GENERATE(0, 2);
  struct Case {
    Op op;
    F (*ref)(F);
    double lo, hi; // range of the random inputs
    int ulp;       // 0: bit-exact
  };
  const Case cases[] = {
      {Op::Neg, [](F x) { return -x; }, -1e6, 1e6, 0},
      {Op::Abs, [](F x) { return std::fabs(x); }, -1e6, 1e6, 0},
      {Op::Floor, [](F x) { return std::floor(x); }, -100, 100, 0},
      {Op::Ceil, [](F x) { return std::ceil(x); }, -100, 100, 0},
      {Op::Trunc, [](F x) { return std::trunc(x); }, -100, 100, 0},
      {Op::Round, [](F x) { return std::nearbyint(x); }, -100, 100, 0}, // half to even
      {Op::Sqrt, [](F x) { return std::sqrt(x); }, -1, 1e6, 0},
      {Op::Recip, [](F x) { return F(1) / x; }, -1e6, 1e6, 0},
      {Op::Exp, [](F x) { return std::exp(x); }, -80, 80, kVecMathUlp},
      {Op::Exp2, [](F x) { return std::exp2(x); }, -100, 100, kVecMathUlp},
      {Op::Expm1, [](F x) { return std::expm1(x); }, -10, 10, kVecMathUlp},
      {Op::Log, [](F x) { return std::log(x); }, -1, 1e6, kVecMathUlp},
      {Op::Log2, [](F x) { return std::log2(x); }, -1, 1e6, kVecMathUlp},
      {Op::Log10, [](F x) { return std::log10(x); }, -1, 1e6, kVecMathUlp},
      {Op::Log1p, [](F x) { return std::log1p(x); }, -1, 100, kVecMathUlp},
      {Op::Sin, [](F x) { return std::sin(x); }, -10, 10, kVecMathUlp},
      {Op::Cos, [](F x) { return std::cos(x); }, -10, 10, kVecMathUlp},
      {Op::Tan, [](F x) { return std::tan(x); }, -1.5, 1.5, kVecMathUlp},
      {Op::Asin, [](F x) { return std::asin(x); }, -1, 1, kVecMathUlp},
      {Op::Acos, [](F x) { return std::acos(x); }, -1, 1, kVecMathUlp},
      {Op::Atan, [](F x) { return std::atan(x); }, -10, 10, kVecMathUlp},
      {Op::Sinh, [](F x) { return std::sinh(x); }, -10, 10, kVecMathUlp},
      {Op::Cosh, [](F x) { return std::cosh(x); }, -10, 10, kVecMathUlp},
      {Op::Tanh, [](F x) { return std::tanh(x); }, -10, 10, kVecMathUlp},
      {Op::Erf, [](F x) { return std::erf(x); }, -4, 4, kVecMathUlp},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(ir::name(c.op)) {
      // 203 elements: the vector loop, its epilogue and the scalar remainder all run.
      std::vector<F> x = float_inputs<F>(203, c.lo, c.hi);
      auto y = run_op<D, D>(c.op, {x}, nullptr, opt);
      INFO("opt " << opt);
      size_t bad = count_bad(
          x.size(),
          [&](size_t i) {
            return c.ulp ? ulp_distance(y[i], c.ref(x[i])) <= c.ulp : same_float(y[i], c.ref(x[i]));
          },
          [&](size_t i) {
            return ir::name(c.op).data() + std::string("(") + show(x[i]) + ") = " + show(y[i]) +
                   ", expected " + show(c.ref(x[i]));
          });
      CHECK(bad == 0);
    }
  }
}

TEMPLATE_TEST_CASE("llvm: float binary ops", "[llvm]", F32, F64) {
  constexpr DType D = TestType::value;
  using F = ctype<D>;
  const int opt = GENERATE(0, 2);
  INFO("opt " << opt);
  struct Case {
    Op op;
    F (*ref)(F, F);
    int ulp;
  };
  const Case cases[] = {
      {Op::Add, [](F a, F b) { return a + b; }, 0},
      {Op::Sub, [](F a, F b) { return a - b; }, 0},
      {Op::Mul, [](F a, F b) { return a * b; }, 0},
      {Op::Div, [](F a, F b) { return a / b; }, 0},
      {Op::Fmod, [](F a, F b) { return std::fmod(a, b); }, 0},
      {Op::Max, ref_max<F>, 0},
      {Op::Min, ref_min<F>, 0},
      {Op::Pow, [](F a, F b) { return std::pow(a, b); }, kVecMathUlp},
      {Op::Atan2, [](F a, F b) { return std::atan2(a, b); }, kVecMathUlp},
  };
  // Every pair of specials, then random pairs (positive bases for Pow).
  std::vector<F> a, b;
  for (F x : float_specials<F>())
    for (F y : float_specials<F>())
      a.push_back(x), b.push_back(y);
  std::uniform_real_distribution<double> d(-8, 8), pos(0, 8);
  for (int i = 0; i < 300; ++i)
    a.push_back(F(i % 2 ? d(rng()) : pos(rng()))), b.push_back(F(d(rng())));
  for (const Case& c : cases) {
    DYNAMIC_SECTION(ir::name(c.op)) {
      auto y = run_op<D, D>(c.op, {a, b}, nullptr, opt);
      size_t bad = count_bad(
          a.size(),
          [&](size_t i) {
            F want = c.ref(a[i], b[i]);
            return c.ulp ? ulp_distance(y[i], want) <= c.ulp : same_float(y[i], want);
          },
          [&](size_t i) {
            return ir::name(c.op).data() + std::string("(") + show(a[i]) + ", " + show(b[i]) +
                   ") = " + show(y[i]) + ", expected " + show(c.ref(a[i], b[i]));
          });
      CHECK(bad == 0);
    }
  }
  struct Cmp {
    Op op;
    bool (*ref)(F, F);
  };
  const Cmp cmps[] = {{Op::CmpEq, [](F x, F y) { return x == y; }},
                      {Op::CmpNe, [](F x, F y) { return x != y; }}, // unordered: NaN != NaN
                      {Op::CmpLt, [](F x, F y) { return x < y; }},
                      {Op::CmpLe, [](F x, F y) { return x <= y; }}};
  for (const Cmp& c : cmps) {
    DYNAMIC_SECTION(ir::name(c.op)) {
      auto y = run_op<kBool, D>(c.op, {a, b}, nullptr, opt);
      size_t bad = count_bad(
          a.size(), [&](size_t i) { return y[i] == uint8_t(c.ref(a[i], b[i])); },
          [&](size_t i) { return show(a[i]) + " vs " + show(b[i]) + ": " + show(y[i]); });
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("llvm: float ops reject integer-only ops", "[llvm]") {
  KernelBuilder kb;
  int a = kb.load(kb.in(kFloat32));
  int o = kb.out(kFloat32);
  kb.store(o, kb.op(Op::Xor, kFloat32, {a, a}));
  CHECK_THROWS_WITH(llvmjit::compile(kb.k, 2),
                    Catch::Contains("Xor does not apply to torch.float32") &&
                        Catch::Contains("load slot0"));
}

// ---- integer and bool ops ----------------------------------------------------------------------

TEMPLATE_TEST_CASE("llvm: integer and bool ops", "[llvm]", Bool, U8, I8, I16, I32, I64) {
  constexpr DType D = TestType::value;
  using T = ctype<D>;
  const int opt = GENERATE(0, 2);
  INFO("opt " << opt);
  auto pairs = int_pairs<D>(200);
  const std::vector<T>& a = pairs[0];
  const std::vector<T>& b = pairs[1];
  const Op binary[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Fmod, Op::Max,
                       Op::Min, Op::And, Op::Or,  Op::Xor, Op::Pow};
  for (Op op : binary) {
    DYNAMIC_SECTION(ir::name(op)) {
      std::vector<T> y_in = b;
      if (op == Op::Pow && D != kBool) { // exponents from -3 to 70, and the specials
        std::uniform_int_distribution<int> e(-3, 70);
        for (size_t i = a.size() / 2; i < a.size(); ++i)
          y_in[i] = D == kUInt8 ? T(e(rng()) + 3) : T(e(rng()));
      }
      int32_t err = 0;
      auto y = run_op<D, D>(op, {a, y_in}, &err, opt);
      bool want_err = false;
      size_t bad = count_bad(
          a.size(),
          [&](size_t i) { return y[i] == ref_int_binary<D>(op, a[i], y_in[i], want_err); },
          [&](size_t i) {
            bool e = false;
            return ir::name(op).data() + std::string("(") + show(a[i]) + ", " + show(y_in[i]) +
                   ") = " + show(y[i]) + ", expected " +
                   show(ref_int_binary<D>(op, a[i], y_in[i], e));
          });
      CHECK(bad == 0);
      CHECK(err == int32_t(want_err));
    }
  }
  struct Cmp {
    Op op;
    bool (*ref)(T, T);
  };
  const Cmp cmps[] = {{Op::CmpEq, [](T x, T y) { return x == y; }},
                      {Op::CmpNe, [](T x, T y) { return x != y; }},
                      {Op::CmpLt, [](T x, T y) { return x < y; }},
                      {Op::CmpLe, [](T x, T y) { return x <= y; }}};
  for (const Cmp& c : cmps) {
    DYNAMIC_SECTION(ir::name(c.op)) {
      auto y = run_op<kBool, D>(c.op, {a, b}, nullptr, opt);
      size_t bad = count_bad(
          a.size(), [&](size_t i) { return y[i] == uint8_t(c.ref(a[i], b[i])); },
          [&](size_t i) { return show(a[i]) + " vs " + show(b[i]) + ": " + show(y[i]); });
      CHECK(bad == 0);
    }
  }
  std::vector<Op> unary = {Op::Neg, Op::Abs, Op::BitNot, Op::Floor, Op::Ceil, Op::Round, Op::Trunc};
  if (D == kBool) unary.push_back(Op::Not);
  for (Op op : unary) {
    DYNAMIC_SECTION(ir::name(op)) {
      auto y = run_op<D, D>(op, {a}, nullptr, opt);
      size_t bad = count_bad(
          a.size(), [&](size_t i) { return y[i] == ref_int_unary<D>(op, a[i]); },
          [&](size_t i) { return show(a[i]) + " -> " + show(y[i]); });
      CHECK(bad == 0);
    }
  }
  SECTION("float-only ops are rejected") {
    KernelBuilder kb;
    int x = kb.load(kb.in(D));
    kb.store(kb.out(D), kb.op(Op::Sqrt, D, {x}));
    CHECK_THROWS_WITH(llvmjit::compile(kb.k, 2),
                      Catch::Contains("Sqrt does not apply to " + dtype_name(D)));
  }
}

TEST_CASE("llvm: integer division by zero sets the error flag", "[llvm]") {
  for (Op op : {Op::Div, Op::Fmod}) {
    for (size_t zero_at : {size_t(3), size_t(200), size_t(1000)}) { // vector body, tail, none
      std::vector<int32_t> a(203), b(203);
      for (size_t i = 0; i < a.size(); ++i)
        a[i] = int32_t(i * 7 - 500), b[i] = int32_t(i % 5) + 1;
      if (zero_at < b.size()) b[zero_at] = 0;
      int32_t err = 0;
      auto y = run_op<kInt32, kInt32>(op, {a, b}, &err);
      INFO(ir::name(op) << " zero at " << zero_at);
      CHECK(err == (zero_at < b.size() ? 1 : 0));
      if (zero_at < b.size()) CHECK(y[zero_at] == 0);
      CHECK(y[1] == (op == Op::Div ? a[1] / b[1] : a[1] % b[1]));
    }
  }
  SECTION("the flag is left untouched when nothing divides by zero, else its bit is ORed in") {
    KernelBuilder kb;
    int x = kb.load(kb.in(kInt64));
    int o = kb.out(kInt64);
    kb.store(o, kb.op(Op::Div, kInt64, {x, x}));
    auto ck = jit(kb.k);
    std::vector<int64_t> in(50, 3), out(50);
    Call call(kb.k);
    call.ptrs = {in.data(), out.data()};
    call.err = 7;
    call.run(*ck, 50);
    CHECK(call.err == 7);
    in[10] = 0;
    call.err = 4;
    call.run(*ck, 50);
    CHECK(call.err == (4 | kir::kErrDivideByZero));
    CHECK(out[10] == 0);
    CHECK(out[11] == 1);
  }
  SECTION("INT_MIN / -1 wraps, INT_MIN % -1 is 0") {
    int32_t err = 0;
    auto q = run_op<kInt64, kInt64>(Op::Div, {{INT64_MIN, 5}, {-1, -1}}, &err);
    CHECK(q == std::vector<int64_t>{INT64_MIN, -5});
    auto r = run_op<kInt8, kInt8>(Op::Fmod, {{-128, 7}, {-1, -1}}, &err);
    CHECK(r == std::vector<int8_t>{0, 0});
    CHECK(err == 0);
  }
}

TEST_CASE("llvm: Not of any dtype, comparisons of 16-bit floats", "[llvm]") {
  auto nf = run_op<kBool, kFloat32>(Op::Not, {{0.f, -0.f, 1.f, NAN, -INFINITY}});
  CHECK(nf == std::vector<uint8_t>{1, 1, 0, 0, 0});
  auto ni = run_op<kBool, kInt16>(Op::Not, {{0, 1, -1, 256}});
  CHECK(ni == std::vector<uint8_t>{1, 0, 0, 0});
  // bfloat16 bits: -0 == +0, 1 < 2, NaN unordered; float16 likewise.
  auto eq =
      run_op<kBool, kBFloat16>(Op::CmpEq, {{0x8000, 0x3f80, 0x7fc0}, {0x0000, 0x4000, 0x7fc0}});
  CHECK(eq == std::vector<uint8_t>{1, 0, 0});
  auto lt =
      run_op<kBool, kBFloat16>(Op::CmpLt, {{0x8000, 0x3f80, 0xbf80}, {0x0000, 0x4000, 0x3f80}});
  CHECK(lt == std::vector<uint8_t>{0, 1, 1});
  auto ne =
      run_op<kBool, kFloat16>(Op::CmpNe, {{0x8000, 0x3c00, 0x7e00}, {0x0000, 0x4000, 0x7e00}});
  CHECK(ne == std::vector<uint8_t>{0, 1, 1});
}

TEST_CASE("llvm: Where selects", "[llvm]") {
  KernelBuilder kb;
  int c = kb.load(kb.in(kBool));
  int x = kb.load(kb.in(kFloat32));
  int y = kb.load(kb.in(kFloat32));
  int o = kb.out(kFloat32);
  int oi = kb.out(kInt64);
  kb.store(o, kb.value(Op::Where, kFloat32, {c, x, y}));
  int ix = kb.op(Op::Cast, kInt64, {x});
  int iy = kb.op(Op::Cast, kInt64, {y});
  kb.store(oi, kb.value(Op::Where, kInt64, {c, ix, iy}));
  auto ck = jit(kb.k);
  const size_t n = 77;
  std::vector<uint8_t> cond(n);
  std::vector<float> a(n), b(n), out(n);
  std::vector<int64_t> outi(n);
  for (size_t i = 0; i < n; ++i)
    cond[i] = i % 3 == 0, a[i] = float(i), b[i] = -float(i);
  Call call(kb.k);
  call.ptrs = {cond.data(), a.data(), b.data(), out.data(), outi.data()};
  call.run(*ck, n);
  for (size_t i = 0; i < n; ++i) {
    CHECK(out[i] == (cond[i] ? a[i] : b[i]));
    CHECK(outi[i] == int64_t(cond[i] ? a[i] : b[i]));
  }
}

// ---- casts -------------------------------------------------------------------------------------

namespace {

// Source values of each dtype for the cast matrix.
template <DType D> std::vector<ctype<D>> cast_sources() {
  using T = ctype<D>;
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> reals = {0.0,
                                     -0.0,
                                     1.0,
                                     -1.0,
                                     0.5,
                                     -1.5,
                                     2.5,
                                     -2.7,
                                     3.5,
                                     127.5,
                                     -128.5,
                                     255.9,
                                     256.1,
                                     300.7,
                                     65504.0,
                                     65519.0,
                                     65520.0,
                                     1e-8,
                                     6e-8,
                                     3e-8,
                                     1e20,
                                     -1e20,
                                     3e9,
                                     -3e9,
                                     0x1p31,
                                     0x1p63,
                                     -0x1p63,
                                     3.4e38,
                                     1e300,
                                     -1e300,
                                     1 + 0x1p-11,
                                     1 + 3 * 0x1p-11,
                                     1 + 0x1p-8,
                                     1 + 3 * 0x1p-8,
                                     1 + 0x1p-11 + 0x1p-30, // rounds twice
                                     inf,
                                     -inf,
                                     nan,
                                     -nan};
  std::vector<T> v;
  if constexpr (D == kFloat32 || D == kFloat64) {
    for (double r : reals)
      v.push_back(T(r));
  } else if constexpr (D == kFloat16) {
    v = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00,
         0xfe00, 0x0001, 0x03ff, 0x0400, 0x3555, 0x5bd0, 0x57ff, 0xd800, 0x4b00};
  } else if constexpr (D == kBFloat16) {
    v = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc0,
         0x0001, 0x4b00, 0x5f00, 0xdf00, 0x5f80, 0x4f00, 0x437f, 0xc300, 0x3e80, 0xc0a0};
  } else if constexpr (D == kBool) {
    v = {0, 1};
  } else {
    v = int_specials<T>();
    for (int64_t x : {100, -100, 255, 256, 65504, 65520, 70000, 16777217, -16777217})
      v.push_back(T(x));
    if constexpr (D == kInt64) {
      v.push_back(T(9007199254740993LL)); // 2^53 + 1: float64 rounds
      v.push_back(T(0x7fffff7fffffffLL));
    }
  }
  std::uniform_int_distribution<uint64_t> bits;
  for (int i = 0; i < 30 && D != kBool; ++i) {
    uint64_t r = bits(rng());
    if constexpr (std::is_same_v<T, float>) {
      v.push_back(std::bit_cast<float>(uint32_t(r)));
    } else if constexpr (std::is_same_v<T, double>) {
      v.push_back(std::bit_cast<double>(r));
    } else {
      v.push_back(T(r));
    }
  }
  return v;
}

template <DType Out> bool cast_matches(ctype<Out> got, ctype<Out> want) {
  if constexpr (Out == kFloat32 || Out == kFloat64)
    return same_float(got, want);
  else if constexpr (Out == kFloat16)
    return got == want || (f16_is_nan(got) && f16_is_nan(want));
  else
    return got == want; // bfloat16 NaN is exactly 0x7fc0
}

// The expected result of casting x: a cast to the same dtype is the identity (NaN bits too).
template <DType In, DType Out> ctype<Out> expected_cast(ctype<In> x) {
  if constexpr (In == Out)
    return x;
  else
    return ref_cast<Out>(to_scalar<In>(x));
}

template <DType In, DType Out> void check_cast(int opt) {
  auto x = cast_sources<In>();
  std::vector<ctype<In>> padded = x;
  while (padded.size() < 150)
    padded.push_back(x[padded.size() % x.size()]); // vector path too
  auto y = run_op<Out, In>(Op::Cast, {padded}, nullptr, opt);
  size_t bad = count_bad(
      padded.size(),
      [&](size_t i) { return cast_matches<Out>(y[i], expected_cast<In, Out>(padded[i])); },
      [&](size_t i) {
        return dtype_name(In) + " " + show(padded[i]) + " -> " + dtype_name(Out) + " " +
               show(y[i]) + ", expected " + show(expected_cast<In, Out>(padded[i]));
      });
  INFO(dtype_name(In) << " -> " << dtype_name(Out) << " at opt " << opt);
  CHECK(bad == 0);
}

template <DType In> void check_casts_from(int opt) {
  check_cast<In, kBool>(opt);
  check_cast<In, kUInt8>(opt);
  check_cast<In, kInt8>(opt);
  check_cast<In, kInt16>(opt);
  check_cast<In, kInt32>(opt);
  check_cast<In, kInt64>(opt);
  check_cast<In, kFloat16>(opt);
  check_cast<In, kBFloat16>(opt);
  check_cast<In, kFloat32>(opt);
  check_cast<In, kFloat64>(opt);
}

} // namespace

TEST_CASE("llvm: reference half and bfloat16 conversions", "[llvm]") {
  // The test's own references, on known answers.
  CHECK(ref_f32_to_f16(65504.f) == 0x7bff);
  CHECK(ref_f32_to_f16(65519.f) == 0x7bff);
  CHECK(ref_f32_to_f16(65520.f) == 0x7c00);
  CHECK(ref_f32_to_f16(1 + 0x1p-11f) == 0x3c00);     // tie -> even
  CHECK(ref_f32_to_f16(1 + 3 * 0x1p-11f) == 0x3c02); // tie -> even (up)
  CHECK(ref_f32_to_f16(0x1p-24f) == 0x0001);
  CHECK(ref_f32_to_f16(0x1p-25f) == 0x0000);
  CHECK(ref_f32_to_f16(-2.f) == 0xc000);
  CHECK(ref_f16_to_f32(0x3555) == 0x1.554p-2f);
  CHECK(ref_f32_to_bf16(1 + 0x1p-8f) == 0x3f80);
  CHECK(ref_f32_to_bf16(1 + 3 * 0x1p-8f) == 0x3f82);
  CHECK(ref_f32_to_bf16(3.4e38f) == 0x7f80);
  CHECK(ref_f32_to_bf16(-NAN) == 0x7fc0);
}

TEST_CASE("llvm: casts between all dtypes", "[llvm]") {
  const int opt = GENERATE(0, 2);
  check_casts_from<kBool>(opt);
  check_casts_from<kUInt8>(opt);
  check_casts_from<kInt8>(opt);
  check_casts_from<kInt16>(opt);
  check_casts_from<kInt32>(opt);
  check_casts_from<kInt64>(opt);
  check_casts_from<kFloat16>(opt);
  check_casts_from<kBFloat16>(opt);
  check_casts_from<kFloat32>(opt);
  check_casts_from<kFloat64>(opt);
}

TEST_CASE("llvm: cast known answers", "[llvm]") {
  auto f16 = run_op<kFloat16, kFloat32>(
      Op::Cast, {{65504.f, 65520.f, 1 + 0x1p-11f, 1 + 3 * 0x1p-11f, 0x1p-24f, -INFINITY}});
  CHECK(f16 == std::vector<uint16_t>{0x7bff, 0x7c00, 0x3c00, 0x3c02, 0x0001, 0xfc00});
  // float64 -> float16 rounds through float32 (1 + 2^-11 + 2^-30 would round up directly).
  auto f16d = run_op<kFloat16, kFloat64>(Op::Cast, {{1 + 0x1p-11 + 0x1p-30, 1e10}});
  CHECK(f16d == std::vector<uint16_t>{0x3c00, 0x7c00});
  auto bf = run_op<kBFloat16, kFloat32>(Op::Cast, {{1 + 0x1p-8f, 1 + 3 * 0x1p-8f, 3.4e38f, NAN}});
  CHECK(bf == std::vector<uint16_t>{0x3f80, 0x3f82, 0x7f80, 0x7fc0});
  auto i32 = run_op<kInt32, kFloat32>(Op::Cast, {{NAN, 1e20f, -1e20f, 3e9f, -2.7f}});
  CHECK(i32 == std::vector<int32_t>{0, -1, 0, int32_t(3000000000u), -2});
  auto u8 = run_op<kUInt8, kFloat64>(Op::Cast, {{300.5, -1.0, 255.9, NAN}});
  CHECK(u8 == std::vector<uint8_t>{44, 255, 255, 0});
  auto b = run_op<kBool, kFloat32>(Op::Cast, {{0.5f, -0.f, NAN, 0.f}});
  CHECK(b == std::vector<uint8_t>{1, 0, 1, 0});
  auto back = run_op<kFloat32, kBFloat16>(Op::Cast, {{0x3f80, 0xc0a0, 0x7f80}});
  CHECK(back == std::vector<float>{1.f, -5.f, INFINITY});
}

// ---- slots, indices, params --------------------------------------------------------------------

TEST_CASE("llvm: contiguous, broadcast and strided slots", "[llvm]") {
  // out[o] = a[e_a] * 10 + b[e_b] for one slot of each kind, and a strided output.
  for (int opt : {0, 1, 2, 3}) {
    KernelBuilder kb;
    int sa = kb.in(kFloat64, StrideKind::Contiguous);
    int sb = kb.in(kFloat64, StrideKind::Broadcast);
    int sc = kb.in(kFloat64, StrideKind::Strided);
    int so = kb.out(kFloat64, StrideKind::Strided);
    int sp = kb.out(kFloat64, StrideKind::Contiguous);
    int ten = kb.cnst(kb.param(kFloat64));
    int a = kb.load(sa), b = kb.load(sb), c = kb.load(sc);
    int sum = kb.op(Op::Add, kFloat64, {kb.op(Op::Mul, kFloat64, {a, ten}), b});
    kb.store(so, sum);
    kb.store(sp, kb.op(Op::Sub, kFloat64, {c, b}));
    auto ck = jit(kb.k, opt);
    const int64_t n = 37;
    std::vector<double> va(n + 5), vb(4), vc(3 * n + 10), vo(2 * n + 3, -1), vp(n + 2, -1);
    for (size_t i = 0; i < va.size(); ++i)
      va[i] = double(i);
    vb = {0.25, 0.5, 0.75, 1.0};
    for (size_t i = 0; i < vc.size(); ++i)
      vc[i] = 1000.0 + double(i);
    Call call(kb.k);
    call.ptrs = {va.data(), vb.data(), vc.data(), vo.data(), vp.data()};
    call.params[0] = std::bit_cast<uint64_t>(10.0);
    call.base = {5, 2, 3 * n + 5, 1, 2};
    call.stride[sc] = -3; // walks backwards
    call.stride[so] = 2;
    call.run(*ck, n);
    INFO("opt " << opt);
    for (int64_t i = 0; i < n; ++i) {
      CHECK(vo[1 + 2 * i] == (5 + i) * 10 + 0.75);
      CHECK(vp[2 + i] == vc[3 * n + 5 - 3 * i] - 0.75);
    }
    CHECK(vo[0] == -1);
    CHECK(vo[2] == -1);
    CHECK(vp[1] == -1);
  }
}

TEST_CASE("llvm: index slots and Iota", "[llvm]") {
  KernelBuilder kb;
  int ic = kb.index(StrideKind::Contiguous);
  int ib = kb.index(StrideKind::Broadcast);
  int is = kb.index(StrideKind::Strided);
  int in = kb.in(kFloat32, StrideKind::Strided);
  int oc = kb.out(kInt64), ob = kb.out(kInt64), os = kb.out(kInt64), oin = kb.out(kInt32);
  kb.store(oc, kb.iota(ic));
  kb.store(ob, kb.iota(ib));
  kb.store(os, kb.iota(is));
  kb.store(oin, kb.value(Op::Iota, kInt32, {}, in)); // the element index of an input slot
  auto ck = jit(kb.k);
  const int64_t n = 50;
  std::vector<int64_t> c(n), b(n), s(n);
  std::vector<int32_t> e(n);
  Call call(kb.k);
  call.ptrs[oc] = c.data();
  call.ptrs[ob] = b.data();
  call.ptrs[os] = s.data();
  call.ptrs[oin] = e.data();
  call.base[ic] = 100;
  call.base[ib] = 7;
  call.base[is] = 1000;
  call.stride[is] = -4;
  call.base[in] = 3;
  call.stride[in] = 5;
  call.run(*ck, n);
  for (int64_t i = 0; i < n; ++i) {
    CHECK(c[i] == 100 + i);
    CHECK(b[i] == 7);
    CHECK(s[i] == 1000 - 4 * i);
    CHECK(e[i] == 3 + 5 * i);
  }
}

TEST_CASE("llvm: params of each dtype", "[llvm]") {
  // out_t = param_t, and out_f64 = cast(param_t) + 0.5 for each dtype.
  const DType types[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat32, kFloat64};
  KernelBuilder kb;
  std::vector<int> outs, outs_f;
  int half = kb.cnst(kb.param(kFloat64));
  for (DType t : types) {
    int p = kb.cnst(kb.param(t));
    int o = kb.out(t, StrideKind::Contiguous);
    int of = kb.out(kFloat64);
    kb.store(o, p);
    kb.store(of, kb.op(Op::Add, kFloat64, {kb.op(Op::Cast, kFloat64, {p}), half}));
    outs.push_back(o), outs_f.push_back(of);
  }
  auto ck = jit(kb.k);
  const int64_t n = 20;
  std::vector<std::vector<uint8_t>> mem(kb.k.slots.size(), std::vector<uint8_t>(n * 8));
  Call call(kb.k);
  for (size_t s = 0; s < mem.size(); ++s)
    call.ptrs[s] = mem[s].data();
  call.params = {std::bit_cast<uint64_t>(0.5),
                 1,
                 200,
                 uint64_t(int64_t(-100)),
                 uint64_t(int64_t(-30000)),
                 uint64_t(int64_t(-2000000000)),
                 uint64_t(INT64_MIN + 3),
                 0xdeadbeef00000000ULL | std::bit_cast<uint32_t>(-1.25f), // high half ignored
                 std::bit_cast<uint64_t>(1e300)};
  call.run(*ck, n);
  const double want_f[] = {1, 200, -100, -30000, -2000000000, double(INT64_MIN + 3), -1.25, 1e300};
  for (int64_t i = 0; i < n; ++i) {
    auto at = [&](int slot, auto type) {
      decltype(type) v;
      std::memcpy(&v, mem[slot].data() + i * sizeof(v), sizeof(v));
      return v;
    };
    CHECK(at(outs[0], uint8_t()) == 1);
    CHECK(at(outs[1], uint8_t()) == 200);
    CHECK(at(outs[2], int8_t()) == -100);
    CHECK(at(outs[3], int16_t()) == -30000);
    CHECK(at(outs[4], int32_t()) == -2000000000);
    CHECK(at(outs[5], int64_t()) == INT64_MIN + 3);
    CHECK(at(outs[6], float()) == -1.25f);
    CHECK(at(outs[7], double()) == 1e300);
    for (size_t t = 0; t < outs_f.size(); ++t)
      CHECK(at(outs_f[t], double()) == want_f[t] + 0.5);
  }
}

// ---- Philox ------------------------------------------------------------------------------------

TEST_CASE("llvm: Philox4x32-10 reference matches Random123's known answers", "[llvm]") {
  CHECK(ref_philox({0, 0, 0, 0}, {0, 0}) ==
        std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(ref_philox({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}) ==
        std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
}

TEST_CASE("llvm: Philox words", "[llvm]") {
  // word w at counter offset[i] + ctr, key: inputs for offset and key, a param for ctr.
  KernelBuilder kb;
  int off = kb.load(kb.in(kInt64));
  int key = kb.load(kb.in(kInt64));
  int ctr = kb.cnst(kb.param(kInt64));
  int outs[4];
  for (int w = 0; w < 4; ++w) {
    outs[w] = kb.out(kInt64);
    kb.store(outs[w], kb.value(Op::Philox, kInt64, {off, ctr, key}, -1, w));
  }
  auto ck = jit(kb.k);
  const size_t n = 101;
  std::vector<int64_t> o(n), k(n), r[4];
  std::uniform_int_distribution<int64_t> d(INT64_MIN, INT64_MAX);
  for (size_t i = 1; i < n; ++i)
    o[i] = d(rng()), k[i] = d(rng());
  o[1] = -5, k[1] = -1; // counter 0xffffffff'ffffffff, key 0xffffffff'ffffffff
  for (auto& w : r)
    w.resize(n);
  Call call(kb.k);
  call.ptrs = {o.data(), k.data(), r[0].data(), r[1].data(), r[2].data(), r[3].data()};
  const int64_t base_ctr = 4;
  o[0] = -base_ctr; // counter 0, key 0: the first known answer
  call.params[0] = uint64_t(base_ctr);
  call.run(*ck, n);
  CHECK(r[0][0] == 0x6627e8d5);
  CHECK(r[1][0] == 0xe169c58d);
  CHECK(r[2][0] == 0xbc57ac4c);
  CHECK(r[3][0] == 0x9b00dbd8);
  size_t bad = count_bad(
      n,
      [&](size_t i) {
        uint64_t c = uint64_t(o[i]) + uint64_t(base_ctr), kk = uint64_t(k[i]);
        auto want =
            ref_philox({uint32_t(c), uint32_t(c >> 32), 0, 0}, {uint32_t(kk), uint32_t(kk >> 32)});
        for (int w = 0; w < 4; ++w)
          if (r[w][i] != int64_t(want[w])) return false;
        return true;
      },
      [&](size_t i) { return "counter offset " + show(o[i]) + " key " + show(k[i]); });
  CHECK(bad == 0);
}

// ---- reductions --------------------------------------------------------------------------------

namespace {

// y[i] = reduce over j of x[i * r + j], for `rows` rows of length r.
template <DType D>
std::vector<ctype<D>> run_row_reduce(Op op, std::vector<ctype<D>> x, int64_t rows, int64_t r,
                                     int opt = 2) {
  KernelBuilder kb;
  int in = kb.slot(Role::Input, D, StrideKind::Strided, StrideKind::Contiguous);
  int out = kb.out(D);
  kb.store(out, kb.op(op, D, {kb.load(in)}));
  auto ck = jit(kb.k, opt);
  std::vector<ctype<D>> y(size_t(rows), ctype<D>(99));
  Call call(kb.k);
  call.ptrs = {x.data(), y.data()};
  call.stride[in] = r;
  call.r = r;
  call.run(*ck, rows);
  return y;
}

Op alu_of(Op reduce) {
  return reduce == Op::ReduceSum    ? Op::Add
         : reduce == Op::ReduceProd ? Op::Mul
         : reduce == Op::ReduceMax  ? Op::Max
                                    : Op::Min;
}

} // namespace

TEMPLATE_TEST_CASE("llvm: floating row reductions", "[llvm][reduce]", F32, F64) {
  constexpr DType D = TestType::value;
  using F = ctype<D>;
  const int opt = GENERATE(0, 2);
  const int64_t r = GENERATE(1, 7, 1000, 4099); // 4099: 3 blocks of a float64 sum, 17 of float32
  const int64_t rows = 6;
  INFO("opt " << opt << ", r " << r);
  std::uniform_real_distribution<double> d(-1, 1);
  for (Op op : {Op::ReduceSum, Op::ReduceProd, Op::ReduceMax, Op::ReduceMin}) {
    std::vector<F> x(size_t(rows * r));
    for (auto& v : x)
      v = F(op == Op::ReduceProd ? 1 + d(rng()) * 1e-3 : d(rng()));
    if (r > 3) {
      x[size_t(2 * r + 3)] = std::numeric_limits<F>::quiet_NaN(); // row 2: NaN propagates
      for (int64_t j = 0; j < r; ++j)
        x[size_t(3 * r + j)] = j % 2 ? F(0) : F(-0.0); // row 3
      // Row 4: a NaN with its sign bit set (x86's default NaN) among others; row 5 for max and
      // min: negatives, -0 and -inf only (max -0, min -inf).
      x[size_t(4 * r + r - 2)] = -std::numeric_limits<F>::quiet_NaN();
      for (int64_t j = 0; j < r && (op == Op::ReduceMax || op == Op::ReduceMin); ++j)
        x[size_t(5 * r + j)] = -std::fabs(x[size_t(5 * r + j)]);
      if (op == Op::ReduceMax || op == Op::ReduceMin) {
        x[size_t(5 * r + 1)] = F(-0.0);
        x[size_t(5 * r + r - 1)] = -std::numeric_limits<F>::infinity();
      }
    }
    auto y = run_row_reduce<D>(op, x, rows, r, opt);
    for (int64_t i = 0; i < rows; ++i) {
      // Exactly rounded reference (long double), and the error scale sum |x|.
      long double want = op == Op::ReduceSum    ? 0
                         : op == Op::ReduceProd ? 1
                                                : (long double)x[size_t(i * r)];
      double scale = 0;
      for (int64_t j = 0; j < r; ++j) {
        long double v = x[size_t(i * r + j)];
        scale += std::fabs(double(v));
        want = op == Op::ReduceSum    ? want + v
               : op == Op::ReduceProd ? want * v
               : op == Op::ReduceMax  ? ref_max(want, v)
                                      : ref_min(want, v);
      }
      F got = y[size_t(i)];
      INFO(ir::name(op) << " row " << i << ": " << show(got) << " vs " << show(double(want)));
      if (op == Op::ReduceMax || op == Op::ReduceMin)
        CHECK(same_float(got, F(want)));
      else if (D == kFloat32 && op == Op::ReduceSum && std::isnan(double(want)))
        CHECK(std::isnan(got));
      else if (D == kFloat32 && op == Op::ReduceSum) // float32 partial sums, added in float64
        CHECK(std::fabs(got - double(want)) <= kF32SumError * scale + 0x1p-24 * std::fabs(got));
      else if (D == kFloat32) // accumulated in float64, then rounded once
        CHECK(ulp_distance(got, F(want)) <= 1);
      else if (std::isnan(double(want)))
        CHECK(std::isnan(got));
      else if (op == Op::ReduceSum)
        CHECK(std::fabs(got - double(want)) <= 1e-14 * scale);
      else
        CHECK(std::fabs(got - double(want)) <= 1e-13 * std::fabs(double(want)));
    }
  }
}

TEMPLATE_TEST_CASE("llvm: integer and bool row reductions", "[llvm][reduce]", Bool, U8, I32, I64) {
  constexpr DType D = TestType::value;
  using T = ctype<D>;
  const int64_t rows = 5, r = 1003;
  std::uniform_int_distribution<int64_t> d(std::numeric_limits<T>::min(),
                                           std::numeric_limits<T>::max());
  std::uniform_int_distribution<int> bit(0, 1);
  std::vector<T> x(size_t(rows * r));
  for (auto& v : x)
    v = D == kBool ? T(bit(rng())) : T(d(rng()));
  for (int64_t j = 0; j < r; ++j)
    x[size_t(4 * r + j)] = T(1); // row 4: all true / ones
  for (Op op : {Op::ReduceSum, Op::ReduceProd, Op::ReduceMax, Op::ReduceMin}) {
    auto y = run_row_reduce<D>(op, x, rows, r);
    for (int64_t i = 0; i < rows; ++i) {
      bool err = false;
      T want = x[size_t(i * r)];
      for (int64_t j = 1; j < r; ++j)
        want = ref_int_binary<D>(alu_of(op), want, x[size_t(i * r + j)], err);
      INFO(ir::name(op) << " row " << i);
      CHECK(y[size_t(i)] == want);
    }
  }
}

TEST_CASE("llvm: reduction kernels", "[llvm][reduce]") {
  SECTION("column reductions: the reduction walks a strided dimension (tiled)") {
    // s[c] = sum_j x[j, c]; m[c] = max_j k[j, c]; q[c] = m[c] / p, for N columns of R rows.
    const int opt = GENERATE(0, 2);
    const int64_t R = 300, N = GENERATE(37, 600);
    INFO("opt " << opt << ", N " << N);
    KernelBuilder kb;
    int sx = kb.slot(Role::Input, kFloat64, StrideKind::Contiguous, StrideKind::Strided);
    int sk = kb.slot(Role::Input, kInt32, StrideKind::Contiguous, StrideKind::Strided);
    int os = kb.out(kFloat64), om = kb.out(kInt32), oq = kb.out(kInt32);
    int p = kb.cnst(kb.param(kInt32));
    kb.store(os, kb.op(Op::ReduceSum, kFloat64, {kb.load(sx)}));
    int m = kb.op(Op::ReduceMax, kInt32, {kb.load(sk)});
    kb.store(om, m);
    kb.store(oq, kb.op(Op::Div, kInt32, {m, p}));
    auto ck = jit(kb.k, opt);
    std::vector<double> x(static_cast<size_t>(R * N)), s(static_cast<size_t>(N));
    std::vector<int32_t> k(static_cast<size_t>(R * N)), mv(static_cast<size_t>(N)),
        q(static_cast<size_t>(N));
    for (size_t e = 0; e < x.size(); ++e)
      x[e] = double(e % 101) * 0.25, k[e] = int32_t((e * 7919) % 1000) - 500;
    Call call(kb.k);
    call.ptrs = {x.data(), k.data(), s.data(), mv.data(), q.data()};
    call.rstride[sx] = call.rstride[sk] = N;
    call.r = R;
    for (int32_t divisor : {3, 0}) {
      call.params[0] = uint64_t(int64_t(divisor));
      call.err = 0;
      call.run(*ck, N);
      CHECK(call.err == (divisor == 0 ? 1 : 0));
      for (int64_t c = 0; c < N; ++c) {
        double want = 0;
        int32_t most = INT32_MIN;
        for (int64_t j = 0; j < R; ++j) {
          want += x[size_t(j * N + c)];
          most = std::max(most, k[size_t(j * N + c)]);
        }
        CHECK(s[size_t(c)] == want); // quarters: exact in any order
        CHECK(mv[size_t(c)] == most);
        CHECK(q[size_t(c)] == (divisor ? most / divisor : 0));
      }
    }
  }
  SECTION("producers and consumers fuse around the loop") {
    // y[i] = sqrt(sum_j exp(x[i, j]) * 2) * p + bias[i]; z[i] = sum_j x[i, j]^2 (one loop).
    const int64_t rows = 9, r = 257;
    KernelBuilder kb;
    int in = kb.slot(Role::Input, kFloat32, StrideKind::Strided, StrideKind::Contiguous);
    int bias = kb.in(kFloat32); // read after the loop: rstride Broadcast
    int oy = kb.out(kFloat32), oz = kb.out(kFloat32);
    int two = kb.cnst(kb.param(kFloat32)), p = kb.cnst(kb.param(kFloat32));
    int x = kb.load(in);
    int e = kb.op(Op::Mul, kFloat32, {kb.op(Op::Exp, kFloat32, {x}), two});
    int s = kb.op(Op::ReduceSum, kFloat32, {e});
    int sq = kb.op(Op::ReduceSum, kFloat32, {kb.op(Op::Mul, kFloat32, {x, x})});
    int y = kb.op(Op::Add, kFloat32,
                  {kb.op(Op::Mul, kFloat32, {kb.op(Op::Sqrt, kFloat32, {s}), p}), kb.load(bias)});
    kb.store(oy, y);
    kb.store(oz, sq);
    auto ck = jit(kb.k);
    std::vector<float> vx(size_t(rows * r)), vb(rows), vy(rows), vz(rows);
    std::uniform_real_distribution<float> d(-2, 2);
    for (auto& v : vx)
      v = d(rng());
    for (size_t i = 0; i < vb.size(); ++i)
      vb[i] = float(i);
    Call call(kb.k);
    call.ptrs = {vx.data(), vb.data(), vy.data(), vz.data()};
    call.params = {std::bit_cast<uint32_t>(2.f), std::bit_cast<uint32_t>(0.5f)};
    call.stride[in] = r;
    call.r = r;
    call.run(*ck, rows);
    for (int64_t i = 0; i < rows; ++i) {
      double se = 0, s2 = 0;
      for (int64_t j = 0; j < r; ++j) {
        float v = vx[size_t(i * r + j)];
        se += double(std::exp(v) * 2.f);
        s2 += double(v * v);
      }
      CHECK(vy[size_t(i)] == Approx(std::sqrt(float(se)) * 0.5f + float(i)).epsilon(1e-6));
      CHECK(vz[size_t(i)] == Approx(s2).epsilon(1e-6));
    }
  }
  SECTION("an empty reduction gives the initial values") {
    KernelBuilder kb;
    int in = kb.slot(Role::Input, kInt64, StrideKind::Strided, StrideKind::Contiguous);
    int x = kb.load(in);
    int os = kb.out(kInt64), op = kb.out(kInt64), of = kb.out(kFloat32);
    kb.store(os, kb.op(Op::ReduceSum, kInt64, {x}));
    kb.store(op, kb.op(Op::ReduceProd, kInt64, {x}));
    kb.store(of, kb.op(Op::ReduceSum, kFloat32, {kb.op(Op::Cast, kFloat32, {x})}));
    auto ck = jit(kb.k);
    std::vector<int64_t> s(3, 7), p(3, 7);
    std::vector<float> f(3, 7);
    Call call(kb.k);
    call.ptrs = {nullptr, s.data(), p.data(), f.data()};
    call.r = 0;
    call.run(*ck, 3);
    CHECK(s == std::vector<int64_t>{0, 0, 0});
    CHECK(p == std::vector<int64_t>{1, 1, 1});
    CHECK(f == std::vector<float>{0, 0, 0});
  }
  SECTION("integer division by zero inside the loop sets the flag") {
    KernelBuilder kb;
    int a = kb.load(kb.slot(Role::Input, kInt32, StrideKind::Strided, StrideKind::Contiguous));
    int b = kb.load(kb.slot(Role::Input, kInt32, StrideKind::Strided, StrideKind::Contiguous));
    int o = kb.out(kInt32);
    kb.store(o, kb.op(Op::ReduceSum, kInt32, {kb.op(Op::Div, kInt32, {a, b})}));
    auto ck = jit(kb.k);
    std::vector<int32_t> va(200, 10), vb(200, 5), y(4);
    Call call(kb.k);
    call.ptrs = {va.data(), vb.data(), y.data()};
    call.stride[0] = call.stride[1] = 50;
    call.r = 50;
    call.run(*ck, 4);
    CHECK(call.err == 0);
    CHECK(y == std::vector<int32_t>{100, 100, 100, 100});
    vb[170] = 0;
    call.run(*ck, 4);
    CHECK(call.err == 1);
    CHECK(y == std::vector<int32_t>{100, 100, 100, 98});
  }
  SECTION("long sums are accurate and vectorized") {
    const int64_t r = 1000000;
    std::vector<float> x(size_t(r), 0.1f);
    auto y = run_row_reduce<kFloat32>(Op::ReduceSum, x, 1, r);
    // Blocks of float32 lane sums added in float64: within a few ulps of the exact sum,
    // whatever the vector width the host's LLVM picks (2^-24 * 100000 = 0.006; PyTorch 1.13's
    // cascade sum gives 100000.0078, one ulp above the exact 100000.0015).
    const double exact32 = double(0.1f) * double(r);
    CHECK(std::fabs(double(y[0]) - exact32) <= 3 * 0.0078125);
    std::vector<double> xd(static_cast<size_t>(r));
    std::uniform_real_distribution<double> d(0, 1);
    long double exact = 0;
    for (auto& v : xd)
      exact += (v = d(rng()));
    auto yd = run_row_reduce<kFloat64>(Op::ReduceSum, xd, 1, r);
    CHECK(std::fabs(yd[0] - double(exact)) <= 1e-13 * double(exact));
    KernelBuilder kb;
    int in = kb.slot(Role::Input, kFloat32, StrideKind::Strided, StrideKind::Contiguous);
    kb.store(kb.out(kFloat32), kb.op(Op::ReduceSum, kFloat32, {kb.load(in)}));
    CHECK(llvmjit::emit_llvm_ir(kb.k, 2).find("fadd reassoc <") != std::string::npos);
  }
}

// ---- matmul-shaped reductions: a scalar per j, broadcast over a tile of outputs ---------------

namespace {

// One row of a matmul, as tj::matmul's kernel computes it: c[i] = sum_j a[j] * b[j * ldb + i] for
// i < n, with `a` broadcast along i and contiguous along j, `b` contiguous along i and strided
// along j. Returns c with a guard element before and after the row.
template <DType D>
std::vector<ctype<D>> run_matmul_row(const std::vector<ctype<D>>& a, const std::vector<ctype<D>>& b,
                                     int64_t n, int64_t r, int64_t ldb, int opt) {
  KernelBuilder kb;
  int sa = kb.slot(Role::Input, D, StrideKind::Broadcast, StrideKind::Contiguous);
  int sb = kb.slot(Role::Input, D, StrideKind::Contiguous, StrideKind::Strided);
  int o = kb.out(D);
  kb.store(o, kb.op(Op::ReduceSum, D, {kb.op(Op::Mul, D, {kb.load(sa), kb.load(sb)})}));
  auto ck = jit(kb.k, opt);
  std::vector<ctype<D>> c(size_t(n + 2), ctype<D>(99));
  Call call(kb.k);
  call.ptrs = {const_cast<ctype<D>*>(a.data()), const_cast<ctype<D>*>(b.data()), c.data()};
  call.base[o] = 1;
  call.rstride[sb] = ldb;
  call.r = r;
  call.run(*ck, n);
  return c;
}

} // namespace

TEMPLATE_TEST_CASE("llvm: matmul-shaped reductions", "[llvm][reduce]", F32, F64) {
  // n < 8 takes the element loop (dot products); wider rows the tiled nest, whose tiles hold 1024
  // outputs: 37 and 2500 end in partial tiles. r = 130 spans three of the 64-element blocks in
  // which float64 sums are tiled, and nine of float32's 16.
  constexpr DType D = TestType::value;
  using F = ctype<D>;
  const int opt = GENERATE(0, 2);
  const int64_t n = GENERATE(1, 3, 8, 37, 2500);
  const int64_t r = GENERATE(0, 1, 130);
  const int64_t ldb = n + 3;
  INFO("opt " << opt << ", n " << n << ", r " << r);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<F> a(size_t(std::max<int64_t>(r, 1))), b(size_t(std::max<int64_t>(r, 1) * ldb));
  for (auto& v : a)
    v = F(d(rng()));
  for (auto& v : b)
    v = F(d(rng()));
  auto c = run_matmul_row<D>(a, b, n, r, ldb, opt);
  CHECK(c[0] == F(99));
  CHECK(c[size_t(n + 1)] == F(99));
  size_t bad = count_bad(
      size_t(n),
      [&](size_t i) {
        F got = c[i + 1];
        if (D == kFloat32) { // products rounded to float32
          // The tiled nest adds the products in blocks of 16 in order of j in float32, and the
          // blocks' sums in float64, exactly as here; dot products reassociate within a bound.
          double tiled = 0, exact = 0, scale = 0;
          for (int64_t jb = 0; jb < r; jb += 16) {
            float block = 0;
            for (int64_t j = jb; j < std::min(r, jb + 16); ++j) {
              float p = F(a[size_t(j)] * b[size_t(j * ldb) + i]);
              block += p;
              exact += double(p);
              scale += std::fabs(double(p));
            }
            tiled += double(block);
          }
          return n >= 8 ? same_float(got, F(tiled))
                        : std::fabs(got - exact) <= kF32SumError * scale + 0x1p-24 * std::fabs(got);
        }
        long double want = 0;
        double scale = 0;
        for (int64_t j = 0; j < r; ++j) {
          long double p = (long double)a[size_t(j)] * b[size_t(j * ldb) + i];
          want += p;
          scale += std::fabs(double(p));
        }
        return std::fabs(double(got) - double(want)) <= 1e-14 * scale;
      },
      [&](size_t i) { return "c[" + show(i) + "] = " + show(c[i + 1]); });
  CHECK(bad == 0);
}

TEST_CASE("llvm: tiled reductions", "[llvm][reduce]") {
  SECTION("values independent of i are computed per j; consumers run after the loop") {
    // y[i] = sum_j exp(a[j]) * b[j, i]; z[i] = y[i] * p + bias[i].
    const int64_t r = 70;
    const int64_t n = GENERATE(5, 300);
    INFO("n " << n);
    KernelBuilder kb;
    int sa = kb.slot(Role::Input, kFloat32, StrideKind::Broadcast, StrideKind::Contiguous);
    int sb = kb.slot(Role::Input, kFloat32, StrideKind::Contiguous, StrideKind::Strided);
    int sbias = kb.in(kFloat32);
    int oy = kb.out(kFloat32), oz = kb.out(kFloat32);
    int p = kb.cnst(kb.param(kFloat32));
    int e = kb.op(Op::Exp, kFloat32, {kb.load(sa)});
    int y = kb.op(Op::ReduceSum, kFloat32, {kb.op(Op::Mul, kFloat32, {e, kb.load(sb)})});
    kb.store(oy, y);
    kb.store(oz, kb.op(Op::Add, kFloat32, {kb.op(Op::Mul, kFloat32, {y, p}), kb.load(sbias)}));
    auto ck = jit(kb.k);
    std::vector<float> va(r), vb(size_t(r * n)), vbias(static_cast<size_t>(n)),
        vy(static_cast<size_t>(n)), vz(static_cast<size_t>(n));
    std::uniform_real_distribution<float> d(-2, 2);
    for (auto& v : va)
      v = d(rng());
    for (auto& v : vb)
      v = d(rng());
    for (size_t i = 0; i < vbias.size(); ++i)
      vbias[i] = float(i);
    Call call(kb.k);
    call.ptrs = {va.data(), vb.data(), vbias.data(), vy.data(), vz.data()};
    call.params[0] = std::bit_cast<uint32_t>(0.5f);
    call.rstride[sb] = n;
    call.r = r;
    call.run(*ck, n);
    for (int64_t i = 0; i < n; ++i) {
      double want = 0;
      for (int64_t j = 0; j < r; ++j)
        want += double(std::exp(va[size_t(j)]) * vb[size_t(j * n + i)]);
      CHECK(vy[size_t(i)] == Approx(want).margin(1e-5));
      CHECK(vz[size_t(i)] == Approx(float(want) * 0.5f + float(i)).margin(1e-5));
    }
  }
  SECTION("integer division by zero in a value computed per j sets the flag") {
    // s[i] = sum_j b[j, i] / a[j], int32.
    const int64_t r = 20;
    const int64_t n = GENERATE(3, 40);
    INFO("n " << n);
    KernelBuilder kb;
    int sa = kb.slot(Role::Input, kInt32, StrideKind::Broadcast, StrideKind::Contiguous);
    int sb = kb.slot(Role::Input, kInt32, StrideKind::Contiguous, StrideKind::Strided);
    int o = kb.out(kInt32);
    kb.store(o, kb.op(Op::ReduceSum, kInt32, {kb.op(Op::Div, kInt32, {kb.load(sb), kb.load(sa)})}));
    auto ck = jit(kb.k);
    std::vector<int32_t> va(r), vb(size_t(r * n)), vs(static_cast<size_t>(n));
    for (int64_t j = 0; j < r; ++j)
      va[size_t(j)] = int32_t(j % 5) + 1;
    for (size_t e = 0; e < vb.size(); ++e)
      vb[e] = int32_t(e * 37 % 1001) - 500;
    Call call(kb.k);
    call.ptrs = {va.data(), vb.data(), vs.data()};
    call.rstride[sb] = n;
    call.r = r;
    call.run(*ck, n);
    CHECK(call.err == 0);
    for (int64_t i = 0; i < n; ++i) {
      int32_t want = 0;
      for (int64_t j = 0; j < r; ++j)
        want += vb[size_t(j * n + i)] / va[size_t(j)];
      CHECK(vs[size_t(i)] == want);
    }
    va[7] = 0;
    call.run(*ck, n);
    CHECK(call.err == 1);
  }
  SECTION("float64 column sums are blocked: no long chain of additions") {
    // 100000 rows of 0.1: added in one chain, the sum is off by ~2e-12 relative; in blocks of 64
    // rows, by ~3e-14 (like the row path's blocks).
    const int64_t rows = 100000, n = 16;
    KernelBuilder kb;
    int sx = kb.slot(Role::Input, kFloat64, StrideKind::Contiguous, StrideKind::Strided);
    kb.store(kb.out(kFloat64), kb.op(Op::ReduceSum, kFloat64, {kb.load(sx)}));
    auto ck = jit(kb.k);
    std::vector<double> x(size_t(rows * n), 0.1), s(static_cast<size_t>(n));
    Call call(kb.k);
    call.ptrs = {x.data(), s.data()};
    call.rstride[sx] = n;
    call.r = rows;
    call.run(*ck, n);
    const long double exact = (long double)0.1 * rows;
    for (int64_t i = 0; i < n; ++i)
      CHECK(std::fabs(s[size_t(i)] - double(exact)) <= 1e-13 * double(exact));
  }
  SECTION("the tiled nest is vectorized over the tile, with aligned accumulators") {
    KernelBuilder kb;
    int sa = kb.slot(Role::Input, kFloat32, StrideKind::Broadcast, StrideKind::Contiguous);
    int sb = kb.slot(Role::Input, kFloat32, StrideKind::Contiguous, StrideKind::Strided);
    kb.store(kb.out(kFloat32), kb.op(Op::ReduceSum, kFloat32,
                                     {kb.op(Op::Mul, kFloat32, {kb.load(sa), kb.load(sb)})}));
    std::string ir = llvmjit::emit_llvm_ir(kb.k, 3);
    CHECK(ir.find("x double], align 64") != std::string::npos); // float32 sums in float64
    CHECK(ir.find("fmul <") != std::string::npos);
    // Over the tile, in the order of j (no flags); the dot products of narrow rows reassociate.
    CHECK(ir.find("fadd <") != std::string::npos);
    CHECK(ir.find("fadd reassoc <") != std::string::npos);
  }
}

// ---- long rows, vectorization, codegen output --------------------------------------------------

TEST_CASE("llvm: several loops over each row", "[llvm][reduce]") {
  const int opt = GENERATE(0, 2);
  // Rows shorter than a vector, one block of the blocked sum, and several blocks.
  const int64_t r = GENERATE(1, 7, 257, 5000);
  const int64_t rows = 5;
  INFO("opt " << opt << ", r " << r);
  std::uniform_real_distribution<float> d(-4, 4);
  SECTION("softmax rows and their max in one kernel; an integer quotient in the store loop") {
    // m[i] = max_j x; s[i] = sum_j exp(x - m); y[i, j] = exp(x - m) / s; q[i, j] = k / p.
    KernelBuilder kb;
    int sx = kb.slot(Role::Input, kFloat32, StrideKind::Strided, StrideKind::Contiguous);
    int sk = kb.slot(Role::Input, kInt32, StrideKind::Strided, StrideKind::Contiguous);
    int oy = kb.slot(Role::Output, kFloat32, StrideKind::Strided, StrideKind::Contiguous);
    int oq = kb.slot(Role::Output, kInt32, StrideKind::Strided, StrideKind::Contiguous);
    int om = kb.out(kFloat32);
    int p = kb.cnst(kb.param(kInt32));
    int x = kb.load(sx);
    int m = kb.op(Op::ReduceMax, kFloat32, {x});
    int e = kb.op(Op::Exp, kFloat32, {kb.op(Op::Sub, kFloat32, {x, m})});
    int s = kb.op(Op::ReduceSum, kFloat32, {e});
    kb.store(oy, kb.op(Op::Div, kFloat32, {e, s}));
    kb.store(oq, kb.op(Op::Div, kInt32, {kb.load(sk), p}));
    kb.store(om, m);
    kir::LoopPlan plan = kir::plan_loops(kb.k);
    CHECK(plan.reduce_loops == 2);
    CHECK(plan.store_loop);
    auto ck = jit(kb.k, opt);
    std::vector<float> vx(size_t(rows * r)), vy(vx.size(), -1), vm(rows, -1);
    std::vector<int32_t> vk(vx.size()), vq(vx.size(), -1);
    for (size_t e2 = 0; e2 < vx.size(); ++e2) {
      vx[e2] = d(rng());
      vk[e2] = int32_t(e2 * 7919 % 1000) - 500;
    }
    Call call(kb.k);
    call.ptrs = {vx.data(), vk.data(), vy.data(), vq.data(), vm.data()};
    call.stride[sx] = call.stride[sk] = call.stride[oy] = call.stride[oq] = r;
    call.r = r;
    for (int32_t divisor : {3, 0}) {
      call.params[0] = uint64_t(int64_t(divisor));
      call.err = 0;
      call.run(*ck, rows);
      CHECK(call.err == (divisor == 0 ? 1 : 0));
      for (int64_t i = 0; i < rows; ++i) {
        float most = -INFINITY;
        for (int64_t j = 0; j < r; ++j)
          most = std::max(most, vx[size_t(i * r + j)]);
        double sum = 0;
        for (int64_t j = 0; j < r; ++j)
          sum += std::exp(double(vx[size_t(i * r + j)]) - most);
        CHECK(vm[size_t(i)] == most);
        for (int64_t j = 0; j < r; ++j) {
          size_t at = size_t(i * r + j);
          CHECK(vy[at] == Approx(std::exp(double(vx[at]) - most) / sum).epsilon(1e-5));
          if (divisor) CHECK(vq[at] == vk[at] / divisor);
        }
      }
    }
  }
  SECTION("exp(x - max) computed once, read back by a later reduction and by the store loop") {
    // m = max x; e = exp(x - m); s = sum e; y = e / s; t = sum y * x; z = e * t (float64 rows):
    // loops for m, s and t, then the stores. e is kept in y's row, the only output of its dtype.
    KernelBuilder kb;
    int sx = kb.slot(Role::Input, kFloat32, StrideKind::Strided, StrideKind::Contiguous);
    int oz = kb.slot(Role::Output, kFloat64, StrideKind::Strided, StrideKind::Contiguous);
    int oy = kb.slot(Role::Output, kFloat32, StrideKind::Strided, StrideKind::Contiguous);
    int x = kb.load(sx);
    int m = kb.op(Op::ReduceMax, kFloat32, {x});
    int e = kb.op(Op::Exp, kFloat32, {kb.op(Op::Sub, kFloat32, {x, m})});
    int s = kb.op(Op::ReduceSum, kFloat32, {e});
    int y = kb.op(Op::Div, kFloat32, {e, s});
    int t = kb.op(Op::ReduceSum, kFloat32, {kb.op(Op::Mul, kFloat32, {y, x})});
    kb.store(oy, y);
    kb.store(oz, kb.op(Op::Cast, kFloat64, {kb.op(Op::Mul, kFloat32, {e, t})}));
    CHECK(kir::plan_loops(kb.k).reduce_loops == 3);
    auto ck = jit(kb.k, opt);
    std::vector<float> vx(size_t(rows * r)), vy(vx.size(), -1);
    std::vector<double> vz(vx.size(), -1);
    for (auto& v : vx)
      v = d(rng());
    Call call(kb.k);
    call.ptrs = {vx.data(), vz.data(), vy.data()};
    call.stride[sx] = call.stride[oy] = call.stride[oz] = r;
    call.r = r;
    call.run(*ck, rows);
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = vx.data() + i * r;
      float most = *std::max_element(row, row + r);
      double sum = 0, dot = 0;
      for (int64_t j = 0; j < r; ++j)
        sum += std::exp(double(row[j]) - most);
      for (int64_t j = 0; j < r; ++j)
        dot += std::exp(double(row[j]) - most) / sum * row[j];
      for (int64_t j = 0; j < r; ++j) {
        double ex = std::exp(double(row[j]) - most);
        CHECK(vy[size_t(i * r + j)] == Approx(ex / sum).epsilon(1e-5));
        CHECK(vz[size_t(i * r + j)] == Approx(ex * dot).epsilon(1e-5).margin(1e-30));
      }
    }
  }
  SECTION("a chain of three reductions: mean, variance, count beyond one deviation") {
    // mu = sum x / r; v = sum (x - mu)^2 / r; c = sum ((x - mu)^2 > v) as int64.
    KernelBuilder kb;
    int sx = kb.slot(Role::Input, kFloat64, StrideKind::Strided, StrideKind::Contiguous);
    int ov = kb.out(kFloat64), oc = kb.out(kInt64);
    int inv_r = kb.cnst(kb.param(kFloat64));
    int x = kb.load(sx);
    int mu = kb.op(Op::Mul, kFloat64, {kb.op(Op::ReduceSum, kFloat64, {x}), inv_r});
    int dev = kb.op(Op::Sub, kFloat64, {x, mu});
    int sq = kb.op(Op::Mul, kFloat64, {dev, dev});
    int v = kb.op(Op::Mul, kFloat64, {kb.op(Op::ReduceSum, kFloat64, {sq}), inv_r});
    int beyond = kb.op(Op::Cast, kInt64, {kb.op(Op::CmpLt, kBool, {v, sq})});
    kb.store(ov, v);
    kb.store(oc, kb.op(Op::ReduceSum, kInt64, {beyond}));
    kir::LoopPlan plan = kir::plan_loops(kb.k);
    CHECK(plan.reduce_loops == 3);
    CHECK_FALSE(plan.store_loop);
    auto ck = jit(kb.k, opt);
    std::vector<double> vx(size_t(rows * r)), vv(rows, -1);
    std::vector<int64_t> vc(rows, -1);
    for (auto& e : vx)
      e = d(rng());
    Call call(kb.k);
    call.ptrs = {vx.data(), vv.data(), vc.data()};
    call.params[0] = std::bit_cast<uint64_t>(1.0 / double(r));
    call.stride[sx] = r;
    call.r = r;
    call.run(*ck, rows);
    for (int64_t i = 0; i < rows; ++i) {
      const double* row = vx.data() + i * r;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < r; ++j)
        mean += row[j];
      mean *= 1.0 / double(r);
      for (int64_t j = 0; j < r; ++j)
        var += (row[j] - mean) * (row[j] - mean);
      var *= 1.0 / double(r);
      int64_t count = 0;
      for (int64_t j = 0; j < r; ++j)
        count += (row[j] - mean) * (row[j] - mean) > var;
      CHECK(vv[size_t(i)] == Approx(var).epsilon(1e-12));
      CHECK(vc[size_t(i)] == count);
    }
  }
}

TEST_CASE("llvm: an empty row stores nothing, and its reductions give their initial values",
          "[llvm][reduce]") {
  KernelBuilder kb;
  int sx = kb.slot(Role::Input, kFloat32, StrideKind::Strided, StrideKind::Contiguous);
  int oy = kb.slot(Role::Output, kFloat32, StrideKind::Strided, StrideKind::Contiguous);
  int os = kb.out(kFloat32);
  int x = kb.load(sx);
  int s = kb.op(Op::ReduceSum, kFloat32, {x});
  kb.store(oy, kb.op(Op::Sub, kFloat32, {x, s}));
  kb.store(os, s);
  auto ck = jit(kb.k);
  std::vector<float> vs(3, 7);
  Call call(kb.k);
  call.ptrs = {nullptr, nullptr, vs.data()};
  call.r = 0;
  call.run(*ck, 3);
  CHECK(vs == std::vector<float>{0, 0, 0});
}

TEST_CASE("llvm: gathers read at the index, and flag an index out of range", "[llvm]") {
  // out[i] = src[idx[i] * stride] for a bound of 10 elements; float32 and float16 sources.
  const int opt = GENERATE(0, 2);
  for (DType t : {kFloat32, kFloat16}) {
    INFO("opt " << opt << ", " << dtype_name(t));
    KernelBuilder kb;
    int src = kb.slot(Role::Input, t, StrideKind::Broadcast);
    int idx = kb.load(kb.in(kInt64));
    int stride = kb.cnst(kb.param(kInt64)), bound = kb.cnst(kb.param(kInt64));
    int g = kb.value(Op::Gather, t, {idx, stride, bound}, src);
    int o = kb.out(kFloat32);
    kb.store(o, t == kFloat32 ? g : kb.op(Op::Cast, kFloat32, {g}));
    auto ck = jit(kb.k, opt);
    std::vector<float> vals(20);
    std::vector<uint16_t> halves(20);
    for (size_t e = 0; e < vals.size(); ++e) {
      vals[e] = float(e) * 0.5f;
      halves[e] = ref_f32_to_f16(vals[e]); // halves of small integers: exact
    }
    std::vector<int64_t> at = {3, 0, 9, 9, 1, 4, 7, 2, 8, 5, 6, 0, 3, 2, 1, 9, 4};
    std::vector<float> out(at.size(), -1);
    Call call(kb.k);
    call.ptrs = {t == kFloat32 ? static_cast<void*>(vals.data()) : halves.data(), at.data(),
                 out.data()};
    call.params = {2, 10, 0}; // every other element of the source
    call.run(*ck, int64_t(at.size()));
    CHECK(call.err == 0);
    for (size_t e = 0; e < at.size(); ++e)
      CHECK(out[e] == vals[size_t(at[e]) * 2]);
    for (int64_t bad : {int64_t{10}, int64_t{-1}, INT64_MIN}) {
      at[5] = bad;
      call.err = 0;
      call.run(*ck, int64_t(at.size()));
      CHECK(call.err == kir::kErrIndex); // and index 0 read instead, in bounds
      CHECK(out[5] == vals[0]);
      CHECK(out[6] == vals[14]);
    }
    at[5] = 4;
  }
}

TEST_CASE("llvm: scattering stores write or add at the index in order, and flag an index out of "
          "range",
          "[llvm][scatter]") {
  // out[idx[i] * 2] = v[i] (or += v[i]) for a bound of 5 places; float32, float16 and int8.
  const int opt = GENERATE(0, 2);
  for (bool add : {false, true})
    for (DType t : {kFloat32, kFloat16, kInt8}) {
      INFO("opt " << opt << ", " << dtype_name(t) << (add ? ", add" : ""));
      KernelBuilder kb;
      int v = kb.load(kb.in(t));
      int idx = kb.load(kb.in(kInt64));
      int stride = kb.cnst(kb.param(kInt64)), bound = kb.cnst(kb.param(kInt64));
      kir::Store st{kb.out(t, StrideKind::Broadcast), v};
      st.at = idx;
      st.stride = stride;
      st.bound = bound;
      st.add = add;
      kb.k.stores.push_back(st);
      kir::verify(kb.k);
      CHECK(kb.k.str().find(add ? "add slot2 at %1 * %2, bound %3, %0"
                                : "store slot2 at %1 * %2, bound %3, %0") != std::string::npos);
      auto ck = jit(kb.k, opt);
      // Values 1..8 (exact in every dtype), places with repeats.
      std::vector<int64_t> at = {3, 0, 4, 3, 1, 3, 0, 2};
      std::vector<float> vals = {1, 2, 3, 4, 5, 6, 7, 8};
      std::vector<uint8_t> bytes(8 * 4); // the values in t's memory form
      for (size_t e = 0; e < vals.size(); ++e) {
        const uint16_t h = ref_f32_to_f16(vals[e]);
        if (t == kFloat32)
          std::memcpy(bytes.data() + 4 * e, &vals[e], 4);
        else if (t == kFloat16)
          std::memcpy(bytes.data() + 2 * e, &h, 2);
        else
          bytes[e] = uint8_t(vals[e]);
      }
      std::vector<uint8_t> out(10 * 4, 0);
      Call call(kb.k);
      call.ptrs = {bytes.data(), at.data(), out.data()};
      call.params = {2, 5, 0};
      call.run(*ck, int64_t(at.size()));
      CHECK(call.err == 0);
      auto read = [&](size_t e) -> double {
        if (t == kFloat32) return reinterpret_cast<float*>(out.data())[e];
        if (t == kFloat16) return ref_f16_to_f32(reinterpret_cast<uint16_t*>(out.data())[e]);
        return int8_t(out[e]);
      };
      // Place p is element 2p; odd elements are never written.
      std::vector<double> want(5, 0.0);
      for (size_t e = 0; e < at.size(); ++e)
        want[size_t(at[e])] = add ? want[size_t(at[e])] + vals[e] : vals[e];
      for (size_t p = 0; p < 5; ++p) {
        CHECK(read(2 * p) == want[p]);
        CHECK(read(2 * p + 1) == 0);
      }
      // Out of range: the error bit, and nothing stored for that element.
      std::fill(out.begin(), out.end(), 0);
      at[2] = 5;
      call.run(*ck, int64_t(at.size()));
      CHECK(call.err == kir::kErrIndex);
      CHECK(read(8) == 0); // place 4 was only element 2's
    }
}

TEST_CASE("kernel IR: a value that varies along the row is stored only into rows", "[llvm]") {
  KernelBuilder kb;
  int sx = kb.slot(Role::Input, kFloat32, StrideKind::Strided, StrideKind::Contiguous);
  kb.store(kb.out(kFloat32), kb.op(Op::Neg, kFloat32, {kb.load(sx)}));
  CHECK_THROWS_WITH(kir::verify(kb.k),
                    Catch::Contains("the value varies along the reduction, the slot does not"));
}

TEST_CASE("llvm: a long row (n = 1e6)", "[llvm]") {
  const int64_t n = 1000000;
  SECTION("a*b+c is bit-exact: no contraction, no fast-math") {
    KernelBuilder kb;
    int a = kb.load(kb.in(kFloat32)), b = kb.load(kb.in(kFloat32)), c = kb.load(kb.in(kFloat32));
    int o = kb.out(kFloat32);
    kb.store(o, kb.op(Op::Add, kFloat32, {kb.op(Op::Mul, kFloat32, {a, b}), c}));
    auto ck = jit(kb.k, 3);
    std::vector<float> va(n), vb(n), vc(n), vo(n);
    std::uniform_real_distribution<float> d(-10, 10);
    for (int64_t i = 0; i < n; ++i)
      va[i] = d(rng()), vb[i] = d(rng()), vc[i] = d(rng());
    Call call(kb.k);
    call.ptrs = {va.data(), vb.data(), vc.data(), vo.data()};
    call.run(*ck, n);
    size_t bad = count_bad(
        n,
        [&](size_t i) {
          volatile float p = va[i] * vb[i];
          return same_float(vo[i], p + vc[i]);
        },
        [&](size_t i) { return "element " + show(i); });
    CHECK(bad == 0);
    std::string ir = llvmjit::emit_llvm_ir(kb.k, 3);
    CHECK(ir.find("fmul <") != std::string::npos); // vectorized
    for (const char* flag : {"fast", "contract", "reassoc", "nnan", "ninf", "nsz", "arcp", "afn"})
      CHECK(ir.find(std::string(" ") + flag + " ") == std::string::npos);
    CHECK(ir.find("fmuladd") == std::string::npos);
    CHECK(ir.find("llvm.fma") == std::string::npos);
  }
  SECTION("gelu (tanh form) matches scalar libm within tolerance") {
    KernelBuilder kb;
    int x = kb.load(kb.in(kFloat32));
    auto c = [&] { return kb.cnst(kb.param(kFloat32)); }; // values come with the call
    int half = c(), one = c(), k0 = c(), k1 = c();
    auto mul = [&](int p, int q) { return kb.op(Op::Mul, kFloat32, {p, q}); };
    auto add = [&](int p, int q) { return kb.op(Op::Add, kFloat32, {p, q}); };
    int inner = mul(k0, add(x, mul(mul(mul(k1, x), x), x)));
    int y = mul(mul(half, x), add(one, kb.op(Op::Tanh, kFloat32, {inner})));
    int o = kb.out(kFloat32);
    kb.store(o, y);
    auto ck = jit(kb.k, 2);
    std::vector<float> vx(n), vy(n);
    std::uniform_real_distribution<float> d(-8, 8);
    for (auto& v : vx)
      v = d(rng());
    Call call(kb.k);
    call.ptrs = {vx.data(), vy.data()};
    call.params = {std::bit_cast<uint32_t>(0.5f), std::bit_cast<uint32_t>(1.f),
                   std::bit_cast<uint32_t>(0.7978845608f), std::bit_cast<uint32_t>(0.044715f)};
    call.run(*ck, n);
    size_t bad = count_bad(
        n,
        [&](size_t i) {
          float v = vx[i];
          float want = 0.5f * v * (1.f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
          return std::fabs(vy[i] - want) <= 1e-6f + 1e-5f * std::fabs(want);
        },
        [&](size_t i) { return "gelu(" + show(vx[i]) + ") = " + show(vy[i]); });
    CHECK(bad == 0);
  }
}

TEST_CASE("llvm: float32 exp uses vector math in wide registers", "[llvm]") {
  KernelBuilder kb;
  int x = kb.load(kb.in(kFloat32));
  kb.store(kb.out(kFloat32), kb.op(Op::Exp, kFloat32, {x}));
  std::string as = llvmjit::emit_asm(kb.k, 2);
  if (host_has("avx512f")) {
    // LLVM may prefer 256-bit vectors on some AVX-512 CPUs (seen in a virtual machine).
    // 16 lanes inline the project's routine (codegen/llvm/llvm_vmath.cpp), which scales by
    // 2^n with vscalefps; 8 lanes call libmvec's.
    const bool zmm =
        as.find("vscalefps") != std::string::npos && as.find("tj_expf_avx512") == std::string::npos;
    const bool ymm = as.find("_ZGVdN8v_expf") != std::string::npos;
    CHECK((zmm || ymm));
  } else if (host_has("avx2")) {
    CHECK(as.find("_ZGVdN8v_expf") != std::string::npos);
  }
  // Unvectorized (opt 0), the scalar loop computes each element with the same wide routine.
  const std::string ir = llvmjit::emit_llvm_ir(kb.k, 0);
  if (host_has("avx512f"))
    CHECK(ir.find("llvm.x86.avx512.mask.scalef.ps.512") != std::string::npos);
  else if (host_has("avx2"))
    CHECK(ir.find("_ZGVdN8v_expf") != std::string::npos);
  else
    CHECK(ir.find("call float @expf") != std::string::npos);
}

// The math libraries' routines of different widths (libm's scalar expf, libmvec's 8 lanes, ours
// on 16) round some results differently, and a kernel runs a vector loop, a vector epilogue and
// a scalar remainder: an element's value once depended on where in a row it fell, so that
// x[5:42].exp() differed from x.exp()[5:42] (and a result could change with the thread count or
// a row's alignment). Every element now goes through the widest routine.
TEST_CASE("llvm: a math function's value does not depend on the element's position", "[llvm]") {
  std::vector<Op> ops = {
#define TJ_MATH_FN(name, op, grad_fn) Op::op,
#define TJ_MATH_FN2(name, op, grad_fn, promotes_ints) Op::op,
#include "tensorjit/elementwise_functions.def"
      Op::Pow};
  std::mt19937 rng(test::test_seed(7));
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  std::vector<double> xd(1000), yd(1000);
  for (size_t i = 0; i < xd.size(); ++i)
    xd[i] = u(rng), yd[i] = u(rng);
  // acosh wants x >= 1, log and friends x > 0 for most inputs: the magnitudes plus one keep
  // most results finite (NaN results compare by their bits all the same).
  auto inputs = [&](Op op, const std::vector<double>& v) {
    std::vector<double> w = v;
    if (op != Op::Sin && op != Op::Cos && op != Op::Tan && op != Op::Atan && op != Op::Sinh &&
        op != Op::Tanh && op != Op::Asinh && op != Op::Erf && op != Op::Erfc && op != Op::Atan2)
      for (double& e : w)
        e = std::fabs(e) + (op == Op::Asin || op == Op::Acos || op == Op::Atanh ? -3.5 : 1.0);
    return w;
  };
  size_t bad = 0;
  std::string first;
  auto check = [&]<DType T>(Op op) {
    using C = ctype<T>;
    const int arity = ir::info(op).arity;
    std::vector<std::vector<C>> args;
    for (int a = 0; a < arity; ++a) {
      std::vector<double> w = inputs(op, a == 0 ? xd : yd);
      args.emplace_back(w.begin(), w.end());
    }
    const std::vector<C> whole = run_op<T, T>(op, args);
    for (size_t at : {0, 1, 3, 7, 8, 15, 17, 100}) {
      for (size_t len : {1, 5, 23, 37}) {
        std::vector<std::vector<C>> part;
        for (const auto& a : args)
          part.emplace_back(a.begin() + at, a.begin() + at + len);
        const std::vector<C> got = run_op<T, T>(op, part);
        for (size_t i = 0; i < len; ++i)
          if (std::memcmp(&got[i], &whole[at + i], sizeof(C)) != 0 && bad++ == 0) {
            std::ostringstream os;
            os << ir::name(op) << (T == kFloat32 ? " float32" : " float64") << " of element "
               << at + i << ": " << show(got[i]) << " alone, " << show(whole[at + i])
               << " in the whole row";
            first = os.str();
          }
      }
    }
  };
  for (Op op : ops) {
    check.template operator()<kFloat32>(op);
    check.template operator()<kFloat64>(op);
  }
  INFO(first);
  CHECK(bad == 0);
}

namespace {
// A float32 kernel computing `op` over `x`, run through LLVM at opt level 2: `specials` are
// appended 16 times each after a multiple of 16 elements (so each is in every lane). The
// remainder loops call the same routine as the vector loop.
struct UnaryRun {
  std::vector<float> x, y;
  std::string as; // the kernel's assembly
};
UnaryRun run_unary_f32(Op op, std::vector<float> x, std::initializer_list<float> specials) {
  KernelBuilder kb;
  kb.store(kb.out(kFloat32), kb.op(op, kFloat32, {kb.load(kb.in(kFloat32))}));
  auto ck = jit(kb.k, 2);
  x.resize((x.size() + 15) / 16 * 16, 1.0f);
  for (float v : specials)
    x.insert(x.end(), 16, v);
  std::vector<float> y(x.size());
  Call call(kb.k);
  call.ptrs = {x.data(), y.data()};
  call.run(*ck, static_cast<int64_t>(x.size()));
  return {std::move(x), std::move(y), llvmjit::emit_asm(kb.k, 2)};
}

int64_t ulps_apart(float a, float b) {
  return std::abs(int64_t{std::bit_cast<int32_t>(a)} - int64_t{std::bit_cast<int32_t>(b)});
}
} // namespace

TEST_CASE("llvm: float32 exp is within 1 ulp of the rounded result, special values exact",
          "[llvm]") {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> vx;
  for (float v = -110.0f; v < 95.0f; v += 0.00731f)
    vx.push_back(v);
  // The edges of the normal, subnormal and finite results; signed zeros, tiny, inf and NaN.
  UnaryRun r =
      run_unary_f32(Op::Exp, vx,
                    {-103.98f, -103.97f, -103.3f, -87.34f, -87.33f, 88.72f, 88.73f, 0.0f, -0.0f,
                     1e-30f, -1e-30f, 1e-45f, inf, -inf, std::numeric_limits<float>::quiet_NaN()});
  // The project's routine where the kernel inlines it (16 lanes of AVX-512), else libmvec's,
  // whose documented bound is 4 ulp.
  const int64_t bound = r.as.find("vscalefps") != std::string::npos ? 1 : 4;
  size_t bad = count_bad(
      r.x.size(),
      [&](size_t i) {
        const float want = static_cast<float>(std::exp(static_cast<double>(r.x[i])));
        if (std::isnan(want)) return std::isnan(r.y[i]);
        if (std::isinf(want) || want == 0.0f) return r.y[i] == want && !std::signbit(r.y[i]);
        return ulps_apart(r.y[i], want) <= bound;
      },
      [&](size_t i) { return "exp(" + show(r.x[i]) + ") = " + show(r.y[i]); });
  CHECK(bad == 0);
}

TEST_CASE("llvm: float32 tanh is within 1 ulp of the rounded result, special values exact",
          "[llvm]") {
  const float inf = std::numeric_limits<float>::infinity();
  // Fine steps cross each of the routine's 32 intervals many times.
  std::vector<float> vx;
  for (float v = -10.0f; v < 10.0f; v += 0.000731f)
    vx.push_back(v);
  for (float v = 1e-6f; v < 0.1f; v *= 1.01f)
    vx.push_back(v);
  // Interval edges, where tanhf reaches 1, signed zeros, tiny, subnormal, inf and NaN (zeros and
  // inf exact).
  UnaryRun r = run_unary_f32(Op::Tanh, vx,
                             {0.0625f, 0.375f, 1.375f, 3.375f, 7.375f, -8.375f, 9.0f, 9.01f, 9.02f,
                              -9.37f, 9.38f, 0.0f, -0.0f, 1e-30f, -1e-30f, 1e-45f, inf, -inf,
                              std::numeric_limits<float>::quiet_NaN()});
  // The project's routine where the kernel inlines it (16 lanes of AVX-512), else libmvec's
  // (at most 1 ulp over all inputs, measured; 2 allowed).
  const int64_t bound =
      r.as.find("vpermt2ps") != std::string::npos || r.as.find("vpermi2ps") != std::string::npos
          ? 1
          : 2;
  size_t bad = count_bad(
      r.x.size(),
      [&](size_t i) {
        const float want = static_cast<float>(std::tanh(static_cast<double>(r.x[i])));
        if (std::isnan(want)) return std::isnan(r.y[i]);
        if (want == 0.0f || std::isinf(r.x[i]))
          return std::bit_cast<uint32_t>(r.y[i]) == std::bit_cast<uint32_t>(want);
        return ulps_apart(r.y[i], want) <= bound;
      },
      [&](size_t i) { return "tanh(" + show(r.x[i]) + ") = " + show(r.y[i]); });
  CHECK(bad == 0);
}

TEST_CASE("llvm: host target id", "[llvm]") {
  std::string id = llvmjit::host_target_id();
  CHECK(id.find(' ') != std::string::npos);
  CHECK(id == llvmjit::host_target_id());
}

TEST_CASE("llvm: n = 0 touches nothing", "[llvm]") {
  KernelBuilder kb;
  int x = kb.load(kb.in(kInt32, StrideKind::Broadcast));
  int p = kb.cnst(kb.param(kInt32));
  kb.store(kb.out(kInt32), kb.op(Op::Div, kInt32, {x, p}));
  auto ck = jit(kb.k);
  int32_t err = 0;
  ck->fn(0, nullptr, nullptr, nullptr, nullptr, &err, 0, nullptr);
  CHECK(err == 0);
}

TEST_CASE("llvm: compiles from several threads", "[llvm]") {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &ok] {
      for (int r = 0; r < 5; ++r) {
        KernelBuilder kb;
        int x = kb.load(kb.in(kInt64));
        int y = x;
        for (int j = 0; j <= t + r; ++j)
          y = kb.op(Op::Add, kInt64, {y, x});
        kb.store(kb.out(kInt64), y);
        auto ck = llvmjit::compile(kb.k, 2);
        std::vector<int64_t> in(33, 3), out(33);
        void* ptrs[] = {in.data(), out.data()};
        int64_t base[] = {0, 0}, stride[] = {1, 1};
        int32_t err = 0;
        ck->fn(33, ptrs, base, stride, nullptr, &err, 0, nullptr);
        ok[t] +=
            std::all_of(out.begin(), out.end(), [&](int64_t v) { return v == 3 * (t + r + 2); });
      }
    });
  for (auto& th : threads)
    th.join();
  CHECK(ok == std::vector<int>{5, 5, 5, 5});
}

TEST_CASE("llvm: errors name the problem and show the kernel", "[llvm]") {
  KernelBuilder kb;
  int x = kb.load(kb.in(kInt32));
  int f = kb.load(kb.in(kFloat32));
  kb.store(kb.out(kInt32), kb.op(Op::Add, kInt32, {x, f}));
  CHECK_THROWS_AS(llvmjit::compile(kb.k, 2), std::runtime_error);
  CHECK_THROWS_WITH(llvmjit::compile(kb.k, 2),
                    Catch::Contains("Add operand %1 is torch.float32, expected torch.int32") &&
                        Catch::Contains("kernel") && Catch::Contains("store slot2, %2"));
  CHECK_THROWS_WITH(llvmjit::emit_llvm_ir(kb.k, 9), Catch::Contains("opt_level 9"));
  kb.k.stores[0].value = 7;
  CHECK_THROWS_AS(llvmjit::compile(kb.k, 2), std::logic_error); // the kernel IR verifier
}
