// Vector math routines that kernels use in place of libmvec's where ours are faster at no loss
// of accuracy. The loop vectorizer calls them through the vector-function ABI as it calls
// libmvec's; after it, each call's routine is defined in the kernel's module from the IR below
// and inlined, so that its constants stay in registers and nothing is spilled around a call.
//
// expf on 16 float32 lanes (AVX-512): more accurate than glibc's _ZGVeN16v_expf (0.89 ulp at most
// over all float32 inputs; glibc's 2.57 on a sweep of every 97th float32). exp bounds softmax,
// log_softmax, sigmoid and logsumexp once they read memory only once.
//
// tanhf on 16 float32 lanes: as accurate as glibc's _ZGVeN16v_tanhf, at most 1 ulp from the
// rounded result over all 2^32 inputs, with 9% fewer results off by one; +-0, +-inf and NaN
// exact. tanh bounds the gelu_tanh workload with memory.
#include "codegen/llvm/llvm_vmath.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>

namespace tj::llvmjit::detail {

namespace {

// tanh(|x|) on 32 intervals of |x| in [0, 9.37], by a degree-4 minimax polynomial (relative
// error at most 0.66 * 2^-24) around each interval's centre: fewer operations than libmvec's
// 32 intervals of degree 6. The interval is bits(|x| + 0.625) >> 20, the exponent and top three
// mantissa bits of |x| + 0.625, of which vpermt2ps reads the low five: widths grow with |x|
// (1/16 below 0.375, 1 above 7.375), the adding of 0.625 keeps 32 enough up to 9.37 (tanhf
// rounds to 1 from 9.011), and no lower clamp is needed. Interval 0, [0, 1/16), is centred at 0
// with c0 = 0 and c1 = 1, so that a tiny input keeps its relative accuracy; the last has c0 = 1,
// so that it reaches 1 exactly. In interval order; kTanhSlots has them where the index finds
// them.
struct TanhTables {
  float centre[32];
  float coef[5][32]; // coef[k]: of (|x| - centre)^k
};

constexpr TanhTables kTanhIntervals = {
    {
        0.0f,    0.09375f, 0.15625f, 0.21875f, 0.28125f, 0.34375f, 0.4375f, 0.5625f,
        0.6875f, 0.8125f,  0.9375f,  1.0625f,  1.1875f,  1.3125f,  1.5f,    1.75f,
        2.0f,    2.25f,    2.5f,     2.75f,    3.0f,     3.25f,    3.625f,  4.125f,
        4.625f,  5.125f,   5.625f,   6.125f,   6.625f,   7.125f,   7.875f,  8.87250042f,
    },
    {
        {
            0.0f,         0.0934763029f, 0.154990733f, 0.215326339f, 0.27406159f,  0.330821127f,
            0.411570042f, 0.509829998f,  0.596373558f, 0.670967102f, 0.734071493f, 0.786618829f,
            0.829801917f, 0.864906609f,  0.905148268f, 0.941375554f, 0.964027584f, 0.978026092f,
            0.986614287f, 0.991859734f,  0.995054781f, 0.996997654f, 0.998580635f, 0.999477625f,
            0.999807775f, 0.999929309f,  0.999974012f, 0.999990404f, 0.999996483f, 0.999998689f,
            0.999999702f, 1.0f,
        },
        {
            1.0f,
            0.991262138f,
            0.975977838f,
            0.95363456f,
            0.92489022f,
            0.890557408f,
            0.830610096f,
            0.740073621f,
            0.644338906f,
            0.549803495f,
            0.461139262f,
            0.38123104f,
            0.311428905f,
            0.251936615f,
            0.180706844f,
            0.113811821f,
            0.0706504583f,
            0.0434646159f,
            0.0265920088f,
            0.0162141416f,
            0.00986594427f,
            0.00599565636f,
            0.00283621158f,
            0.00104431831f,
            0.000384309824f,
            0.000141396813f,
            5.20193025e-05f,
            1.91371455e-05f,
            7.04020476e-06f,
            2.58995237e-06f,
            5.76436605e-07f,
            7.86147396e-08f,
        },
        {
            5.94336279e-06f,  -0.092658855f,    -0.151267156f,   -0.205342412f,    -0.253476739f,
            -0.29461509f,     -0.341853589f,    -0.377311617f,   -0.384266853f,    -0.368900329f,
            -0.33850947f,     -0.299883723f,    -0.258424491f,   -0.217901781f,    -0.163567767f,
            -0.107140265f,    -0.0681092739f,   -0.0425096601f,  -0.0262361187f,   -0.0160821863f,
            -0.00981717184f,  -0.00597766507f,  -0.00283225346f, -0.00104379642f,  -0.000384244486f,
            -0.00014138993f,  -5.20190915e-05f, -1.9137382e-05f, -7.04033437e-06f, -2.59000581e-06f,
            -5.76645107e-07f, -1.34802735e-06f,
        },
        {
            -0.333910942f,   -0.321609378f,   -0.301750302f,   -0.273558915f,   -0.238756433f,
            -0.199348569f,   -0.136202142f,   -0.0545390956f,  0.0140858507f,   0.0639456883f,
            0.0945176482f,   0.108626015f,    0.110507891f,    0.104417764f,    0.0877632275f,
            0.0629930794f,   0.0422021858f,   0.0271652807f,   0.0170768388f,   0.0105838301f,
            0.0065038586f,   0.00397613086f,  0.00191215519f,  0.000706095481f, 0.000260117842f,
            9.57407465e-05f, 3.52276511e-05f, 1.29604214e-05f, 4.76799369e-06f, 1.75406319e-06f,
            4.10017122e-07f, 5.37235145e-08f,
        },
        {
            0.0159648545f,    0.0602463111f,    0.0967884138f,    0.127077818f,
            0.149725571f,     0.164001778f,     0.169603348f,     0.153336495f,
            0.119559884f,     0.080005832f,     0.0434448272f,    0.01453258f,
            -0.00552521134f,  -0.0176391061f,   -0.0247659963f,   -0.0234683733f,
            -0.0178979933f,   -0.0123437401f,   -0.00806800369f,  -0.00511515792f,
            -0.00318585266f,  -0.00196339097f,  -0.000949467008f, -0.000351918949f,
            -0.000129820794f, -4.78067814e-05f, -1.75936821e-05f, -6.47324032e-06f,
            -2.3814921e-06f,  -8.76118236e-07f, -2.04172238e-07f, 5.09859774e-06f,
        },
    },
};

// Interval k sits in slot (k + 0x3f2) mod 32, 0x3f2 being bits(0.625) >> 20.
constexpr TanhTables tanh_slots(const TanhTables& t) {
  TanhTables s{};
  for (int k = 0; k < 32; ++k) {
    const int slot = (k + (0x3f200000 >> 20)) % 32;
    s.centre[slot] = t.centre[k];
    for (int j = 0; j < 5; ++j)
      s.coef[j][slot] = t.coef[j][k];
  }
  return s;
}

constexpr TanhTables kTanhSlots = tanh_slots(kTanhIntervals);

// The entry of a 32-float row for each lane's interval (vpermt2ps).
llvm::Value* pick(llvm::IRBuilder<>& b, const float* row, llvm::Value* slot) {
  auto& ctx = b.getContext();
  return b.CreateIntrinsic(
      llvm::Intrinsic::x86_avx512_vpermi2var_ps_512, {},
      {llvm::ConstantDataVector::get(ctx, llvm::ArrayRef<float>(row, 16)), slot,
       llvm::ConstantDataVector::get(ctx, llvm::ArrayRef<float>(row + 16, 16))});
}

struct Vec16 {
  llvm::IRBuilder<>& b;
  llvm::Type* f32x16 = llvm::FixedVectorType::get(b.getFloatTy(), 16);
  llvm::Type* i32x16 = llvm::FixedVectorType::get(b.getInt32Ty(), 16);

