#include "ir/schedule/schedule.h"

#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/schedule/script.h"
#include "ir/structural.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"
#include "tests/ir/schedule/schedule_test_util.h"

namespace tunedb::ir {
namespace {

PrimFunc Matmul(std::int64_t m = 16, std::int64_t n = 16, std::int64_t k = 16) {
  return BuildWorkload("matmul:M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k)).func;
}

TEST(ScheduleTest, TheLectureSchedule) {
  PrimFunc f = Matmul();
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  std::vector<LoopRV> loops = sch.GetLoops(c);
  ASSERT_EQ(loops.size(), 3u);
  std::vector<LoopRV> j = sch.Split(loops[1], {std::monostate{}, std::int64_t{4}});
  sch.Reorder({loops[0], j[0], loops[2], j[1]});
  BlockRV init = sch.DecomposeReduction(c, j[0]);
  EXPECT_EQ(sch.Get(init).name, "C_init");
  EXPECT_EQ(sch.Get(c).name, "C_update");
  EXPECT_SAME_RESULT(f, sch);
  std::string text = PrintProgram(sch.func());
  EXPECT_NE(text.find("for j_0_init, j_1_init in T.grid(4, 4):"), std::string::npos) << text;
  EXPECT_NE(text.find("for j_0, k, j_1 in T.grid(4, 16, 4):"), std::string::npos) << text;
  EXPECT_NE(text.find("v_j = T.axis.spatial(16, j_0 * 4 + j_1)"), std::string::npos) << text;
  EXPECT_EQ(sch.trace().AsScript(),
            "b0 = sch.get_block(name=\"C\", func_name=\"main\")\n"
            "l1, l2, l3 = sch.get_loops(block=b0)\n"
            "l4, l5 = sch.split(loop=l2, factors=[None, 4], preserve_unit_iters=True, disable_predication=False)\n"
            "sch.reorder(l1, l4, l3, l5)\n"
            "b6 = sch.decompose_reduction(block=b0, loop=l4)\n");
}

}  // namespace
}  // namespace tunedb::ir

namespace tunedb::ir {
namespace {

PrimFunc Mm(int n = 16) { return Matmul(n, n, n); }

// Runs fn, which must throw ScheduleError with `message`, and checks that
// the schedule (program and trace) is exactly as before.
template <typename Fn>
void ExpectRefused(Schedule& sch, Fn&& fn, const std::string& message) {
  std::string program = PrintProgram(sch.func());
  std::string trace = sch.trace().ToJson().dump();
  try {
    fn();
    FAIL() << "expected: " << message;
  } catch (const ScheduleError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
  EXPECT_EQ(PrintProgram(sch.func()), program);
  EXPECT_EQ(sch.trace().ToJson().dump(), trace);
}

TEST(SplitTest, PerfectAndImperfect) {
  PrimFunc f = Matmul(10, 16, 8);
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  auto loops = sch.GetLoops(c);
  auto i = sch.Split(loops[0], {std::monostate{}, std::int64_t{4}});  // 3 x 4 > 10: predicate
  EXPECT_EQ(sch.Get(i[0]).extent, 3);
  EXPECT_EQ(sch.Get(i[1]).extent, 4);
  EXPECT_NE(PrintProgram(sch.func()).find("T.where(i_0 * 4 + i_1 < 10)"), std::string::npos);
  auto j = sch.Split(loops[1], {std::int64_t{2}, std::int64_t{2}, std::int64_t{4}});
  EXPECT_EQ(j.size(), 3u);
  EXPECT_SAME_RESULT(f, sch);
}

TEST(SplitTest, Refusals) {
  Schedule sch(Mm(), 0);
  BlockRV c = sch.GetBlock("C");
  auto loops = sch.GetLoops(c);
  ExpectRefused(sch, [&] { sch.Split(loops[0], {std::int64_t{2}, std::int64_t{4}}); },
                "split: loop i: the factors multiply to 8, less than the loop extent 16");
  ExpectRefused(sch, [&] { sch.Split(loops[0], {std::monostate{}, std::monostate{}}); },
                "split: loop i: at most one factor may be None");
  ExpectRefused(sch, [&] { sch.Split(loops[0], {std::int64_t{0}, std::int64_t{4}}); },
                "split: loop i: factor 0 is not positive");
  ExpectRefused(sch, [&] { sch.Split(loops[0], {std::int64_t{16}}); }, "split: loop i: at least two factors are needed");
  // An int32 variable cannot count 2^40 iterations: the stride 2^41 would
  // wrap, and the program would run some elements twice and others never.
  ExpectRefused(sch, [&] { sch.Split(loops[0], {std::int64_t{2}, std::int64_t{1} << 40, std::int64_t{8}}); },
                "split: loop i: the factors multiply to more iterations than its int32 variable can count");
  ExpectRefused(sch, [&] { sch.Split(loops[0], {std::int64_t{1} << 62, std::int64_t{1} << 62}); },
                "split: loop i: the factors multiply to more iterations than its int32 variable can count");
  // Without the predicate, iterations past 16 would run.
  ExpectRefused(sch, [&] { sch.Split(loops[0], {std::monostate{}, std::int64_t{5}}, true, true); },
                "split: loop i: the factors multiply to 20, more than the extent 16, which needs the predicate "
                "that disable_predication leaves out");
  sch.Split(loops[1], {std::monostate{}, std::int64_t{4}}, true, true);  // exact: nothing to leave out
  sch.Split(loops[0], {std::int64_t{4}, std::int64_t{4}});
  ExpectRefused(sch, [&] { sch.Split(loops[0], {std::int64_t{4}, std::int64_t{4}}); },
                "split: loop 'i' is no longer in the program (an earlier split or fuse replaced it)");
}

TEST(FuseReorderTest, FuseAndReorder) {
  PrimFunc f = Matmul(6, 4, 5);
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  auto loops = sch.GetLoops(c);
  sch.Reorder({loops[2], loops[1], loops[0]});
  EXPECT_NE(PrintProgram(sch.func()).find("for k, j, i in T.grid(5, 4, 6):"), std::string::npos);
  EXPECT_SAME_RESULT(f, sch);
  LoopRV ji = sch.Fuse({loops[1], loops[0]});
  EXPECT_EQ(sch.Get(ji).extent, 24);
  EXPECT_NE(PrintProgram(sch.func()).find("v_i = T.axis.spatial(6, j_i_fused % 6)"), std::string::npos)
      << PrintProgram(sch.func());
  EXPECT_SAME_RESULT(f, sch);
}

TEST(FuseReorderTest, Refusals) {
  Schedule sch(Mm(), 0);
  BlockRV c = sch.GetBlock("C");
  auto loops = sch.GetLoops(c);
  ExpectRefused(sch, [&] { sch.Fuse({loops[0], loops[2]}); },
                "fuse: loop k is not the only child of loop i (fused loops must be directly nested)");
  ExpectRefused(sch, [&] { sch.Fuse({loops[1], loops[2]}); },
                "fuse: the loops drive both spatial and reduction variables of block 'C'");
  ExpectRefused(sch, [&] { sch.Reorder({loops[0], loops[0]}); }, "reorder: loop i is given twice");
}

TEST(LoopKindTest, ParallelVectorizeUnrollAnnotate) {
  PrimFunc f = Mm(8);
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  auto loops = sch.GetLoops(c);
  sch.Parallel(loops[0]);
  sch.Vectorize(loops[1]);
  sch.Unroll(loops[2]);
  sch.Annotate(loops[0], "pragma_auto_unroll_max_step", std::int64_t{16});
  sch.Annotate(c, "meta_schedule.tiling_structure", std::string("SSRSRS"));
  std::string text = PrintProgram(sch.func());
  EXPECT_NE(text.find("for i in T.parallel(8, annotations={\"pragma_auto_unroll_max_step\": 16}):"), std::string::npos) << text;
  EXPECT_NE(text.find("for j in T.vectorized(8):"), std::string::npos) << text;
  EXPECT_NE(text.find("for k in T.unroll(8):"), std::string::npos) << text;
  EXPECT_NE(text.find("T.block_attr({\"meta_schedule.tiling_structure\": \"SSRSRS\"})"), std::string::npos) << text;
  sch.Unannotate(c, "meta_schedule.tiling_structure");
  EXPECT_EQ(sch.Get(c).annotations.size(), 0u);
  EXPECT_SAME_RESULT(f, sch);
}

TEST(LoopKindTest, ReductionLoopsCannotBeParallel) {
  Schedule sch(Mm(8), 0);
  BlockRV c = sch.GetBlock("C");
  auto loops = sch.GetLoops(c);
  ExpectRefused(sch, [&] { sch.Parallel(loops[2]); },
                "parallel: loop k drives the reduction variable v_k of block 'C'; only loops over spatial variables "
                "can run in parallel or as vectors");
  ExpectRefused(sch, [&] { sch.Vectorize(loops[2]); },
                "vectorize: loop k drives the reduction variable v_k of block 'C'; only loops over spatial variables "
                "can run in parallel or as vectors");
}

TEST(BlockMotionTest, DenseInlineAndComputeAt) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=8,IN=6,OUT=8").func;
  Schedule sch(f, 0);
  sch.ComputeInline(sch.GetBlock("T_add"));
  BlockRV mm = sch.GetBlock("T_matmul_NT");
  BlockRV relu = sch.GetBlock("T_relu");
  auto relu_loops = sch.GetLoops(relu);
  auto i = sch.Split(relu_loops[0], {std::monostate{}, std::int64_t{4}});
  sch.ComputeAt(mm, i[0], true);
  std::string text = PrintProgram(sch.func());
  EXPECT_EQ(text.find("T_add"), std::string::npos) << text;
  EXPECT_NE(text.find("T_relu[v_i, v_j] = T.max(T_matmul_NT[v_i, v_j] + bias[v_j], T.float32(0.0))"), std::string::npos)
      << text;
  // The matmul now computes a 4 x 8 tile per iteration of i_0.
  EXPECT_NE(text.find("for ax0, ax1, ax2 in T.grid(4, 8, 6):"), std::string::npos) << text;
  EXPECT_NE(text.find("v_i = T.axis.spatial(8, i_0 * 4 + ax0)"), std::string::npos) << text;
  EXPECT_SAME_RESULT(f, sch);
}

TEST(BlockMotionTest, ReverseComputeInlineAndReverseComputeAt) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=8,IN=6,OUT=8").func;
  Schedule sch(f, 0);
  sch.ReverseComputeInline(sch.GetBlock("T_relu"));
  BlockRV add = sch.GetBlock("T_add");
  EXPECT_NE(PrintProgram(sch.func()).find("T_relu[v_i, v_j] = T.max(T_matmul_NT[v_i, v_j] + bias[v_j], T.float32(0.0))"),
            std::string::npos)
      << PrintProgram(sch.func());
  BlockRV mm = sch.GetBlock("T_matmul_NT");
  auto loops = sch.GetLoops(mm);
  sch.ReverseComputeAt(add, loops[1], true);
  EXPECT_SAME_RESULT(f, sch);
}

// As in TVM, a reduction block may be moved under a loop of its producers:
// its reduction keeps its whole range there. Here the horizontal sum of an
// rfactor goes under the tile loop that produces its partial sums.
TEST(BlockMotionTest, ReverseComputeAtMovesAReduction) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=8,IN=32,OUT=8").func;
  const std::string rfactor = R"(
b0 = sch.get_block("T_matmul_NT")
i, j, k = sch.get_loops(b0)
k0, k1 = sch.split(k, factors=[None, 8])
rf = sch.rfactor(k1, 2)
i, j, ka, kb = sch.get_loops(rf)
)";
  Schedule sch(f, 0);
  RunScheduleScript(sch, rfactor + "sch.reverse_compute_at(b0, j)\n");
  std::string text = PrintProgram(sch.func());
  EXPECT_NE(text.find("        for ax0 in range(8):\n"
                      "            with T.block(\"T_matmul_NT\"):\n"
                      "                v_i, v_j, vk_1 = T.axis.remap(\"SSR\", [i, j, ax0])"),
            std::string::npos)
      << text;
  EXPECT_SAME_RESULT(f, sch);
  // Under the loop over the partial sums' own axis, one iteration produces
  // one of the eight the reduction reads.
  Schedule split(f, 0);
  RunScheduleScript(split, rfactor + "sch.reorder(i, j, kb, ka)\n");
  std::vector<LoopRV> loops = split.GetLoops(split.GetBlock("T_matmul_NT_rf"));
  BlockRV sum = split.GetBlock("T_matmul_NT");
  ExpectRefused(split, [&] { split.ReverseComputeAt(sum, loops[2], true); },
                "reverse_compute_at: block 'T_matmul_NT' at loop k_1: one iteration produces only part of "
                "T_matmul_NT_rf along the reduction over vk_1");
}

