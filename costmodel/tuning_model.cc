#include "costmodel/tuning_model.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "costmodel/dataset.h"

namespace tunedb::costmodel {

TuningCostModel::TuningCostModel(Options options) : options_(std::move(options)) {}

bool TuningCostModel::using_heuristic() const { return !model_.trained(); }

std::string TuningCostModel::Describe() const {
  if (using_heuristic()) {
    return "heuristic (" + std::to_string(data_.size()) + " of " + std::to_string(options_.min_samples) +
           " samples needed to train)";
  }
  if (loaded_ && trained_on_ == 0) {
    if (data_.empty()) return "XGBoost, loaded (no samples of this session yet)";
    return "XGBoost, loaded (" + std::to_string(data_.size()) + " samples here; it retrains from " +
           std::to_string(options_.min_samples) + ")";
  }
  return std::string("XGBoost ") + ObjectiveName(options_.train.objective) + ", trained on " +
         std::to_string(trained_on_) + " samples";
}

std::vector<double> TuningCostModel::Predict(const std::vector<std::vector<FeatureRow>>& candidates) const {
  if (model_.trained()) return model_.Predict(candidates);
  std::vector<double> out;
  for (const auto& c : candidates) out.push_back(HeuristicScore(c));
  return out;
}

bool TuningCostModel::Update(const std::vector<std::vector<FeatureRow>>& candidates,
                             const std::vector<double>& median_secs, int group) {
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    Sample s;
    s.rows = candidates[i];
    s.group = group;
    data_.push_back(std::move(s));
    medians_.push_back(median_secs[i]);
  }
  if (data_.size() < options_.min_samples) return false;
  if (trained_on_ > 0 &&
      static_cast<double>(data_.size()) < static_cast<double>(trained_on_) * (1 + options_.retrain_growth)) {
    return false;
  }
  std::vector<int> groups;
  for (const Sample& s : data_) groups.push_back(s.group);
  std::vector<double> labels = NormalizedThroughput(medians_, groups);
  for (std::size_t i = 0; i < data_.size(); ++i) data_[i].label = labels[i];
  CostModel fresh;
  fresh.Train(data_, options_.train);
  model_ = std::move(fresh);
  trained_on_ = data_.size();
  return true;
}

std::int64_t ModelASessionStartsFrom(const std::vector<db::StoredModel>& models, std::size_t min_samples) {
  // A session's model learns from its own workloads' records only; chosen
  // for being newest, it would supersede `tunedb train`'s model of every
  // record for every later session. Records only accumulate, so the
  // broadest model is the largest, until a session's outgrows it.
  const db::StoredModel* pick = nullptr;
  for (const db::StoredModel& m : models) {  // newest first
    if (m.feature_version != kFeatureVersion) continue;
    if (m.training_rows < static_cast<std::int64_t>(min_samples)) continue;
    if (!pick || m.training_rows > pick->training_rows) pick = &m;
  }
  return pick ? pick->id : 0;
}

bool TuningCostModel::LoadFromDatabase(db::Database& database, std::int64_t id) {
  if (id == 0) {
    std::vector<db::StoredModel> models = database.Models();  // newest first
    if (models.empty()) return false;
    id = ModelASessionStartsFrom(models, options_.min_samples);
    if (id == 0) id = models.front().id;  // none is usable: the newest says why
  }
  std::optional<db::StoredModel> m = database.LoadModel(id);
  if (!m) return false;
  if (m->feature_version != kFeatureVersion) {
    throw CostModelError("stored model " + std::to_string(m->id) + " uses feature version " +
                         std::to_string(m->feature_version) + "; this build extracts version " +
                         std::to_string(kFeatureVersion) + " (run tunedb train)");
  }
  // A model that learnt from fewer records than this session waits for
  // before it trains its own knows less than the heuristic it would
  // replace (`tunedb train` on a database of two records stores one).
  if (m->training_rows < static_cast<std::int64_t>(options_.min_samples)) {
    throw CostModelError("model " + std::to_string(m->id) + " was trained on " + std::to_string(m->training_rows) +
                         (m->training_rows == 1 ? " record" : " records") + ", fewer than the " +
                         std::to_string(options_.min_samples) + " samples a session trains its own on");
  }
  model_ = CostModel::Load(m->blob);
  loaded_ = true;
  loaded_id_ = m->id;
  loaded_rows_ = m->training_rows;
  return true;
}

std::int64_t TuningCostModel::SaveToDatabase(db::Database& database, const std::string& metrics_json) const {
  db::StoredModel m;
  m.feature_version = kFeatureVersion;
  m.objective = ObjectiveName(options_.train.objective);
  m.blob = model_.Save();
  m.training_rows = static_cast<std::int64_t>(trained_on_);
  m.metrics = metrics_json;
  return database.SaveModel(m);
}

void TuningCostModel::LoadFromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CostModelError("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  model_ = CostModel::Load(s.str());
  loaded_ = true;
}

void TuningCostModel::SaveToFile(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw CostModelError("cannot write " + path);
  out << model_.Save();
}

}  // namespace tunedb::costmodel
