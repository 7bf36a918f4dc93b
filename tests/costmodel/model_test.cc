#include "costmodel/model.h"

#include <cstdio>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "costmodel/metrics.h"
#include "ir/mix.h"

namespace tunedb::costmodel {
namespace {

// A synthetic dataset whose throughput is a known function of the
// features: each of a candidate's two rows adds to its cost (as each store
// adds to a program's time), through columns 0, 1 and 13.
std::vector<Sample> Synthetic(int groups, int per_group, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 4);
  std::vector<Sample> out;
  for (int g = 0; g < groups; ++g) {
    for (int i = 0; i < per_group; ++i) {
      Sample s;
      s.group = g;
      for (int r = 0; r < 2; ++r) {
        FeatureRow row(NumFeatures());
        for (float& x : row) x = u(rng);
        s.rows.push_back(row);
      }
      double cost = 1.0;
      for (const FeatureRow& row : s.rows) cost += row[0] * 2 + (row[13] > 2 ? 3 : 0) + row[1];
      s.label = 1.0 / cost;
      out.push_back(std::move(s));
    }
  }
  for (int g = 0; g < groups; ++g) {  // normalize per group: best = 1
    double best = 0;
    for (const Sample& s : out) if (s.group == g) best = std::max(best, s.label);
    for (Sample& s : out) if (s.group == g) s.label /= best;
  }
  return out;
}

// Options for the small synthetic sets: one thread (deterministic), a
// fixed seed, few rounds.
TrainOptions SmallOptions(int max_rounds, std::uint64_t seed = 0) {
  TrainOptions o;
  o.max_rounds = max_rounds;
  o.seed = seed;
  o.threads = 1;
  return o;
}

std::vector<double> Evaluate(const CostModel& m, const std::vector<Sample>& test, std::vector<double>* labels,
                             std::vector<int>* groups) {
  std::vector<std::vector<FeatureRow>> c;
  for (const Sample& s : test) {
    c.push_back(s.rows);
    labels->push_back(s.label);
    groups->push_back(s.group);
  }
  return m.Predict(c);
}

TEST(CostModelTest, RanksFarBetterThanChance) {
  for (Objective obj : {Objective::kRank, Objective::kWeightedMse}) {
    CostModel m;
    TrainOptions o = SmallOptions(60);
    o.objective = obj;
    TrainReport report = m.Train(Synthetic(8, 60, 1), o);
    EXPECT_GT(report.rounds, 0);
    EXPECT_GT(report.holdout_samples, 0u);
    std::vector<double> labels;
    std::vector<int> groups;
    std::vector<double> scores = Evaluate(m, Synthetic(4, 50, 2), &labels, &groups);
    double acc = PairwiseAccuracy(scores, labels, groups);
    // Chance is 0.5. The rank objective learns the order directly; the
    // weighted squared error fits 1 / cost, which the sum of rows can only
    // approximate.
    EXPECT_GT(acc, obj == Objective::kRank ? 0.8 : 0.7) << ObjectiveName(obj);
    EXPECT_GT(TopKScore(scores, labels, groups, 5), 0.8) << ObjectiveName(obj);
  }
}

TEST(CostModelTest, TrainingIsDeterministicAndSaveLoadKeepsPredictions) {
  TrainOptions o = SmallOptions(20, 5);
  std::vector<Sample> data = Synthetic(4, 30, 3);
  CostModel a, b;
  a.Train(data, o);
  b.Train(data, o);
  std::vector<std::vector<FeatureRow>> c;
  for (const Sample& s : Synthetic(1, 10, 4)) c.push_back(s.rows);
  EXPECT_EQ(a.Predict(c), b.Predict(c));
  CostModel loaded = CostModel::Load(a.Save());
  EXPECT_EQ(loaded.Predict(c), a.Predict(c));
}

// Early stopping holds a fifth of each group out to choose the number of
// rounds; the kept model is then refit on every record with as many rounds
// per record: the same model as training without a holdout for that many
// rounds.
TEST(CostModelTest, TheKeptModelIsRefitOnEveryRecord) {
  TrainOptions o = SmallOptions(20, 7);
  std::vector<Sample> data = Synthetic(4, 20, 3);
  CostModel with_holdout;
  TrainReport report = with_holdout.Train(data, o);
  EXPECT_EQ(report.holdout_samples, 4u * 4);  // a fifth of each group's 20
  EXPECT_EQ(report.train_samples, data.size());
  TrainOptions all = o;
  all.holdout = 0;
  all.max_rounds = report.rounds;
  CostModel without;
  TrainReport plain = without.Train(data, all);
  EXPECT_EQ(plain.holdout_samples, 0u);
  EXPECT_EQ(plain.rounds, report.rounds);
  std::vector<std::vector<FeatureRow>> c;
  for (const Sample& s : Synthetic(1, 20, 4)) c.push_back(s.rows);
  std::vector<double> p = with_holdout.Predict(c), q = without.Predict(c);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], q[i], 1e-4) << i;
}

