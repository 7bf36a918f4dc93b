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

// C[m, n] = A[m, k] B, all row-major, where B is k x n, or n x k used
// transposed (b_transposed: dense's X W^T). Written on the command line of
// the child as "N" (square) or "MxNxK", with a "t" after K when B is
// transposed.
struct GemmShape {
  int m = 0, n = 0, k = 0;
  bool b_transposed = false;

  static GemmShape Square(int n) { return {n, n, n, false}; }
  bool empty() const { return m <= 0 || n <= 0 || k <= 0; }
  double Flops() const { return 2.0 * m * n * k; }
  std::string Text() const {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + (b_transposed ? "t" : "");
  }
  // Accepts what Text() writes, and a single size for a square GEMM;
  // anything else gives an empty shape.
  static GemmShape Parse(const std::string& text) {
    GemmShape g;
    char t = 0;
    int fields = std::sscanf(text.c_str(), "%dx%dx%d%c", &g.m, &g.n, &g.k, &t);
    if (fields == 1 && std::to_string(g.m) == text) return Square(g.m);
    g.b_transposed = fields == 4;
    return fields >= 3 && g.Text() == text ? g : GemmShape{};
  }
};

// GFLOP/s of one sgemm in this process: the median of `repeat` repeats of
// at least 50 ms each.
inline double BlasGflops(GemmShape g, int repeat) {
  std::vector<float> a(static_cast<std::size_t>(g.m) * g.k), b(static_cast<std::size_t>(g.k) * g.n),
      c(static_cast<std::size_t>(g.m) * g.n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 104729) % 1000) / 1000.0f - 0.5f;
  auto run = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, g.b_transposed ? CblasTrans : CblasNoTrans, g.m, g.n, g.k, 1.0f,
                a.data(), g.k, b.data(), g.b_transposed ? g.k : g.n, 0.0f, c.data(), g.n);
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
  return g.Flops() / secs[secs.size() / 2] / 1e9;
}

// The child-process side: call from main() when argv has "--blas-only SHAPE".
inline int BlasOnlyMain(const std::string& shape, int repeat) {
  GemmShape g = GemmShape::Parse(shape);
  if (g.empty()) {
    std::fprintf(stderr, "--blas-only: expected N or MxNxK[t], got '%s'\n", shape.c_str());
    return 2;
  }
  std::printf("GFLOPS %.3f CORETYPE %s\n", BlasGflops(g, repeat), openblas_get_corename());
  return 0;
}

struct BlasResult {
  double gflops = 0;
  std::string kernel = "?";
};

// OpenBLAS in a child process with a chosen kernel (nullptr: its default).
inline BlasResult ChildBlas(const std::string& self, GemmShape g, int repeat, const char* coretype) {
  std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ";
  if (coretype) cmd += std::string("OPENBLAS_CORETYPE=") + coretype + " ";
  cmd += self + " --blas-only " + g.Text() + " --repeat " + std::to_string(repeat);
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
inline BlasResult BestBlas(const std::string& self, GemmShape g, int repeat, BlasResult* other = nullptr) {
  BlasResult a = ChildBlas(self, g, repeat, nullptr), b = ChildBlas(self, g, repeat, OtherBlasCoretype());
  if (other) *other = a.gflops >= b.gflops ? b : a;
  return a.gflops >= b.gflops ? a : b;
}

}  // namespace tunedb::bench
