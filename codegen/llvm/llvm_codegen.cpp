// LLVM backend driver: host target, optimization pipeline, machine code and the process's LLJIT.
#include "codegen/llvm/llvm_codegen.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/OptBisect.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/IndVarSimplify.h>
#include <llvm/Transforms/Scalar/LICM.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Transforms/Vectorize/LoopVectorize.h>
#include <random>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "codegen/llvm/llvm_kernel.h"
#include "codegen/llvm/llvm_vmath.h"

namespace tj::llvmjit {
namespace {

using detail::LowerError;
using detail::VecIsa;

[[noreturn]] void fail(const kir::Kernel& k, const std::string& what) {
  throw std::runtime_error(
      fmt::format("LLVM backend: cannot compile kernel '{}': {}\n{}", k.name, what, k.str()));
}

std::string to_string(llvm::Error e) { return llvm::toString(std::move(e)); }

// ---- the host target ---------------------------------------------------------------------------

// Two process-wide command-line options of LLVM change the machine code of kernels: loop
// strength reduction (which KernelPassGate skips in elementwise kernels only: reductions and
// matmul need it) and epilogue vectorization (1 ms of a compile, but without it a row shorter
// than the main vector loop's step ran scalar: exp(x) * 2 + b over rows of 24 or 40 floats
// 2.5-3.4x slower). What cached machine code depends on is whether the embedding program set
// them.
std::string llvm_options() {
  auto& registered = llvm::cl::getRegisteredOptions();
  std::string state;
  for (std::string_view name : {"disable-lsr", "enable-epilogue-vectorization"}) {
    auto it = registered.find(name);
    if (it != registered.end() && it->second->getNumOccurrences() > 0)
      state += fmt::format(" {}:program", name);
  }
  return state;
}

struct HostTarget {
  std::string triple;
  std::string cpu;
  std::string features; // "+a,-b,...": every feature LLVM reports, for the TargetMachine
  std::string id;       // "cpu +a,+c,...": the enabled ones, sorted
  std::string options;  // the LLVM options the program set that change machine code
  const llvm::Target* target = nullptr;
  VecIsa isa; // libmvec variants the host can call
};

const HostTarget& host() {
  static const HostTarget h = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    HostTarget t;
    t.triple = llvm::sys::getProcessTriple();
    t.options = llvm_options();
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
      t.id += " +libmvec"; // kernels then call it: part of the cache key too
    }
    return t;
  }();
  return h;
}

