// Search strategies on a real design space, ranked by the heuristic (no
// measurement: the measured set and the elite are given).
#include "search/strategy.h"

#include <set>
#include <string>
#include <unordered_set>

#include <gtest/gtest.h>

#include "ir/workloads.h"

namespace tunedb::search {
namespace {

// Instructions and decisions in which two designs of one space differ.
int Differences(const ir::Trace& a, const ir::Trace& b) {
  if (a.insts.size() != b.insts.size()) return 1000;
  int n = 0;
  for (std::size_t i = 0; i < a.insts.size(); ++i) {
    n += ir::Trace{{a.insts[i]}, {}}.ToJson().dump() != ir::Trace{{b.insts[i]}, {}}.ToJson().dump();
  }
  for (const auto& [index, decision] : a.decisions) n += !b.decisions.count(index) || b.decisions.at(index) != decision;
  return n;
}

// Whether `c` is one of the elite's best program's siblings: its decisions
// on another variant of the space.
bool IsSiblingOfFastest(const Candidate& c, const SearchContext& context, const ir::Trace& fastest) {
  for (const ir::Trace& space : context.spaces) {
    if (VariantOf(space) == VariantOf(fastest)) continue;
    std::optional<Candidate> s = Realize(*context.workload, WithDecisionsOf(space, fastest), 0);
    if (s && s->program_hash == c.program_hash) return true;
  }
  return false;
}

struct Fixture {
  ir::Workload workload = ir::BuildWorkload("matmul:M=64,N=64,K=64");
  std::vector<Candidate> elite;
  std::unordered_set<std::uint64_t> measured;
  costmodel::TuningCostModel model{costmodel::TuningCostModel::Options{}};  // the heuristic: no samples
  SearchContext context;