// Rows split 2 x 4 and visited i_1 outer: one iteration of i_1 writes rows
// i_1 and i_1 + 4. A write-back moved there would copy rows i_1 to i_1 + 4,
// three of them not yet summed (with the loop parallel, or the buffer kept
// per iteration by lowering, never): refused. Under i_0, one row each.
TEST(BlockMotionTest, ReverseComputeAtRefusesARegionWithGaps) {
  PrimFunc f = BuildWorkload("reduce_sum:M=8,N=10").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b0 = sch.get_block("A_red")
i, k = sch.get_loops(b0)
i0, i1 = sch.split(i, factors=[2, 4])
sch.reorder(i1, i0, k)
)");
  BlockRV wb = sch.CacheWrite(sch.GetBlock("A_red"), 0, "global");
  std::vector<LoopRV> loops = sch.GetLoops(sch.GetBlock("A_red"));
  ExpectRefused(sch, [&] { sch.ReverseComputeAt(wb, loops[0], true); },
                "reverse_compute_at: block 'A_red_global' at loop i_1: one iteration does not write all of the "
                "region of A_red_global it touches (a stride or a gap), so the block would read elements other "
                "iterations write");
  sch.ReverseComputeAt(wb, loops[1], true);
  EXPECT_SAME_RESULT(f, sch);
}

// A symmetric product reads the rows of one buffer twice, B[i, k] and
// B[j, k]. Moved under the loop over its producer's rows, it would run
// only where i and j are the row just produced: every element off the
// diagonal would never be computed (found by fuzzing, through a copy of
// both reads that cache_read made then: an output left unwritten).
TEST(BlockMotionTest, ReverseComputeAtRefusesTwoVariablesAlongOneDimension) {
  PrimFunc f = ParseWorkloadText(
      "input A: f32[16, 9]\nB[i, k] = A[i, k] * 2.0\nC[i, j in 16] = sum(k in 9) B[i, k] * B[j, k]\n");
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  std::vector<LoopRV> loops = sch.GetLoops(sch.GetBlock("B"));
  ExpectRefused(sch, [&] { sch.ReverseComputeAt(c, loops[0], true); },
                "reverse_compute_at: block 'C' at loop i: the block reads B along dimension 0 through "
                "both v_i and v_j, and one iteration produces part of it: the pairs from different iterations "
                "would never run");
}

