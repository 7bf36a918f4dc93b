#include "search/space.h"

#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "ir/json.h"
#include "ir/printer.h"
#include "ir/schedule/script.h"
#include "ir/structural.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"
#include "measure/lower.h"
#include "search/mutator.h"
#include "search/rules/rules.h"
#include "search/space_internal.h"
#include "tests/ir/schedule/schedule_test_util.h"

namespace tunedb::search {
namespace {

// Small shapes of every built-in workload, so the interpreter is quick.
const char* kSmallWorkloads[] = {
    "matmul:M=16,N=24,K=8",
    "matmul:M=19,N=21,K=7",  // padded variants (pad_einsum)
    "batch_matmul:B=2,M=8,N=16,K=12",
    "dense_bias_relu:B=8,IN=12,OUT=16",
    "dense_bias_relu:B=7,IN=9,OUT=18",
    "dense_bias_relu:B=3,IN=80,OUT=10",  // matrix-vector variant (vector rfactor)
    "dense_bias_relu:B=16,IN=24,OUT=40",  // lanes along the batch
    "dense:B=24,IN=16,OUT=56",            // lanes along the batch, a vector and a half
    "conv2d_nhwc:N=1,H=6,W=6,CI=4,CO=8,KH=3,KW=3,stride=1,pad=1",
    "conv2d_nhwc:N=1,H=4,W=4,CI=3,CO=18,KH=3,KW=3,stride=1,pad=1",  // channels padded
    "conv2d_nhwc:N=1,H=9,W=9,CI=4,CO=16,KH=3,KW=3,stride=2,pad=1",  // kw slides two apart
    "conv2d_nhwc:N=1,H=4,W=10,CI=2,CO=64,KH=3,KW=3,stride=1,pad=1",  // rows of w and of h
    "batch_matmul:B=2,M=5,N=17,K=3",
    "depthwise_conv2d_nhwc:N=1,H=6,W=6,C=8,KH=3,KW=3,stride=2,pad=1",
    "softmax:M=4,N=16",
    "softmax:M=2,N=96",
    "reduce_sum:M=2,N=256",
    "reduce_sum:M=48,N=128",
};

TEST(DesignSpace, MatmulHasSevenTilingVariants) {
  // A local accumulator at level 2 or 1, each with B (the operand read as
  // vectors) packed per outer tile and without packing; then the two with A
  // packed; no write cache last. A cold search measures them in this order.
  ir::Workload w = ir::BuildWorkload("matmul:M=64,N=64,K=64");
  SpaceOptions o;
  o.cores = 2;
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, o);
  ASSERT_EQ(spaces.size(), 7u);
  int packed = 0;
  for (const ir::Trace& t : spaces) packed += t.AsScript().find("cache_read") != std::string::npos;
  EXPECT_EQ(packed, 4);
  for (const ir::Trace& t : spaces) {
    std::string script = t.AsScript();
    EXPECT_NE(script.find("sample_perfect_tile"), std::string::npos) << script;
    EXPECT_NE(script.find("meta_schedule.unroll_explicit"), std::string::npos) << script;
  }
  auto has = [&](std::size_t v, const char* text) { return spaces[v].AsScript().find(text) != std::string::npos; };
  EXPECT_TRUE(has(0, "cache_write") && has(0, "cache_read(block=b1, read_buffer_index=1"));
  EXPECT_TRUE(has(1, "cache_write") && !has(1, "cache_read"));
  EXPECT_TRUE(has(2, "cache_read(block=b1, read_buffer_index=1"));
  EXPECT_TRUE(has(3, "reverse_compute_at") && !has(3, "cache_read"));
  EXPECT_TRUE(has(4, "cache_read(block=b1, read_buffer_index=0") && has(5, "read_buffer_index=0"));
  EXPECT_FALSE(has(6, "cache_write"));
  // Level 2 first: the accumulator under the second spatial tile level.
  EXPECT_NE(spaces[0].AsScript().find("reverse_compute_at(block=b25, loop=l18"), std::string::npos)
      << spaces[0].AsScript();
}

// Extents without whole vectors or rows (primes) get the variants with a
// write cache once more on the padded block: 19 x 21 x 7 is tiled as 20 x 32
// x 8, with a register block of 5 rows and 2 whole vectors. The inputs are
// padded where they are read (in a packing, or in the tiled block), not
// copied, and the real part of the output is written by the accumulator's
// write-back.
TEST(DesignSpace, AnAwkwardShapeGetsPaddedVariants) {
  ir::Workload w = ir::BuildWorkload("matmul:M=19,N=21,K=7");
  SpaceOptions o;
  o.cores = 2;
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, o);
  ASSERT_EQ(spaces.size(), 13u);
  int padded = 0;
  for (const ir::Trace& t : spaces) {
    std::string script = t.AsScript();
    if (script.find("sch.pad_einsum(block=b1, padding=[4, 16, 4])") == std::string::npos) continue;
    ++padded;
    EXPECT_NE(script.find("decision=[1, 4, 1, 5]"), std::string::npos) << script;   // rows: 20
    EXPECT_NE(script.find("decision=[1, 1, 1, 32]"), std::string::npos) << script;  // columns: 32
    EXPECT_NE(script.find("decision=[2, 4]"), std::string::npos) << script;         // reduction: 8
    int inlined = 0;
    for (std::size_t at = script.find("sch.compute_inline("); at != std::string::npos;
         at = script.find("sch.compute_inline(", at + 1)) {
      ++inlined;
    }
    EXPECT_EQ(inlined, 2) << script;  // A's and B's padded copies
    EXPECT_NE(script.find("sch.reverse_compute_inline("), std::string::npos) << script;
    std::optional<Candidate> c = Realize(w.func, t, 0);
    ASSERT_TRUE(c.has_value()) << script;
    std::string program = ir::PrintProgram(c->program);
    for (const char* copy : {"A_pad = T.alloc_buffer", "B_pad = T.alloc_buffer", "C_pad = T.alloc_buffer"}) {
      EXPECT_EQ(program.find(copy), std::string::npos) << copy << "\n" << program;
    }
    EXPECT_EQ(ir::testing::SameResult(w.func, c->program, 3), "") << c->trace.AsScript();
  }
  EXPECT_EQ(padded, 6);
  // First, so that a cold search measures their register blocks first.
  for (std::size_t v = 0; v < spaces.size(); ++v) {
    EXPECT_EQ(spaces[v].AsScript().find("pad_einsum") != std::string::npos, v < 6) << v;
  }
}

// 197 columns padded to 13 vectors would leave a register block of one
// vector; they are padded to 14 (224), for blocks of 8 rows and 2 vectors.
// 208 columns, 13 whole vectors, need no padding and get none.
TEST(DesignSpace, AnOddCountOfVectorsIsPaddedToAnEvenOne) {
  SpaceOptions o = SpaceOptionsFor(2, 512);
  ir::Workload w = ir::BuildWorkload("matmul:M=16,N=197,K=4");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, o);
  ASSERT_FALSE(spaces.empty());
  std::string script = spaces[0].AsScript();
  EXPECT_NE(script.find("padding=[1, 32, 1]"), std::string::npos) << script;
  EXPECT_NE(script.find("decision=[7, 1, 1, 32]"), std::string::npos) << script;  // columns: 224
  EXPECT_NE(script.find("decision=[1, 2, 1, 8]"), std::string::npos) << script;   // rows: 8 of 16
  std::optional<Candidate> c = Realize(w.func, spaces[0], 0);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(ir::testing::SameResult(w.func, c->program, 3), "") << c->trace.AsScript();
  for (const ir::Trace& t : DefaultDesignSpace(ir::BuildWorkload("matmul:M=16,N=208,K=4").func, o)) {
    EXPECT_EQ(t.AsScript().find("pad_einsum"), std::string::npos);
  }
}

// AVX2's 16 registers hold register blocks of 12 accumulators (6 rows x 2
// vectors, with the 2 vectors loaded and a broadcast): 48 rows divide into
// 6-row blocks as they are; 64 rows, which leave blocks of 8 (4 x 2 or
// 2 x 4), are padded to 66. AVX-512's 4 x 4 blocks of 16 need no padding.
TEST(DesignSpace, AnAvx2RegisterBlockKeepsTwelveAccumulators) {
  SpaceOptions avx2 = SpaceOptionsFor(2, 256);
  std::vector<ir::Trace> whole = DefaultDesignSpace(ir::BuildWorkload("matmul:M=48,N=64,K=64").func, avx2);
  ASSERT_FALSE(whole.empty());
  std::string script = whole[0].AsScript();
  EXPECT_EQ(script.find("pad_einsum"), std::string::npos) << script;
  EXPECT_NE(script.find("decision=[2, 4, 1, 6]"), std::string::npos) << script;   // rows: 6
  EXPECT_NE(script.find("decision=[4, 1, 1, 16]"), std::string::npos) << script;  // columns: 2 vectors

  ir::Workload w = ir::BuildWorkload("matmul:M=64,N=64,K=64");
  std::vector<ir::Trace> padded = DefaultDesignSpace(w.func, avx2);
  ASSERT_FALSE(padded.empty());
  script = padded[0].AsScript();
  EXPECT_NE(script.find("padding=[6, 1, 1])"), std::string::npos) << script;
  EXPECT_NE(script.find("decision=[11, 1, 1, 6]"), std::string::npos) << script;  // rows: 66
  EXPECT_NE(script.find("decision=[4, 1, 1, 16]"), std::string::npos) << script;
  std::optional<Candidate> c = Realize(w.func, padded[0], 0);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(ir::testing::SameResult(w.func, c->program, 3), "") << c->trace.AsScript();
  for (const ir::Trace& t : DefaultDesignSpace(w.func, SpaceOptionsFor(2, 512))) {
    EXPECT_EQ(t.AsScript().find("pad_einsum"), std::string::npos);
  }
}

// A 1 x 1 convolution in NCHW vectorized along w (5 here) gets part of a
// vector and no second one; its first designs put the lanes along the
// output channels instead, with W packed, and compute what it computes.
// Dense with 10 outputs leaves part of a vector too, but its X, packed for
// lanes along the batch, would serve only 10 multiply-adds an element, and
// it keeps its lanes.
TEST(DesignSpace, PartOfAVectorMovesTheLanesToWholeVectorsWhereThePackingPays) {
  ir::PrimFunc conv = ir::ParseWorkloadText(
      "input X: f32[1, 8, 5, 5]\ninput W: f32[32, 8]\n"
      "Y[n, co, h, w] = sum(ci in 8) W[co, ci] * X[n, ci, h, w]\n");
  const SpaceOptions o = SpaceOptionsFor(2, 512);
  std::vector<ir::Trace> spaces = DefaultDesignSpace(conv, o);
  ASSERT_GE(spaces.size(), 2u);
  for (std::size_t v = 0; v < 2; ++v) {
    std::string script = spaces[v].AsScript();
    SCOPED_TRACE(script);
    EXPECT_NE(script.find("cache_read(block=b1, read_buffer_index=0"), std::string::npos);  // W
    std::optional<Candidate> c = Realize(conv, spaces[v], 0);
    ASSERT_TRUE(c.has_value());
    ir::Schedule sch = ir::ReplayTrace(conv, c->trace, 0);
    std::vector<ir::LoopRV> update = sch.GetLoops(sch.GetBlock("Y_update"));
    EXPECT_EQ(sch.Get(update.back()).loop_var->name.substr(0, 3), "co_");
    EXPECT_EQ(sch.Get(update.back()).for_kind, ir::ForKind::kVectorized);
    EXPECT_EQ(ir::testing::SameResult(conv, c->program, 3), "");
  }
  ir::PrimFunc dense = ir::BuildWorkload("dense:B=128,IN=16,OUT=10").func;
  for (const ir::Trace& t : DefaultDesignSpace(dense, o)) {
    std::optional<Candidate> c = Realize(dense, t, 0);
    ASSERT_TRUE(c.has_value()) << t.AsScript();
    ir::Schedule sch = ir::ReplayTrace(dense, c->trace, 0);
    std::vector<ir::LoopRV> update = sch.GetLoops(sch.GetBlock("T_matmul_NT_update"));
    EXPECT_NE(sch.Get(update.back()).loop_var->name.substr(0, 2), "i_") << t.AsScript();
  }
}

