#include "search/mutator.h"

#include <random>

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/workloads.h"
#include "search/space.h"
#include "tests/ir/schedule/schedule_test_util.h"

namespace tunedb::search {
namespace {

std::vector<std::int64_t> TileDecision(const ir::Trace& t, std::size_t index) {
  return t.decisions.at(index).get<std::vector<std::int64_t>>();
}

TEST(Mutator, TileSizeKeepsTheProductAndTheInnermostLimit) {
  ir::Workload w = ir::BuildWorkload("matmul:M=64,N=48,K=32");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, SpaceOptions{});
  std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[2]), 3);
  ASSERT_TRUE(c);
  std::mt19937_64 rng(5);
  int changed = 0;
  for (int i = 0; i < 50; ++i) {
    std::optional<ir::Trace> m = MutateTileSize(c->design, rng);
    ASSERT_TRUE(m);
    for (std::size_t index : c->design.SamplingInstructions()) {
      if (c->design.insts[index].kind != "SamplePerfectTile") continue;
      std::vector<std::int64_t> before = TileDecision(c->design, index), after = TileDecision(*m, index);
      std::int64_t pb = 1, pa = 1;
      for (auto x : before) pb *= x;
      for (auto x : after) pa *= x;
      EXPECT_EQ(pa, pb);
      EXPECT_LE(after.back(), 64);
      changed += before != after;
    }
  }
  EXPECT_EQ(changed, 50);  // exactly one tile decision changes per mutation
}

// The parallel limit of a program past the sampled range (space.h) is a
// literal; ASmallProgramSamplesSerialOrParallel covers the sampled one.
TEST(Mutator, UnrollAndParallelPickAnotherValue) {
  ir::Workload w = ir::BuildWorkload("matmul:M=64,N=64,K=64");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, SpaceOptions{});
  std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[0]), 1);
  ASSERT_TRUE(c);
  std::mt19937_64 rng(9);
  std::optional<ir::Trace> u = MutateUnroll(c->design, rng);
  ASSERT_TRUE(u);
  EXPECT_NE(u->decisions, c->design.decisions);
  std::optional<ir::Trace> p = MutateParallel(c->design, 32, rng);
  ASSERT_TRUE(p);
  EXPECT_NE(p->ToJson().dump(), c->design.ToJson().dump());
  EXPECT_EQ(p->decisions, c->design.decisions);
}

TEST(Mutator, ComputeLocationPicksALegalOtherLocation) {
  // softmax's max stage is a reduction that is not tiled, its rows too short
  // for the vector rfactor (under 16): it gets a random compute location.
  ir::Workload w = ir::BuildWorkload("softmax:M=8,N=8");
  std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, SpaceOptions{});
  std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[0]), 2);
  ASSERT_TRUE(c);
  ASSERT_NE(c->design.AsScript().find("sample_compute_location"), std::string::npos);
  std::mt19937_64 rng(4);
  std::optional<ir::Trace> m = MutateComputeLocation(c->design, w.func, rng);
  ASSERT_TRUE(m);
  EXPECT_NE(m->decisions, c->design.decisions);
  std::optional<Candidate> mutated = Realize(w.func, *m, 0);
  ASSERT_TRUE(mutated);
  EXPECT_EQ(ir::testing::SameResult(w.func, mutated->program), "");
}

// Whatever the mutators do, what Realize accepts computes the same result.
TEST(Mutator, MutatedCandidatesStayValid) {
  std::mt19937_64 rng(11);
  for (const char* spec : {"matmul:M=16,N=24,K=8", "matmul:M=19,N=21,K=7" /* padded variants */,
                           "dense_bias_relu:B=8,IN=12,OUT=16", "dense:B=2,IN=64,OUT=12" /* matrix-vector */,
                           "conv2d_nhwc:N=1,H=6,W=6,CI=4,CO=8,KH=3,KW=3,stride=1,pad=1", "softmax:M=4,N=16"}) {
    SCOPED_TRACE(spec);
    ir::Workload w = ir::BuildWorkload(spec);
    std::vector<ir::Trace> spaces = DefaultDesignSpace(w.func, SpaceOptions{});
    int valid = 0;
    for (std::uint64_t seed = 0; seed < 12; ++seed) {
      std::optional<Candidate> c = Realize(w.func, WithoutDecisions(spaces[seed % spaces.size()]), seed);
      ASSERT_TRUE(c);
      for (int step = 0; step < 3; ++step) {
        std::optional<ir::Trace> m = Mutate(c->design, w.func, 32, MutatorProbabilities{}, rng);
        if (!m) break;
        std::optional<Candidate> next = Realize(w.func, *m, rng());
        if (!next) continue;
        ASSERT_EQ(ir::testing::SameResult(w.func, next->program, seed), "")
            << ir::PrintProgram(next->program) << next->trace.AsScript();
        ++valid;
        c = std::move(next);
      }
    }
    EXPECT_GE(valid, 24);
  }
}

}  // namespace
}  // namespace tunedb::search
