#include "measure/runtime.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tunedb::measure {
namespace {

struct Closure {
  std::vector<std::atomic<int>>* hits;
};

void Task(void* closure, std::int64_t begin, std::int64_t end) {
  auto* c = static_cast<Closure*>(closure);
  for (std::int64_t i = begin; i < end; ++i) (*c->hits)[static_cast<std::size_t>(i)]++;
}

TEST(RuntimeTest, EveryIterationRunsExactlyOnce) {
  for (int threads : {1, 2, 3}) {
    SetParallelThreads(threads);
    EXPECT_EQ(ParallelThreads(), threads);
    for (std::int64_t extent : {0, 1, 2, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(extent));
      Closure c{&hits};
      for (int round = 0; round < 20; ++round) tunedb_parallel_for(Task, &c, extent);
      for (auto& h : hits) EXPECT_EQ(h.load(), 20);
    }
  }
}

TEST(RuntimeTest, ParkedThreadsWakeForTheNextLoop) {
  SetParallelThreads(3);
  std::vector<std::atomic<int>> hits(300);
  Closure c{&hits};
  // Park between loops (as a measuring worker does after every run) and
  // right away again: every loop still runs completely, on all threads.
  for (int round = 0; round < 50; ++round) {
    tunedb_parallel_for(Task, &c, 300);
    ParkParallelThreads();
    if (round % 2 == 0) ParkParallelThreads();
  }
  for (auto& h : hits) EXPECT_EQ(h.load(), 50);
  SetParallelThreads(0);
}

TEST(RuntimeTest, ThreadsAsleepAfterSpinningWakeForTheNextLoop) {
  SetParallelThreads(2);
  std::vector<std::atomic<int>> hits(64);
  Closure c{&hits};
  // Idle workers spin for about a millisecond, then sleep; loops that come
  // now and then find them asleep, loops right after another find them
  // spinning, and each must still run every iteration and return.
  for (int round = 0; round < 12; ++round) {
    tunedb_parallel_for(Task, &c, 64);
    tunedb_parallel_for(Task, &c, 64);
    std::this_thread::sleep_for(std::chrono::milliseconds(round % 3 == 0 ? 20 : round % 3));
  }
  for (auto& h : hits) EXPECT_EQ(h.load(), 24);
  SetParallelThreads(0);
}

}  // namespace
}  // namespace tunedb::measure
