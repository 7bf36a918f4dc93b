#include "search/strategy.h"

#include <algorithm>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "costmodel/dataset.h"
#include "ir/mix.h"

namespace tunedb::search {

std::vector<Candidate> SampleRandom(const SearchContext& context, int n, std::unordered_set<std::uint64_t>& exclude,
                                    std::mt19937_64& rng) {
  std::vector<Candidate> out;
  if (context.spaces.empty() || n <= 0) return out;
  std::vector<ir::Trace> fresh;
  for (const ir::Trace& space : context.spaces) fresh.push_back(WithoutDecisions(space));
  // Draws are prepared in rounds and realized in parallel; small spaces run
  // dry, so give up after a bounded number of draws that bring nothing new.
  int misses = 0;
  const int max_misses = std::max(64, 4 * n);
  while (static_cast<int>(out.size()) < n && misses < max_misses) {
    std::vector<RealizeRequest> round;
    for (int i = static_cast<int>(out.size()); i < n; ++i) {
      round.push_back({&fresh[std::uniform_int_distribution<std::size_t>(0, fresh.size() - 1)(rng)], rng()});
    }
    for (std::optional<Candidate>& c : RealizeBatch(*context.workload, round, context.threads)) {
      if (!c || context.measured->count(c->program_hash) || !exclude.insert(c->program_hash).second ||
          static_cast<int>(out.size()) >= n) {
        ++misses;
        continue;
      }
      out.push_back(std::move(*c));
    }
  }
  return out;
}

namespace {

class RandomSearch : public SearchStrategy {
 public:
  explicit RandomSearch(std::uint64_t seed) : rng_(seed) {}
  std::vector<Candidate> NextBatch(const SearchContext& context, int n) override {
    std::unordered_set<std::uint64_t> picked;
    return SampleRandom(context, n, picked, rng_);
  }

 private:
  std::mt19937_64 rng_;
};

// A realized candidate holds two traces and a program: thousands of
// allocations to copy or destroy. Generations share their members instead
// (a child kept from its parent, the pool of every generation's unmeasured
// candidates); copies of them were a quarter of the search's time in a
// profile of a matmul 128 session.
using SharedCandidate = std::shared_ptr<const Candidate>;

std::uint64_t RVKey(const ir::RVRef& rv) {
  return static_cast<std::uint64_t>(rv.kind) << 32 | static_cast<std::uint32_t>(rv.id);
}

// A 64-bit key of a design trace: its instructions and decisions. Two
// designs that collide would share a candidate, which is still a valid
// program of the workload (and measured like any other); with tens of
// thousands of designs per search the odds are about 1e-11.
std::uint64_t DesignKey(const ir::Trace& design) {
  std::uint64_t h = 0;
  // Each part is scrambled before it is folded in: std::hash of an integer
  // is the integer itself.
  auto scramble = [](std::uint64_t v) { return ir::Mix64(v + ir::kGoldenGamma); };
  auto mix = [&](std::uint64_t v) { h = scramble(h ^ scramble(v)); };
  for (const ir::Instruction& inst : design.insts) {
    mix(std::hash<std::string>()(inst.kind));
    for (const ir::InstInput& input : inst.inputs) {
      mix(input.index());
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, ir::RVRef>) {
              mix(RVKey(v));
            } else if constexpr (!std::is_same_v<T, std::monostate>) {
              mix(std::hash<T>()(v));
            }
          },
          input);
    }
    mix(std::hash<nlohmann::json>()(inst.attrs));
    for (const ir::RVRef& out : inst.outputs) mix(RVKey(out));
  }
  for (const auto& [index, decision] : design.decisions) {
    mix(index);
    mix(std::hash<nlohmann::json>()(decision));
  }
  return h;
}

class EvolutionarySearch : public SearchStrategy {
 public:
  EvolutionarySearch(const EvolutionaryOptions& options, std::uint64_t seed) : options_(options), rng_(seed) {}

