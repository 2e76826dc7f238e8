// LLVM lowering of kernel-IR scalar ops: ALU ops, casts, Philox and vectorizable libm calls.
#include "codegen/llvm/llvm_math.h"

#include "codegen/llvm/llvm_vmath.h"

#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

namespace tj::llvmjit::detail {
namespace {

using ir::Op;

bool is_float(DType t) { return is_floating_point(t); }
bool is_16bit_float(DType t) { return t == kFloat16 || t == kBFloat16; }
// Integer dtypes compared, divided and extended as unsigned.
bool is_unsigned(DType t) { return t == kBool || t == kUInt8; }
unsigned int_bits(DType t) { return t == kBool ? 1 : unsigned(itemsize(t) * 8); }

std::string dt(DType t) { return dtype_name(t); }

[[noreturn]] void not_applicable(Op op, DType t) {
  throw LowerError(fmt::format("{} does not apply to {}", ir::name(op), dt(t)));
}

} // namespace

llvm::Type* OpLowering::reg_type(DType t) {
  switch (t) {
  case kBool:
    return b_.getInt1Ty();
  case kUInt8:
  case kInt8:
    return b_.getInt8Ty();
  case kInt16:
  case kBFloat16:
    return b_.getInt16Ty();
  case kInt32:
    return b_.getInt32Ty();
  case kInt64:
    return b_.getInt64Ty();
  case kFloat16:
    return b_.getHalfTy();
  case kFloat32:
    return b_.getFloatTy();
  case kFloat64:
    return b_.getDoubleTy();
  case kComplex64:
  case kComplex128: // passes/lower_complex leaves none for kernels
    break;
  }
  throw LowerError("no register type for " + dtype_name(t));
}

llvm::Type* OpLowering::mem_type(DType t) { return t == kBool ? b_.getInt8Ty() : reg_type(t); }

llvm::Value* OpLowering::to_reg(llvm::Value* loaded, DType t) {
  // Any nonzero byte is true, as a C++ bool read through a byte pointer would be in practice.
  return t == kBool ? b_.CreateICmpNE(loaded, b_.getInt8(0)) : loaded;
}

llvm::Value* OpLowering::to_mem(llvm::Value* v, DType t) {
  return t == kBool ? b_.CreateZExt(v, b_.getInt8Ty()) : v;
}

llvm::Value* OpLowering::param(llvm::Value* bits, DType t) {
  switch (t) {
  case kFloat32:
    return b_.CreateBitCast(b_.CreateTrunc(bits, b_.getInt32Ty()), b_.getFloatTy());
  case kFloat64:
    return b_.CreateBitCast(bits, b_.getDoubleTy());
  case kFloat16:
    return b_.CreateBitCast(b_.CreateTrunc(bits, b_.getInt16Ty()), b_.getHalfTy());
  default:
    return b_.CreateTrunc(bits, reg_type(t)); // ints sign-extended, bool 0/1, bf16 bits
  }
}

// ---- casts -------------------------------------------------------------------------------------

llvm::Value* OpLowering::to_f32(llvm::Value* v, DType from) {
  auto* f32 = b_.getFloatTy();
  switch (from) {
  case kFloat16:
    return b_.CreateFPExt(v, f32);
  case kBFloat16: // the bits are the top half of a float32
    return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v, b_.getInt32Ty()), 16), f32);
  case kFloat32:
    return v;
  case kFloat64:
    return b_.CreateFPTrunc(v, f32);
  default:
    return is_unsigned(from) ? b_.CreateUIToFP(v, f32) : b_.CreateSIToFP(v, f32);
  }
}

// float32 -> bfloat16 bits, rounding to nearest even; NaN -> 0x7fc0 (as c10::BFloat16).
llvm::Value* OpLowering::f32_to_bf16(llvm::Value* f) {
  auto* i32 = b_.getInt32Ty();
  llvm::Value* bits = b_.CreateBitCast(f, i32);
  llvm::Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), 1);
  llvm::Value* rounded =
      b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(lsb, b_.getInt32(0x7fff))), 16);
  llvm::Value* is_nan = b_.CreateFCmpUNO(f, f);
  llvm::Value* r = b_.CreateSelect(is_nan, b_.getInt32(0x7fc0), rounded);
  return b_.CreateTrunc(r, b_.getInt16Ty());
}

