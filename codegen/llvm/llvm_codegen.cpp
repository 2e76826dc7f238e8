// LLVM backend: a kir::Kernel as one vectorizable LLVM IR loop, optimized and JIT-compiled for the
// host CPU with ORC LLJIT.
#include "llvm_codegen.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/SmallVectorMemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "llvm_math.h"

namespace tj::llvmjit {
namespace {

using detail::LowerError;
using detail::OpLowering;
using detail::VecIsa;
using kir::Slot;
using kir::StrideKind;
using Role = kir::Slot::Role;

[[noreturn]] void fail(const kir::Kernel& k, const std::string& what) {
  throw std::runtime_error(
      fmt::format("LLVM backend: cannot compile kernel '{}': {}\n{}", k.name, what, k.str()));
}

std::string to_string(llvm::Error e) { return llvm::toString(std::move(e)); }

// ---- the host target ---------------------------------------------------------------------------

struct HostTarget {
  std::string triple;
  std::string cpu;
  std::string features; // "+a,-b,...": every feature LLVM reports, for the TargetMachine
  std::string id;       // "cpu +a,+c,...": the enabled ones, sorted
  const llvm::Target* target = nullptr;
  VecIsa isa; // libmvec variants the host can call
};

const HostTarget& host() {
  static const HostTarget h = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    if (getenv("E_NOEPI")) {
      auto& opts = llvm::cl::getRegisteredOptions();
      auto it = opts.find("enable-epilogue-vectorization");
      if (it != opts.end()) static_cast<llvm::cl::opt<bool>*>(it->second)->setValue(false);
      else fprintf(stderr, "no opt\n");
    }
    HostTarget t;
    t.triple = llvm::sys::getProcessTriple();
    t.cpu = llvm::sys::getHostCPUName().str();
    auto features = llvm::sys::getHostCPUFeatures();
    std::vector<std::string> all, on;
    for (const auto& f : features) {
      all.push_back((f.second ? "+" : "-") + f.first().str());
      if (f.second) on.push_back("+" + f.first().str());
    }
    std::sort(all.begin(), all.end());
    std::sort(on.begin(), on.end());
    t.features = fmt::format("{}", fmt::join(all, ","));
    t.id = fmt::format("{} {}", t.cpu, fmt::join(on, ","));
    std::string err;
    t.target = llvm::TargetRegistry::lookupTarget(t.triple, err);
    if (!t.target) throw std::runtime_error("LLVM backend: no target for the host: " + err);
    // glibc's vector math library; its symbols become visible to the JIT's process-symbol lookup.
    auto has = [&](const char* f) { return features.lookup(f); };
    if (llvm::Triple(t.triple).getArch() == llvm::Triple::x86_64 &&
        dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL)) {
      t.isa.sse = has("sse4.1");
      t.isa.avx2 = has("avx2");
      t.isa.avx512 = has("avx512f");
    }
    return t;
  }();
  return h;
}

llvm::CodeGenOptLevel codegen_level(int opt) {
  switch (opt) {
  case 0: return llvm::CodeGenOptLevel::None;
  case 1: return llvm::CodeGenOptLevel::Less;
  case 2: return llvm::CodeGenOptLevel::Default;
  default: return llvm::CodeGenOptLevel::Aggressive;
  }
}

// TargetMachines are not safe to share between threads, and cost ~0.2 ms to create: a pool lends
// one per compilation.
class TargetMachinePool {
public:
  std::unique_ptr<llvm::TargetMachine> take(int opt) {
    std::unique_ptr<llvm::TargetMachine> tm;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        tm = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!tm) {
      const HostTarget& h = host();
      llvm::TargetOptions options; // no fast-math; FP contraction only of explicit fmuladd
      options.AllowFPOpFusion = llvm::FPOpFusion::Standard;
      tm.reset(h.target->createTargetMachine(h.triple, h.cpu, h.features, options,
                                             llvm::Reloc::PIC_, llvm::CodeModel::Small,
                                             codegen_level(opt), /*JIT=*/true));
      if (!tm) throw std::runtime_error("LLVM backend: cannot create a TargetMachine for the host");
    }
    tm->setOptLevel(codegen_level(getenv("E_CGLESS") && opt >= 2 ? 1 : opt));
    return tm;
  }
  void give(std::unique_ptr<llvm::TargetMachine> tm) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(tm));
  }