// After pad_einsum, inlining the copy back to the real shape leaves the
// padded block writing B, whose 8 rows are fewer than the block's 9: its
// domain narrows to 8. Moving the block builds its loops anew from the
// domain, with the condition `< 8` where they run past it; without it, the
// block writes row 8 of an 8-row B.
TEST(BlockMotionTest, AMovedBlockKeepsTheDomainOfItsInlinedConsumer) {
  PrimFunc f = ParseWorkloadText("input A: f32[8, 4]\nB[i, j] = A[i, j] * 2.0\nC[i, j] = B[i, j] + 1.0\n");
  const std::string narrowed = R"(
b = sch.get_block("B")
sch.pad_einsum(b, padding=[3, 1])
sch.reverse_compute_inline(sch.get_block("B_unpad"))
i, j = sch.get_loops(sch.get_block("A_pad"))
)";
  Schedule sch(f, 0);
  RunScheduleScript(sch, narrowed + "sch.reverse_compute_at(b, i)\n");
  std::string text = PrintProgram(sch.func());
  EXPECT_NE(text.find("T.where(ax0 < 8)"), std::string::npos) << text;
  EXPECT_SAME_RESULT(f, sch);
  // Split first (5 x 2 iterations for 9 rows, conditions over i_0 * 2 + i_1):
  // the move rebuilds the one it needs from the domain.
  Schedule split(f, 0);
  RunScheduleScript(split, narrowed + R"(
bi, bj = sch.get_loops(b)
sch.split(bi, factors=[None, 2])
sch.reverse_compute_at(b, i)
)");
  EXPECT_NE(PrintProgram(split.func()).find("T.where(ax0 < 8)"), std::string::npos) << PrintProgram(split.func());
  EXPECT_SAME_RESULT(f, split);
  // Computed at the copy-back first, B's loops cover only the 8 real rows,
  // and the condition is always true there and simplified away: the domain
  // itself must narrow to 8, or moving B again rebuilds 9 rows of loops.
  Schedule again(f, 0);
  RunScheduleScript(again, R"(
b = sch.get_block("B")
sch.pad_einsum(b, padding=[3, 1])
u = sch.get_block("B_unpad")
ui, uj = sch.get_loops(u)
sch.compute_at(b, ui)
sch.reverse_compute_inline(u)
i, j = sch.get_loops(sch.get_block("A_pad"))
sch.reverse_compute_at(b, i)
)");
  EXPECT_NE(PrintProgram(again.func()).find("T.where(ax0 < 8)"), std::string::npos) << PrintProgram(again.func());
  EXPECT_SAME_RESULT(f, again);
}

// reverse_compute_at gives a block the region its producers write per
// iteration, from their indices; a producer's condition over the loops
// inside must not make it write less. In kWriteBackUnderASplitOfOne, the
// second write-back writes in one of four iterations of the split: moved
// under i_0, a third write-back would copy 4 elements of which one was
// written. Under the split, it takes the condition instead (lower_test.cc).
TEST(BlockMotionTest, AConsumerIsNotMovedWhereItsProducerWritesLessThanItsRegion) {
  PrimFunc f = BuildWorkload("reduce_sum:M=6,N=16").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, std::string(testing::kWriteBackUnderASplitOfOne) +
                             "wb3 = sch.cache_write(wb2, 0, \"global\")\n");
  BlockRV copy = sch.GetBlock("A_red_global");
  LoopRV i0 = sch.GetLoops(sch.GetBlock("A_red"))[1];
  ExpectRefused(sch, [&] { sch.ReverseComputeAt(copy, i0, true); },
                "reverse_compute_at: block 'A_red_global' at loop i_0: producer 'A_red_local_1' writes only where "
                "ax0_0 * 4 + ax0_1 < 1, so one iteration writes less than its region");
  EXPECT_SAME_RESULT(f, sch);
}

// A consumer moved under a loop of one producer must still come after
// its other inputs' producers: S is written after M's loop, so N cannot
// go into it (the property test met this in softmax as an "internal
// error" of the program check).
TEST(BlockMotionTest, ReverseComputeAtRefusesALoopBeforeAnotherProducer) {
  PrimFunc f = ParseWorkloadText(
      "input A: f32[4, 8]\nM[i in 4] = max(k in 8) A[i, k]\nS[i in 4] = sum(k in 8) A[i, k]\n"
      "N[i in 4, j in 8] = A[i, j] - M[i] + S[i]\n");
  Schedule sch(f, 0);
  BlockRV n = sch.GetBlock("N");
  LoopRV row = sch.GetLoops(sch.GetBlock("M"))[0];
  ExpectRefused(sch, [&] { sch.ReverseComputeAt(n, row, true); },
                "reverse_compute_at: block 'N' at loop i: block 'S' writes S, which the block reads, after the loop");
  // Under S's row loop, after both: allowed.
  sch.ReverseComputeAt(n, sch.GetLoops(sch.GetBlock("S"))[0], true);
  EXPECT_SAME_RESULT(f, sch);
}

// When several buffers fail one check, the refusal names the first the
// block reads, in every process: both T and S are written after M's row
// loop, and N reads S first although T was declared (and allocated)
// first. The buffers used to be walked in heap-address order.
TEST(BlockMotionTest, ARefusalNamesTheFirstBufferTheBlockReads) {
  PrimFunc f = ParseWorkloadText(
      "input A: f32[4, 8]\nM[i in 4] = max(k in 8) A[i, k]\nT[i in 4] = sum(k in 8) A[i, k]\n"
      "S[i in 4] = sum(k in 8) A[i, k] * 2.0\nN[i in 4, j in 8] = A[i, j] - S[i] + T[i]\n");
  Schedule sch(f, 0);
  BlockRV n = sch.GetBlock("N");
  LoopRV row = sch.GetLoops(sch.GetBlock("M"))[0];
  ExpectRefused(sch, [&] { sch.ReverseComputeAt(n, row, true); },
                "reverse_compute_at: block 'N' at loop i: block 'S' writes S, which the block reads, after the loop");
}

// No expression deeper than kMaxExprDepth is built (every pass recurses
// through one): a primitive that would build one is refused, and the
// schedule stays as it was. 20,000 split factors overflowed the stack.
TEST(BlockMotionTest, APrimitiveThatWouldNestTooDeepIsRefused) {
  auto chain = [](const std::string& from) {
    std::string e = from + "[i]";
    for (int k = 0; k < 120; ++k) e += " + 1.0";
    return e;
  };
  PrimFunc f = ParseWorkloadText("input A: f32[4]\nB[i] = " + chain("A") + "\nC[i] = " + chain("B") + "\nD[i] = " +
                                     chain("C") + "\n",
                                 "chain.tw");
  Schedule sch(f, 0);
  sch.ComputeInline(sch.GetBlock("B"));  // C, about 240 levels
  BlockRV c = sch.GetBlock("C");
  ExpectRefused(sch, [&] { sch.ComputeInline(c); }, "compute_inline: an expression nested deeper than 256 levels");
  std::vector<SplitFactor> factors(300, std::int64_t{1});
  factors.back() = std::monostate{};
  LoopRV i = sch.GetLoops(c)[0];
  ExpectRefused(sch, [&] { sch.Split(i, factors); }, "split: an expression nested deeper than 256 levels");
  EXPECT_SAME_RESULT(f, sch);
}