// The loops of a block of a design's program (before postprocessing),
// outermost first.
std::vector<std::string> LoopsOf(const ir::PrimFunc& workload, const ir::Trace& design, const std::string& block) {
  ir::Schedule sch = ir::ReplayTrace(workload, design, 0);
  std::vector<std::string> names;
  for (ir::LoopRV l : sch.GetLoops(sch.GetBlock(block))) names.push_back(sch.Get(l).loop_var->name);
  return names;
}

TEST(DesignSpace, PackedPanelIsCopiedOncePerPanelAsBlasDoes) {
  // The copy of B sits under j_0 alone (and A's under i_0), ahead of the
  // other outermost loop, so it is not made again for every row tile.
  ir::Workload w = ir::BuildWorkload("matmul:M=64,N=64,K=64");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, SpaceOptions{});
  int packed_a = 0, packed_b = 0;
  for (const ir::Trace& space : spaces) {
    std::string script = space.AsScript();
    if (script.find("cache_read") == std::string::npos) continue;
    std::optional<Candidate> c = Realize(w.func, WithoutDecisions(space), 3);
    ASSERT_TRUE(c);
    bool b = script.find("read_buffer_index=1") != std::string::npos;
    std::vector<std::string> copy_loops = {b ? "j_0" : "i_0", "ax0", "ax1"};
    EXPECT_EQ(LoopsOf(w.func, c->design, b ? "B_global" : "A_global"), copy_loops) << script;
    (b ? packed_b : packed_a)++;
  }
  EXPECT_EQ(packed_a, 2);
  EXPECT_EQ(packed_b, 2);
}

// Dense reads W[j, k] with j vectorized, so lowering lays a packed copy of
// W out as [k][j] and the copy transposes: it goes in unrolled 8 x 8 blocks
// (the inner loops are not vectorized). X's copy does not transpose, nor
// does matmul's B (above), and they stay plain.
TEST(DesignSpace, ATransposingPackIsCopiedInUnrolledBlocks) {
  ir::Workload w = ir::BuildWorkload("dense_bias_relu:B=32,IN=48,OUT=64");
  SpaceOptions o;
  o.cores = 2;
  int blocked = 0, plain = 0;
  for (const ir::Trace& space : DefaultDesignSpace(w.func, o)) {
    std::string script = space.AsScript();
    if (script.find("cache_read") == std::string::npos) continue;
    SCOPED_TRACE(script);
    std::optional<Candidate> c = Realize(w.func, space, 0);  // its own decisions, j tile 64
    ASSERT_TRUE(c);
    // W[j, k] is read across its rows when j is vectorized, X[i, k] when i
    // is (the lanes along the batch).
    ir::Schedule sch = ir::ReplayTrace(w.func, c->trace, 0);
    std::vector<ir::LoopRV> update = sch.GetLoops(sch.GetBlock("T_matmul_NT_update"));
    bool batch_lanes = sch.Get(update.back()).loop_var->name == "i_3";
    bool packs_w = script.find("read_buffer_index=1") != std::string::npos;
    std::string copy = packs_w ? "W_global" : "X_global";
    std::vector<ir::LoopRV> loops = sch.GetLoops(sch.GetBlock(copy));
    std::vector<std::string> names;
    for (ir::LoopRV l : loops) names.push_back(sch.Get(l).loop_var->name);
    if (packs_w != batch_lanes) {
      ++blocked;
      ASSERT_GE(loops.size(), 3u);
      EXPECT_EQ(std::vector<std::string>(names.end() - 2, names.end()), (std::vector<std::string>{"ax0_1", "ax1_1"}));
      EXPECT_EQ(sch.Get(loops[loops.size() - 2]).extent, 8);
      EXPECT_EQ(sch.Get(loops[loops.size() - 2]).for_kind, ir::ForKind::kUnrolled);
      EXPECT_EQ(sch.Get(loops.back()).for_kind, ir::ForKind::kUnrolled);
      if (packs_w) {
        EXPECT_EQ(names.front(), "j_0");
      }
    } else {
      ++plain;
      EXPECT_EQ(names.back(), "ax1");
    }
    EXPECT_EQ(ir::testing::SameResult(w.func, c->program, 4), "");
  }
  EXPECT_EQ(blocked, 4);  // W's two, and X's two with the lanes along the batch
  EXPECT_EQ(plain, 2);
}

// A symmetric product, sum_k A[i, k] * A[j, k], reads A twice: the variants
// that pack the operand read as vectors pack A[j, k] alone, under j_0,
// and the ones that pack the other operand pack A[i, k] alone, under i_0.
// Named by its buffer only, the vectors' variant packed A[i, k] (the
// buffer's first read) and no space packed A[j, k]: 64-trial sessions of
// 512 x 512 x 256 ended at 179.5 GFLOP/s, and 227.6 with this
// (bench/RESULTS.md, session 79).
TEST(DesignSpace, ASymmetricProductPacksEachOfItsReadsOfOneBuffer) {
  ir::PrimFunc workload = ir::ParseWorkloadText("input A: f32[64, 32]\nC[i, j in 64] = sum(k in 32) A[i, k] * A[j, k]\n");
  std::set<std::string> packed;
  for (const ir::Trace& space : DefaultDesignSpace(workload, SpaceOptionsFor(2, 512))) {
    std::string script = space.AsScript();
    if (script.find("cache_read") == std::string::npos) continue;
    SCOPED_TRACE(script);
    std::optional<Candidate> c = Realize(workload, space, 0);
    ASSERT_TRUE(c);
    ir::Schedule sch = ir::ReplayTrace(workload, c->design, 0);
    const bool vectors = script.find("read_buffer_index=1") != std::string::npos;
    const std::string staged = vectors ? "A[v_i, v_k] * A_global[v_j, v_k]" : "A_global[v_i, v_k] * A[v_j, v_k]";
    const std::string text = ir::PrintProgram(sch.func());
    EXPECT_NE(text.find(staged), std::string::npos) << text;
    EXPECT_EQ(LoopsOf(workload, c->design, "A_global").front(), vectors ? "j_0" : "i_0");
    packed.insert(staged);
    EXPECT_EQ(ir::testing::SameResult(workload, c->program, 5), "");
  }
  EXPECT_EQ(packed.size(), 2u);
}

std::int64_t ParallelLimit(const ir::Trace& design) {
  for (const ir::Instruction& inst : design.insts) {
    if (internal::IsAnnotateOf(inst, "meta_schedule.parallel")) return std::get<std::int64_t>(inst.inputs[1]);
  }
  return -1;
}

TEST(DesignSpace, WithDecisionsOfCarriesTilesAndParallelLimitToAnotherVariant) {
  ir::Workload w = ir::BuildWorkload("matmul:M=64,N=64,K=64");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, SpaceOptions{});
  std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[1]), 5);
  ASSERT_TRUE(c);
  std::mt19937_64 rng(2);
  std::optional<ir::Trace> design = MutateParallel(c->design, 16, rng);
  ASSERT_TRUE(design);
  ASSERT_NE(ParallelLimit(*design), ParallelLimit(spaces[1]));
  for (std::size_t v = 0; v < spaces.size(); ++v) {
    SCOPED_TRACE(v);
    ir::Trace sibling = WithDecisionsOf(spaces[v], *design);
    EXPECT_EQ(VariantOf(sibling), VariantOf(spaces[v]));
    // Every sample has its counterpart, so the seed draws nothing.
    std::optional<Candidate> one = Realize(w.func, sibling, 1), two = Realize(w.func, sibling, 2);
    ASSERT_TRUE(one && two);
    EXPECT_EQ(one->program_hash, two->program_hash);
    std::vector<std::size_t> from = design->SamplingInstructions(), to = one->design.SamplingInstructions();
    ASSERT_EQ(from.size(), to.size());
    for (std::size_t i = 0; i < from.size(); ++i) EXPECT_EQ(one->design.decisions.at(to[i]), design->decisions.at(from[i]));
    EXPECT_EQ(ParallelLimit(one->design), ParallelLimit(*design));
  }
  EXPECT_EQ(Realize(w.func, WithDecisionsOf(spaces[1], *design), 9)->program_hash,
            Realize(w.func, *design, 9)->program_hash);
  // Samples whose attributes differ (another innermost limit) take nothing.
  SpaceOptions narrow;
  narrow.max_vectorize = 16;
  ir::Trace other = WithDecisionsOf(DefaultDesignSpace(w.func, narrow)[1], *design);
  for (std::size_t index : other.SamplingInstructions()) {
    EXPECT_EQ(other.decisions.count(index), other.insts[index].kind == "SampleCategorical" ? 1u : 0u);
  }
}

TEST(DesignSpace, VariantOfSeparatesVariantsAndSurvivesSamplingAndMutation) {
  ir::Workload w = ir::BuildWorkload("matmul:M=64,N=64,K=64");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, SpaceOptions{});
  std::set<std::string> keys;
  std::mt19937_64 rng(11);
  for (std::size_t v = 0; v < spaces.size(); ++v) {
    keys.insert(VariantOf(spaces[v]));
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
      std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[v]), seed);
      ASSERT_TRUE(c);
      EXPECT_EQ(VariantOf(c->design), VariantOf(spaces[v])) << "space " << v << " seed " << seed;
      std::optional<ir::Trace> m = Mutate(c->design, w.func, 32, MutatorProbabilities{}, rng);
      if (m) {
        EXPECT_EQ(VariantOf(*m), VariantOf(spaces[v])) << "space " << v << " seed " << seed << ", mutated";
      }
    }
  }
  EXPECT_EQ(keys.size(), spaces.size());  // seven variants, seven keys
}

TEST(DesignSpace, SmallReductionGetsRFactorVariants) {
  ir::Workload w = ir::BuildWorkload("reduce_sum:M=2,N=256");
  SpaceOptions o;
  o.cores = 2;
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, o);
  int with_rfactor = 0;
  for (const ir::Trace& t : spaces) with_rfactor += t.AsScript().find("rfactor") != std::string::npos;
  // Its outer or inner part as a new leading axis, or a vector of it as the
  // last (below).
  EXPECT_EQ(with_rfactor, 3);
}

