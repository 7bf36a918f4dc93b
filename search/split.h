// When a tuning session splits a workload into its parts (ir/parts.h) and
// tunes them first, as tasks of their own (TuneOptions::split).
//
// Splitting pays where several parts each do much work with data reuse:
// a causal attention's two products, tuned as parts and composed, ran
// 375 GFLOP/s against 214 for the whole tuned alone in 64 trials. It costs
// 1-8% on a short memory-bound chain (softmax, layer norm), whose best
// kernel fuses every stage into one loop nest; its parts each store their
// result (bench/RESULTS.md, session 81). So by default (Split::kAuto) a
// session splits a workload only when two or more of its parts are
// compute-bound products.
#pragma once

#include <string>
#include <vector>

#include "ir/workloads.h"

namespace tunedb::search {

enum class Split {
  kOff,   // tune every workload whole
  kAuto,  // split a workload with two or more compute-bound parts
  kOn,    // split every workload that has parts
};

// A part is compute-bound when it does at least this many FLOPs per byte
// of its parameters (ir::CountFlops over ir::ParamBytes), and at least
// kComputeBoundShare of the whole's FLOPs. A product whose output is its
// largest operand does about K / 2 FLOPs per byte for a reduction of K
// elements, so one reducing over 8 or more is above the line (each operand
// element is used in several multiply-adds, and tiling decides its speed);
// a row reduction, an elementwise stage, or a softmax's stages are below 2.
// Measured on low-rank chains, (X A^T) B^T of rank r (bench/RESULTS.md,
// session 83): splitting gained 37% at r = 16 (7.3 FLOPs per byte), 21%
// at r = 8 (3.8), and nothing at r = 4 (1.95).
inline constexpr double kComputeBoundFlopsPerByte = 3;
inline constexpr double kComputeBoundShare = 0.1;

// The names of `whole`'s compute-bound parts ("S", "O+Y"), in program
// order; empty for a workload of one part.
std::vector<std::string> ComputeBoundParts(const ir::Workload& whole);

// The parts a session tunes before `whole`: ir::WorkloadParts(whole) when
// `split` is kOn, or kAuto and two or more of them are compute-bound;
// otherwise none.
std::vector<ir::Workload> PartsToTuneFirst(const ir::Workload& whole, Split split);

}  // namespace tunedb::search
