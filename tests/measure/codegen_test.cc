// Code generation through the JIT, against the interpreter.
#include "measure/jit.h"

#include <bit>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/schedule/schedule.h"
#include "ir/schedule/script.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"
#include "measure/lower.h"
#include "measure/versioning.h"
#include "tests/ir/schedule/random_scheduler.h"
#include "tests/ir/schedule/schedule_test_util.h"
#include "tests/measure/test_util.h"

namespace tunedb::measure {
namespace {

using namespace tunedb::ir;

// An argument copied between two inaccessible pages: a read outside it is a
// segfault, not a lucky neighbour.
class FencedCopy {
 public:
  explicit FencedCopy(const NDArray& a) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    data_pages_ = (a.bytes() + page - 1) / page * page;
    size_ = data_pages_ + 2 * page;
    base_ = static_cast<char*>(mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base_, MAP_FAILED);
    EXPECT_EQ(mprotect(base_ + page, data_pages_, PROT_READ | PROT_WRITE), 0);
    // Flush against the upper fence, so reading past the end faults too.
    data_ = base_ + page + data_pages_ - a.bytes();
    std::memcpy(data_, a.data(), a.bytes());
  }
  ~FencedCopy() { munmap(base_, size_); }
  void* data() const { return data_; }

 private:
  char* base_ = nullptr;
  char* data_ = nullptr;
  std::size_t size_ = 0, data_pages_ = 0;
};

// Whether the compiled `scheduled` computes what the interpreter computes
// for `workload` on `args` ("" or why not); the parameters in `fenced` are
// passed as FencedCopy.
std::string RunKeepsTheResult(const PrimFunc& workload, const PrimFunc& scheduled, std::vector<NDArray> args,
                              const std::set<int>& fenced = {}) {
  std::vector<NDArray> expected = args;
  Interpret(workload, expected);
  for (int i : OutputParams(workload)) args[i].Poison();
  std::vector<std::unique_ptr<FencedCopy>> copies;
  std::vector<void*> pointers;
  for (int i = 0; i < static_cast<int>(args.size()); ++i) {
    if (fenced.count(i)) copies.push_back(std::make_unique<FencedCopy>(args[i]));
    pointers.push_back(fenced.count(i) ? copies.back()->data() : args[i].data());
  }
  Kernel k;
  try {
    k = SharedJit().Compile(Lower(scheduled));
  } catch (const BuildError& e) {
    return std::string("build: ") + e.what();
  }
  k.fn(pointers.data());
  SharedJit().Release(k);
  return testing::CompareOutputs(workload, expected, args, 1e-4);
}

std::string CompiledKeepsTheResult(const PrimFunc& workload, const PrimFunc& scheduled, std::uint64_t seed) {
  return RunKeepsTheResult(workload, scheduled, MakeArguments(workload, seed));
}

TEST(CodegenTest, EveryWorkloadUnscheduled) {
  for (const WorkloadDef& def : BuiltinWorkloads()) {
    std::string spec = def.name + ":";
    // Small shapes of every workload.
    if (def.name == "matmul") spec = "matmul:M=17,N=9,K=5";
    if (def.name == "batch_matmul") spec = "batch_matmul:B=2,M=3,N=4,K=5";
    if (def.name == "dense_bias_relu") spec = "dense_bias_relu:B=5,IN=7,OUT=6";
    if (def.name == "conv2d_nhwc") spec = "conv2d_nhwc:N=1,H=7,W=6,CI=3,CO=4,KH=3,KW=3,stride=2,pad=1";
    if (def.name == "depthwise_conv2d_nhwc") spec = "depthwise_conv2d_nhwc:N=1,H=6,W=6,C=3,KH=3,KW=3,stride=1,pad=1";
    if (def.name == "softmax") spec = "softmax:M=3,N=10";
    if (def.name == "reduce_sum") spec = "reduce_sum:M=5,N=9";
    PrimFunc f = BuildWorkload(spec).func;
    EXPECT_EQ(CompiledKeepsTheResult(f, f, 2), "") << spec;
  }
}

// LLVM's loop vectorizer may not take a loop emitted around another that
// moves across rows: O3 unrolls a short inner row fully, and the
// vectorizer then took the loop around it, 32 floats apart, as gathers and
// scatters (95 us unscheduled, against 9.2 us with the rows vectorized;
// bench/RESULTS.md, session 74). A loop left innermost keeps it, and so
// does one around unrolled loops that moves contiguously (an NHWC
// depthwise convolution's channels around its window).
TEST(CodegenTest, LLVMVectorizesNoLoopAroundAnotherAcrossItsRows) {
  PrimFunc f = ParseWorkloadText("input X: f32[3, 5, 32, 32]\nM[n, g, h, w] = X[n, g, h, w] * 2.0\n");
  EXPECT_EQ(CompiledKeepsTheResult(f, f, 1), "");
  std::string ir = IRJit().OptimizedIR(Lower(f));
  EXPECT_EQ(ir.find("gather"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("scatter"), std::string::npos) << ir;
  EXPECT_NE(ir.find("llvm.loop.vectorize.enable"), std::string::npos) << ir;
  EXPECT_NE(ir.find("<16 x float>"), std::string::npos) << ir;

  PrimFunc row = ParseWorkloadText("input X: f32[64, 300]\nM[h, w] = X[h, w] * 2.0\n");
  std::string row_ir = IRJit().OptimizedIR(Lower(row));
  EXPECT_NE(row_ir.find("<16 x float>"), std::string::npos) << row_ir;

  PrimFunc depthwise = BuildWorkload("depthwise_conv2d_nhwc:N=1,H=8,W=8,C=32,KH=3,KW=3,stride=1,pad=1").func;
  EXPECT_EQ(CompiledKeepsTheResult(depthwise, depthwise, 1), "");
  std::string depthwise_ir = IRJit().OptimizedIR(Lower(depthwise));
  EXPECT_NE(depthwise_ir.find("fmul contract <16 x float>"), std::string::npos) << depthwise_ir;
  EXPECT_EQ(depthwise_ir.find("gather"), std::string::npos) << depthwise_ir;
}

TEST(CodegenTest, VectorParallelUnrolledAndImperfectPaths) {
  PrimFunc f = BuildWorkload("matmul:M=30,N=48,K=20").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
i0, i1 = sch.split(i, factors=[None, 4])
j0, j1 = sch.split(j, factors=[None, 16])
k0, k1 = sch.split(k, factors=[None, 3])
sch.reorder(i0, j0, k0, k1, i1, j1)
b1 = sch.cache_write(b0, 0, "local")
sch.reverse_compute_at(b1, j0, preserve_unit_loops=True)
ij = sch.fuse(i0, j0)
sch.parallel(ij)
sch.vectorize(j1)
sch.unroll(i1)
sch.decompose_reduction(b0, k0)
*_, c0, c1 = sch.get_loops(b1)
sch.vectorize(c1)
)");
  EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 4), "");
  std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
  EXPECT_NE(ir.find("tunedb_parallel_for"), std::string::npos);
  EXPECT_NE(ir.find("<16 x float>"), std::string::npos);
}

// Inside a parallel loop the buffers keep the kernel's noalias promise
// (tir.noalias): LLVM may keep a row of C in a register while A and B are
// read. With k unrolled by 8, C's row is stored once, not after each step
// (9 stores before the promise reached the parallel task).
TEST(CodegenTest, AParallelLoopKeepsTheBuffersApart) {
  PrimFunc f = BuildWorkload("matmul:M=8,N=16,K=8").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
sch.parallel(i)
sch.vectorize(j)
sch.unroll(k)
)");
  EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 4), "");
  std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
  EXPECT_NE(ir.find("tunedb_parallel_for"), std::string::npos);
  std::size_t stores = 0;
  for (std::size_t at = ir.find("store <16 x float>"); at != std::string::npos; at = ir.find("store <16 x float>", at + 1)) {
    ++stores;
  }
  EXPECT_EQ(stores, 1u) << ir;
}

// A loop of one iteration (a batch of 1) binds its variable to the
// constant 0, and a parallel body inside it gets the constant, not an
// argument through the closure. As an argument, LLVM knew nothing of it
// and kept each output vector's zero init as a masked store read back:
// `parallel(i)` made the unscheduled 13-channel depthwise convolution 4x
// slower on one core (26.5 us against 6.5; 6.8 us with this).
TEST(CodegenTest, AOneIterationLoopsVariableIsAConstantInAParallelBody) {
  PrimFunc f = BuildWorkload("depthwise_conv2d_nhwc:N=1,H=9,W=9,C=13,KH=3,KW=3,stride=1,pad=1").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b = sch.get_block("DepthwiseConv2d")
n, i, j, c, di, dj = sch.get_loops(b)
sch.parallel(i)
)");
  EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 3), "");
  std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
  std::size_t task = ir.find("_parallel_i(");
  ASSERT_NE(task, std::string::npos) << ir;
  std::string body = ir.substr(task, ir.find("\n}\n", task) - task);
  EXPECT_EQ(body.find("load i64"), std::string::npos) << "n came through the closure:\n" << body;
  EXPECT_EQ(body.find("masked.store.v16f32.p0(<16 x float> <float 0.0"), std::string::npos) << "a zero init stored:\n" << body;
}

