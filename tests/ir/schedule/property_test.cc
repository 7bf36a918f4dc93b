// Property tests: random schedules of every built-in workload compute what
// the unscheduled program computes, in the reference interpreter, over many
// seeds. Primitives that are illegal at the point they are tried must throw
// ScheduleError and leave the schedule unchanged; the test checks that too.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/schedule/schedule.h"
#include "ir/workloads.h"
#include "tests/ir/schedule/random_scheduler.h"
#include "tests/ir/schedule/schedule_test_util.h"

namespace tunedb::ir {
namespace {

// Small shapes, so that the interpreter is fast and imperfect splits occur.
const char* kWorkloads[] = {
    "matmul:M=12,N=10,K=8",
    "batch_matmul:B=2,M=6,N=4,K=5",
    "dense_bias_relu:B=6,IN=10,OUT=4",
    "conv2d_nhwc:N=1,H=6,W=5,CI=3,CO=4,KH=3,KW=3,stride=1,pad=1",
    "conv2d_nhwc:N=1,H=7,W=7,CI=2,CO=2,KH=3,KW=3,stride=2,pad=0",
    "depthwise_conv2d_nhwc:N=1,H=6,W=6,C=3,KH=3,KW=3,stride=1,pad=1",
    "softmax:M=4,N=12",
    "reduce_sum:M=6,N=16",
};

#ifndef TUNEDB_PROPERTY_SEEDS
#define TUNEDB_PROPERTY_SEEDS 60
#endif
constexpr std::uint64_t kSeeds = TUNEDB_PROPERTY_SEEDS;
constexpr int kSteps = 12;

class PropertyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PropertyTest, RandomSchedulesKeepTheResult) {
  PrimFunc f = BuildWorkload(GetParam()).func;
  int applied = 0, refused = 0;
  std::map<std::string, int> applied_by_kind;
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    Schedule sch(f, seed);
    testing::RandomScheduler random(sch, seed);
    for (int step = 0; step < kSteps; ++step) {
      std::string before = PrintProgram(sch.func());
      std::size_t trace_size = sch.trace().insts.size();
      std::string what;
      try {
        what = random.Step();
        ++applied;
        ++applied_by_kind[what];
      } catch (const ScheduleError& e) {
        ++refused;
        // Refused: the program is exactly as before (lookups made by the
        // step before the refused primitive may remain in the trace).
        ASSERT_EQ(PrintProgram(sch.func()), before) << e.what();
        // By the primitive's own check, naming the condition: an "internal
        // error" is the program check after it catching an invalid program
        // the primitive built (safe, but a bug in the primitive).
        EXPECT_EQ(std::string(e.what()).find("internal error"), std::string::npos)
            << GetParam() << " seed " << seed << " step " << step << ": " << e.what() << "\n"
            << sch.trace().AsScript();
        ASSERT_GE(sch.trace().insts.size(), trace_size);
        continue;
      }
      std::string why = testing::SameResult(f, sch.func(), seed);
      ASSERT_EQ(why, "") << GetParam() << " seed " << seed << " after " << what << "\n"
                         << sch.trace().AsScript() << PrintProgram(sch.func());
    }
    // The trace replays to the same program.
    Schedule replay = ReplayTrace(f, sch.trace(), seed + 1000);
    ASSERT_EQ(PrintProgram(replay.func()), PrintProgram(sch.func())) << sch.trace().AsScript();
  }
  std::string summary;
  for (const auto& [kind, n] : applied_by_kind) summary += kind + "=" + std::to_string(n) + " ";
  RecordProperty("applied", summary);
  if (std::getenv("TUNEDB_PROPERTY_VERBOSE")) std::printf("%s: %s\n", GetParam(), summary.c_str());
  EXPECT_GT(applied, 100);
  EXPECT_GT(refused, 0);
}

INSTANTIATE_TEST_SUITE_P(Workloads, PropertyTest, ::testing::ValuesIn(kWorkloads),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tunedb::ir
