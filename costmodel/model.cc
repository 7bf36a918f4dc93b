#include "costmodel/model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <limits>
#include <random>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ir/json_text.h"
#include "ir/mix.h"

namespace tunedb::costmodel {
namespace {

void Check(int rc, const char* what) {
  if (rc != 0) throw CostModelError(std::string("XGBoost ") + what + ": " + XGBGetLastError());
}

// RAII owners of XGBoost's handles.
class DMatrix {
 public:
  // threads 0: XGBoost's default (every core).
  DMatrix(const std::vector<float>& data, std::size_t rows, std::size_t cols, int threads = 0) {
    Check(XGDMatrixCreateFromMat_omp(data.data(), rows, cols, std::nanf(""), &h_, threads), "DMatrix");
  }
  ~DMatrix() { XGDMatrixFree(h_); }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  DMatrixHandle get() const { return h_; }

 private:
  DMatrixHandle h_ = nullptr;
};

class Booster {
 public:
  explicit Booster(const DMatrix* cache = nullptr) {
    DMatrixHandle d[1] = {cache ? cache->get() : nullptr};
    Check(XGBoosterCreate(cache ? d : nullptr, cache ? 1 : 0, &h_), "booster");
  }
  ~Booster() { XGBoosterFree(h_); }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  BoosterHandle get() const { return h_; }
  void Set(const char* key, const std::string& value) { Check(XGBoosterSetParam(h_, key, value.c_str()), key); }