// A parallel loop's closure holds the loop variables and buffers bound
// around it in the order they were bound, not in an order of addresses: the
// same program, built anew at other addresses, gives the same IR.
TEST(CodegenTest, AParallelLoopsClosureIsInTheSameOrderWhereverTheProgramLives) {
  std::vector<PrimFunc> kept;  // alive, so each copy's nodes live elsewhere
  std::string first;
  for (int copy = 0; copy < 8; ++copy) {
    PrimFunc f = BuildWorkload("dense_bias_relu:B=16,IN=8,OUT=12").func;
    Schedule sch(f, 0);
    RunScheduleScript(sch, R"(
b0 = sch.get_block("T_matmul_NT")
i, j, k = sch.get_loops(b0)
i0, i1, i2 = sch.split(i, factors=[2, 2, None])
sch.parallel(i2)
)");
    kept.push_back(sch.func());
    std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
    ASSERT_NE(ir.find("tunedb_parallel_for"), std::string::npos);
    if (copy == 0) {
      first = ir;
      EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 3), "");
    } else {
      ASSERT_EQ(ir, first) << "copy " << copy;
    }
  }
}

// matmul's C with a local accumulator per row i (k outside j), written
// back under i; the rows' and the write-back's columns vectorized.
constexpr const char* kRowAccumulator = R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
sch.reorder(i, k, j)
b1 = sch.cache_write(b0, 0, "local")
sch.reverse_compute_at(b1, i, preserve_unit_loops=True)
sch.vectorize(j)
sch.decompose_reduction(b0, k)
*_, c = sch.get_loops(b1)
sch.vectorize(c)
)";

// A vectorized loop whose extent is not a power of two is emitted as
// power-of-two vectors, widest first: LLVM legalizes a <48 x float> through
// element inserts, which ran 12x slower than 32 + 16 lanes. Extents 48 and
// 7 (one masked vector of 8 on a 512-bit target, the next test; 4 + 2 + 1
// lanes on others) keep the result, and no piece reads past B's end.
TEST(CodegenTest, AVectorOfNoPowerOfTwoLanesGoesAsPowerOfTwoPieces) {
  for (int columns : {48, 7}) {
    const std::string n = std::to_string(columns);
    PrimFunc f = BuildWorkload("matmul:M=8,N=" + n + ",K=5").func;
    Schedule sch(f, 0);
    RunScheduleScript(sch, kRowAccumulator);
    EXPECT_EQ(RunKeepsTheResult(f, sch.func(), MakeArguments(f, 3), {1}), "") << columns;
    std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
    EXPECT_EQ(ir.find("<" + n + " x float>"), std::string::npos) << ir;
    // 7 lanes, fewer than an AVX-512 register holds: one masked vector of 8
    // (see the next test).
    for (const char* piece : columns == 48 ? std::vector<const char*>{"<32 x float>", "<16 x float>"}
                                           : std::vector<const char*>{"<8 x float>"}) {
      EXPECT_NE(ir.find(piece), std::string::npos) << columns << ": " << piece;
    }
  }
}

// What the cost model's features assume about LLVM (costmodel/features.cc,
// vec_implicit): its loop vectorizer vectorizes an innermost serial loop
// that walks the stored buffer, but not a float reduction (code generation
// allows contraction into FMA, not reassociation).
TEST(CodegenTest, LlvmVectorizesALoopThatMovesTheStoreButNotAReduction) {
  PrimFunc f = BuildWorkload("matmul:M=32,N=32,K=32").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
sch.reorder(i, k, j)
)");
  EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 6), "");
  EXPECT_NE(IRJit().OptimizedIR(Lower(sch.func())).find("fmul contract <"), std::string::npos);
  // K = 64: LLVM fully unrolls a 32-long reduction by itself, and then
  // vectorizes the loop around it (something the features do not model).
  std::string reduction = IRJit().OptimizedIR(Lower(BuildWorkload("matmul:M=32,N=32,K=64").func));
  EXPECT_EQ(reduction.find("fmul contract <"), std::string::npos);
  EXPECT_NE(reduction.find("fmul contract float"), std::string::npos);
}

// LLVM 16's loop vectorizer groups strided loads of one array into one
// wide load at the first load's place, even past a store to the same
// address (llvm-project issue 63602, fixed in LLVM 17). Here each row i
// adds twelve partial sums into C_local[2i + j] and then copies C_local[2i]
// and [2i + 1] out: LLVM vectorized the loop over i, and the copy read
// C_local before the sums (C came out 0). Found by a hunt of random user
// design spaces (batch_matmul, on AVX2 and AVX-512 targets).
TEST(CodegenTest, AStridedLoadIsNotMovedAboveAStoreToTheSameElement) {
  for (const char* spec : {"matmul:M=16,N=2,K=24", "matmul:M=32,N=2,K=24"}) {
    PrimFunc f = BuildWorkload(spec).func;
    Schedule sch(f, 0);
    RunScheduleScript(sch, R"(
c = sch.get_block("C")
i, j, k = sch.get_loops(c)
i_0, i_1 = sch.split(i, factors=[1, None])
k_0, k_1 = sch.split(k, factors=[12, 2])
cw = sch.cache_write(c, 0, "local")
sch.reverse_compute_at(cw, i_1, preserve_unit_loops=True)
rf = sch.rfactor(k_0, factor_axis=0)
sch.decompose_reduction(c, i_1)
sch.decompose_reduction(rf, k_1)
sch.annotate(i_0, "pragma_auto_unroll_max_step", 16)
sch.annotate(i_0, "pragma_unroll_explicit", 1)
)");
    EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 3), "") << spec;
  }
}

// A zero-dimensional output (a scalar, S[]) reduced into: its load had no
// index operands, and the loads' rewriter took it for a leaf, so lowering
// left it unflattened and code generation read an index that was not
// there (fuzz/corpus/compiled_text/found_scalar_reduction). Integer and
// float, max and sum.
TEST(CodegenTest, AScalarOutputIsReducedInto) {
  for (const char* text : {"input X: f64[9, 4]\nS[] = max(i in 4) X[2, i]\n",
                           "input X: f32[9, 4]\nS[] = sum(i in 9, j in 4) X[i, j] * 2.0\n",
                           "input X: i32[9, 4]\nS[] = sum(i in 4) 33333333\n"}) {
    SCOPED_TRACE(text);
    PrimFunc f = ParseWorkloadText(text);
    EXPECT_EQ(CompiledKeepsTheResult(f, f, 3), "");
  }
}

// Jobs and vector lanes over a split that does not divide the reduction
// (1009 is prime): rfactor guards the value each step adds, so the partial
// sums' update is a plain store and no masked store reaches LLVM (one went
// through memory at every step, bench/RESULTS.md, session 85). Sum and max,
// parallel jobs, vectorized lanes; the interpreter decides.
TEST(CodegenTest, PartialSumsOverAnImperfectSplitAreNotMaskedStores) {
  for (const char* reduction : {"sum", "max"}) {
    SCOPED_TRACE(reduction);
    PrimFunc f = ir::testing::PrimeLengthDot(reduction);
    Schedule sch(f, 0);
    RunScheduleScript(sch, ir::testing::kJobsThenLanes);
    RunScheduleScript(sch, R"(
lanes = sch.get_block("S_rf_rf")
p2, r2, l2 = sch.get_loops(lanes)
sch.parallel(p2)
sch.decompose_reduction(lanes, r2)
sch.vectorize(l2)
)");
    EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 3), "");
    const std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
    EXPECT_EQ(ir.find("llvm.masked.store"), std::string::npos) << ir;
  }
}

// Each job's loop of steps around its lanes holds one statement, the
// version of the lanes' mask, as a threshold of the step (versioning.h):
// it runs as two loops, the steps below the threshold unmasked and the
// rest masked, the threshold clamped to the loop's range. The threshold
// lies inside the range (the last job's last step), past its end (every
// step of the first job holds) and, where 2 jobs of 64 steps of 16 lanes
// cover 1009 twice over, below its start (the second job lies past the
// end: its one masked step, unclamped, would run at step -1).
TEST(CodegenTest, AStepLoopWhoseBodyIsAThresholdRunsAsTwoLoops) {
  for (const auto& [length, factors] : std::vector<std::pair<int, std::string>>{
           {1009, "[2, None, 16]"}, {4099, "[4, None, 16]"}, {1009, "[2, 64, 16]"}}) {
    SCOPED_TRACE(std::to_string(length) + " split by " + factors);
    const std::string n = std::to_string(length);
    PrimFunc f = ParseWorkloadText("input A: f32[" + n + "]\ninput B: f32[" + n + "]\nS[] = sum(i in " + n +
                                   ") A[i] * B[i]\n");
    Schedule sch(f, 0);
    RunScheduleScript(sch, "s = sch.get_block(\"S\")\ni, = sch.get_loops(s)\np, r, l = sch.split(i, factors=" +
                               factors + R"()
jobs = sch.rfactor(p, factor_axis=0)
p1, r1, l1 = sch.get_loops(jobs)
lanes = sch.rfactor(l1, factor_axis=1)
p2, r2, l2 = sch.get_loops(lanes)
sch.parallel(p2)
sch.decompose_reduction(lanes, r2)
sch.vectorize(l2)
)");
    const std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
    EXPECT_NE(text.find("if i_1 < "), std::string::npos) << text;
    EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 3), "");
  }
}

