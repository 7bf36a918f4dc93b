// Task scheduling: which workload of a multi-workload run gets the next
// batch of the shared trial budget.
//
//  - round-robin: each unfinished task in turn;
//  - gradient (Ansor's, as in TVM's GradientBased): after one warm-up batch
//    per task, the task whose best latency is expected to drop the most
//    per trial, estimated from its recent progress (a backward window of
//    `window` batches) and an optimistic forward term (best / trials so
//    far), mixed by alpha.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace tunedb::search {

struct TaskProgress {
  std::vector<double> best_after_batch;  // best latency (s) after each batch; +inf when none valid
  int trials = 0;
  bool done = false;  // out of new candidates
};

enum class TaskSchedulerKind { kRoundRobin, kGradient };
// Throws std::invalid_argument naming the choices on an unknown name.
TaskSchedulerKind ParseTaskScheduler(const std::string& name);

// The next task to tune, or -1 when every task is done. `last` is the task
// of the previous batch (-1 at the start).
int NextTask(TaskSchedulerKind kind, const std::vector<TaskProgress>& tasks, int last, double alpha = 0.2,
             int window = 3);

}  // namespace tunedb::search
