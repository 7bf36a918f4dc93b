// The machine's float FMA peak: 12 independent chains of FMAs per thread
// (enough to cover the FMA latency on two ports), no memory traffic, on 1
// and then 2 threads. A ceiling for any float kernel here. The vectors are
// the widest the compiling machine has: AVX-512 where there is one, else
// AVX2's 256 bits.
//
//   gcc -O2 -march=native bench/cpu/fma_peak.c -o /tmp/fma_peak -lpthread && /tmp/fma_peak
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "vec.h"

enum { kChains = 12 };

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void* Spin(void* arg) {
  long steps = *(long*)arg;
  vec acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = vec_set1(i * 0.001f);
  const vec scale = vec_set1(0.9999f), shift = vec_set1(0.0001f);
  for (long s = 0; s < steps; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = vec_fmadd(acc[i], scale, shift);
  }
  float sum = 0;  // keeps the chains alive
  for (int i = 0; i < kChains; ++i) sum += vec_sum(acc[i]);
  *(float*)arg = sum;
  return NULL;
}

int main(void) {
  for (int threads = 1; threads <= 2; ++threads) {
    long steps[2] = {200000000L, 200000000L};
    pthread_t t[2];
    double start = Now();
    for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, Spin, &steps[i]);
    for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
    double secs = Now() - start;
    printf("%d-bit vectors, %d thread(s): %.1f GFLOP/s\n", kLanes * 32, threads, 2.0 * kLanes * kChains * 200000000.0 * threads / secs / 1e9);
  }
  return 0;
}