  llvm::Value* f(float v) const { return llvm::ConstantFP::get(f32x16, v); }
  llvm::Value* i(uint32_t v) const { return llvm::ConstantInt::get(i32x16, v); }
  llvm::Value* fma(llvm::Value* x, llvm::Value* y, llvm::Value* z) const {
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {f32x16}, {x, y, z});
  }
  // vmaxps / vminps: the second operand when either is NaN.
  llvm::Value* max(llvm::Value* x, llvm::Value* y) const {
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_max_ps_512, {}, {x, y, b.getInt32(4)});
  }
  llvm::Value* min(llvm::Value* x, llvm::Value* y) const {
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_min_ps_512, {}, {x, y, b.getInt32(4)});
  }
  llvm::Value* bits(llvm::Value* x) const { return b.CreateBitCast(x, i32x16); }
  llvm::Value* floats(llvm::Value* x) const { return b.CreateBitCast(x, f32x16); }
};

// x = n ln2 + r with |r| <= ln2 / 2 + 1e-4: n = round(x log2(e)) by adding and taking away
// 1.5 * 2^23 (the fma rounds x log2(e) once, to an integer: two operations, where a multiply and
// vrndscaleps are three), ln2 split in two so that n ln2_hi is exact. e^r by a degree-6
// polynomial with c0 = c1 = 1 and c2..c6 from a Remez fit in float32 (relative error 3.2e-9,
// 0.03 ulp; Taylor needs degree 7), then scaled by 2^n with vscalefps, which rounds a subnormal
// result once and overflows to inf. x is clamped to [-104, 89] first, past which the float32
// result is 0 or inf; a NaN passes both clamps (vmaxps and vminps return their second operand
// when one is NaN). At most 0.89 ulp from e^x over all float32 inputs (0.94 with the previous
// degree-7 Taylor polynomial and vrndscaleps).
llvm::Value* expf_avx512(const Vec16& v, llvm::Value* x) {
  llvm::IRBuilder<>& b = v.b;
  x = v.min(v.f(89.0f), v.max(v.f(-104.0f), x));
  llvm::Value* shifter = v.f(12582912.0f); // 1.5 * 2^23
  llvm::Value* n = b.CreateFSub(v.fma(x, v.f(1.44269504088896341f), shifter), shifter);
  llvm::Value* minus_n = b.CreateFNeg(n);
  llvm::Value* r = v.fma(minus_n, v.f(0.693145751953125f), x);
  r = v.fma(minus_n, v.f(1.428606765330187045e-06f), r);
  llvm::Value* p = v.f(0.00138388970f);
  for (float c : {0.00836919248f, 0.0416681021f, 0.166665167f, 0.49999994f, 1.0f, 1.0f})
    p = v.fma(p, r, v.f(c));
  return b.CreateIntrinsic(
      llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
      {p, n, llvm::Constant::getNullValue(v.f32x16), b.getInt16(0xffff), b.getInt32(4)});
}

