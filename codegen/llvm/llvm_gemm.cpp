// The GEMM microkernel (llvm_gemm.h) in LLVM IR: MR x NR accumulators as MR * (NR / lanes)
// vector values carried through the k loop, each step one vector load per NR / lanes of B's
// packed row, one broadcast per element of A's packed column, and an FMA per accumulator. With
// bfloat16 operands a step is a pair of k: the broadcast is A's pair, and each accumulator takes
// both products with one dot instruction (vdpbf16ps).
#include "codegen/llvm/llvm_gemm.h"

#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "codegen/llvm/llvm_kernel.h"

namespace tj::llvmjit {
namespace {

struct Tile {
  int64_t mr, nr, vector_bytes;
};

bool has_feature(const std::string& features, const char* name) {
  return features.find(fmt::format("+{},", name)) != std::string::npos ||
         features.ends_with(fmt::format("+{}", name));
}

int64_t host_vector_bytes() {
  const std::string& f = detail::host_lowering_target().features;
  if (has_feature(f, "avx512f")) return 64;
  if (has_feature(f, "avx2") && has_feature(f, "fma")) return 32;
  return 16;
}

Tile checked_tile(DType dtype, int64_t mr, int64_t nr) {
  const int64_t vector_bytes = host_vector_bytes(),
                lanes = vector_bytes / int64_t(itemsize(gemm_result_dtype(dtype)));
  if (mr < 1 || nr < lanes || nr % lanes != 0 || mr * (nr / lanes) > 32)
    throw std::invalid_argument(fmt::format("gemm microkernel: tile {}x{}: NR must be a multiple "
                                            "of {} and MR * NR / {} at most 32",
                                            mr, nr, lanes, lanes));
  return {mr, nr, vector_bytes};
}

// The tile for the host: as many accumulators as the vector registers hold beside B's row and
// one broadcast. With 32 registers (AVX-512): 14 rows of 2 vectors (28 accumulators); with 16
// (AVX2): 6 rows of 2 vectors (12); with SSE's 128-bit vectors and no FMA, 4 rows of 2.
Tile host_tile(DType dtype) {
  const int64_t lanes = host_vector_bytes() / int64_t(itemsize(gemm_result_dtype(dtype)));
  if (const char* s = std::getenv("TJ_GEMM_TILE"); s && *s) {
    int64_t mr = 0, nr = 0;
    if (std::sscanf(s, "%ldx%ld", &mr, &nr) != 2)
      throw std::invalid_argument(fmt::format("TJ_GEMM_TILE={}: expected MRxNR", s));
    // The float32 tile; float64's fills the same registers with half the columns.
    return checked_tile(dtype, mr, dtype == kFloat64 ? nr / 2 : nr);
  }
  return checked_tile(dtype,
                      host_vector_bytes() == 64   ? 14
                      : host_vector_bytes() == 32 ? 6
                                                  : 4,
                      2 * lanes);
}

constexpr int64_t kUnroll = 4;

// void f(i64 kc, ptr a, ptr b, ptr c, i64 ldc, i64 accumulate)
void build_microkernel(llvm::Module& m, const std::string& name, DType operands, const Tile& t) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  const bool pairs = operands == kBFloat16;
  const DType dtype = gemm_result_dtype(operands);
  llvm::Type* et = dtype == kFloat64 ? b.getDoubleTy() : b.getFloatTy();
  const int64_t lanes = t.vector_bytes / int64_t(itemsize(dtype)), nv = t.nr / lanes;
  auto* vt = llvm::FixedVectorType::get(et, unsigned(lanes));
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* ptr = b.getPtrTy();
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {i64, ptr, ptr, ptr, i64, i64}, false);
  auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m);
  const detail::LoweringTarget target = detail::host_lowering_target();
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->addFnAttr("target-cpu", target.cpu);
  f->addFnAttr("target-features", target.features);
  f->addFnAttr("prefer-vector-width", std::to_string(t.vector_bytes * 8));
  f->addFnAttr("min-legal-vector-width", std::to_string(t.vector_bytes * 8));
  for (unsigned i : {1u, 2u, 3u})
    f->addParamAttr(i, llvm::Attribute::NoAlias);
  llvm::Value *kc = f->getArg(0), *pa = f->getArg(1), *pb = f->getArg(2), *pc = f->getArg(3),
              *ldc = f->getArg(4), *accumulate = f->getArg(5);

  auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto* loop = llvm::BasicBlock::Create(ctx, "k", f);
  auto* done = llvm::BasicBlock::Create(ctx, "done", f);
  b.SetInsertPoint(entry);
  llvm::Value* zero = llvm::ConstantFP::get(vt, 0.0);
  // C's rows are read or written only after the k loop: their lines are fetched during it.
  llvm::Function* prefetch = llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::prefetch, {ptr});
  for (int64_t i = 0; i < t.mr; ++i)
    for (int64_t off = 0; off < t.nr * int64_t(itemsize(dtype)); off += 64)
      b.CreateCall(prefetch,
                   {b.CreateGEP(b.getInt8Ty(), b.CreateGEP(et, pc, b.CreateMul(b.getInt64(i), ldc)),
                                b.getInt64(off)),
                    b.getInt32(1), b.getInt32(3), b.getInt32(1)});
  // Steps of the k loop: pairs of k for bfloat16 (kc is even).
  llvm::Value* steps = pairs ? b.CreateLShr(kc, b.getInt64(1)) : kc;
  b.CreateCondBr(b.CreateICmpSGT(steps, b.getInt64(0)), loop, done);

  // The k loop, kUnroll steps per iteration; the accumulators are its phis.
  b.SetInsertPoint(loop);
  llvm::PHINode* k = b.CreatePHI(i64, 2, "p");
  k->addIncoming(b.getInt64(0), entry);
  std::vector<llvm::PHINode*> acc_phi;
  std::vector<llvm::Value*> acc;
  for (int64_t i = 0; i < t.mr * nv; ++i) {
    acc_phi.push_back(b.CreatePHI(vt, 2));
    acc_phi.back()->addIncoming(zero, entry);
    acc.push_back(acc_phi.back());
  }
  llvm::Function* fma = llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::fmuladd, {vt});
  const llvm::Align elem_align(int64_t(itemsize(dtype)));
  // A pair of bfloat16 moves as one 32-bit word; the dot instruction reads a vector of them as
  // whatever type LLVM's declaration gives its operands.
  llvm::Function* dot =
      pairs ? llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512)
            : nullptr;
  llvm::Type* word = pairs ? b.getInt32Ty() : et;
  auto* word_vt = llvm::FixedVectorType::get(word, unsigned(lanes));
  for (int64_t u = 0; u < kUnroll; ++u) {
    llvm::Value* p = b.CreateAdd(k, b.getInt64(u));
    llvm::Value* brow = b.CreateGEP(word, pb, b.CreateMul(p, b.getInt64(t.nr)));
    llvm::Value* acol = b.CreateGEP(word, pa, b.CreateMul(p, b.getInt64(t.mr)));
    std::vector<llvm::Value*> bv;
    for (int64_t v = 0; v < nv; ++v) {
      bv.push_back(
          b.CreateAlignedLoad(word_vt, b.CreateConstGEP1_64(word, brow, v * lanes), elem_align));
      if (pairs) bv.back() = b.CreateBitCast(bv.back(), dot->getFunctionType()->getParamType(2));
    }
    for (int64_t i = 0; i < t.mr; ++i) {
      llvm::Value* s = b.CreateAlignedLoad(word, b.CreateConstGEP1_64(word, acol, i), elem_align);
      llvm::Value* splat = b.CreateVectorSplat(unsigned(lanes), s);
      if (pairs) splat = b.CreateBitCast(splat, dot->getFunctionType()->getParamType(1));
      for (int64_t v = 0; v < nv; ++v)
        acc[i * nv + v] = pairs ? b.CreateCall(dot, {acc[i * nv + v], splat, bv[v]})
                                : b.CreateCall(fma, {splat, bv[v], acc[i * nv + v]});
    }
  }
  llvm::Value* next = b.CreateAdd(k, b.getInt64(kUnroll));
  k->addIncoming(next, loop);
  for (size_t i = 0; i < acc.size(); ++i)
    acc_phi[i]->addIncoming(acc[i], loop);
  b.CreateCondBr(b.CreateICmpSLT(next, steps), loop, done);

  // The tile, stored or added to C.
  b.SetInsertPoint(done);
  std::vector<llvm::PHINode*> result;
  for (size_t i = 0; i < acc.size(); ++i) {
    result.push_back(b.CreatePHI(vt, 2));
    result.back()->addIncoming(zero, entry);
    result.back()->addIncoming(acc[i], loop);
  }
  auto* store = llvm::BasicBlock::Create(ctx, "store", f);
  auto* add = llvm::BasicBlock::Create(ctx, "add", f);
  auto* ret = llvm::BasicBlock::Create(ctx, "ret", f);
  b.CreateCondBr(b.CreateICmpNE(accumulate, b.getInt64(0)), add, store);
  for (bool adding : {false, true}) {
    b.SetInsertPoint(adding ? add : store);
    for (int64_t i = 0; i < t.mr; ++i) {
      llvm::Value* row = b.CreateGEP(et, pc, b.CreateMul(b.getInt64(i), ldc));
      for (int64_t v = 0; v < nv; ++v) {
        llvm::Value* at = b.CreateConstGEP1_64(et, row, v * lanes);
        llvm::Value* x = result[i * nv + v];
        if (adding) x = b.CreateFAdd(b.CreateAlignedLoad(vt, at, elem_align), x);
        b.CreateAlignedStore(x, at, elem_align);
      }
    }
    b.CreateBr(ret);
  }
  b.SetInsertPoint(ret);
  b.CreateRetVoid();
}

