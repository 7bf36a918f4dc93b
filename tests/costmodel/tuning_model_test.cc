#include "costmodel/tuning_model.h"

#include <cmath>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "db/memory_database.h"

namespace tunedb::costmodel {
namespace {

std::vector<FeatureRow> Candidate(std::mt19937_64& rng, double* cost) {
  std::uniform_real_distribution<float> u(0, 4);
  std::vector<FeatureRow> rows(2, FeatureRow(NumFeatures()));
  *cost = 1;
  for (FeatureRow& r : rows) {
    for (float& x : r) x = u(rng);
    *cost += 2 * r[0] + r[1];
  }
  return rows;
}

// n candidates of Candidate and their times, from one seed.
struct Batch {
  std::vector<std::vector<FeatureRow>> candidates;
  std::vector<double> secs;
};
Batch RandomBatch(std::uint64_t seed, int n, double secs_per_cost = 1) {
  std::mt19937_64 rng(seed);
  Batch b;
  for (int i = 0; i < n; ++i) {
    double cost;
    b.candidates.push_back(Candidate(rng, &cost));
    b.secs.push_back(cost * secs_per_cost);
  }
  return b;
}

FeatureRow Row(double executions, double vec_len, bool local) {
  FeatureRow r(NumFeatures(), 0.0f);
  r[FeatureIndex("loop_prod")] = static_cast<float>(std::log2(1 + executions));
  r[FeatureIndex("vec_len")] = static_cast<float>(std::log2(1 + vec_len));
  r[FeatureIndex("alloc_local")] = local ? 1.0f : 0.0f;
  return r;
}

TEST(TuningCostModelTest, HeuristicEstimatesWorkLeftAfterVectorization) {
  // 4096 executions in 16-lane vectors into an accumulator, plus 1024
  // scalar write-backs: 4096 / 16 * 0.7 + 1024 = 1203.2.
  double score = HeuristicScore({Row(4096, 16, true), Row(1024, 0, false)});
  EXPECT_NEAR(score, -std::log2(1 + 1203.2), 1e-3);
  // Lanes are capped at 16 (a 64-wide loop is four 16-lane instructions).
  EXPECT_NEAR(HeuristicScore({Row(4096, 64, false)}), HeuristicScore({Row(4096, 16, false)}), 1e-6);
  // Vectorized beats scalar; a local accumulator beats a global one.
  EXPECT_GT(HeuristicScore({Row(4096, 8, false)}), HeuristicScore({Row(4096, 0, false)}));
  EXPECT_GT(HeuristicScore({Row(4096, 8, true)}), HeuristicScore({Row(4096, 8, false)}));
}

TEST(TuningCostModelTest, HeuristicUntilEnoughDataThenXGBoost) {
  TuningCostModel::Options o;
  o.min_samples = 40;
  o.train.max_rounds = 20;
  o.train.threads = 1;
  TuningCostModel m(o);
  EXPECT_TRUE(m.using_heuristic());
  EXPECT_EQ(m.Describe(), "heuristic (0 of 40 samples needed to train)");
  auto [batch, secs] = RandomBatch(1, 30, 1e-3);
  EXPECT_FALSE(m.Update(batch, secs, 0));
  EXPECT_TRUE(m.using_heuristic());
  EXPECT_EQ(m.Predict(batch)[0], HeuristicScore(batch[0]));
  EXPECT_TRUE(m.Update(batch, secs, 0));  // 60 >= 40: trains
  EXPECT_FALSE(m.using_heuristic());
  EXPECT_EQ(m.Describe(), "XGBoost rank, trained on 60 samples");
  EXPECT_FALSE(m.Update({batch[0]}, {secs[0]}, 0));  // grew by less than 25%
}

TEST(TuningCostModelTest, SavedToTheDatabaseAndBack) {
  TuningCostModel::Options o;
  o.min_samples = 10;
  o.train.max_rounds = 5;
  o.train.threads = 1;
  TuningCostModel m(o);
  auto [batch, secs] = RandomBatch(2, 20);
  m.Update(batch, secs, 0);
  db::MemoryDatabase database;
  std::int64_t id = m.SaveToDatabase(database, "{}");
  EXPECT_TRUE(m.trained_here());
  TuningCostModel loaded(o);
  db::MemoryDatabase empty;
  EXPECT_FALSE(TuningCostModel(o).LoadFromDatabase(empty, 0));
  ASSERT_TRUE(loaded.LoadFromDatabase(database, id));
  EXPECT_EQ(loaded.Predict(batch), m.Predict(batch));
  // Loaded, and given fewer samples than it retrains from: still the
  // stored model, nothing of its own to store.
  EXPECT_EQ(loaded.Describe(), "XGBoost, loaded (no samples of this session yet)");
  EXPECT_FALSE(loaded.Update({batch[0], batch[1]}, {secs[0], secs[1]}, 0));
  EXPECT_FALSE(loaded.trained_here());
  EXPECT_EQ(loaded.Describe(), "XGBoost, loaded (2 samples here; it retrains from 10)");
  std::string file = ::testing::TempDir() + "/model_" + std::to_string(::getpid()) + ".bin";
  m.SaveToFile(file);
  TuningCostModel from_file(o);
  from_file.LoadFromFile(file);
  EXPECT_EQ(from_file.Predict(batch), m.Predict(batch));
  std::filesystem::remove(file);
  // A stored model of another feature version is refused clearly.
  db::StoredModel old;
  old.feature_version = 0;
  old.blob = "x";
  std::int64_t old_id = database.SaveModel(old);
  EXPECT_THROW(loaded.LoadFromDatabase(database, old_id), CostModelError);
  // So is one trained on fewer records than a session trains its own on.
  db::StoredModel small = *database.LoadModel(id);
  small.training_rows = 9;
  std::int64_t small_id = database.SaveModel(small);
  TuningCostModel fresh(o);
  try {
    fresh.LoadFromDatabase(database, small_id);
    ADD_FAILURE() << "a model trained on 9 records was loaded";
  } catch (const CostModelError& e) {
    EXPECT_EQ(std::string(e.what()), "model " + std::to_string(small_id) +
                                         " was trained on 9 records, fewer than the 10 samples a session trains its own on");
  }
  EXPECT_TRUE(fresh.using_heuristic());
}

// A session (id 0) starts from the model that learnt from the most
// records, not the newest: a session's model, trained on its own
// workloads' records, used to supersede `tunedb train`'s model of every
// record for every later session. Models it cannot use do not count.
TEST(TuningCostModelTest, ASessionStartsFromTheModelTrainedOnTheMostRecords) {
  TuningCostModel::Options o;
  o.min_samples = 10;
  TuningCostModel m(o);
  Batch batch = RandomBatch(5, 12);
  m.Update(batch.candidates, batch.secs, 0);
  db::MemoryDatabase database;
  db::StoredModel stored;
  stored.feature_version = kFeatureVersion;
  stored.blob = m.model().Save();
  auto save = [&](std::int64_t rows, int version) {
    db::StoredModel s = stored;
    s.training_rows = rows;
    s.feature_version = version;
    return database.SaveModel(s);
  };
  save(40, kFeatureVersion);
  std::int64_t global = save(300, kFeatureVersion);  // `tunedb train`
  save(64, kFeatureVersion);                         // a session's, newer
  save(300, kFeatureVersion - 1);                    // another version, newest
  save(5, kFeatureVersion);                          // too small, newest
  TuningCostModel loaded(o);
  ASSERT_TRUE(loaded.LoadFromDatabase(database));
  EXPECT_EQ(loaded.loaded_id(), global);
  EXPECT_EQ(loaded.loaded_rows(), 300);
  // Of equals, the newest.
  std::int64_t again = save(300, kFeatureVersion);
  ASSERT_TRUE(loaded.LoadFromDatabase(database));
  EXPECT_EQ(loaded.loaded_id(), again);
  // When none can be used, the newest's reason.
  db::MemoryDatabase unusable;
  stored.training_rows = 50;
  stored.feature_version = kFeatureVersion - 1;
  unusable.SaveModel(stored);
  stored.feature_version = kFeatureVersion;
  stored.training_rows = 3;
  std::int64_t newest = unusable.SaveModel(stored);
  try {
    TuningCostModel(o).LoadFromDatabase(unusable);
    ADD_FAILURE() << "an unusable model was loaded";
  } catch (const CostModelError& e) {
    EXPECT_EQ(std::string(e.what()), "model " + std::to_string(newest) +
                                         " was trained on 3 records, fewer than the 10 samples a session trains its own on");
  }
}

}  // namespace
}  // namespace tunedb::costmodel