// A row sum has no spatial loop inside its reduction, so without rfactor
// nothing is vectorized and every add waits for the one before. The vector
// variant sums 16-lane partials (one AVX-512 vector of floats, the space's
// own decision) in the innermost, vectorized loop, for several rows at once.
TEST(DesignSpace, ARowReductionSumsInVectorLanes) {
  ir::Workload w = ir::BuildWorkload("reduce_sum:M=48,N=1024");
  SpaceOptions o;
  o.cores = 2;
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, o);
  ASSERT_EQ(spaces.size(), 2u);  // 48 rows feed two cores: no leading-axis rfactor
  EXPECT_EQ(spaces[0].AsScript().find("rfactor"), std::string::npos);
  EXPECT_NE(spaces[1].AsScript().find("factor_axis=1"), std::string::npos) << spaces[1].AsScript();
  std::optional<Candidate> c = Realize(w.func, spaces[1], 0);
  ASSERT_TRUE(c);
  std::string text = ir::PrintProgram(c->program);
  EXPECT_NE(text.find("A_red_rf = T.alloc_buffer((48, 16))"), std::string::npos) << text;
  EXPECT_NE(text.find("for k_1 in T.vectorized(16)"), std::string::npos) << text;
  // As in a matrix-vector product, 8 rows' partial sums stay in registers
  // (6 blocks of rows run in parallel), and each row's lanes are summed in
  // the same loop.
  EXPECT_NE(spaces[1].AsScript().find("decision=[6, 8]"), std::string::npos) << spaces[1].AsScript();
  EXPECT_NE(text.find("A_red_rf_local = T.alloc_buffer((48, 16), scope=\"local\")"), std::string::npos) << text;
  EXPECT_NE(text.find("in T.parallel(6"), std::string::npos) << text;
  EXPECT_EQ(text.find("T.parallel(", text.find("T.parallel(") + 1), std::string::npos) << text;
  EXPECT_EQ(ir::testing::SameResult(w.func, c->program, 3), "");
}

// The one design of `workload` (a sum to one value, 2 cores, AVX-512)
// that samples a number of jobs, checked as realized: a job per core (the
// recorded decision), each summed in 16 vector lanes, and fresh samples of
// the jobs compute the sum. Returns its script and the recorded program.
std::pair<std::string, std::string> ExpectJobsAndLanes(const ir::PrimFunc& workload) {
  std::vector<ir::Trace> both;
  for (const ir::Trace& design : DefaultDesignSpace(workload, SpaceOptionsFor(2, 512))) {
    if (design.AsScript().find("sample_categorical(candidates=[2, 4, 8, 16, 32]") != std::string::npos) {
      both.push_back(design);
    }
  }
  EXPECT_EQ(both.size(), 1u);
  if (both.empty()) return {};
  std::optional<Candidate> recorded = Realize(workload, both[0], 0);
  EXPECT_TRUE(recorded);
  if (!recorded) return {};
  const std::string text = ir::PrintProgram(recorded->program);
  EXPECT_NE(text.find("S_rf_rf = T.alloc_buffer((2, 16))"), std::string::npos) << text;
  EXPECT_NE(text.find("in T.parallel(2,"), std::string::npos) << text;
  EXPECT_NE(text.find("in T.vectorized(16)"), std::string::npos) << text;
  EXPECT_EQ(ir::testing::SameResult(workload, recorded->program, 3), "");
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    std::optional<Candidate> c = Realize(workload, WithoutDecisions(both[0]), seed);
    EXPECT_TRUE(c);
    if (c) {
      EXPECT_EQ(ir::testing::SameResult(workload, c->program, seed), "") << c->trace.AsScript();
    }
  }
  return {both[0].AsScript(), text};
}

// A sum to one value has no rows to share among the cores, and TVM's
// rfactors give it either jobs (each a chain of scalar adds) or lanes (on
// one core). Its own variant gives both: the reduction split into a job per
// core (the recorded decision), and each job summed in vector lanes, the
// lanes' sum under the job's loop. Four row sums on two cores keep their
// rows as the jobs and have no such variant.
TEST(DesignSpace, ASumToOneValueSplitsAmongTheCoresAndTheLanes) {
  ExpectJobsAndLanes(ir::ParseWorkloadText("input X: f32[262144]\nS[] = sum(i in 262144) X[i] * X[i]\n"));
  const ir::Workload rows = ir::BuildWorkload("reduce_sum:M=4,N=65536");
  for (const ir::Trace& design : DefaultDesignSpace(rows.func, SpaceOptionsFor(2, 512))) {
    EXPECT_EQ(design.AsScript().find("sample_categorical(candidates=[2,"), std::string::npos) << design.AsScript();
  }
}

// A sum of a prime length has no number of jobs that divides it: the
// design splits it into jobs, steps and lanes at once, with the last job's
// last steps past the end masked. Before, the space held no vectorized
// design for it, and the best of 32 trials took 14x as long as this one
// (bench/RESULTS.md, session 86).
TEST(DesignSpace, ASumOfAPrimeLengthMasksTheStepsPastItsEnd) {
  const auto [script, text] = ExpectJobsAndLanes(
      ir::ParseWorkloadText("input A: f32[262147]\ninput B: f32[262147]\nS[] = sum(i in 262147) A[i] * B[i]\n"));
  EXPECT_NE(script.find(", None, 16]"), std::string::npos) << script;
  EXPECT_NE(text.find("< 262147"), std::string::npos) << text;
}

// A row of a prime length has no perfect tile of a vector's width: its
// vector rfactor splits it into whole vectors and a last step masked past
// the row's end, so its partial sums still fill the lanes (64 rows of
// 1009: 11.2 -> 64.2 GFLOP/s over 32-trial sessions; bench/RESULTS.md,
// session 86).
TEST(DesignSpace, ARowOfAPrimeLengthSumsInVectorLanesWithItsLastStepMasked) {
  const ir::PrimFunc workload =
      ir::ParseWorkloadText("input X: f32[4, 1009]\nS[r] = sum(k in 1009) X[r, k] * X[r, k]\n");
  int masked = 0;
  for (const ir::Trace& design : DefaultDesignSpace(workload, SpaceOptionsFor(2, 512))) {
    if (design.AsScript().find("factors=[None, 16]") == std::string::npos) continue;
    ++masked;
    for (std::uint64_t seed = 0; seed < 3; ++seed) {
      std::optional<Candidate> c = Realize(workload, design, seed);
      ASSERT_TRUE(c);
      const std::string text = ir::PrintProgram(c->program);
      EXPECT_NE(text.find("in T.vectorized(16)"), std::string::npos) << text;
      EXPECT_NE(text.find("< 1009"), std::string::npos) << text;
      EXPECT_EQ(ir::testing::SameResult(workload, c->program, seed), "") << c->trace.AsScript();
    }
  }
  EXPECT_GE(masked, 1);
}

// A sum over a plane (h and w, a group norm's statistics) streams its
// input as a matrix-vector product does, but its rows' partial sums go in
// registers around both reduction loops, not inside h: under h, the sum of
// the lanes and the normalization after it ran again at each of h's steps
// (3 x 37 x 29 x 29: 93.7 us, against 13.9 us with them once).
TEST(DesignSpace, APlaneReductionSumsItsLanesOncePerRow) {
  ir::PrimFunc workload = ir::ParseWorkloadText(
      "input X: f32[2, 6, 9, 20]\n"
      "S[n, g in 6] = sum(h in 9, w in 20) X[n, g, h, w] * X[n, g, h, w]\n"
      "M[n, g, h in 9, w in 20] = X[n, g, h, w] * rsqrt(S[n, g] / 180.0 + 0.00001)\n");
  int rfactored = 0;
  for (const ir::Trace& design : DefaultDesignSpace(workload, SpaceOptionsFor(2, 512))) {
    if (design.AsScript().find("rfactor") == std::string::npos) continue;
    ++rfactored;
    ir::Schedule sch = ir::ReplayTrace(workload, design, 0);
    std::int64_t steps = 1;
    for (ir::LoopRV l : sch.GetLoops(sch.GetBlock("M"))) steps *= sch.Get(l).extent;
    EXPECT_EQ(steps, 2 * 6 * 9 * 20) << design.AsScript();
    for (std::uint64_t seed : {0, 1}) {
      std::optional<Candidate> c = Realize(workload, design, seed);
      ASSERT_TRUE(c);
      EXPECT_EQ(ir::testing::SameResult(workload, c->program, 3), "");
    }
  }
  EXPECT_GE(rfactored, 1);
}

// A global average pool's rows are short (49 steps, 7 along the input's
// rows) and many (512 channels), so neither the matrix-vector form nor a
// leading-axis rfactor applies; yet 49 dependent scalar adds per channel
// lose to 7 adds of a 7-lane vector. Each channel's lanes are then summed,
// and divided, in the channel's own loop: one nest, not three, so at most
// one parallel loop starts and joins the threads.
TEST(DesignSpace, AShortRowReductionSumsInVectorLanesUnderItsRow) {
  ir::PrimFunc workload = ir::ParseWorkloadText(
      "input X: f32[512, 7, 7]\nS[c] = sum(h in 7, w in 7) X[c, h, w]\nA[c] = S[c] / 49.0\noutput A\n");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(workload, SpaceOptionsFor(2, 512));
  ASSERT_EQ(spaces.size(), 2u);
  EXPECT_EQ(spaces[0].AsScript().find("rfactor"), std::string::npos);
  EXPECT_NE(spaces[1].AsScript().find("decision=[1, 7]"), std::string::npos) << spaces[1].AsScript();
  std::optional<Candidate> c = Realize(workload, spaces[1], 0);
  ASSERT_TRUE(c);
  std::string text = ir::PrintProgram(c->program);
  EXPECT_NE(text.find("S_rf = T.alloc_buffer((512, 7))"), std::string::npos) << text;
  EXPECT_NE(text.find("in T.vectorized(7)"), std::string::npos) << text;
  // One nest at the root: the channels' loop.
  std::size_t root = text.find("# with T.block(\"root\"):");
  ASSERT_NE(root, std::string::npos) << text;
  int nests = 0;
  for (std::size_t at = text.find("\n    for ", root); at != std::string::npos; at = text.find("\n    for ", at + 1)) {
    ++nests;
  }
  EXPECT_EQ(nests, 1) << text;
  EXPECT_EQ(ir::testing::SameResult(workload, c->program, 3), "");
  // A window that slides along the output's rows (a 4 x 4 sum pool)
  // keeps its lanes along those rows instead.
  ir::PrimFunc pool = ir::ParseWorkloadText(
      "input X: f32[8, 32, 32]\nS[c, h in 8, w in 8] = sum(rh in 4, rw in 4) X[c, 4 * h + rh, 4 * w + rw]\n");
  for (const ir::Trace& t : DefaultDesignSpace(pool, SpaceOptionsFor(2, 512))) {
    EXPECT_EQ(t.AsScript().find("rfactor"), std::string::npos) << t.AsScript();
  }
}