// A division by a row sum computed earlier: the consumer reads two
// intermediates, and goes into the one whose nest runs last (attention's
// O / Z, put into the product's write-back).
TEST(BlockMotionTest, ReverseComputeInlineIntoTheLastOfTwoProducers) {
  PrimFunc f = ParseWorkloadText(
      "input X: f32[8, 16]\n"
      "input W: f32[8, 16]\n"
      "Z[i] = sum(k in 16) X[i, k]\n"
      "O[i, j] = sum(k in 16) X[i, k] * W[j, k]\n"
      "Y[i, j] = O[i, j] / Z[i]\n");
  Schedule sch(f, 0);
  sch.CacheWrite(sch.GetBlock("O"), 0, "local");
  sch.ReverseComputeInline(sch.GetBlock("Y"));
  std::string text = PrintProgram(sch.func());
  EXPECT_NE(text.find("Y[v0, v1] = O_local[v0, v1] / Z[v0]"), std::string::npos) << text;
  EXPECT_SAME_RESULT(f, sch);

  // With the sum computed in the write-back's nest, it is not known to be
  // complete where the division would go.
  Schedule inside(f, 0);
  BlockRV write_back = inside.CacheWrite(inside.GetBlock("O"), 0, "local");
  LoopRV row = inside.GetLoops(write_back)[0];
  inside.ReverseComputeAt(inside.GetBlock("Y"), row);
  inside.ComputeAt(inside.GetBlock("Z"), row);
  BlockRV y = inside.GetBlock("Y");
  ExpectRefused(inside, [&] { inside.ReverseComputeInline(y); },
                "reverse_compute_inline: block 'Y' reads several intermediate buffers, and Z is not complete before "
                "the loop nest of O's producer");
  EXPECT_SAME_RESULT(f, inside);
}

TEST(BlockMotionTest, Refusals) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=8,IN=6,OUT=8").func;
  Schedule sch(f, 0);
  BlockRV mm = sch.GetBlock("T_matmul_NT");
  BlockRV relu = sch.GetBlock("T_relu");
  ExpectRefused(sch, [&] { sch.ComputeInline(mm); }, "compute_inline: block 'T_matmul_NT' is a reduction");
  ExpectRefused(sch, [&] { sch.ComputeInline(relu); },
                "compute_inline: block 'T_relu' writes the function output T_relu");
  BlockRV add = sch.GetBlock("T_add");
  ExpectRefused(sch, [&] { sch.ReverseComputeInline(add); },
                "reverse_compute_inline: block 'T_matmul_NT' is a reduction");
  auto relu_loops = sch.GetLoops(relu);
  ExpectRefused(sch, [&] { sch.ComputeAt(mm, relu_loops[0]); },
                "compute_at: block 'T_matmul_NT' at loop i: consumer 'T_add' is not under the loop");
  BlockRV root = sch.GetBlock("root");
  ExpectRefused(sch, [&] { sch.ComputeAt(root, relu_loops[0]); },
                "compute_at: the root block cannot be moved or inlined");
}

TEST(CacheTest, CacheWriteLocalAccumulator) {
  PrimFunc f = Mm(8);
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  BlockRV cw = sch.CacheWrite(c, 0, "local");
  EXPECT_EQ(sch.Get(cw).name, "C_local");
  auto loops = sch.GetLoops(c);
  sch.ReverseComputeAt(cw, loops[1], true);
  std::string text = PrintProgram(sch.func());
  EXPECT_NE(text.find("C_local = T.alloc_buffer((8, 8), scope=\"local\")"), std::string::npos) << text;
  EXPECT_SAME_RESULT(f, sch);
  ExpectRefused(sch, [&] { sch.CacheWrite(c, 3, "local"); },
                "cache_write: block 'C' has 1 write region(s); write_buffer_index 3 is out of range");
  ExpectRefused(sch, [&] { sch.CacheRead(c, 0, "shared"); },
                "cache_read: storage scope 'shared' is not supported (use \"global\" or \"local\")");
}

TEST(CacheTest, CacheReadComputedAtATile) {
  PrimFunc f = Mm(8);
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  BlockRV a = sch.CacheRead(c, 0, "global");
  EXPECT_EQ(sch.Get(a).name, "A_global");
  auto loops = sch.GetLoops(c);
  sch.ComputeAt(a, loops[0]);
  EXPECT_NE(PrintProgram(sch.func()).find("for ax0 in range(8):"), std::string::npos) << PrintProgram(sch.func());
  EXPECT_SAME_RESULT(f, sch);
}

// A block that reads one buffer through several accesses: cache_read
// stages those that move with the same variables as the chosen read, in
// each dimension. A symmetric product's A[j, k] is staged alone, so the
// copy computed under j's loop holds one row, not the rows of i too; a
// stencil's X[i] and X[i + 1] share one copy.
TEST(CacheTest, CacheReadStagesTheReadsThatMoveLikeTheChosenOne) {
  PrimFunc product = ParseWorkloadText("input A: f32[8, 5]\nC[i, j in 8] = sum(k in 5) A[i, k] * A[j, k]\n");
  Schedule sch(product, 0);
  BlockRV c = sch.GetBlock("C");
  ASSERT_EQ(sch.Get(c).reads.size(), 2u);
  BlockRV copy = sch.CacheRead(c, 1, "global");
  std::string text = PrintProgram(sch.func());
  EXPECT_NE(text.find("A[v_i, v_k] * A_global[v_j, v_k]"), std::string::npos) << text;
  sch.ComputeAt(copy, sch.GetLoops(c)[1]);
  text = PrintProgram(sch.func());
  EXPECT_NE(text.find("v0, v1 = T.axis.remap(\"SS\", [j, ax0])"), std::string::npos) << text;
  EXPECT_SAME_RESULT(product, sch);

  PrimFunc stencil = ParseWorkloadText("input X: f32[9]\nY[i in 8] = X[i] + X[i + 1]\n");
  Schedule s2(stencil, 0);
  s2.CacheRead(s2.GetBlock("Y"), 0, "global");
  text = PrintProgram(s2.func());
  EXPECT_NE(text.find("X_global[v_i] + X_global[v_i + 1]"), std::string::npos) << text;
  EXPECT_SAME_RESULT(stencil, s2);
}

