// Training data from the tuning database: every record becomes a sample
// (its trace replayed on its workload, lowered, featurized), labelled with
// its normalized throughput within its group (one workload on one target):
// best median time of the group / its median time, 0 for a failure.
//
// Records whose workload or trace cannot be rebuilt (TVM workloads are
// opaque to tunedb; a trace that no longer replays) are skipped and
// counted. Records of a group that lower to the same code are merged
// (MergeSameCode).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/features.h"
#include "costmodel/model.h"
#include "db/database.h"
#include "ir/stmt.h"
#include "ir/schedule/trace.h"

namespace tunedb::costmodel {

struct Dataset {
  std::vector<Sample> samples;
  std::vector<std::string> group_names;  // group id -> "workload hash @ target"
  std::size_t skipped = 0;               // records that could not be rebuilt
  std::size_t merged = 0;                // records merged into another of the same code
};

// All records of the database (paged), grouped by workload and target; or,
// given a time, only those committed after it: a model stored then cannot
// have trained on them, so they are a held-out set for it.
Dataset LoadDataset(db::Database& database, std::optional<double> committed_after = std::nullopt);

// Features of one candidate: replays the trace on the workload, lowers it
// and extracts the rows. Throws on a trace that does not replay.
std::vector<FeatureRow> CandidateFeatures(const ir::PrimFunc& workload, const ir::Trace& trace);
std::vector<FeatureRow> CandidateFeatures(const ir::PrimFunc& scheduled);

// Features of many scheduled programs, spread over `threads` threads (0:
// one per core): the search ranks thousands of candidates per round.
std::vector<std::vector<FeatureRow>> FeaturizeBatch(const std::vector<ir::PrimFunc>& programs, int threads = 0);

// Candidates that lower to the same code are one input to the model, however
// many traces reach it (lowering drops what does not change the code, e.g.
// an unroll limit longer than every loop): the differences between their
// measured times are timing noise no model can rank, and the same input on
// both sides of a train/held-out split would be scored on a copy of itself.
// MergeSameCode keeps one record per (group, code_hash), the first, with
// the median of those records' median times (a failure counts as slowest;
// of an even count, the faster middle one).
struct DistinctCode {
  std::vector<std::size_t> kept;    // index of each kept record, in input order
  std::vector<double> median_secs;  // of each kept record, over its copies
};
DistinctCode MergeSameCode(const std::vector<std::uint64_t>& code_hashes, const std::vector<double>& median_secs,
                           const std::vector<int>& groups);

// Labels from median times (+infinity for failures): best / time per group.
std::vector<double> NormalizedThroughput(const std::vector<double>& median_secs, const std::vector<int>& groups);

}  // namespace tunedb::costmodel