private:
  std::mutex mu_;
  std::vector<std::unique_ptr<llvm::TargetMachine>> free_;
};

TargetMachinePool& tm_pool() {
  static auto* pool = new TargetMachinePool; // leaked: used until the process ends
  return *pool;
}

struct TargetMachineLease {
  explicit TargetMachineLease(int opt) : tm(tm_pool().take(opt)) {}
  ~TargetMachineLease() { tm_pool().give(std::move(tm)); }
  TargetMachineLease(const TargetMachineLease&) = delete;
  TargetMachineLease& operator=(const TargetMachineLease&) = delete;
  llvm::TargetMachine* operator->() const { return tm.get(); }
  std::unique_ptr<llvm::TargetMachine> tm;
};

// One LLJIT per process, created on first use. It is leaked on purpose: compiled kernels held by
// caches with static storage may be released after any static JIT would have been destroyed.
llvm::orc::LLJIT& jit() {
  static llvm::orc::LLJIT* j = [] {
    host();
    auto created = llvm::orc::LLJITBuilder()
                       .setPlatformSetUp(llvm::orc::setUpInactivePlatform) // no static ctors
                       .create();
    if (!created)
      throw std::runtime_error("LLVM backend: cannot create the JIT: " +
                               to_string(created.takeError()));
    return created->release();
  }();
  return *j;
}

// ---- lowering ------------------------------------------------------------------------------------

int opt_level_checked(const kir::Kernel& k, int opt) {
  if (opt < 0 || opt > 3) fail(k, fmt::format("opt_level {} is not in 0..3", opt));
  return opt;
}

// The kernel as
//   void fname(i64 n, ptr ptrs, ptr base, ptr stride, ptr params, ptr err)
// : a guard, a preheader that loads pointers, bases, strides, params and broadcast inputs, one
// single-block canonical loop over i in [0, n) and, when the kernel divides integers, one store
// of the error flag after the loop.
class KernelLowering {
public:
  KernelLowering(const kir::Kernel& k, llvm::Module& m, const HostTarget& h)
      : k_(k), m_(m), ctx_(m.getContext()), b_(ctx_), ops_(b_, h.isa) {}

  llvm::Function* run(const std::string& fname, const HostTarget& h);

private:
  struct SlotState {
    llvm::Value* ptr = nullptr;        // the slot's buffer
    llvm::Value* base = nullptr;       // i64
    llvm::Value* stride = nullptr;     // i64; constant unless Strided
    llvm::Value* row = nullptr;        // Contiguous/Broadcast: &buffer[base]
    llvm::Value* invariant = nullptr;  // Broadcast input: its value, loaded once
    llvm::MDNode* scope = nullptr;     // alias scope list {slot}
    llvm::MDNode* noalias = nullptr;   // scopes this slot's accesses never alias
  };

  void prepare_slot(int s);
  llvm::Value* element_index(int s);
  llvm::Value* element_address(int s);
  llvm::Instruction* annotate(llvm::Instruction* access, int s);
  llvm::Value* operand(int v, int a, DType want);
  llvm::Value* lower_value(int v);
  [[noreturn]] void bad(int v, const std::string& what) {
    throw LowerError(fmt::format("%{}: {}", v, what));
  }

  const kir::Kernel& k_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  OpLowering ops_;
  llvm::Function* f_ = nullptr;
  llvm::BasicBlock* pre_ = nullptr;
  llvm::Value* i_ = nullptr;
  std::vector<SlotState> slots_;
  std::vector<llvm::Value*> params_;
  std::vector<llvm::Value*> vals_;
};