// A matrix-vector product (dense at batch 1, or a few rows) reads each
// weight along the reduction and reuses it little: its first variant sums
// vector lanes of the reduction, so the weight is read in contiguous
// vectors, with the partial sums of a block of rows of the weight and of
// every row of X in registers, and everything in one parallel loop. Dense
// at batch 32 reuses each weight more than the 16 accumulators hold and has
// no such variant, nor has a matmul, whose B is read along its rows.
TEST(DesignSpace, AMatrixVectorProductSumsInVectorLanesFirst) {
  SpaceOptions o = SpaceOptionsFor(2, 512);
  struct Case {
    const char* spec;
    const char* rows;  // the recorded split of the loop moving W
  };
  // 512 / 8 = 64 blocks of rows run in parallel although the space asks
  // for 32 jobs: the batch's loop of one iteration before them does not
  // count. 20 rows go 5 at a time; at batch 4, 4 x 4 accumulators.
  for (const Case& c : {Case{"dense:B=1,IN=64,OUT=512", "decision=[64, 8]"},
                        Case{"dense_bias_relu:B=1,IN=2048,OUT=20", "decision=[4, 5]"},
                        Case{"dense:B=4,IN=256,OUT=48", "decision=[12, 4]"}}) {
    ir::Workload w = ir::BuildWorkload(c.spec);
    std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, o);
    ASSERT_FALSE(spaces.empty());
    std::string first = spaces[0].AsScript();
    EXPECT_NE(first.find("rfactor"), std::string::npos) << c.spec << "\n" << first;
    EXPECT_NE(first.find(c.rows), std::string::npos) << c.spec << "\n" << first;
    for (std::size_t i = 1; i < spaces.size(); ++i) EXPECT_EQ(spaces[i].AsScript().find("rfactor"), std::string::npos);
    std::string blocks = c.rows + std::string("decision=[").size();
    std::string parallel = "in T.parallel(" + blocks.substr(0, blocks.find(','));
    for (std::uint64_t seed : {0, 1, 2}) {
      std::optional<Candidate> candidate = Realize(w.func, spaces[0], seed);
      ASSERT_TRUE(candidate) << c.spec;
      std::string text = ir::PrintProgram(candidate->program);
      EXPECT_NE(text.find("T.vectorized(16)"), std::string::npos) << text;
      EXPECT_NE(text.find("scope=\"local\""), std::string::npos) << text;
      EXPECT_NE(text.find(parallel), std::string::npos) << parallel << "\n" << text;
      EXPECT_EQ(text.find("T.parallel(", text.find("T.parallel(") + 1), std::string::npos) << text;
      EXPECT_EQ(ir::testing::SameResult(w.func, candidate->program, 3), "") << c.spec;
    }
  }
  for (const char* spec : {"dense:B=32,IN=64,OUT=48", "matmul:M=1,N=64,K=64"}) {
    for (const ir::Trace& t : DefaultDesignSpace(ir::BuildWorkload(spec).func, o)) {
      EXPECT_EQ(t.AsScript().find("rfactor"), std::string::npos) << spec;
    }
  }
}

// Dense at a batch of at least a vector, in whole half vectors (16, 24, 32
// floats), smaller than its outputs: the first designs vectorize the batch,
// pack X (the smaller input) transposed, read W in place, and write the
// transposed accumulators back in 8 x 8 blocks. X is packed whole, before
// the product, each in a parallel loop of its own; the threads split the
// copy by its rows (X's k). Where the batch is not
// in half vectors (20), or X is not the smaller input by half, or nothing
// needs a transposed read (a matmul), the first design is vectorized along
// the output's rows as before.
TEST(DesignSpace, ASmallBatchOfDenseIsVectorizedAlongTheBatchFirst) {
  SpaceOptions o = SpaceOptionsFor(2, 512);
  for (const char* spec : {"dense:B=32,IN=64,OUT=128", "dense_bias_relu:B=16,IN=40,OUT=48", "dense:B=24,IN=32,OUT=64"}) {
    SCOPED_TRACE(spec);
    ir::Workload w = ir::BuildWorkload(spec);
    std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, o);
    ASSERT_GE(spaces.size(), 2u);
    for (std::size_t d = 0; d < 2; ++d) {
      std::string script = spaces[d].AsScript();
      EXPECT_NE(script.find("read_buffer_index=0, storage_scope=\"global\""), std::string::npos) << script;
      for (std::uint64_t seed : {0, 1}) {
        std::optional<Candidate> c = Realize(w.func, spaces[d], seed);
        ASSERT_TRUE(c);
        ir::Schedule sch = ir::ReplayTrace(w.func, c->trace, 0);
        std::vector<ir::LoopRV> update = sch.GetLoops(sch.GetBlock("T_matmul_NT_update"));
        EXPECT_EQ(sch.Get(update.back()).loop_var->name, "i_3");
        EXPECT_EQ(sch.Get(update.back()).for_kind, ir::ForKind::kVectorized);
        std::vector<ir::LoopRV> pack = sch.GetLoops(sch.GetBlock("X_global"));
        EXPECT_EQ(sch.Get(pack.back()).for_kind, ir::ForKind::kUnrolled);
        // The threads split the copy along X's k, the rows of X^T (the
        // parallel loop is k's outer tile, alone or fused with the batch's
        // inside it): split along the batch, each line of the copy was
        // written by both.
        EXPECT_EQ(sch.Get(pack.front()).for_kind, ir::ForKind::kParallel);
        EXPECT_EQ(sch.Get(pack.front()).loop_var->name.rfind("ax1_0", 0), 0u) << sch.Get(pack.front()).loop_var->name;
        std::vector<ir::LoopRV> write_back = sch.GetLoops(sch.GetBlock("T_matmul_NT_local"));
        EXPECT_EQ(sch.Get(write_back.back()).for_kind, ir::ForKind::kUnrolled);
        std::string text = ir::PrintProgram(c->program);
        std::size_t first_parallel = text.find("T.parallel(");
        EXPECT_NE(text.find("T.parallel(", first_parallel + 1), std::string::npos) << text;
        EXPECT_EQ(ir::testing::SameResult(w.func, c->program, 3), "");
      }
    }
  }
  for (const char* spec : {"dense:B=20,IN=64,OUT=128", "dense:B=32,IN=64,OUT=48", "matmul:M=32,N=64,K=64"}) {
    SCOPED_TRACE(spec);
    ir::Workload w = ir::BuildWorkload(spec);
    std::optional<Candidate> c = Realize(w.func, DefaultDesignSpace(w.func, o)[0], 0);
    ASSERT_TRUE(c);
    ir::Schedule sch = ir::ReplayTrace(w.func, c->trace, 0);
    std::string block = sch.func().params[2]->name + "_update";
    EXPECT_NE(sch.Get(sch.GetLoops(sch.GetBlock(block)).back()).loop_var->name, "i_3");
  }
}

// Softmax's exp is read by its sum and by its normalization: inlined, it
// is computed twice. A second start of the space keeps it, computed once at
// a sampled location. Its designs replay whatever locations are sampled:
// the rules look up a stage's readers in the program, not with a recorded
// get_consumers whose number of results would change when exp is inlined
// by the sample, which made 17 of 160 samples of softmax 128 x 1024 fail.
TEST(DesignSpace, ASharedExponentialIsComputedOnceInSomeSpaces) {
  SpaceOptions o = SpaceOptionsFor(2, 512);
  for (const char* spec : {"softmax:M=8,N=128", "softmax:M=2,N=96"}) {
    SCOPED_TRACE(spec);
    ir::Workload w = ir::BuildWorkload(spec);
    int kept = 0, inlined = 0;
    for (const ir::Trace& space : DefaultDesignSpace(w.func, o)) {
      std::optional<Candidate> own = Realize(w.func, space, 0);
      ASSERT_TRUE(own) << space.AsScript();
      std::vector<std::string> blocks = internal::BlockNames(own->program);
      bool keeps = std::find(blocks.begin(), blocks.end(), "T_softmax_exp") != blocks.end();
      (keeps ? kept : inlined) += 1;
      if (keeps) {
        EXPECT_EQ(ir::testing::SameResult(w.func, own->program, 2), "");
      }
      for (std::uint64_t seed = 1; seed < 12; ++seed) {
        std::optional<Candidate> c = Realize(w.func, WithoutDecisions(space), seed);
        ASSERT_TRUE(c) << "seed " << seed << "\n" << space.AsScript();
        if (seed % 4 == 0) {
          EXPECT_EQ(ir::testing::SameResult(w.func, c->program, seed), "");
        }
      }
    }
    EXPECT_GT(kept, 0);
    EXPECT_GT(inlined, 0);
  }
  for (const ir::Trace& space : DefaultDesignSpace(ir::BuildWorkload("matmul:M=16,N=16,K=16").func, o)) {
    EXPECT_EQ(space.AsScript().find("get_consumers"), std::string::npos);
  }
}

TEST(DesignSpace, ElementwiseStagesAreInlinedAndFusedIntoTheWriteBack) {
  ir::Workload w = ir::BuildWorkload("dense_bias_relu:B=8,IN=12,OUT=16");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, SpaceOptions{});
  ASSERT_FALSE(spaces.empty());
  std::string script = spaces.front().AsScript();
  EXPECT_NE(script.find("cache_write"), std::string::npos) << script;
  EXPECT_NE(script.find("compute_inline"), std::string::npos) << script;
  EXPECT_NE(script.find("reverse_compute_inline"), std::string::npos) << script;
}

// The property the search relies on: every sample of every space of every
// built-in workload computes what the workload computes.
// Samples of every design of `workload`'s space, realized and checked
// against the interpreter; their traces replay to the same program.
void ExpectSamplesMatchTheInterpreter(const ir::PrimFunc& workload) {
  SpaceOptions o;
  o.cores = 2;
  std::vector<ir::Trace> spaces = DefaultDesignSpace(workload, o);
  ASSERT_FALSE(spaces.empty());
  int realized = 0;
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    const ir::Trace& space = spaces[seed % spaces.size()];
    std::optional<Candidate> c = Realize(workload, WithoutDecisions(space), seed);
    if (!c) continue;
    ++realized;
    std::string why = ir::testing::SameResult(workload, c->program, seed);
    ASSERT_EQ(why, "") << ir::PrintProgram(c->program) << c->trace.AsScript();
    EXPECT_NO_THROW(measure::Lower(c->program));
    // The stored trace replays to the same program, and so does the
    // script `tunedb best` prints from it.
    ir::Schedule again = ir::ReplayTrace(workload, ir::Trace::FromJsonText(c->trace.ToJson().dump()), 99);
    EXPECT_TRUE(ir::StructuralEqual(again.func(), c->program));
    ir::Schedule scripted(workload, 99);
    ir::RunScheduleScript(scripted, c->trace.AsScript());
    EXPECT_TRUE(ir::StructuralEqual(scripted.func(), c->program)) << c->trace.AsScript();
  }
  EXPECT_GE(realized, 20);
}

// A rule declines a schedule with a ScheduleError, and the schedule goes
// on as it was; anything else it raises is a bug, reported with the rule
// and block it came from (session 41's std::out_of_range ended a tuning
// session with nothing but "vector::_M_range_check").
TEST(DesignSpace, ARuleThatDeclinesIsSkippedAndARuleThatBreaksIsNamed) {
  ir::Workload w = ir::BuildWorkload("matmul:M=8,N=8,K=8");
  std::vector<ir::Schedule> start{ir::Schedule(w.func, /*seed=*/0)};
  auto decline_odd = [](ir::Schedule& s, int v) {
    if (v % 2 == 1) throw ir::ScheduleError("variant does not apply");
    s.Split(s.GetLoops(s.GetBlock("C"))[0], {std::monostate{}, std::int64_t{2 + v}});
  };
  std::vector<ir::Schedule> out = internal::Branch(start, {0, 1, 2}, false, "a test rule", decline_odd);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NE(out[0].trace().AsScript().find("factors=[None, 2]"), std::string::npos) << out[0].trace().AsScript();
  EXPECT_NE(out[1].trace().AsScript().find("factors=[None, 4]"), std::string::npos) << out[1].trace().AsScript();
  out = internal::Branch(start, {1}, false, "a test rule", decline_odd);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].trace().insts.empty());
  try {
    internal::Branch(start, {0, 7}, true, "tiling of block 'C'", [](ir::Schedule&, int v) {
      if (v == 7) std::vector<int>{}.at(3);
    });
    FAIL() << "expected the rule's bug to end the design space";
  } catch (const std::logic_error& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind("design space: tiling of block 'C', variant 7: ", 0), 0u) << what;
    EXPECT_NE(what.find("a bug in tunedb's schedule rules"), std::string::npos) << what;
  }
}

