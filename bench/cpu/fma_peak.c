// The machine's float FMA peak: 12 independent chains of AVX-512 FMAs per
// thread (enough to cover the FMA latency on two ports), no memory
// traffic, on 1 and then 2 threads. A ceiling for any float kernel here.
//
//   gcc -O2 -mavx512f -mfma bench/cpu/fma_peak.c -o /tmp/fma_peak -lpthread && /tmp/fma_peak
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

enum { kChains = 12 };

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void* Spin(void* arg) {
  long steps = *(long*)arg;
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(i * 0.001f);
  const __m512 scale = _mm512_set1_ps(0.9999f), shift = _mm512_set1_ps(0.0001f);
  for (long s = 0; s < steps; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], scale, shift);
  }
  float sum = 0;  // keeps the chains alive
  for (int i = 0; i < kChains; ++i) sum += _mm512_reduce_add_ps(acc[i]);
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
    printf("%d thread(s): %.1f GFLOP/s\n", threads, 2.0 * 16 * kChains * 200000000.0 * threads / secs / 1e9);
  }
  return 0;
}