llvm::Function* KernelLowering::run(const std::string& fname, const HostTarget& h) {
  auto* i64 = b_.getInt64Ty();
  auto* ptr = b_.getPtrTy();
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {i64, ptr, ptr, ptr, ptr, ptr}, false);
  f_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, fname, m_);
  f_->addFnAttr(llvm::Attribute::NoUnwind);
  f_->addFnAttr("target-cpu", h.cpu);
  f_->addFnAttr("target-features", h.features);
  const char* names[] = {"n", "ptrs", "base", "stride", "params", "err"};
  for (unsigned a = 0; a < 6; ++a) f_->getArg(a)->setName(names[a]);
  for (unsigned a = 1; a <= 4; ++a) { // read-only arrays the kernel never writes through
    f_->addParamAttr(a, llvm::Attribute::NoAlias);
    f_->addParamAttr(a, llvm::Attribute::NoCapture);
    f_->addParamAttr(a, llvm::Attribute::ReadOnly);
  }
  f_->addParamAttr(5, llvm::Attribute::NoCapture);

  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", f_);
  pre_ = llvm::BasicBlock::Create(ctx_, "preheader", f_);
  auto* loop = llvm::BasicBlock::Create(ctx_, "loop", f_);
  auto* done = llvm::BasicBlock::Create(ctx_, "done", f_);
  auto* ret = llvm::BasicBlock::Create(ctx_, "ret", f_);
  llvm::Value* n = f_->getArg(0);

  b_.SetInsertPoint(entry);
  b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), pre_, ret);

  // Alias scopes: outputs alias no input and no other output (the kernel IR contract).
  slots_.resize(k_.slots.size());
  {
    llvm::MDBuilder mdb(ctx_);
    llvm::MDNode* domain = mdb.createAnonymousAliasScopeDomain("tjk");
    std::vector<llvm::Metadata*> scopes(k_.slots.size(), nullptr);
    for (size_t s = 0; s < k_.slots.size(); ++s)
      if (k_.slots[s].role != Role::Index)
        scopes[s] = mdb.createAnonymousAliasScope(domain, fmt::format("slot{}", s));
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      if (!scopes[s]) continue;
      std::vector<llvm::Metadata*> others;
      for (size_t o = 0; o < k_.slots.size(); ++o)
        if (o != s && scopes[o] &&
            (k_.slots[s].role == Role::Output || k_.slots[o].role == Role::Output))
          others.push_back(scopes[o]);
      slots_[s].scope = llvm::MDNode::get(ctx_, {scopes[s]});
      if (!others.empty()) slots_[s].noalias = llvm::MDNode::get(ctx_, others);
    }
  }

  // Preheader: everything loop-invariant, loaded only when n > 0.
  b_.SetInsertPoint(pre_);
  params_.assign(k_.params.size(), nullptr);
  for (size_t p = 0; p < k_.params.size(); ++p) {
    bool used = std::any_of(k_.values.begin(), k_.values.end(), [&](const kir::Value& v) {
      return v.op == ir::Op::Const && v.slot == int32_t(p);
    });
    if (!used) continue;
    llvm::Value* addr = b_.CreateConstInBoundsGEP1_64(i64, f_->getArg(4), p);
    params_[p] = ops_.param(b_.CreateLoad(i64, addr, fmt::format("param{}", p)), k_.params[p]);
  }
  for (size_t s = 0; s < k_.slots.size(); ++s) prepare_slot(int(s));
  auto* pre_end = b_.CreateBr(loop);

  // The loop body: one block, values in order, then the stores.
  b_.SetInsertPoint(loop);
  auto* i = b_.CreatePHI(i64, 2, "i");
  auto* err_in = b_.CreatePHI(b_.getInt1Ty(), 2, "err.acc");
  i_ = i;
  ops_.err = err_in;
  vals_.assign(k_.values.size(), nullptr);
  for (size_t v = 0; v < k_.values.size(); ++v) vals_[v] = lower_value(int(v));
  for (const kir::Store& st : k_.stores) {
    DType t = k_.slots[st.slot].dtype;
    llvm::Value* x = ops_.to_mem(vals_[st.value], t);
    annotate(b_.CreateStore(x, element_address(st.slot)), st.slot);
  }
  llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), "i.next", /*HasNUW=*/true, /*HasNSW=*/true);
  auto* latch_br = b_.CreateCondBr(b_.CreateICmpEQ(next, n), done, loop);
  if (getenv("E_TAILFOLD")) {
    llvm::Metadata* pe[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.predicate.enable"),
                            llvm::ConstantAsMetadata::get(b_.getTrue())};
    llvm::Metadata* ops[] = {nullptr, llvm::MDNode::get(ctx_, pe)};
    auto* md = llvm::MDNode::getDistinct(ctx_, ops);
    md->replaceOperandWith(0, md);
    latch_br->setMetadata(llvm::LLVMContext::MD_loop, md);
  }
  i->addIncoming(b_.getInt64(0), pre_);
  i->addIncoming(next, loop);

  // The error flag: an OR reduction in the loop, stored once after it.
  b_.SetInsertPoint(done);
  if (ops_.err == err_in) {
    err_in->replaceAllUsesWith(b_.getFalse());
    err_in->eraseFromParent();
    b_.CreateBr(ret);
  } else {
    err_in->addIncoming(b_.getFalse(), pre_);
    err_in->addIncoming(ops_.err, loop);
    auto* set_err = llvm::BasicBlock::Create(ctx_, "set_err", f_, ret);
    b_.CreateCondBr(ops_.err, set_err, ret);
    b_.SetInsertPoint(set_err);
    b_.CreateStore(b_.getInt32(1), f_->getArg(5));
    b_.CreateBr(ret);
  }
  b_.SetInsertPoint(ret);
  b_.CreateRetVoid();
  (void)pre_end;

  if (!ops_.keep_alive.empty()) llvm::appendToCompilerUsed(m_, ops_.keep_alive);
  return f_;
}

