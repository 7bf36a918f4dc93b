#include "costmodel/dataset.h"

#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <thread>

#include <gtest/gtest.h>

#include "tests/costmodel/measured_db.h"

namespace tunedb::costmodel {
namespace {

std::string RunTunedb(const std::string& args, int* exit_code) {
  FILE* pipe = popen((std::string(TUNEDB_BINARY) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

class DatasetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(::testing::TempDir() + "/costmodel_measured_" + std::to_string(::getpid()) + ".sqlite");
    testing::BuildMeasuredDatabase(*path_, {"matmul:M=32,N=32,K=32", "dense_bias_relu:B=16,IN=32,OUT=16"}, 24);
  }
  static std::string* path_;
};
std::string* DatasetTest::path_ = nullptr;

TEST_F(DatasetTest, RecordsBecomeLabelledSamples) {
  db::SqliteDatabase d(*path_);
  Dataset data = LoadDataset(d);
  EXPECT_EQ(data.samples.size() + data.merged, 48u);
  EXPECT_EQ(data.skipped, 0u);
  EXPECT_EQ(data.group_names.size(), 2u);
  double best = 0;
  for (const Sample& s : data.samples) {
    EXPECT_FALSE(s.rows.empty());
    EXPECT_GE(s.label, 0);
    EXPECT_LE(s.label, 1);
    best = std::max(best, s.label);
  }
  EXPECT_DOUBLE_EQ(best, 1.0);  // the best of each group is 1
}

TEST_F(DatasetTest, TrainAndModelCommands) {
  int rc = 0;
  std::string out = RunTunedb("train --db " + *path_ + " --holdout 0.25 --seed 3 --rounds 30", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("pairwise accuracy:"), std::string::npos) << out;
  EXPECT_EQ(out.find("note:"), std::string::npos) << "three quarters of 48 records are enough for a session to start from\n" << out;
  EXPECT_NE(out.find("stored as model 1 in"), std::string::npos) << out;
  out = RunTunedb("train --db " + *path_ + " --objective weighted-mse --rounds 10 --holdout 0", &rc);
  ASSERT_EQ(rc, 0) << out;
  out = RunTunedb("model list --db " + *path_, &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("weighted-mse"), std::string::npos) << out;
  // Model 2 held out nothing, so it learnt from more records: sessions
  // start from it, and from it still after a third that holds out half.
  EXPECT_NE(out.find("\n  * 2  "), std::string::npos) << out;
  out = RunTunedb("train --db " + *path_ + " --holdout 0.5 --rounds 10", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("stored as model 3 in " + *path_ + "\nnote: tune sessions start from model 2, trained on more records"),
            std::string::npos)
      << out;
  out = RunTunedb("model eval --db " + *path_, &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("model 2 (weighted-mse"), std::string::npos) << "the model sessions start from\n" << out;
  out = RunTunedb("model eval --db " + *path_ + " --model 1", &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("model 1 (rank"), std::string::npos) << out;
  out = RunTunedb("train --db " + *path_ + " --objective fast", &rc);
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(out, "tunedb: error: --objective must be rank or weighted-mse\n");
}

TEST(MergeSameCodeTest, OneRecordPerCodeAndGroupWithTheMedianTime) {
  const double failed = std::numeric_limits<double>::infinity();
  DistinctCode d = MergeSameCode({7, 9, 7, 7, 9, 5, 5}, {3.0, 5.0, 1.0, failed, 7.0, 2.0, failed}, {0, 0, 0, 0, 1, 2, 2});
  EXPECT_EQ(d.kept, (std::vector<std::size_t>{0, 1, 4, 5}));
  // code 7 in group 0: median of 3, 1 and a failure; code 9 is in two
  // groups, each its own record; of two, the faster middle time.
  EXPECT_EQ(d.median_secs, (std::vector<double>{3.0, 5.0, 7.0, 2.0}));
}

TEST(LoadDatasetTest, RecordsOfTheSameCodeBecomeOneSample) {
  std::string path = ::testing::TempDir() + "/costmodel_same_code_" + std::to_string(::getpid()) + ".sqlite";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  ir::Workload w = ir::BuildWorkload("matmul:M=16,N=16,K=16");
  ir::Schedule plain(w.func, 0), split(w.func, 0);
  split.Split(split.GetLoops(split.GetBlock("C"))[1], {std::int64_t{4}, std::monostate{}});
  auto record = [&](const ir::Schedule& sch, double secs) {
    db::TuningRecord r;
    r.workload_hash = ir::WorkloadHash(w.func);
    r.target = "llvm";
    r.trace = sch.trace().ToJson().dump();
    r.run_secs = {secs};
    return r;
  };
  {
    db::SqliteDatabase d(path);
    d.CommitWorkload(testing::AsWorkloadInput(w));
    // The unscheduled program measured three times, the split one once.
    d.CommitRecords({record(plain, 4e-3), record(split, 1e-3), record(plain, 2e-3), record(plain, 9e-3)});
  }
  db::SqliteDatabase d(path);
  Dataset data = LoadDataset(d);
  ASSERT_EQ(data.samples.size(), 2u);
  EXPECT_EQ(data.merged, 2u);
  EXPECT_DOUBLE_EQ(data.samples[0].label, 1e-3 / 4e-3);  // the median of its three times
  EXPECT_DOUBLE_EQ(data.samples[1].label, 1.0);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

TEST(NormalizedThroughputTest, BestIsOneFailuresZero) {
  std::vector<double> labels =
      NormalizedThroughput({2.0, 1.0, std::numeric_limits<double>::infinity(), 4.0}, {0, 0, 0, 1});
  EXPECT_EQ(labels, (std::vector<double>{0.5, 1.0, 0.0, 1.0}));
}

}  // namespace
}  // namespace tunedb::costmodel

namespace tunedb::costmodel {
namespace {

// Programs of a workload under seeds 0..count-1 of five random primitives.
std::vector<ir::PrimFunc> RandomlyScheduled(const std::string& spec, int count) {
  ir::Workload w = ir::BuildWorkload(spec);
  std::vector<ir::PrimFunc> programs;
  for (int seed = 0; seed < count; ++seed) {
    ir::Schedule sch(w.func, static_cast<std::uint64_t>(seed));
    ir::testing::RandomScheduler random(sch, static_cast<std::uint64_t>(seed));
    random.Steps(5);
    programs.push_back(sch.func());
  }
  return programs;
}

TEST(FeaturizeBatchTest, ThreadsGiveTheSameRows) {
  std::vector<ir::PrimFunc> programs;
  for (const char* spec : {"matmul:M=8,N=8,K=8", "softmax:M=4,N=8", "conv2d_nhwc:N=1,H=5,W=5,CI=2,CO=2,KH=3,KW=3,stride=1,pad=1"}) {
    for (ir::PrimFunc& p : RandomlyScheduled(spec, 5)) programs.push_back(std::move(p));
  }
  EXPECT_EQ(FeaturizeBatch(programs, 1), FeaturizeBatch(programs, 3));
}

// The helper threads outlive a batch: batches after the first, and batches
// asked for by two threads at once (they take turns), give the same rows.
TEST(FeaturizeBatchTest, HelperThreadsServeRepeatedAndConcurrentBatches) {
  const std::vector<ir::PrimFunc> programs = RandomlyScheduled("matmul:M=8,N=8,K=8", 12);
  const auto expected = FeaturizeBatch(programs, 1);
  std::array<int, 2> matches{};
  std::vector<std::thread> callers;
  for (int c = 0; c < 2; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 5; ++round) matches[c] += FeaturizeBatch(programs, 2 + round % 2) == expected;
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(matches, (std::array<int, 2>{5, 5}));
}

}  // namespace
}  // namespace tunedb::costmodel
