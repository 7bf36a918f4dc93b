// What a parallel loop of compiled kernels costs beyond its work: the
// dispatch of tunedb_parallel_for (measure/runtime.h), against the same work
// run serially in the same process.
//
// For each amount of work per iteration (none, then chains of multiply-
// adds in registers, so that memory plays no part), the loop runs over 2 x
// threads iterations on the pool, then one thread's share of it serially;
// the overhead is the difference of the medians of 2000 alternating calls.
// The worker starts late by at least one cache-line handoff between cores
// and the caller learns of its end one handoff late, so the overhead is
// that and whatever the pool adds to it.
//
// The median hides what happens when the scheduler puts two of the pool's
// threads on one core: the caller spins out its budget (1000 pauses)
// before it yields to the worker, whose chunk it waits for, and the worker
// spins out its own before it yields back, some 50 us a call. So the table
// also gives the 90th percentile, and how many calls ran two chunks on one
// CPU (each chunk notes sched_getcpu()).
//
// Usage: parallel_bench [--threads N]   (default: the cores the process may use)
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "measure/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Work {
  int chains = 0;  // dependent multiply-add steps per iteration
  float sink = 0;
  // The CPU each iteration ran on, by iteration (2 x threads of them).
  std::vector<std::atomic<int>>* cpus = nullptr;
};

// Eight independent chains of multiply-adds: the latency of the chains, not
// the machine's throughput, sets the time, which is the same on every core.
void Iterations(void* closure, std::int64_t begin, std::int64_t end) {
  auto* work = static_cast<Work*>(closure);
  float acc[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (std::int64_t it = begin; it < end; ++it) {
    for (int step = 0; step < work->chains; ++step) {
      for (float& a : acc) a = a * 0.999f + 0.001f;
    }
  }
  float sum = 0;
  for (float a : acc) sum += a;
  work->sink = sum;
  if (work->cpus) {
    int cpu = sched_getcpu();
    for (std::int64_t it = begin; it < end; ++it) (*work->cpus)[static_cast<std::size_t>(it)].store(cpu);
  }
}

// Whether two of the loop's threads ran on the same CPU: the first
// iteration of each thread's chunk is at a multiple of `share`.
bool SharedACpu(const std::vector<std::atomic<int>>& cpus, std::int64_t share) {
  for (std::size_t a = 0; a < cpus.size(); a += static_cast<std::size_t>(share)) {
    for (std::size_t b = a + static_cast<std::size_t>(share); b < cpus.size(); b += static_cast<std::size_t>(share)) {
      if (cpus[a].load() == cpus[b].load()) return true;
    }
  }
  return false;
}

// The q-quantile (0.5: the median).
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = tunedb::measure::ParallelThreads();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: parallel_bench [--threads N]\n");
      return 2;
    }
  }
  if (threads < 2) {
    std::fprintf(stderr, "parallel_bench: needs at least 2 threads (got %d)\n", threads);
    return 2;
  }
  tunedb::measure::SetParallelThreads(threads);
  const std::int64_t extent = 2 * threads, share = extent / threads;
  std::printf("threads: %d, iterations per loop: %lld\n\n", threads, static_cast<long long>(extent));
  std::printf(
      "| work per thread, us (serial) | parallel loop, us | overhead, us | overhead / work | parallel loop, 90th "
      "percentile, us | calls with two chunks on one CPU |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  std::vector<std::atomic<int>> cpus(static_cast<std::size_t>(extent));
  for (int chains : {0, 200, 800, 3200}) {
    Work work{chains};
    std::vector<double> parallel, serial;
    int shared = 0;
    const int rounds = 2000;
    for (int round = 0; round < rounds; ++round) {
      work.cpus = &cpus;
      auto t0 = Clock::now();
      tunedb_parallel_for(Iterations, &work, extent);
      auto t1 = Clock::now();
      work.cpus = nullptr;
      Iterations(&work, 0, share);
      auto t2 = Clock::now();
      parallel.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      serial.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
      shared += SharedACpu(cpus, share);
    }
    double p = Quantile(parallel, 0.5), s = Quantile(serial, 0.5);
    char share_text[32] = "-";
    if (chains > 0) std::snprintf(share_text, sizeof share_text, "%.1f%%", (p - s) / s * 100);
    std::printf("| %.2f | %.2f | %.2f | %s | %.2f | %d of %d |\n", s, p, p - s, share_text, Quantile(parallel, 0.9),
                shared, rounds);
  }
  return 0;
}