// A schedule script that splits block `name`'s two loops `p, q` by n and
// unrolls both inner parts, p's outside q's or inside it.
std::string UnrolledBlockScript(const std::string& name, const std::string& p, const std::string& q, int n,
                                bool p_outside) {
  const std::string factors = "factors=[None, " + std::to_string(n) + "])\n";
  return "b = sch.get_block(\"" + name + "\")\n" + p + ", " + q + " = sch.get_loops(b)\n" + p + "0, " + p +
         "1 = sch.split(" + p + ", " + factors + q + "0, " + q + "1 = sch.split(" + q + ", " + factors +
         "sch.reorder(" + p + "0, " + q + "0, " + (p_outside ? p + "1, " + q + "1" : q + "1, " + p + "1") + ")\n" +
         "sch.unroll(" + p + "1)\nsch.unroll(" + q + "1)\n";
}

// An unrolled block copy that transposes (dense's packed weight) is N vector
// loads, a shuffle network and N vector stores, not N*N scalar copies.
// Both orders of its two loops, every block size, and a block whose rows
// and columns are offset inside a larger buffer; the interpreter decides.
TEST(CodegenTest, AnUnrolledTransposingCopyIsShuffledInRegisters) {
  PrimFunc f = ParseWorkloadText("input W: f32[48, 80]\nT[j in 80, i in 48] = W[i, j]\n");
  for (int block : {4, 8, 16}) {
    for (bool source_order : {true, false}) {
      SCOPED_TRACE(std::to_string(block) + (source_order ? " x, source order" : " x, destination order"));
      Schedule sch(f, 0);
      std::string n = std::to_string(block);
      RunScheduleScript(sch, UnrolledBlockScript("T", "j", "i", block, !source_order));
      EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 3), "");
      if (block * 32 > IRTarget().VectorBits()) continue;  // left to scalar copies
      std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
      EXPECT_NE(ir.find("shufflevector <" + n + " x float>"), std::string::npos);
      EXPECT_EQ(ir.find("load float"), std::string::npos);
    }
  }
}

// Sides no block divides (41 x 37): blocks of 16 all the same, the last
// of each side masked past the end. Versioning gives the blocks inside a
// copy without the checks, a plain copy, which goes through registers.
TEST(CodegenTest, AMaskedTransposeShufflesItsInnerBlocksInRegisters) {
  PrimFunc f = ParseWorkloadText("input X: f32[41, 37]\nY[i, j] = X[j, i]\n");
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b = sch.get_block("Y")
i, j = sch.get_loops(b)
i0, i1, i2 = sch.split(i, factors=[None, 1, 16])
j0, j1, j2 = sch.split(j, factors=[None, 1, 16])
sch.reorder(i0, j0, i1, j1, i2, j2)
sch.unroll(i2)
sch.unroll(j2)
sch.parallel(i0)
)");
  EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 3), "");
  if (16 * 32 > IRTarget().VectorBits()) return;  // left to scalar copies
  std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
  EXPECT_NE(ir.find("shufflevector <16 x float>"), std::string::npos);
}

// The same block reading other operands beside the transposed one (A +
// B^T): each transposed operand goes through registers, then every row is
// one vector statement along the destination's row, a contiguous operand
// loaded as a vector and a per-row one broadcast. Floats and 32-bit
// integers, both loop orders, every block size; the interpreter decides.
TEST(CodegenTest, AnUnrolledBlockReadingAnOperandTransposedIsShuffledInRegisters) {
  const char* kFloat = "input A: f32[48, 80]\ninput B: f32[80, 48]\ninput s: f32[48]\n"
                       "C[i, j] = A[i, j] * 2.0 + B[j, i] * s[i]\n";
  const char* kInt = "input A: i32[48, 80]\ninput B: i32[80, 48]\nC[i, j] = B[j, i] - A[i, j] * 3\n";
  for (const char* text : {kFloat, kInt}) {
    PrimFunc f = ParseWorkloadText(text);
    const std::string element = text == kFloat ? "float" : "i32";
    for (int block : {4, 8, 16}) {
      for (bool destination_order : {true, false}) {
        SCOPED_TRACE(element + " " + std::to_string(block) + (destination_order ? " x, i outside" : " x, j outside"));
        Schedule sch(f, 0);
        std::string n = std::to_string(block);
        RunScheduleScript(sch, UnrolledBlockScript("C", "i", "j", block, destination_order));
        EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 5), "");
        if (block * 32 > IRTarget().VectorBits()) continue;  // left element-wise
        std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
        EXPECT_NE(ir.find("shufflevector <" + n + " x " + element + ">"), std::string::npos);
        // Element by element, B alone is block x block scalar loads; what
        // may stay scalar is s[i], one per row.
        int scalar_loads = 0;
        for (std::size_t at = ir.find("load " + element + ","); at != std::string::npos;
             at = ir.find("load " + element + ",", at + 1)) {
          ++scalar_loads;
        }
        EXPECT_LE(scalar_loads, block) << ir;
      }
    }
  }
}

// A decomposed reduction's init zeroes the accumulator row by row, and
// LLVM turns each row into a memset. A large one stays a loop (see
// kMaxUnrolledFillElements in measure/codegen.cc): unrolled, its memsets
// were expanded into hundreds of stores in one block, which took a conv2d
// candidate 8-10 s to schedule. Here a 32 x 64 init under 2 x 2 outer
// loops: 64 memsets unrolled before the rule; now one per copy of the outer
// loops, which LLVM may still unroll (they hold the update too).
TEST(CodegenTest, ALargeInitStaysALoop) {
  PrimFunc f = BuildWorkload("matmul:M=64,N=128,K=8").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
i0, i1 = sch.split(i, factors=[2, 32])
j0, j1, j2 = sch.split(j, factors=[2, 4, 16])
sch.reorder(i0, j0, k, i1, j1, j2)
b1 = sch.cache_write(b0, 0, "local")
sch.vectorize(j2)
sch.decompose_reduction(b0, k)
)");
  EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 8), "");
  std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
  int memsets = 0;
  for (std::size_t at = ir.find("call void @llvm.memset"); at != std::string::npos;
       at = ir.find("call void @llvm.memset", at + 1)) {
    ++memsets;
  }
  EXPECT_LE(memsets, 4) << ir;
  EXPECT_NE(ir.find("llvm.loop.unroll.disable"), std::string::npos);
}

TEST(CodegenTest, PaddingSelectNeverReadsOutOfBounds) {
  // A guarded load with a vectorized channel loop and inlined padding.
  PrimFunc f = BuildWorkload("conv2d_nhwc:N=1,H=6,W=6,CI=4,CO=8,KH=3,KW=3,stride=1,pad=1").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
sch.compute_inline(sch.get_block("PaddedInput"))
b = sch.get_block("Conv2dOutput")
nn, yy, xx, ff, ry, rx, rc = sch.get_loops(b)
sch.reorder(nn, yy, ry, rx, rc, xx, ff)
sch.vectorize(ff)
sch.parallel(yy)
)");
  EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), 5), "");
  // The guard and its load are the same for every lane (the channel), so
  // the channel loop is vector code with one guarded scalar load,
  // broadcast; it used to stay a scalar loop, which LLVM took seconds over
  // once unrolled.
  std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
  EXPECT_EQ(ir.find("for.ff"), std::string::npos) << ir;
  EXPECT_NE(ir.find("fmul contract <8 x float>"), std::string::npos) << ir;
}

// Schedules `f` by `script`, checks the kernel against the interpreter on
// random arguments (`seed`) with the parameters in `fenced` fenced
// (FencedCopy), and returns the kernel's optimized IR.
std::string IRAfterAFencedRun(const PrimFunc& f, const char* script, std::uint64_t seed,
                              const std::set<int>& fenced = {0}) {
  Schedule sch(f, 0);
  RunScheduleScript(sch, script);
  EXPECT_EQ(RunKeepsTheResult(f, sch.func(), MakeArguments(f, seed), fenced), "");
  return IRJit().OptimizedIR(Lower(sch.func()));
}

// A transposed load that a select may rule out is not read as a whole
// block: here the rows i >= 40 are past the end of B's rows, and B's last
// row ends at a fence, so reading B[79, 40..47] faults. (The check is
// i * i < 1600 because LLVM decides i < 40 for each block itself and drops
// the loads where it is false.)
TEST(CodegenTest, ATransposedLoadUnderASelectIsReadOnlyWhereChosen) {
  PrimFunc f = ParseWorkloadText("input B: f32[80, 40]\nC[i in 48, j in 80] = i * i < 1600 ? B[j, i] : 0.5\n");
  IRAfterAFencedRun(f, UnrolledBlockScript("C", "i", "j", 8, true).c_str(), 4);
}

