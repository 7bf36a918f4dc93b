// Loop versioning of bounds checks, in the interpreter (the versioned
// program on its own) and through the JIT (which versions every program).
#include "measure/versioning.h"

#include <initializer_list>

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/schedule/schedule.h"
#include "ir/schedule/script.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"
#include "measure/lower.h"
#include "tests/ir/schedule/random_scheduler.h"
#include "tests/measure/test_util.h"

namespace tunedb::measure {
namespace {

using namespace tunedb::ir;

// Vector registers so wide that no check counts as shared by a vector's
// registers: every check that can be versioned is.
constexpr int kVersionEverything = 1 << 20;

std::string VersionedKeepsTheResult(const PrimFunc& workload, const PrimFunc& scheduled, std::uint64_t seed,
                                    int vector_bits) {
  return testing::InterpretedKeepsTheResult(workload, VersionBoundsChecks(Lower(scheduled), vector_bits), seed);
}

std::string CompiledKeepsTheResult(const PrimFunc& workload, const PrimFunc& scheduled, std::uint64_t seed) {
  std::vector<NDArray> expected = MakeArguments(workload, seed), args = expected;
  Interpret(workload, expected);
  std::vector<void*> pointers;
  for (NDArray& a : args) pointers.push_back(a.data());
  Kernel k = SharedJit().Compile(Lower(scheduled));
  k.fn(pointers.data());
  SharedJit().Release(k);
  return testing::CompareOutputs(workload, expected, args);
}

// Expects each of `parts` in the printed program `text`.
void ExpectParts(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* part : parts) EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
}

// How often `what` occurs in `text`.
std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Both of the above, for each seed: the versioned program in the
// interpreter, and the program through the JIT.
void ExpectTheSameResults(const PrimFunc& workload, const PrimFunc& scheduled,
                          std::initializer_list<std::uint64_t> seeds, int vector_bits = 512) {
  for (std::uint64_t seed : seeds) {
    EXPECT_EQ(VersionedKeepsTheResult(workload, scheduled, seed, vector_bits), "") << seed;
    EXPECT_EQ(CompiledKeepsTheResult(workload, scheduled, seed), "") << seed;
  }
}

// The register block of a matmul padded from 31 x 33 x 35 to 32 x 48 x 36
// (pad_einsum), 16 rows by one vector of 16 columns, with B packed: a tuned
// schedule of 127 x 129 x 131 at a small shape.
const char* kPaddedMatmul = R"(
b0 = sch.get_block("C")
sch.pad_einsum(b0, padding=[4, 16, 4])
b1 = sch.get_block("C")
i, j, k = sch.get_loops(b1)
i0, i1, i2, i3 = sch.split(i, factors=[2, 1, 1, 16])
j0, j1, j2, j3 = sch.split(j, factors=[3, 1, 1, 16])
k0, k1 = sch.split(k, factors=[9, 4])
sch.reorder(j0, i0, i1, j1, k0, i2, j2, k1, i3, j3)
c = sch.cache_write(b1, 0, "local")
sch.reverse_compute_at(c, j1, preserve_unit_loops=True)
p = sch.cache_read(b1, 1, "global")
sch.compute_at(p, j0, preserve_unit_loops=True)
sch.reverse_compute_inline(sch.get_block("C_unpad"))
sch.compute_inline(sch.get_block("A_pad"))
sch.compute_inline(sch.get_block("B_pad"))
sch.decompose_reduction(b1, k0)
sch.parallel(j0)
q0, a0, a1 = sch.get_loops(sch.get_block("B_pad_global"))
sch.vectorize(a1)
sch.vectorize(j3)
w0, w1, w2, w3, w4, w5 = sch.get_loops(c)
sch.vectorize(w5)
)";

