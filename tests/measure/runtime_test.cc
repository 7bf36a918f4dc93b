#include "measure/runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
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
    for (std::int64_t extent : {0, 1, 2, 3, 4, 5, 6, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(extent));
      Closure c{&hits};
      for (int round = 0; round < 20; ++round) tunedb_parallel_for(Task, &c, extent);
      for (auto& h : hits) EXPECT_EQ(h.load(), 20);
    }
  }
}

// Work that grows along the iterations (row i of a triangular result has
// i terms) is split evenly: each thread's rows add up to the same.
TEST(RuntimeTest, WorkGrowingAlongTheIterationsIsSplitEvenly) {
  SetParallelThreads(2);
  struct Rows {
    std::mutex mutex;
    std::map<std::thread::id, std::int64_t> work;
  } rows;
  auto task = [](void* closure, std::int64_t begin, std::int64_t end) {
    auto* r = static_cast<Rows*>(closure);
    std::lock_guard<std::mutex> lock(r->mutex);
    for (std::int64_t i = begin; i < end; ++i) r->work[std::this_thread::get_id()] += i;
  };
  tunedb_parallel_for(task, &rows, 64);
  ASSERT_EQ(rows.work.size(), 2u);
  EXPECT_EQ(rows.work.begin()->second, 63 * 64 / 4);
  EXPECT_EQ(std::next(rows.work.begin())->second, 63 * 64 / 4);
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
  // Idle workers spin for 25 us or so, then yield between looks until half a
  // millisecond has passed, then sleep; the pauses between these loops find
  // them in each of the three, and each loop must still run every iteration
  // and return.
  const int pause_us[] = {20000, 0, 10, 100, 300, 1000, 2000};
  for (int round = 0; round < 14; ++round) {
    tunedb_parallel_for(Task, &c, 64);
    tunedb_parallel_for(Task, &c, 64);
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us[round % 7]));
  }
  for (auto& h : hits) EXPECT_EQ(h.load(), 28);
  SetParallelThreads(0);
}

struct Uneven {
  std::vector<std::atomic<int>>* hits;
  std::int64_t slow_from;  // iterations from here on take 2 ms each
};

void UnevenTask(void* closure, std::int64_t begin, std::int64_t end) {
  auto* u = static_cast<Uneven*>(closure);
  for (std::int64_t i = begin; i < end; ++i) {
    if (i >= u->slow_from) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    (*u->hits)[static_cast<std::size_t>(i)]++;
  }
}

TEST(RuntimeTest, ACallerWaitingLongForAChunkYieldsAndSeesItDone) {
  SetParallelThreads(2);
  std::vector<std::atomic<int>> hits(4);
  // The worker's chunk (iterations 2 and 3) takes 4 ms: the caller spins,
  // then waits yielding its core, and returns only when the chunk is done.
  // Then the caller's own chunk is the slow one, and the worker waits in
  // every idle phase for the next loop.
  for (std::int64_t slow_from : {2, 0}) {
    Uneven u{&hits, slow_from};
    for (int round = 0; round < 3; ++round) tunedb_parallel_for(UnevenTask, &u, 4);
  }
  for (auto& h : hits) EXPECT_EQ(h.load(), 6);
  SetParallelThreads(0);
}

TEST(RuntimeTest, MoreThreadsThanCoresStillRunEveryIteration) {
  // With more pool threads than cores, some are always descheduled while
  // the others wait for them, as when two tuning processes share the cores.
  const int threads = 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  SetParallelThreads(threads);
  std::vector<std::atomic<int>> hits(static_cast<std::size_t>(threads) * 3);
  Closure c{&hits};
  for (int round = 0; round < 200; ++round) tunedb_parallel_for(Task, &c, static_cast<std::int64_t>(hits.size()));
  for (auto& h : hits) EXPECT_EQ(h.load(), 200);
  SetParallelThreads(0);
}

}  // namespace
}  // namespace tunedb::measure
