#include "measure/jit.h"

#include <chrono>
#include <map>
#include <mutex>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/MC/SubtargetFeature.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "measure/codegen.h"
#include "measure/runtime.h"

namespace tunedb::measure {
namespace {

std::string ErrorText(llvm::Error error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << error;
  return os.str();
}

void InitializeLlvmOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    // Two limits on LLVM's instruction schedulers, which are quadratic in
    // a basic block and were most of the compile of a large unrolled
    // candidate (llc -time-passes). On an out-of-order x86 core neither
    // changes how fast the good kernels run. Measured on a Zen 3 over the
    // records of tuning sessions (bench/RESULTS.md, session 25):
    // - no post-RA scheduling: compile time -25% (matmul 128), -22% (512),
    //   -14% (conv2d); llvm-mca gave the hottest loop of ten best kernels
    //   the same cycles within 2% either way;
    // - the machine scheduler's dependence maps cut down at 200 pending
    //   memory operations, not 1000: a further -25%, -25%, -16% of llc
    //   time; the hottest loop unchanged in 191 of 192 kernels.
    // And one for correctness: LLVM 16's loop vectorizer puts a group of
    // strided loads of one array at its first load, even above a store to
    // an element a later load of the group reads (llvm-project issue
    // 63602, fixed in LLVM 17), so a copy-out after an accumulation read
    // the old values; the test is
    //   CodegenTest.AStridedLoadIsNotMovedAboveAStoreToTheSameElement.
    // Without interleaved groups such loads are gathers; the loops tunedb
    // vectorizes itself are unaffected (bench/RESULTS.md, session 42).
    // LLVM reads these only from its command line, once per process; a
    // failure leaves LLVM's defaults.
    const char* argv[] = {"tunedb", "-post-RA-scheduler=false", "-dag-maps-huge-region=200",
                          "-enable-interleaved-mem-accesses=false"};
    llvm::cl::ParseCommandLineOptions(4, argv, "", &llvm::nulls());
  });
}

}  // namespace

struct Jit::Impl {
  Target target;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::map<std::uint64_t, llvm::orc::ResourceTrackerSP> trackers;
  std::uint64_t next_id = 1;

  llvm::orc::JITTargetMachineBuilder Builder() {
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) throw BuildError("cannot detect the host target: " + ErrorText(jtmb.takeError()));
    jtmb->setCPU(target.cpu);
    jtmb->getFeatures() = llvm::SubtargetFeatures(target.features);
    jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
    return std::move(*jtmb);
  }

  std::unique_ptr<llvm::Module> Build(const ir::PrimFunc& lowered, llvm::LLVMContext& ctx, const std::string& name,
                                      const CompileOptions& options) {
    CodegenOptions co;
    co.cpu = target.cpu;
    co.features = target.features;
    co.vector_bits = target.VectorBits();
    co.contract_fma = options.contract_fma;
    co.fault_crash = options.fault_crash;
    co.fault_hang = options.fault_hang;
    std::unique_ptr<llvm::Module> mod;
    try {
      mod = GenerateModule(lowered, ctx, name, co);
    } catch (const std::exception& e) {
      throw BuildError(e.what());
    }
    mod->setDataLayout(tm->createDataLayout());
    mod->setTargetTriple(tm->getTargetTriple().str());
    // The O3 pipeline for this target.
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions tuning;
    tuning.LoopVectorization = true;
    tuning.SLPVectorization = true;
    llvm::PassBuilder pb(tm.get(), tuning);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(*mod, mam);
    return mod;
  }
};

Jit::Jit(const Target& target) : impl_(std::make_unique<Impl>()) {
  InitializeLlvmOnce();
  impl_->target = target;
  auto jtmb = impl_->Builder();
  auto tm = jtmb.createTargetMachine();
  if (!tm) throw BuildError("cannot create a target machine for " + target.ToString() + ": " + ErrorText(tm.takeError()));
  impl_->tm = std::move(*tm);
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!jit) throw BuildError("cannot create the JIT: " + ErrorText(jit.takeError()));
  impl_->jit = std::move(*jit);
  // Kernels call libm, and the parallel runtime and workspace cache of this
  // process (runtime.h, workspace.h).
  auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      impl_->jit->getDataLayout().getGlobalPrefix());
  if (!generator) throw BuildError("cannot expose process symbols to the JIT: " + ErrorText(generator.takeError()));
  impl_->jit->getMainJITDylib().addGenerator(std::move(*generator));
  SetParallelThreads(target.num_cores);
}

Jit::~Jit() = default;

const Target& Jit::target() const { return impl_->target; }

Kernel Jit::Compile(const ir::PrimFunc& lowered, const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::uint64_t id = impl_->next_id++;
  std::string name = "tunedb_kernel_" + std::to_string(id);
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> mod = impl_->Build(lowered, *ctx, name, options);
  llvm::orc::ResourceTrackerSP tracker = impl_->jit->getMainJITDylib().createResourceTracker();
  if (llvm::Error e = impl_->jit->addIRModule(tracker, llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx)))) {
    throw BuildError("cannot add the kernel to the JIT: " + ErrorText(std::move(e)));
  }
  auto symbol = impl_->jit->lookup(name);
  if (!symbol) {
    std::string why = ErrorText(symbol.takeError());
    if (llvm::Error e = tracker->remove()) llvm::consumeError(std::move(e));
    throw BuildError("cannot link the kernel: " + why);
  }
  impl_->trackers[id] = tracker;
  Kernel k;
  k.fn = symbol->toPtr<KernelFn>();
  k.id = id;
  k.compile_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return k;
}

void Jit::Release(const Kernel& kernel) {
  auto it = impl_->trackers.find(kernel.id);
  if (it == impl_->trackers.end()) return;
  if (llvm::Error e = it->second->remove()) llvm::consumeError(std::move(e));
  impl_->trackers.erase(it);
}

std::string Jit::OptimizedIR(const ir::PrimFunc& lowered) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod = impl_->Build(lowered, ctx, "tunedb_kernel", {});
  std::string text;
  llvm::raw_string_ostream os(text);
  mod->print(os, nullptr);
  return os.str();
}

}  // namespace tunedb::measure