 private:
  BoosterHandle h_ = nullptr;
};

// Rows of many candidates in one matrix, with each row's candidate.
struct Packed {
  std::vector<float> data;
  std::vector<std::size_t> owner;  // row -> candidate
  std::size_t rows = 0;
};

Packed Pack(const std::vector<const std::vector<FeatureRow>*>& candidates) {
  Packed p;
  std::size_t cols = NumFeatures();
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    for (const FeatureRow& r : *candidates[c]) {
      if (r.size() != cols) throw CostModelError("a feature row has " + std::to_string(r.size()) + " columns, expected " + std::to_string(cols));
      p.data.insert(p.data.end(), r.begin(), r.end());
      p.owner.push_back(c);
      ++p.rows;
    }
  }
  return p;
}

std::vector<double> RowPredictions(const Booster& b, const DMatrix& m, int rounds) {
  std::string config = R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": )" +
                       std::to_string(rounds) + R"(, "strict_shape": false})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* out = nullptr;
  Check(XGBoosterPredictFromDMatrix(b.get(), m.get(), config.c_str(), &shape, &dim, &out), "predict");
  std::size_t n = 1;
  for (bst_ulong i = 0; i < dim; ++i) n *= shape[i];
  return std::vector<double>(out, out + n);
}

// Per candidate: its prior plus the sum of its rows' predictions.
std::vector<double> Sums(const std::vector<double>& row_pred, const Packed& p, const std::vector<double>& prior) {
  std::vector<double> s = prior;
  for (std::size_t r = 0; r < p.rows; ++r) s[p.owner[r]] += row_pred[r];
  return s;
}

std::vector<double> Priors(bool heuristic, const std::vector<const std::vector<FeatureRow>*>& candidates) {
  std::vector<double> p(candidates.size(), 0.0);
  if (heuristic) {
    for (std::size_t i = 0; i < candidates.size(); ++i) p[i] = HeuristicScore(*candidates[i]);
  }
  return p;
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Loss and per-candidate gradient/hessian of the objective on the sums.
double Objective_(Objective obj, const std::vector<double>& sums, const std::vector<const Sample*>& samples,
                  std::vector<double>* grad, std::vector<double>* hess) {
  std::size_t n = sums.size();
  if (grad) grad->assign(n, 0.0);
  if (hess) hess->assign(n, 0.0);
  double loss = 0;
  if (obj == Objective::kWeightedMse) {
    for (std::size_t i = 0; i < n; ++i) {
      double w = std::max(samples[i]->label, 0.1);  // TVM: weight by throughput, floored
      double d = sums[i] - samples[i]->label;
      loss += w * d * d / 2;
      if (grad) (*grad)[i] = w * d;
      if (hess) (*hess)[i] = w;
    }
    return loss / static_cast<double>(std::max<std::size_t>(n, 1));
  }
  std::map<int, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < n; ++i) groups[samples[i]->group].push_back(i);
  double pairs = 0;
  for (const auto& [g, idx] : groups) {
    (void)g;
    for (std::size_t a = 0; a < idx.size(); ++a) {
      for (std::size_t b = 0; b < idx.size(); ++b) {
        std::size_t i = idx[a], j = idx[b];
        if (samples[i]->label <= samples[j]->label) continue;  // i should score above j
        double p = Sigmoid(sums[i] - sums[j]);
        loss += -std::log(std::max(p, 1e-12));
        pairs += 1;
        if (grad) {
          (*grad)[i] -= 1 - p;
          (*grad)[j] += 1 - p;
          (*hess)[i] += p * (1 - p);
          (*hess)[j] += p * (1 - p);
        }
      }
    }
  }
  return pairs > 0 ? loss / pairs : 0;
}

constexpr const char* kMagic = "tunedb-costmodel";

// The rows of some records, packed into one XGBoost matrix, with each
// record's prior score.
struct BoostingData {
  BoostingData(const std::vector<const Sample*>& records, bool heuristic_prior, int threads)
      : samples(records) {
    std::vector<const std::vector<FeatureRow>*> rows;
    for (const Sample* s : records) rows.push_back(&s->rows);
    packed = Pack(rows);
    prior = Priors(heuristic_prior, rows);
    if (packed.rows) matrix = std::make_unique<DMatrix>(packed.data, packed.rows, NumFeatures(), threads);
  }
  // Each record's score after the first `rounds` trees.
  std::vector<double> Scores(const Booster& b, int rounds) const {
    return Sums(RowPredictions(b, *matrix, rounds), packed, prior);
  }
  std::vector<const Sample*> samples;
  Packed packed;
  std::vector<double> prior;
  std::unique_ptr<DMatrix> matrix;  // null without rows
};

std::unique_ptr<Booster> MakeBooster(const DMatrix& data, const TrainOptions& o) {
  auto booster = std::make_unique<Booster>(&data);
  booster->Set("tree_method", "hist");  // histogram splits: much faster than exact at this size
  booster->Set("max_depth", std::to_string(o.max_depth));
  booster->Set("eta", std::to_string(o.eta));
  booster->Set("min_child_weight", "0");
  booster->Set("gamma", "0.0001");
  booster->Set("seed", std::to_string(o.seed % 2147483647));
  booster->Set("base_score", "0");
  booster->Set("verbosity", "0");
  if (o.threads > 0) booster->Set("nthread", std::to_string(o.threads));
  return booster;
}

// One boosting round: the objective's gradient on each record's score
// (prior + sum of its rows), pushed to every row of the record.
void BoostOneRound(Booster& booster, const BoostingData& d, Objective objective, int round) {
  std::vector<double> grad, hess;
  Objective_(objective, d.Scores(booster, round), d.samples, &grad, &hess);
  std::vector<float> g(d.packed.rows), h(d.packed.rows);
  for (std::size_t r = 0; r < d.packed.rows; ++r) {
    g[r] = static_cast<float>(grad[d.packed.owner[r]]);
    h[r] = static_cast<float>(std::max(hess[d.packed.owner[r]], 1e-6));
  }
  Check(XGBoosterBoostOneIter(booster.get(), d.matrix->get(), g.data(), h.data(), d.packed.rows), "boost");
}

}  // namespace


double HeuristicScore(const std::vector<FeatureRow>& rows) {
  static const std::size_t executions = FeatureIndex("loop_prod"), vec_len = FeatureIndex("vec_len"),
                           implicit = FeatureIndex("vec_implicit"), local = FeatureIndex("alloc_local");
  auto unlog = [](float x) { return std::exp2(static_cast<double>(x)) - 1; };  // features are log2(1 + x)
  double work = 0;
  for (const FeatureRow& r : rows) {
    // Only the schedule's own vectorization: counting LLVM's too (often
    // gathers) moved pairwise accuracy by -0.015 to +0.008 over nine
    // splits of three saved data sets, lower on every split of one.
    double lanes = r[implicit] > 0 ? 1.0 : std::clamp(unlog(r[vec_len]), 1.0, 16.0);
    work += unlog(r[executions]) / lanes * (r[local] > 0 ? 0.7 : 1.0);
  }
  return -std::log2(1 + work);
}

const char* ObjectiveName(Objective o) { return o == Objective::kRank ? "rank" : "weighted-mse"; }

struct CostModel::Impl {
  std::unique_ptr<Booster> booster;
  int rounds = 0;
  Objective objective = Objective::kRank;
  bool heuristic_prior = false;  // scores are HeuristicScore + the trees' sum
};

