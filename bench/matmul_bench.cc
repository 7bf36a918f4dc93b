// Matmul code-generation benchmark: for square matmuls, in one run, the
// unscheduled program, the MLC lecture's schedule, our best hand-written
// schedule and OpenBLAS cblas_sgemm, as GFLOP/s and as ratios to OpenBLAS;
// plus compile time per candidate.
//
// tunedb's candidates are measured by the real Runner (worker processes,
// verified against the reference). OpenBLAS runs in a child process of this
// benchmark once per kernel choice (its default, and SkylakeX or Haswell:
// blas_reference.h), with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE removed from
// that child's environment only; the faster is reported, with the kernel
// that ran.
//
// Usage: matmul_bench [--sizes 128,512,1024] [--repeat 5] [--rounds 3] [--schedules DIR]
//        matmul_bench --blas-only SHAPE   (child mode, see blas_reference.h: prints "GFLOPS <x> CORETYPE <name>")
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench/blas_reference.h"
#include "ir/flops.h"
#include "ir/schedule/schedule.h"
#include "ir/schedule/script.h"
#include "ir/text_file.h"
#include "ir/workloads.h"
#include "measure/runner.h"

extern "C" void openblas_set_num_threads(int);

namespace {

std::string ReadFile(const std::string& path) {
  std::string text, why;
  if (!tunedb::ir::ReadWholeFile(path, &text, &why)) {
    std::fprintf(stderr, "cannot read %s: %s\n", path.c_str(), why.c_str());
    std::exit(2);
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {128, 512, 1024};
  int repeat = 5;
  int rounds = 3;
  std::string schedules = TUNEDB_BENCH_DIR "/schedules";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--blas-only" && i + 1 < argc) {
      std::string shape = argv[++i];
      for (int j = i + 1; j + 1 < argc; ++j) {
        if (std::string(argv[j]) == "--repeat") repeat = std::atoi(argv[j + 1]);
      }
      return tunedb::bench::BlasOnlyMain(shape, repeat);
    } else if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      std::stringstream s(argv[++i]);
      std::string item;
      while (std::getline(s, item, ',')) sizes.push_back(std::stoi(item));
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--schedules" && i + 1 < argc) {
      schedules = argv[++i];
    } else {
      // An option it does not know (or --help) would otherwise run the
      // whole benchmark with the defaults.
      std::fprintf(stderr,
                   "usage: matmul_bench [--sizes 128,512,1024] [--repeat 5] [--rounds 3] [--schedules DIR]\n"
                   "       matmul_bench --blas-only N|MxNxK[t] [--repeat R]\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  std::string self = argv[0];
  std::string lecture = ReadFile(schedules + "/matmul_lecture.py");
  std::string tuned = ReadFile(schedules + "/matmul_tuned.py");

  tunedb::measure::MeasureConfig config;
  config.worker_path = TUNEDB_WORKER;
  config.repeat = repeat;
  config.min_repeat_ms = 50;
  config.workers = 1;
  config.run_timeout_s = 120;
  // The unscheduled loop is slow and only there for scale: fewer repeats.
  tunedb::measure::MeasureConfig slow = config;
  slow.repeat = 3;
  slow.min_repeat_ms = 0;
  std::printf("target: %s; %d rounds, medians over rounds\n\n", config.target.ToString().c_str(), rounds);
  std::printf("| matmul | unscheduled | lecture schedule | best hand-written | OpenBLAS (kernel) | hand-written / OpenBLAS (median of rounds) | compile ms (unsched / lecture / hand) |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  for (int n : sizes) {
    std::string spec = "matmul:M=" + std::to_string(n) + ",N=" + std::to_string(n) + ",K=" + std::to_string(n);
    tunedb::ir::Workload w = tunedb::ir::BuildWorkload(spec);
    double flops = static_cast<double>(tunedb::ir::CountFlops(w.func));
    std::vector<tunedb::ir::PrimFunc> candidates;
    for (const std::string* script : {&lecture, &tuned}) {
      tunedb::ir::Schedule sch(w.func, 0);
      tunedb::ir::RunScheduleScript(sch, *script);
      candidates.push_back(sch.func());
    }
    auto gflops_of = [&](const tunedb::measure::MeasureResult& r) {
      if (r.status == tunedb::measure::MeasureStatus::kOk) return flops / r.MedianSecs() / 1e9;
      std::fprintf(stderr, "%s: %s: %s\n", spec.c_str(), std::string(tunedb::measure::StatusName(r.status)).c_str(),
                   r.error.c_str());
      return 0.0;
    };
    tunedb::measure::MeasureResult unscheduled = tunedb::measure::Runner(w.func, slow).Measure({w.func})[0];
    tunedb::measure::Runner runner(w.func, config);
    // Rounds alternate tunedb and OpenBLAS, so that both see the same
    // machine (this one shares its host) and the ratio is taken per round.
    std::vector<double> lecture_g, tuned_g, blas_g, other_g, ratio;
    std::string blas_kernel, other_kernel;
    std::vector<tunedb::measure::MeasureResult> results;
    for (int round = 0; round < rounds; ++round) {
      results = runner.Measure(candidates);
      lecture_g.push_back(gflops_of(results[0]));
      tuned_g.push_back(gflops_of(results[1]));
      tunedb::bench::BlasResult other;
      tunedb::bench::BlasResult best = tunedb::bench::BestBlas(self, tunedb::bench::GemmShape::Square(n), repeat, &other);
      blas_g.push_back(best.gflops);
      other_g.push_back(other.gflops);
      blas_kernel = best.kernel;
      other_kernel = other.kernel;
      ratio.push_back(tuned_g.back() / best.gflops);
    }
    std::printf("| %d | %.2f | %.1f | %.1f | %.1f (%s; %s: %.1f) | %.2f (rounds: ", n, gflops_of(unscheduled),
                median(lecture_g), median(tuned_g), median(blas_g), blas_kernel.c_str(), other_kernel.c_str(),
                median(other_g), median(ratio));
    for (std::size_t i = 0; i < ratio.size(); ++i) std::printf("%s%.2f", i ? ", " : "", ratio[i]);
    std::printf(") | %.0f / %.0f / %.0f |\n", unscheduled.compile_secs * 1e3, results[0].compile_secs * 1e3,
                results[1].compile_secs * 1e3);
    std::fflush(stdout);
  }
  return 0;
}