llvm::Value* OpLowering::cast(llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  llvm::Type* dst = reg_type(to);
  if (is_float(to)) {
    if (to == kFloat64) {
      if (!is_float(from))
        return is_unsigned(from) ? b_.CreateUIToFP(v, dst) : b_.CreateSIToFP(v, dst);
      return b_.CreateFPExt(to_f32(v, from), dst); // float16/bfloat16 -> float32 is exact
    }
    // float32 and the 16-bit types go through float32: float64 -> 16-bit rounds twice, as
    // PyTorch does, and int -> 16-bit converts via float32, as c10::Half and c10::BFloat16 do.
    llvm::Value* f = to_f32(v, from);
    if (to == kFloat32) return f;
    if (to == kFloat16) return b_.CreateFPTrunc(f, dst);
    return f32_to_bf16(f);
  }
  if (is_float(from)) {
    llvm::Value* f = is_16bit_float(from) ? to_f32(v, from) : v;
    if (to == kBool) return b_.CreateFCmpUNE(f, llvm::ConstantFP::get(f->getType(), 0.0));
    // Saturating (NaN -> 0) to int64, then wrapping to the target width.
    llvm::Value* i =
        b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b_.getInt64Ty(), f->getType()}, {f});
    return b_.CreateTrunc(i, dst);
  }
  if (to == kBool) return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  unsigned fb = int_bits(from), tb = int_bits(to);
  if (tb > fb) return is_unsigned(from) ? b_.CreateZExt(v, dst) : b_.CreateSExt(v, dst);
  return b_.CreateTrunc(v, dst); // same width (int8 <-> uint8) is a no-op
}

// ---- unary
// ---------------------------------------------------------------------------------------

llvm::Value* OpLowering::unary(Op op, DType t, llvm::Value* x) {
  using llvm::Intrinsic::ID;
  const bool fp = is_float(t);
  auto fp_intrinsic = [&](ID id) -> llvm::Value* {
    return fp ? b_.CreateUnaryIntrinsic(id, x) : x; // rounding an integer is the identity
  };
  switch (op) {
  case Op::Neg:
    return fp ? b_.CreateFNeg(x) : b_.CreateNeg(x);
  case Op::Not:
    if (t != kBool) not_applicable(op, t);
    return b_.CreateNot(x);
  case Op::BitNot:
    if (fp) not_applicable(op, t);
    return b_.CreateNot(x);
  case Op::Abs:
    if (fp) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    if (is_unsigned(t)) return x;
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse()); // INT_MIN wraps
  case Op::Floor:
    return fp_intrinsic(llvm::Intrinsic::floor);
  case Op::Ceil:
    return fp_intrinsic(llvm::Intrinsic::ceil);
  case Op::Trunc:
    return fp_intrinsic(llvm::Intrinsic::trunc);
  case Op::Round:
    return fp_intrinsic(llvm::Intrinsic::roundeven);
  case Op::Sqrt:
    if (!fp) not_applicable(op, t);
    return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  case Op::Recip:
    if (!fp) not_applicable(op, t);
    return b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), x);
  default:
    break;
  }
  if (const char* name = ir::libm_name(op); name && ir::info(op).arity == 1) {
    if (!fp) not_applicable(op, t);
    return libm(name, t, {x});
  }
  throw LowerError(fmt::format("{} is not a unary op", ir::name(op)));
}

// ---- binary
// --------------------------------------------------------------------------------------