std::string symbol_for(DType dtype, const Tile& t) {
  return fmt::format("tj_gemm_{}_{}x{}_{}", short_dtype_name(dtype), t.mr, t.nr,
                     t.vector_bytes * 8);
}

void check_dtype(DType dtype) {
  if (dtype != kFloat32 && dtype != kFloat64 && !(dtype == kBFloat16 && gemm_bf16_dot()))
    throw std::invalid_argument(
        fmt::format("gemm microkernel: no microkernel for {}", short_dtype_name(dtype)));
}

detail::BuiltFunction build(DType dtype, detail::Emit emit) {
  check_dtype(dtype);
  const Tile t = host_tile(dtype);
  const std::string name = symbol_for(dtype, t);
  return detail::compile_built(
      name, [&](llvm::Module& m) { build_microkernel(m, name, dtype, t); }, emit);
}

std::atomic<int64_t> g_count{0};

std::shared_ptr<const GemmMicrokernel> compile(DType dtype, const Tile& t) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string name = fmt::format("{}_{}", symbol_for(dtype, t), g_count++);
  detail::BuiltFunction built = detail::compile_built(
      name, [&](llvm::Module& m) { build_microkernel(m, name, dtype, t); }, detail::Emit::Load);
  struct Held : GemmMicrokernel {
    std::shared_ptr<void> code;
  };
  auto k = std::make_shared<Held>();
  k->fn = reinterpret_cast<GemmMicrokernelFn>(built.address);
  k->code = std::move(built.code);
  k->dtype = gemm_result_dtype(dtype);
  k->operands = dtype;
  k->mr = t.mr;
  k->nr = t.nr;
  k->k_unroll = dtype == kBFloat16 ? 2 * kUnroll : kUnroll;
  k->vector_bytes = t.vector_bytes;
  k->compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return k;
}

} // namespace