// A register block of a padded convolution whose reduction stays a loop
// (no unrolling here). The padding check is the same for every output
// channel, so it selects the address to load from (the element, or a zero
// cell), with no branch: a branch inside the reduction loop kept LLVM from
// holding the accumulators in registers, and such kernels ran at half the
// speed of the same tiles fully unrolled (bench/RESULTS.md, session 21).
TEST(CodegenTest, APaddingCheckSelectsTheAddressAndNeverReadsOutside) {
  PrimFunc f = BuildWorkload("conv2d_nhwc:N=1,H=8,W=8,CI=16,CO=32,KH=3,KW=3,stride=1,pad=1").func;
  std::string ir = IRAfterAFencedRun(f, testing::kPaddedConvRegisterBlock, 9);
  EXPECT_NE(ir.find("select i1"), std::string::npos) << ir;
  EXPECT_NE(ir.find("@tunedb.zero_cell"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("sel.then"), std::string::npos) << ir;
}

// A depthwise convolution vectorized along its channels reads its padded
// input one contiguous vector at a time; the padding check guards the vector
// load's address as it does a broadcast's. The input (8 x 8 x 16 floats, one
// page) sits between fences, so a read of the row above or below faults.
TEST(CodegenTest, APaddingCheckGuardsAContiguousVectorLoad) {
  PrimFunc f = BuildWorkload("depthwise_conv2d_nhwc:N=1,H=8,W=8,C=16,KH=3,KW=3,stride=1,pad=1").func;
  std::string ir = IRAfterAFencedRun(f, R"(
sch.compute_inline(sch.get_block("PaddedInput"))
b = sch.get_block("DepthwiseConv2d")
n, h, w, c, kh, kw = sch.get_loops(b)
sch.reorder(n, h, w, kh, kw, c)
sch.vectorize(c)
sch.decompose_reduction(b, kh)
)", 4);
  EXPECT_NE(ir.find("@tunedb.zero_cell"), std::string::npos) << ir;
  EXPECT_NE(ir.find("load <16 x float>"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("sel.then"), std::string::npos) << ir;
}

// The optimized IR of `text` with its block Y's second loop (a row)
// vectorized, after a run that checked its results with input X fenced.
std::string IRWithTheRowVectorized(const std::string& text) {
  return IRAfterAFencedRun(ParseWorkloadText(text), R"(
i, w = sch.get_loops(sch.get_block("Y"))
sch.vectorize(w)
)", 3);
}

void ExpectAShuffleAndNoGather(const std::string& ir) {
  EXPECT_NE(ir.find("shufflevector"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("gather"), std::string::npos) << ir;
}

// Lanes a constant stride apart are loaded as contiguous vectors and a
// shuffle (strides 2 to 4, a vectorized 2 x 2 pooling window; -1 to -4, a
// row read backwards), and lane by lane beyond. Either way nothing past
// the lanes' elements is read: each row's last element is read by its last
// lane (forwards) or its first (backwards), and the input sits flush
// against a fence.
TEST(CodegenTest, StridedLanesLoadAsVectorsAndReadNothingPastTheLastLane) {
  for (int stride : {2, 3, 4, 5, -1, -2, -4, -5}) {
    for (int width : {16, 29, 64}) {
      SCOPED_TRACE("stride " + std::to_string(stride) + ", width " + std::to_string(width));
      const int step = std::abs(stride);
      const std::string last = std::to_string((width - 1) * step);
      const std::string index = stride > 0 ? std::to_string(step) + " * w" : last + " - " + std::to_string(step) + " * w";
      std::string ir = IRWithTheRowVectorized("input X: f32[3, " + std::to_string((width - 1) * step + 1) +
                                              "]\nY[i, w in " + std::to_string(width) + "] = X[i, " + index +
                                              "] * 2.0\n");
      if (step <= 4) ExpectAShuffleAndNoGather(ir);
    }
  }
}

// Lanes that repeat each element k times (X[w / k], nearest-neighbour
// upsampling along a row) load the elements they read as one vector and
// repeat them in a shuffle, wherever each emitted vector starts (29 lanes
// go as 16 + 8 + 4 + 1 from 0, 16, 24 and 28, which 3 does not all
// divide). Nothing past the last lane's element is read: the input sits
// flush against a fence.
TEST(CodegenTest, RepeatedLanesLoadOnceAndReadNothingPastTheLastLane) {
  for (int repeats : {2, 3, 4}) {
    for (int width : {16, 29, 64}) {
      SCOPED_TRACE("repeats " + std::to_string(repeats) + ", width " + std::to_string(width));
      std::string ir = IRWithTheRowVectorized("input X: f32[3, " + std::to_string((width - 1) / repeats + 1) +
                                              "]\nY[i, w in " + std::to_string(width) + "] = X[i, w / " +
                                              std::to_string(repeats) + "] + f32(w)\n");
      ExpectAShuffleAndNoGather(ir);
    }
  }
  // The same within a longer row, from a split loop's inner part: lane 0's
  // element moves with the outer part.
  const PrimFunc up = ParseWorkloadText("input X: f32[2, 3, 32]\nY[c, h in 6, w in 64] = X[c, h / 2, w / 2]\n");
  std::string ir = IRAfterAFencedRun(up, R"(
c, h, w = sch.get_loops(sch.get_block("Y"))
w0, w1 = sch.split(w, factors=[None, 16])
sch.vectorize(w1)
)", 5);
  ExpectAShuffleAndNoGather(ir);
}

// Lanes whose elements lie at other constant offsets from lane 0's, in a
// few runs: a pixel shuffle (two rows of X interleaved, X[c * 2 + w % 2,
// w / 2]), lanes that wrap around a short row (X[w % 8]), and a row of a
// 3 x 3 window's patches (X[w / 3 + w % 3]). Each is loaded as its runs
// and shuffled; none reads past the last element a lane reads (the input
// ends at a fence), and the results match the interpreter's. Under a
// condition on the lane alone, a constant mask, only the lanes that are on
// read: an interleave of two rows (k % 2 == 0 ? A[k / 2] : B[k / 2]), and
// a row whose lanes past 40 would read past X's end. Two runs far apart
// are two loads (X[(w % 2) * 512 + w / 2]); lanes in more runs than four
// vectors hold (X[(w % 8) * 128 + w / 8], eight) are gathered.
TEST(CodegenTest, LanesAtConstantOffsetsLoadTheirRunsAndShuffle) {
  for (const char* text : {"input X: f32[2, 6, 32]\nY[c in 3, w in 64] = X[c / 3, c * 2 % 6 + w % 2, w / 2]\n",
                           "input X: f32[3, 8]\nY[i, w in 64] = X[i, w % 8] * f32(w)\n",
                           "input X: f32[3, 23]\nY[i, w in 63] = X[i, w / 3 + w % 3]\n",
                           "input X: f32[3, 32]\ninput B: f32[3, 32]\n"
                           "Y[i, k in 64] = k % 2 == 0 ? X[i, k / 2] : B[i, k / 2]\n",
                           "input X: f32[3, 20]\nY[i, w in 64] = w < 40 ? X[i, w / 2] : 0.5\n"}) {
    SCOPED_TRACE(text);
    std::string ir = IRAfterAFencedRun(ParseWorkloadText(text), R"(
loops = sch.get_loops(sch.get_block("Y"))
sch.vectorize(loops[1])
)", 6);
    ExpectAShuffleAndNoGather(ir);
  }
  ExpectAShuffleAndNoGather(
      IRWithTheRowVectorized("input X: f32[3, 544]\nY[i, w in 64] = X[i, (w % 2) * 512 + w / 2]\n"));
  std::string spread = IRWithTheRowVectorized("input X: f32[3, 904]\nY[i, w in 64] = X[i, (w % 8) * 128 + w / 8]\n");
  EXPECT_NE(spread.find("gather"), std::string::npos) << spread;
}

// A row read from a rotated start (a roll, circular padding): each vector
// of lanes is one contiguous load unless the row wraps inside it, and that
// vector is gathered. The results match the interpreter's, and nothing
// past X's end is read (it sits against a fence).
TEST(CodegenTest, ARolledRowLoadsWholeVectorsWhereItDoesNotWrap) {
  for (const char* text : {"input X: f32[3, 40]\nY[i, j in 40] = X[i, (j + 37) % 40]\n",
                           "input X: f32[3, 40]\nY[i, j in 88] = X[i, (j + 38) % 40] * 2.0\n"}) {
    SCOPED_TRACE(text);
    std::string ir = IRAfterAFencedRun(ParseWorkloadText(text), R"(
i, j = sch.get_loops(sch.get_block("Y"))
j0, j1 = sch.split(j, factors=[None, 8])
sch.vectorize(j1)
)", 7);
    EXPECT_NE(ir.find("load <8 x float>"), std::string::npos) << ir;
  }
}

// The last lanes of a vectorized loop, fewer than a 512-bit register holds
// and not a power of two, go as one vector of the next power of two whose
// extra lanes are off: masked loads and stores of parameters, which read
// nothing past the last lane (the input sits flush against a fence). In 8,
// 4 and 1 lanes, 13 channels took three loads for each one.
TEST(CodegenTest, TheLastLanesFewerThanARegisterGoAsOneMaskedVector) {
  for (unsigned width : {3u, 7u, 13u, 29u}) {
    SCOPED_TRACE("width " + std::to_string(width));
    const std::string w = std::to_string(width);
    std::string ir = IRWithTheRowVectorized("input X: f32[3, " + w + "]\nY[i, w] = X[i, w] * 2.0 + f32(w)\n");
    const std::string tail = "llvm.masked.load.v" + std::to_string(std::bit_ceil(width % 16)) + "f32";
    EXPECT_NE(ir.find(tail), std::string::npos) << ir;
    EXPECT_NE(ir.find("llvm.masked.store"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("<1 x float>"), std::string::npos) << ir;
  }
}

// A local accumulator written in a masked tail is this thread's alone, with
// room past its end: the tail reads and writes whole vectors there, so LLVM
// keeps a row of 13 in one register. Where another row follows, the lanes
// that are off write back what they read: each step adds 1 to them too
// (the reduction's body adds it), and the next row's first elements would
// come out wrong.
TEST(CodegenTest, AMaskedTailKeepsTheNextRowOfALocalBuffer) {
  PrimFunc f = ParseWorkloadText("input X: f32[4, 6]\ninput W: f32[6, 13]\n"
                                 "Y[i, j] = sum(k in 6) X[i, k] * W[k, j] + 1.0\n");
  IRAfterAFencedRun(f, R"(
b0 = sch.get_block("Y")
i, j, k = sch.get_loops(b0)
sch.reorder(k, i, j)
b1 = sch.cache_write(b0, 0, "local")
sch.vectorize(j)
sch.decompose_reduction(b0, k)
i, j = sch.get_loops(b1)
sch.vectorize(j)
)", 5, {0, 1});
  // One row of 13 (the accumulator per row i): in a register.
  std::string ir = IRAfterAFencedRun(BuildWorkload("matmul:M=4,N=13,K=6").func, kRowAccumulator, 5, {0, 1});
  EXPECT_EQ(ir.find("alloca [77 x float]"), std::string::npos) << ir;
}

// Rows of 14 in a private accumulator are allocated 16 apart (lowering's
// PaddedRow), so each row's masked vector of 16 lanes is its own: no blend
// keeps the next row's elements, and LLVM holds the 4 rows in registers
// (in memory, with a blend in each step, a depthwise convolution in NCHW
// at 14 x 14 ran 4x slower per element than at 14 x 16).
TEST(CodegenTest, PaddedRowsOfAPrivateAccumulatorStayInRegisters) {
  PrimFunc f = BuildWorkload("matmul:M=8,N=14,K=5").func;
  std::string ir = IRAfterAFencedRun(f, (std::string(testing::kFourRowAccumulator) + R"(
sch.decompose_reduction(b0, k)
i0, k, i1, j = sch.get_loops(b0)
sch.vectorize(j)
*_, c = sch.get_loops(b1)
sch.vectorize(c)
)").c_str(), 6, {0, 1});
  EXPECT_EQ(ir.find("alloca"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("select <16 x i1>"), std::string::npos) << ir;
}

// Selects over loads in vectorized loops keep their lazy meaning: a
// guarded select with loads on both sides and one nested in the other, and
// a select whose division may not run (D is 0 there), which keeps its branch.
// Y's rows run in parallel: a serial loop of them would be split where its
// checks change (versioning.h), and no select would be left.
TEST(CodegenTest, ASelectReadsAndDividesOnlyWhereItIsChosen) {
  PrimFunc f = ParseWorkloadText(R"(
input X: f32[16, 4]
input D: i32[16]
Y[i in 16, j in 8] = (i >= 2 && i < 14 ? X[i - 2, 0] * X[i + 2, 1] : (i < 2 ? X[i + 2, 2] : X[i - 2, 3] - 1)) + f32(j)
Z[i, j in 8] = (D[i] != 0 ? f32(i32(X[i, 0] * 8) / D[i]) : X[i, 1]) + f32(j)
)");
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
i, j = sch.get_loops(sch.get_block("Y"))
sch.parallel(i)
sch.vectorize(j)
i, j = sch.get_loops(sch.get_block("Z"))
sch.vectorize(j)
)");
  std::vector<NDArray> args = MakeArguments(f, 3);
  for (int i = 0; i < 16; i += 3) static_cast<std::int32_t*>(args[1].data())[i] = 0;
  EXPECT_EQ(RunKeepsTheResult(f, sch.func(), args, {0, 1}), "");
  std::string ir = IRJit().OptimizedIR(Lower(sch.func()));
  EXPECT_NE(ir.find("@tunedb.zero_cell"), std::string::npos) << ir;
  EXPECT_NE(ir.find("sdiv"), std::string::npos) << ir;
  EXPECT_NE(ir.find("<8 x float>"), std::string::npos) << ir;
}

// The deepest expression the workload language reads, in a reduction: the
// combine and the row-major index add levels, and the program must still
// build (fuzz/compiled_text found a sum of 250 nested negations that
// parsed, when the language read up to the IR's own limit, and then could
// not be lowered).
TEST(CodegenTest, TheDeepestExpressionTheLanguageReadsCompiles) {
  // X[i, k] is two levels, and the negations the rest.
  const std::string negations(static_cast<std::size_t>(kMaxReadExprDepth - 2), '-');
  PrimFunc f = ParseWorkloadText("input X: f32[4, 9]\nQ[i] = sum(k in 9) " + negations + "X[i, k]\n");
  EXPECT_EQ(CompiledKeepsTheResult(f, f, 3), "");
}

// An int32 sum or product held in 64 bits past the int32 range: converted,
// compared, divided or taken the larger of, it is the value it wraps to, as
// in the interpreter (found by fuzz/compiled_text.cc: the kernel converted
// the unwrapped sum).
TEST(CodegenTest, AnInt32SumThatOverflowsIsWrappedBeforeItIsUsed) {
  PrimFunc f = ParseWorkloadText(R"(
input A: i32[8]
F[i, j in 4] = f32(A[i] + A[i] + i32(j))
L[i, j in 4] = i64(A[i] * 3 + i32(j))
G[i, j in 4] = select(A[i] * 3 + i32(j) > 0, 1.0, 0.0)
M[i, j in 4] = max(A[i] + A[i], i32(j))
D[i, j in 4] = (A[i] * 3) / (i32(j) + 2) + (A[i] + A[i]) % 7
)");
  const std::int64_t i32_max = std::numeric_limits<std::int32_t>::max();
  const std::int64_t a[] = {i32_max, -i32_max, 1 << 30, -(1 << 30), 5, -5, i32_max / 3 + 1, 0};
  for (bool vectorized : {false, true}) {
    Schedule sch(f, 0);
    if (vectorized) {
      for (const char* name : {"F", "L", "G", "M", "D"}) sch.Vectorize(sch.GetLoops(sch.GetBlock(name))[1]);
    }
    std::vector<NDArray> args = MakeArguments(f, 5);
    for (int i = 0; i < 8; ++i) args[0].SetInt(i, a[i]);
    EXPECT_EQ(RunKeepsTheResult(f, sch.func(), args), "") << "vectorized " << vectorized;
  }
}

// An index computed from loaded data that leaves the int32 range in 64
// bits: the interpreter wraps it (3 * 1431655766 is 2 modulo 2^32) and reads
// inside the tensor, and so must the kernel, scalar, through a contiguous
// vector load, a masked one and a gather. Unwrapped, the kernel read 2^32
// rows past A.
TEST(CodegenTest, AnIndexComputedFromDataWrapsAsInTheInterpreter) {
  PrimFunc f = ParseWorkloadText(R"(
input A: f32[4, 16]
input B: i32[8]
R[i, j in 16] = A[B[i] * 1431655766 + 1, j]
T[j in 16, i] = A[B[i] * 1431655766, j]
)");
  const std::int64_t b[] = {0, 3, 3, 0, 3, 0, 0, 3};
  for (const char* how : {"scalar", "vectorized", "masked"}) {
    Schedule sch(f, 0);
    if (how != std::string("scalar")) {
      for (const char* name : {"R", "T"}) {
        LoopRV inner = sch.GetLoops(sch.GetBlock(name))[1];
        if (how == std::string("masked")) inner = sch.Split(inner, {std::monostate{}, std::int64_t{5}})[1];
        sch.Vectorize(inner);
      }
    }
    std::vector<NDArray> args = MakeArguments(f, 6);
    for (int i = 0; i < 8; ++i) args[1].SetInt(i, b[i]);
    EXPECT_EQ(RunKeepsTheResult(f, sch.func(), args), "") << how;
  }
}

// X * X - P with P = X * X rounded: the interpreter rounds the product and
// gets 0; an FMA keeps the product exact and gets its rounding error.
// Compiled without contraction, every operation rounds as the interpreter's.
TEST(CodegenTest, WithoutContractionEveryOperationRoundsAsInTheInterpreter) {
  PrimFunc f = ParseWorkloadText(R"(
input X: f32[64]
P[i] = X[i] * X[i]
R[i] = X[i] * X[i] - P[i]
output R
)");
  for (bool vectorized : {false, true}) {
    Schedule sch(f, 0);
    if (vectorized) sch.Vectorize(sch.GetLoops(sch.GetBlock("R"))[0]);
    std::vector<NDArray> args = MakeArguments(f, 3);
    std::vector<void*> pointers;
    for (NDArray& a : args) pointers.push_back(a.data());
    CompileOptions rounded;
    rounded.contract_fma = false;
    Kernel k = SharedJit().Compile(Lower(sch.func()), rounded);
    k.fn(pointers.data());
    SharedJit().Release(k);
    for (std::int64_t i = 0; i < 64; ++i) ASSERT_EQ(args[1].GetFloat(i), 0.0) << i << " vectorized " << vectorized;
  }
}

// An int64 index beside int32 ones, the way out of an int32 index that
// would overflow (ir/limits.h): the row-major sum of the buffer's indices
// is computed in int64.
TEST(CodegenTest, AnInt64IndexBesideInt32OnesIsFlattenedInInt64) {
  PrimFunc f = ParseWorkloadText(R"(
input A: f32[5, 16]
R[i in 50000, j in 16] = A[(i64(i) * i64(i) * 3) % 5, j]
)");
  for (bool vectorized : {false, true}) {
    Schedule sch(f, 0);
    if (vectorized) sch.Vectorize(sch.GetLoops(sch.GetBlock("R"))[1]);
    std::vector<NDArray> args = MakeArguments(f, 7);
    EXPECT_EQ(RunKeepsTheResult(f, sch.func(), args), "") << "vectorized " << vectorized;
  }
}

// An axis wider than int32 counts in int64 (te), and scheduling, lowering
// and code generation keep its arithmetic in int64 beside the int32 axes.
// Compiled, not run: 2^32 rows.
TEST(CodegenTest, AnInt64AxisIsScheduledLoweredAndCompiled) {
  Schedule sch(BuildWorkload("matmul:M=4294967296,N=16,K=4").func, 0);
  RunScheduleScript(sch, R"(
b = sch.get_block("C")
i, j, k = sch.get_loops(b)
i0, i1 = sch.split(i, factors=[None, 8])
sch.reorder(i0, k, i1, j)
sch.parallel(i0)
sch.vectorize(j)
)");
  Kernel k;
  ASSERT_NO_THROW(k = SharedJit().Compile(Lower(sch.func())));
  SharedJit().Release(k);
}

// floordiv(B[i] * 4, 4) is not B[i] when the product wraps: lowering
// simplified it so, and the kernel read another row than the interpreter
// for B[i] = 2^29 + 1 (ir/simplify.h: parts that read data are regathered
// by + - * only).
TEST(CodegenTest, AnIndexThatWrapsBeforeItIsDividedKeepsItsDivision) {
  PrimFunc f = ParseWorkloadText(R"(
input A: f32[8, 4]
input B: i32[8]
R[i, j in 4] = A[(B[i] * 4) / 4 % 7, j]
)");
  std::vector<NDArray> args = MakeArguments(f, 6);
  for (int i = 0; i < 8; ++i) args[1].SetInt(i, (1 << 29) + 1 + i);
  EXPECT_EQ(RunKeepsTheResult(f, f, args), "");
}

// Floor division and modulo by a divisor only known at run time, with the
// operands that differ from C's division: signs that disagree, and the most
// negative value over -1, which wraps to itself (x86's idiv would trap).
TEST(CodegenTest, IntegerFloorDivisionByAVariableWrapsAndNeverTraps) {
  PrimFunc f = ParseWorkloadText(R"(
input A: i32[8]
input B: i32[8]
input C: i64[8]
input D: i64[8]
Q[i, j in 4] = A[i] / B[i] + i32(j)
R[i, j in 4] = A[i] % B[i] + i32(j)
S[i, j in 4] = C[i] / D[i] + i64(j)
T[i, j in 4] = C[i] % D[i] + i64(j)
)");
  const std::int64_t i32_min = std::numeric_limits<std::int32_t>::min();
  const std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();
  const std::int64_t a[] = {-7, 7, -7, 7, i32_min, i32_min, 0, -1};
  const std::int64_t b[] = {2, -2, -2, 2, -1, 1, -1, -1};
  const std::int64_t c[] = {-7, 7, -7, 7, i64_min, i64_min, 0, -1};
  for (bool vectorized : {false, true}) {
    Schedule sch(f, 0);
    if (vectorized) {
      for (const char* name : {"Q", "R", "S", "T"}) sch.Vectorize(sch.GetLoops(sch.GetBlock(name))[1]);
    }
    std::vector<NDArray> args = MakeArguments(f, 5);
    for (int i = 0; i < 8; ++i) {
      args[0].SetInt(i, a[i]);
      args[1].SetInt(i, b[i]);
      args[2].SetInt(i, c[i]);
      args[3].SetInt(i, b[i]);
    }
    EXPECT_EQ(RunKeepsTheResult(f, sch.func(), args), "") << "vectorized " << vectorized;
    // The interpreter's answers, which the compiled kernel just matched.
    Interpret(f, args);
    const std::int64_t q[] = {-4, -4, 3, 3, i32_min, i32_min, 0, 1};
    const std::int64_t r[] = {1, -1, -1, 1, 0, 0, 0, 0};
    const std::int64_t s[] = {-4, -4, 3, 3, i64_min, i64_min, 0, 1};
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(args[4].GetInt(i * 4), q[i]) << i;
      EXPECT_EQ(args[5].GetInt(i * 4), r[i]) << i;
      EXPECT_EQ(args[6].GetInt(i * 4), s[i]) << i;
      EXPECT_EQ(args[7].GetInt(i * 4), r[i]) << i;
    }
  }
}

// A check that differs between the lanes of a vectorized loop masks the
// loads and stores it guards (llvm.masked.load, gather, store, scatter)
// instead of leaving the loop scalar with a branch per lane: a padded
// register block emitted that way became 600 two-lane loops and took LLVM
// over a minute (bench/RESULTS.md, session 43). X and W sit between fences,
// so a lane that reads past either end faults; Z's tail lanes, written
// unmasked, would overwrite the next row, written before them.
TEST(CodegenTest, AChecksThatDiffersBetweenLanesMasksItsLoadsAndStores) {
  PrimFunc f = ParseWorkloadText(R"(
input X: f32[19]
input W: f32[19, 8]
Y[i in 4, j in 24] = (j < 19 ? X[j] * W[j, i] : 0.5) + (j >= 2 && j < 21 && X[j - 2] > 0.5 ? 1.0 : 0.0)
Z[i in 4, j in 19] = W[j, i] * 2.0
)");
  std::string ir = IRAfterAFencedRun(f, R"(
i, j = sch.get_loops(sch.get_block("Y"))
sch.vectorize(j)
i, j = sch.get_loops(sch.get_block("Z"))
j0, j1 = sch.split(j, factors=[None, 16])
sch.reorder(j0, i, j1)
sch.vectorize(j1)
)", 6, {0, 1});
  for (const char* masked : {"llvm.masked.load.v16f32", "llvm.masked.load.v8f32", "llvm.masked.gather.v16f32",
                             "llvm.masked.store.v16f32"}) {
    EXPECT_NE(ir.find(masked), std::string::npos) << masked << "\n" << ir;
  }
  EXPECT_EQ(ir.find("for.j"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("sel.then"), std::string::npos) << ir;
}

// Runs `f` compiled, scheduled by `script` (none: unscheduled), with
// `inputs` as its first parameter; returns the arguments after the run.
std::vector<NDArray> RunOnFloats(const PrimFunc& f, const char* script, const std::vector<float>& inputs) {
  Schedule sch(f, 0);
  if (script) RunScheduleScript(sch, script);
  std::vector<NDArray> args = MakeArguments(f, 0);
  EXPECT_EQ(args[0].bytes(), inputs.size() * sizeof(float));
  std::memcpy(args[0].data(), inputs.data(), std::min(args[0].bytes(), inputs.size() * sizeof(float)));
  std::vector<void*> pointers;
  for (NDArray& a : args) pointers.push_back(a.data());
  Kernel k = SharedJit().Compile(Lower(sch.func()));
  k.fn(pointers.data());
  SharedJit().Release(k);
  return args;
}

// Whether `got` is `want` to within 2 units in the last place of |want|,
// NaN where want is NaN, and exactly want where that is 0 or infinite.
::testing::AssertionResult WithinTwoUlp(float got, float want) {
  bool ok;
  if (std::isnan(want)) {
    ok = std::isnan(got);
  } else if (want == 0 || std::isinf(want)) {
    ok = got == want;
  } else {
    float ulp = std::nextafter(std::fabs(want), std::numeric_limits<float>::infinity()) - std::fabs(want);
    ok = std::fabs(got - want) <= 2 * ulp;
  }
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << got << " instead of " << want;
}

// The inline math tests run their stage Y vectorized and as a scalar loop.
const char* kVectorizeY = R"(
i, j = sch.get_loops(sch.get_block("Y"))
sch.vectorize(j)
)";

// exp of a float is code generation's own (Cephes' expf, inline), not
// libm's: within 2 ulp of the exact value over the whole range (the ulp of
// a subnormal result is the smallest subnormal), and right at the edges
// (overflow to inf, underflow through the subnormals to 0, NaN).
TEST(CodegenTest, FloatExpIsWithinTwoUlpEverywhere) {
  PrimFunc f = ParseWorkloadText(R"(
input X: f32[64, 64]
Y[i, j] = exp(X[i, j])
Z[i, j] = sigmoid(X[i, j])
)");
  std::vector<float> inputs;
  for (int i = 0; i < 4096 - 8; ++i) inputs.push_back(-110.0f + 200.0f * static_cast<float>(i) / 4088.0f);
  for (float edge : {0.0f, -0.0f, 88.72f, 88.73f, -87.33f, -103.9f, std::numeric_limits<float>::infinity(),
                     -std::numeric_limits<float>::infinity()}) {
    inputs.push_back(edge);
  }
  inputs[17] = std::numeric_limits<float>::quiet_NaN();
  const char* vectorize_both = R"(
i, j = sch.get_loops(sch.get_block("Y"))
sch.vectorize(j)
i, j = sch.get_loops(sch.get_block("Z"))
j0, j1 = sch.split(j, factors=[None, 16])
sch.vectorize(j1)
)";
  // Eight lanes: with AVX-512, the powers of two from exponent bits, as
  // without it (whole 16-lane vectors take vscalefps).
  const char* eight_lanes = R"(
i, j = sch.get_loops(sch.get_block("Y"))
j0, j1 = sch.split(j, factors=[None, 8])
sch.vectorize(j1)
)";
  for (const char* script : {vectorize_both, eight_lanes, static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(script ? script : "scalar");
    std::vector<NDArray> args = RunOnFloats(f, script, inputs);
    const float* y = static_cast<const float*>(args[1].data());
    const float* z = static_cast<const float*>(args[2].data());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      double x = inputs[i];
      EXPECT_TRUE(WithinTwoUlp(y[i], static_cast<float>(std::exp(x)))) << "exp(" << x << ")";
      if (!std::isnan(x)) {
        EXPECT_NEAR(z[i], 1.0 / (1.0 + std::exp(-x)), 1e-6) << "sigmoid(" << x << ")";
      }
    }
  }
}

// log of a float is inline too (Cephes' logf): within 2 ulp of the exact
// value from the smallest subnormal to the largest float, and -inf, NaN
// and inf where log gives them.
TEST(CodegenTest, FloatLogIsWithinTwoUlpEverywhere) {
  PrimFunc f = ParseWorkloadText(R"(
input X: f32[32, 64]
Y[i, j] = log(X[i, j])
)");
  std::vector<float> inputs;
  // Powers of 2 from 2^-149 to 2^127, each times 1 to 2 in 7 steps.
  for (int e = -149; e <= 127; ++e) {
    for (int s = 0; s < 7; ++s) inputs.push_back(std::ldexp(1.0f + static_cast<float>(s) / 7.0f, e));
  }
  for (float x = 0.5f; inputs.size() < 2048 - 6; x += 1.0f / 128.0f) inputs.push_back(x);
  for (float edge : {0.0f, -0.0f, -1.0f, 1.0f, std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::quiet_NaN()}) {
    inputs.push_back(edge);
  }
  for (const char* script : {kVectorizeY, static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(script ? "vectorized" : "scalar");
    std::vector<NDArray> args = RunOnFloats(f, script, inputs);
    const float* y = static_cast<const float*>(args[1].data());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      double x = inputs[i];
      EXPECT_TRUE(WithinTwoUlp(y[i], static_cast<float>(std::log(x)))) << "log(" << x << ")";
    }
  }
}

// tanh of a float is inline too (Cephes' tanhf): within 2 ulp of the exact
// value from 0 to saturation, odd (tanh(-0) is -0), NaN kept.
TEST(CodegenTest, FloatTanhIsWithinTwoUlpEverywhere) {
  PrimFunc f = ParseWorkloadText(R"(
input X: f32[32, 64]
Y[i, j] = tanh(X[i, j])
)");
  std::vector<float> inputs;
  for (int i = 0; i < 2048 - 6; ++i) inputs.push_back(-12.0f + 24.0f * static_cast<float>(i) / 2041.0f);
  for (float edge : {0.0f, -0.0f, 0.625f, -0.6249f, 1e-30f, std::numeric_limits<float>::infinity()}) {
    inputs.push_back(edge);
  }
  inputs[5] = std::numeric_limits<float>::quiet_NaN();
  for (const char* script : {kVectorizeY, static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(script ? "vectorized" : "scalar");
    std::vector<NDArray> args = RunOnFloats(f, script, inputs);
    const float* y = static_cast<const float*>(args[1].data());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      double x = inputs[i];
      float want = static_cast<float>(std::tanh(x));
      EXPECT_TRUE(WithinTwoUlp(y[i], want)) << "tanh(" << x << ")";
      EXPECT_EQ(std::signbit(y[i]), std::signbit(want)) << "tanh(" << x << ")";
    }
  }
}

// Dense with the lanes along the batch (search/rules/register_block.cc): X
// copied whole at the root and laid out k-major by lowering, each W[j, k]
// broadcast, a batch of a vector and a half, the accumulators written back
// in 8 x 8 blocks that code generation transposes in registers, then bias
// and ReLU under the same tile. Extents that leave partial blocks (IN = 20, OUT = 36).
TEST(CodegenTest, LanesAlongTheBatchWithATransposedWriteBack) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=24,IN=20,OUT=36").func;
  for (const char* rows : {"4", "6"}) {
    SCOPED_TRACE(rows);
    Schedule sch(f, 0);
    RunScheduleScript(sch, std::string(R"(
sch.compute_inline(sch.get_block("T_add"))
b0 = sch.get_block("T_matmul_NT")
i, j, k = sch.get_loops(b0)
j0, j1 = sch.split(j, factors=[None, )") + rows + R"(])
sch.reorder(j0, k, j1, i)
c = sch.cache_write(b0, 0, "local")
sch.reverse_compute_at(c, j0, preserve_unit_loops=True)
sch.reverse_compute_at(sch.get_block("T_relu"), j0, preserve_unit_loops=True)
x = sch.cache_read(b0, 0, "global")
xr, xc = sch.get_loops(x)
xr0, xr1 = sch.split(xr, factors=[None, 8])
xc0, xc1 = sch.split(xc, factors=[None, 8])
sch.reorder(xr0, xc0, xr1, xc1)
sch.unroll(xr1)
sch.unroll(xc1)
*_, ca, cb = sch.get_loops(c)
ca0, ca1 = sch.split(ca, factors=[None, 8])
cb0, cb1 = sch.split(cb, factors=[None, 8])
sch.reorder(ca0, cb0, ca1, cb1)
sch.unroll(ca1)
sch.unroll(cb1)
sch.unroll(j1)
sch.parallel(j0)
sch.vectorize(i)
sch.decompose_reduction(b0, k)
)");
    for (std::uint64_t seed : {1, 2}) EXPECT_EQ(CompiledKeepsTheResult(f, sch.func(), seed), "");
  }
}

// Whether a versioned program holds a threshold of a loop's variable
// (`if k_0 < ...:`), which code generation runs as two loops.
bool HasAThreshold(const std::string& text) {
  static const std::regex threshold(R"(if ([a-z0-9_]+) < )");
  for (auto m = std::sregex_iterator(text.begin(), text.end(), threshold); m != std::sregex_iterator(); ++m) {
    const std::string var = (*m)[1];
    if (text.find("for " + var + " in") != std::string::npos || text.find(", " + var + " in") != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST(CodegenTest, RandomSchedulesOfEveryWorkloadCompile) {
  std::vector<std::pair<std::string, PrimFunc>> workloads;
  for (const char* spec : {"matmul:M=12,N=10,K=8", "dense_bias_relu:B=6,IN=10,OUT=4",
                           "conv2d_nhwc:N=1,H=6,W=5,CI=3,CO=4,KH=3,KW=3,stride=1,pad=1",
                           "depthwise_conv2d_nhwc:N=1,H=6,W=6,C=3,KH=3,KW=3,stride=2,pad=1", "softmax:M=4,N=12",
                           "reduce_sum:M=6,N=16", "batch_matmul:B=2,M=6,N=4,K=5"}) {
    workloads.emplace_back(spec, BuildWorkload(spec).func);
  }
  // Loops of 16 steps and more with masks: random splits leave thresholds
  // of their variables for code generation to run as two loops.
  workloads.emplace_back("banded product", ParseWorkloadText("input A: f32[40, 67]\ninput B: f32[67, 3]\n"
                                                             "C[i, j] = sum(k in 67) k >= i - 9 && k <= i + 5 ? "
                                                             "A[i, k] * B[k, j] : 0.0\n"));
  workloads.emplace_back("prime dot", ParseWorkloadText("input A: f32[2, 397]\ninput B: f32[397]\n"
                                                        "S[r] = sum(k in 397) A[r, k] * B[k]\n"));
  int thresholds = 0;
  for (const auto& [spec, f] : workloads) {
    for (std::uint64_t seed = 0; seed < 12; ++seed) {
      Schedule sch(f, seed);
      ir::testing::RandomScheduler random(sch, seed);
      random.Steps(10);
      ASSERT_EQ(CompiledKeepsTheResult(f, sch.func(), seed), "") << spec << " seed " << seed << "\n"
                                                                << sch.trace().AsScript() << PrintProgram(Lower(sch.func()));
      thresholds += HasAThreshold(PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512)));
    }
  }
  EXPECT_GE(thresholds, 3);
}

TEST(CodegenTest, CompileTimeIsReported) {
  PrimFunc f = BuildWorkload("matmul:M=64,N=64,K=64").func;
  Kernel k = SharedJit().Compile(Lower(f));
  EXPECT_GT(k.compile_secs, 0);
  EXPECT_LT(k.compile_secs, 30);
  SharedJit().Release(k);
}

// Target::Parse's message for `text`, or "accepted".
std::string ParseError(const std::string& text) {
  try {
    Target::Parse(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(TargetTest, ParseAndPrint) {
  Target host = Target::Host();
  EXPECT_EQ(Target::Parse(host.ToString()).features, host.features);
  Target t = Target::Parse("llvm -mcpu=znver4 -num-cores=2");
  EXPECT_EQ(t.cpu, "znver4");
  EXPECT_EQ(t.num_cores, 2);
  EXPECT_EQ(t.ToString(), "llvm -mcpu=znver4 -num-cores=2");
  EXPECT_THROW(Target::Parse("cuda"), std::invalid_argument);
  EXPECT_THROW(Target::Parse("llvm -num-cores=zero"), std::invalid_argument);
  EXPECT_THROW(Target::Parse("llvm -frobnicate"), std::invalid_argument);
  EXPECT_EQ(Target::Parse("llvm -mcpu=generic").cpu, "generic");
  // TVM's own printing of a target: its default keys, options in its order.
  EXPECT_EQ(Target::Parse("llvm -keys=cpu -num-cores=2 -mcpu=znver4").ToString(), "llvm -mcpu=znver4 -num-cores=2");
  EXPECT_THROW(Target::Parse("llvm -keys=arm_cpu,cpu -mcpu=znver4"), std::invalid_argument);
  // TVM also reads "-key value"; it was "unknown option '-num-cores'".
  EXPECT_EQ(Target::Parse("llvm -mcpu znver4 -num-cores 2").ToString(), "llvm -mcpu=znver4 -num-cores=2");
  EXPECT_EQ(ParseError("llvm -num-cores 0"), "target 'llvm -num-cores 0': -num-cores must be between 1 and 1024, not 0");
  EXPECT_EQ(ParseError("llvm -num-cores"), "target 'llvm -num-cores': -num-cores needs a value (-num-cores=VALUE)");
}

// A core count becomes that many pool threads when a kernel runs: 100000
// of them failed to start inside the reference kernel, and the worker
// aborted with "Resource temporarily unavailable".
TEST(TargetTest, ACoreCountMustBeAWholeNumberInRange) {
  EXPECT_EQ(Target::Parse("llvm -num-cores=1024").num_cores, 1024);
  EXPECT_EQ(ParseError("llvm -num-cores=100000"),
            "target 'llvm -num-cores=100000': -num-cores must be between 1 and 1024, not 100000");
  EXPECT_EQ(ParseError("llvm -num-cores=0"), "target 'llvm -num-cores=0': -num-cores must be between 1 and 1024, not 0");
  EXPECT_EQ(ParseError("llvm -num-cores=2x"), "target 'llvm -num-cores=2x': -num-cores must be a whole number, not '2x'");
  EXPECT_EQ(ParseError("llvm -num-cores=99999999999999999999"),
            "target 'llvm -num-cores=99999999999999999999': -num-cores must be a whole number, not "
            "'99999999999999999999'");
}

TEST(TargetTest, AnUnknownCpuIsRefusedBeforeLlvmSeesIt) {
  // LLVM would only warn, then abort the process when generating code.
  EXPECT_THAT(ParseError("llvm -mcpu=bogus -num-cores=2"),
              ::testing::HasSubstr("target 'llvm -mcpu=bogus -num-cores=2': LLVM does not know the CPU 'bogus' for "));
}

TEST(TargetTest, AnUnknownFeatureIsRefused) {
  // LLVM would drop it with a warning and build for another machine.
  Target t = Target::Parse("llvm -mcpu=znver4 -mattr=+avx2,-avx512f -num-cores=2");
  EXPECT_EQ(t.features, "+avx2,-avx512f");
  EXPECT_EQ(t.VectorBits(), 256);
  EXPECT_EQ(ParseError("llvm -mcpu=znver4 -mattr=+avx2,+frobnicate"),
            "target 'llvm -mcpu=znver4 -mattr=+avx2,+frobnicate': LLVM does not know the feature 'frobnicate' of -mattr");
  EXPECT_THAT(ParseError("llvm -mattr=avx2"), ::testing::HasSubstr("-mattr entry 'avx2' must be +name or -name"));
  EXPECT_THAT(ParseError("llvm -mattr=+avx2,,+fma"), ::testing::HasSubstr("-mattr entry '' must be +name or -name"));
}

// Records are stored under the target's name, so -mattr is part of it: a
// kernel built without AVX-512 is not filed with those built with it.
TEST(TargetTest, FeaturesAreNamedAndCountedWithTheCpus) {
  Target no512 = Target::Parse("llvm -mcpu=znver4 -mattr=-avx512f -num-cores=2");
  EXPECT_EQ(no512.ToString(), "llvm -mcpu=znver4 -mattr=-avx512f -num-cores=2");
  EXPECT_EQ(Target::Parse(no512.ToString()).ToString(), no512.ToString());
  // The CPU's own features stay: AVX2 without AVX-512 (once read as SSE).
  EXPECT_EQ(no512.VectorBits(), 256);
  EXPECT_EQ(Target::Parse("llvm -mcpu=skylake-avx512 -num-cores=2").VectorBits(), 512);
  EXPECT_EQ(Target::Parse("llvm -mcpu=haswell").VectorBits(), 256);
  EXPECT_EQ(Target::Parse("llvm -mcpu=generic").VectorBits(), 128);
}

// LLVM 16 calls a Zen 5 "generic", yet its kernels use AVX-512: such a host
// used to file its records under "generic", and "-mcpu=generic" there kept
// the host's AVX-512.
TEST(TargetTest, ACpuNewerThanLlvmTakesTheNameOfTheNewestItKnows) {
  EXPECT_EQ(NewestKnownCpuWithin({}, CpuVendor::kAmd), "znver4");
  EXPECT_EQ(NewestKnownCpuWithin({"avx512f"}, CpuVendor::kAmd), "znver3");
  EXPECT_EQ(NewestKnownCpuWithin({"avx512f"}, CpuVendor::kOther), "x86-64-v3");
  EXPECT_EQ(NewestKnownCpuWithin({"avx", "avx2"}, CpuVendor::kAmd), "x86-64-v2");
  EXPECT_EQ(NewestKnownCpuWithin({"sse4.2"}, CpuVendor::kIntel), "x86-64");
  EXPECT_EQ(NewestKnownCpuWithin({"sse2"}, CpuVendor::kIntel), "generic");
  // A virtual machine hides system features; they do not make a Zen 5 older.
  EXPECT_EQ(NewestKnownCpuWithin({"rdpid", "pku", "wbnoinvd", "shstk"}, CpuVendor::kAmd), "znver4");
  // Whatever this machine is, it has a name other than "generic", and one
  // that names the same machine when read back.
  Target host = Target::Host();
  EXPECT_NE(host.cpu, "generic");
  EXPECT_EQ(Target::Parse(host.ToString()).cpu, host.cpu);
  EXPECT_EQ(Target::Parse(host.ToString()).VectorBits(), host.VectorBits());
}

// A CPU's name turns on its features, and a virtual machine may hide some
// (this Zen 5 guest lacks nine of Zen 4's): the host's list turns the
// absent ones off, so no kernel is built for what the machine lacks. (No
// x86 CPU has every feature LLVM detects: AMX and AVX-512ER never meet.)
TEST(TargetTest, TheHostsFeaturesAreListedBothWays) {
  std::istringstream list(Target::Host().features);
  std::string feature;
  int on = 0, off = 0;
  while (std::getline(list, feature, ',')) {
    ASSERT_GE(feature.size(), 2u);
    on += feature[0] == '+';
    off += feature[0] == '-';
  }
  EXPECT_GT(on, 0);
  EXPECT_GT(off, 0);
}

// (This machine is an x86-64 Linux one, as tunedb's supported platform.)
TEST(TargetTest, ATripleMustBeThisMachines) {
  EXPECT_EQ(Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=znver4 -num-cores=2").ToString(),
            "llvm -mcpu=znver4 -num-cores=2");
  std::string error = ParseError("llvm -mtriple=aarch64-linux-gnu");
  EXPECT_THAT(error, ::testing::StartsWith("target 'llvm -mtriple=aarch64-linux-gnu': -mtriple=aarch64-linux-gnu "
                                           "is not this machine's (x86_64-"));
  EXPECT_THAT(error, ::testing::EndsWith("): tunedb measures every kernel where it runs"));
}

}  // namespace
}  // namespace tunedb::measure