  std::vector<Candidate> NextBatch(const SearchContext& context, int n) override {
    scores_.clear();
    realized_.clear();
    unrealizable_.clear();
    std::unordered_set<std::uint64_t> in_population;
    std::vector<SharedCandidate> population = InitialPopulation(context, in_population);
    if (population.empty()) return {};

    // Unmeasured candidates seen in any generation, by program hash.
    std::map<std::uint64_t, SharedCandidate> pool;
    for (int generation = 0; generation < options_.generations; ++generation) {
      std::vector<double> scores = Score(context, Pointers(population));
      for (const SharedCandidate& c : population) {
        if (!context.measured->count(c->program_hash)) pool.emplace(c->program_hash, c);
      }
      if (generation + 1 == options_.generations) break;
      population = NextGeneration(context, population, scores);
      if (population.empty()) break;
    }

    // Epsilon-greedy: the best-scored, and a few random ones to keep the
    // model honest about regions it scores low.
    std::vector<const Candidate*> ranked;
    for (const auto& [hash, c] : pool) ranked.push_back(c.get());
    std::stable_sort(ranked.begin(), ranked.end(), [&](const Candidate* a, const Candidate* b) {
      return scores_.at(a->program_hash) > scores_.at(b->program_hash);
    });
    // Measured first: the context's measure_first designs (a program's
    // parts composed), the space's own designs when nothing is measured yet,
    // neighbours of the elite, the best of every variant, the random share
    // (so that neighbours the tuner adds between chunks displace only the
    // ranking's tail), then the ranking.
    int random_share = static_cast<int>(options_.eps_greedy * n + 0.5);
    std::unordered_set<std::uint64_t> picked;
    std::vector<Candidate> batch = Unmeasured(context, context.measure_first, n, picked);
    if (context.measured->empty() && !context.designs_measured_elsewhere) {
      // The space's own recorded decisions (the default space's register
      // block, space.h): the first candidates of a task with nothing
      // measured yet.
      int room = std::min(n / 2, n - static_cast<int>(batch.size()));
      for (Candidate& c : Unmeasured(context, context.spaces, room, picked)) batch.push_back(std::move(c));
    }
    for (Candidate& c : Neighbours(context, NeighbourQuota(n), picked)) {
      picked.insert(c.program_hash);
      batch.push_back(std::move(c));
    }
    // The best-scored of every variant of the space: the heuristic's (or a
    // young model's) ties at the top of the ranking leave whole variants
    // out otherwise, and neighbours can only explore a variant measured.
    std::set<std::string> variants;
    for (const Candidate* c : ranked) {
      // Keys cost a pass over the design; stop once every variant has one.
      if (static_cast<int>(batch.size()) >= n || variants.size() == context.spaces.size()) break;
      if (variants.insert(VariantOf(c->design)).second && picked.insert(c->program_hash).second) batch.push_back(*c);
    }
    for (Candidate& c : SampleRandom(context, std::min(random_share, n - static_cast<int>(batch.size())), picked, rng_)) {
      batch.push_back(std::move(c));
    }
    for (const Candidate* c : ranked) {
      if (static_cast<int>(batch.size()) >= n) break;
      if (picked.insert(c->program_hash).second) batch.push_back(*c);
    }
    // A small space may leave the ranking short: fill with random samples.
    for (Candidate& c : SampleRandom(context, n - static_cast<int>(batch.size()), picked, rng_)) {
      batch.push_back(std::move(c));
    }
    // The pool and the memo are freed here, before the batch is measured
    // (40-60 ms a batch at matmul 128 to conv2d). Freed on another thread
    // while the batch's first chunk was timed, they took a core from the
    // two-thread kernels: 13 us matmul 128 kernels ran 300 us a run, and
    // the slow cutoff kept that as their timing, a quarter of a warm
    // session's first chunk recorded 24x too slow (bench/RESULTS.md,
    // session 35). Timing runs alone (measure/runner.h).
    realized_.clear();
    return batch;
  }