TEST(VersioningTest, APaddedRegisterBlockGetsACopyWithoutChecks) {
  PrimFunc f = BuildWorkload("matmul:M=31,N=33,K=35").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, kPaddedMatmul);
  PrimFunc versioned = VersionBoundsChecks(Lower(sch.func()), 512);
  std::string text = PrintProgram(versioned);
  // Rows and columns of one block, then the reduction's last 4 steps: per
  // step of its outer loop, 1 of whose 9 steps is at the edge.
  EXPECT_NE(text.find("if i_0 * 16 - 31 < -15 and j_0 * 16 - 33 < -15:"), std::string::npos) << text;
  // ... inside the copy without row and column checks only: the checked
  // copy, at the edges, is not versioned again.
  std::size_t k_check = text.find("if k_0 * 4 - 35 < -3:");
  EXPECT_NE(k_check, std::string::npos) << text;
  EXPECT_EQ(text.find("if k_0 * 4 - 35 < -3:", k_check + 1), std::string::npos) << text;
  // The copy for the inside of the matrices reads A without a check.
  EXPECT_NE(text.find("= C_pad_local[i_2 * 256 + i_3 * 16 + j_2 * 16 + j_3] + A["), std::string::npos) << text;
  ExpectTheSameResults(f, sch.func(), {1, 2, 3});
}

// Four rows by 64 lanes: one check of a row serves four vector registers'
// multiply-adds, and a copy of the block without it would cost compile time
// for nothing. The checks that differ between lanes (B's and the
// write-back's last columns) are still versioned: with them the loops are
// scalar code.
TEST(VersioningTest, AChecksSharedByAWideVectorStays) {
  PrimFunc f = BuildWorkload("matmul:M=31,N=127,K=35").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b0 = sch.get_block("C")
sch.pad_einsum(b0, padding=[4, 64, 4])
b1 = sch.get_block("C")
i, j, k = sch.get_loops(b1)
i0, i1 = sch.split(i, factors=[8, 4])
j0, j1 = sch.split(j, factors=[2, 64])
sch.reorder(j0, i0, k, i1, j1)
c = sch.cache_write(b1, 0, "local")
sch.reverse_compute_at(c, i0, preserve_unit_loops=True)
sch.reverse_compute_inline(sch.get_block("C_unpad"))
sch.compute_inline(sch.get_block("A_pad"))
sch.compute_inline(sch.get_block("B_pad"))
sch.decompose_reduction(b1, k)
sch.vectorize(j1)
w0, w1, w2, w3 = sch.get_loops(c)
sch.vectorize(w3)
)");
  PrimFunc lowered = Lower(sch.func());
  std::string before = PrintProgram(lowered), after = PrintProgram(VersionBoundsChecks(lowered, 512));
  const std::string unchecked_a = "+ A[i_0 * 140 + i_1 * 35 + k] *";
  EXPECT_EQ(Count(before, "C[i_0 * 508"), 1u) << before;
  EXPECT_EQ(Count(after, "C[i_0 * 508"), 2u) << after;  // the last 64 columns apart
  EXPECT_EQ(Count(after, unchecked_a), 0u) << after;
  EXPECT_EQ(VersionedKeepsTheResult(f, sch.func(), 4, 512), "");
  // With registers as wide as the loop, the rows and the reduction are
  // versioned too.
  std::string wide = PrintProgram(VersionBoundsChecks(lowered, 2048));
  EXPECT_NE(Count(wide, unchecked_a), 0u) << wide;
  EXPECT_EQ(VersionedKeepsTheResult(f, sch.func(), 4, 2048), "");
}

// Convolutions check their zero border from both sides (1 <= h + kh - 1 <
// 7 + 1), and the checks use loops outside and inside the versioned one.
TEST(VersioningTest, AConvolutionsBorderFromBothSides) {
  PrimFunc f = BuildWorkload("conv2d_nhwc:N=1,H=7,W=9,CI=3,CO=16,KH=3,KW=3,stride=1,pad=1").func;
  Schedule sch(f, 0);
  RunScheduleScript(sch, testing::kPaddedConvRegisterBlock);
  std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), kVersionEverything));
  EXPECT_NE(text.find("if yy + ry - 1 >= 0 and yy + ry - 8 < 0:"), std::string::npos) << text;
  ExpectTheSameResults(f, sch.func(), {5, 6}, kVersionEverything);
}