// Integer division/remainder: x / 0 = x % 0 = 0 and sets the error flag; signed x / -1 is a
// wrapping negation and x % -1 = 0 (no INT_MIN / -1 trap). The divisor is made safe before the
// instruction so that it can be speculated (and vectorized).
llvm::Value* OpLowering::int_div_mod(bool is_div, DType t, llvm::Value* x, llvm::Value* y) {
  llvm::Type* ty = x->getType();
  auto* zero = llvm::ConstantInt::get(ty, 0);
  auto* one = llvm::ConstantInt::get(ty, 1);
  llvm::Value* is_zero = b_.CreateICmpEQ(y, zero);
  llvm::Value* bit = b_.CreateZExt(is_zero, b_.getInt32Ty()); // kir::kErrDivideByZero
  err = err ? b_.CreateOr(err, bit) : bit;
  if (is_unsigned(t)) {
    llvm::Value* safe = b_.CreateSelect(is_zero, one, y);
    llvm::Value* r = is_div ? b_.CreateUDiv(x, safe) : b_.CreateURem(x, safe);
    return b_.CreateSelect(is_zero, zero, r);
  }
  llvm::Value* is_m1 = b_.CreateICmpEQ(y, llvm::ConstantInt::getSigned(ty, -1));
  llvm::Value* special = b_.CreateOr(is_zero, is_m1);
  llvm::Value* safe = b_.CreateSelect(special, one, y);
  if (is_div) {
    llvm::Value* q = b_.CreateSDiv(x, safe);
    q = b_.CreateSelect(is_m1, b_.CreateNeg(x), q);
    return b_.CreateSelect(is_zero, zero, q);
  }
  return b_.CreateSelect(special, zero, b_.CreateSRem(x, safe));
}

// Integer power by square-and-multiply over the exponent's bits, branch-free. A negative exponent
// gives 1 for base 1, +-1 by parity for base -1, and 0 otherwise.
llvm::Value* OpLowering::int_pow(DType t, llvm::Value* x, llvm::Value* y) {
  llvm::Type* ty = x->getType();
  const bool sgn = !is_unsigned(t);
  const unsigned rounds = int_bits(t) - (sgn ? 1 : 0); // a non-negative exponent's sign bit is 0
  auto* zero = llvm::ConstantInt::get(ty, 0);
  auto* one = llvm::ConstantInt::get(ty, 1);
  llvm::Value* result = one;
  llvm::Value* base = x;
  for (unsigned r = 0; r < rounds; ++r) {
    llvm::Value* bit = b_.CreateTrunc(b_.CreateLShr(y, r), b_.getInt1Ty());
    result = b_.CreateSelect(bit, b_.CreateMul(result, base), result);
    if (r + 1 < rounds) base = b_.CreateMul(base, base);
  }
  if (!sgn) return result;
  auto* m1 = llvm::ConstantInt::getSigned(ty, -1);
  llvm::Value* odd = b_.CreateTrunc(y, b_.getInt1Ty());
  llvm::Value* neg_pow =
      b_.CreateSelect(b_.CreateICmpEQ(x, one), one,
                      b_.CreateSelect(b_.CreateICmpEQ(x, m1), b_.CreateSelect(odd, m1, one), zero));
  return b_.CreateSelect(b_.CreateICmpSLT(y, zero), neg_pow, result);
}

// NaN-propagating maximum/minimum with -0.0 < +0.0 (IEEE 754-2019, the interpreter's Max/Min),
// as compares and selects. Not llvm.maximum/minimum: instcombine narrows float32 maximum of
// extended float16 values to llvm.maximum on half vectors, and LLVM 19's x86 lowering of
// <16 x half> and <32 x half> maximum (without AVX512-FP16) drops NaNs.
llvm::Value* OpLowering::float_max_min(bool is_max, llvm::Value* x, llvm::Value* y) {
  llvm::Value* x_wins = is_max ? b_.CreateFCmpOGT(x, y) : b_.CreateFCmpOLT(x, y);
  llvm::Value* r = b_.CreateSelect(x_wins, x, y);
  // Equal values differ at most in the sign of zero: max takes +0.0, min -0.0. (Lane by lane
  // when x is a vector.)
  llvm::Type* bits = b_.getIntNTy(x->getType()->getScalarSizeInBits());
  if (auto* vt = llvm::dyn_cast<llvm::VectorType>(x->getType()))
    bits = llvm::VectorType::get(bits, vt->getElementCount());
  llvm::Value* x_neg = b_.CreateICmpSLT(b_.CreateBitCast(x, bits), llvm::ConstantInt::get(bits, 0));
  llvm::Value* tie = is_max ? b_.CreateSelect(x_neg, y, x) : b_.CreateSelect(x_neg, x, y);
  r = b_.CreateSelect(b_.CreateFCmpOEQ(x, y), tie, r);
  return b_.CreateSelect(b_.CreateFCmpUNO(x, y), b_.CreateFAdd(x, y), r); // a NaN operand's NaN
}