void KernelLowering::prepare_slot(int s) {
  const Slot& slot = k_.slots[s];
  SlotState& st = slots_[s];
  bool used = std::any_of(k_.values.begin(), k_.values.end(), [&](const kir::Value& v) {
    return (v.op == ir::Op::Buffer || v.op == ir::Op::Iota) && v.slot == s;
  }) || std::any_of(k_.stores.begin(), k_.stores.end(), [&](const kir::Store& x) {
    return x.slot == s;
  });
  if (!used) return;
  auto* i64 = b_.getInt64Ty();
  st.base = b_.CreateLoad(i64, b_.CreateConstInBoundsGEP1_64(i64, f_->getArg(2), s),
                          fmt::format("base{}", s));
  switch (slot.stride) {
  case StrideKind::Contiguous: st.stride = b_.getInt64(1); break;
  case StrideKind::Broadcast: st.stride = b_.getInt64(0); break;
  case StrideKind::Strided:
    st.stride = b_.CreateLoad(i64, b_.CreateConstInBoundsGEP1_64(i64, f_->getArg(3), s),
                              fmt::format("stride{}", s));
    break;
  }
  if (slot.role == Role::Index) return;
  llvm::Type* mt = ops_.mem_type(slot.dtype);
  st.ptr = b_.CreateLoad(b_.getPtrTy(), b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), f_->getArg(1), s),
                         fmt::format("ptr{}", s));
  if (slot.stride != StrideKind::Strided)
    st.row = b_.CreateInBoundsGEP(mt, st.ptr, st.base, fmt::format("row{}", s));
  if (slot.stride == StrideKind::Broadcast && slot.role == Role::Input)
    st.invariant = ops_.to_reg(annotate(b_.CreateLoad(mt, st.row), s), slot.dtype);
}