// The copies of cache_read and cache_write cover the whole buffer at the
// root, beside the block they serve. When the buffer's producer (or, for a
// write cache, a reader) shares that block's loop nest, the copy would run
// before the producer or after the reader: refused, by name. Found by a
// hunt of random user design spaces, where the program check caught it as
// an "internal error".
TEST(CacheTest, NoWholeBufferCopyAcrossAProducerOrReaderInTheSameNest) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=8,IN=6,OUT=8").func;
  Schedule sch(f, 0);
  BlockRV add = sch.GetBlock("T_add"), mm = sch.GetBlock("T_matmul_NT");
  sch.ComputeAt(mm, sch.GetLoops(add)[1]);
  ExpectRefused(sch, [&] { sch.CacheRead(add, 0, "global"); },
                "cache_read: block 'T_matmul_NT' writes T_matmul_NT in the loop nest of block 'T_add', so a copy of "
                "the whole buffer beside that nest would run before it (stage the read before the compute_at)");
  ExpectRefused(sch, [&] { sch.CacheWrite(mm, 0, "global"); },
                "cache_write: block 'T_add' reads T_matmul_NT in the loop nest of block 'T_matmul_NT', so a copy "
                "of the whole buffer beside that nest would run after it (stage the write before the compute_at)");
  // Bias, produced outside the nest, is staged as before.
  BlockRV bias = sch.CacheRead(add, 1, "global");
  EXPECT_EQ(sch.Get(bias).name, "bias_global");
  EXPECT_SAME_RESULT(f, sch);
  // A reduction's update without its init reads the buffer it updates; a
  // copy made before it would hold none of its sums.
  Schedule split(f, 0);
  BlockRV matmul = split.GetBlock("T_matmul_NT");
  split.DecomposeReduction(matmul, split.GetLoops(matmul)[2]);
  ASSERT_EQ(split.Get(matmul).reads[0].buffer->name, "T_matmul_NT");
  ExpectRefused(split, [&] { split.CacheRead(matmul, 0, "global"); },
                "cache_read: block 'T_matmul_NT_update' updates T_matmul_NT in place, so a copy made before it would "
                "miss its own updates");
}