CostModel::CostModel() : impl_(std::make_unique<Impl>()) {}
CostModel::~CostModel() = default;
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;

bool CostModel::trained() const { return impl_->booster != nullptr; }

TrainReport CostModel::Train(const std::vector<Sample>& samples, const TrainOptions& o) {
  if (samples.empty()) throw CostModelError("no training samples");
  if (o.max_rounds < 1) throw CostModelError("max_rounds must be at least 1, not " + std::to_string(o.max_rounds));
  // Hold out whole records (all rows of a candidate together) for early
  // stopping, the same fraction from every group: the held-out loss then
  // asks what the model is used for - ranking new candidates of workloads it
  // has seen - and no candidate's rows straddle the split.
  std::map<int, std::vector<const Sample*>> by_group;
  for (const Sample& s : samples) {
    if (!s.rows.empty()) by_group[s.group].push_back(&s);
  }
  std::mt19937_64 rng(o.seed);
  std::vector<const Sample*> train, valid;
  for (auto& [group, members] : by_group) {
    (void)group;
    std::shuffle(members.begin(), members.end(), rng);
    // A group too small to spare two records for ranking trains whole.
    std::size_t held = members.size() >= 10 ? static_cast<std::size_t>(o.holdout * static_cast<double>(members.size())) : 0;
    valid.insert(valid.end(), members.begin(), members.begin() + static_cast<std::ptrdiff_t>(held));
    train.insert(train.end(), members.begin() + static_cast<std::ptrdiff_t>(held), members.end());
  }
  if (train.empty()) throw CostModelError("no training samples with features");
  // The rank objective boosts from the heuristic; a throughput-scaled
  // squared error has no use for a log-work estimate.
  bool prior = o.objective == Objective::kRank;
  BoostingData fit(train, prior, o.threads), held(valid, prior, o.threads);
  auto booster = MakeBooster(*fit.matrix, o);
  TrainReport report;
  report.holdout_samples = valid.size();
  double best_loss = std::numeric_limits<double>::infinity();
  int best_round = 0, since_best = 0;
  for (int round = 0; round < o.max_rounds; ++round) {
    BoostOneRound(*booster, fit, o.objective, round);
    if (!held.matrix) {
      best_round = round + 1;
      continue;
    }
    double loss = Objective_(o.objective, held.Scores(*booster, round + 1), valid, nullptr, nullptr);
    if (loss < best_loss - 1e-9) {
      best_loss = loss;
      best_round = round + 1;
      since_best = 0;
    } else if (++since_best >= o.early_stopping_rounds) {
      break;
    }
  }
  best_round = std::max(best_round, 1);
  report.train_samples = train.size();
  if (held.matrix) {
    // Refit on every record. Early stopping chose how many rounds the
    // held-out records allow; a fresh model trained on all records, with
    // as many rounds per record, learns from the fifth the first one never
    // saw, at no cost to prediction. Measured on the saved design-space
    // data (bench/RESULTS.md, "Cost model, session 8"): small gains on
    // seen workloads (pairwise, rank: 5 of 6 runs, mean +0.003; with 64
    // records, the online model's size: 8 of 8 workloads, +0.002 to
    // +0.010), none on unseen ones.
    std::vector<const Sample*> all = train;
    all.insert(all.end(), valid.begin(), valid.end());
    BoostingData every(all, prior, o.threads);
    double per_record = static_cast<double>(all.size()) / static_cast<double>(train.size());
    int rounds = std::min(o.max_rounds, std::max(1, static_cast<int>(std::lround(best_round * per_record))));
    booster = MakeBooster(*every.matrix, o);
    for (int round = 0; round < rounds; ++round) BoostOneRound(*booster, every, o.objective, round);
    best_round = rounds;
    report.train_samples = all.size();
  }
  booster->Set("nthread", "1");  // predictions from now on: see CostModel::Predict
  impl_->booster = std::move(booster);
  impl_->rounds = best_round;
  impl_->objective = o.objective;
  impl_->heuristic_prior = prior;
  report.rounds = impl_->rounds;
  report.holdout_loss = held.matrix ? best_loss : 0;
  return report;
}