llvm::Value* OpLowering::binary(Op op, DType t, llvm::Value* x, llvm::Value* y) {
  using llvm::CmpInst;
  const bool fp = is_float(t), uns = is_unsigned(t);
  auto int_only = [&] {
    if (fp) not_applicable(op, t);
  };
  auto fp_only = [&] {
    if (!fp) not_applicable(op, t);
  };
  switch (op) {
  // bool follows C++ (a op b converted back to bool): + is or, - is xor, * is and.
  case Op::Add:
    return fp ? b_.CreateFAdd(x, y) : t == kBool ? b_.CreateOr(x, y) : b_.CreateAdd(x, y);
  case Op::Sub:
    return fp ? b_.CreateFSub(x, y) : t == kBool ? b_.CreateXor(x, y) : b_.CreateSub(x, y);
  case Op::Mul:
    return fp ? b_.CreateFMul(x, y) : t == kBool ? b_.CreateAnd(x, y) : b_.CreateMul(x, y);
  case Op::Div:
    return fp ? b_.CreateFDiv(x, y) : int_div_mod(true, t, x, y);
  case Op::Fmod:
    return fp ? b_.CreateFRem(x, y) : int_div_mod(false, t, x, y);
  case Op::Pow:
    return fp ? libm("pow", t, {x, y}) : int_pow(t, x, y);
  case Op::LogAddExp: { // scalar_rules.h's tj_logaddexp
    fp_only();
    llvm::Value* m = b_.CreateSelect(b_.CreateFCmpOLT(x, y), y, x);
    llvm::Value* d = unary(Op::Abs, t, b_.CreateFSub(x, y));
    llvm::Value* r = b_.CreateFAdd(m, unary(Op::Log1p, t, unary(Op::Exp, t, b_.CreateFNeg(d))));
    llvm::Value* inf = llvm::ConstantFP::getInfinity(x->getType());
    llvm::Value* same_inf =
        b_.CreateAnd(b_.CreateFCmpOEQ(x, y), b_.CreateFCmpOEQ(unary(Op::Abs, t, x), inf));
    return b_.CreateSelect(same_inf, x, r);
  }
  case Op::Max:
    if (fp) return float_max_min(true, x, y);
    return b_.CreateBinaryIntrinsic(uns ? llvm::Intrinsic::umax : llvm::Intrinsic::smax, x, y);
  case Op::Min:
    if (fp) return float_max_min(false, x, y);
    return b_.CreateBinaryIntrinsic(uns ? llvm::Intrinsic::umin : llvm::Intrinsic::smin, x, y);
  case Op::CmpEq:
    return fp ? b_.CreateFCmpOEQ(x, y) : b_.CreateICmpEQ(x, y);
  case Op::CmpNe:
    return fp ? b_.CreateFCmpUNE(x, y) : b_.CreateICmpNE(x, y);
  case Op::CmpLt:
    return fp ? b_.CreateFCmpOLT(x, y) : uns ? b_.CreateICmpULT(x, y) : b_.CreateICmpSLT(x, y);
  case Op::CmpLe:
    return fp ? b_.CreateFCmpOLE(x, y) : uns ? b_.CreateICmpULE(x, y) : b_.CreateICmpSLE(x, y);
  case Op::And:
    int_only();
    return b_.CreateAnd(x, y);
  case Op::Or:
    int_only();
    return b_.CreateOr(x, y);
  case Op::Xor:
    int_only();
    return b_.CreateXor(x, y);
  default:
    break;
  }
  if (const char* name = ir::libm_name(op); name && ir::info(op).arity == 2) {
    fp_only();
    return libm(name, t, {x, y});
  }
  throw LowerError(fmt::format("{} is not a binary op", ir::name(op)));
}