// A concatenation along rows of 8 lanes: its check's break point on the
// loop of vectors is a constant, and the loop's range is split there: A
// alone where every lane takes A, B alone where every lane takes B, and
// both sides masked in the one vector across the seam.
TEST(VersioningTest, AConcatenationGetsARangeForEachSide) {
  PrimFunc f = ParseWorkloadText("input A: f32[4, 20]\ninput B: f32[4, 28]\n"
                                 "Y[i, j in 48] = j < 20 ? A[i, j] : B[i, j - 20]\n");
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
i, j = sch.get_loops(sch.get_block("Y"))
j0, j1 = sch.split(j, factors=[None, 8])
sch.vectorize(j1)
)");
  std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
  ExpectParts(text, {"Y[i * 48 + j_0 * 8 + j_1] = A[i * 20 + j_0 * 8 + j_1]",
                     "Y[i * 48 + j_0 * 8 + j_1 + 24] = B[i * 28 + j_0 * 8 + j_1 + 4]"});
  // The vector across the seam, a range of one, selects by its lanes alone.
  EXPECT_NE(text.find("Y[i * 48 + j_1 + 16] = T.if_then_else(j_1 + 16 < 20,"), std::string::npos) << text;
  ExpectTheSameResults(f, sch.func(), {1, 2});
}

// The same seam under a parallel loop of vectors, whose range stays whole
// (its iterations are the threads' jobs): that loop is versioned around its
// lanes instead, with a copy for each side.
TEST(VersioningTest, AParallelConcatenationGetsACopyForEachSide) {
  PrimFunc f = ParseWorkloadText("input A: f32[20]\ninput B: f32[28]\n"
                                 "Y[j in 48] = j < 20 ? A[j] : B[j - 20]\n");
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
j, = sch.get_loops(sch.get_block("Y"))
j0, j1 = sch.split(j, factors=[None, 8])
sch.parallel(j0)
sch.vectorize(j1)
)");
  std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
  ExpectParts(text, {"if j_0 * 8 - 20 < -7:",
                     "if j_0 * 8 - 20 >= 0:",
                     "Y[j_0 * 8 + j_1] = A[j_0 * 8 + j_1]",
                     "Y[j_0 * 8 + j_1] = B[j_0 * 8 + j_1 - 20]"});
  ExpectTheSameResults(f, sch.func(), {1, 2});
}

// A causal mask on a plain store, `j <= i ? exp(...) : 0`, moves with the
// rows: at the row's loop only the last row holds it throughout. It is
// versioned around each vector of lanes instead, also in an unrolled loop:
// a vector below the diagonal runs unmasked, one above it stores zeros,
// and the one across it stays masked (causal softmax's exp: 0.18 ms, 0.12
// versioned so; bench/RESULTS.md, session 79). An accumulator with the
// same mask is left as it was: branches between the unrolled rows of a
// register block would break it up.
TEST(VersioningTest, ADiagonalMaskOfAStoreIsVersionedAroundEachVector) {
  PrimFunc f = ParseWorkloadText("input S: f32[40, 64]\nE[i, j] = j <= i ? exp(S[i, j]) : 0.0\n");
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
i, j = sch.get_loops(sch.get_block("E"))
j0, j1 = sch.split(j, factors=[None, 16])
sch.unroll(j0)
sch.vectorize(j1)
)");
  std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
  ExpectParts(text, {"if j_0 * 16 - i <= -15:", "E[i * 64 + j_0 * 16 + j_1] = T.exp(S[i * 64 + j_0 * 16 + j_1])",
                     "if j_0 * 16 - i > 0:", "E[i * 64 + j_0 * 16 + j_1] = T.float32(0.0)"});
  ExpectTheSameResults(f, sch.func(), {1, 2});

  PrimFunc sum = ParseWorkloadText(
      "input A: f32[8, 6]\ninput B: f32[6, 32]\nC[i, j in 32] = sum(k in 6) j <= i * 4 ? A[i, k] * B[k, j] : 0.0\n");
  Schedule tiled(sum, 0);
  RunScheduleScript(tiled, R"(
c = sch.get_block("C")
i, j, k = sch.get_loops(c)
i0, i1 = sch.split(i, factors=[None, 4])
sch.reorder(i0, k, i1, j)
sch.unroll(i1)
sch.vectorize(j)
)");
  text = PrintProgram(VersionBoundsChecks(Lower(tiled.func()), 512));
  EXPECT_EQ(text.find("if j"), std::string::npos) << text;
  ExpectTheSameResults(sum, tiled.func(), {1, 2});
}

