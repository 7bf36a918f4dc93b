// The reference program on all cores: which loops run in parallel, and that
// the outputs stay those of the serial program, bit for bit.
#include "measure/reference.h"

#include <cstring>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "ir/flops.h"
#include "ir/interpreter.h"
#include "ir/schedule/schedule.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"
#include "measure/jit.h"
#include "measure/lower.h"
#include "tests/measure/test_util.h"

namespace tunedb::measure {
namespace {

using namespace tunedb::ir;

// The outputs of the compiled `program` on the workload's seeded inputs.
std::vector<NDArray> CompiledOutputs(const PrimFunc& program) {
  std::vector<NDArray> args = MakeArguments(program, /*seed=*/7);
  for (int i : OutputParams(program)) args[i].Poison();
  Kernel k = SharedJit().Compile(Lower(program));
  std::vector<void*> pointers;
  for (NDArray& a : args) pointers.push_back(a.data());
  k.fn(pointers.data());
  SharedJit().Release(k);
  std::vector<NDArray> outputs;
  for (int i : OutputParams(program)) outputs.push_back(args[i]);
  return outputs;
}

// The kinds of the loops directly under the root, in order.
std::vector<ForKind> TopLevelLoopKinds(const PrimFunc& f) {
  std::vector<ForKind> kinds;
  auto visit = [&](const Stmt& s) {
    if (s->kind == StmtKind::kFor) kinds.push_back(static_cast<const ForNode&>(*s).for_kind);
  };
  const Stmt& body = f.root().body;
  if (body->kind == StmtKind::kSeq) {
    for (const Stmt& s : static_cast<const SeqNode&>(*body).stmts) visit(s);
  } else {
    visit(body);
  }
  return kinds;
}

TEST(ParallelReference, EveryLibraryWorkloadKeepsItsOutputsBitForBit) {
  int parallel_loops = 0;
  for (const WorkloadDef& def : BuiltinWorkloads()) {
    PrimFunc serial = BuildWorkload(def.name).func;
    if (CountFlops(serial) > 300'000'000) continue;  // the serial run would take seconds
    SCOPED_TRACE(def.name);
    PrimFunc parallel = ReferenceProgram(serial);
    for (ForKind kind : TopLevelLoopKinds(parallel)) parallel_loops += kind == ForKind::kParallel;
    std::vector<NDArray> expected = CompiledOutputs(serial);
    std::vector<NDArray> actual = CompiledOutputs(parallel);
    ASSERT_EQ(expected.size(), actual.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(expected[i].bytes(), actual[i].bytes());
      EXPECT_EQ(std::memcmp(expected[i].data(), actual[i].data(), expected[i].bytes()), 0) << "output " << i;
    }
  }
  EXPECT_GE(parallel_loops, 10);
}

TEST(ParallelReference, EachStageOfAMultiStageProgramGetsItsOuterLoop) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=8,IN=16,OUT=8").func;
  std::vector<ForKind> kinds = TopLevelLoopKinds(ParallelizeIndependentLoops(f));
  ASSERT_EQ(kinds.size(), 3u);
  for (ForKind kind : kinds) EXPECT_EQ(kind, ForKind::kParallel);
  // The input program is left as it was.
  for (ForKind kind : TopLevelLoopKinds(f)) EXPECT_EQ(kind, ForKind::kSerial);
}

// The kind of block variable each loop around `block` drives, outermost
// first (each loop drives one, bound to the loop variable itself).
std::vector<IterKind> LoopDrives(Schedule& sch, const std::string& block) {
  BlockRV b = sch.GetBlock(block);
  const BlockNode& node = sch.Get(b);
  std::vector<IterKind> kinds;
  for (const LoopRV& loop : sch.GetLoops(b)) {
    for (std::size_t i = 0; i < node.iter_vars.size(); ++i) {
      if (node.bindings[i].get() == sch.Get(loop).loop_var.get()) kinds.push_back(node.iter_vars[i].kind);
    }
  }
  return kinds;
}

TEST(ParallelReference, ReductionsMoveAboveTheInnermostLoop) {
  using K = IterKind;
  // matmul: i (parallel), k, j, with C's init split off under i.
  Schedule matmul(ReferenceProgram(BuildWorkload("matmul:M=8,N=8,K=8").func), 0);
  EXPECT_EQ(LoopDrives(matmul, "C_update"), (std::vector<K>{K::kSpatial, K::kReduce, K::kSpatial}));
  EXPECT_EQ(LoopDrives(matmul, "C_init"), (std::vector<K>{K::kSpatial, K::kSpatial}));
  EXPECT_EQ(TopLevelLoopKinds(matmul.func()), std::vector<ForKind>{ForKind::kParallel});
  // conv2d NHWC: the three reduction loops above the channel loop, in their
  // order.
  Schedule conv(ReferenceProgram(BuildWorkload("conv2d_nhwc:N=1,H=6,W=6,CI=4,CO=8,KH=3,KW=3").func), 0);
  std::vector<K> drives;
  for (const BlockNode* b : CollectBlocks(conv.func())) {
    if (b->name.find("_update") != std::string::npos) drives = LoopDrives(conv, b->name);
  }
  EXPECT_EQ(drives, (std::vector<K>{K::kSpatial, K::kSpatial, K::kSpatial, K::kReduce, K::kReduce, K::kReduce,
                                    K::kSpatial}));
  // A reduction with one spatial loop (a row sum) keeps its order.
  Schedule rows(ReferenceProgram(ParseWorkloadText("input X: f32[4, 8]\nY[i] = sum(k in 8) X[i, k]\n")), 0);
  EXPECT_EQ(LoopDrives(rows, "Y"), (std::vector<K>{K::kSpatial, K::kReduce}));
}

TEST(ParallelReference, AnOuterReductionLoopStaysSerial) {
  // With k outermost, every iteration of that loop adds into all of C.
  Schedule sch(BuildWorkload("matmul:M=8,N=8,K=8").func, /*seed=*/0);
  BlockRV c = sch.GetBlock("C");
  std::vector<LoopRV> loops = sch.GetLoops(c);
  sch.Reorder({loops[2], loops[0], loops[1]});
  EXPECT_EQ(TopLevelLoopKinds(ParallelizeIndependentLoops(sch.func())), std::vector<ForKind>{ForKind::kSerial});
}

// Programs the workload language cannot write but a JSON program can, where
// the order of the iterations decides the values. Each rewrites the store
// of Y[i] = X[i] + 1.
TEST(ParallelReference, IterationsThatShareAnElementStaySerial) {
  auto rewritten = [](const std::function<void(StoreNode&)>& rewrite) {
    PrimFunc f = ParseWorkloadText("input X: f32[16]\nY[i] = X[i] + 1\n");
    int stores = 0;
    VisitStmt(f.body, [&](const Stmt& s) {
      if (s->kind != StmtKind::kStore || static_cast<StoreNode&>(*s).buffer->name != "Y") return;
      rewrite(static_cast<StoreNode&>(*s));
      ++stores;
    });
    EXPECT_EQ(stores, 1);
    return TopLevelLoopKinds(ParallelizeIndependentLoops(f));
  };
  const std::vector<ForKind> serial{ForKind::kSerial};
  EXPECT_EQ(rewritten([](StoreNode&) {}), std::vector<ForKind>{ForKind::kParallel});
  // Y[i] = Y[15 - i] + 1: iteration i reads what iteration 15 - i writes.
  EXPECT_EQ(rewritten([](StoreNode& s) {
              s.value = Load(s.buffer, {MakeConst(s.indices[0]->dtype, 15) - s.indices[0]}) + 1.0;
            }),
            serial);
  // Y[0] = X[i] + 1: every iteration stores the same element, the last wins.
  EXPECT_EQ(rewritten([](StoreNode& s) { s.indices = {MakeConst(s.indices[0]->dtype, 0)}; }), serial);
  // Y[floor(X[i])] = ...: where an iteration stores depends on the data.
  EXPECT_EQ(rewritten([](StoreNode& s) {
              Expr i = s.indices[0];
              s.indices = {Cast(i->dtype, Load(s.value->operands[0]->buffer, {i}))};
            }),
            serial);
}

}  // namespace
}  // namespace tunedb::measure