std::vector<double> CostModel::Predict(const std::vector<std::vector<FeatureRow>>& candidates) const {
  if (!trained()) throw CostModelError("the cost model is not trained");
  std::vector<const std::vector<FeatureRow>*> ptrs;
  for (const auto& c : candidates) ptrs.push_back(&c);
  Packed p = Pack(ptrs);
  std::vector<double> prior = Priors(impl_->heuristic_prior, ptrs);
  if (p.rows == 0) return prior;
  // One thread, no OpenMP team: after a parallel region libgomp's threads
  // spin for milliseconds (its default spin count), on the cores where the
  // search featurizes the next batch. A batch of 512 candidates predicts
  // in ~2 ms on one thread; the spinning cost the featurizing threads more
  // (bench/RESULTS.md, "Cost-model throughput, session 6").
  DMatrix m(p.data, p.rows, NumFeatures(), 1);
  return Sums(RowPredictions(*impl_->booster, m, impl_->rounds), p, prior);
}

namespace {

// The checksum of a saved model: its header (less the checksum) and
// XGBoost's JSON. A database or file keeps no checksums of its own, and
// XGBoost loads a model whose trees were changed without a word, then
// reads outside them when it predicts.
std::string Checksum(const nlohmann::json& header, std::string_view body) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(ir::HashBytes(header.dump() + "\n" + std::string(body))));
  return hex;
}

}  // namespace

std::string CostModel::Save() const {
  if (!trained()) throw CostModelError("the cost model is not trained");
  bst_ulong len = 0;
  const char* buf = nullptr;
  Check(XGBoosterSaveModelToBuffer(impl_->booster->get(), R"({"format": "json"})", &len, &buf), "save");
  const std::string_view body(buf, len);
  nlohmann::json header = {{"magic", kMagic},
                           {"feature_version", kFeatureVersion},
                           {"objective", ObjectiveName(impl_->objective)},
                           {"rounds", impl_->rounds},
                           {"prior", impl_->heuristic_prior ? "heuristic" : "none"}};
  header["checksum"] = Checksum(header, body);
  return header.dump() + "\n" + std::string(body);
}

CostModel CostModel::Load(const std::string& blob) {
  auto newline = blob.find('\n');
  nlohmann::json header = ir::ParseJsonOrDiscarded(std::string_view(blob).substr(0, newline));
  if (newline == std::string::npos || !header.is_object() || header.value("magic", nlohmann::json()) != kMagic) {
    throw DamagedModelError("not a tunedb cost model");
  }
  const nlohmann::json version = header.value("feature_version", nlohmann::json());
  if (version != kFeatureVersion) {
    throw CostModelError("the model was trained on feature version " + (version.is_number() ? version.dump() : "?") +
                         "; this build extracts version " + std::to_string(kFeatureVersion) + " (retrain it)");
  }
  const std::string_view body = std::string_view(blob).substr(newline + 1);
  const nlohmann::json checksum = header.value("checksum", nlohmann::json());
  if (!checksum.is_string()) {
    throw CostModelError("the model has no checksum: an older tunedb saved it, or its header is damaged (retrain it)");
  }
  header.erase("checksum");
  if (checksum != Checksum(header, body)) {
    throw DamagedModelError("the model is damaged: it does not match its checksum (retrain it)");
  }
  // XGBoost reads its JSON recursively, and a body of 100,000 nested arrays
  // overflowed the stack in it; a checksum is no proof against a blob made
  // to match (POST /v1/models takes any). XGBoost's own models nest a few
  // levels, and XGBoost refuses what is not JSON itself.
  if (ir::JsonNestsTooDeep(body)) {
    throw DamagedModelError("the model is damaged: its body is not JSON, or nests deeper than " +
                            std::to_string(ir::kMaxJsonNesting) + " levels (retrain it)");
  }
  const nlohmann::json rounds = header.value("rounds", nlohmann::json());
  const nlohmann::json objective = header.value("objective", nlohmann::json());
  const nlohmann::json prior = header.value("prior", nlohmann::json());
  if (!rounds.is_number_integer() || rounds.get<std::int64_t>() < 1 || !objective.is_string() || !prior.is_string()) {
    throw CostModelError("the model's header lacks its rounds, objective or prior");
  }
  CostModel m;
  auto booster = std::make_unique<Booster>();
  Check(XGBoosterLoadModelFromBuffer(booster->get(), body.data(), body.size()), "load");
  booster->Set("nthread", "1");  // see CostModel::Predict
  m.impl_->booster = std::move(booster);
  m.impl_->rounds = static_cast<int>(std::min<std::int64_t>(rounds.get<std::int64_t>(), 1 << 20));
  m.impl_->heuristic_prior = prior == "heuristic";
  m.impl_->objective = objective == "rank" ? Objective::kRank : Objective::kWeightedMse;
  return m;
}

}  // namespace tunedb::costmodel
