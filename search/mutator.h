// Mutators: small random edits of a design trace's decisions (or of one
// annotation), the evolutionary search's source of new candidates.
// TVM MetaSchedule's CPU mutators and default probabilities:
//
//   tile size         0.90  move a factor between two tiles of one loop
//   compute location  0.05  pick another legal location for a stage
//   unroll            0.03  pick another max unroll step
//   parallel          0.02  pick another parallel job limit (1: serial)
//
// A mutator returns nullopt when the trace has nothing it can change. The
// result is a design trace; Realize (space.h) replays it and refuses what
// does not replay, so a mutation never yields an invalid program.
//
// Thread-safety: pure functions of their arguments and the generator.
#pragma once

#include <cstdint>
#include <optional>
#include <random>

#include "ir/schedule/trace.h"
#include "ir/stmt.h"

namespace tunedb::search {

struct MutatorProbabilities {
  double tile_size = 0.90;
  double compute_location = 0.05;
  double unroll = 0.03;
  double parallel = 0.02;
};

std::optional<ir::Trace> MutateTileSize(const ir::Trace& design, std::mt19937_64& rng);
std::optional<ir::Trace> MutateUnroll(const ir::Trace& design, std::mt19937_64& rng);
// New limits are powers of two up to max_jobs (and max_jobs itself); 1
// leaves the program serial. Where the space samples serial or parallel (a
// small program, space.h), the other of the two.
std::optional<ir::Trace> MutateParallel(const ir::Trace& design, std::int64_t max_jobs, std::mt19937_64& rng);
// Replays the trace up to the sampling instruction to learn which locations
// are legal there.
std::optional<ir::Trace> MutateComputeLocation(const ir::Trace& design, const ir::PrimFunc& workload,
                                               std::mt19937_64& rng);

// Picks a mutator by probability (among those that apply) and applies it.
std::optional<ir::Trace> Mutate(const ir::Trace& design, const ir::PrimFunc& workload, std::int64_t max_jobs,
                                const MutatorProbabilities& probabilities, std::mt19937_64& rng);

}  // namespace tunedb::search