// Reflect padding checks each row and each element from both sides, and no
// copy holds both checks of one side: the loops' ranges are split where the
// checks change instead, each range with its checks decided, and no select
// is left (rows of 5 + 3 + 3: 2 x 3 ranges of rows, each of 3 ranges).
TEST(VersioningTest, ReflectPaddingSplitsTheRangesWhereItsChecksChange) {
  PrimFunc f = ParseWorkloadText(
      "input X: f32[2, 6, 5]\n"
      "Y[c, h in 12, w in 11] = X[c, h < 3 ? 3 - h : (h >= 9 ? 13 - h : h - 3),"
      " w < 3 ? 3 - w : (w >= 8 ? 11 - w : w - 3)]\n");
  Schedule sch(f, 0);
  PrimFunc lowered = Lower(sch.func());
  std::string before = PrintProgram(lowered), text = PrintProgram(VersionBoundsChecks(lowered, 512));
  EXPECT_NE(before.find("if_then_else"), std::string::npos) << before;
  EXPECT_EQ(text.find("if_then_else"), std::string::npos) << text;
  EXPECT_EQ(text.find("if "), std::string::npos) << text;
  // The rows in the middle read X's row h, their middle elements X's w.
  ExpectParts(text, {"for h in range(6):", "for w in range(5):"});
  ExpectTheSameResults(f, sch.func(), {1, 2});
}

// Checks of each comparison, with the loop's variable on either side and a
// negative coefficient, change at 5, 9 and 13: four ranges. A fifth would be
// one copy too many, and the loop stays checked.
TEST(VersioningTest, ALoopSplitsAtTheBreakPointsOfEachComparison) {
  const std::string four = "input A: f32[16]\n"
                           "Y[i in 16] = i <= 4 ? A[i] : (15 - i > 6 ? A[i] * 2 : (13 <= i ? A[i] + 1 : A[i] - 1))\n";
  const std::string five = "input A: f32[16]\n"
                           "Y[i in 16] = i <= 4 ? A[i] : (15 - i > 6 ? A[i] * 2 : (13 <= i ? A[i] + 1 : "
                           "(i < 11 ? A[i] - 1 : A[i] * 3)))\n";
  for (const std::string& source : {four, five}) {
    PrimFunc f = ParseWorkloadText(source);
    Schedule sch(f, 0);
    std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
    if (source == four) {
      EXPECT_EQ(text.find("if_then_else"), std::string::npos) << text;
      for (const char* range : {"for i in range(5):", "for i in range(4):"}) {
        EXPECT_NE(text.find(range), std::string::npos) << range << "\n" << text;
      }
    } else {
      EXPECT_NE(text.find("for i in range(16):"), std::string::npos) << text;
    }
    ExpectTheSameResults(f, sch.func(), {3, 4});
  }
}

// A masked sum C[i, j] = sum(k) ... * B[k, j] in rows of 8 by steps of
// 4, each step's rows inside it.
const char* kRowsInSteps = R"(
b = sch.get_block("C")
i, j, k = sch.get_loops(b)
i0, i1 = sch.split(i, factors=[None, 8])
k0, k1 = sch.split(k, factors=[None, 4])
sch.reorder(i0, k0, i1, k1, j)
sch.decompose_reduction(b, k0)
)";

// A band of n x n, 4 steps of k either side of the diagonal, times B.
PrimFunc BandedProduct(int n) {
  const std::string size = std::to_string(n);
  return ParseWorkloadText("input A: f32[" + size + ", " + size + "]\ninput B: f32[" + size + ", 8]\nC[i, j] = sum(k in " +
                           size + ") k >= i - 4 && k <= i + 4 ? A[i, k] * B[k, j] : 0.0\n");
}

