// What a matmul register block reaches on one core when its operands are
// cached: MR rows x NV vectors of 16 floats of accumulators, per step of k
// NV vector loads of the packed B row and MR broadcasts of A, K steps, the
// block added into C at the end. The same kernel as tunedb's best matmul
// schedules (MR=4, NV=4), written by hand, so the gap between the two is
// code generation's and the rest is the machine's.
//
//   for b in "4 4" "8 2" "6 4" "14 2"; do set -- $b
//     gcc -O3 -march=sapphirerapids -DMR=$1 -DNV=$2 bench/cpu/microkernel.c -o /tmp/mk && /tmp/mk; done
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

#ifndef MR
#define MR 4
#endif
#ifndef NV
#define NV 4
#endif
#ifndef K
#define K 256
#endif
#define NC (NV * 16)

static float a_block[MR * K] __attribute__((aligned(64)));
static float b_panel[K * NC] __attribute__((aligned(64)));
static float c_block[MR * NC] __attribute__((aligned(64)));

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void Block(const float* a, const float* b, float* c) {
  __m512 acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) {
    __m512 row[NV];
    for (int j = 0; j < NV; ++j) row[j] = _mm512_load_ps(b + k * NC + 16 * j);
    for (int i = 0; i < MR; ++i) {
      __m512 x = _mm512_set1_ps(a[i * K + k]);
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(x, row[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) {
      float* out = c + i * NC + 16 * j;
      _mm512_store_ps(out, _mm512_add_ps(acc[i][j], _mm512_load_ps(out)));
    }
}

int main(void) {
  for (int i = 0; i < K * NC; ++i) b_panel[i] = 1e-6f * i;
  for (int i = 0; i < MR * K; ++i) a_block[i] = 1e-3f;
  long calls = 400000000L / (MR * NC * K / 64);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    double start = Now();
    for (long r = 0; r < calls; ++r) Block(a_block, b_panel, c_block);
    double gflops = 2.0 * MR * NC * K * calls / (Now() - start) / 1e9;
    if (gflops > best) best = gflops;
  }
  printf("MR=%d NV=%d K=%d: %.1f GFLOP/s on one core (c[5] = %g)\n", MR, NV, K, best, c_block[5]);
  return 0;
}
