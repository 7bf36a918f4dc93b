// A random sequence of schedule primitives, for property tests: each Step()
// tries one primitive (with its lookups) on a random block; a refused
// primitive throws ScheduleError and leaves the schedule as it was.
//
// The choices come from any UniformRandomBitGenerator: RandomScheduler
// draws them from a seed, and the schedule_steps fuzz target
// (fuzz/schedule_steps.cc) from its input's bytes, so that coverage
// guidance steers which primitives run on which loops.
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <utility>

#include "ir/schedule/schedule.h"

namespace tunedb::ir::testing {

template <class Rng>
class BasicRandomScheduler {
 public:
  BasicRandomScheduler(Schedule& sch, Rng rng) : sch_(sch), rng_(std::forward<Rng>(rng)) {}

  // Tries `steps` random primitives; the refused ones leave no trace.
  void Steps(int steps) {
    for (int step = 0; step < steps; ++step) {
      try {
        Step();
      } catch (const ScheduleError&) {
      }
    }
  }

  // Tries one random primitive on one random block; returns its name.
  std::string Step() {
    std::vector<BlockNode*> blocks = CollectBlocks(sch_.func());
    blocks.erase(blocks.begin());
    if (blocks.empty()) return "none";
    std::string name = blocks[Pick(blocks.size())]->name;
    BlockRV b = sch_.GetBlock(name);
    std::vector<LoopRV> loops = sch_.GetLoops(b);
    switch (Pick(14)) {
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
      case 12: {
        std::vector<std::int64_t> padding;
        for (std::size_t i = 0; i < sch_.Get(b).iter_vars.size(); ++i) padding.push_back(static_cast<std::int64_t>(1 + Pick(4)));
        sch_.PadEinsum(b, padding);
        return "pad_einsum";
      }
      default:
        if (loops.empty()) return "rfactor";
        sch_.RFactor(loops[Pick(loops.size())], static_cast<int>(Pick(2)));
        return "rfactor";
    }
  }

 private:
  std::size_t Pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  Schedule& sch_;
  Rng rng_;
};

class RandomScheduler : public BasicRandomScheduler<std::mt19937_64> {
 public:
  RandomScheduler(Schedule& sch, std::uint64_t seed) : BasicRandomScheduler(sch, std::mt19937_64(seed)) {}
};


}  // namespace tunedb::ir::testing