  // Round robin over the fastest program's siblings and the elite's
  // neighbours, fastest parent first, each group best-scored first: the
  // first picks are the best-scored sibling and the best-scored neighbour
  // of the fastest program, and no single group takes the whole share.
  std::vector<Candidate> Neighbours(const SearchContext& context, int n,
                                    const std::unordered_set<std::uint64_t>& exclude) override {
    if (n <= 0) return {};
    std::vector<std::vector<Candidate>> by_parent = EliteNeighbours(context, exclude);
    for (std::vector<Candidate>& group : by_parent) {
      std::vector<double> scores = Score(context, Pointers(group));
      std::vector<std::size_t> order(group.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
      std::vector<Candidate> sorted;
      for (std::size_t i : order) sorted.push_back(std::move(group[i]));
      group = std::move(sorted);
    }
    std::vector<Candidate> out;
    for (std::size_t rank = 0; static_cast<int>(out.size()) < n; ++rank) {
      bool any = false;
      for (std::vector<Candidate>& group : by_parent) {
        if (rank >= group.size() || static_cast<int>(out.size()) >= n) continue;
        any = true;
        out.push_back(std::move(group[rank]));
      }
      if (!any) break;
    }
    return out;
  }

 private:
  static std::vector<const Candidate*> Pointers(const std::vector<SharedCandidate>& candidates) {
    std::vector<const Candidate*> out;
    out.reserve(candidates.size());
    for (const SharedCandidate& c : candidates) out.push_back(c.get());
    return out;
  }
  static std::vector<const Candidate*> Pointers(const std::vector<Candidate>& candidates) {
    std::vector<const Candidate*> out;
    out.reserve(candidates.size());
    for (const Candidate& c : candidates) out.push_back(&c);
    return out;
  }

  std::vector<SharedCandidate> InitialPopulation(const SearchContext& context, std::unordered_set<std::uint64_t>& seen) {
    std::vector<SharedCandidate> population;
    auto add = [&](const ir::Trace& design) {
      std::optional<Candidate> c = Realize(*context.workload, design, rng_());
      if (c && seen.insert(c->program_hash).second) population.push_back(std::make_shared<const Candidate>(std::move(*c)));
    };
    int measured_quota = static_cast<int>(options_.population * options_.init_measured_ratio);
    if (context.elite) {
      for (const ir::Trace& design : context.elite(measured_quota)) add(design);
    }
    for (const ir::Trace& design : context.transfer) {
      if (static_cast<int>(population.size()) >= options_.population) break;
      add(design);
    }
    int fill = std::max(options_.init_min_unmeasured, options_.population - static_cast<int>(population.size()));
    for (Candidate& c : SampleRandom(context, fill, seen, rng_)) {
      population.push_back(std::make_shared<const Candidate>(std::move(c)));
    }
    return population;
  }

  int NeighbourQuota(int n) const { return static_cast<int>(options_.neighbour_share * n + 0.5); }

  // Up to n of `designs` realized, in order, skipping those measured or
  // picked already (and adding the rest to `picked`).
  std::vector<Candidate> Unmeasured(const SearchContext& context, const std::vector<ir::Trace>& designs, int n,
                                    std::unordered_set<std::uint64_t>& picked) {
    std::vector<Candidate> out;
    for (const ir::Trace& design : designs) {
      if (static_cast<int>(out.size()) >= n) break;
      std::optional<Candidate> c = Realize(*context.workload, design, rng_());
      if (c && !context.measured->count(c->program_hash) && picked.insert(c->program_hash).second) {
        out.push_back(std::move(*c));
      }
    }
    return out;
  }

  // Unmeasured programs, none of them in `exclude`: first the fastest
  // measured program's siblings (its decisions on the other variants),
  // then those one mutation away from each of the fastest, grouped by
  // parent (fastest first).
  std::vector<std::vector<Candidate>> EliteNeighbours(const SearchContext& context,
                                                      const std::unordered_set<std::uint64_t>& exclude) {
    if (!context.elite) return {};
    std::vector<ir::Trace> parents = context.elite(options_.elite_parents);
    if (parents.empty()) return {};
    std::vector<ir::Trace> designs;
    std::vector<std::size_t> parent_of;
    std::vector<std::uint64_t> seeds;
    // Group 0: the fastest program's decisions on every other variant of
    // the space (its siblings). Mutation never leaves a variant, so without
    // them the variants the elite is not from are only ever tried with
    // random tiles, which are slow in every variant.
    const std::string fastest = VariantOf(parents[0]);
    for (const ir::Trace& space : context.spaces) {
      if (VariantOf(space) == fastest) continue;
      designs.push_back(WithDecisionsOf(space, parents[0]));
      parent_of.push_back(0);
      seeds.push_back(rng_());
    }
    for (int i = 0; i < options_.neighbour_attempts; ++i) {
      std::size_t parent = static_cast<std::size_t>(i) % parents.size();
      std::optional<ir::Trace> design = Mutate(parents[parent], *context.workload, context.max_jobs, options_.mutators, rng_);
      if (!design) continue;
      designs.push_back(std::move(*design));
      parent_of.push_back(parent + 1);
      seeds.push_back(rng_());
    }
    std::vector<RealizeRequest> requests;
    for (std::size_t i = 0; i < designs.size(); ++i) requests.push_back({&designs[i], seeds[i]});
    std::vector<std::vector<Candidate>> out(parents.size() + 1);
    std::unordered_set<std::uint64_t> seen;
    std::vector<std::optional<Candidate>> children = RealizeBatch(*context.workload, requests, context.threads);
    for (std::size_t i = 0; i < children.size(); ++i) {
      std::optional<Candidate>& c = children[i];
      if (c && !context.measured->count(c->program_hash) && !exclude.count(c->program_hash) &&
          seen.insert(c->program_hash).second) {
        out[parent_of[i]].push_back(std::move(*c));
      }
    }
    return out;
  }

  // Cost-model scores, each program featurized once per batch.
  std::vector<double> Score(const SearchContext& context, const std::vector<const Candidate*>& population) {
    std::vector<ir::PrimFunc> programs;
    std::vector<std::uint64_t> hashes;
    for (const Candidate* c : population) {
      if (scores_.count(c->program_hash)) continue;
      scores_[c->program_hash] = 0;
      programs.push_back(c->program);
      hashes.push_back(c->program_hash);
    }
    if (!programs.empty()) {
      std::vector<double> predicted = context.model->Predict(costmodel::FeaturizeBatch(programs, context.threads));
      for (std::size_t i = 0; i < hashes.size(); ++i) scores_[hashes[i]] = predicted[i];
    }
    std::vector<double> scores;
    for (const Candidate* c : population) scores.push_back(scores_.at(c->program_hash));
    return scores;
  }

  std::vector<SharedCandidate> NextGeneration(const SearchContext& context, const std::vector<SharedCandidate>& population,
                                        const std::vector<double>& scores) {
    // Parents in proportion to their score, shifted to be positive (rank
    // objectives give scores of any sign).
    double lo = *std::min_element(scores.begin(), scores.end());
    double hi = *std::max_element(scores.begin(), scores.end());
    std::vector<double> weights;
    for (double s : scores) weights.push_back(hi > lo ? (s - lo) / (hi - lo) + 0.01 : 1.0);
    std::discrete_distribution<std::size_t> parent(weights.begin(), weights.end());
    std::bernoulli_distribution mutate(options_.mutate_probability);

    // Children are prepared in rounds (parent, mutation and seed drawn in
    // order from the generator) and realized in parallel; a slot whose
    // attempt fails gets another in the next round, up to max_fail_count.
    std::vector<SharedCandidate> next;
    std::unordered_set<std::uint64_t> seen;
    int open_slots = options_.population;
    for (int round = 0; round < options_.max_fail_count && open_slots > 0; ++round) {
      std::vector<ir::Trace> designs;
      std::vector<const SharedCandidate*> kept;  // unmutated parents, by attempt
      std::vector<std::uint64_t> seeds;
      std::vector<bool> failed;  // no mutator applied
      designs.reserve(static_cast<std::size_t>(open_slots));
      for (int i = 0; i < open_slots; ++i) {
        const SharedCandidate& p = population[parent(rng_)];
        bool mutated = mutate(rng_);
        std::optional<ir::Trace> design;
        if (mutated) design = Mutate(p->design, *context.workload, context.max_jobs, options_.mutators, rng_);
        kept.push_back(mutated ? nullptr : &p);
        designs.push_back(design ? std::move(*design) : ir::Trace{});
        failed.push_back(mutated && !design);
        seeds.push_back(rng_());
      }
      // Each design is realized once per NextBatch call: a design fixes
      // every decision, so its candidate is the same whatever the seed
      // (space_test pins that). In a small space most children repeat a
      // design: a 64-trial softmax session asked for 22,000 realizations,
      // nearly all of designs realized before.
      std::vector<std::uint64_t> keys(designs.size(), 0);
      std::vector<RealizeRequest> requests;
      std::vector<std::uint64_t> request_keys;
      std::unordered_set<std::uint64_t> requested;
      for (std::size_t i = 0; i < designs.size(); ++i) {
        if (kept[i] || failed[i]) continue;
        keys[i] = DesignKey(designs[i]);
        if (realized_.count(keys[i]) || unrealizable_.count(keys[i]) || !requested.insert(keys[i]).second) continue;
        request_keys.push_back(keys[i]);
        requests.push_back({&designs[i], seeds[i]});
      }
      std::vector<std::optional<Candidate>> children = RealizeBatch(*context.workload, requests, context.threads);
      for (std::size_t r = 0; r < requests.size(); ++r) {
        if (children[r]) {
          realized_.emplace(request_keys[r], std::make_shared<const Candidate>(std::move(*children[r])));
        } else {
          unrealizable_.insert(request_keys[r]);
        }
      }
      for (std::size_t i = 0; i < designs.size(); ++i) {
        SharedCandidate child;
        if (kept[i]) {
          child = *kept[i];
        } else if (!failed[i]) {
          auto it = realized_.find(keys[i]);
          if (it != realized_.end()) child = it->second;
        }
        if (!child || !seen.insert(child->program_hash).second) continue;
        next.push_back(std::move(child));
        --open_slots;
      }
    }
    return next;
  }

  EvolutionaryOptions options_;
  std::mt19937_64 rng_;
  // The designs NextGeneration realized in this NextBatch call, by
  // DesignKey, and those that could not be.
  std::unordered_map<std::uint64_t, SharedCandidate> realized_;
  std::unordered_set<std::uint64_t> unrealizable_;
  std::unordered_map<std::uint64_t, double> scores_;
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeRandomSearch(std::uint64_t seed) { return std::make_unique<RandomSearch>(seed); }

std::unique_ptr<SearchStrategy> MakeEvolutionarySearch(const EvolutionaryOptions& options, std::uint64_t seed) {
  return std::make_unique<EvolutionarySearch>(options, seed);
}

}  // namespace tunedb::search
