// The cost model as the search uses it: batched prediction, online updates
// with retraining when the data has grown enough, a documented heuristic
// before there is enough data, and storage in a file or the database.
//
// Until min_samples measured candidates exist, and whenever no model is
// trained, candidates are ranked by HeuristicScore (model.h): the work left
// after vectorization. Chosen by pairwise ranking accuracy on 900 measured
// design-space samples of six workloads (docs/COSTMODEL.md): 0.74, against
// 0.61 for session 2's sum of vector length, contiguity, accumulator and
// unroll terms. Capping the parallel extent at the core count and a
// penalty for non-contiguous vector loops did not rank better on those data.
#pragma once

#include <string>
#include <vector>

#include "costmodel/model.h"
#include "db/database.h"

namespace tunedb::costmodel {

// Measured candidates before a tuning session trains its own model (the
// heuristic ranks until then; `tunedb tune --model-min-samples`), and the
// fewest training records of a stored model a session starts from.
inline constexpr int kSessionMinSamples = 16;

// Of stored models (newest first, as Database::Models gives them), the one
// a session starts from: trained on the most records, the newest of equals,
// among those of this build's feature version trained on min_samples
// records or more. 0 when none is.
std::int64_t ModelASessionStartsFrom(const std::vector<db::StoredModel>& models, std::size_t min_samples);

class TuningCostModel {
 public:
  struct Options {
    TrainOptions train;
    std::size_t min_samples = 64;   // below this, the heuristic
    double retrain_growth = 0.25;   // retrain when the data grew by this fraction
  };
  explicit TuningCostModel(Options options);

  std::vector<double> Predict(const std::vector<std::vector<FeatureRow>>& candidates) const;
  // Adds measured candidates of one group (median seconds, +infinity for
  // failures) and retrains when warranted. Returns true when it retrained.
  bool Update(const std::vector<std::vector<FeatureRow>>& candidates, const std::vector<double>& median_secs, int group);

  bool using_heuristic() const;
  // One line for progress output: "heuristic (12 of 64 samples)" or
  // "XGBoost rank, trained on 320 samples".
  std::string Describe() const;

  // Starts from a stored model; false when there is none. With id 0, the
  // one of ModelASessionStartsFrom. Throws
  // CostModelError on a feature-version mismatch and for a model trained on
  // fewer than min_samples records (with id 0: when no model qualifies,
  // the newest's reason).
  bool LoadFromDatabase(db::Database& database, std::int64_t id = 0);
  std::int64_t loaded_id() const { return loaded_id_; }      // 0: none loaded
  std::int64_t loaded_rows() const { return loaded_rows_; }  // its training records
  std::int64_t SaveToDatabase(db::Database& database, const std::string& metrics_json) const;
  void LoadFromFile(const std::string& path);
  void SaveToFile(const std::string& path) const;

  const CostModel& model() const { return model_; }
  std::size_t samples() const { return data_.size(); }
  // Trained by Update in this object's life, not only loaded: what a
  // session stores back. A loaded model it did not retrain is in the
  // database already, and stored again it would claim the training rows of
  // this session (none), which the next session refuses to load.
  bool trained_here() const { return trained_on_ > 0; }

 private:
  Options options_;
  CostModel model_;
  std::vector<Sample> data_;
  std::vector<double> medians_;
  std::size_t trained_on_ = 0;
  bool loaded_ = false;
  std::int64_t loaded_id_ = 0;
  std::int64_t loaded_rows_ = 0;
};

}  // namespace tunedb::costmodel