// A triangular matrix's product adds masked terms, zero above the
// diagonal: a step of the reduction's outer loop whose k are all past the
// block's last row is skipped, without a copy. A mask whose other side is
// not zero does work there, and stays; a band's two sides are both skipped.
TEST(VersioningTest, AMaskedSumSkipsTheStepsWhereItsMaskFails) {
  const char* schedule = kRowsInSteps;
  for (const char* masked : {"0.0", "1.0"}) {
    PrimFunc f = ParseWorkloadText(std::string("input A: f32[24, 24]\ninput B: f32[24, 8]\n"
                                               "C[i, j] = sum(k in 24) k <= i ? A[i, k] * B[k, j] : ") +
                                   masked + "\n");
    Schedule sch(f, 0);
    RunScheduleScript(sch, schedule);
    std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
    const bool skipped = text.find("if not k_0 * 4 - i_0 * 8 > 7:") != std::string::npos;
    EXPECT_EQ(skipped, std::string(masked) == "0.0") << text;
    ExpectTheSameResults(f, sch.func(), {1, 2});
  }
  // A band: the steps before it and those after it are both skipped.
  PrimFunc band = BandedProduct(24);
  Schedule sch(band, 0);
  RunScheduleScript(sch, schedule);
  std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
  std::size_t guards = 0;
  for (std::size_t at = text.find("if not "); at != std::string::npos; at = text.find("if not ", at + 1)) ++guards;
  EXPECT_EQ(guards, 2u) << text;
  ExpectTheSameResults(band, sch.func(), {1, 2});
}

// A loop of 16 iterations or more whose only statement is an if on its
// own variable, the rest fixed in the loop, gets it as `if x < T`, which
// code generation runs as two loops: a band's skips below and above it,
// the first range empty. Shorter loops (the band's above, of 6 steps),
// which LLVM unrolls whole, keep their if as it was.
TEST(VersioningTest, ALoopWhoseOnlyStatementIsAnIfOnItsVariableGetsAThreshold) {
  PrimFunc band = BandedProduct(96);
  Schedule sch(band, 0);
  RunScheduleScript(sch, kRowsInSteps);
  std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
  EXPECT_EQ(Count(text, "if not "), 0u) << text;
  EXPECT_EQ(Count(text, "if k_0 < i_0 * 2 + 3:"), 1u) << text;
  EXPECT_EQ(Count(text, "if k_0 < i_0 * 2 - 1:\n                    T.evaluate(0)\n"), 1u) << text;
  ExpectTheSameResults(band, sch.func(), {1, 2});
}

