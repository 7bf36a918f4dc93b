// How fast the cores read a buffer they read again and again: each thread
// sums its own part of it (vector loads, 8 independent sums), on 1 and then
// 2 threads, for buffers from 1 to 64 MiB (the L2s, the L3, memory). A
// ceiling for a kernel that streams a weight: dense at a small batch reads
// its whole weight once per call, and a timing loop calls it again at once.
//
//   gcc -O2 -march=native bench/cpu/read_bandwidth.c -o /tmp/read_bandwidth -lpthread && /tmp/read_bandwidth
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vec.h"

enum { kSums = 8, kMaxThreads = 2 };

struct Part {
  const float* data;
  size_t floats;
  int passes;
  float sum;  // printed, so the compiler cannot drop the loads
};

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void* Read(void* arg) {
  struct Part* part = arg;
  vec sums[kSums];
  for (int i = 0; i < kSums; ++i) sums[i] = vec_set1(0.0f);
  for (int pass = 0; pass < part->passes; ++pass) {
    for (size_t at = 0; at + kSums * kLanes <= part->floats; at += kSums * kLanes) {
#pragma GCC unroll 8
      for (int i = 0; i < kSums; ++i) sums[i] = vec_add(sums[i], vec_load(part->data + at + i * kLanes));
    }
  }
  vec total = sums[0];
  for (int i = 1; i < kSums; ++i) total = vec_add(total, sums[i]);
  part->sum = vec_sum(total);
  return NULL;
}

// GB/s of `threads` threads reading `bytes` in equal parts, `passes` times.
static double Measure(const float* data, size_t bytes, int threads, int passes, float* sum) {
  pthread_t ids[kMaxThreads];
  struct Part parts[kMaxThreads];
  size_t floats = bytes / sizeof(float) / (size_t)threads;
  for (int t = 0; t < threads; ++t) parts[t] = (struct Part){data + (size_t)t * floats, floats, passes, 0.0f};
  double start = Now();
  for (int t = 1; t < threads; ++t) pthread_create(&ids[t], NULL, Read, &parts[t]);
  Read(&parts[0]);
  for (int t = 1; t < threads; ++t) pthread_join(ids[t], NULL);
  double secs = Now() - start;
  for (int t = 0; t < threads; ++t) *sum += parts[t].sum;
  return (double)bytes * passes / secs / 1e9;
}

int main(void) {
  const size_t max_bytes = (size_t)64 << 20;
  float* data = aligned_alloc(64, max_bytes);
  if (!data) return 1;
  for (size_t i = 0; i < max_bytes / sizeof(float); ++i) data[i] = 1.0f;
  float sum = 0.0f;
  for (size_t bytes = (size_t)1 << 20; bytes <= max_bytes; bytes *= 4) {
    // About 4 GB read per figure, after one pass that brings the buffer in.
    int passes = (int)(((size_t)4 << 30) / bytes);
    for (int threads = 1; threads <= kMaxThreads; ++threads) {
      Measure(data, bytes, threads, 1, &sum);
      double gbs = Measure(data, bytes, threads, passes, &sum);
      printf("%3zu MiB, %d thread(s): %6.1f GB/s\n", bytes >> 20, threads, gbs);
    }
  }
  printf("(checksum %g)\n", sum);
  free(data);
  return 0;
}
