// The widest float vector the compiling machine has, for the CPU ceilings
// in this folder: AVX-512 (16 lanes) where the compiler targets it, else
// AVX2 with FMA (8 lanes). Compile with -march=native.
#pragma once
#include <immintrin.h>

#if defined(__AVX512F__)
enum { kLanes = 16 };
typedef __m512 vec;
#define vec_set1 _mm512_set1_ps
#define vec_load _mm512_load_ps
#define vec_store _mm512_store_ps
#define vec_add _mm512_add_ps
#define vec_fmadd _mm512_fmadd_ps
#define vec_sum _mm512_reduce_add_ps
#elif defined(__AVX2__) && defined(__FMA__)
enum { kLanes = 8 };
typedef __m256 vec;
#define vec_set1 _mm256_set1_ps
#define vec_load _mm256_load_ps
#define vec_store _mm256_store_ps
#define vec_add _mm256_add_ps
#define vec_fmadd _mm256_fmadd_ps
static inline float vec_sum(vec v) {
  float lanes[8];
  _mm256_storeu_ps(lanes, v);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
}
#else
#error "needs AVX-512 or AVX2 with FMA: compile with -march=native on such a machine"
#endif