// A triangular matrix's product in register blocks of 4 rows by 64 lanes,
// four vector registers: one check of `k <= i` serves them all, but as a
// mask of the product it keeps each register's multiply from fusing into
// its add. So the steps of k at or below the block's first row get a copy
// without it, inside the guard that skips the steps past its last row; a
// mask of a factor, which fuses, stays shared (and skips nothing: zero
// times an infinite B is not zero).
TEST(VersioningTest, AMaskedProductInWideVectorsGetsACopyWithoutItsMask) {
  const char* schedule = R"(
b = sch.get_block("C")
i, j, k = sch.get_loops(b)
i0, i1 = sch.split(i, factors=[16, 4])
k0, k1 = sch.split(k, factors=[16, 4])
sch.reorder(i0, k0, k1, i1, j)
sch.decompose_reduction(b, k0)
sch.vectorize(j)
)";
  const char* kInputs = "input A: f32[64, 64]\ninput B: f32[64, 64]\n";
  PrimFunc product = ParseWorkloadText(std::string(kInputs) + "C[i, j] = sum(k in 64) k <= i ? A[i, k] * B[k, j] : 0.0\n");
  PrimFunc factor = ParseWorkloadText(std::string(kInputs) + "C[i, j] = sum(k in 64) (k <= i ? A[i, k] : 0.0) * B[k, j]\n");
  for (const bool masked_product : {true, false}) {
    const PrimFunc& f = masked_product ? product : factor;
    Schedule sch(f, 0);
    RunScheduleScript(sch, schedule);
    std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
    // The skip, then the copy, as thresholds of k_0 (ThresholdLoops).
    EXPECT_EQ(Count(text, "if k_0 < i_0 + 1:"), masked_product ? 1u : 0u) << text;
    EXPECT_EQ(Count(text, "if k_0 < i_0:"), masked_product ? 1u : 0u) << text;
    EXPECT_EQ(Count(text, "] + A[i_0 * 256 + i_1 * 64 + k_0 * 4 + k_1] * B["), masked_product ? 1u : 0u) << text;
    ExpectTheSameResults(f, sch.func(), {1, 2});
  }
  // With 62 steps of k in 16 x 4, a predicate on k stays in the register
  // block's loops, and would stay in the copy too: a branch there kept a
  // transposed convolution's accumulators in memory. No copy is made.
  PrimFunc uneven = ParseWorkloadText("input A: f32[64, 62]\ninput B: f32[62, 64]\n"
                                      "C[i, j] = sum(k in 62) k <= i ? A[i, k] * B[k, j] : 0.0\n");
  Schedule sch(uneven, 0);
  RunScheduleScript(sch, schedule);
  std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
  EXPECT_EQ(Count(text, "if_then_else(k_0 * 4 + k_1 <= i_0 * 4 + i_1, A["), 1u) << text;
  EXPECT_EQ(Count(text, "if k_0 * 4 - i_0 * 4 <= -3:"), 0u) << text;
  ExpectTheSameResults(uneven, sch.func(), {1, 2});
}

// A symmetric product's mask, `j <= i`, moves with no step of its
// reduction: the blocks above the diagonal skip their whole loop of k, the
// ones below get a copy without the mask, and in that copy no skip is left
// (a guard per row inside the steps of k, as the skips were before, kept
// the accumulators in memory: 9.1 ms where the same schedule unmasked ran
// 1.26 ms).
TEST(VersioningTest, ASymmetricProductSkipsItsBlocksAboveTheDiagonalWhole) {
  PrimFunc f = ParseWorkloadText("input A: f32[32, 16]\n"
                                 "C[i, j in 32] = sum(k in 16) j <= i ? A[i, k] * A[j, k] : 0.0\n");
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b = sch.get_block("C")
i, j, k = sch.get_loops(b)
i0, i1 = sch.split(i, factors=[4, 8])
j0, j1 = sch.split(j, factors=[4, 8])
sch.reorder(i0, j0, k, i1, j1)
sch.decompose_reduction(b, k)
sch.vectorize(j1)
)");
  std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
  EXPECT_EQ(Count(text, "if not j_0 * 8 - i_0 * 8 > 7:"), 1u) << text;
  EXPECT_EQ(Count(text, "if not "), 1u) << text;
  EXPECT_EQ(Count(text, "if j_0 * 8 - i_0 * 8 <= -7:"), 1u) << text;
  EXPECT_EQ(Count(text, "] + A[i_0 * 128 + i_1 * 16 + k] * A["), 1u) << text;
  ExpectTheSameResults(f, sch.func(), {1, 2});
}

// A transposed 4 x 4 convolution of stride 2, written as a gather: an
// output row reads input row (h + 1 - kh) / 2 where (h + 1 - kh) % 2 == 0,
// so three quarters of its terms are masked to zero.
const char* kTransposedConvolution =
    "input X: f32[3, 5, 5]\n"
    "input W: f32[3, 4, 4, 4]\n"
    "Y[co in 4, h in 10, w in 10] = sum(ci in 3, kh in 4, kw in 4) (h + 1 - kh) % 2 == 0 && (w + 1 - kw) % 2 == 0"
    " && h + 1 - kh >= 0 && h + 1 - kh < 10 && w + 1 - kw >= 0 && w + 1 - kw < 10"
    " ? X[ci, (h + 1 - kh) / 2, (w + 1 - kw) / 2] * W[ci, co, kh, kw] : 0.0\n";