// ---- Philox4x32-10
// -------------------------------------------------------------------------------

llvm::Value* OpLowering::philox(llvm::Value* ctr, llvm::Value* key, int64_t word) {
  if (word < 0 || word > 3) throw LowerError(fmt::format("Philox word {} is not in 0..3", word));
  auto* i32 = b_.getInt32Ty();
  auto* i64 = b_.getInt64Ty();
  auto lo = [&](llvm::Value* v) { return b_.CreateTrunc(v, i32); };
  auto hi = [&](llvm::Value* v) { return b_.CreateTrunc(b_.CreateLShr(v, 32), i32); };
  llvm::Value* c[4] = {lo(ctr), hi(ctr), b_.getInt32(0), b_.getInt32(0)};
  llvm::Value* k0 = lo(key);
  llvm::Value* k1 = hi(key);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = b_.CreateAdd(k0, b_.getInt32(0x9E3779B9));
      k1 = b_.CreateAdd(k1, b_.getInt32(0xBB67AE85));
    }
    llvm::Value* p0 = b_.CreateMul(b_.CreateZExt(c[0], i64), b_.getInt64(0xD2511F53));
    llvm::Value* p1 = b_.CreateMul(b_.CreateZExt(c[2], i64), b_.getInt64(0xCD9E8D57));
    llvm::Value* next[4] = {b_.CreateXor(b_.CreateXor(hi(p1), c[1]), k0), lo(p1),
                            b_.CreateXor(b_.CreateXor(hi(p0), c[3]), k1), lo(p0)};
    std::copy(std::begin(next), std::end(next), std::begin(c));
  }
  return b_.CreateZExt(c[word], i64);
}

// ---- libm calls with libmvec variants
// ------------------------------------------------------------

// The symbol of `name`'s variant for vector-function-ABI ISA letter `isa` and `lanes` lanes:
// ours (llvm_vmath) or libmvec's.
std::string OpLowering::variant_symbol(const std::string& name, char isa, unsigned lanes,
                                       unsigned nargs) {
  if (const char* ours = vmath_variant(name, isa, lanes)) return ours;
  return fmt::format("_ZGV{}N{}{}_{}", isa, lanes, std::string(nargs, 'v'), name);
}

// The symbol of `name`'s variant on `lanes` lanes of ty that this CPU runs, declared in m (as
// vector_variants declares them all), or "" when it has none of that width.
std::string OpLowering::variant_name(llvm::Module& m, const std::string& name, llvm::Type* ty,
                                     unsigned lanes, unsigned nargs) {
  const unsigned bits = lanes * ty->getPrimitiveSizeInBits();
  const char isa = bits == 128 && isa_.sse      ? 'b'
                   : bits == 256 && isa_.avx2   ? 'd'
                   : bits == 512 && isa_.avx512 ? 'e'
                                                : '\0';
  if (!isa) return "";
  vector_variants(m, name, ty, nargs);
  return variant_symbol(name, isa, lanes, nargs);
}

