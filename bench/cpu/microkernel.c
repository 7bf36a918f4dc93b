// What a matmul register block reaches on one core when its operands are
// cached: MR rows x NV vectors of floats of accumulators, per step of k
// NV vector loads of the packed B row and MR broadcasts of A, K steps, the
// block added into C at the end. The same kernel as tunedb's best matmul
// schedules (MR=4, NV=4 on AVX-512; MR=2, NV=4 on AVX2, whose 16 registers
// a 4 x 4 block overflows), written by hand, so the gap between the two is
// code generation's and the rest is the machine's. Vectors are AVX-512's
// where the compiling machine has it, else AVX2's (bench/cpu/vec.h).
//
//   AVX-512 blocks; on AVX2 try "2 4" "4 2" "4 3" "6 2" instead:
//   for b in "4 4" "8 2" "6 4" "14 2"; do set -- $b
//     gcc -O3 -march=native -DMR=$1 -DNV=$2 bench/cpu/microkernel.c -o /tmp/mk && /tmp/mk; done
#include <stdio.h>
#include <time.h>

#include "vec.h"

#ifndef MR
#define MR 4
#endif
#ifndef NV
#define NV 4
#endif
#ifndef K
#define K 256
#endif
#define NC (NV * kLanes)

static float a_block[MR * K] __attribute__((aligned(64)));
static float b_panel[K * NC] __attribute__((aligned(64)));
static float c_block[MR * NC] __attribute__((aligned(64)));

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void Block(const float* a, const float* b, float* c) {
  vec acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) acc[i][j] = vec_set1(0);
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) {
    vec row[NV];
    for (int j = 0; j < NV; ++j) row[j] = vec_load(b + k * NC + kLanes * j);
    for (int i = 0; i < MR; ++i) {
      vec x = vec_set1(a[i * K + k]);
      for (int j = 0; j < NV; ++j) acc[i][j] = vec_fmadd(x, row[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) {
      float* out = c + i * NC + kLanes * j;
      vec_store(out, vec_add(acc[i][j], vec_load(out)));
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
  printf("%d-bit vectors, MR=%d NV=%d K=%d: %.1f GFLOP/s on one core (c[5] = %g)\n", kLanes * 32, MR, NV, K, best, c_block[5]);
  return 0;
}