// pad_einsum: 7 x 9 x 5 becomes 8 x 16 x 8, so that tiles of 4 rows, 16
// columns and 4 reduction steps divide it; the result is unchanged, and the
// instruction replays from its JSON and its script.
TEST(CacheTest, PadEinsumMakesTilesDivideAndKeepsTheResult) {
  PrimFunc f = Matmul(7, 9, 5);
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  sch.PadEinsum(c, {4, 16, 4});
  std::string text = PrintProgram(sch.func());
  for (const char* expected : {"A_pad = T.alloc_buffer((8, 8))", "B_pad = T.alloc_buffer((8, 16))",
                               "C_pad = T.alloc_buffer((8, 16))", "T.block(\"C_unpad\")",
                               "A_pad[v0, v1] = T.if_then_else(v0 < 7 and v1 < 5, A[v0, v1], T.float32(0.0))",
                               "for i, j, k in T.grid(8, 16, 8):"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  EXPECT_SAME_RESULT(f, sch);
  auto loops = sch.GetLoops(c);
  std::vector<LoopRV> i = sch.Split(loops[0], {std::monostate{}, std::int64_t{4}});
  std::vector<LoopRV> k = sch.Split(loops[2], {std::monostate{}, std::int64_t{4}});
  sch.Reorder({i[0], k[0], i[1], k[1], loops[1]});
  BlockRV local = sch.CacheWrite(c, 0, "local");
  sch.ReverseComputeAt(local, i[0], true);
  EXPECT_EQ(PrintProgram(sch.func()).find("T.where"), std::string::npos) << "every split is perfect";
  EXPECT_SAME_RESULT(f, sch);
  EXPECT_NE(sch.trace().AsScript().find("sch.pad_einsum(block=b0, padding=[4, 16, 4])\n"), std::string::npos);
  Schedule replayed = ReplayTrace(f, Trace::FromJsonText(sch.trace().ToJson().dump()), 1);
  EXPECT_TRUE(StructuralEqual(replayed.func(), sch.func()));
  Schedule scripted(f, 1);
  RunScheduleScript(scripted, sch.trace().AsScript());
  EXPECT_TRUE(StructuralEqual(scripted.func(), sch.func()));
}

// A padded reduction adds zeros: a row sum (a single factor read along k)
// and dense_bias_relu's dense layer (whose bias and relu stay outside).
TEST(CacheTest, PadEinsumOfOtherReductions) {
  PrimFunc sum = BuildWorkload("reduce_sum:M=3,N=7").func;
  Schedule s1(sum, 0);
  s1.PadEinsum(s1.GetBlock("A_red"), {4, 8});
  EXPECT_SAME_RESULT(sum, s1);
  PrimFunc dense = BuildWorkload("dense_bias_relu:B=5,IN=7,OUT=18").func;
  Schedule s2(dense, 0);
  s2.PadEinsum(s2.GetBlock("T_matmul_NT"), {4, 16, 4});
  EXPECT_SAME_RESULT(dense, s2);
}

// The copy-back of a padded output's real part goes into the write-back of
// the accumulator as a predicate: the padded output buffer is gone, and the
// write-back writes C only where C exists.
TEST(CacheTest, TheCopyBackOfAPaddedOutputInlinesIntoTheWriteBack) {
  PrimFunc f = Matmul(7, 9, 5);
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  sch.PadEinsum(c, {4, 16, 4});
  auto loops = sch.GetLoops(c);
  std::vector<LoopRV> i = sch.Split(loops[0], {std::monostate{}, std::int64_t{4}});
  BlockRV local = sch.CacheWrite(c, 0, "local");
  sch.ReverseComputeAt(local, i[0], true);
  sch.ReverseComputeInline(sch.GetBlock("C_unpad"));
  std::string text = PrintProgram(sch.func());
  EXPECT_EQ(text.find("C_pad = T.alloc_buffer"), std::string::npos) << text;
  EXPECT_NE(text.find("T.where(i_0 * 4 + ax0 < 7 and ax1 < 9)"), std::string::npos) << text;
  EXPECT_SAME_RESULT(f, sch);
}

TEST(CacheTest, PadEinsumRefusals) {
  PrimFunc f = Matmul(7, 9, 5);
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  ExpectRefused(sch, [&] { sch.PadEinsum(c, {4, 16}); },
                "pad_einsum: block 'C' has 3 iteration variables; padding has 2 entries");
  ExpectRefused(sch, [&] { sch.PadEinsum(c, {4, 0, 4}); }, "pad_einsum: padding 1 is 0; it must be at least 1");
  ExpectRefused(sch, [&] { sch.PadEinsum(c, {7, 1, 5}); }, "pad_einsum: the padding changes no extent of block 'C'");
  ExpectRefused(sch, [&] { sch.PadEinsum(c, {std::int64_t{1} << 40, 1, 1}); },
                "pad_einsum: padding 0 (1099511627776) pads v_i past what its int32 type counts");
  sch.Split(sch.GetLoops(c)[0], {std::monostate{}, std::int64_t{2}});
  ExpectRefused(sch, [&] { sch.PadEinsum(c, {4, 1, 1}); },
                "pad_einsum: iteration variable v_i of block 'C' is not bound to a whole loop of its own "
                "(pad before splitting or moving it)");
  // Padding the max's reduction would take the max with 0.
  PrimFunc softmax = BuildWorkload("softmax:M=3,N=10").func;
  Schedule s2(softmax, 0);
  BlockRV max = s2.GetBlock("T_softmax_maxelem");
  ExpectRefused(s2, [&] { s2.PadEinsum(max, {1, 16}); },
                "pad_einsum: block 'T_softmax_maxelem': padding reduction variable v_k needs an update "
                "out += a * b * ... whose every factor reads with v_k");
  // A convolution reads its input at xx + rx: the terms a padded rx adds
  // would read real input, not zeros.
  PrimFunc conv = BuildWorkload("conv2d_nhwc:N=1,H=5,W=5,CI=3,CO=5,KH=3,KW=3,stride=1,pad=1").func;
  Schedule s3(conv, 0);
  BlockRV out = s3.GetBlock("Conv2dOutput");
  ExpectRefused(s3, [&] { s3.PadEinsum(out, {1, 1, 1, 1, 1, 4, 1}); },
                "pad_einsum: block 'Conv2dOutput': padding reduction variable v_rx needs an update out += a * b * "
                "... whose every factor reads with v_rx");
  // Upsampling reads X at h / 2: no window grows with h.
  PrimFunc upsample = ParseWorkloadText(
      "input X: f32[4, 6]\nY[h in 8, w in 12] = X[h / 2, w / 2]\noutput Y\n");
  Schedule s4(upsample, 0);
  BlockRV y = s4.GetBlock("Y");
  ExpectRefused(s4, [&] { s4.PadEinsum(y, {1, 16}); },
                "pad_einsum: block 'Y' indexes dimension 1 of X with an expression that is not linear in a padded "
                "variable; only a plain variable or a window (c * v + ...) can be padded");
  // Rows read backwards would need the copy padded at their start.
  PrimFunc reversed = ParseWorkloadText("input X: f32[3, 12]\nY[c, w in 12] = X[c, 11 - w]\noutput Y\n");
  Schedule s5(reversed, 0);
  BlockRV r = s5.GetBlock("Y");
  ExpectRefused(s5, [&] { s5.PadEinsum(r, {1, 16}); },
                "pad_einsum: block 'Y' indexes dimension 1 of X backwards along padded variable v_w");
  // A window of stride 2 padded to 2^30 columns would index past int32.
  PrimFunc strided = ParseWorkloadText("input X: f32[3, 9]\nY[c, w in 4] = X[c, 2 * w]\noutput Y\n");
  Schedule s6(strided, 0);
  BlockRV st = s6.GetBlock("Y");
  ExpectRefused(s6, [&] { s6.PadEinsum(st, {1, std::int64_t{1} << 30}); },
                "pad_einsum: block 'Y' indexes dimension 1 of X with a window that the padding would widen past what "
                "its int32 index counts");
}

// A convolution's output columns padded (5 -> 8, the register blocks an
// AVX2 target wants): its input's window xx + rx grows by the 3 added
// columns, read as zeros, and the real outputs are unchanged. With the
// zero-padding stage inlined first (as the design space does), and with a
// stride of 2, whose window grows by 2 per added column.
TEST(CacheTest, PadEinsumWidensAConvolutionsInputWindow) {
  PrimFunc conv = BuildWorkload("conv2d_nhwc:N=1,H=5,W=5,CI=3,CO=5,KH=3,KW=3,stride=1,pad=1").func;
  Schedule sch(conv, 0);
  sch.PadEinsum(sch.GetBlock("Conv2dOutput"), {1, 4, 8, 1, 1, 1, 1});
  std::string text = PrintProgram(sch.func());
  for (const char* expected : {"PaddedInput_pad = T.alloc_buffer((1, 10, 10, 3))", "Conv2dOutput_pad = "
                                                                                  "T.alloc_buffer((1, 8, 8, 5))"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  EXPECT_SAME_RESULT(conv, sch);

  Schedule inlined(conv, 0);
  inlined.ComputeInline(inlined.GetBlock("PaddedInput"));
  inlined.PadEinsum(inlined.GetBlock("Conv2dOutput"), {1, 1, 8, 1, 1, 1, 1});
  EXPECT_NE(PrintProgram(inlined.func()).find("X_pad = T.alloc_buffer((1, 5, 8, 3))"), std::string::npos)
      << PrintProgram(inlined.func());
  EXPECT_SAME_RESULT(conv, inlined);

  PrimFunc strided = BuildWorkload("conv2d_nhwc:N=1,H=9,W=9,CI=2,CO=3,KH=3,KW=3,stride=2,pad=1").func;
  Schedule s2(strided, 0);
  s2.PadEinsum(s2.GetBlock("Conv2dOutput"), {1, 1, 8, 1, 1, 1, 1});  // 5 columns -> 8
  EXPECT_NE(PrintProgram(s2.func()).find("PaddedInput_pad = T.alloc_buffer((1, 11, 17, 2))"), std::string::npos)
      << PrintProgram(s2.func());
  EXPECT_SAME_RESULT(strided, s2);

  // A reduction variable read through a window too, where every factor
  // also reads with it as itself: X's added rows, all zeros, zero the
  // added terms, whatever the window reads. i + k grows by 2 + 3 columns.
  PrimFunc diagonal = ParseWorkloadText(
      "input X: f32[5, 10]\ninput W: f32[5]\nY[i in 6] = sum(k in 5) X[k, i + k] * W[k]\noutput Y\n");
  Schedule s3(diagonal, 0);
  s3.PadEinsum(s3.GetBlock("Y"), {4, 8});
  EXPECT_NE(PrintProgram(s3.func()).find("X_pad = T.alloc_buffer((8, 15))"), std::string::npos)
      << PrintProgram(s3.func());
  EXPECT_SAME_RESULT(diagonal, s3);
}

TEST(ReductionTest, DecomposeReductionRefusals) {
  Schedule sch(Mm(8), 0);
  BlockRV c = sch.GetBlock("C");
  auto loops = sch.GetLoops(c);
  sch.Reorder({loops[2], loops[0], loops[1]});
  ExpectRefused(sch, [&] { sch.DecomposeReduction(c, loops[1]); },
                "decompose_reduction: block 'C' at loop j: loop k above it drives a reduction variable, so the init "
                "would run more than once");
  sch.DecomposeReduction(c, loops[2]);
  ExpectRefused(sch, [&] { sch.DecomposeReduction(c, loops[2]); },
                "decompose_reduction: block 'C_update' at loop k: the block has no init (not a reduction, or already "
                "decomposed)");
}

TEST(ReductionTest, RFactorOfASplitReduction) {
  PrimFunc f = BuildWorkload("reduce_sum:M=4,N=12").func;
  Schedule sch(f, 0);
  BlockRV b = sch.GetBlock("A_red");
  auto loops = sch.GetLoops(b);
  auto k = sch.Split(loops[1], {std::monostate{}, std::int64_t{5}});  // imperfect: 3 x 5 > 12
  BlockRV rf = sch.RFactor(k[1], 0);
  EXPECT_EQ(sch.Get(rf).name, "A_red_rf");
  EXPECT_EQ(sch.Get(b).name, "A_red");  // the original handle names the write-back block
  EXPECT_SAME_RESULT(f, sch);
  // The rf block can be decomposed and computed at the write-back's loop.
  auto wb = sch.GetLoops(b);
  sch.ComputeAt(rf, wb[0], true);
  EXPECT_SAME_RESULT(f, sch);
}

// Jobs and then vector lanes, both rfactored, over a split that does not
// divide the reduction (1009 is prime): the first rfactor guards the value
// the update combines, not the store, so the update stays one store that
// the second rfactor takes; each guard is stated once, not once from the
// split's predicate and again from the variables' ranges.
TEST(ReductionTest, RFactorTwiceOverAnImperfectSplit) {
  for (const char* reduction : {"sum", "max"}) {
    SCOPED_TRACE(reduction);
    PrimFunc f = testing::PrimeLengthDot(reduction);
    Schedule sch(f, 0);
    RunScheduleScript(sch, testing::kJobsThenLanes);
    const std::string text = PrintProgram(sch.func());
    EXPECT_EQ(text.find(" and "), std::string::npos) << text;
    EXPECT_NE(text.find("T.if_then_else("), std::string::npos) << text;
    EXPECT_SAME_RESULT(f, sch);
    BlockRV lanes = sch.GetBlock("S_rf_rf");
    auto loops = sch.GetLoops(lanes);
    sch.DecomposeReduction(lanes, loops[1]);
    sch.Vectorize(loops[2]);
    sch.Parallel(loops[0]);
    EXPECT_SAME_RESULT(f, sch);
  }
}

// A row reduction moved under its consumer's row loop (softmax's max and
// sum, computed row by row) can still be rfactored: the write-back goes
// right after the reduction's own loops, inside the row loop. It used to
// go after the whole row loop, behind its consumer ("internal error: block
// T_softmax_expsum writes T_softmax_expsum after block T_softmax_norm
// reads it").
TEST(ReductionTest, RFactorOfAReductionComputedUnderItsConsumer) {
  PrimFunc f = BuildWorkload("softmax:M=4,N=32").func;
  Schedule sch(f, 0);
  BlockRV norm = sch.GetBlock("T_softmax_norm");
  LoopRV row = sch.GetLoops(norm)[0];
  BlockRV sum = sch.GetBlock("T_softmax_expsum");
  sch.ComputeAt(sum, row, true);
  sch.ComputeAt(sch.GetBlock("T_softmax_exp"), row, true);
  BlockRV max = sch.GetBlock("T_softmax_maxelem");
  sch.ComputeAt(max, row, true);
  for (BlockRV reduction : {sum, max}) {
    auto k = sch.Split(sch.GetLoops(reduction).back(), {std::monostate{}, std::int64_t{8}});
    BlockRV rf = sch.RFactor(k[1], 0);
    EXPECT_EQ(&sch.Get(sch.GetLoops(rf).front()), &sch.Get(row));
    EXPECT_EQ(&sch.Get(sch.GetLoops(reduction).front()), &sch.Get(row));  // the write-back stays in the row
  }
  EXPECT_SAME_RESULT(f, sch);
  // The row loop holds all six blocks, so the whole softmax is one loop.
  EXPECT_EQ(sch.GetChildBlocks(row).size(), 6u);

  // With the block's own row loop moved under its reduction loop, no place
  // after the reduction's loops is outside the rows: refused, unchanged.
  Schedule moved(f, 0);
  BlockRV sum2 = moved.GetBlock("T_softmax_expsum");
  moved.ComputeAt(sum2, moved.GetLoops(moved.GetBlock("T_softmax_norm"))[0], true);
  auto loops = moved.GetLoops(sum2);  // row, its unit loop, k
  auto k = moved.Split(loops[2], {std::monostate{}, std::int64_t{8}});
  moved.Reorder({k[0], loops[1]});
  ExpectRefused(moved, [&] { moved.RFactor(k[1], 0); },
                "rfactor: block 'T_softmax_expsum' at loop " + moved.Get(k[1]).loop_var->name +
                    ": a loop between the consumer's loops and the reduction's own drives its spatial variables, so "
                    "the write-back has no place");
}

// A consumer moved under one of the reduction's loops (it copies the
// partial sums each step) leaves the write-back no place after those
// loops. The property test met this as an "internal error" of the program
// check (a convolution's write cache under its rx loop).
TEST(ReductionTest, RFactorRefusesAReaderInsideTheReductionsLoops) {
  PrimFunc f = ParseWorkloadText("input A: f32[4, 8]\nS[i in 4] = sum(k in 8) A[i, k]\nT[i in 4] = S[i] * 2.0\n");
  Schedule sch(f, 0);
  BlockRV s = sch.GetBlock("S");
  auto k = sch.Split(sch.GetLoops(s)[1], {std::monostate{}, std::int64_t{4}});
  sch.ReverseComputeAt(sch.GetBlock("T"), k[0], true);
  ExpectRefused(sch, [&] { sch.RFactor(k[1], 0); },
                "rfactor: block 'S' at loop k_1: block 'T' reads S inside the reduction's loops, so the write-back "
                "has no place");
  EXPECT_SAME_RESULT(f, sch);
}

TEST(ReductionTest, RFactorRefusals) {
  Schedule sch(Mm(8), 0);
  BlockRV c = sch.GetBlock("C");
  auto loops = sch.GetLoops(c);
  ExpectRefused(sch, [&] { sch.RFactor(loops[0], 0); },
                "rfactor: block 'C' at loop i: the loop must drive reduction variables only");
  ExpectRefused(sch, [&] { sch.RFactor(loops[2], 5); }, "rfactor: factor_axis 5 is out of range for a buffer of rank 2");
}

TEST(LookupTest, BlocksProducersConsumers) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=4,IN=4,OUT=4").func;
  Schedule sch(f, 0);
  BlockRV add = sch.GetBlock("T_add");
  auto producers = sch.GetProducers(add);
  auto consumers = sch.GetConsumers(add);
  ASSERT_EQ(producers.size(), 1u);
  ASSERT_EQ(consumers.size(), 1u);
  EXPECT_EQ(sch.Get(producers[0]).name, "T_matmul_NT");
  EXPECT_EQ(sch.Get(consumers[0]).name, "T_relu");
  EXPECT_EQ(sch.GetChildBlocks(sch.GetBlock("root")).size(), 3u);
  ExpectRefused(sch, [&] { sch.GetBlock("nope"); },
                "get_block: no block named 'nope' (blocks: root, T_matmul_NT, T_add, T_relu)");
  ExpectRefused(sch, [&] { sch.GetBlock("T_add", "other"); },
                "get_block: no function named 'other' (the program's function is 'main')");
}

TEST(SamplingTest, PerfectTileIsDeterministicAndPerfect) {
  PrimFunc f = Matmul(64, 48, 36);
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    Schedule a(f, seed), b(f, seed);
    auto la = a.GetLoops(a.GetBlock("C"));
    auto lb = b.GetLoops(b.GetBlock("C"));
    for (std::size_t l = 0; l < 3; ++l) {
      auto ta = a.SamplePerfectTile(la[l], 4, 8);
      auto tb = b.SamplePerfectTile(lb[l], 4, 8);
      std::int64_t product = 1;
      for (std::size_t i = 0; i < ta.size(); ++i) {
        EXPECT_EQ(a.Get(ta[i]), b.Get(tb[i]));
        product *= a.Get(ta[i]);
      }
      EXPECT_EQ(product, a.Get(la[l]).extent);
      EXPECT_LE(a.Get(ta.back()), 8);
    }
  }
}

TEST(SamplingTest, PerfectTileOfAHugeExtentDoesNotTryEveryNumber) {
  // The largest prime a workload parameter may be (2^40 - 87): its only
  // divisors are 1 and itself, so the innermost tile (at most 64) is 1.
  // Trying every number up to it, as this once did, takes about an hour.
  const std::int64_t prime = (std::int64_t{1} << 40) - 87;
  Schedule sch(Matmul(prime, 1, 1), 0);
  auto loops = sch.GetLoops(sch.GetBlock("C"));
  auto t = sch.SamplePerfectTile(loops[0], 4, 64);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(sch.Get(t[3]), 1);
  std::int64_t product = 1;
  for (const auto& v : t) product *= sch.Get(v);
  EXPECT_EQ(product, prime);
}

TEST(SamplingTest, DecisionsAreRepairedAsTvmDoes) {
  Schedule sch(Matmul(12, 12, 12), 0);
  auto loops = sch.GetLoops(sch.GetBlock("C"));
  // [2, 8] does not fit 12: inner 8 does not divide 12, so it takes all of it.
  auto t = sch.SamplePerfectTile(loops[0], 2, 16, std::vector<std::int64_t>{2, 8});
  EXPECT_EQ(sch.Get(t[0]), 1);
  EXPECT_EQ(sch.Get(t[1]), 12);
  auto u = sch.SamplePerfectTile(loops[1], 3, 16, std::vector<std::int64_t>{9, 2, 3});
  EXPECT_EQ(sch.Get(u[0]), 2);
  EXPECT_EQ(sch.Get(u[1]), 2);
  EXPECT_EQ(sch.Get(u[2]), 3);
  EXPECT_EQ(sch.trace().decisions.at(sch.trace().insts.size() - 1), nlohmann::json({2, 2, 3}));
}

TEST(SamplingTest, CategoricalAndComputeLocation) {
  Schedule sch(BuildWorkload("dense_bias_relu:B=4,IN=4,OUT=4").func, 3);
  std::map<std::int64_t, int> seen;
  for (int i = 0; i < 200; ++i) seen[sch.Get(sch.SampleCategorical({0, 16, 64}, {0.5, 0.5, 0.0}))]++;
  EXPECT_GT(seen[0], 50);
  EXPECT_GT(seen[16], 50);
  EXPECT_EQ(seen.count(64), 0u);
  EXPECT_THROW(sch.SampleCategorical({1, 2}, {1.0}), ScheduleError);
  EXPECT_THROW(sch.SampleCategorical({1, 2}, {0.5, 0.5}, 2), ScheduleError);
  BlockRV add = sch.GetBlock("T_add");
  LoopRV inline_mark = sch.SampleComputeLocation(add, -2);
  EXPECT_TRUE(sch.IsInlineMark(inline_mark));
  LoopRV root_mark = sch.SampleComputeLocation(add, -1);
  EXPECT_TRUE(sch.IsRootMark(root_mark));
  LoopRV loop = sch.SampleComputeLocation(add, 0);
  EXPECT_FALSE(sch.IsRootMark(loop) || sch.IsInlineMark(loop));
  sch.ComputeAt(add, inline_mark);
  EXPECT_EQ(PrintProgram(sch.func()).find("T.block(\"T_add\")"), std::string::npos);
}

// ComputeLocationChoices is what the sampler draws from, and a decision
// replays to the location that drawing it chose: the replay looks only
// for its own location, the draw tries them all.
TEST(SamplingTest, ComputeLocationChoicesAreWhatSamplingDrawsAndReplays) {
  const char* pool = R"(input X: f32[1, 8, 8, 4]
P[n, c, h in 4, w in 4] = sum(r in 2, s in 2) X[n, 2 * h + r, 2 * w + s, c]
Q[n, c, h, w] = P[n, c, h, w] * 0.25
)";
  struct Case {
    PrimFunc func;
    std::string block;
  };
  std::vector<Case> cases = {{BuildWorkload("dense_bias_relu:B=4,IN=4,OUT=8").func, "T_add"},
                             {BuildWorkload("softmax:M=4,N=8").func, "T_softmax_maxelem"},
                             {BuildWorkload("softmax:M=4,N=8").func, "T_softmax_expsum"},
                             {ParseWorkloadText(pool), "P"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.block);
    Schedule base(c.func, 0);
    const std::string before = PrintProgram(base.func());
    const std::vector<std::int64_t> choices = base.ComputeLocationChoices(base.GetBlock(c.block));
    EXPECT_EQ(PrintProgram(base.func()), before);
    EXPECT_EQ(base.trace().insts.size(), 1u);  // only the get_block
    ASSERT_GE(choices.size(), 3u);
    // Drawn: every draw is a choice, every choice is drawn; the program
    // each drawn location gives.
    std::map<std::int64_t, std::string> drawn;
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
      Schedule sch(c.func, seed);
      BlockRV b = sch.GetBlock(c.block);
      LoopRV at = sch.SampleComputeLocation(b);
      const std::int64_t d = sch.trace().decisions.at(sch.trace().insts.size() - 1).get<std::int64_t>();
      EXPECT_NE(std::find(choices.begin(), choices.end(), d), choices.end()) << d;
      sch.ComputeAt(b, at, true);
      drawn.emplace(d, PrintProgram(sch.func()));
    }
    EXPECT_EQ(drawn.size(), choices.size());
    // Replayed: a choice keeps its decision and gives the drawn program;
    // anything else falls back to -1, the block left where it is.
    for (std::int64_t d = -4; d <= choices.back() + 2; ++d) {
      Schedule sch(c.func, 0);
      BlockRV b = sch.GetBlock(c.block);
      LoopRV at = sch.SampleComputeLocation(b, d);
      const bool legal = std::find(choices.begin(), choices.end(), d) != choices.end();
      EXPECT_EQ(sch.trace().decisions.at(1).get<std::int64_t>(), legal ? d : -1) << d;
      if (!legal) continue;
      sch.ComputeAt(b, at, true);
      if (drawn.count(d)) {
        EXPECT_EQ(PrintProgram(sch.func()), drawn.at(d)) << d;
      }
    }
  }
}

