// The learned cost model: XGBoost trees over per-store feature rows,
// "pack-sum" as in TVM's XGBModel: a candidate's score is the sum of its
// rows' outputs, and the training objective is defined on that sum.
//
// Objectives:
//  - kWeightedMse: TVM's throughput-weighted squared error on the sum
//    (weight = the label, so fast candidates matter most);
//  - kRank: pairwise logistic loss between candidates of one group (one
//    workload on one target), on the sums plus the candidate's
//    HeuristicScore: the trees learn corrections to the heuristic (boosting
//    from a prior), so a model trained on little data starts from the
//    heuristic's ranking rather than from nothing.
// Early stopping uses held-out whole records (a fraction of each group),
// never the training rows; the kept model is then refit on every record
// for as many rounds per record as early stopping allowed. Every XGBoost
// handle is owned by an RAII type in model.cc.
//
// Thread-safety: one CostModel per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "costmodel/features.h"

namespace tunedb::costmodel {

class CostModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A saved model that is not what was saved: no tunedb model at all, or one
// that does not match the checksum saved with it (a damaged database row
// or file). `tunedb db check` reports these.
class DamagedModelError : public CostModelError {
 public:
  using CostModelError::CostModelError;
};

// One measured candidate: its feature rows, its label (normalized
// throughput: best time of its group / its time; 0 for a failure), and its
// group.
struct Sample {
  std::vector<FeatureRow> rows;
  double label = 0;
  int group = 0;
};

// A documented estimate of how fast a candidate is, from its feature rows
// alone: the work left after vectorization,
//   -log2(1 + sum over rows of executions / lanes x local)
// with lanes the innermost extent the schedule vectorized, capped at 16 (1
// when it vectorized nothing, whatever LLVM may do) and local 0.7 for a
// store into a compacted accumulator, 1 otherwise. Higher is faster.
// docs/COSTMODEL.md has how it was chosen.
double HeuristicScore(const std::vector<FeatureRow>& rows);

enum class Objective { kRank, kWeightedMse };
const char* ObjectiveName(Objective o);  // "rank", "weighted-mse"

struct TrainOptions {
  Objective objective = Objective::kRank;
  int max_rounds = 200;
  int early_stopping_rounds = 20;
  int max_depth = 8;
  double eta = 0.2;
  double holdout = 0.2;  // fraction of each group's records held out for early stopping
  std::uint64_t seed = 0;
  int threads = 0;       // 0: XGBoost's default (every core)
};

struct TrainReport {
  int rounds = 0;                // of the kept (refit) model
  double holdout_loss = 0;       // of the objective, at the round early stopping chose
  std::size_t train_samples = 0;    // records the kept model learned from: all of them
  std::size_t holdout_samples = 0;  // records early stopping held out (then refit on)
};

class CostModel {
 public:
  CostModel();
  ~CostModel();
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;

  // Throws CostModelError when there is nothing to learn from.
  TrainReport Train(const std::vector<Sample>& samples, const TrainOptions& options);
  // One score per candidate (higher is faster). Before training: throws.
  std::vector<double> Predict(const std::vector<std::vector<FeatureRow>>& candidates) const;
  bool trained() const;

  // A self-describing blob: feature version, objective, XGBoost's JSON model.
  std::string Save() const;
  // Throws CostModelError naming the mismatch when the blob was made with
  // another feature version or has no checksum (saved before session 57),
  // DamagedModelError when it is not a tunedb model or does not match its
  // checksum.
  static CostModel Load(const std::string& blob);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunedb::costmodel
