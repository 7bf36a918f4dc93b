#include "search/task_scheduler.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace tunedb::search {

TaskSchedulerKind ParseTaskScheduler(const std::string& name) {
  if (name == "round-robin") return TaskSchedulerKind::kRoundRobin;
  if (name == "gradient") return TaskSchedulerKind::kGradient;
  throw std::invalid_argument("unknown task scheduler '" + name + "' (choose round-robin or gradient)");
}

namespace {

int RoundRobin(const std::vector<TaskProgress>& tasks, int last) {
  int n = static_cast<int>(tasks.size());
  for (int step = 1; step <= n; ++step) {
    int i = ((last < 0 ? -1 : last) + step) % n;
    if (!tasks[static_cast<std::size_t>(i)].done) return i;
  }
  return -1;
}

// Expected latency reduction per trial of one task (larger is better).
double Gradient(const TaskProgress& t, double alpha, int window) {
  const std::vector<double>& best = t.best_after_batch;
  double now = best.back();
  if (!std::isfinite(now)) return std::numeric_limits<double>::infinity();  // nothing valid yet: explore it
  double backward = 0;
  int n = static_cast<int>(best.size());
  if (n > window && std::isfinite(best[static_cast<std::size_t>(n - 1 - window)])) {
    backward = (best[static_cast<std::size_t>(n - 1 - window)] - now) / window;
  }
  // Optimistic: the next batch may improve as much as the average batch so far.
  double forward = now / std::max(1, n);
  return alpha * backward + (1 - alpha) * forward;
}

}  // namespace

int NextTask(TaskSchedulerKind kind, const std::vector<TaskProgress>& tasks, int last, double alpha, int window) {
  if (kind == TaskSchedulerKind::kRoundRobin) return RoundRobin(tasks, last);
  // Warm-up: every task gets one batch first.
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!tasks[i].done && tasks[i].best_after_batch.empty()) return static_cast<int>(i);
  }
  int pick = -1;
  double best_gradient = -1;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].done) continue;
    double g = Gradient(tasks[i], alpha, window);
    if (pick < 0 || g > best_gradient) {
      pick = static_cast<int>(i);
      best_gradient = g;
    }
  }
  return pick;
}

}  // namespace tunedb::search