// Softmax's exp, read by its sum and its normalization: the design space
// inlines it in designs of its own and keeps it in others for both readers
// to share, so a fresh sample of its location does not offer inlining; a
// trace that chose -2 still replays to the inlined program.
TEST(SamplingTest, AStageReadByTwoIsNotOfferedInlineButReplaysInlined) {
  PrimFunc f = BuildWorkload("softmax:M=4,N=8").func;
  Schedule base(f, 0);
  const std::vector<std::int64_t> choices = base.ComputeLocationChoices(base.GetBlock("T_softmax_exp"));
  ASSERT_FALSE(choices.empty());
  EXPECT_EQ(choices.front(), -1);
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    Schedule sch(f, seed);
    sch.SampleComputeLocation(sch.GetBlock("T_softmax_exp"));
    EXPECT_NE(sch.trace().decisions.at(1).get<std::int64_t>(), -2) << seed;
  }
  Schedule replayed(f, 0);
  BlockRV exp = replayed.GetBlock("T_softmax_exp");
  LoopRV at = replayed.SampleComputeLocation(exp, -2);
  EXPECT_EQ(replayed.trace().decisions.at(1).get<std::int64_t>(), -2);
  replayed.ComputeAt(exp, at, true);
  EXPECT_EQ(PrintProgram(replayed.func()).find("T.block(\"T_softmax_exp\")"), std::string::npos);
}

TEST(ScheduleCopyTest, CopiesAreIndependent) {
  Schedule a(Mm(8), 0);
  BlockRV c = a.GetBlock("C");
  auto loops = a.GetLoops(c);
  Schedule b = a;
  b.Split(loops[0], {std::int64_t{2}, std::int64_t{4}});  // handles work on the copy
  EXPECT_EQ(a.Get(loops[0]).extent, 8);
  EXPECT_NE(PrintProgram(a.func()), PrintProgram(b.func()));
  EXPECT_EQ(a.trace().insts.size() + 1, b.trace().insts.size());
}

}  // namespace
}  // namespace tunedb::ir