std::string GemmMicrokernel::describe() const {
  if (operands != dtype)
    return fmt::format("{}x{} {} pairs into {} ({}-bit vectors, dot products)", mr, nr,
                       short_dtype_name(operands), short_dtype_name(dtype), vector_bytes * 8);
  return fmt::format("{}x{} {} ({}-bit vectors)", mr, nr, short_dtype_name(dtype),
                     vector_bytes * 8);
}

DType gemm_result_dtype(DType dtype) { return dtype == kBFloat16 ? kFloat32 : dtype; }

bool gemm_bf16_dot() {
  static const bool yes = has_feature(detail::host_lowering_target().features, "avx512bf16") &&
                          host_vector_bytes() == 64;
  return yes;
}

std::shared_ptr<const GemmMicrokernel> compile_gemm_microkernel(DType dtype, int64_t mr,
                                                                int64_t nr) {
  check_dtype(dtype);
  return compile(dtype, checked_tile(dtype, mr, nr));
}

std::shared_ptr<const GemmMicrokernel> gemm_microkernel(DType dtype) {
  check_dtype(dtype);
  static std::mutex mu;
  static std::shared_ptr<const GemmMicrokernel> kernels[3];
  std::lock_guard lock(mu);
  auto& slot = kernels[dtype == kFloat64 ? 1 : dtype == kBFloat16 ? 2 : 0];
  if (!slot) slot = compile(dtype, host_tile(dtype));
  return slot;
}

int64_t gemm_vector_lanes(DType dtype) {
  check_dtype(dtype);
  return host_vector_bytes() / int64_t(itemsize(gemm_result_dtype(dtype)));
}

std::string gemm_microkernel_ir(DType dtype) { return build(dtype, detail::Emit::IR).text; }
std::string gemm_microkernel_asm(DType dtype) { return build(dtype, detail::Emit::Asm).text; }

} // namespace tj::llvmjit