// Machine code for every optimized kernel comes from the `Less` level with FastISel enabled.
// FastISel selects the scalar code (preheaders, remainders, loop control) and hands what it cannot
// select, the vector arithmetic, to SelectionDAG: -0.5 ms per kernel, and the vector loops of gelu
// and matmul came out the same. The passes that Default and Aggressive add (post-RA scheduling and
// the like) only reordered instructions in our kernels, for another ~0.3 ms.
llvm::CodeGenOptLevel codegen_level(int opt) {
  return opt == 0 ? llvm::CodeGenOptLevel::None : llvm::CodeGenOptLevel::Less;
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
    tm->setOptLevel(codegen_level(opt));
    // Set on every loan: an unoptimized compile turns it on, and the next user would inherit it.
    tm->Options.EnableFastISel = true;
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

int opt_level_checked(const kir::Kernel& k, int opt) {
  if (opt < 0 || opt > 3) fail(k, fmt::format("opt_level {} is not in 0..3", opt));
  return opt;
}

// ---- optimization and machine code -------------------------------------------------------------

// The kernel pipeline, for opt >= 1. A kernel is one function of a few loop nests in canonical
// form, with loop-invariant inputs already in the preheader: the per-module O3 pipeline (inliner,
// interprocedural passes, ~90 function passes) took 2.6 ms of the 6.9 ms gelu compile, and of the
// kernels we measured (gelu, sums, softmax, matmul, Philox, casts, where, transposes) only scalar
// integer division by a scalar ran faster for it (<= 5%: O3 unswitches the loop on the divisor
// being zero and unrolls it). What the kernels need, in order:
//   sroa          the tiled nest's error flag slot becomes a register
//   licm          hoists what the lowering left in inner loops; before instcombine, which then
//                 folds an "or" of a loop-invariant "divisor is zero" across the loop (otherwise
//                 the flag stays a vector reduction and Philox runs 25% slower)
//   instcombine, simplifycfg, indvars    the canonical form the vectorizer's cost model expects
//   loop-vectorize                       (opt >= 2) the work: widening, reductions, libmvec calls
//   instcombine, simplifycfg             clean up after it
llvm::FunctionPassManager kernel_pipeline(int opt) {
  llvm::FunctionPassManager fpm;
  fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
  fpm.addPass(llvm::createFunctionToLoopPassAdaptor(llvm::LICMPass(llvm::LICMOptions()),
                                                    /*UseMemorySSA=*/true));
  fpm.addPass(llvm::InstCombinePass());
  fpm.addPass(llvm::SimplifyCFGPass());
  fpm.addPass(llvm::createFunctionToLoopPassAdaptor(llvm::IndVarSimplifyPass()));
  if (opt >= 2) fpm.addPass(llvm::LoopVectorizePass());
  fpm.addPass(llvm::InstCombinePass());
  fpm.addPass(llvm::SimplifyCFGPass());
  return fpm;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (opt == 0)
    mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  else
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(kernel_pipeline(opt)));
  mpm.run(m, mam);

  // The vector variants were for the vectorizer only: every call left narrower than the widest
  // variant (loop remainders, epilogues) now calls the widest; below, the attributes and the
  // declarations nothing calls go. Where a call reaches one of our routines, its body is inlined.
  if (auto* used = m.getGlobalVariable("llvm.compiler.used")) used->eraseFromParent();
  detail::call_widest_variants(m);
  bool routines = false;
  for (llvm::Function& f : m) {
    f.removeDeadConstantUsers();
    if (!f.use_empty()) routines |= detail::define_vmath(f);
  }
  if (routines) {
    llvm::ModulePassManager inline_routines;
    inline_routines.addPass(llvm::AlwaysInlinerPass(/*InsertLifetimeIntrinsics=*/false));
    inline_routines.run(m, mam);
  }
  if (opt > 0)
    for (llvm::Function& f : m)
      if (!f.isDeclaration()) detail::mark_streaming_stores(f);
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& inst : bb)
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
          call->removeFnAttr("vector-function-abi-variant");
  for (auto it = m.begin(); it != m.end();) {
    llvm::Function& f = *it++;
    f.removeDeadConstantUsers();
    if ((f.isDeclaration() || f.hasLocalLinkage()) && f.use_empty() && !f.isIntrinsic())
      f.eraseFromParent();
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

// The optional code generation passes a kernel does without. LLVM asks the LLVMContext's pass
// gate before each pass it may skip (the mechanism of -opt-bisect-limit), so the choice is per
// compilation and changes nothing else in the process. Measured on an Intel Xeon, one thread,
// 12 workloads in cache (gelu, softmax, layer_norm, full and column sums, a 256^3 matmul, rows of
// 24, a transposed read, a gather, cumsum, integer division, where with casts): skipping the
// passes below changed none of their times beyond noise, and a fused elementwise kernel with exp
// compiled in 5.4 instead of 7.4 ms. Loop strength reduction is skipped only in elementwise
// kernels: without it the matmul ran 17% slower and softmax 5%, elementwise kernels no slower.
class KernelPassGate : public llvm::OptPassGate {
public:
  explicit KernelPassGate(bool elementwise) : elementwise_(elementwise) {}
  bool isEnabled() const override { return true; }
  bool shouldRunPass(const llvm::StringRef pass, llvm::StringRef) override {
    static constexpr std::string_view kSkipped[] = {
        "Machine Instruction Scheduler",
        "Early Tail Duplication",
        "Tail Duplication",
        "Control Flow Optimizer",
        "Branch Probability Basic Block Placement",
        "Shrink Wrapping analysis",
        "PostRA Machine Sink",
        "Machine code sinking",
        "Machine Common Subexpression Elimination",
        "Early If-Conversion",
        "Live Range Shrink",
        "Stack Slot Coloring",
        "Peephole Optimizations",
        "Machine Copy Propagation Pass",
        "Constant Hoisting",
        "Merge contiguous icmps into a memcmp",
        "Expand memcmp() to load/stores",
        "Partially inline calls to library functions",
        "TLS Variable Hoist",
        // Little or nothing to do in kernels (no TLS, statepoints, Atom, dot-product patterns;
        // mask-register reassignment, post-RA clean-ups, the remainders' call frames), measured
        // as the others.
        "Local Dynamic TLS Access Clean-up",
        "Fixup Statepoint Caller Saved",
        "X86 Atom pad short functions",
        "X86 Partial Reduction",
        "X86 Domain Reassignment Pass",
        "Post RA top-down list latency scheduler",
        "Machine Late Instructions Cleanup Pass",
        "X86 Optimize Call Frame",
    };
    const std::string_view name(pass.data(), pass.size());
    // Loop strength reduction and the canonicalization of freezes it relies on.
    if (elementwise_ &&
        (name == "Loop Strength Reduction" || name == "Canonicalize Freeze Instructions in Loops"))
      return false;
    return std::find(std::begin(kSkipped), std::end(kSkipped), name) == std::end(kSkipped);
  }

private:
  bool elementwise_;
};

// Lowers and optimizes k into a fresh module of ctx, whose code generation passes it chooses.
std::unique_ptr<llvm::Module> build_module(const kir::Kernel& k, const std::string& fname,
                                           llvm::LLVMContext& ctx, llvm::TargetMachine& tm,
                                           int opt) {
  static KernelPassGate elementwise(true), with_rows(false); // no state: shared by threads
  ctx.setOptPassGate(k.has_row_loops() ? with_rows : elementwise);
  const HostTarget& h = host();
  auto m = std::make_unique<llvm::Module>(k.name.empty() ? "tjk" : k.name, ctx);
  m->setTargetTriple(h.triple);
  m->setDataLayout(tm.createDataLayout());
  detail::lower_kernel(k, *m, fname, {h.cpu, h.features, h.isa});
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (llvm::verifyModule(*m, &es)) {
    std::string ir;
    llvm::raw_string_ostream os(ir);
    m->print(os, nullptr);
    throw LowerError(fmt::format("invalid LLVM IR: {}\n{}", errors, ir));
  }
  optimize(*m, tm, opt);
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

// A random number drawn once per process (process ids repeat, in containers especially).
uint64_t process_nonce() {
  static const uint64_t nonce = [] {
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(getpid());
  }();
  return nonce;
}

} // namespace

ObjectCode compile_object(const kir::Kernel& k, int opt_level) {
  kir::verify(k);
  int opt = opt_level_checked(k, opt_level);
  ObjectCode code;
  // Unique across processes too: cached objects from other processes keep their names.
  code.symbol =
      fmt::format("tjk_{:016x}_{:016x}_{}", k.hash(), process_nonce(), g_kernel_counter++);
  llvm::SmallVector<char, 0> obj = guarded(k, [&] {
    llvm::LLVMContext ctx;
    TargetMachineLease tm(opt);
    auto m = build_module(k, code.symbol, ctx, *tm.tm, opt);
    return machine_code(*m, *tm.tm, llvm::CodeGenFileType::ObjectFile);
  });
  code.object.assign(obj.begin(), obj.end());
  return code;
}

std::shared_ptr<CompiledKernel> load(const ObjectCode& code) {
  llvm::orc::LLJIT& j = jit();
  auto rt = j.getMainJITDylib().createResourceTracker();
  auto fail_load = [&](const std::string& what) {
    llvm::consumeError(rt->remove());
    throw std::runtime_error(fmt::format("JIT: cannot load kernel {}: {}", code.symbol, what));
  };
  if (auto e = j.addObjectFile(rt, llvm::MemoryBuffer::getMemBufferCopy(code.object, code.symbol)))
    fail_load(to_string(std::move(e)));
  auto sym = j.lookup(code.symbol);
  if (!sym) fail_load(to_string(sym.takeError()));
  auto* ck = new CompiledKernel;
  ck->fn = sym->toPtr<KernelFn>();
  // The machine code goes away with the last reference.
  return std::shared_ptr<CompiledKernel>(ck, [rt](CompiledKernel* p) {
    llvm::consumeError(rt->remove());
    delete p;
  });
}

std::shared_ptr<CompiledKernel> compile(const kir::Kernel& k, int opt_level) {
  auto t0 = std::chrono::steady_clock::now();
  ObjectCode code = compile_object(k, opt_level);
  std::shared_ptr<CompiledKernel> ck;
  try {
    ck = load(code);
  } catch (const std::runtime_error& e) {
    fail(k, e.what());
  }
  ck->compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return ck;
}

namespace detail {

LoweringTarget host_lowering_target() {
  const HostTarget& h = host();
  return {h.cpu, h.features, h.isa};
}

BuiltFunction compile_built(const std::string& symbol,
                            const std::function<void(llvm::Module&)>& build, Emit emit) {
  llvm::LLVMContext ctx;
  TargetMachineLease tm(3); // the next loan resets both settings
  tm->setOptLevel(llvm::CodeGenOptLevel::Aggressive);
  tm->Options.EnableFastISel = false;
  const HostTarget& h = host();
  llvm::Module m(symbol, ctx);
  m.setTargetTriple(h.triple);
  m.setDataLayout(tm->createDataLayout());
  build(m);
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (llvm::verifyModule(m, &es))
    throw std::logic_error(fmt::format("LLVM backend: invalid IR for {}: {}", symbol, errors));
  BuiltFunction out;
  if (emit == Emit::IR) {
    llvm::raw_string_ostream os(out.text);
    m.print(os, nullptr);
    return out;
  }
  auto code = machine_code(m, *tm.tm,
                           emit == Emit::Asm ? llvm::CodeGenFileType::AssemblyFile
                                             : llvm::CodeGenFileType::ObjectFile);
  if (emit == Emit::Asm) {
    out.text.assign(code.begin(), code.end());
    return out;
  }
  auto loaded = load(ObjectCode{symbol, std::string(code.begin(), code.end())});
  out.address = reinterpret_cast<void*>(loaded->fn);
  out.code = std::move(loaded);
  return out;
}

} // namespace detail

// Salt of cached machine code: changed with any edit to optimize() or machine_code() that the
// printed pass pipeline does not show (the post-pipeline clean-up, code generation options, the
// passes KernelPassGate skips).
constexpr const char* kCodegenRevision = "tj-llvm-8";

std::string identity(const kir::Kernel& k, int opt_level) {
  kir::verify(k);
  int opt = opt_level_checked(k, opt_level);
  return guarded(k, [&] {
    // The unoptimized IR says everything the lowering decided; the pass pipeline, the target
    // and LLVM's version say what becomes of it.
    llvm::LLVMContext ctx;
    TargetMachineLease tm(opt);
    const HostTarget& h = host();
    llvm::Module m("tjk", ctx);
    m.setTargetTriple(h.triple);
    m.setDataLayout(tm.tm->createDataLayout());
    detail::lower_kernel(k, m, "tjk", {h.cpu, h.features, h.isa});
    std::string s;
    llvm::raw_string_ostream os(s);
    m.print(os, nullptr);
    llvm::ModulePassManager mpm;
    if (opt > 0) mpm.addPass(llvm::createModuleToFunctionPassAdaptor(kernel_pipeline(opt)));
    os << "\npipeline opt " << opt << ": ";
    mpm.printPipeline(os, [](llvm::StringRef n) { return n; });
    os << "\ntarget " << h.id << "\nllvm " << LLVM_VERSION_STRING << "\noptions" << h.options
       << "\n"
       << kCodegenRevision;
    return s;
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