// Past its limit, branching keeps every variant of both blocks: the first
// partial with each variant, each partial with its first, then the pairs
// nearest those by the sum of their positions.
TEST(DesignSpace, BranchingPastTheLimitKeepsEveryVariantOfEveryBlock) {
  ir::Workload w = ir::BuildWorkload("matmul:M=64,N=64,K=8");
  auto split = [](int loop) {
    return [loop](ir::Schedule& s, int v) {
      s.Split(s.GetLoops(s.GetBlock("C"))[static_cast<std::size_t>(loop)], {std::monostate{}, std::int64_t{2 + v}});
    };
  };
  std::vector<int> ten{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<ir::Schedule> first = internal::Branch({ir::Schedule(w.func, 0)}, ten, false, "i", split(0));
  ASSERT_EQ(first.size(), 10u);
  // The loop list after splitting i is i0, i1, j, k: j is loop 2.
  auto pairs = [](const std::vector<ir::Schedule>& out) {
    std::vector<std::pair<int, int>> got;
    for (const ir::Schedule& s : out) {
      std::string script = s.trace().AsScript();
      std::vector<int> factors;
      for (std::size_t at = script.find("factors=[None, "); at != std::string::npos;
           at = script.find("factors=[None, ", at + 1)) {
        factors.push_back(std::stoi(script.substr(at + 15)) - 2);
      }
      EXPECT_EQ(factors.size(), 2u) << script;
      if (factors.size() == 2) got.emplace_back(factors[0], factors[1]);
    }
    return got;
  };
  EXPECT_EQ(pairs(internal::Branch(first, ten, false, "j", split(2), 100)).size(), 100u);

  // 10 + 9 kept anyway; then sums 2..5 add 1 + 2 + 3 + 4 = 10 more, and sum
  // 6 would add 5, past 30.
  std::vector<std::pair<int, int>> got = pairs(internal::Branch(first, ten, false, "j", split(2), 30));
  std::vector<std::pair<int, int>> want;
  for (int i = 0; i < 10; ++i) {
    for (int j = 0; j < 10; ++j) {
      if (i == 0 || j == 0 || i + j <= 5) want.emplace_back(i, j);
    }
  }
  EXPECT_EQ(got, want);
}

// A file of three tiled stages had 567 spaces, the product of every
// block's variants; now 71 (each variant of each block in
// one, which the test above checks of the branching), all different.
TEST(DesignSpace, AFileOfSeveralTiledStagesKeepsItsSpacesFew) {
  ir::PrimFunc workload = ir::ParseWorkloadText(R"(
input X: f32[64, 512]
input W1: f32[256, 512]
input W2: f32[256, 256]
input W3: f32[64, 256]
H1[i, j] = sum(k in 512) X[i, k] * W1[j, k]
R1[i, j] = max(H1[i, j], 0.0)
H2[i, j] = sum(k in 256) R1[i, k] * W2[j, k]
R2[i, j] = max(H2[i, j], 0.0)
L[i, j] = sum(k in 256) R2[i, k] * W3[j, k]
)");
  const SpaceOptions options = SpaceOptionsFor(2, 512);
  std::vector<ir::Trace> spaces = DefaultDesignSpace(workload, options);
  EXPECT_LE(spaces.size(), options.max_spaces + 16);
  EXPECT_GE(spaces.size(), 20u);
  std::set<std::string> keys;
  for (const ir::Trace& space : spaces) keys.insert(VariantOf(space));
  EXPECT_EQ(keys.size(), spaces.size());
}

TEST(DesignSpace, SamplesOfEveryWorkloadMatchTheInterpreter) {
  for (const char* spec : kSmallWorkloads) {
    SCOPED_TRACE(spec);
    ExpectSamplesMatchTheInterpreter(ir::BuildWorkload(spec).func);
  }
}

// Computations outside the library, in the workload language, that take
// rules of their own (an NCHW convolution's rows, a column reduction's
// tiling), at small shapes; extents that vectors do not divide included.
const char* kSmallWrittenWorkloads[] = {
    "input X: f32[1, 8, 8, 8]\ninput W: f32[8, 8, 3, 3]\n"
    "Y[n, co, h in 6, w in 6] = sum(ci in 8, kh in 3, kw in 3) X[n, ci, h + kh, w + kw] * W[co, ci, kh, kw]\n",
    // A 1 x 1 one whose w leaves part of a vector: lanes along co, W packed.
    "input X: f32[1, 8, 5, 5]\ninput W: f32[32, 8]\nY[n, co, h, w] = sum(ci in 8) W[co, ci] * X[n, ci, h, w]\n",
    "input X: f32[12, 80]\nS[j] = sum(i in 12) X[i, j]\n",
    "input X: f32[9, 70]\nS[j] = max(i in 9) X[i, j]\n",
    "input X: f32[3, 4, 5, 6]\nS[c, h, w] = sum(n in 3) X[n, c, h, w] / 3.0\n",
    "input X: f32[20, 12]\nY[i, j] = X[j, i]\n",                            // blocks of 4
    "input X: f32[2, 32, 48]\nY[b, i, j] = X[b, j, i] * 0.5\n",               // of 16, not a plain copy
    "input X: f32[2, 8, 3, 5]\nY[n, h, w, c] = X[n, c, h, w]\n",              // NCHW -> NHWC, no common block
    // Y[k % 16] is two reads of the block, which padding merges into one:
    // a packed variant that named its input by its index among the reads
    // asked for a third read that was gone.
    "input X: f32[17, 14]\ninput Y: f32[16]\nS[i] = sum(k in 16) X[i, k % 14] + Y[k % 16] - Y[k % 16] * 0.5\n",
    // An int64 index beside int32 ones (ir/limits.h).
    "input X: f32[6, 20]\nS[i in 9, j in 5] = sum(k in 20) X[(i64(i) * i64(i) * 7 + i64(j)) % 6, k] * f32(i64(k) - 3)\n",
    // Scalars: an input and a stage, each read by another stage.
    "input X: f32[40]\ninput a: f32[]\nS[] = sum(k in 40) X[k]\nY[i] = X[i] * a[] / S[]\n",
    // Pooling windows outside the vector lanes: stride 2 with a scale fused
    // after the window, stride 1 over a prime row, and lanes along NHWC's
    // channels.
    "input X: f32[1, 3, 10, 20]\nS[n, c, h in 5, w in 10] = sum(rh in 2, rw in 2) X[n, c, 2 * h + rh, 2 * w + rw]\n"
    "Y[n, c, h, w] = S[n, c, h, w] * 0.25\n",
    "input X: f32[2, 9, 9]\nY[c, h in 7, w in 7] = max(rh in 3, rw in 3) X[c, h + rh, w + rw]\n",
    "input X: f32[1, 9, 9, 24]\nY[n, h in 4, w in 4, c] = max(rh in 3, rw in 3) X[n, 2 * h + rh, 2 * w + rw, c]\n",
    // Nearest-neighbour upsampling, its row of 80 vectorized in halves.
    "input X: f32[2, 3, 40]\nY[c, h in 6, w in 80] = X[c, h / 2, w / 2]\n",
    // A global average pool in NCHW: rows of 7 in the lanes of one vector.
    "input X: f32[2, 6, 7, 7]\nS[n, c] = sum(h in 7, w in 7) X[n, c, h, w]\nA[n, c] = S[n, c] / 49.0\noutput A\n",
    // Rows of a prime length past one vector, and two consumers fused
    // under the row; a maximum over 4 x 5 windows.
    "input X: f32[5, 17]\nS[i] = sum(k in 17) X[i, k]\nT[i] = S[i] * 2.0\nY[i] = T[i] + 1.0\noutput Y\n",
    "input X: f32[3, 8, 10]\nM[c, h in 2, w in 2] = max(rh in 4, rw in 5) X[c, 4 * h + rh, 5 * w + rw]\n",
    // A symmetric product under its mask: one buffer read twice, each read
    // packed in a variant of its own.
    "input A: f32[19, 6]\nC[i, j in 19] = sum(k in 6) j <= i ? A[i, k] * A[j, k] : 0.0\n",
};

TEST(DesignSpace, SamplesOfWrittenWorkloadsMatchTheInterpreter) {
  for (const char* text : kSmallWrittenWorkloads) {
    SCOPED_TRACE(text);
    ir::PrimFunc workload = ir::ParseWorkloadText(text);
    ExpectSamplesMatchTheInterpreter(workload);
    // And the designs' own decisions.
    for (const ir::Trace& space : DefaultDesignSpace(workload, SpaceOptionsFor(2, 512))) {
      std::optional<Candidate> c = Realize(workload, space, 0);
      ASSERT_TRUE(c.has_value()) << space.AsScript();
      EXPECT_EQ(ir::testing::SameResult(workload, c->program, 3), "") << c->trace.AsScript();
    }
  }
}

// An axis of more than 2^31 values counts in int64 (te): every design
// realizes, lowers, and passes the checks a worker makes of a program it
// receives. Too large to run.
TEST(DesignSpace, AnInt64AxisGetsDesignsThatLower) {
  ir::PrimFunc workload = ir::BuildWorkload("matmul:M=4294967296,N=32,K=16").func;
  std::vector<ir::Trace> spaces = DefaultDesignSpace(workload, SpaceOptionsFor(2, 512));
  ASSERT_FALSE(spaces.empty());
  int realized = 0;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    const ir::Trace& space = spaces[seed % spaces.size()];
    std::optional<Candidate> c = Realize(workload, WithoutDecisions(space), seed);
    if (!c) continue;
    ++realized;
    EXPECT_NO_THROW(ir::ProgramFromJson(ir::ProgramToJson(c->program))) << c->trace.AsScript();
    EXPECT_NO_THROW(measure::Lower(c->program)) << c->trace.AsScript();
  }
  EXPECT_GE(realized, 4);
}

// A design fixes every decision: its program does not depend on the seed it
// is realized with. The evolutionary search relies on it to realize each
// design once (strategy.cc).
TEST(DesignSpace, ADesignRealizesToOneProgramWhateverTheSeed) {
  SpaceOptions o;
  o.cores = 2;
  std::mt19937_64 rng(11);
  for (const char* spec : kSmallWorkloads) {
    SCOPED_TRACE(spec);
    ir::Workload w = ir::BuildWorkload(spec);
    std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, o);
    int compared = 0;
    for (std::uint64_t seed = 0; seed < 12; ++seed) {
      std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[seed % spaces.size()]), seed);
      if (!c) continue;
      std::vector<ir::Trace> designs = {c->design};
      std::optional<ir::Trace> mutated = Mutate(c->design, w.func, 32, MutatorProbabilities{}, rng);
      if (mutated) designs.push_back(*mutated);
      for (const ir::Trace& design : designs) {
        std::optional<Candidate> a = Realize(w.func, design, seed + 100), b = Realize(w.func, design, seed + 200);
        ASSERT_EQ(a.has_value(), b.has_value());
        if (!a) continue;
        EXPECT_EQ(a->program_hash, b->program_hash) << design.AsScript();
        EXPECT_EQ(a->trace.ToJson(), b->trace.ToJson());
        ++compared;
      }
      EXPECT_EQ(Realize(w.func, c->design, seed + 300)->program_hash, c->program_hash);
    }
    EXPECT_GE(compared, 12);
  }
}

