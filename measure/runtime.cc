#include "measure/runtime.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
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

// What the caller spins on: one per thread, written by its worker.
struct alignas(64) Done {
  std::atomic<std::uint64_t> generation{0};
};

// 25 us of pause instructions on the Zen 4 VM (25 ns each; Intel's take
// longer): far longer than two equal chunks end apart on an idle machine.
constexpr int kSpinsBeforeYield = 1000;

// How long an idle worker waits for the next loop before it sleeps: a
// kernel timed again and again calls the pool every few microseconds, and a
// wake-up from sleep costs more than that.
constexpr std::chrono::microseconds kIdleBeforeSleep(500);

// A dispatch costs cache-line handoffs between cores, about 0.14 us each on
// this kind of VM, against a 128 matmul's 6 us per core. So the hot path
// touches few lines, and none that both sides write: the caller writes the
// loop and its generation into one line, which the workers spin on and read
// at once; each worker reports its finished generation in a line of its own,
// which the caller spins on; the mutex and condition variable are touched
// only when a worker sleeps. (With the loop, the generation, the mutex and
// one shared count of unfinished chunks in the same few lines, the mutex
// taken on every dispatch, a worker started 0.5-0.7 us after the caller.)
class ThreadPool {
 public:
  explicit ThreadPool(int threads)
      : threads_(threads), parts_(std::int64_t{threads} * threads * threads), runs_(Runs(threads)),
        done_(static_cast<std::size_t>(threads)) {
    for (int t = 1; t < threads_; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(sleep_.mutex);
      stopping_ = true;
      loop_.generation.fetch_add(1, std::memory_order_seq_cst);
    }
    sleep_.wake.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  int threads() const { return threads_; }

  // Idle workers stop spinning and sleep until the next Run.
  void Park() { sleep_.parked.store(true, std::memory_order_relaxed); }

  void Run(Task task, void* closure, std::int64_t extent) {
    if (threads_ == 1 || extent <= 1) {
      task(closure, 0, extent);
      return;
    }
    // Workers read the loop only after they see its new generation, and they
    // were done reading the last one before they reported it finished, so
    // these plain stores race with nothing.
    loop_.task = task;
    loop_.closure = closure;
    loop_.extent = extent;
    // Read before written: the workers spin on this line too.
    if (sleep_.parked.load(std::memory_order_relaxed)) sleep_.parked.store(false, std::memory_order_relaxed);
    // Sequentially consistent with the sleepers' count below: a worker going
    // to sleep counts itself and then reads the generation, so either it
    // sees this loop or this thread sees it asleep and wakes it.
    std::uint64_t generation = loop_.generation.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (sleep_.sleepers.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard<std::mutex> lock(sleep_.mutex); }
      sleep_.wake.notify_all();
    }
    RunChunk(0, task, closure, extent);
    for (int t = 1; t < threads_; ++t) AwaitDone(done_[static_cast<std::size_t>(t)], generation);
  }

 private:
  // The iterations in threads^3 equal parts, part p to the thread numbered
  // by the sum of p's base-threads digits modulo threads: for two threads
  // the Thue-Morse sequence, parts 0, 3, 5, 6 and 1, 2, 4, 7. Each thread
  // then does an equal share of work that grows along the iterations (a
  // triangular result's rows: in one contiguous chunk each, the second of
  // two threads did three quarters of a symmetric product's work, 1.35 ms
  // against 1.04 ms so), and the two ends of work light at both (a
  // convolution's border rows) go to different threads, which a part from
  // each end per thread did not do (1.7% slower on a transposed
  // convolution; bench/RESULTS.md, session 78). A loop of fewer
  // iterations gets one contiguous chunk per thread: it keeps neighbouring
  // tiles together (a 128 matmul's 4 tiles ran 0.5-1% slower as parts 0
  // and 3, 1 and 2).
  void RunChunk(int t, Task task, void* closure, std::int64_t extent) const {
    if (extent < parts_) {
      std::int64_t chunk = (extent + threads_ - 1) / threads_;
      std::int64_t begin = std::min(extent, chunk * t), end = std::min(extent, begin + chunk);
      if (begin < end) task(closure, begin, end);
      return;
    }
    auto bound = [&](std::int64_t part) {
      return static_cast<std::int64_t>(static_cast<__int128>(part) * extent / parts_);
    };
    for (const auto& [first, last] : runs_[static_cast<std::size_t>(t)]) task(closure, bound(first), bound(last));
  }

