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

class RandomScheduler {
 public:
  RandomScheduler(Schedule& sch, std::uint64_t seed) : sch_(sch), rng_(seed) {}

  // Tries one random primitive on one random block; returns its name.
  std::string Step() {
    std::vector<BlockNode*> blocks = CollectBlocks(sch_.func());
    blocks.erase(blocks.begin());
    if (blocks.empty()) return "none";
    std::string name = blocks[Pick(blocks.size())]->name;
    BlockRV b = sch_.GetBlock(name);
    std::vector<LoopRV> loops = sch_.GetLoops(b);
    switch (Pick(13)) {
      case 0:
      case 1: {
        if (loops.empty()) return "split";
        LoopRV l = loops[Pick(loops.size())];
        int n = 2 + static_cast<int>(Pick(2));
        if (Pick(2) == 0) {
          std::vector<ExprRV> f = sch_.SamplePerfectTile(l, n, 4);
          std::vector<SplitFactor> factors(f.begin(), f.end());
          sch_.Split(l, factors);
        } else {
          // Imperfect split with an inferred factor: predicates.
          sch_.Split(l, {std::monostate{}, std::int64_t(1 + Pick(5))});
        }
        return "split";
      }
      case 2: {
        if (loops.size() < 2) return "reorder";
        std::vector<LoopRV> order = loops;
        std::shuffle(order.begin(), order.end(), rng_);
        sch_.Reorder(order);
        return "reorder";
      }
      case 3: {
        if (loops.size() < 2) return "fuse";
        std::size_t i = Pick(loops.size() - 1);
        sch_.Fuse({loops[i], loops[i + 1]});
        return "fuse";
      }
      case 4: {
        if (loops.empty()) return "kind";
        LoopRV l = loops[Pick(loops.size())];
        switch (Pick(3)) {
          case 0: sch_.Parallel(l); return "parallel";
          case 1: sch_.Vectorize(l); return "vectorize";
          default: sch_.Unroll(l); return "unroll";
        }
      }
      case 5: {
        LoopRV loc = sch_.SampleComputeLocation(b);
        sch_.ComputeAt(b, loc, Pick(2) == 0);
        return "compute_at";
      }
      case 6: {
        std::vector<BlockRV> consumers = sch_.GetConsumers(b);
        if (consumers.empty()) return "compute_at";
        std::vector<LoopRV> cl = sch_.GetLoops(consumers[0]);
        if (cl.empty()) return "compute_at";
        sch_.ComputeAt(b, cl[Pick(cl.size())], Pick(2) == 0);
        return "compute_at";
      }
      case 7: {
        std::vector<BlockRV> producers = sch_.GetProducers(b);
        if (producers.empty()) return "reverse_compute_at";
        std::vector<LoopRV> pl = sch_.GetLoops(producers[Pick(producers.size())]);
        if (pl.empty()) return "reverse_compute_at";
        sch_.ReverseComputeAt(b, pl[Pick(pl.size())], Pick(2) == 0);
        return "reverse_compute_at";
      }
      case 8:
        if (Pick(2) == 0) {
          sch_.ComputeInline(b);
          return "compute_inline";
        }
        sch_.ReverseComputeInline(b);
        return "reverse_compute_inline";
      case 9: {
        BlockRV cache = sch_.CacheWrite(b, 0, Pick(2) == 0 ? "local" : "global");
        // A follow-up that is refused must not undo the step: each primitive is
        // atomic on its own.
        if (!loops.empty() && Pick(2) == 0) {
          try {
            sch_.ReverseComputeAt(cache, sch_.GetLoops(b)[Pick(loops.size())], true);
          } catch (const ScheduleError&) {
          }
        }
        return "cache_write";
      }
      case 10: {
        const BlockNode& node = sch_.Get(b);
        if (node.reads.empty()) return "cache_read";
        BlockRV cache = sch_.CacheRead(b, static_cast<int>(Pick(node.reads.size())), "global");
        if (!loops.empty() && Pick(2) == 0) {
          try {
            sch_.ComputeAt(cache, sch_.GetLoops(b)[Pick(loops.size())], true);
          } catch (const ScheduleError&) {
          }
        }
        return "cache_read";
      }
      case 11:
        if (loops.empty()) return "decompose_reduction";
        sch_.DecomposeReduction(b, loops[Pick(loops.size())]);
        return "decompose_reduction";
      default:
        if (loops.empty()) return "rfactor";
        sch_.RFactor(loops[Pick(loops.size())], static_cast<int>(Pick(2)));
        return "rfactor";
    }
  }

 private:
  std::size_t Pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  Schedule& sch_;
  std::mt19937_64 rng_;
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
    RandomScheduler random(sch, seed);
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