// The vector-function-abi-variant attribute value for `name` (scalar type ty, nargs arguments),
// declaring each vector function in the module. Each declaration names the widest variant
// (kWidestVariantAttr), which computes every lane after vectorization (call_widest_variants).
std::string OpLowering::vector_variants(llvm::Module& m, const std::string& name, llvm::Type* ty,
                                        unsigned nargs) {
  const unsigned elem_bits = ty->getPrimitiveSizeInBits();
  struct Isa {
    bool on;
    char letter;
    unsigned bits;
  };
  const Isa isas[] = {{isa_.sse, 'b', 128}, {isa_.avx2, 'd', 256}, {isa_.avx512, 'e', 512}};
  std::string widest;
  for (const Isa& isa : isas)
    if (isa.on) widest = variant_symbol(name, isa.letter, isa.bits / elem_bits, nargs);
  std::string attr;
  for (const Isa& isa : isas) {
    if (!isa.on) continue;
    unsigned lanes = isa.bits / elem_bits;
    std::string params(nargs, 'v');
    std::string vname = variant_symbol(name, isa.letter, lanes, nargs);
    if (!attr.empty()) attr += ',';
    attr += fmt::format("_ZGV_LLVM_N{}{}_{}({})", lanes, params, name, vname);
    if (!m.getFunction(vname)) {
      auto* vty = llvm::FixedVectorType::get(ty, lanes);
      auto* fty =
          llvm::FunctionType::get(vty, llvm::SmallVector<llvm::Type*, 2>(nargs, vty), false);
      auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, vname, m);
      f->setDoesNotAccessMemory();
      f->setDoesNotThrow();
      f->setWillReturn();
      if (vname != widest) f->addFnAttr(kWidestVariantAttr, widest);
      keep_alive.push_back(f);
    }
  }
  if (llvm::Function* f = m.getFunction(name); f && !widest.empty())
    f->addFnAttr(kWidestVariantAttr, widest);
  return attr;
}

llvm::Value*
OpLowering::lanewise(llvm::ArrayRef<llvm::Value*> args,
                     llvm::function_ref<llvm::Value*(llvm::ArrayRef<llvm::Value*>)> scalar) {
  const unsigned lanes = llvm::cast<llvm::FixedVectorType>(args[0]->getType())->getNumElements();
  llvm::Value* r = nullptr;
  llvm::SmallVector<llvm::Value*, 2> lane(args.size());
  for (unsigned l = 0; l < lanes; ++l) {
    for (size_t a = 0; a < args.size(); ++a)
      lane[a] = b_.CreateExtractElement(args[a], l);
    llvm::Value* x = scalar(lane);
    if (!r) r = llvm::PoisonValue::get(llvm::FixedVectorType::get(x->getType(), lanes));
    r = b_.CreateInsertElement(r, x, l);
  }
  return r;
}

// A call to libm's `base` (double) or `base`f (float32), free of side effects (errno is not
// read), annotated with the libmvec variants the loop vectorizer may substitute.
llvm::Value* OpLowering::libm(const char* base, DType t, llvm::ArrayRef<llvm::Value*> args) {
  if (t != kFloat32 && t != kFloat64) throw LowerError(fmt::format("{} on {}", base, dt(t)));
  llvm::Type* ty = reg_type(t);
  std::string name = std::string(base) + (t == kFloat32 ? "f" : "");
  llvm::Module& m = *b_.GetInsertBlock()->getModule();
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(args[0]->getType())) {
    // A vector the kernel built itself (a scan's column of rows): the variant of its width,
    // else lane by lane.
    const std::string vname =
        variant_name(m, name, ty, vt->getNumElements(), unsigned(args.size()));
    if (!vname.empty()) {
      llvm::CallInst* call = b_.CreateCall(m.getFunction(vname), args);
      call->setDoesNotAccessMemory();
      return call;
    }
    return lanewise(args, [&](llvm::ArrayRef<llvm::Value*> lane) { return libm(base, t, lane); });
  }
  llvm::Function* f = m.getFunction(name);
  if (!f) {
    auto* fty =
        llvm::FunctionType::get(ty, llvm::SmallVector<llvm::Type*, 2>(args.size(), ty), false);
    f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m);
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->setWillReturn();
    f->setDoesNotFreeMemory();
  }
  llvm::CallInst* call = b_.CreateCall(f, args);
  call->setDoesNotAccessMemory();
  std::string variants = vector_variants(m, name, ty, unsigned(args.size()));
  if (!variants.empty())
    call->addFnAttr(llvm::Attribute::get(ctx_, "vector-function-abi-variant", variants));
  return call;
}

} // namespace tj::llvmjit::detail