  // Each thread's parts as runs [first, last) of consecutive parts, one
  // call each.
  static std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> Runs(int threads) {
    const std::int64_t parts = std::int64_t{threads} * threads * threads;
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> runs(static_cast<std::size_t>(threads));
    for (std::int64_t p = 0; p < parts; ++p) {
      std::int64_t digits = 0;
      for (std::int64_t q = p; q > 0; q /= threads) digits += q % threads;
      auto& mine = runs[static_cast<std::size_t>(digits % threads)];
      if (!mine.empty() && mine.back().second == p) {
        mine.back().second = p + 1;
      } else {
        mine.emplace_back(p, p + 1);
      }
    }
    return runs;
  }

  // Spins, then yields. Where the machine has more runnable threads than
  // cores (two tuning processes at once, or a build beside one), the worker
  // waited for may be descheduled, and a caller spinning on for it holds the
  // core for the rest of its time slice. With that and the idle workers'
  // spinning, two tunes of matmul 64 side by side spent 15-25 s each in
  // their runs against 2.5 s alone (bench/concurrent_tune.sh); yielding in
  // both waits brought it to 4-6 s. On an idle machine the spin ends first
  // (the chunks are equal), and a yield with nothing else to run returns at
  // once.
  static void AwaitDone(const Done& done, std::uint64_t generation) {
    for (int spin = 0; done.generation.load(std::memory_order_acquire) != generation; ++spin) {
      if (spin < kSpinsBeforeYield) {
        TUNEDB_PAUSE();
      } else {
        sched_yield();
      }
    }
  }

  void WorkerLoop(int t) {
    std::uint64_t seen = 0;
    while (true) {
      // Spin for a while (a kernel is often run again right away), then
      // yield between looks as AwaitDone does, then sleep. (A worker that
      // only spun, for 500 us after each chunk, held a core that another
      // process's kernel was waiting for.)
      std::uint64_t g = seen;
      auto idle = [&] {
        g = loop_.generation.load(std::memory_order_acquire);
        return g == seen && !sleep_.parked.load(std::memory_order_relaxed);
      };
      int spin = 0;
      while (spin < kSpinsBeforeYield && idle()) {
        TUNEDB_PAUSE();
        ++spin;
      }
      if (spin == kSpinsBeforeYield) {
        auto until = std::chrono::steady_clock::now() + kIdleBeforeSleep;
        while (idle() && std::chrono::steady_clock::now() < until) sched_yield();
      }
      if (g == seen) {
        std::unique_lock<std::mutex> lock(sleep_.mutex);
        sleep_.sleepers.fetch_add(1, std::memory_order_seq_cst);
        sleep_.wake.wait(lock, [&] { return loop_.generation.load(std::memory_order_seq_cst) != seen; });
        sleep_.sleepers.fetch_sub(1, std::memory_order_relaxed);
        g = loop_.generation.load(std::memory_order_acquire);
      }
      seen = g;
      if (stopping_) return;
      RunChunk(t, loop_.task, loop_.closure, loop_.extent);
      done_[static_cast<std::size_t>(t)].generation.store(g, std::memory_order_release);
    }
  }

  // What the workers spin on: written once per dispatch, by the caller.
  struct alignas(64) Loop {
    std::atomic<std::uint64_t> generation{0};
    Task task = nullptr;
    void* closure = nullptr;
    std::int64_t extent = 0;
  };
  // Written only when workers are parked, go to sleep or wake.
  struct alignas(64) Sleep {
    std::mutex mutex;
    std::condition_variable wake;
    std::atomic<int> sleepers{0};
    std::atomic<bool> parked{false};
  };

  const int threads_;
  const std::int64_t parts_;  // threads^3 (RunChunk)
  const std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> runs_;
  std::vector<std::thread> workers_;
  Loop loop_;
  std::vector<Done> done_;
  Sleep sleep_;
  bool stopping_ = false;  // written under sleep_.mutex, with a new generation
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