// The tile decisions a design space records, one per sample_perfect_tile,
// in trace order.
std::vector<std::vector<std::int64_t>> RecordedTiles(const ir::Trace& space) {
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t i : space.SamplingInstructions()) {
    if (space.insts[i].kind != "SamplePerfectTile") continue;
    auto d = space.decisions.find(i);
    out.push_back(d == space.decisions.end() ? std::vector<std::int64_t>{} : d->second.get<std::vector<std::int64_t>>());
  }
  return out;
}

// The recorded tiles of every design of `spec` (AVX-512, 2 cores).
std::vector<std::vector<std::vector<std::int64_t>>> RecordedTilesOfEveryDesign(const ir::PrimFunc& workload) {
  std::vector<std::vector<std::vector<std::int64_t>>> out;
  for (const ir::Trace& space : DefaultDesignSpace(workload, SpaceOptionsFor(2, 512))) {
    out.push_back(RecordedTiles(space));
  }
  return out;
}
std::vector<std::vector<std::vector<std::int64_t>>> RecordedTilesOfEveryDesign(const std::string& spec) {
  return RecordedTilesOfEveryDesign(ir::BuildWorkload(spec).func);
}

// conv2d NHWC's loops: n, h, w, co, then the reductions kh, kw, ci.
TEST(DesignSpace, AConvolutionsRegisterBlockUnrollsItsWindowAndFillsItsRows) {
  using Tiles = std::vector<std::vector<std::int64_t>>;
  // Rows of w, vectors of co; h goes outermost only as far as the parallel
  // limit (32 jobs on 2 cores), so the fused parallel loop is not left at
  // n's single iteration. kw slides along the rows (X[h + kh, w + kw, ci]):
  // it is unrolled whole, and ci not at all.
  for (const Tiles& tiles :
       RecordedTilesOfEveryDesign("conv2d_nhwc:N=1,H=56,W=56,CI=64,CO=64,KH=3,KW=3,stride=1,pad=1")) {
    EXPECT_EQ(tiles, (Tiles{{1, 1, 1, 1}, {28, 2, 1, 1}, {7, 2, 1, 4}, {1, 1, 1, 64}, {3, 1}, {1, 3}, {64, 1}}));
  }
  // The reductions (kw, ci) alone. At stride 2 kw slides two elements
  // apart, and is still unrolled whole; a kernel wider than
  // kMaxSlidingUnroll, or of one column, keeps the unroll of the last
  // reduction (ci by 4).
  struct ReductionCase {
    const char* spec;
    std::vector<std::int64_t> kw, ci;
  };
  for (const ReductionCase& c : {
           ReductionCase{"conv2d_nhwc:N=1,H=56,W=56,CI=64,CO=128,KH=3,KW=3,stride=2,pad=1", {1, 3}, {64, 1}},
           ReductionCase{"conv2d_nhwc:N=1,H=28,W=28,CI=64,CO=64,KH=5,KW=5,stride=1,pad=2", {5, 1}, {16, 4}},
           ReductionCase{"conv2d_nhwc:N=1,H=28,W=28,CI=64,CO=64,KH=1,KW=1,stride=1,pad=0", {1, 1}, {16, 4}},
       }) {
    SCOPED_TRACE(c.spec);
    for (const Tiles& tiles : RecordedTilesOfEveryDesign(c.spec)) {
      ASSERT_EQ(tiles.size(), 7u);
      EXPECT_EQ(tiles[5], c.kw);
      EXPECT_EQ(tiles[6], c.ci);
    }
  }
  // 14 columns give 2 rows; h, which moves only the broadcast input X,
  // gives 2 more.
  for (const Tiles& tiles :
       RecordedTilesOfEveryDesign("conv2d_nhwc:N=1,H=14,W=14,CI=256,CO=256,KH=3,KW=3,stride=1,pad=1")) {
    EXPECT_EQ(tiles, (Tiles{{1, 1, 1, 1}, {7, 1, 1, 2}, {7, 1, 1, 2}, {4, 1, 1, 64}, {3, 1}, {1, 3}, {256, 1}}));
  }
  // 7 x 7 has no divisor for either loop of rows: 2 vectors of columns
  // with 7 rows fill 14 accumulators, where 4 vectors would have 1 row.
  for (const Tiles& tiles :
       RecordedTilesOfEveryDesign("conv2d_nhwc:N=1,H=7,W=7,CI=512,CO=512,KH=3,KW=3,stride=1,pad=1")) {
    EXPECT_EQ(tiles, (Tiles{{1, 1, 1, 1}, {7, 1, 1, 1}, {1, 1, 1, 7}, {16, 1, 1, 32}, {3, 1}, {1, 3}, {512, 1}}));
  }
  // A batch moves the vectors' input too, so it never gives rows, though
  // i's 7 give 1 (or 4, padded).
  for (const Tiles& tiles :
       RecordedTilesOfEveryDesign("batch_matmul:B=8,M=7,N=64,K=64")) {
    ASSERT_EQ(tiles.size(), 4u);
    EXPECT_EQ(tiles[0].back(), 1);
  }
}

TEST(DesignSpace, AnNchwConvolutionTakesItsRowsFromTheOutputChannels) {
  using Tiles = std::vector<std::vector<std::int64_t>>;
  // Loops n, co, h, w, then ci, kh, kw; vectors along w. h, the loop
  // before it, moves X, whose vectors w moves too: rows of h would each
  // load their own vectors. The output channels move only W, whose
  // broadcasts then share the vectors of X. (Its samples at a small shape:
  // kSmallWrittenWorkloads.) The first two designs put the lanes along
  // the output channels instead (56 leaves part of a vector, see
  // BatchLanesLoop), with W packed: 4 vectors of them, and rows of w.
  ir::PrimFunc conv = ir::ParseWorkloadText(
      "input X: f32[1, 64, 58, 58]\ninput W: f32[64, 64, 3, 3]\n"
      "Y[n, co, h in 56, w in 56] = sum(ci in 64, kh in 3, kw in 3) X[n, ci, h + kh, w + kw] * W[co, ci, kh, kw]\n");
  std::vector<Tiles> designs = RecordedTilesOfEveryDesign(conv);
  ASSERT_GE(designs.size(), 3u);
  for (std::size_t d = 0; d < designs.size(); ++d) {
    if (d < 2) {
      EXPECT_EQ(designs[d], (Tiles{{1, 1, 1, 1}, {1, 1, 1, 64}, {28, 2, 1, 1}, {7, 2, 1, 4}, {64, 1}, {3, 1}, {1, 3}}));
    } else {
      EXPECT_EQ(designs[d], (Tiles{{1, 1, 1, 1}, {4, 4, 1, 4}, {28, 2, 1, 1}, {1, 1, 1, 56}, {64, 1}, {3, 1}, {1, 3}}));
    }
  }
}

TEST(DesignSpace, AColumnReductionIsTiledWithItsReductionOutside) {
  using Tiles = std::vector<std::vector<std::int64_t>>;
  // S[j] = sum_i X[i, j] reads X once, but untiled it walks down columns.
  // Tiled (no input to pack: three variants), j's four vectors go inside
  // the reduction, whose rows are read as streams.
  EXPECT_EQ(RecordedTilesOfEveryDesign(ir::ParseWorkloadText("input X: f32[2048, 2048]\nS[j] = sum(i in 2048) X[i, j]\n")),
            (std::vector<Tiles>(3, Tiles{{32, 1, 1, 64}, {512, 4}})));
  // A row sum keeps its vector rfactor, and a column sum of too few
  // columns to keep the cores busy its rfactor: neither is tiled.
  for (const char* text : {"input X: f32[64, 2048]\nS[i] = sum(j in 2048) X[i, j]\n",
                           "input X: f32[4096, 16]\nS[j] = sum(i in 4096) X[i, j]\n"}) {
    SCOPED_TRACE(text);
    bool rfactor = false;
    for (const ir::Trace& space : DefaultDesignSpace(ir::ParseWorkloadText(text), SpaceOptionsFor(2, 512))) {
      std::string script = space.AsScript();
      EXPECT_EQ(script.find("n=4"), std::string::npos) << script;  // no 4-level spatial tiles
      rfactor = rfactor || script.find("rfactor") != std::string::npos;
    }
    EXPECT_TRUE(rfactor);
  }
}

// A pooling window is a reduction reusing no input, which no tiling rule
// takes. Its first space moves the window between the two parts of the
// last spatial loop, so the inner part is vectorized (lanes two elements
// apart here); its second keeps the window inside, as before.
TEST(DesignSpace, APoolingWindowGoesOutsideTheVectorLanes) {
  const ir::PrimFunc pool = ir::ParseWorkloadText(
      "input X: f32[1, 8, 16, 64]\n"
      "Y[n, c, h in 8, w in 32] = max(rh in 2, rw in 2) X[n, c, 2 * h + rh, 2 * w + rw]\n");
  const std::vector<ir::Trace> spaces = DefaultDesignSpace(pool, SpaceOptionsFor(2, 512));
  ASSERT_EQ(spaces.size(), 2u);
  EXPECT_EQ(spaces[1].AsScript().find("split"), std::string::npos) << spaces[1].AsScript();
  int vectorized = 0;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    // The design's own decisions first: 32 lanes, two vectors.
    std::optional<Candidate> c = Realize(pool, seed == 0 ? spaces[0] : WithoutDecisions(spaces[0]), seed);
    ASSERT_TRUE(c);
    const std::string script = c->trace.AsScript();
    ir::Schedule s(c->program, 0);
    const ir::BlockRV y = s.GetBlock("Y_update");
    const std::vector<ir::LoopRV> loops = s.GetLoops(y);
    const ir::BlockNode& node = s.Get(y);
    // Both window loops are outside the innermost loop, which holds lanes.
    int window = 0;
    for (std::size_t l = 0; l + 1 < loops.size(); ++l) {
      for (std::size_t i = 0; i < node.iter_vars.size(); ++i) {
        const ir::ExprNode* var = s.Get(loops[l]).loop_var.get();
        if (node.iter_vars[i].kind == ir::IterKind::kReduce && ir::UsesVar(node.bindings[i], var)) {
          ++window;
        }
      }
    }
    EXPECT_EQ(window, 2) << script;
    const ir::ForNode& lanes = s.Get(loops.back());
    if (seed == 0) {
      EXPECT_EQ(lanes.extent, 32) << script;
    }
    if (lanes.extent > 1) {
      EXPECT_EQ(lanes.for_kind, ir::ForKind::kVectorized) << script;
      ++vectorized;
    }
    EXPECT_EQ(ir::testing::SameResult(pool, c->program, seed), "") << script;
  }
  EXPECT_GE(vectorized, 6);
  // Lanes five elements apart would be gathered, and lanes down the rows
  // of the input (h last) would be too: neither block has such lanes.
  for (const char* text : {"input X: f32[1, 4, 8, 30]\n"
                           "Y[n, c, h in 4, w in 6] = max(rh in 2, rw in 5) X[n, c, 2 * h + rh, 5 * w + rw]\n",
                           "input X: f32[2, 8, 8]\nY[c, w in 6, h in 6] = max(rh in 3, rw in 3) X[c, h + rh, w + rw]\n"}) {
    SCOPED_TRACE(text);
    ir::Schedule s(ir::ParseWorkloadText(text), 0);
    EXPECT_EQ(rules::WindowLanesLoop(s.Get(s.GetBlock("Y"))), -1);
  }
}

