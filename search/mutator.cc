#include "search/mutator.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ir/factor.h"
#include "ir/schedule/schedule.h"
#include "search/space_internal.h"

namespace tunedb::search {
namespace {

using internal::IsAnnotateOf;
using internal::SamplesAnnotating;

template <typename T>
const T& PickOne(const std::vector<T>& v, std::mt19937_64& rng) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}

// One of the sites with another of its candidates.
std::optional<ir::Trace> MutateCategorical(const ir::Trace& design, const std::vector<std::size_t>& sites,
                                           std::mt19937_64& rng) {
  if (sites.empty()) return std::nullopt;
  std::size_t index = PickOne(sites, rng);
  const nlohmann::json& candidates = design.insts[index].attrs[0];
  std::int64_t current = design.decisions.at(index).get<std::int64_t>();
  if (candidates.size() < 2) return std::nullopt;
  std::int64_t next = std::uniform_int_distribution<std::int64_t>(0, static_cast<std::int64_t>(candidates.size()) - 2)(rng);
  if (next >= current) ++next;
  ir::Trace out = design;
  out.decisions[index] = next;
  return out;
}

}  // namespace

std::optional<ir::Trace> MutateTileSize(const ir::Trace& design, std::mt19937_64& rng) {
  std::vector<std::size_t> sites;
  for (const auto& [index, decision] : design.decisions) {
    if (design.insts[index].kind != "SamplePerfectTile" || !decision.is_array() || decision.size() < 2) continue;
    for (const auto& x : decision) {
      if (x.is_number_integer() && x.get<std::int64_t>() > 1) {
        sites.push_back(index);
        break;
      }
    }
  }
  // TVM's MutateTileSize: divide one tile by a factor of it and multiply
  // another by the same factor, so the product (the loop extent) stays.
  for (int attempt = 0; attempt < 16 && !sites.empty(); ++attempt) {
    std::size_t index = PickOne(sites, rng);
    std::vector<std::int64_t> tiles = design.decisions.at(index).get<std::vector<std::int64_t>>();
    const ir::Instruction& inst = design.insts[index];
    std::int64_t max_innermost = inst.attrs.size() > 1 && inst.attrs[1].is_number_integer()
                                     ? inst.attrs[1].get<std::int64_t>()
                                     : 0;
    std::vector<std::size_t> from;
    for (std::size_t i = 0; i < tiles.size(); ++i) {
      if (tiles[i] > 1) from.push_back(i);
    }
    std::size_t src = PickOne(from, rng);
    std::size_t dst = std::uniform_int_distribution<std::size_t>(0, tiles.size() - 2)(rng);
    if (dst >= src) ++dst;
    // A divisor other than 1, so the mutation changes something.
    std::vector<std::int64_t> factors = ir::Divisors(tiles[src]);
    factors.erase(factors.begin());
    std::int64_t factor = PickOne(factors, rng);
    tiles[src] /= factor;
    tiles[dst] *= factor;
    if (max_innermost > 0 && tiles.back() > max_innermost) continue;
    ir::Trace out = design;
    out.decisions[index] = tiles;
    return out;
  }
  return std::nullopt;
}

std::optional<ir::Trace> MutateUnroll(const ir::Trace& design, std::mt19937_64& rng) {
  return MutateCategorical(design, SamplesAnnotating(design, "meta_schedule.unroll_explicit"), rng);
}

std::optional<ir::Trace> MutateParallel(const ir::Trace& design, std::int64_t max_jobs, std::mt19937_64& rng) {
  // Where the space samples serial or parallel, the other of the two.
  std::vector<std::size_t> sampled = SamplesAnnotating(design, "meta_schedule.parallel");
  if (!sampled.empty()) return MutateCategorical(design, sampled, rng);
  for (std::size_t i = 0; i < design.insts.size(); ++i) {
    const ir::Instruction& inst = design.insts[i];
    if (!IsAnnotateOf(inst, "meta_schedule.parallel")) continue;
    const auto* current = std::get_if<std::int64_t>(&inst.inputs[1]);
    if (!current) return std::nullopt;
    std::vector<std::int64_t> choices;
    // 1 leaves the program serial: tiny workloads lose to the fork-join.
    for (std::int64_t v = 1; v < max_jobs; v *= 2) {
      if (v != *current) choices.push_back(v);
    }
    if (max_jobs != *current && max_jobs > 1) choices.push_back(max_jobs);
    if (choices.empty()) return std::nullopt;
    ir::Trace out = design;
    out.insts[i].inputs[1] = PickOne(choices, rng);
    return out;
  }
  return std::nullopt;
}

std::optional<ir::Trace> MutateComputeLocation(const ir::Trace& design, const ir::PrimFunc& workload,
                                               std::mt19937_64& rng) {
  std::vector<std::size_t> sites;
  for (const auto& [index, decision] : design.decisions) {
    if (design.insts[index].kind == "SampleComputeLocation") sites.push_back(index);
  }
  if (sites.empty()) return std::nullopt;
  std::size_t index = PickOne(sites, rng);
  std::int64_t current = design.decisions.at(index).get<std::int64_t>();
  // The legal locations at that point: replay the prefix through the
  // sampling instruction (sampling changes no program) and ask the
  // schedule. The replay's last instruction is that one, with the block in
  // the schedule's own numbering.
  ir::Trace prefix;
  prefix.insts.assign(design.insts.begin(), design.insts.begin() + static_cast<std::ptrdiff_t>(index) + 1);
  for (const auto& [i, d] : design.decisions) {
    if (i <= index) prefix.decisions[i] = d;
  }
  std::vector<std::int64_t> legal;
  try {
    ir::Schedule sch = ir::ReplayTrace(workload, prefix, 0);
    const ir::Instruction& sample = sch.trace().insts.back();
    const auto* block = sample.inputs.empty() ? nullptr : std::get_if<ir::RVRef>(&sample.inputs[0]);
    if (!block) return std::nullopt;
    for (std::int64_t d : sch.ComputeLocationChoices(ir::BlockRV{block->id})) {
      if (d != current) legal.push_back(d);
    }
  } catch (const ir::IrError&) {
    return std::nullopt;
  }
  if (legal.empty()) return std::nullopt;
  ir::Trace out = design;
  out.decisions[index] = PickOne(legal, rng);
  return out;
}

std::optional<ir::Trace> Mutate(const ir::Trace& design, const ir::PrimFunc& workload, std::int64_t max_jobs,
                                const MutatorProbabilities& p, std::mt19937_64& rng) {
  struct Option {
    double weight;
    int which;
  };
  std::vector<Option> options = {{p.tile_size, 0}, {p.compute_location, 1}, {p.unroll, 2}, {p.parallel, 3}};
  // Try mutators in a probability-weighted random order until one applies.
  while (!options.empty()) {
    double total = 0;
    for (const Option& o : options) total += o.weight;
    if (total <= 0) break;
    double r = std::uniform_real_distribution<double>(0, total)(rng);
    std::size_t pick = 0;
    for (; pick + 1 < options.size() && r >= options[pick].weight; ++pick) r -= options[pick].weight;
    std::optional<ir::Trace> out;
    switch (options[pick].which) {
      case 0: out = MutateTileSize(design, rng); break;
      case 1: out = MutateComputeLocation(design, workload, rng); break;
      case 2: out = MutateUnroll(design, rng); break;
      case 3: out = MutateParallel(design, max_jobs, rng); break;
    }
    if (out) return out;
    options.erase(options.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  return std::nullopt;
}

}  // namespace tunedb::search
