// Training data from the tuning database: every record becomes a sample
// (its trace replayed on its workload, lowered, featurized), labelled with
// its normalized throughput within its group (one workload on one target):
// best median time of the group / its median time, 0 for a failure.
//
// Records whose workload or trace cannot be rebuilt (TVM workloads are
// opaque to tunedb; a trace that no longer replays) are skipped and
// counted.
#pragma once

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
};

// All records of the database (paged), grouped by workload and target.
Dataset LoadDataset(db::Database& database);

// Features of one candidate: replays the trace on the workload, lowers it
// and extracts the rows. Throws on a trace that does not replay.
std::vector<FeatureRow> CandidateFeatures(const ir::PrimFunc& workload, const ir::Trace& trace);
std::vector<FeatureRow> CandidateFeatures(const ir::PrimFunc& scheduled);

// Features of many scheduled programs, spread over `threads` threads (0:
// one per core): the search ranks thousands of candidates per round.
std::vector<std::vector<FeatureRow>> FeaturizeBatch(const std::vector<ir::PrimFunc>& programs, int threads = 0);

// Labels from median times (+infinity for failures): best / time per group.
std::vector<double> NormalizedThroughput(const std::vector<double>& median_secs, const std::vector<int>& groups);

}  // namespace tunedb::costmodel
