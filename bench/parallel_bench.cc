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
// Usage: parallel_bench [--threads N]   (default: the cores the process may use)
#include <algorithm>
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
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
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
  std::printf("| work per thread, us (serial) | parallel loop, us | overhead, us | overhead / work |\n");
  std::printf("| --- | --- | --- | --- |\n");
  for (int chains : {0, 200, 800, 3200}) {
    Work work{chains};
    std::vector<double> parallel, serial;
    for (int round = 0; round < 2000; ++round) {
      auto t0 = Clock::now();
      tunedb_parallel_for(Iterations, &work, extent);
      auto t1 = Clock::now();
      Iterations(&work, 0, share);
      auto t2 = Clock::now();
      parallel.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      serial.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    }
    double p = Median(parallel), s = Median(serial);
    char share_text[32] = "-";
    if (chains > 0) std::snprintf(share_text, sizeof share_text, "%.1f%%", (p - s) / s * 100);
    std::printf("| %.2f | %.2f | %.2f | %s |\n", s, p, p - s, share_text);
  }
  return 0;
}
