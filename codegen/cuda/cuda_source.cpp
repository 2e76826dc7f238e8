// Kernel IR -> CUDA C++: the op semantics of kernel_ir.h and ops.def, written as C++ expressions.
#include "codegen/cuda/cuda_source.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

namespace tj::cudagen {
namespace {

using ir::Op;
using kir::Slot;
using kir::StrideKind;
using kir::Value;

// The scalar rules the host's reference shares with the kernels (lib/ir/scalar_rules.h), as the
// build embeds its text: every kernel starts with them.
constexpr const char* kScalarRules =
#include "lib/ir/scalar_rules_text.inc"
    ;

// Device-side helpers every kernel shares, after the scalar rules. Semantics follow the CPU
// lowering (codegen/llvm/llvm_math.cpp) and the reference in lib/ir/scalar_semantics.cpp.
constexpr const char* kPrelude = R"(typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef short i16;
typedef signed char i8;
typedef unsigned char u8;

// float16 and bfloat16 live in registers as their bits.
__device__ __forceinline__ float tj_h2f(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ u16 tj_f2h(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float tj_bf2f(u16 b) { return __uint_as_float(u32(b) << 16); }
// Round to nearest even; NaN -> 0x7fc0, as c10::BFloat16.
__device__ __forceinline__ u16 tj_f2bf(float f) {
  if (f != f) return 0x7fc0;
  u32 bits = __float_as_uint(f);
  return u16((bits + (((bits >> 16) & 1u) + 0x7fffu)) >> 16);
}

// Float -> integer: NaN -> 0, saturated to int64 (cvt.rzi does both), then wrapped by the caller.
__device__ __forceinline__ i64 tj_f2i(float f) { return __float2ll_rz(f); }
__device__ __forceinline__ i64 tj_f2i(double f) { return __double2ll_rz(f); }

// Philox4x32-10: word `w` of the block at a 64-bit counter and key (the rounds: scalar rules).
__device__ __forceinline__ i64 tj_philox(i64 ctr, i64 key, int w) {
  u32 c0 = u32(ctr), c1 = u32(u64(ctr) >> 32), c2 = 0, c3 = 0;
  tj_philox_rounds(c0, c1, c2, c3, u32(key), u32(u64(key) >> 32));
  return i64(w == 0 ? c0 : w == 1 ? c1 : w == 2 ? c2 : c3);
}

// Adds to an element that other threads may add to (a scattering store that accumulates).
__device__ __forceinline__ void tj_atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void tj_atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void tj_atomic_add(int* p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void tj_atomic_add(i64* p, i64 v) { atomicAdd((u64*)p, u64(v)); }
// 8- and 16-bit elements: a compare-and-swap loop on the aligned 32-bit word that holds one.
// (Device blocks are allocated in whole words, so the word lies inside the element's block.)
template <class T, class F> __device__ void tj_atomic_update(T* p, F next) {
  u32* word = (u32*)((u64)p & ~u64(3));
  const u32 shift = u32((u64)p & 3) * 8, mask = u32((1ull << (8 * sizeof(T))) - 1) << shift;
  u32 old = *word, seen;
  do {
    seen = old;
    const T cur = T((seen & mask) >> shift);
    old = atomicCAS(word, seen, (seen & ~mask) | ((u32(next(cur)) << shift) & mask));
  } while (old != seen);
}

// Shuffles of any register type, through 32- or 64-bit words.
template <class T> __device__ __forceinline__ T tj_shfl_xor(T v, int lane_mask) {
  if constexpr (sizeof(T) == 8) {
    i64 b;
    memcpy(&b, &v, 8);
    b = __shfl_xor_sync(0xffffffffu, b, lane_mask);
    memcpy(&v, &b, 8);
    return v;
  } else {
    int b = 0;
    memcpy(&b, &v, sizeof(T));
    b = __shfl_xor_sync(0xffffffffu, b, lane_mask);
    memcpy(&v, &b, sizeof(T));
    return v;
  }
}
// The value of the lane `delta` below in segments of `width` lanes (its own below the first).
template <class T> __device__ __forceinline__ T tj_shfl_up(T v, int delta, int width) {
  if constexpr (sizeof(T) == 8) {
    i64 b;
    memcpy(&b, &v, 8);
    b = __shfl_up_sync(0xffffffffu, b, delta, width);
    memcpy(&v, &b, 8);
    return v;
  } else {
    int b = 0;
    memcpy(&b, &v, sizeof(T));
    b = __shfl_up_sync(0xffffffffu, b, delta, width);
    memcpy(&v, &b, sizeof(T));
    return v;
  }
}
)";

bool is_float(DType t) { return is_floating_point(t); }
bool is_16bit_float(DType t) { return t == kFloat16 || t == kBFloat16; }
bool is_unsigned(DType t) { return t == kBool || t == kUInt8; }

// Register type of a dtype.
const char* reg(DType t) {
  switch (t) {
  case kBool:
    return "bool";
  case kUInt8:
    return "u8";
  case kInt8:
    return "i8";
  case kInt16:
    return "i16";
  case kInt32:
    return "int";
  case kInt64:
    return "i64";
  case kFloat16:
  case kBFloat16:
    return "u16";
  case kFloat32:
    return "float";
  case kFloat64:
    return "double";
  case kComplex64:
  case kComplex128: // passes/lower_complex leaves none for kernels
    break;
  }
  throw std::logic_error("no register type for " + dtype_name(t));
}
// Memory type: bool is a byte.
const char* mem(DType t) { return t == kBool ? "u8" : reg(t); }
// The unsigned type integer arithmetic wraps in (no signed overflow, no int promotion surprises).
const char* wide_unsigned(DType t) { return itemsize(t) == 8 ? "u64" : "u32"; }

[[noreturn]] void not_applicable(Op op, DType t) {
  throw std::logic_error(
      fmt::format("internal error: {} does not apply to {}", ir::name(op), dtype_name(t)));
}

// C math function for a float op ("expf" / "exp").
std::string libm(const char* base, DType t) {
  if (t != kFloat32 && t != kFloat64)
    throw std::logic_error(fmt::format("internal error: {} on {}", base, dtype_name(t)));
  return std::string(base) + (t == kFloat32 ? "f" : "");
}

// C math function name (double version) of a float op: libm's, and the rounding functions.
const char* libm_base(Op op) {
  switch (op) {
  case Op::Floor:
    return "floor";
  case Op::Ceil:
    return "ceil";
  case Op::Trunc:
    return "trunc";
  case Op::Round:
    return "rint"; // half to even in the default rounding mode
  case Op::Sqrt:
    return "sqrt";
  default:
    return ir::libm_name(op);
  }
}

// Conversion of expression `x` from dtype `from` to `to` (the rules of OpLowering::cast).
std::string cast(const std::string& x, DType from, DType to) {
  if (from == to) return x;
  auto to_f32 = [&]() -> std::string {
    if (from == kFloat16) return fmt::format("tj_h2f({})", x);
    if (from == kBFloat16) return fmt::format("tj_bf2f({})", x);
    return fmt::format("float({})", x); // ints and float64: one rounding to nearest
  };
  if (is_float(to)) {
    if (to == kFloat64)
      return is_16bit_float(from) ? fmt::format("double({})", to_f32())
                                  : fmt::format("double({})", x);
    std::string f = to_f32();
    if (to == kFloat32) return f;
    return fmt::format("{}({})", to == kFloat16 ? "tj_f2h" : "tj_f2bf", f);
  }
  if (is_float(from)) {
    std::string f = is_16bit_float(from) ? to_f32() : x;
    if (to == kBool) return fmt::format("({} != 0)", f);
    return fmt::format("{}(tj_f2i({}))", reg(to), f);
  }
  if (to == kBool) return fmt::format("({} != 0)", x);
  return fmt::format("{}({})", reg(to), x); // widening by the source's signedness, or wrapping
}

std::string unary(Op op, DType t, const std::string& x) {
  const bool fp = is_float(t);
  switch (op) {
  case Op::Neg:
    return fp ? fmt::format("(-{})", x)
              : fmt::format("{}({}(0) - {}({}))", reg(t), wide_unsigned(t), wide_unsigned(t), x);
  case Op::Not:
    if (t != kBool) not_applicable(op, t);
    return fmt::format("(!{})", x);
  case Op::BitNot:
    if (fp) not_applicable(op, t);
    return t == kBool ? fmt::format("(!{})", x) : fmt::format("{}(~{})", reg(t), x);
  case Op::Abs:
    if (fp) return fmt::format("{}({})", libm("fabs", t), x);
    if (is_unsigned(t)) return x;
    return fmt::format("({0} < 0 ? {1}({2}(0) - {2}({0})) : {0})", x, reg(t), wide_unsigned(t));
  case Op::Floor:
  case Op::Ceil:
  case Op::Trunc:
  case Op::Round:
    return fp ? fmt::format("{}({})", libm(libm_base(op), t), x) : x;
  case Op::Recip:
    if (!fp) not_applicable(op, t);
    return fmt::format("({}(1) / {})", reg(t), x);
  default:
    break;
  }
  if (const char* base = libm_base(op)) {
    if (!fp) not_applicable(op, t);
    return fmt::format("{}({})", libm(base, t), x);
  }
  throw std::logic_error(fmt::format("internal error: {} is not a unary op", ir::name(op)));
}

std::string binary(Op op, DType t, const std::string& x, const std::string& y) {
  const bool fp = is_float(t), uns = is_unsigned(t);
  const char* T = reg(t);
  const char* U = wide_unsigned(t);
  auto wrap_op = [&](const char* o) {
    return fmt::format("{}({}({}) {} {}({}))", T, U, x, o, U, y);
  };
  switch (op) {
  case Op::Add:
    return fp           ? fmt::format("({} + {})", x, y)
           : t == kBool ? fmt::format("({} | {})", x, y)
                        : wrap_op("+");
  case Op::Sub:
    return fp           ? fmt::format("({} - {})", x, y)
           : t == kBool ? fmt::format("({} ^ {})", x, y)
                        : wrap_op("-");
  case Op::Mul:
    return fp           ? fmt::format("({} * {})", x, y)
           : t == kBool ? fmt::format("({} & {})", x, y)
                        : wrap_op("*");
  case Op::Div:
    if (fp) return fmt::format("({} / {})", x, y);
    return uns ? fmt::format("tj_udiv<{}>({}, {}, err)", T, x, y)
               : fmt::format("tj_sdiv<{}, {}>({}, {}, err)", T, U, x, y);
  case Op::Fmod:
    if (fp) return fmt::format("{}({}, {})", libm("fmod", t), x, y);
    return fmt::format("tj_{}mod<{}>({}, {}, err)", uns ? 'u' : 's', T, x, y);
  case Op::Pow:
    if (fp) return fmt::format("{}({}, {})", libm("pow", t), x, y);
    return fmt::format("tj_ipow<{}, {}>({}, {})", T, U, x, y);
  case Op::LogAddExp:
    if (!fp) not_applicable(op, t);
    return fmt::format("tj_logaddexp({}, {})", x, y);
  case Op::Max:
    return fp ? fmt::format("tj_fmax({}, {})", x, y) : fmt::format("({0} > {1} ? {0} : {1})", x, y);
  case Op::Min:
    return fp ? fmt::format("tj_fmin({}, {})", x, y) : fmt::format("({0} < {1} ? {0} : {1})", x, y);
  case Op::CmpEq:
    return fmt::format("({} == {})", x, y);
  case Op::CmpNe:
    return fmt::format("({} != {})", x, y);
  case Op::CmpLt:
    return fmt::format("({} < {})", x, y);
  case Op::CmpLe:
    return fmt::format("({} <= {})", x, y);
  case Op::And:
  case Op::Or:
  case Op::Xor:
    if (fp) not_applicable(op, t);
    return fmt::format("{}({} {} {})", T, x, op == Op::And ? "&" : op == Op::Or ? "|" : "^", y);
  default:
    break;
  }
  if (const char* base = ir::libm_name(op); base && ir::info(op).arity == 2) {
    if (!fp) not_applicable(op, t);
    return fmt::format("{}({}, {})", libm(base, t), x, y);
  }
  throw std::logic_error(fmt::format("internal error: {} is not a binary op", ir::name(op)));
}

// The initial value of a reduction's or a scan's accumulator, as an expression.
std::string reduce_init(Op op, DType t) {
  switch (ir::combine_op(op)) {
  case Op::Add:
    return fmt::format("{}(0)", reg(t));
  case Op::Mul:
    return fmt::format("{}(1)", reg(t));
  case Op::LogAddExp:
    if (t != kFloat32 && t != kFloat64) not_applicable(op, t);
    return fmt::format("{}(-__int_as_float(0x7f800000))", reg(t));
  case Op::Max:
  case Op::Min: {
    const bool max = ir::combine_op(op) == Op::Max;
    switch (t) {
    case kBool:
      return max ? "false" : "true";
    case kFloat32:
    case kFloat64:
      return fmt::format("{}({}__int_as_float(0x7f800000))", reg(t), max ? "-" : "");
    case kUInt8:
      return max ? "u8(0)" : "u8(255)";
    case kInt8:
      return max ? "i8(-128)" : "i8(127)";
    case kInt16:
      return max ? "i16(-32768)" : "i16(32767)";
    case kInt32:
      return max ? "int(-2147483647 - 1)" : "int(2147483647)";
    case kInt64:
      return max ? "i64(-9223372036854775807LL - 1)" : "i64(9223372036854775807LL)";
    default:
      not_applicable(op, t);
    }
  }
  default:
    throw std::logic_error("internal error: not a reduction");
  }
}

class Generator {
public:
  Generator(const kir::Kernel& k, int nd, bool index32) : k_(k), nd_(nd), index32_(index32) {}

  Source run() {
    reduces_ = k_.has_row_loops();
    classify();
    std::string& o = out_;
    o += kScalarRules;
    o += kPrelude;
    o += fmt::format("\n// {}\n", k_.name);
    args_struct();
    if (reduces_)
      reduction_kernel();
    else
      elementwise_kernel();
    return {std::move(out_), may_fail_};
  }

private:
  const kir::Kernel& k_;
  const int nd_;
  const bool index32_;
  bool reduces_ = false;
  bool may_fail_ = false;
  std::string out_;
  std::vector<char> in_loop_, after_loop_;

  size_t ns() const { return k_.slots.size(); }

  void line(int indent, const std::string& s) {
    out_.append(size_t(indent) * 2, ' ');
    out_ += s;
    out_ += '\n';
  }

  void args_struct() {
    line(0, "struct Args {");
    line(1, "i64 total, r, group;");
    line(1, fmt::format("i64 dom[{}];", nd_));
    line(1, fmt::format("i64 base[{}];", ns()));
    line(1, fmt::format("i64 stride[{}][{}];", ns(), nd_));
    line(1, fmt::format("i64 rstride[{}];", ns()));
    line(1, fmt::format("u64 param[{}];", std::max<size_t>(1, k_.params.size())));
    line(1, fmt::format("void* ptr[{}];", ns()));
    line(1, "int* err;");
    line(0, "};");
  }

  // kir::split_at_reduction: what the reduction loop computes and what comes after it; and
  // whether the kernel can fail (an integer division, a gather or scatter out of bounds).
  void classify() {
    kir::LoopSplit split = kir::split_at_reduction(k_);
    in_loop_ = std::move(split.in_loop);
    after_loop_ = std::move(split.after_loop);
    for (const Value& x : k_.values) {
      if ((x.op == Op::Div || x.op == Op::Fmod) && !is_float(x.dtype)) may_fail_ = true;
      if (x.op == Op::Gather) may_fail_ = true;
    }
    if (k_.scatters()) may_fail_ = true;
  }

  // Element offset of slot s at the current domain index (idx0..), plus j * rstride in the loop.
  std::string inner_stride(size_t s) const {
    switch (k_.slots[s].stride) {
    case StrideKind::Contiguous:
      return "1";
    case StrideKind::Broadcast:
      return "0";
    default:
      return fmt::format("a.stride[{}][{}]", s, nd_ - 1);
    }
  }

  // Declares off<s> for every slot from the index variables idx0..idx<nd-1>.
  void offsets(int indent) {
    for (size_t s = 0; s < ns(); ++s) {
      std::string e = fmt::format("a.base[{}]", s);
      for (int d = 0; d < nd_; ++d) {
        std::string st = d == nd_ - 1 ? inner_stride(s) : fmt::format("a.stride[{}][{}]", s, d);
        if (st == "0") continue;
        e += st == "1" ? fmt::format(" + i64(idx{})", d) : fmt::format(" + i64(idx{}) * {}", d, st);
      }
      line(indent, fmt::format("const i64 off{} = {};", s, e));
    }
  }

  // Splits linear index `i` (of type I) into idx0..idx<nd-1>.
  void decompose(int indent, const std::string& i) {
    if (nd_ == 1) {
      line(indent, fmt::format("const I idx0 = {};", i));
      return;
    }
    line(indent, fmt::format("I rem = {};", i));
    for (int d = nd_ - 1; d > 0; --d) {
      line(indent, fmt::format("const I idx{0} = rem % I(a.dom[{0}]);", d));
      line(indent, fmt::format("rem /= I(a.dom[{}]);", d));
    }
    line(indent, "const I idx0 = rem;");
  }

  std::string slot_offset(int32_t s, bool in_loop) const {
    if (!in_loop) return fmt::format("off{}", s);
    switch (k_.slots[s].rstride) {
    case StrideKind::Broadcast:
      return fmt::format("off{}", s);
    case StrideKind::Contiguous:
      return fmt::format("(off{} + j)", s);
    default:
      return fmt::format("(off{0} + j * a.rstride[{0}])", s);
    }
  }

  // Emits the values marked in `which`; Reduce values are named acc<v> and emitted by the caller.
  void values(int indent, const std::vector<char>& which, bool in_loop) {
    for (size_t v = 0; v < k_.values.size(); ++v) {
      if (!which[v]) continue;
      const Value& x = k_.values[v];
      if (ir::is_reduce(x.op)) continue;
      auto src = [&](int a) {
        int32_t s = x.src[a];
        return ir::is_reduce(k_.values[s].op) ? fmt::format("acc{}", s) : fmt::format("v{}", s);
      };
      std::string e;
      switch (x.op) {
      case Op::Buffer: {
        std::string load = fmt::format("p{}[{}]", x.slot, slot_offset(x.slot, in_loop));
        e = x.dtype == kBool ? fmt::format("({} != 0)", load) : load;
        break;
      }
      case Op::Const: {
        std::string bits = fmt::format("a.param[{}]", x.param);
        switch (x.dtype) {
        case kFloat32:
          e = fmt::format("__uint_as_float(u32({}))", bits);
          break;
        case kFloat64:
          e = fmt::format("__longlong_as_double(i64({}))", bits);
          break;
        case kBool:
          e = fmt::format("({} != 0)", bits);
          break;
        default:
          e = fmt::format("{}({})", reg(x.dtype), bits);
        }
        break;
      }
      case Op::Iota:
        e = slot_offset(x.slot, in_loop);
        break;
      case Op::Gather: { // out of [0, bound): index 0 and the error bit
        const std::string ok = fmt::format("(u64({}) < u64({}))", src(0), src(2));
        line(indent, fmt::format("if (!{}) err |= {};", ok, kir::kErrIndex));
        std::string at = fmt::format("({} + ({} ? {} : 0) * {})", slot_offset(x.slot, in_loop), ok,
                                     src(0), src(1));
        if (k_.slots[x.slot].role == Slot::Role::Index)
          e = at;
        else {
          std::string load = fmt::format("p{}[{}]", x.slot, at);
          e = x.dtype == kBool ? fmt::format("({} != 0)", load) : load;
        }
        break;
      }
      case Op::Philox:
        e = fmt::format("tj_philox({} + {}, {}, {})", src(1), src(0), src(2), x.imm);
        break;
      case Op::Cast:
        e = cast(src(0), k_.values[x.src[0]].dtype, x.dtype);
        break;
      case Op::Where:
        e = fmt::format("({} ? {} : {})", src(0), src(1), src(2));
        break;
      case Op::ScanSum:
      case Op::ScanProd:
      case Op::ScanMax:
      case Op::ScanMin:
      case Op::ScanLogSumExp: // c<v>: the scan so far, in this thread's part of the row
        line(indent,
             fmt::format("c{} = {};", v,
                         binary(ir::combine_op(x.op), x.dtype, fmt::format("c{}", v), src(0))));
        e = fmt::format("c{}", v);
        break;
      default: {
        const int arity = ir::info(x.op).arity;
        DType operand = k_.values[x.src[0]].dtype;
        if (arity == 1)
          e = unary(x.op, operand, src(0));
        else if (arity == 2)
          e = binary(x.op, operand, src(0), src(1));
        else
          throw std::logic_error(
              fmt::format("internal error: no CUDA lowering of {}", ir::name(x.op)));
      }
      }
      line(indent, fmt::format("const {} v{} = {};", reg(x.dtype), v, e));
    }
  }

  // The stores into slots that move along j (rows: inside the store loop, at j) or the others.
  void stores(int indent, bool rows = false) {
    for (const auto& st : k_.stores) {
      if (kir::moves_along_j(k_.slots[st.slot]) != rows) continue;
      const Value& x = k_.values[st.value];
      std::string v =
          ir::is_reduce(x.op) ? fmt::format("acc{}", st.value) : fmt::format("v{}", st.value);
      if (x.dtype == kBool) v = fmt::format("u8({})", v);
      if (st.scatters()) {
        scatter(indent, st, v);
        continue;
      }
      line(indent, fmt::format("p{}[{}] = {};", st.slot, slot_offset(st.slot, rows), v));
    }
  }

  // A scattering store (kernel_ir.h): threads that meet at an element add atomically; plain
  // writes that meet leave one of the values, as PyTorch's on a GPU.
  void scatter(int indent, const kir::Store& st, const std::string& v) {
    const std::string at = fmt::format("v{}", st.at);
    line(indent, fmt::format("if (u64({}) < u64(v{})) {{", at, st.bound));
    const std::string p =
        fmt::format("&p{}[{} + {} * v{}]", st.slot, slot_offset(st.slot, false), at, st.stride);
    const DType t = k_.slots[st.slot].dtype;
    std::string write;
    if (!st.add)
      write = fmt::format("*{} = {};", p, v);
    else if (t == kFloat32 || t == kFloat64 || t == kInt32 || t == kInt64)
      write = fmt::format("tj_atomic_add({}, {});", p, v);
    else if (t == kFloat16)
      write = fmt::format("tj_atomic_update({}, [=](u16 c) {{ return tj_f2h(tj_h2f(c) + "
                          "tj_h2f({})); }});",
                          p, v);
    else if (t == kBFloat16)
      write = fmt::format("tj_atomic_update({}, [=](u16 c) {{ return tj_f2bf(tj_bf2f(c) + "
                          "tj_bf2f({})); }});",
                          p, v);
    else // 8- and 16-bit integers wrap
      write = fmt::format("tj_atomic_update({0}, [=]({1} c) {{ return {1}(u32(c) + u32({2})); }});",
                          p, mem(t), v);
    line(indent + 1, write);
    line(indent, "} else {");
    line(indent + 1, fmt::format("err |= {};", kir::kErrIndex));
    line(indent, "}");
  }

  // Typed, unaliased pointers to the slots' memory.
  void pointers(int indent) {
    for (size_t s = 0; s < ns(); ++s) {
      const Slot& sl = k_.slots[s];
      if (sl.role == Slot::Role::Index) continue;
      const bool out = sl.role == Slot::Role::Output;
      line(indent, fmt::format("{}{}* __restrict__ p{} = ({}{}*)a.ptr[{}];", out ? "" : "const ",
                               mem(sl.dtype), s, out ? "" : "const ", mem(sl.dtype), s));
    }
  }

  void elementwise_kernel() {
    std::vector<char> all(k_.values.size(), 0);
    for (size_t v = 0; v < all.size(); ++v)
      all[v] = after_loop_[v];
    line(0, fmt::format("typedef {} I; // the element index", index32_ ? "u32" : "i64"));
    line(0, "__device__ __forceinline__ void tj_element(const Args& a, I i, int& err) {");
    pointers(1);
    decompose(1, "i");
    offsets(1);
    values(1, all, false);
    stores(1);
    line(0, "}");
    line(0, "");
    line(0, fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(const Args a) {{",
                        kBlockThreads, kEntry));
    line(1, "int err = 0;");
    line(1, "const I n = I(a.total), step = I(gridDim.x) * I(blockDim.x);");
    line(1, "I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x);");
    // A grid-stride loop, four independent elements per step: loads in flight for bandwidth.
    // (Guarding the four instead of a remainder loop measured 8% slower on an H100.)
    line(1, "for (; i + 3 * step < n; i += 4 * step) {");
    line(2, "tj_element(a, i, err);");
    line(2, "tj_element(a, i + step, err);");
    line(2, "tj_element(a, i + 2 * step, err);");
    line(2, "tj_element(a, i + 3 * step, err);");
    line(1, "}");
    line(1, "for (; i < n; i += step) tj_element(a, i, err);");
    if (may_fail_) line(1, "if (err) atomicOr(a.err, err);");
    line(0, "}");
  }

  // Outputs are spread over groups of `group` threads. For each reduction loop (kir::LoopPlan),
  // a group splits the loop over its threads and combines the partial results with shuffles
  // (and shared memory for groups larger than a warp). With one loop, the group's first thread
  // then computes what follows and stores. With several, every thread of the group gets each
  // loop's results, computes what the next loop needs, and the group splits the store loop over
  // j; the first thread stores the values per output.
  void reduction_kernel() {
    const kir::LoopPlan plan = kir::plan_loops(k_);
    const bool several = plan.several();
    std::vector<size_t> reds;
    for (size_t v = 0; v < k_.values.size(); ++v)
      if (ir::is_reduce(k_.values[v].op) && (plan.loop_of[v] >= 0 || !several)) reds.push_back(v);
    auto combine = [&](size_t v, const std::string& x, const std::string& y) {
      const Value& r = k_.values[v];
      return binary(ir::combine_op(r.op), r.dtype, x, y);
    };
    auto blocked = [&](size_t v) { // float sums accumulate in blocks: pairwise-level error
      return k_.values[v].op == Op::ReduceSum && is_float(k_.values[v].dtype);
    };

    line(0, fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(const Args a) {{",
                        kBlockThreads, kEntry));
    line(1, "typedef i64 I;");
    line(1, "int err = 0;");
    pointers(1);
    line(1, "const int G = int(a.group), lane = int(threadIdx.x) & (G - 1);");
    line(1, fmt::format("const i64 per_block = {} / G;", kBlockThreads));
    for (size_t v : reds)
      line(1,
           fmt::format("__shared__ {} sm{}[{}];", reg(k_.values[v].dtype), v, kBlockThreads / 32));
    line(1, "for (i64 first = i64(blockIdx.x) * per_block; first < a.total;");
    line(1, "     first += i64(gridDim.x) * per_block) {");
    line(2, "const i64 o = first + i64(threadIdx.x) / G;");
    line(2, "const bool active = o < a.total;");
    line(2, "const i64 i = active ? o : 0;");
    // With several loops, every thread computes the values per output, inactive ones for output
    // 0 with the reductions' initial values (a division by a sum of 0): their errors are dropped.
    if (several) line(2, "const int err_in = err;");
    decompose(2, "i");
    offsets(2);
    for (int loop = 0; loop < (several ? plan.reduce_loops : 1); ++loop) {
      std::vector<size_t> mine; // this loop's reductions
      for (size_t v : reds)
        if (!several || plan.loop_of[v] == loop) mine.push_back(v);
      if (several) values(2, plan.per_i[size_t(loop)], false); // what the loop needs, per output
      reduce_loop(mine, several ? plan.in_loop[size_t(loop)] : in_loop_, several, combine, blocked);
    }
    if (!several) {
      line(2, "if (active && lane == 0) {");
      values(3, after_loop_, false);
      stores(3);
      line(2, "}");
    } else {
      values(2, plan.per_i[size_t(plan.reduce_loops)], false);
      if (plan.store_loop && k_.has_scan()) {
        scan_store_loop(plan);
      } else if (plan.store_loop) {
        line(2, "if (active) {");
        line(3, "for (i64 j = lane; j < a.r; j += G) {");
        values(4, plan.in_loop.back(), true);
        stores(4, /*rows=*/true);
        line(3, "}");
        line(2, "}");
      }
      line(2, "if (active && lane == 0) {");
      stores(3);
      line(2, "}");
      line(2, "if (!active) err = err_in;");
    }
    line(1, "}");
    if (may_fail_) line(1, "if (err) atomicOr(a.err, err);");
    line(0, "}");
  }

  // The store loop of a kernel that scans: each thread of the group takes a run of the row.
  // Scans in a chain of k scans (a cummax's index reads its max) are at stage k. For each stage,
  // a pass over the run computes the run's total of that stage's scans (the earlier stages' from
  // their offsets), and a scan of the totals over the group gives each run's offset (s<v>). A last
  // pass computes and stores the row from the offsets.
  void scan_store_loop(const kir::LoopPlan& plan) {
    const std::vector<char>& in = plan.in_loop.back();
    const size_t nv = k_.values.size();
    std::vector<int> stage(nv, -1);
    int stages = 0;
    for (size_t v = 0; v < nv; ++v) {
      int below = -1;
      for (int32_t s : k_.values[v].src)
        if (s >= 0 && in[s]) below = std::max(below, stage[s]);
      if (in[v] && ir::is_scan(k_.values[v].op)) {
        stage[v] = below + 1;
        stages = std::max(stages, below + 2);
      } else if (in[v]) {
        stage[v] = below;
      }
    }
    auto is_scan = [&](size_t v) { return in[v] && ir::is_scan(k_.values[v].op); };
    for (size_t v = 0; v < nv; ++v)
      if (is_scan(v)) {
        const std::string t = reg(k_.values[v].dtype);
        line(2, fmt::format("{} s{} = {}, c{};", t, v,
                            reduce_init(k_.values[v].op, k_.values[v].dtype), v));
        line(2, fmt::format("__shared__ {} ss{}[{}];", t, v, kBlockThreads / 32));
      }
    line(2, "const i64 run = (a.r + G - 1) / G;");
    line(2, "const i64 j_lo = min(a.r, i64(lane) * run), j_hi = min(a.r, j_lo + run);");
    line(2, "const int width = G < 32 ? G : 32, wl = int(threadIdx.x) & (width - 1);");
    for (int st = 0; st < stages; ++st) {
      std::vector<char> which(nv, 0); // what this stage's scans need
      for (size_t v = nv; v-- > 0;) {
        if (is_scan(v) && stage[v] == st) which[v] = 1;
        if (which[v])
          for (int32_t s : k_.values[v].src)
            if (s >= 0 && in[s]) which[s] = 1;
      }
      for (size_t v = 0; v < nv; ++v)
        if (is_scan(v) && stage[v] <= st)
          line(2, fmt::format("c{0} = {1};", v,
                              stage[v] < st ? fmt::format("s{}", v)
                                            : reduce_init(k_.values[v].op, k_.values[v].dtype)));
      line(2, "if (active) {");
      line(3, "for (i64 j = j_lo; j < j_hi; ++j) {");
      values(4, which, true);
      line(3, "}");
      line(2, "}");
      for (size_t v = 0; v < nv; ++v)
        if (is_scan(v) && stage[v] == st) group_scan(v);
    }
    for (size_t v = 0; v < nv; ++v)
      if (is_scan(v)) line(2, fmt::format("c{0} = s{0};", v));
    line(2, "if (active) {");
    line(3, "for (i64 j = j_lo; j < j_hi; ++j) {");
    values(4, in, true);
    stores(4, /*rows=*/true);
    line(3, "}");
    line(2, "}");
  }

  // s<v> = the combination of c<v> over the group's earlier threads (every thread shuffles).
  void group_scan(size_t v) {
    const Value& x = k_.values[v];
    const std::string t = reg(x.dtype), init = reduce_init(x.op, x.dtype);
    auto combine = [&](const std::string& p, const std::string& q) {
      return binary(ir::combine_op(x.op), x.dtype, p, q);
    };
    line(2, "{");
    line(3, fmt::format("{} in = c{};", t, v)); // inclusive within the warp's segment
    line(3, "for (int m = 1; m < width; m <<= 1) {");
    line(4, fmt::format("const {} o = tj_shfl_up(in, m, width);", t));
    line(4, fmt::format("if (wl >= m) in = {};", combine("o", "in")));
    line(3, "}");
    line(3, fmt::format("const {} up = tj_shfl_up(in, 1, width);", t));
    line(3, fmt::format("s{} = wl == 0 ? {} : up;", v, init));
    line(3, "if (G > 32) {"); // the totals of the group's earlier warps
    line(4, "const int warp = int(threadIdx.x) >> 5;");
    line(4, fmt::format("if (wl == 31) ss{}[warp] = in;", v));
    line(4, "__syncthreads();");
    line(4, fmt::format("{} before = {};", t, init));
    line(4, "for (int w = warp - (lane >> 5); w < warp; ++w)");
    line(5, fmt::format("before = {};", combine("before", fmt::format("ss{}[w]", v))));
    line(4, fmt::format("s{0} = {1};", v, combine("before", fmt::format("s{}", v))));
    line(4, "__syncthreads();");
    line(3, "}");
    line(2, "}");
  }

  // One reduction loop over j of the reductions `reds`, computing the values `which`, and the
  // combination of the group's partial results: in every thread of the group with `broadcast`,
  // else in its first.
  template <typename Combine, typename Blocked>
  void reduce_loop(const std::vector<size_t>& reds, const std::vector<char>& which, bool broadcast,
                   Combine&& combine, Blocked&& blocked) {
    for (size_t v : reds) {
      const Value& r = k_.values[v];
      line(2, fmt::format("{} acc{} = {};", reg(r.dtype), v, reduce_init(r.op, r.dtype)));
      if (blocked(v))
        line(2, fmt::format("{} part{} = {};", reg(r.dtype), v, reduce_init(r.op, r.dtype)));
    }
    line(2, "if (active) {");
    line(3, "int chunk = 0;");
    line(3, "#pragma unroll 4");
    line(3, "for (i64 j = lane; j < a.r; j += G) {");
    values(4, which, true);
    for (size_t v : reds) {
      const int32_t src = k_.values[v].src[0];
      std::string x =
          ir::is_reduce(k_.values[src].op) ? fmt::format("acc{}", src) : fmt::format("v{}", src);
      if (blocked(v))
        line(4, fmt::format("part{0} = {1};", v, combine(v, fmt::format("part{}", v), x)));
      else
        line(4, fmt::format("acc{0} = {1};", v, combine(v, fmt::format("acc{}", v), x)));
    }
    bool any_blocked = false;
    for (size_t v : reds)
      any_blocked |= blocked(v);
    if (any_blocked) {
      line(4, "if (++chunk == 64) {");
      for (size_t v : reds)
        if (blocked(v)) {
          line(5, fmt::format("acc{0} = acc{0} + part{0};", v));
          line(5, fmt::format("part{} = 0;", v));
        }
      line(5, "chunk = 0;");
      line(4, "}");
    }
    line(3, "}");
    for (size_t v : reds)
      if (blocked(v)) line(3, fmt::format("acc{0} = acc{0} + part{0};", v));
    line(2, "}");
    // Within a warp: a butterfly, so every lane of a group of at most a warp holds the result.
    // Every lane shuffles (a shuffle inside a conditional expression would diverge).
    line(2, "for (int m = 1; m < (G < 32 ? G : 32); m <<= 1) {");
    for (size_t v : reds) {
      line(3,
           fmt::format("const {0} other{1} = tj_shfl_xor(acc{1}, m);", reg(k_.values[v].dtype), v));
      line(3, fmt::format("acc{0} = {1};", v,
                          combine(v, fmt::format("acc{}", v), fmt::format("other{}", v))));
    }
    line(2, "}");
    // Across the warps of a group.
    line(2, "if (G > 32) {");
    line(3, "const int warp = int(threadIdx.x) >> 5;");
    line(3, "if ((threadIdx.x & 31) == 0) {");
    for (size_t v : reds)
      line(4, fmt::format("sm{0}[warp] = acc{0};", v));
    line(3, "}");
    line(3, "__syncthreads();");
    line(3, "if (lane == 0) {");
    line(4, "for (int w = 1; w < G / 32; ++w) {");
    for (size_t v : reds) {
      line(5, fmt::format("const {0} other{1} = sm{1}[warp + w];", reg(k_.values[v].dtype), v));
      line(5, fmt::format("acc{0} = {1};", v,
                          combine(v, fmt::format("acc{}", v), fmt::format("other{}", v))));
    }
    line(4, "}");
    line(3, "}");
    line(3, "__syncthreads();");
    if (broadcast) { // the first thread's result to the group's other warps
      line(3, "if (lane == 0) {");
      for (size_t v : reds)
        line(4, fmt::format("sm{0}[warp] = acc{0};", v));
      line(3, "}");
      line(3, "__syncthreads();");
      for (size_t v : reds)
        line(3, fmt::format("acc{0} = sm{0}[warp - (lane >> 5)];", v));
      line(3, "__syncthreads();");
    }
    line(2, "}");
  }
};

} // namespace

Source generate(const kir::Kernel& k, int nd, bool index32) {
  if (nd < 1) throw std::logic_error("internal error: a CUDA kernel needs a domain of rank >= 1");
  return Generator(k, nd, index32).run();
}

size_t arg_words(const kir::Kernel& k, int nd) {
  const size_t ns = k.slots.size(), np = std::max<size_t>(1, k.params.size());
  return 3 + size_t(nd) + ns + ns * size_t(nd) + ns + np + ns + 1;
}

} // namespace tj::cudagen