// Element index of slot s at iteration i: base + i * stride.
llvm::Value* KernelLowering::element_index(int s) {
  const SlotState& st = slots_[s];
  switch (k_.slots[s].stride) {
  case StrideKind::Contiguous: return b_.CreateAdd(st.base, i_);
  case StrideKind::Broadcast: return st.base;
  case StrideKind::Strided: return b_.CreateAdd(st.base, b_.CreateMul(i_, st.stride));
  }
  return nullptr;
}

llvm::Value* KernelLowering::element_address(int s) {
  const SlotState& st = slots_[s];
  llvm::Type* mt = ops_.mem_type(k_.slots[s].dtype);
  switch (k_.slots[s].stride) {
  case StrideKind::Contiguous: return b_.CreateInBoundsGEP(mt, st.row, i_);
  case StrideKind::Broadcast: return st.row;
  case StrideKind::Strided: return b_.CreateInBoundsGEP(mt, st.ptr, element_index(s));
  }
  return nullptr;
}

llvm::Instruction* KernelLowering::annotate(llvm::Instruction* access, int s) {
  if (slots_[s].scope) access->setMetadata(llvm::LLVMContext::MD_alias_scope, slots_[s].scope);
  if (slots_[s].noalias) access->setMetadata(llvm::LLVMContext::MD_noalias, slots_[s].noalias);
  return access;
}

// Operand a of value v, which must have dtype `want`.
llvm::Value* KernelLowering::operand(int v, int a, DType want) {
  int src = k_.values[v].src[a];
  DType have = k_.values[src].dtype;
  if (have != want)
    bad(v, fmt::format("{} operand %{} is {}, expected {}", ir::name(k_.values[v].op), src,
                       dtype_name(have), dtype_name(want)));
  return vals_[src];
}

llvm::Value* KernelLowering::lower_value(int idx) {
  const kir::Value& v = k_.values[idx];
  auto src_dtype = [&](int a) { return k_.values[v.src[a]].dtype; };
  switch (ir::category(v.op)) {
  case ir::OpCategory::Leaf:
    switch (v.op) {
    case ir::Op::Buffer: {
      const Slot& slot = k_.slots[v.slot];
      if (slot.role != Role::Input) bad(idx, fmt::format("load of slot{}, not an input", v.slot));
      if (slot.dtype != v.dtype)
        bad(idx, fmt::format("load of {} slot{} as {}", dtype_name(slot.dtype), v.slot,
                             dtype_name(v.dtype)));
      if (slots_[v.slot].invariant) return slots_[v.slot].invariant;
      llvm::Type* mt = ops_.mem_type(slot.dtype);
      return ops_.to_reg(annotate(b_.CreateLoad(mt, element_address(v.slot)), v.slot), slot.dtype);
    }
    case ir::Op::Const:
      if (k_.params[v.slot] != v.dtype)
        bad(idx, fmt::format("param{} is {}, used as {}", v.slot, dtype_name(k_.params[v.slot]),
                             dtype_name(v.dtype)));
      return params_[v.slot];
    case ir::Op::Iota: return ops_.cast(element_index(v.slot), kInt64, v.dtype);
    case ir::Op::Philox: {
      llvm::Value* ctr = b_.CreateAdd(ops_.cast(vals_[v.src[1]], src_dtype(1), kInt64),
                                      ops_.cast(vals_[v.src[0]], src_dtype(0), kInt64));
      llvm::Value* key = ops_.cast(vals_[v.src[2]], src_dtype(2), kInt64);
      return ops_.cast(ops_.philox(ctr, key, v.imm), kInt64, v.dtype);
    }
    default: bad(idx, "unknown leaf");
    }
  case ir::OpCategory::Unary:
    if (v.op == ir::Op::Not) {
      if (v.dtype != kBool) bad(idx, "Not must produce bool");
      return ops_.unary(v.op, src_dtype(0), vals_[v.src[0]]);
    }
    return ops_.unary(v.op, v.dtype, operand(idx, 0, v.dtype));
  case ir::OpCategory::Binary:
    if (ir::is_comparison(v.op)) {
      if (v.dtype != kBool) bad(idx, "a comparison must produce bool");
      DType t = src_dtype(0);
      return ops_.binary(v.op, t, vals_[v.src[0]], operand(idx, 1, t));
    }
    return ops_.binary(v.op, v.dtype, operand(idx, 0, v.dtype), operand(idx, 1, v.dtype));
  case ir::OpCategory::Ternary: {
    llvm::Value* cond = ops_.cast(vals_[v.src[0]], src_dtype(0), kBool);
    return b_.CreateSelect(cond, operand(idx, 1, v.dtype), operand(idx, 2, v.dtype));
  }
  case ir::OpCategory::Cast: return ops_.cast(vals_[v.src[0]], src_dtype(0), v.dtype);
  case ir::OpCategory::Movement: break;
  }
  bad(idx, fmt::format("{} cannot be lowered", ir::name(v.op)));
}

