// Fuzz target: the default design space's candidates, sampled and mutated
// as the input's bytes say.
//
// The schedule targets (schedule_steps.cc) apply primitives one by one;
// the search never does. It replays design-space traces with sampled
// decisions, runs the postprocessors, and edits the decisions with the
// mutators or carries them to another variant (search/space.h,
// search/mutator.h). Here the input picks the workload, the variant, the
// replay's seed and a chain of up to eight such edits, each realized as
// the search realizes a candidate.
// Promise: a candidate is refused with an IrError or realized; a realized
// one computes what the workload computes, its trace (and that trace
// simplified, as the database stores it) replays to the same program, and
// its design, every sample now decided, realizes to that program again
// whatever the seed (the search tells candidates apart by program and
// mutates the design).
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "fuzz/small_workloads.h"
#include "ir/error.h"
#include "ir/structural.h"
#include "search/mutator.h"
#include "search/space.h"

using namespace tunedb;

namespace {

struct SpacedWorkload {
  std::string spec;
  ir::PrimFunc func;
  std::vector<ir::Trace> spaces;
};

// The schedule targets' small workloads, a product between 2^15 and 2^18
// stores, whose space samples serial or parallel (space_internal.h), and
// three row sums of squares, too few rows for two cores, whose space splits
// each row among jobs and vector lanes (search/rules/rfactor.cc): rows of
// 256, in whole vectors, and rows of 257, a prime, whose last steps are
// masked.
const std::vector<SpacedWorkload>& Workloads() {
  static const std::vector<SpacedWorkload> workloads = [] {
    std::vector<SpacedWorkload> out;
    const search::SpaceOptions options = search::SpaceOptionsFor(2, 512);
    auto add = [&](const std::string& spec, const ir::PrimFunc& func) {
      out.push_back({spec, func, search::DefaultDesignSpace(func, options)});
    };
    for (const fuzz::SmallWorkload& w : fuzz::SmallWorkloads()) add(w.spec, w.func);
    add("matmul:M=32,N=40,K=32", ir::BuildWorkload("matmul:M=32,N=40,K=32").func);
    add("row sums of squares (written)",
        ir::ParseWorkloadText("input X: f32[3, 256]\nS[r] = sum(k in 256) X[r, k] * X[r, k]\n", "row_squares"));
    add("row sums of squares of a prime length (written)",
        ir::ParseWorkloadText("input X: f32[3, 257]\nS[r] = sum(k in 257) X[r, k] * X[r, k]\n", "prime_row_squares"));
    return out;
  }();
  return workloads;
}

// Realizes a design as search::Realize does, but lets through what Realize
// would swallow: only an IrError is a refusal. Returns the design with its
// decisions, or nullopt when refused.
std::optional<ir::Trace> RealizeAndCheck(const SpacedWorkload& w, const ir::Trace& design, std::uint64_t seed,
                                         const std::string& where) {
  ir::Trace decided;
  std::uint64_t hash = 0;
  try {
    ir::Schedule sch = ir::ReplayTrace(w.func, design, seed, /*remove_postproc=*/true);
    decided = sch.trace();
    search::ApplyPostprocessors(sch);
    fuzz::CheckSchedule(w.func, sch, where);
    hash = ir::StructuralHash(sch.func());
  } catch (const ir::IrError&) {
    return std::nullopt;
  } catch (const std::exception& e) {
    fuzz::Finding(where + ": not an IrError: " + e.what());
  }
  std::optional<search::Candidate> again = search::Realize(w.func, decided, seed + 1);
  if (!again) fuzz::Finding(where + ": its design, decided, does not realize again");
  if (again->program_hash != hash) fuzz::Finding(where + ": its design, decided, realizes to another program");
  return decided;
}

}  // namespace

// Byte 0 picks the workload, byte 1 the variant, bytes 2-3 the replay's
// seed; then each pair of bytes is an edit (tile size, compute location,
// unroll, parallel, or the decisions carried onto the variant the second
// byte picks) and its generator's seed.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const SpacedWorkload& w = Workloads()[data[0] % Workloads().size()];
  if (w.spaces.empty()) fuzz::Finding(w.spec + ": no design space");
  const std::size_t variant = data[1] % w.spaces.size();
  const std::uint64_t seed = data[2] | std::uint64_t{data[3]} << 8;
  std::string where = w.spec + ", variant " + std::to_string(variant) + ", seed " + std::to_string(seed);
  std::optional<ir::Trace> design =
      RealizeAndCheck(w, search::WithoutDecisions(w.spaces[variant]), seed, where);
  constexpr int kMaxEdits = 8;
  for (std::size_t at = 4; design && at + 1 < size && at < 4 + 2 * kMaxEdits; at += 2) {
    std::mt19937_64 rng(data[at + 1]);
    std::optional<ir::Trace> edited;
    const char* edits[] = {"tile size", "compute location", "unroll", "parallel", "sibling"};
    const int edit = data[at] % 5;
    switch (edit) {
      case 0: edited = search::MutateTileSize(*design, rng); break;
      case 1: edited = search::MutateComputeLocation(*design, w.func, rng); break;
      case 2: edited = search::MutateUnroll(*design, rng); break;
      case 3: edited = search::MutateParallel(*design, 32, rng); break;
      case 4: edited = search::WithDecisionsOf(w.spaces[data[at + 1] % w.spaces.size()], *design); break;
    }
    if (!edited) continue;  // nothing that edit could change
    where += std::string(", then ") + edits[edit];
    // A refused edit ends the chain, as the search drops the candidate.
    design = RealizeAndCheck(w, *edited, seed, where);
  }
  return 0;
}
