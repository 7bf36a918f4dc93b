// OpenBLAS cblas_sgemm as the GEMM reference of the benchmarks.
//
// OpenBLAS picks its kernel by CPU detection, which is often not its
// fastest here (../shared/STACK.md), so each measurement runs in a child
// process (this benchmark's own executable in --blas-only mode) once per
// kernel choice: its default and one other, with OPENBLAS_CORETYPE/
// OPENBLAS_L2_SIZE removed from that child's environment only. The other
// is SkylakeX on a CPU with AVX-512 (the Zen 5 of ../shared/STACK.md got
// Haswell kernels by default) and Haswell elsewhere (SkylakeX's kernels
// die of an illegal instruction on an AVX2-only Zen 3). The faster is the
// reference, reported with the kernel that ran.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

extern "C" char* openblas_get_corename(void);

namespace tunedb::bench {

// GFLOP/s of an n x n x n sgemm in this process: the median of `repeat`
// repeats of at least 50 ms each.
inline double BlasGflops(int n, int repeat) {
  std::vector<float> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
    b[i] = static_cast<float>((i * 104729) % 1000) / 1000.0f - 0.5f;
  }
  auto run = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  };
  run();  // warm-up
  auto t0 = std::chrono::steady_clock::now();
  run();
  double once = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int number = std::max(1, static_cast<int>(0.05 / std::max(once, 1e-9)));
  std::vector<double> secs;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < number; ++i) run();
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / number);
  }
  std::sort(secs.begin(), secs.end());
  return 2.0 * n * n * n / secs[secs.size() / 2] / 1e9;
}

// The child-process side: call from main() when argv has "--blas-only N".
inline int BlasOnlyMain(int n, int repeat) {
  std::printf("GFLOPS %.3f CORETYPE %s\n", BlasGflops(n, repeat), openblas_get_corename());
  return 0;
}

struct BlasResult {
  double gflops = 0;
  std::string kernel = "?";
};

// OpenBLAS in a child process with a chosen kernel (nullptr: its default).
inline BlasResult ChildBlas(const std::string& self, int n, int repeat, const char* coretype) {
  std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ";
  if (coretype) cmd += std::string("OPENBLAS_CORETYPE=") + coretype + " ";
  cmd += self + " --blas-only " + std::to_string(n) + " --repeat " + std::to_string(repeat);
  FILE* p = popen(cmd.c_str(), "r");
  char line[256] = {0};
  BlasResult r;
  char core[64] = "?";
  if (p && std::fgets(line, sizeof line, p)) std::sscanf(line, "GFLOPS %lf CORETYPE %63s", &r.gflops, core);
  if (p) pclose(p);
  r.kernel = core;
  return r;
}

// The kernel choice tried besides OpenBLAS's default on this CPU.
inline const char* OtherBlasCoretype() { return __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell"; }

// The faster of OpenBLAS's default kernel and OtherBlasCoretype(); `other`
// gets the slower.
inline BlasResult BestBlas(const std::string& self, int n, int repeat, BlasResult* other = nullptr) {
  BlasResult a = ChildBlas(self, n, repeat, nullptr), b = ChildBlas(self, n, repeat, OtherBlasCoretype());
  if (other) *other = a.gflops >= b.gflops ? b : a;
  return a.gflops >= b.gflops ? a : b;
}

}  // namespace tunedb::bench