// ---- optimization and machine code -------------------------------------------------------------

void optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = opt >= 2;
  pto.SLPVectorization = opt >= 2;
  if (getenv("E_NOUNROLL")) pto.LoopUnrolling = false;
  if (getenv("E_NOSLP")) pto.SLPVectorization = false;
  if (getenv("E_NOINTERLEAVE")) pto.LoopInterleaving = false;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  const llvm::OptimizationLevel levels[] = {llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1,
                                            llvm::OptimizationLevel::O2, llvm::OptimizationLevel::O3};
  llvm::ModulePassManager mpm = opt == 0 ? pb.buildO0DefaultPipeline(levels[0])
                                         : pb.buildPerModuleDefaultPipeline(levels[opt]);
  mpm.run(m, mam);

  // The vector variants were for the vectorizer only: drop the attributes left on scalar calls
  // (loop remainders) and the declarations nothing calls.
  if (auto* used = m.getGlobalVariable("llvm.compiler.used")) used->eraseFromParent();
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& inst : bb)
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
          call->removeFnAttr("vector-function-abi-variant");
  for (auto it = m.begin(); it != m.end();) {
    llvm::Function& f = *it++;
    f.removeDeadConstantUsers();
    if (f.isDeclaration() && f.use_empty() && !f.isIntrinsic()) f.eraseFromParent();
  }
}

llvm::SmallVector<char, 0> machine_code(llvm::Module& m, llvm::TargetMachine& tm,
                                        llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> out;
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  pm.add(new llvm::TargetLibraryInfoWrapperPass(llvm::Triple(m.getTargetTriple())));
  if (tm.addPassesToEmitFile(pm, os, nullptr, type))
    throw LowerError("the target cannot emit this file type");
  pm.run(m);
  return out;
}

// Lowers and optimizes k into a fresh module of ctx.
std::unique_ptr<llvm::Module> build_module(const kir::Kernel& k, const std::string& fname,
                                           llvm::LLVMContext& ctx, llvm::TargetMachine& tm,
                                           int opt) {
  const HostTarget& h = host();
  auto m = std::make_unique<llvm::Module>(k.name.empty() ? "tjk" : k.name, ctx);
  m->setTargetTriple(h.triple);
  m->setDataLayout(tm.createDataLayout());
  KernelLowering(k, *m, h).run(fname, h);
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (llvm::verifyModule(*m, &es)) {
    std::string ir;
    llvm::raw_string_ostream os(ir);
    m->print(os, nullptr);
    throw LowerError(fmt::format("invalid LLVM IR: {}\n{}", errors, ir));
  }
  auto t0 = std::chrono::steady_clock::now();
  if (!getenv("E_RAW")) optimize(*m, tm, opt);
  if (getenv("TJPROF")) fprintf(stderr, "opt %.2f ", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return m;
}

template <class F> auto guarded(const kir::Kernel& k, F&& body) {
  try {
    return body();
  } catch (const LowerError& e) {
    fail(k, e.what());
  }
}

std::atomic<uint64_t> g_kernel_counter{0};

} // namespace

