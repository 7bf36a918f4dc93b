// Tuning benchmark (issue 7): tuning curves of `tunedb tune` and the best
// kernels against OpenBLAS, in one run.
//
// For each workload, four sessions of --trials trials each, through the
// same library call as `tunedb tune` (real SQLite files, real JIT, real
// worker processes):
//   cold      an empty database, evolutionary search, seed 0;
//   warm      a copy of the cold session's database, evolutionary, seed 1
//             (a later session with another seed); with --warm-seeds N,
//             N such sessions (seeds 1..N), each from its own copy, so
//             that the warm-start target is a rate rather than one draw;
//   random    an empty database, random search, seed 0;
//   transfer  a database holding only a session of the same computation at
//             another shape (tuned cold first, seed 2, --trials trials), so
//             that the session starts from that shape's best traces and
//             cost model; evolutionary, seed 0.
// A curve is the best GFLOP/s among the session's own measurements after
// each trial (from the records in commit order, each at its median as
// committed, before the session's final check adds timings to the best
// few), against trials and against wall time (each record gets the time
// its chunk was committed). A session's best kernel is the one the
// database serves after it, which the final check may have changed.
// The warm session is compared with the cold session's best as that session
// measured it, with the same kernel timed again just before and after
// the warm session (the machine's drift between sessions apart), and
// kernel against kernel: the warm session's best after a quarter of its
// trials and the cold best, timed in one call with their repeats
// alternating (the drift and the luck of a best figure both apart). A
// last count compares it with the best the cold session reported at its
// end, the served kernel's median once the final check's timings joined
// it: that figure has had its luck timed out, the warm figures have not.
// The cold session's best (served) kernel is then measured again (5 repeats of
// >= 50 ms) next to OpenBLAS cblas_sgemm (the faster of its kernel
// choices, see blas_reference.h), in five alternating rounds; the ratio is
// the median of the per-round ratios. For a matmul the sgemm is the whole
// workload. For dense_bias_relu and conv2d it is the workload's GEMM alone
// (X W^T without the bias and relu; the convolution as the product of its
// im2col matrix and the HWIO weight, without padding or building that
// matrix), which favours OpenBLAS; both sides are counted at the GEMM's
// 2 m n k FLOPs, so the ratio is a ratio of times.
//
// Writes DIR/tune_curves.csv and DIR/tune_curves.svg and prints the
// machine (CPU model, cores, LLVM target) and markdown tables for
// bench/RESULTS.md.
//
// Usage: tune_bench [--trials 64] [--only matmul128,matmul512,...] [--out DIR] [--warm-seeds N]
//        (--only also takes the extra shapes: matmul127, matmul1000, matmul1021)
//        tune_bench --blas-only SHAPE --repeat R   (child mode, see blas_reference.h)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/blas_reference.h"
#include "db/sqlite_database.h"
#include "ir/flops.h"
#include "ir/structural.h"
#include "ir/workloads.h"
#include "measure/runner.h"
#include "measure/target.h"
#include "search/tuner.h"

