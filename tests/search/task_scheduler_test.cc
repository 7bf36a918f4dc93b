#include "search/task_scheduler.h"

#include <limits>
#include <stdexcept>

#include <gtest/gtest.h>

namespace tunedb::search {
namespace {

TEST(TaskScheduler, RoundRobinSkipsDoneTasks) {
  std::vector<TaskProgress> t(3);
  EXPECT_EQ(NextTask(TaskSchedulerKind::kRoundRobin, t, -1), 0);
  EXPECT_EQ(NextTask(TaskSchedulerKind::kRoundRobin, t, 0), 1);
  t[2].done = true;
  EXPECT_EQ(NextTask(TaskSchedulerKind::kRoundRobin, t, 1), 0);
  t[0].done = t[1].done = true;
  EXPECT_EQ(NextTask(TaskSchedulerKind::kRoundRobin, t, 1), -1);
}

TEST(TaskScheduler, GradientWarmsUpThenPrefersTheTaskThatStillImproves) {
  std::vector<TaskProgress> t(2);
  EXPECT_EQ(NextTask(TaskSchedulerKind::kGradient, t, -1), 0);
  t[0].best_after_batch = {1.0};
  EXPECT_EQ(NextTask(TaskSchedulerKind::kGradient, t, 0), 1);
  // Task 0 is stuck at 1 ms; task 1 went from 10 ms to 2 ms.
  t[0].best_after_batch = {1e-3, 1e-3, 1e-3, 1e-3, 1e-3};
  t[1].best_after_batch = {10e-3, 8e-3, 5e-3, 3e-3, 2e-3};
  EXPECT_EQ(NextTask(TaskSchedulerKind::kGradient, t, 0), 1);
  // A task without any valid candidate is explored first.
  t[0].best_after_batch.push_back(std::numeric_limits<double>::infinity());
  EXPECT_EQ(NextTask(TaskSchedulerKind::kGradient, t, 1), 0);
}

TEST(TaskScheduler, UnknownNameIsRefused) {
  EXPECT_EQ(ParseTaskScheduler("gradient"), TaskSchedulerKind::kGradient);
  EXPECT_THROW(ParseTaskScheduler("fifo"), std::invalid_argument);
}

}  // namespace
}  // namespace tunedb::search