// A padding stage is inlined in the space's first starts and kept in the
// last, at a sampled compute location (TVM's CPU rules always keep it): a
// 13-channel depthwise convolution ran 41% faster that way (bench/RESULTS.md,
// session 66). A copy without a border (pad=0) is no padding stage.
TEST(DesignSpace, APaddingStageIsAlsoKeptAtASampledComputeLocation) {
  const ir::PrimFunc dw = ir::BuildWorkload("depthwise_conv2d_nhwc:N=1,H=7,W=7,C=13,KH=5,KW=5,stride=1,pad=2").func;
  const std::vector<ir::Trace> spaces = DefaultDesignSpace(dw, SpaceOptionsFor(2, 512));
  std::vector<bool> kept;
  for (const ir::Trace& space : spaces) {
    std::optional<Candidate> c = Realize(dw, space, 0);
    ASSERT_TRUE(c);
    const std::vector<std::string> blocks = internal::BlockNames(c->program);
    kept.push_back(std::find(blocks.begin(), blocks.end(), "PaddedInput") != blocks.end());
  }
  // The inlined spaces first, then the kept ones.
  ASSERT_FALSE(kept.front());
  ASSERT_TRUE(kept.back());
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  std::set<std::string> locations;
  for (std::size_t v = 0; v < spaces.size(); ++v) {
    if (!kept[v]) continue;
    for (std::uint64_t seed = 0; seed < 6; ++seed) {
      std::optional<Candidate> c = Realize(dw, WithoutDecisions(spaces[v]), seed);
      if (!c) continue;
      const std::string script = c->trace.AsScript();
      const std::size_t at = script.find("compute_at(block=");
      ASSERT_NE(at, std::string::npos) << script;
      locations.insert(script.substr(at, script.find('\n', at) - at));
      EXPECT_EQ(ir::testing::SameResult(dw, c->program, seed), "") << script;
    }
  }
  EXPECT_GE(locations.size(), 2u);

  ir::Schedule padded(ir::BuildWorkload("conv2d_nhwc:N=1,H=6,W=6,CI=3,CO=4,KH=3,KW=3,stride=1,pad=1").func, 0);
  ir::Schedule copied(ir::BuildWorkload("conv2d_nhwc:N=1,H=6,W=6,CI=3,CO=4,KH=3,KW=3,stride=1,pad=0").func, 0);
  EXPECT_TRUE(rules::PaddingStage(padded.func(), padded.Get(padded.GetBlock("PaddedInput"))));
  EXPECT_FALSE(rules::PaddingStage(copied.func(), copied.Get(copied.GetBlock("PaddedInput"))));
  EXPECT_FALSE(rules::PaddingStage(padded.func(), padded.Get(padded.GetBlock("Conv2dOutput"))));
}

TEST(DesignSpace, ATransposeIsCopiedInBlocksItTransposesInRegisters) {
  using Tiles = std::vector<std::vector<std::int64_t>>;
  // Y[i, j] = X[j, i]: i and j each in 32 x 4 x 16, the 16 x 16 block
  // innermost and unrolled (a vector's lanes: codegen's register
  // transpose). With AVX2's 8 lanes, 8 x 8 blocks.
  ir::PrimFunc transpose = ir::ParseWorkloadText("input X: f32[2048, 2048]\nY[i, j] = X[j, i]\n");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(transpose, SpaceOptionsFor(2, 512));
  ASSERT_EQ(spaces.size(), 1u);
  EXPECT_EQ(RecordedTiles(spaces[0]), (Tiles{{32, 4, 16}, {32, 4, 16}}));
  // Mutation keeps the unrolled block within 16 x 16 (64 x 64 took over a
  // minute to build).
  EXPECT_NE(spaces[0].AsScript().find("n=3, max_innermost_factor=16"), std::string::npos) << spaces[0].AsScript();
  std::optional<Candidate> c = Realize(transpose, spaces[0], 0);
  ASSERT_TRUE(c.has_value());
  const std::string text = ir::PrintProgram(c->program);
  EXPECT_NE(text.find("for i_0 in T.parallel(32"), std::string::npos) << text;
  EXPECT_NE(text.find("for i_2 in T.unroll(16):\n                for j_2 in T.unroll(16):"), std::string::npos) << text;
  EXPECT_EQ(RecordedTiles(DefaultDesignSpace(transpose, SpaceOptionsFor(2, 256))[0]), (Tiles{{64, 4, 8}, {64, 4, 8}}));
  // A copy along the rows is left as it was.
  EXPECT_EQ(DefaultDesignSpace(ir::ParseWorkloadText("input X: f32[64, 64]\nY[i, j] = X[i, j] * 2.0\n"),
                               SpaceOptionsFor(2, 512))[0]
                .AsScript()
                .find("split"),
            std::string::npos);
}

// Sides that no block size divides (41 and 37, primes) get blocks of a
// vector's lanes all the same, each such loop split `[None, 1, 16]` with
// its last block masked; a side that 16 divides (48) keeps its perfect
// tiles. Fresh samples compute the transpose.
TEST(DesignSpace, ATransposeOfPrimeSidesIsCopiedInMaskedBlocks) {
  for (const char* text : {"input X: f32[41, 37]\nY[i, j] = X[j, i]\n", "input X: f32[41, 48]\nY[i, j] = X[j, i]\n"}) {
    SCOPED_TRACE(text);
    ir::PrimFunc transpose = ir::ParseWorkloadText(text);
    std::vector<ir::Trace> spaces = DefaultDesignSpace(transpose, SpaceOptionsFor(2, 512));
    ASSERT_EQ(spaces.size(), 1u);
    const std::string script = spaces[0].AsScript();
    std::size_t masked = 0;
    for (std::size_t at = script.find("factors=[None, 1, 16]"); at != std::string::npos;
         at = script.find("factors=[None, 1, 16]", at + 1)) {
      ++masked;
    }
    EXPECT_EQ(masked, std::string(text).find("48") == std::string::npos ? 2u : 1u) << script;
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      std::optional<Candidate> c = Realize(transpose, spaces[0], seed);
      ASSERT_TRUE(c.has_value());
      EXPECT_NE(ir::PrintProgram(c->program).find("T.unroll(16)"), std::string::npos);
      EXPECT_EQ(ir::testing::SameResult(transpose, c->program, seed), "") << c->trace.AsScript();
    }
  }
}

TEST(DesignSpace, RecordsARegisterBlockAsItsDecisions) {
  using Tiles = std::vector<std::vector<std::int64_t>>;
  // AVX-512, f32: four vectors of 16 columns by 4 rows (16 accumulators),
  // level-2 tiles of 1, the reduction unrolled by 4.
  ir::Workload big = ir::BuildWorkload("matmul:M=1024,N=1024,K=1024");
  for (const ir::Trace& space : DefaultDesignSpace(big.func, SpaceOptionsFor(2, 512))) {
    EXPECT_EQ(RecordedTiles(space), (Tiles{{64, 4, 1, 4}, {16, 1, 1, 64}, {256, 4}}));
  }
  // AVX2: vectors of 8. Unpadded, 8 accumulators: 4 vectors by 2 rows (the
  // loads of 4 vectors leave no room for more). The rows padded to 1026,
  // 12: 2 vectors by 6 rows.
  int padded = 0;
  for (const ir::Trace& space : DefaultDesignSpace(big.func, SpaceOptionsFor(2, 256))) {
    if (space.AsScript().find("pad_einsum") != std::string::npos) {
      ++padded;
      EXPECT_EQ(RecordedTiles(space), (Tiles{{57, 3, 1, 6}, {64, 1, 1, 16}, {256, 4}}));
    } else {
      EXPECT_EQ(RecordedTiles(space), (Tiles{{128, 4, 1, 2}, {32, 1, 1, 32}, {256, 4}}));
    }
  }
  EXPECT_GT(padded, 0);
  // A convolution's rows (w, read as X[h + kh, w + kw]) are not padded to
  // 6 x 2 blocks, though pad_einsum could widen the window: measured
  // slower (RegisterBlockPadding). 2 x 4 rows of 4 vectors, as before.
  for (const ir::Trace& space :
       DefaultDesignSpace(ir::BuildWorkload("conv2d_nhwc").func, SpaceOptionsFor(2, 256))) {
    EXPECT_EQ(space.AsScript().find("pad_einsum"), std::string::npos) << space.AsScript();
    EXPECT_EQ(RecordedTiles(space)[2].back(), 2) << space.AsScript();
  }
  // B read in place with a panel over the L2 (4096 x 64 floats): the rows
  // beyond the block go inside the outer reduction loop, so the panel is
  // read once. Packed, they stay outside it.
  ir::Workload skinny = ir::BuildWorkload("matmul:M=16,N=1024,K=4096");
  int packed = 0, in_place = 0;
  for (const ir::Trace& space : DefaultDesignSpace(skinny.func, SpaceOptionsFor(2, 512))) {
    const bool packs_b = space.AsScript().find("read_buffer_index=1") != std::string::npos;
    ++(packs_b ? packed : in_place);
    EXPECT_EQ(RecordedTiles(space), (Tiles{{1, packs_b ? 4 : 1, packs_b ? 1 : 4, 4}, {16, 1, 1, 64}, {1024, 4}}))
        << space.AsScript();
  }
  EXPECT_GT(packed, 0);
  EXPECT_GT(in_place, 0);
  // A smaller vector limit bounds every innermost factor, so no variant is
  // refused for its recorded decisions.
  SpaceOptions narrow = SpaceOptionsFor(2, 512);
  narrow.max_vectorize = 8;
  std::vector<ir::Trace> narrow_spaces = DefaultDesignSpace(big.func, narrow);
  EXPECT_EQ(narrow_spaces.size(), 7u);
  for (const ir::Trace& space : narrow_spaces) {
    EXPECT_EQ(RecordedTiles(space), (Tiles{{32, 4, 1, 8}, {128, 1, 1, 8}, {256, 4}}));  // 8 rows of one vector
  }
  // The recorded decisions are a candidate like any other: at small shapes
  // (extents that 4 and 64 do not divide included), it computes what the
  // workload computes.
  for (const char* spec : kSmallWorkloads) {
    SCOPED_TRACE(spec);
    ir::Workload w = ir::BuildWorkload(spec);
    for (const ir::Trace& space : DefaultDesignSpace(w.func, SpaceOptionsFor(2, 512))) {
      std::optional<Candidate> c = Realize(w.func, space, 0);
      ASSERT_TRUE(c.has_value()) << space.AsScript();
      EXPECT_EQ(ir::testing::SameResult(w.func, c->program, 3), "") << c->trace.AsScript();
    }
  }
}

TEST(DesignSpace, PostprocessorsMakeParallelVectorizedUnrolledLoops) {
  ir::Workload w = ir::BuildWorkload("matmul:M=64,N=64,K=64");
  SpaceOptions o;
  o.cores = 2;
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, o);
  bool parallel = false, vectorized = false, unroll = false;
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[2]), seed);
    ASSERT_TRUE(c);
    std::string text = ir::PrintProgram(c->program);
    parallel = parallel || text.find("T.parallel") != std::string::npos;
    vectorized = vectorized || text.find("T.vectorized") != std::string::npos;
    unroll = unroll || text.find("pragma_auto_unroll_max_step") != std::string::npos;
    EXPECT_EQ(text.find("meta_schedule."), std::string::npos) << "annotations left behind:\n" << text;
    EXPECT_NE(c->trace.AsScript().find("decompose_reduction"), std::string::npos);
  }
  EXPECT_TRUE(parallel);
  EXPECT_TRUE(vectorized);
  EXPECT_TRUE(unroll);
}