namespace {

// Rounds of (our best, OpenBLAS) measured alternately; the ratio is the
// median over rounds (three rounds moved it by up to 1.7x in session 4).
constexpr int kBlasRounds = 5;
// Repeats (>= 30 ms each, alternating) of the warm and cold kernels timed
// together.
constexpr int kTogetherRepeats = 9;

using tunedb::search::TuneEvent;
using tunedb::search::TaskStatus;

using tunedb::bench::GemmShape;

struct BenchWorkload {
  std::string id, spec;
  GemmShape blas;        // the OpenBLAS reference: the workload's GEMM
  std::string neighbour;  // the same computation at another shape, for transfer
};

const std::vector<BenchWorkload> kWorkloads = {
    {"matmul128", "matmul:M=128,N=128,K=128", GemmShape::Square(128), "matmul:M=256,N=256,K=256"},
    {"matmul512", "matmul:M=512,N=512,K=512", GemmShape::Square(512), "matmul:M=384,N=384,K=384"},
    {"matmul1024", "matmul:M=1024,N=1024,K=1024", GemmShape::Square(1024), "matmul:M=768,N=768,K=768"},
    // X[128, 784] W[128, 784]^T
    {"dense_bias_relu", "dense_bias_relu:B=128,IN=784,OUT=128", {128, 128, 784, true},
     "dense_bias_relu:B=64,IN=1024,OUT=256"},
    // im2col[56 * 56, 3 * 3 * 64] W[3 * 3 * 64, 64]; transfer from ResNet's next stage
    {"conv2d_resnet", "conv2d_nhwc:N=1,H=56,W=56,CI=64,CO=64,KH=3,KW=3,stride=1,pad=1", {3136, 64, 576, false},
     "conv2d_nhwc:N=1,H=28,W=28,CI=128,CO=128,KH=3,KW=3,stride=1,pad=1"},
};

// Shapes beyond the issue's, run only when named in --only: square
// matmuls whose extents give perfect tiles no register block, by lacking a
// multiple of the vector lanes (1000 = 8 x 125) or any divisor (primes).
const std::vector<BenchWorkload> kExtraWorkloads = {
    {"matmul127", "matmul:M=127,N=127,K=127", GemmShape::Square(127), "matmul:M=128,N=128,K=128"},
    {"matmul1000", "matmul:M=1000,N=1000,K=1000", GemmShape::Square(1000), "matmul:M=1024,N=1024,K=1024"},
    {"matmul1021", "matmul:M=1021,N=1021,K=1021", GemmShape::Square(1021), "matmul:M=1024,N=1024,K=1024"},
};

struct Point {
  int trial;
  double secs;
  double gflops;
  std::string best_trace;  // the program behind gflops
};

struct Session {
  std::vector<Point> curve;
  double wall_secs = 0;
  std::string times;  // where the wall time went (search::TimesText)
  double best_gflops = 0;     // the largest figure as committed during the session
  // The program the database serves after the session: its final check
  // (search::TuneOptions::final_check) timed the best kernels together and
  // their records took those timings, so it can differ from the program
  // behind best_gflops.
  std::string best_trace;
  bool served_is_figure_best = true;
  // The best the session reports at its end (`tunedb tune`'s "best:"):
  // best_trace's median after the final check's timings joined it.
  double reported_gflops = 0;
};

void RemoveDb(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

Session RunSession(const std::string& db_path, const BenchWorkload& w, const std::string& strategy,
                   std::uint64_t seed, int trials) {
  tunedb::db::SqliteDatabase database(db_path);
  tunedb::search::TuneOptions o;
  o.workloads = {w.spec};
  o.trials = trials;
  o.strategy = strategy;
  o.seed = seed;
  o.measure.repeat = 3;
  o.measure.min_repeat_ms = 20;
  o.measure_baseline = false;
  o.measure.worker_path = TUNEDB_WORKER;
  std::vector<std::pair<int, double>> commits;  // trials done -> seconds
  // Each record's median as committed: the curve is what the session saw
  // when it saw it, before the final check adds timings to the best few.
  std::map<std::int64_t, double> committed_median;
  tunedb::db::RecordQuery fresh;
  fresh.limit = 1000000;
  tunedb::search::TuneReport report =
      tunedb::search::Tune(database, o, [&](const TuneEvent& e, const std::vector<TaskStatus>&) {
        if (e.kind != TuneEvent::kMeasured) return;
        commits.push_back({e.trials_done, e.elapsed_secs});
        for (const tunedb::db::TuningRecord& r : database.Records(fresh)) {
          committed_median[r.id] = r.Median();
          fresh.after_id = r.id;
        }
      });
  Session s;
  s.wall_secs = report.wall_secs;
  s.times = tunedb::search::TimesText(report.times, report.wall_secs);
  double flops = static_cast<double>(report.tasks[0].flops);
  tunedb::db::RecordQuery q;
  q.workload_hash = report.tasks[0].hash;
  q.limit = 1000000;
  double best = 0;
  int trial = 0;
  std::string figure_best;
  for (const tunedb::db::TuningRecord& r : database.Records(q)) {
    if (r.session_id != report.session_id) continue;
    ++trial;
    auto committed = committed_median.find(r.id);
    double median = committed != committed_median.end() ? committed->second : r.Median();
    double g = r.status == tunedb::db::RecordStatus::kOk ? flops / median / 1e9 : 0;
    if (g > best) {
      best = g;
      figure_best = r.trace;
    }
    double at = 0;
    for (const auto& [done, secs] : commits) {
      if (done >= trial) {
        at = secs;
        break;
      }
    }
    s.curve.push_back({trial, at, best, figure_best});
  }
  s.best_gflops = best;
  s.best_trace = report.tasks[0].best_trace;
  s.served_is_figure_best = s.best_trace == figure_best;
  const double reported_secs = report.tasks[0].best_secs;
  s.reported_gflops = std::isfinite(reported_secs) && reported_secs > 0 ? flops / reported_secs / 1e9 : 0;
  return s;
}

// One warm session (a copy of the cold database, this seed), the cold
// best kernel timed just before and after it, and the warm session's best
// kernel after a quarter of its trials timed in alternation with the cold
// best (GFLOP/s of each, same call).
struct WarmStart {
  int seed;
  double cold_beside;
  Session session;
  double warm_quarter_together = 0, cold_together = 0;
  double cold_copies_ratio = 0;  // the cold kernel's second copy / its first: the comparison's own noise
};

// GFLOP/s of kernels timed in one call (0 for a failure): `repeat`
// repeats of >= min_repeat_ms each, which alternate between the kernels,
// so that the machine's drift touches each alike.
std::vector<double> TimeTraces(const BenchWorkload& w, const std::vector<std::string>& traces, int repeat,
                               double min_repeat_ms) {
  tunedb::ir::Workload wl = tunedb::ir::BuildWorkload(w.spec);
  tunedb::measure::MeasureConfig config;
  config.worker_path = TUNEDB_WORKER;
  config.repeat = repeat;
  config.min_repeat_ms = min_repeat_ms;
  std::vector<tunedb::ir::PrimFunc> kernels;
  for (const std::string& t : traces) {
    kernels.push_back(tunedb::ir::ReplayTrace(wl.func, tunedb::ir::Trace::FromJsonText(t), 0).func());
  }
  double flops = static_cast<double>(tunedb::ir::CountFlops(wl.func));
  std::vector<double> gflops;
  for (const tunedb::measure::MeasureResult& r : tunedb::measure::Runner(wl.func, config).Measure(kernels)) {
    gflops.push_back(r.status == tunedb::measure::MeasureStatus::kOk ? flops / r.MedianSecs() / 1e9 : 0);
  }
  return gflops;
}

// One trace's kernel timed as the tuner times a candidate (3 repeats of
// >= 20 ms), alone.
double TimeTrace(const BenchWorkload& w, const std::string& trace) { return TimeTraces(w, {trace}, 3, 20)[0]; }

// Trials the session needed to reach `fraction` of `target` GFLOP/s; -1: never.
int TrialsToReach(const Session& s, double target, double fraction) {
  for (const Point& p : s.curve) {
    if (p.gflops >= fraction * target) return p.trial;
  }
  return -1;
}

std::string TrialsText(int trials) { return trials < 0 ? "not reached" : std::to_string(trials); }

double GflopsAt(const Session& s, int trial) {
  double g = 0;
  for (const Point& p : s.curve) {
    if (p.trial <= trial) g = p.gflops;
  }
  return g;
}

// The session's fastest program after `trial` trials ("" before any).
std::string BestTraceAt(const Session& s, int trial) {
  std::string t;
  for (const Point& p : s.curve) {
    if (p.trial <= trial) t = p.best_trace;
  }
  return t;
}

// One SVG: a row of panels against trials, a row against wall time.
void WriteSvg(const std::string& path, const std::vector<BenchWorkload>& workloads,
              const std::map<std::string, std::map<std::string, Session>>& sessions) {
  const int pw = 300, ph = 220, margin = 50;
  int width = static_cast<int>(workloads.size()) * (pw + margin) + margin;
  int height = 2 * (ph + margin) + margin + 30;
  std::ofstream svg(path);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  const std::map<std::string, std::string> colors = {
      {"cold", "#1f77b4"}, {"warm", "#2ca02c"}, {"random", "#d62728"}, {"transfer", "#ff7f0e"}};
  for (std::size_t c = 0; c < workloads.size(); ++c) {
    const auto& modes = sessions.at(workloads[c].id);
    double ymax = 1, tmax = 1, xmax = 1;
    for (const auto& [mode, s] : modes) {
      for (const Point& p : s.curve) {
        ymax = std::max(ymax, p.gflops);
        tmax = std::max(tmax, p.secs);
        xmax = std::max(xmax, static_cast<double>(p.trial));
      }
    }
    ymax *= 1.1;
    for (int row = 0; row < 2; ++row) {
      double x0 = margin + static_cast<double>(c) * (pw + margin), y0 = margin + row * (ph + margin);
      double span = row == 0 ? xmax : tmax;
      svg << "<rect x=\"" << x0 << "\" y=\"" << y0 << "\" width=\"" << pw << "\" height=\"" << ph
          << "\" fill=\"none\" stroke=\"#999\"/>\n";
      svg << "<text x=\"" << x0 << "\" y=\"" << y0 - 8 << "\">" << workloads[c].id
          << (row == 0 ? ": GFLOP/s vs trials" : ": GFLOP/s vs seconds") << "</text>\n";
      svg << "<text x=\"" << x0 - 4 << "\" y=\"" << y0 + 10 << "\" text-anchor=\"end\">" << static_cast<int>(ymax)
          << "</text>\n<text x=\"" << x0 + pw << "\" y=\"" << y0 + ph + 14 << "\" text-anchor=\"end\">"
          << static_cast<int>(span) << (row == 0 ? " trials" : " s") << "</text>\n";
      for (const auto& [mode, s] : modes) {
        svg << "<polyline fill=\"none\" stroke-width=\"1.8\" stroke=\"" << colors.at(mode) << "\" points=\"";
        for (const Point& p : s.curve) {
          double x = x0 + pw * (row == 0 ? p.trial : p.secs) / span;
          double y = y0 + ph - ph * p.gflops / ymax;
          svg << x << "," << y << " ";
        }
        svg << "\"/>\n";
      }
    }
  }
  int lx = margin;
  for (const auto& [mode, color] : colors) {
    svg << "<rect x=\"" << lx << "\" y=\"" << height - 22 << "\" width=\"14\" height=\"4\" fill=\"" << color
        << "\"/><text x=\"" << lx + 18 << "\" y=\"" << height - 16 << "\">" << mode << "</text>\n";
    lx += 90;
  }
  svg << "</svg>\n";
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 64;
  int warm_seeds = 1;
  std::set<std::string> only;
  std::string out = ".";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--blas-only" && i + 1 < argc) {
      std::string shape = argv[++i];
      int repeat = 5;
      if (i + 2 < argc && std::string(argv[i + 1]) == "--repeat") repeat = std::atoi(argv[i + 2]);
      return tunedb::bench::BlasOnlyMain(shape, repeat);
    } else if (a == "--trials" && i + 1 < argc) {
      trials = std::atoi(argv[++i]);
    } else if (a == "--only" && i + 1 < argc) {
      std::stringstream s(argv[++i]);
      std::string item;
      while (std::getline(s, item, ',')) only.insert(item);
    } else if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--warm-seeds" && i + 1 < argc && std::atoi(argv[i + 1]) >= 1) {
      warm_seeds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: tune_bench [--trials N] [--only ID,...] [--out DIR] [--warm-seeds N]\n");
      return 2;
    }
  }
  std::filesystem::create_directories(out);
  std::vector<BenchWorkload> workloads;
  for (const BenchWorkload& w : kWorkloads) {
    if (only.empty() || only.count(w.id)) workloads.push_back(w);
  }
  for (const BenchWorkload& w : kExtraWorkloads) {
    if (only.count(w.id)) workloads.push_back(w);
  }
  std::string self = argv[0];
  std::map<std::string, std::map<std::string, Session>> sessions;
  std::string transfer_rows;  // printed after the main table
  std::string warm_rows;      // one per warm session, after that
  struct {
    int sessions = 0, reached = 0, reached_beside = 0, reached_reported = 0, kernel_as_fast = 0, kernel_within_1pct = 0;
    double copies_lo = 1e9, copies_hi = 0;  // range of the cold kernel's copies / each other
  } warm_counts;
  const int quarter = std::max(1, trials / 4);
  // The machine a run was on is part of its figures: the VMs these runs go
  // to change CPU between sessions (bench/RESULTS.md, session 37).
  std::printf("machine: %s; target %s\n\n", tunedb::db::HardwareFingerprint().c_str(),
              tunedb::measure::Target::Host().ToString().c_str());
  std::ofstream csv(out + "/tune_curves.csv");
  csv << "workload,mode,trial,elapsed_s,best_gflops\n";
  std::printf("| workload | cold best GFLOP/s @%d | cold wall s | random best @%d | evolutionary / random | warm trials to cold best (100%% / 95%%) | cold best timed beside the warm session | warm trials to that | best re-measured | OpenBLAS GFLOP/s (kernel) | best / OpenBLAS | served best after the final check |\n",
              trials, trials);
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::fflush(stdout);
  for (const BenchWorkload& w : workloads) {
    std::string cold_db = out + "/tune_" + w.id + "_cold.sqlite", warm_db = out + "/tune_" + w.id + "_warm.sqlite",
                random_db = out + "/tune_" + w.id + "_random.sqlite",
                transfer_db = out + "/tune_" + w.id + "_transfer.sqlite";
    for (const std::string& db : {cold_db, warm_db, random_db, transfer_db}) RemoveDb(db);
    auto& s = sessions[w.id];
    s["cold"] = RunSession(cold_db, w, "evolutionary", 0, trials);
    // The machine's speed drifts between sessions (the same 64 kernels of a
    // cold session measured 1.35x apart, median, in two runs of this
    // benchmark), so the cold best kernel is also timed just before and just
    // after each warm session: a warm session is compared with both. Seed
    // 1's is the warm session of the curves and the main table.
    std::vector<WarmStart> warms;
    for (int seed = 1; seed <= warm_seeds; ++seed) {
      RemoveDb(warm_db);
      std::filesystem::copy_file(cold_db, warm_db);
      double cold_before = TimeTrace(w, s["cold"].best_trace);
      Session warm = RunSession(warm_db, w, "evolutionary", static_cast<std::uint64_t>(seed), trials);
      double beside = (cold_before + TimeTrace(w, s["cold"].best_trace)) / 2;
      WarmStart ws{seed, beside, std::move(warm)};
      // Figures measured minutes apart differ by the machine's drift, and
      // a session's best figure is the luckiest of its timings; the two
      // kernels timed in one call, repeats alternating, differ by what the
      // programs are. Each kernel goes in twice, in the order warm, cold,
      // cold, warm, so that neither gains from its place in a pass; how far
      // apart the cold kernel's two copies come out is how far apart two
      // equal kernels do.
      std::string warm_quarter = BestTraceAt(ws.session, quarter);
      if (!warm_quarter.empty()) {
        const std::string& cold_best = s["cold"].best_trace;
        std::vector<double> t = TimeTraces(w, {warm_quarter, cold_best, cold_best, warm_quarter}, kTogetherRepeats, 30);
        ws.warm_quarter_together = std::sqrt(t[0] * t[3]);
        ws.cold_together = std::sqrt(t[1] * t[2]);
        ws.cold_copies_ratio = t[1] > 0 ? t[2] / t[1] : 0;
      }
      warms.push_back(std::move(ws));
    }
    s["warm"] = warms[0].session;
    const double cold_beside = warms[0].cold_beside;
    s["random"] = RunSession(random_db, w, "random", 0, trials);
    RunSession(transfer_db, {w.id + "_neighbour", w.neighbour, {}, ""}, "evolutionary", 2, trials);
    s["transfer"] = RunSession(transfer_db, w, "evolutionary", 0, trials);
    for (const auto& [mode, session] : s) {
      for (const Point& p : session.curve) {
        csv << w.id << "," << mode << "," << p.trial << "," << p.secs << "," << p.gflops << "\n";
      }
    }
    csv.flush();
    const Session& cold = s["cold"];
    int warm100 = TrialsToReach(s["warm"], cold.best_gflops, 1.0), warm95 = TrialsToReach(s["warm"], cold.best_gflops, 0.95);
    int warm_beside = TrialsToReach(s["warm"], cold_beside, 1.0);
    for (const WarmStart& ws : warms) {
      const Session& warm = ws.session;
      int to_measured = TrialsToReach(warm, cold.best_gflops, 1.0), to_beside = TrialsToReach(warm, ws.cold_beside, 1.0);
      bool in_quarter = to_measured >= 1 && to_measured <= quarter, beside_in_quarter = to_beside >= 1 && to_beside <= quarter;
      warm_counts.sessions += 1;
      warm_counts.reached += in_quarter;
      warm_counts.reached_beside += beside_in_quarter;
      const int to_reported = TrialsToReach(warm, cold.reported_gflops, 1.0);
      warm_counts.reached_reported += to_reported >= 1 && to_reported <= quarter;
      double kernels = ws.cold_together > 0 ? ws.warm_quarter_together / ws.cold_together : 0;
      warm_counts.kernel_as_fast += kernels >= 1.0;
      warm_counts.kernel_within_1pct += kernels >= 0.99;
      if (ws.cold_copies_ratio > 0) {
        warm_counts.copies_lo = std::min(warm_counts.copies_lo, ws.cold_copies_ratio);
        warm_counts.copies_hi = std::max(warm_counts.copies_hi, ws.cold_copies_ratio);
      }
      char row[384];
      std::snprintf(row, sizeof row, "| %s | %d | %.1f | %s / %s | %.1f | %s | %.3f | %.1f / %.1f = %.3f | %.3f |\n",
                    w.id.c_str(), ws.seed, cold.best_gflops, TrialsText(to_measured).c_str(),
                    TrialsText(TrialsToReach(warm, cold.best_gflops, 0.95)).c_str(), ws.cold_beside,
                    TrialsText(to_beside).c_str(), GflopsAt(warm, quarter) / cold.best_gflops,
                    ws.warm_quarter_together, ws.cold_together, kernels, ws.cold_copies_ratio);
      warm_rows += row;
    }
    double random_best = GflopsAt(s["random"], trials);
    {
      // Transfer against cold: how soon each gets near the cold session's
      // best, the best of each after a quarter of the trials and at the
      // end, and the two final bests timed together (the sessions ran
      // minutes apart, and the machine's speed drifts).
      const Session& transfer = s["transfer"];
      std::vector<double> together = TimeTraces(w, {cold.best_trace, transfer.best_trace}, 5, 50);
      char row[512];
      std::snprintf(row, sizeof row, "| %s | %s | %s / %s | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f |\n",
                    w.id.c_str(), w.neighbour.c_str(), TrialsText(TrialsToReach(cold, cold.best_gflops, 0.95)).c_str(),
                    TrialsText(TrialsToReach(transfer, cold.best_gflops, 0.95)).c_str(), GflopsAt(cold, quarter),
                    GflopsAt(transfer, quarter), cold.best_gflops, GflopsAt(transfer, trials), together[0],
                    together[1]);
      transfer_rows += row;
    }
    std::string blas = "-", ratio = "-", remeasured = "-";
    if (!w.blas.empty()) {
      // The cold best again, next to OpenBLAS: five rounds alternating the
      // two (this machine's speed drifts), the ratio taken per round, of
      // times: both at the GEMM's FLOPs.
      tunedb::ir::Workload wl = tunedb::ir::BuildWorkload(w.spec);
      tunedb::measure::MeasureConfig config;
      config.worker_path = TUNEDB_WORKER;
      config.repeat = 5;
      config.min_repeat_ms = 50;
      config.workers = 1;
      tunedb::ir::Schedule best = tunedb::ir::ReplayTrace(wl.func, tunedb::ir::Trace::FromJsonText(cold.best_trace), 0);
      tunedb::measure::Runner runner(wl.func, config);
      double flops = static_cast<double>(tunedb::ir::CountFlops(wl.func));
      std::vector<double> ours, theirs, ratios;
      std::string kernel;
      for (int round = 0; round < kBlasRounds; ++round) {
        tunedb::measure::MeasureResult r = runner.Measure({best.func()})[0];
        ours.push_back(flops / r.MedianSecs() / 1e9);
        tunedb::bench::BlasResult b = tunedb::bench::BestBlas(self, w.blas, 5);
        theirs.push_back(b.gflops);
        kernel = b.kernel;
        ratios.push_back(w.blas.Flops() / r.MedianSecs() / 1e9 / b.gflops);
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      char buf[128];
      std::snprintf(buf, sizeof buf, "%.1f", median(ours));
      remeasured = buf;
      std::snprintf(buf, sizeof buf, "%.0f (%s)", median(theirs), kernel.c_str());
      blas = buf;
      std::snprintf(buf, sizeof buf, "%.2f (rounds", median(ratios));
      ratio = buf;
      for (double r : ratios) {
        std::snprintf(buf, sizeof buf, " %.2f", r);
        ratio += buf;
      }
      ratio += ")";
    }
    std::printf("| %s | %.1f | %.1f | %.1f | %.2f | %s / %s | %.1f | %s | %s | %s | %s | %s, reported at %.1f |\n", w.id.c_str(),
                cold.best_gflops, cold.wall_secs, random_best, random_best > 0 ? cold.best_gflops / random_best : 0.0,
                TrialsText(warm100).c_str(), TrialsText(warm95).c_str(), cold_beside, TrialsText(warm_beside).c_str(),
                remeasured.c_str(), blas.c_str(), ratio.c_str(),
                cold.served_is_figure_best ? "the best figure's program" : "another program", cold.reported_gflops);
    std::fflush(stdout);
  }
  std::printf("\n| workload | transferred from | trials to 95%% of the cold best: cold / transfer | best @%d: cold / transfer | best @%d: cold / transfer | the two bests timed together |\n| --- | --- | --- | --- | --- | --- |\n%s",
              quarter, trials, transfer_rows.c_str());
  std::printf("\n| workload | warm seed | cold best @%d | warm trials to it (100%% / 95%%) | cold best timed beside | warm trials to that | warm best @%d / cold best | warm kernel @%d / cold kernel, timed together | the cold kernel's second copy / first, same call |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n%s",
              trials, quarter, quarter, warm_rows.c_str());
  std::printf("\nwarm sessions reaching the cold best within %d trials: %d of %d (against it timed beside: %d of %d; "
              "against the best the cold session reported after its final check: %d of %d; "
              "the warm kernel as fast as the cold one, timed together: %d of %d, within 1%%: %d of %d; "
              "two copies of the cold kernel came out %.3f-%.3f of each other)\n",
              quarter, warm_counts.reached, warm_counts.sessions, warm_counts.reached_beside, warm_counts.sessions,
              warm_counts.reached_reported, warm_counts.sessions,
              warm_counts.kernel_as_fast, warm_counts.sessions, warm_counts.kernel_within_1pct, warm_counts.sessions,
              warm_counts.copies_lo, warm_counts.copies_hi);
  std::printf("\n| workload | where the cold session's wall time went |\n| --- | --- |\n");
  for (const BenchWorkload& w : workloads) {
    std::printf("| %s | %s |\n", w.id.c_str(), sessions[w.id]["cold"].times.c_str());
  }
  WriteSvg(out + "/tune_curves.svg", workloads, sessions);
  std::printf("\ncurves: %s/tune_curves.csv, %s/tune_curves.svg\n", out.c_str(), out.c_str());
  return 0;
}