std::shared_ptr<CompiledKernel> compile(const kir::Kernel& k, int opt_level) {
  auto t0 = std::chrono::steady_clock::now();
  kir::verify(k);
  int opt = opt_level_checked(k, opt_level);
  llvm::orc::LLJIT& j = jit();
  std::string fname = fmt::format("tjk_{:016x}_{}", k.hash(), g_kernel_counter++);
  static bool prof = getenv("TJPROF");
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  llvm::SmallVector<char, 0> obj = guarded(k, [&] {
    llvm::LLVMContext ctx;
    auto ta = std::chrono::steady_clock::now();
    TargetMachineLease tm(opt);
    auto tb = std::chrono::steady_clock::now();
    auto m = build_module(k, fname, ctx, *tm.tm, opt);
    auto tc = std::chrono::steady_clock::now();
    auto r = machine_code(*m, *tm.tm, llvm::CodeGenFileType::ObjectFile);
    auto td = std::chrono::steady_clock::now();
    if (prof) fprintf(stderr, "tm %.2f lower+opt %.2f codegen %.2f ", ms(ta,tb), ms(tb,tc), ms(tc,td));
    return r;
  });
  auto tlink = std::chrono::steady_clock::now();
  auto rt = j.getMainJITDylib().createResourceTracker();
  if (auto e = j.addObjectFile(rt, std::make_unique<llvm::SmallVectorMemoryBuffer>(
                                       std::move(obj), fname, /*RequiresNullTerminator=*/false)))
    fail(k, "JIT: " + to_string(std::move(e)));
  auto sym = j.lookup(fname);
  if (!sym) {
    std::string msg = to_string(sym.takeError());
    llvm::consumeError(rt->remove());
    fail(k, "JIT link: " + msg);
  }
  auto t1 = std::chrono::steady_clock::now();
  if (prof) fprintf(stderr, "link %.2f\n", ms(tlink, t1));
  auto* ck = new CompiledKernel;
  ck->fn = sym->toPtr<KernelFn>();
  ck->compile_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  // The machine code goes away with the last reference.
  return std::shared_ptr<CompiledKernel>(ck, [rt](CompiledKernel* p) {
    llvm::consumeError(rt->remove());
    delete p;
  });
}

std::string emit_llvm_ir(const kir::Kernel& k, int opt_level) {
  kir::verify(k);
  int opt = opt_level_checked(k, opt_level);
  return guarded(k, [&] {
    llvm::LLVMContext ctx;
    TargetMachineLease tm(opt);
    auto m = build_module(k, fmt::format("tjk_{:016x}", k.hash()), ctx, *tm.tm, opt);
    std::string ir;
    llvm::raw_string_ostream os(ir);
    m->print(os, nullptr);
    return ir;
  });
}

std::string emit_asm(const kir::Kernel& k, int opt_level) {
  kir::verify(k);
  int opt = opt_level_checked(k, opt_level);
  return guarded(k, [&] {
    llvm::LLVMContext ctx;
    TargetMachineLease tm(opt);
    auto m = build_module(k, fmt::format("tjk_{:016x}", k.hash()), ctx, *tm.tm, opt);
    auto text = machine_code(*m, *tm.tm, llvm::CodeGenFileType::AssemblyFile);
    return std::string(text.begin(), text.end());
  });
}

std::string host_target_id() { return host().id; }

} // namespace tj::llvmjit