// The parallel loop fuses the outer loops within the job limit (32 jobs on
// 2 cores), and past it while the jobs are odd and fewer than a quarter of
// it: 3 jobs on 2 threads would leave one idle a third of the time.
TEST(DesignSpace, TooFewParallelJobsTakeTheNextLoopToo) {
  const std::pair<const char*, const char*> cases[] = {
      {"input X: f32[3, 37, 16, 32]\nY[n, c, h, w] = X[n, c, h, w] * 2.0\n", "in T.parallel(111,"},
      {"input X: f32[8, 37, 16, 32]\nY[n, c, h, w] = X[n, c, h, w] * 2.0\n", "in T.parallel(8,"},
      {"input X: f32[4, 8, 16, 64]\nY[n, c, h, w] = X[n, c, h, w] * 2.0\n", "in T.parallel(32,"},
      {"input X: f32[4, 37, 16, 32]\nY[n, c, h, w] = X[n, c, h, w] * 2.0\n", "in T.parallel(4,"},
  };
  for (const auto& [text, parallel] : cases) {
    ir::PrimFunc workload = ir::ParseWorkloadText(text);
    std::vector<ir::Trace> spaces = DefaultDesignSpace(workload, SpaceOptionsFor(2, 512));
    ASSERT_FALSE(spaces.empty());
    std::optional<Candidate> c = Realize(workload, spaces[0], 0);
    ASSERT_TRUE(c);
    std::string program = ir::PrintProgram(c->program);
    EXPECT_NE(program.find(parallel), std::string::npos) << parallel << "\n" << program;
    EXPECT_EQ(ir::testing::SameResult(workload, c->program, 1), "");
  }
}

// A packing copy computed at a tile loop of one iteration shares that loop
// with the product it feeds. The product's nest still runs in parallel,
// from the loop below: it once stayed serial, and the first product of a
// low-rank chain ran on one core (bench/RESULTS.md, session 83).
TEST(DesignSpace, AProductBelowALoopOfOneIterationItSharesWithItsPackingRunsInParallel) {
  const ir::PrimFunc product = ir::ParseWorkloadText(
      "input X: f32[256, 512]\ninput A: f32[32, 512]\nT[i, j] = sum(k in 512) X[i, k] * A[j, k]\n");
  int shared = 0;
  for (const ir::Trace& design : DefaultDesignSpace(product, SpaceOptionsFor(2, 512))) {
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
      std::optional<Candidate> c = Realize(product, design, seed);
      if (!c) continue;
      ir::Schedule sch = ir::ReplayTrace(product, c->trace, 0);
      std::vector<ir::LoopRV> loops = sch.GetLoops(sch.GetBlock("T_update"));
      for (const std::string& name : internal::BlockNames(sch.func())) {
        if (name.find("_global") == std::string::npos) continue;
        std::vector<ir::LoopRV> pack = sch.GetLoops(sch.GetBlock(name));
        if (!pack.empty() && &sch.Get(pack[0]) == &sch.Get(loops[0]) && sch.Get(loops[0]).extent == 1) ++shared;
      }
      EXPECT_TRUE(std::any_of(loops.begin(), loops.end(),
                              [&](ir::LoopRV l) { return sch.Get(l).for_kind == ir::ForKind::kParallel; }))
          << ir::PrintProgram(c->program);
    }
  }
  EXPECT_GT(shared, 0) << "no candidate put its packing under a loop of one iteration";
}

// A program of fewer than 32768 stores runs serially: two threads' dispatch
// costs more than they save (space_internal.h). A 16 x 32 x 16 dense layer
// is one; a 64 x 64 x 64 one, past the sampled range, runs in parallel.
TEST(DesignSpace, ATinyProgramRunsSerially) {
  for (const auto& [spec, parallel] : {std::pair{"dense:B=16,IN=32,OUT=16", false},
                                       std::pair{"dense:B=64,IN=64,OUT=64", true}}) {
    SCOPED_TRACE(spec);
    ir::Workload w = ir::BuildWorkload(spec);
    for (const ir::Trace& design : DefaultDesignSpace(w.func, SpaceOptionsFor(2, 512))) {
      std::optional<Candidate> c = Realize(w.func, design, 0);
      ASSERT_TRUE(c);
      std::string text = ir::PrintProgram(c->program);
      EXPECT_EQ(text.find("T.parallel(") != std::string::npos, parallel) << text;
      EXPECT_EQ(ir::testing::SameResult(w.func, c->program, 2), "");
    }
  }
}

// Between 2^15 and 2^18 stores the space samples serial or parallel, so
// fresh candidates come both ways, the recorded decision is parallel, the
// parallel mutator turns one into the other, and every one computes what
// the workload computes.
TEST(DesignSpace, ASmallProgramSamplesSerialOrParallel) {
  ir::Workload w = ir::BuildWorkload("matmul:M=40,N=40,K=40");
  const std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, SpaceOptionsFor(2, 512));
  auto parallel = [](const Candidate& c) { return ir::PrintProgram(c.program).find("T.parallel(") != std::string::npos; };
  int serial = 0, threaded = 0;
  for (std::size_t v = 0; v < spaces.size(); ++v) {
    SCOPED_TRACE("variant " + std::to_string(v));
    std::optional<Candidate> recorded = Realize(w.func, spaces[v], 0);
    ASSERT_TRUE(recorded);
    EXPECT_TRUE(parallel(*recorded)) << ir::PrintProgram(recorded->program);
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[v]), seed);
      ASSERT_TRUE(c);
      (parallel(*c) ? threaded : serial) += 1;
      EXPECT_EQ(ir::testing::SameResult(w.func, c->program, 3), "");
      std::mt19937_64 rng(seed);
      std::optional<ir::Trace> flipped = MutateParallel(c->design, 32, rng);
      ASSERT_TRUE(flipped);
      std::optional<Candidate> other = Realize(w.func, *flipped, seed);
      ASSERT_TRUE(other);
      EXPECT_NE(parallel(*other), parallel(*c)) << ir::PrintProgram(other->program);
      EXPECT_EQ(ir::testing::SameResult(w.func, other->program, 4), "");
    }
  }
  EXPECT_GT(serial, 0);
  EXPECT_GT(threaded, 0);
}

// A design of a program in the sampled range, decided serial, replayed
// onto a shape above the range (transfer does that) comes back parallel,
// as that shape's own space would have it; on its own shape it stays
// serial.
TEST(DesignSpace, ASerialDesignOfASmallShapeRunsParallelOnALargeOne) {
  const ir::Workload small = ir::BuildWorkload("matmul:M=32,N=48,K=32");
  const ir::Workload large = ir::BuildWorkload("matmul:M=64,N=96,K=64");
  auto parallel = [](const Candidate& c) { return ir::PrintProgram(c.program).find("T.parallel(") != std::string::npos; };
  const std::vector<ir::Trace> spaces = DefaultDesignSpace(small.func, SpaceOptionsFor(2, 512));
  int serial_sources = 0;
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    std::optional<Candidate> c = Realize(small.func, WithoutDecisions(spaces[seed % spaces.size()]), seed);
    ASSERT_TRUE(c);
    if (parallel(*c)) continue;
    serial_sources += 1;
    SCOPED_TRACE(c->trace.AsScript());
    std::optional<ir::Trace> same = DesignOf(small.func, c->trace);
    ASSERT_TRUE(same);
    std::optional<Candidate> again = Realize(small.func, *same, seed);
    ASSERT_TRUE(again);
    EXPECT_FALSE(parallel(*again));
    std::optional<ir::Trace> moved = DesignOf(large.func, c->trace);
    ASSERT_TRUE(moved);
    std::optional<Candidate> there = Realize(large.func, *moved, seed);
    ASSERT_TRUE(there);
    EXPECT_TRUE(parallel(*there)) << ir::PrintProgram(there->program);
    EXPECT_EQ(ir::testing::SameResult(large.func, there->program, 5), "");
  }
  EXPECT_GT(serial_sources, 0);
}

// A row longer than the vectorize limit (an elementwise output's, which
// no rule tiles) is vectorized in parts: split by its largest divisor up
// to the limit, when that is at least 8 lanes; otherwise left whole.
TEST(DesignSpace, ALongRowIsVectorizedInPartsWithinTheLimit) {
  const std::pair<int, std::int64_t> rows[] = {{112, 56}, {136, 34}, {64, 64}, {127, 0}, {134, 0}};
  for (const auto& [row, lanes] : rows) {
    SCOPED_TRACE("a row of " + std::to_string(row));
    const ir::PrimFunc f =
        ir::ParseWorkloadText("input X: f32[4, " + std::to_string(row) + "]\nY[i, j] = X[i, j] * 2.0\n");
    const std::vector<ir::Trace> spaces = DefaultDesignSpace(f, SpaceOptionsFor(2, 512));
    ASSERT_EQ(spaces.size(), 1u);
    std::optional<Candidate> c = Realize(f, spaces[0], 0);
    ASSERT_TRUE(c);
    ir::Schedule s(c->program, 0);
    const std::vector<ir::LoopRV> loops = s.GetLoops(s.GetBlock("Y"));
    const ir::ForNode& inner = s.Get(loops.back());
    if (lanes == 0) {
      EXPECT_EQ(inner.extent, row) << c->trace.AsScript();
      EXPECT_NE(inner.for_kind, ir::ForKind::kVectorized) << c->trace.AsScript();
    } else {
      EXPECT_EQ(inner.extent, lanes) << c->trace.AsScript();
      EXPECT_EQ(inner.for_kind, ir::ForKind::kVectorized) << c->trace.AsScript();
    }
    EXPECT_EQ(ir::testing::SameResult(f, c->program, 3), "");
  }
}

TEST(DesignSpace, StoredTraceGivesBackItsDesign) {
  ir::Workload w = ir::BuildWorkload("matmul:M=32,N=32,K=32");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, SpaceOptions{});
  std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[1]), 7);
  ASSERT_TRUE(c);
  std::optional<ir::Trace> design = DesignOf(w.func, c->trace);
  ASSERT_TRUE(design);
  std::optional<Candidate> again = Realize(w.func, *design, 1234);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->program_hash, c->program_hash);
}

TEST(DesignSpace, UserScriptIsASpace) {
  ir::Workload w = ir::BuildWorkload("matmul:M=32,N=32,K=32");
  std::vector<ir::Trace> spaces = ScriptDesignSpace(w.func,
                                                    "b = sch.get_block(\"C\")\n"
                                                    "i, j, k = sch.get_loops(b)\n"
                                                    "j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))\n"
                                                    "sch.vectorize(j1)\n",
                                                    "space.py");
  ASSERT_EQ(spaces.size(), 1u);
  std::set<std::uint64_t> programs;
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[0]), seed);
    ASSERT_TRUE(c);
    programs.insert(c->program_hash);
  }
  EXPECT_GT(programs.size(), 1u);
  EXPECT_THROW(ScriptDesignSpace(w.func, "sch.get_block(\"nope\")\n", "bad.py"), ir::ScheduleError);
}

}  // namespace
}  // namespace tunedb::search