llvm::Value* tanhf_avx512(const Vec16& v, llvm::Value* x) {
  llvm::IRBuilder<>& b = v.b;
  const TanhTables& t = kTanhSlots;
  // min(|x|, 9.37): a NaN passes.
  llvm::Value* a = v.min(v.f(9.37f), v.floats(b.CreateAnd(v.bits(x), v.i(0x7fffffff))));
  llvm::Value* slot = b.CreateLShr(v.bits(b.CreateFAdd(a, v.f(0.625f))), v.i(20));
  llvm::Value* d = b.CreateFSub(a, pick(b, t.centre, slot));
  llvm::Value* y = pick(b, t.coef[4], slot);
  for (int k = 3; k >= 0; --k)
    y = v.fma(y, d, pick(b, t.coef[k], slot));
  // The sign of x (vpternlogd 0xf8: y | (x & sign), one instruction where LLVM emits two for
  // the and and the or): tanh(-0) = -0, tanh(+-inf) = +-1.
  return v.floats(b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_pternlog_d_512, {},
                                    {v.bits(y), v.bits(x), v.i(0x80000000u), b.getInt32(0xf8)}));
}

// Our routines: the libm function each replaces (on 16 lanes of AVX-512), the name kernels
// declare it by, and its body.
struct Routine {
  std::string_view scalar, name;
  llvm::Value* (*body)(const Vec16&, llvm::Value*);
};
constexpr Routine kRoutines[] = {
    {"expf", "tj_expf_avx512", expf_avx512},
    {"tanhf", "tj_tanhf_avx512", tanhf_avx512},
};

} // namespace

const char* vmath_variant(std::string_view scalar, char isa, unsigned lanes) {
#if defined(__x86_64__)
  if (isa == 'e' && lanes == 16)
    for (const Routine& r : kRoutines)
      if (r.scalar == scalar) return r.name.data();
#endif
  (void)scalar, (void)isa, (void)lanes;
  return nullptr;
}

void call_widest_variants(llvm::Module& m) {
  std::vector<llvm::CallInst*> calls;
  for (llvm::Function& f : m)
    if (f.isDeclaration() && f.hasFnAttribute(kWidestVariantAttr))
      for (llvm::User* u : f.users())
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(u); call && call->getCalledFunction() == &f)
          calls.push_back(call);
  for (llvm::CallInst* call : calls) {
    llvm::Function* f = call->getCalledFunction();
    llvm::Function* widest =
        m.getFunction(f->getFnAttribute(kWidestVariantAttr).getValueAsString());
    if (!widest) continue; // declared beside the attribute; gone only if a pass removed it
    const unsigned lanes =
        llvm::cast<llvm::FixedVectorType>(widest->getReturnType())->getNumElements();
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(call->getType());
    const unsigned have = vt ? vt->getNumElements() : 1;
    llvm::IRBuilder<> b(call);
    // Lanes i, i + have, i + 2 have, ... all hold argument lane i: no lane computes a value
    // the call did not ask for (which could take a routine's slow path for special inputs).
    llvm::SmallVector<int, 16> repeat(lanes), first(have);
    for (unsigned l = 0; l < lanes; ++l)
      repeat[l] = int(l % have);
    for (unsigned l = 0; l < have; ++l)
      first[l] = int(l);
    llvm::SmallVector<llvm::Value*, 2> args;
    for (llvm::Value* a : call->args())
      args.push_back(vt ? b.CreateShuffleVector(a, repeat) : b.CreateVectorSplat(lanes, a));
    llvm::CallInst* wide = b.CreateCall(widest, args);
    wide->setDoesNotAccessMemory();
    llvm::Value* r =
        vt ? b.CreateShuffleVector(wide, first) : b.CreateExtractElement(wide, uint64_t(0));
    call->replaceAllUsesWith(r);
    call->eraseFromParent();
  }
}

bool define_vmath(llvm::Function& f) {
  if (!f.isDeclaration()) return false;
  const llvm::StringRef name = f.getName();
  for (const Routine& r : kRoutines) {
    if (name != llvm::StringRef(r.name.data(), r.name.size())) continue;
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(f.getContext(), "entry", &f));
    b.CreateRet(r.body(Vec16{b}, f.getArg(0)));
    f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.addFnAttr(llvm::Attribute::AlwaysInline);
    return true;
  }
  return false;
}

} // namespace tj::llvmjit::detail
