// Search strategies: which candidates of a design space to measure next.
//
//  - random: replay a random design space with fresh samples;
//  - evolutionary (TVM MetaSchedule's EvolutionarySearch): a population
//    seeded by the best measured candidates of this workload (warm start,
//    from the database), by the best traces of similar workloads replayed
//    onto this one (transfer) and by random samples; a few generations of
//    mutation, each parent drawn in proportion to its cost-model score;
//    then the batch is the best-scored unmeasured candidates, with an
//    epsilon share of random ones (epsilon-greedy). A cold task's first
//    batch starts with the space's designs under their own recorded
//    decisions (the default space's register block, space.h). A share of
//    each batch goes first to the best-scored neighbours of the fastest
//    measured candidates (one mutation away) and to the fastest one's
//    siblings (its decisions on the space's other variants, WithDecisionsOf
//    in space.h: mutation never changes a variant), and the tuner asks for
//    more before each later chunk: a model trained on few samples (or the
//    heuristic before it) is least reliable at the top of its ranking of
//    the whole space, while a small change to a fast program is often
//    fast. Then the best-scored of every variant of the space (VariantOf,
//    space.h), so that ties at the top of the ranking never leave a
//    variant out.
// Neither ever proposes a candidate whose program is already measured (for
// this workload and target) or proposes one twice. An empty batch means the
// space has nothing new left.
//
// Thread-safety: a strategy belongs to one task of one tuning loop.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <unordered_set>
#include <vector>

#include "costmodel/tuning_model.h"
#include "search/mutator.h"
#include "search/space.h"

namespace tunedb::search {

// What a strategy sees of its task.
struct SearchContext {
  const ir::PrimFunc* workload = nullptr;
  std::vector<ir::Trace> spaces;                  // design spaces
  std::int64_t max_jobs = 16;                     // parallel limit, for the parallel mutator
  const std::unordered_set<std::uint64_t>* measured = nullptr;  // program hashes already measured
  // Design traces of the best measured candidates, best first.
  std::function<std::vector<ir::Trace>(int k)> elite;
  std::vector<ir::Trace> transfer;                // designs replayed from similar workloads
  // Designs measured ahead of anything the model ranks, unless measured
  // already: the program's parts' best schedules composed (ir/parts.h).
  std::vector<ir::Trace> measure_first;
  const costmodel::TuningCostModel* model = nullptr;
  int threads = 0;                                // for featurization; 0: one per core
  // A running session of the same command measures the space's own designs
  // first (it started with nothing measured too): this one leaves them to it.
  bool designs_measured_elsewhere = false;
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // Up to n new candidates.
  virtual std::vector<Candidate> NextBatch(const SearchContext& context, int n) = 0;
  // Between the chunks of a batch: up to n new candidates to measure next,
  // none of them in `exclude` (the batch's unmeasured rest), now that the
  // chunks measured so far may have changed the elite. None by default.
  virtual std::vector<Candidate> Neighbours(const SearchContext& context, int n,
                                            const std::unordered_set<std::uint64_t>& exclude) {
    (void)context, (void)n, (void)exclude;
    return {};
  }
};

std::unique_ptr<SearchStrategy> MakeRandomSearch(std::uint64_t seed);

struct EvolutionaryOptions {
  int population = 512;
  double init_measured_ratio = 0.2;  // share of the population seeded from measured candidates
  int init_min_unmeasured = 50;      // random samples at least
  int generations = 4;
  double mutate_probability = 0.85;
  int max_fail_count = 10;           // mutation attempts per child
  double eps_greedy = 0.05;          // share of the batch picked at random
  // Share of the batch, and of each later chunk of it, that goes to
  // neighbours of the best measured candidates: one mutation away from one
  // of the elite_parents fastest, best-scored first.
  double neighbour_share = 0.25;
  int elite_parents = 8;
  int neighbour_attempts = 256;      // mutations tried per call (batch start, each later chunk)
  MutatorProbabilities mutators;
};

std::unique_ptr<SearchStrategy> MakeEvolutionarySearch(const EvolutionaryOptions& options, std::uint64_t seed);

// Up to n random candidates (fresh samples of random spaces), skipping
// measured programs and those in `exclude`, which gains the new ones.
std::vector<Candidate> SampleRandom(const SearchContext& context, int n, std::unordered_set<std::uint64_t>& exclude,
                                    std::mt19937_64& rng);

}  // namespace tunedb::search