TEST(CostModelTest, RefusesOtherFeatureVersionsAndGarbage) {
  TrainOptions o = SmallOptions(3);
  CostModel m;
  m.Train(Synthetic(2, 12, 6), o);
  std::string blob = m.Save();
  std::string older = blob;
  const std::string current = "\"feature_version\":" + std::to_string(kFeatureVersion);
  older.replace(older.find(current), current.size(), "\"feature_version\":0");
  try {
    CostModel::Load(older);
    FAIL();
  } catch (const CostModelError& e) {
    EXPECT_EQ(std::string(e.what()), "the model was trained on feature version 0; this build extracts version " +
                                         std::to_string(kFeatureVersion) + " (retrain it)");
  }
  EXPECT_THROW(CostModel::Load("not a model"), CostModelError);
  auto expect_refused = [](const std::string& bad, const std::string& error) {
    try {
      CostModel::Load(bad);
      ADD_FAILURE() << "loaded: " << error;
    } catch (const CostModelError& e) {
      EXPECT_EQ(std::string(e.what()), error);
    }
  };
  // One digit of a split changed in XGBoost's JSON (a database or file
  // keeps no checksum of its own; XGBoost read such trees outside their
  // nodes when it predicted), the rounds in the header, the checksum gone.
  std::string damaged = blob;
  std::size_t digit = damaged.find_first_of("123456789", damaged.find("\"split_indices\""));
  ASSERT_NE(digit, std::string::npos);
  damaged[digit] = damaged[digit] == '9' ? '1' : static_cast<char>(damaged[digit] + 1);
  expect_refused(damaged, "the model is damaged: it does not match its checksum (retrain it)");
  std::string more_rounds = blob;
  more_rounds.replace(more_rounds.find("\"rounds\":"), 9, "\"rounds\":9");
  expect_refused(more_rounds, "the model is damaged: it does not match its checksum (retrain it)");
  std::string unchecked = blob;
  unchecked.replace(unchecked.find("\"checksum\""), 10, "\"checksun\"");
  expect_refused(unchecked,
                 "the model has no checksum: an older tunedb saved it, or its header is damaged (retrain it)");
  // A blob made to match its checksum (POST /v1/models takes any) whose
  // body XGBoost would recurse through until the stack overflowed.
  nlohmann::json header = nlohmann::json::parse(blob.substr(0, blob.find('\n')));
  header.erase("checksum");
  const std::string deep = "{\"learner\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(ir::HashBytes(header.dump() + "\n" + deep)));
  header["checksum"] = hex;
  expect_refused(header.dump() + "\n" + deep,
                 "the model is damaged: its body is not JSON, or nests deeper than 1024 levels (retrain it)");
  EXPECT_THROW(CostModel().Predict({}), CostModelError);
  EXPECT_THROW(CostModel().Train({}, o), CostModelError);
  // No rounds would leave a booster XGBoost refuses to predict with.
  TrainOptions no_rounds = o;
  no_rounds.max_rounds = 0;
  try {
    CostModel().Train(Synthetic(2, 12, 6), no_rounds);
    FAIL();
  } catch (const CostModelError& e) {
    EXPECT_STREQ(e.what(), "max_rounds must be at least 1, not 0");
  }
}

}  // namespace
}  // namespace tunedb::costmodel