// Rows and columns in tiles of 2 under the kernel's loops, as a tuned
// schedule has them: the loops of kh, kw and the tiles' rows and columns,
// each unrolled by 2, see one parity each. The tests fold, the copies where
// they fail add zero and are gone, and the input is read at affine rows and
// columns: of the 16 parities of (kh, kw, h, w) in a tile, 4 are left.
TEST(VersioningTest, AStridedGatherIsUnrolledByItsStrideAndItsMaskedCopiesDropped) {
  PrimFunc f = ParseWorkloadText(kTransposedConvolution);
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b = sch.get_block("Y")
co, h, w, ci, kh, kw = sch.get_loops(b)
h0, h1 = sch.split(h, factors=[5, 2])
w0, w1 = sch.split(w, factors=[5, 2])
sch.reorder(co, h0, w0, ci, kh, kw, h1, w1)
sch.decompose_reduction(b, ci)
)");
  PrimFunc lowered = Lower(sch.func());
  std::string before = PrintProgram(lowered), text = PrintProgram(VersionBoundsChecks(lowered, 512));
  EXPECT_EQ(Count(before, "% 2"), 2u) << before;
  EXPECT_EQ(Count(text, "% 2"), 0u) << text;
  EXPECT_EQ(Count(text, "//"), 0u) << text;
  ExpectParts(text, {"for kh in range(2):", "for kw in range(2):"});
  ExpectTheSameResults(f, sch.func(), {1, 2});
}

// Where a parity is a parallel loop's, a copy of the loop inside is
// guarded by it: the copy runs for the rows whose parity it needs. A unit
// loop inside (h's split's factor of 1) is at 0 there and decides nothing.
// An odd extent leaves its last iteration a copy of its own.
TEST(VersioningTest, AParityOfAnOuterLoopGuardsTheCopiesAndAnOddExtentKeepsItsLast) {
  PrimFunc f = ParseWorkloadText(
      "input X: f32[3, 5, 5]\n"
      "input W: f32[3, 4, 3, 3]\n"
      "Y[co in 4, h in 9, w in 9] = sum(ci in 3, kh in 3, kw in 3) (h + 1 - kh) % 2 == 0 && (w + 1 - kw) % 2 == 0"
      " && h + 1 - kh >= 0 && h + 1 - kh < 10 && w + 1 - kw >= 0 && w + 1 - kw < 10"
      " ? X[ci, (h + 1 - kh) / 2, (w + 1 - kw) / 2] * W[ci, co, kh, kw] : 0.0\n");
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b = sch.get_block("Y")
co, h, w, ci, kh, kw = sch.get_loops(b)
h0, h1 = sch.split(h, factors=[9, 1])
sch.reorder(h0, co, ci, kh, h1, w, kw)
sch.parallel(h0)
sch.decompose_reduction(b, ci)
)");
  std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
  ExpectParts(text, {"if (h_0 + 1) % 2 == 0:", "if h_0 % 2 == 0:"});
  EXPECT_EQ(text.find("T.if_then_else((h"), std::string::npos) << text;
  EXPECT_EQ(text.find("T.bool(True)"), std::string::npos) << text;  // the checks decided are folded
  ExpectTheSameResults(f, sch.func(), {1, 2});
}

