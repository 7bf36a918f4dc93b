// The design space: what schedules the search may try for a workload.
//
// A design space is a trace with sampling instructions (TVM MetaSchedule's
// "design space"): replaying it with fresh decisions gives a new candidate,
// replaying it with changed decisions gives a mutated one. The default
// space is built by schedule rules applied to every block, as TVM's default
// CPU rules do:
//
//  - auto-inline: injective stages that write an intermediate buffer
//    (elementwise stages, padding) are inlined into their consumers;
//  - multi-level tiling "SSRSRS" for blocks with reduction loops and data
//    reuse: every spatial loop is split in 4 and every reduction loop in 2
//    by sample_perfect_tile (innermost factor <= 64), then reordered
//    S0 S1 R0 S2 R1 S3. The space records a register block as these
//    samples' decisions (RegisterBlockedTiles, search/rules/); replaying the
//    space without decisions samples afresh. Three variants: no write
//    cache, or a "local" accumulator (cache_write) reverse-computed at
//    tile level 1 or 2; an elementwise consumer of the result is then
//    inlined into the write-back.
//    With a write cache, a reused input may also be packed as BLAS packs a
//    panel (cache_read, computed under the S0 loops it moves with);
//  - rfactor for reductions whose spatial extent is too small to feed the
//    cores (two extra variants), and for reductions whose innermost loop
//    reduces along an input's last dimension, a vector of that loop
//    rfactored into the last axis, so the partial sums run in vector lanes
//    (one more; not a TVM rule), and where both apply and the outputs do
//    not divide among the cores (a sum to one value), jobs and lanes
//    together (one more; ours too);
//  - random compute location for the other intermediate stages;
//  - parallel / vectorize / unroll as annotations of the root block:
//    meta_schedule.parallel = 16 x cores, meta_schedule.vectorize = 64,
//    meta_schedule.unroll_explicit sampled from {0, 16, 64, 512}. A small
//    program (2^15 to 2^18 stores) samples its parallel limit from
//    {1, 16 x cores}: whether threads pay there is the machine's and the
//    program's, so measurement decides (space_internal.h).
//
// Postprocessors (after EnterPostproc) turn the root annotations into real
// loops: reductions are decomposed at their outermost reduction loop, outer
// spatial loops are fused and parallelized (up to the parallel limit),
// innermost spatial loops vectorized (up to the vector limit), and the
// outermost loop of each nest gets pragma_auto_unroll_max_step. A program
// of fewer than 2^15 stores stays serial whatever its limit. A candidate
// whose postprocessing fails is invalid and dropped.
//
// Thread-safety: everything here is a pure function of its arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/schedule/schedule.h"
#include "ir/stmt.h"

namespace tunedb::search {

struct SpaceOptions {
  int cores = 1;                 // the target's cores
  int max_jobs_per_core = 16;    // parallel limit = cores * this
  int max_vectorize = 64;        // longest vectorized loop, and innermost tile factor
  std::vector<std::int64_t> unroll_steps = {0, 16, 64, 512};
  // The target's vector registers: their width in bits and their count
  // (a tiled block's register block must fit its accumulators, the vectors
  // it loads and a broadcast in them), and how many may hold a matrix-vector
  // product's partial sums (half of them, which leaves room for the vectors
  // of both operands).
  int vector_bits = 512;
  int vector_registers = 32;
  int accumulator_vectors = 16;
  // Each block's variants multiply the spaces; past this many, the product
  // is cut to what keeps every block's every variant (space_internal.h).
  // A single tiled block has at most 13.
  std::size_t max_spaces = 64;
};

// Space options for a target's cores and vector registers.
SpaceOptions SpaceOptionsFor(int cores, int vector_bits);

// The default design spaces of a workload (one trace per variant, each with
// sampling instructions and without postprocessing).
std::vector<ir::Trace> DefaultDesignSpace(const ir::PrimFunc& workload, const SpaceOptions& options);

// Which variant of a space a design belongs to, as a key: its instructions
// without the literal inputs and decisions that sampling and mutation
// change (tile factors, parallel limits, unroll steps, compute locations).
// Designs of one variant share the key; the default space's variants
// (tiling with or without a write cache or a packed input, rfactor) differ.
std::string VariantOf(const ir::Trace& design);

// `onto` (another design of the space, usually another variant) with the
// decisions of `design`: the k-th sampling instruction of each kind in
// `onto` takes the decision of the k-th of that kind in `design` when their
// attributes agree (the default space's rules sample the loops in the same
// order in every variant), and the parallel limit annotation takes
// `design`'s. Samples without a counterpart keep no decision, so Realize
// draws them afresh; a tiling that does not fit is repaired on replay.
// The search uses it to try the fastest candidate's tile sizes with
// another write cache or packing.
ir::Trace WithDecisionsOf(const ir::Trace& onto, const ir::Trace& design);

// A user's stochastic schedule script (schedule script language, see
// docs/SCHEDULES.md) as the design space. Throws ScheduleError naming
// file:line when the script does not run on the workload.
std::vector<ir::Trace> ScriptDesignSpace(const ir::PrimFunc& workload, const std::string& script,
                                         const std::string& file_name);

// Applies the postprocessors to a schedule whose trace ends with the design
// space (EnterPostproc is recorded first). Throws ScheduleError when the
// candidate is invalid.
void ApplyPostprocessors(ir::Schedule& sch);

// A concrete candidate: its design-space trace with decisions (what the
// mutators edit), the full trace including postprocessing (what the
// database stores) and the scheduled program.
struct Candidate {
  ir::Trace design;
  ir::Trace trace;
  ir::PrimFunc program;
  std::uint64_t program_hash = 0;  // structural hash of the scheduled program
};

// Replays a design trace (its decisions where present, fresh samples from
// `seed` where not) and postprocesses it. nullopt when the replay or the
// postprocessing refuses the candidate.
std::optional<Candidate> Realize(const ir::PrimFunc& workload, const ir::Trace& design, std::uint64_t seed);

// Realize for many (design, seed) pairs, spread over `threads` threads (0:
// one per core); the result does not depend on the thread count.
struct RealizeRequest {
  const ir::Trace* design;
  std::uint64_t seed;
};
std::vector<std::optional<Candidate>> RealizeBatch(const ir::PrimFunc& workload,
                                                   const std::vector<RealizeRequest>& requests, int threads = 0);

// A design trace without its decisions: replaying it samples afresh.
ir::Trace WithoutDecisions(const ir::Trace& design);

// A stored record's trace back into a design trace with decisions (the
// postprocessing is dropped and redone by Realize). A record of another
// shape is fitted to this one: above the range where the space samples
// serial or parallel, a sampled serial decision becomes parallel. nullopt
// when it does not replay on this workload.
std::optional<ir::Trace> DesignOf(const ir::PrimFunc& workload, const ir::Trace& stored);

}  // namespace tunedb::search