  explicit Fixture(int elite_count) {
    context.workload = &workload.func;
    context.spaces = DefaultDesignSpace(workload.func, SpaceOptions{});
    for (std::uint64_t seed = 0; static_cast<int>(elite.size()) < elite_count; ++seed) {
      // Variants with a local accumulator (spaces 1 and 2): the kind a fast
      // candidate has.
      if (std::optional<Candidate> c = Realize(workload.func, WithoutDecisions(context.spaces[1 + seed % 2]), seed)) {
        measured.insert(c->program_hash);
        elite.push_back(std::move(*c));
      }
    }
    context.measured = &measured;
    context.elite = [this](int k) {
      std::vector<ir::Trace> out;
      for (int i = 0; i < k && i < static_cast<int>(elite.size()); ++i) out.push_back(elite[static_cast<std::size_t>(i)].design);
      return out;
    };
    context.model = &model;
    context.threads = 1;
  }
};

EvolutionaryOptions SmallEvolution() {
  EvolutionaryOptions o;
  o.population = 64;
  o.init_min_unmeasured = 16;
  o.generations = 2;
  return o;
}

TEST(EvolutionarySearch, BatchIsNewDistinctAndStartsWithNeighboursOfTheElite) {
  Fixture f(3);
  EvolutionaryOptions o = SmallEvolution();
  o.neighbour_share = 0.25;
  std::vector<Candidate> batch = MakeEvolutionarySearch(o, 7)->NextBatch(f.context, 16);
  ASSERT_EQ(batch.size(), 16u);
  std::unordered_set<std::uint64_t> hashes;
  for (const Candidate& c : batch) {
    EXPECT_FALSE(f.measured.count(c.program_hash)) << "proposed a measured program";
    EXPECT_TRUE(hashes.insert(c.program_hash).second) << "proposed a program twice";
  }
  // The first quarter: each one mutation away from one of the elite, or a
  // sibling of the fastest (the first pick).
  int far_from_elite_after_quota = 0;
  EXPECT_TRUE(IsSiblingOfFastest(batch[0], f.context, f.elite[0].design));
  for (std::size_t i = 0; i < batch.size(); ++i) {
    int nearest = 1000;
    for (const Candidate& e : f.elite) nearest = std::min(nearest, Differences(batch[i].design, e.design));
    if (i < 4) {
      EXPECT_TRUE(nearest == 1 || IsSiblingOfFastest(batch[i], f.context, f.elite[0].design))
          << "candidate " << i << " is neither a neighbour of the elite nor a sibling of the fastest";
    } else {
      far_from_elite_after_quota += nearest > 1;
    }
  }
  // The rest comes from the whole population, mostly far from the elite.
  EXPECT_GT(far_from_elite_after_quota, 0);
}

TEST(EvolutionarySearch, FirstBatchHoldsEveryVariantOfTheSpace) {
  // A cold batch, ranked by the heuristic: its ties at the top would leave
  // whole variants (the packed ones) out.
  Fixture f(0);
  std::vector<Candidate> batch = MakeEvolutionarySearch(SmallEvolution(), 5)->NextBatch(f.context, 16);
  std::set<std::string> variants;
  for (const Candidate& c : batch) variants.insert(VariantOf(c.design));
  std::set<std::string> space;
  for (const ir::Trace& t : f.context.spaces) space.insert(VariantOf(t));
  EXPECT_EQ(variants, space);
}

TEST(EvolutionarySearch, ColdBatchStartsWithTheSpaceOwnDecisions) {
  // Nothing measured: the first candidates are the space's designs with
  // their recorded decisions (the register block), one per variant.
  Fixture cold(0);
  std::vector<Candidate> batch = MakeEvolutionarySearch(SmallEvolution(), 5)->NextBatch(cold.context, 16);
  ASSERT_EQ(batch.size(), 16u);
  for (std::size_t i = 0; i < cold.context.spaces.size(); ++i) {
    std::optional<Candidate> own = Realize(cold.workload.func, cold.context.spaces[i], 0);
    ASSERT_TRUE(own.has_value());
    EXPECT_EQ(batch[i].program_hash, own->program_hash) << "candidate " << i;
  }
  // With measured candidates, the batch starts with the elite's neighbours
  // instead (BatchIsNewDistinctAndStartsWithNeighboursOfTheElite).
  Fixture warm(3);
  batch = MakeEvolutionarySearch(SmallEvolution(), 5)->NextBatch(warm.context, 16);
  std::optional<Candidate> own = Realize(warm.workload.func, warm.context.spaces[0], 0);
  ASSERT_TRUE(own.has_value());
  EXPECT_NE(batch[0].program_hash, own->program_hash);
}

TEST(EvolutionarySearch, NeighboursBetweenChunksFollowTheEliteAndSkipTheBatchRest) {
  Fixture f(1);
  std::unique_ptr<SearchStrategy> search = MakeEvolutionarySearch(SmallEvolution(), 3);
  std::vector<Candidate> first = search->Neighbours(f.context, 4, {});
  ASSERT_EQ(first.size(), 4u);
  std::unordered_set<std::uint64_t> rest;
  EXPECT_TRUE(IsSiblingOfFastest(first[0], f.context, f.elite[0].design));
  for (const Candidate& c : first) {
    EXPECT_TRUE(Differences(c.design, f.elite[0].design) == 1 || IsSiblingOfFastest(c, f.context, f.elite[0].design));
    rest.insert(c.program_hash);
  }
  // A chunk measured a new best: its neighbours come next, never one of
  // the batch's unmeasured rest.
  Fixture other(2);
  f.elite = {other.elite[1]};
  f.measured.insert(other.elite[1].program_hash);
  std::vector<Candidate> next = search->Neighbours(f.context, 4, rest);
  EXPECT_EQ(next.size(), 4u);
  EXPECT_TRUE(IsSiblingOfFastest(next[0], f.context, f.elite[0].design));
  for (const Candidate& c : next) {
    EXPECT_FALSE(rest.count(c.program_hash));
    EXPECT_FALSE(f.measured.count(c.program_hash));
    EXPECT_TRUE(Differences(c.design, f.elite[0].design) == 1 || IsSiblingOfFastest(c, f.context, f.elite[0].design));
  }
}

TEST(EvolutionarySearch, WithoutEliteOrShareTheBatchIsStillFull) {
  Fixture none(0);
  EXPECT_EQ(MakeEvolutionarySearch(SmallEvolution(), 1)->NextBatch(none.context, 12).size(), 12u);
  Fixture f(2);
  EvolutionaryOptions o = SmallEvolution();
  o.neighbour_share = 0;
  std::vector<Candidate> batch = MakeEvolutionarySearch(o, 1)->NextBatch(f.context, 12);
  ASSERT_EQ(batch.size(), 12u);
  for (const Candidate& c : batch) EXPECT_FALSE(f.measured.count(c.program_hash));
}

// Randomness flows from the seed alone (docs/ARCHITECTURE.md): the same
// seed and the same history propose the same batch, in the same order,
// whether candidates are realized on one thread or several; another seed
// proposes another batch.
TEST(SearchStrategies, TheSameSeedProposesTheSameBatchOnAnyThreadCount) {
  auto hashes = [](const std::vector<Candidate>& batch) {
    std::vector<std::uint64_t> out;
    for (const Candidate& c : batch) out.push_back(c.program_hash);
    return out;
  };
  for (bool evolutionary : {true, false}) {
    SCOPED_TRACE(evolutionary ? "evolutionary" : "random");
    auto make = [&](std::uint64_t seed) {
      return evolutionary ? MakeEvolutionarySearch(SmallEvolution(), seed) : MakeRandomSearch(seed);
    };
    Fixture one(3), two(3);
    two.context.threads = 2;
    std::unique_ptr<SearchStrategy> a = make(11), b = make(11);
    for (int round = 0; round < 2; ++round) {
      std::vector<std::uint64_t> first = hashes(a->NextBatch(one.context, 16));
      ASSERT_EQ(first.size(), 16u);
      EXPECT_EQ(first, hashes(b->NextBatch(two.context, 16))) << "round " << round;
      one.measured.insert(first.begin(), first.end());
      two.measured.insert(first.begin(), first.end());
    }
    Fixture other(3);
    EXPECT_NE(hashes(make(11)->NextBatch(other.context, 16)), hashes(make(12)->NextBatch(other.context, 16)));
  }
}

}  // namespace
}  // namespace tunedb::search