// Unrolled, a select that is not a sum's mask saves a select and costs a
// copy, which LLVM's own unrolling makes where it pays: an interleave keeps
// its loop. So does a product with a masked factor, `select(m, X, 0.0) *
// W`: zero times an infinite W is not zero, so its copies would drop no
// work (an inlined zero insertion ran 0.36 ms unrolled, 0.41 ms).
TEST(VersioningTest, ATestThatMasksNoTermOfASumIsNotUnrolled) {
  const char* interleave = "input A: f32[4, 7]\ninput B: f32[4, 7]\n"
                           "Y[i, k in 13] = k % 2 == 0 ? A[i, k / 2] : B[i, k / 2]\n";
  const char* product = "input X: f32[4, 7]\ninput W: f32[4, 3]\n"
                        "Y[i, t in 12] = sum(k in 3) (t + k) % 2 == 0 ? X[i, (t + k) / 2] * W[i, k] : 0.0\n"
                        "Z[i, t in 12] = sum(k in 3) ((t + k) % 2 == 0 ? X[i, (t + k) / 2] : 0.0) * W[i, k]\n";
  PrimFunc f = ParseWorkloadText(interleave);
  Schedule sch(f, 0);
  std::string text = PrintProgram(VersionBoundsChecks(Lower(sch.func()), 512));
  ExpectParts(text, {"for i, k in T.grid(4, 13):", "if_then_else(k % 2 == 0"});
  ExpectTheSameResults(f, sch.func(), {1, 2});
  PrimFunc g = ParseWorkloadText(product);
  Schedule masked(g, 0);
  RunScheduleScript(masked, R"(
y = sch.get_block("Y")
i, t, k = sch.get_loops(y)
sch.decompose_reduction(y, k)
z = sch.get_block("Z")
i, t, k = sch.get_loops(z)
sch.decompose_reduction(z, k)
)");
  text = PrintProgram(VersionBoundsChecks(Lower(masked.func()), 512));
  // Y's mask covers its term: its loop of k is three copies, each guarded
  // by t's parity. Z's mask does not, and Z keeps its loop.
  ExpectParts(text, {"if t % 2 == 0:", "if (t + 1) % 2 == 0:", "if_then_else((t + k) % 2 == 0, X"});
  ExpectTheSameResults(g, masked.func(), {1, 2});
}

// Random schedules leave checks of every kind (split predicates, inlined
// padding, reductions of uneven tiles); every one that can be versioned is.
TEST(VersioningTest, RandomSchedulesComputeTheSame) {
  const char* specs[] = {"matmul:M=13,N=10,K=7", "dense_bias_relu:B=6,IN=10,OUT=5",
                         "conv2d_nhwc:N=1,H=6,W=5,CI=3,CO=4,KH=3,KW=3,stride=1,pad=1",
                         "depthwise_conv2d_nhwc:N=1,H=7,W=6,C=3,KH=3,KW=3,stride=2,pad=1", "softmax:M=5,N=12",
                         "batch_matmul:B=2,M=6,N=5,K=5"};
  std::vector<std::pair<std::string, PrimFunc>> workloads;
  for (const char* spec : specs) workloads.emplace_back(spec, BuildWorkload(spec).func);
  // Loops whose ranges split (reflect padding) and masked sums that skip
  // steps (a triangular product).
  workloads.emplace_back("reflect", ParseWorkloadText("input X: f32[2, 6, 5]\n"
                                                      "Y[c, h in 10, w in 9] = X[c, h < 2 ? 2 - h : (h >= 8 ? 12 - h : "
                                                      "h - 2), w < 2 ? 2 - w : (w >= 7 ? 10 - w : w - 2)]\n"));
  workloads.emplace_back("trmm", ParseWorkloadText("input A: f32[12, 12]\ninput B: f32[12, 6]\n"
                                                   "C[i, j] = sum(k in 12) k <= i ? A[i, k] * B[k, j] : 0.0\n"));
  // Loops unrolled by a residue test's modulus (a strided gather).
  workloads.emplace_back("transposed convolution", ParseWorkloadText(kTransposedConvolution));
  int versioned = 0, programs = 0;
  for (const auto& [spec, f] : workloads) {
    for (std::uint64_t seed = 0; seed < 16; ++seed) {
      Schedule sch(f, seed);
      ir::testing::RandomScheduler random(sch, seed);
      random.Steps(10);
      ASSERT_EQ(VersionedKeepsTheResult(f, sch.func(), seed, kVersionEverything), "")
          << spec << " seed " << seed << "\n" << sch.trace().AsScript();
      PrimFunc lowered = Lower(sch.func());
      ++programs;
      if (PrintProgram(VersionBoundsChecks(lowered, kVersionEverything)) != PrintProgram(lowered)) ++versioned;
    }
  }
  // Not a test of nothing: a fair share of the programs had a version.
  EXPECT_GE(versioned * 2, programs) << versioned << " of " << programs;
}

}  // namespace
}  // namespace tunedb::measure
