#include "measure/runtime.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define TUNEDB_PAUSE() _mm_pause()
#else
#define TUNEDB_PAUSE() ((void)0)
#endif

namespace tunedb::measure {
namespace {

using Task = void (*)(void*, std::int64_t, std::int64_t);

int DefaultThreads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

class ThreadPool {
 public:
  explicit ThreadPool(int threads) : threads_(threads) {
    for (int t = 1; t < threads_; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  int threads() const { return threads_; }

  // Idle workers stop spinning and sleep until the next Run.
  void Park() { parked_.store(true, std::memory_order_relaxed); }

  void Run(Task task, void* closure, std::int64_t extent) {
    if (threads_ == 1 || extent <= 1) {
      task(closure, 0, extent);
      return;
    }
    task_ = task;
    closure_ = closure;
    extent_ = extent;
    parked_.store(false, std::memory_order_relaxed);
    pending_.store(threads_ - 1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    RunChunk(0);
    while (pending_.load(std::memory_order_acquire) != 0) TUNEDB_PAUSE();
  }

 private:
  void RunChunk(int t) {
    std::int64_t chunk = (extent_ + threads_ - 1) / threads_;
    std::int64_t begin = std::min(extent_, chunk * t), end = std::min(extent_, begin + chunk);
    if (begin < end) task_(closure_, begin, end);
  }

  void WorkerLoop(int t) {
    std::uint64_t seen = 0;
    while (true) {
      // Spin for a while (a kernel is often run again right away), then sleep.
      std::uint64_t g = generation_.load(std::memory_order_acquire);
      for (int spin = 0; g == seen && spin < 20000 && !parked_.load(std::memory_order_relaxed); ++spin) {
        TUNEDB_PAUSE();
        g = generation_.load(std::memory_order_acquire);
      }
      if (g == seen) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        g = generation_.load(std::memory_order_acquire);
      }
      seen = g;
      if (stopping_) return;
      RunChunk(t);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> parked_{false};
  bool stopping_ = false;
  Task task_ = nullptr;
  void* closure_ = nullptr;
  std::int64_t extent_ = 0;
};

std::mutex pool_mutex;
std::unique_ptr<ThreadPool> pool;
int wanted_threads = 0;

ThreadPool& Pool() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  int n = wanted_threads > 0 ? wanted_threads : DefaultThreads();
  if (!pool || pool->threads() != n) {
    pool.reset();
    pool = std::make_unique<ThreadPool>(n);
  }
  return *pool;
}

}  // namespace

void SetParallelThreads(int threads) {
  std::lock_guard<std::mutex> lock(pool_mutex);
  wanted_threads = threads;
}

void ParkParallelThreads() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  if (pool) pool->Park();
}

int ParallelThreads() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  return wanted_threads > 0 ? wanted_threads : DefaultThreads();
}

}  // namespace tunedb::measure

extern "C" void tunedb_parallel_for(void (*task)(void*, std::int64_t, std::int64_t), void* closure,
                                    std::int64_t extent) {
  tunedb::measure::Pool().Run(task, closure, extent);
}
