// The measuring runner with real worker processes.
#include "measure/runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "ir/schedule/schedule.h"
#include "ir/schedule/script.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"

namespace tunedb::measure {
namespace {

using namespace tunedb::ir;

MeasureConfig QuickConfig() {
  MeasureConfig c;
  c.worker_path = TUNEDB_WORKER;
  c.repeat = 3;
  c.min_repeat_ms = 1;
  c.workers = 2;
  return c;
}

PrimFunc Tiled(const PrimFunc& f) {
  Schedule sch(f, 0);
  RunScheduleScript(sch, R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
j0, j1 = sch.split(j, factors=[None, 16])
sch.reorder(i, j0, k, j1)
sch.vectorize(j1)
sch.decompose_reduction(b0, j0)
)");
  return sch.func();
}

TEST(RunnerTest, MeasuresAndVerifies) {
  PrimFunc f = BuildWorkload("matmul:M=32,N=32,K=32").func;
  Runner runner(f, QuickConfig());
  EXPECT_EQ(runner.reference_check(), "interpreter");
  std::vector<MeasureResult> results = runner.Measure({f, Tiled(f)});
  ASSERT_EQ(results.size(), 2u);
  for (const MeasureResult& r : results) {
    EXPECT_EQ(r.status, MeasureStatus::kOk) << r.error;
    EXPECT_EQ(r.run_secs.size(), 3u);
    EXPECT_GT(r.MedianSecs(), 0);
    EXPECT_GT(r.compile_secs, 0);
  }
}

// How large a program the interpreter checks is judged by its FLOPs, or by
// its block instances where they are more: a transpose counts no FLOPs, and
// an int32 matmul of 1024 counted none either until integers on data
// counted, and was interpreted for 90 s by `tunedb run`.
TEST(RunnerTest, TheInterpreterChecksOnlyProgramsSmallEnough) {
  PrimFunc transpose = ParseWorkloadText("input X: f32[6, 10]\nY[i, j] = X[j, i]\n");
  PrimFunc int_matmul =
      ParseWorkloadText("input A: i32[4, 5]\ninput B: i32[5, 3]\nC[i, j] = sum(k in 5) A[i, k] * B[k, j]\n");
  MeasureConfig c = QuickConfig();
  c.interpreter_check_max_ops = 60;
  EXPECT_EQ(Runner(transpose, c).reference_check(), "interpreter");
  EXPECT_EQ(Runner(int_matmul, c).reference_check(), "skipped: 120 operations > 60");
  c.interpreter_check_max_ops = 59;
  EXPECT_EQ(Runner(transpose, c).reference_check(), "skipped: 60 operations > 59");
}

// A configuration it cannot run is refused before a worker starts: an
// infinite repeat length reached the worker as JSON null, and an infinite
// timeout expired at once.
TEST(RunnerTest, RefusesAConfigurationItCannotRun) {
  EXPECT_EQ(MeasureConfigProblem(QuickConfig()), "");
  PrimFunc f = BuildWorkload("matmul:M=8,N=8,K=8").func;
  auto refusal = [&](MeasureConfig c) {
    try {
      Runner runner(f, c);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  MeasureConfig c = QuickConfig();
  c.min_repeat_ms = INFINITY;
  EXPECT_EQ(refusal(c), "--min-repeat-ms must be a finite number of milliseconds, 0 or more");
  c = QuickConfig();
  c.run_timeout_s = INFINITY;
  EXPECT_EQ(refusal(c), "--timeout must be more than 0 and at most 86400 seconds");
  c = QuickConfig();
  c.build_timeout_s = NAN;
  EXPECT_EQ(refusal(c), "the build timeout must be more than 0 and at most 86400 seconds");
  c = QuickConfig();
  c.repeat = 0;
  EXPECT_EQ(refusal(c), "--repeat must be at least 1");
  // Repeats of at least 3 s with a 1 s timeout: every one counted as hung.
  c = QuickConfig();
  c.min_repeat_ms = 3000;
  c.run_timeout_s = 1;
  EXPECT_EQ(refusal(c), "--min-repeat-ms 3000 is more than half of --timeout (1 s): every timed repeat would count as hung");
  c.number = 5;  // a fixed count of runs does not grow to min_repeat_ms
  EXPECT_EQ(refusal(c), "accepted");
}

TEST(RunnerTest, SlowCandidatesAreTimedByOneRunOnly) {
  // The unscheduled 160 x 160 x 160 matmul: 8 MFLOP, milliseconds a run.
  PrimFunc f = BuildWorkload("matmul:M=160,N=160,K=160").func;
  Runner runner(f, QuickConfig());
  // A cutoff no run can beat: one timing each, still verified and ok.
  std::vector<MeasureResult> slow = runner.Measure({f, f}, 1e-12);
  for (const MeasureResult& r : slow) {
    EXPECT_EQ(r.status, MeasureStatus::kOk) << r.error;
    ASSERT_EQ(r.run_secs.size(), 1u);
    EXPECT_GE(r.run_secs[0], 1e-3) << "too fast here for a run that may be cut";
  }
  // A generous cutoff changes nothing.
  for (const MeasureResult& r : runner.Measure({f}, 10.0)) EXPECT_EQ(r.run_secs.size(), 3u);
}

// Runs of microseconds are never cut, whatever the cutoff: one stall of the
// machine covers several of them, and a cut keeps its timing for good.
// Within reach of a first run's start-up costs or not, they are fully timed.
TEST(RunnerTest, CandidatesOfMicrosecondsAreNeverCutByTheirFirstRuns) {
  PrimFunc f = BuildWorkload("matmul:M=32,N=32,K=32").func;
  Runner runner(f, QuickConfig());
  for (double cutoff : {1e-12, 2e-3}) {
    for (const MeasureResult& r : runner.Measure({f, Tiled(f)}, cutoff)) {
      EXPECT_EQ(r.status, MeasureStatus::kOk) << r.error;
      EXPECT_EQ(r.run_secs.size(), 3u) << cutoff;
    }
  }
}

// A hopeless candidate whose verification run is long keeps that run as its
// timing: a second run of it costs as much again. The unscheduled matmul
// with M = N = 512, K = 1024 runs for about 0.5 s; with up to three more
// runs the call would last four of them.
TEST(RunnerTest, ALongVerificationRunIsAHopelessCandidatesOneTiming) {
  PrimFunc f = BuildWorkload("matmul:M=512,N=512,K=1024").func;
  MeasureConfig c = QuickConfig();
  c.workers = 1;
  Runner runner(f, c);
  auto start = std::chrono::steady_clock::now();
  std::vector<MeasureResult> r = runner.Measure({f}, 1e-3);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r[0].status, MeasureStatus::kOk) << r[0].error;
  ASSERT_EQ(r[0].run_secs.size(), 1u);
  EXPECT_GE(r[0].run_secs[0], 0.1) << "too fast here for a long verification run";
  EXPECT_LT(secs, 2.5 * r[0].run_secs[0]);
}

TEST(RunnerTest, CandidatesFarSlowerThanTheCallsFastestGetNoMoreRepeats) {
  PrimFunc f = BuildWorkload("matmul:M=32,N=32,K=32").func;
  Runner runner(f, QuickConfig());
  // slow_factor 1: after the first pass the fastest stands; each other
  // candidate gets a second, short look, and stands only if that beats the
  // fastest first timing (ties of nanosecond timings): two timings, or
  // three repeats and the look.
  std::vector<MeasureResult> cut = runner.Measure({f, Tiled(f), f}, 0, 1);
  int untouched = 0;
  for (const MeasureResult& r : cut) {
    EXPECT_EQ(r.status, MeasureStatus::kOk) << r.error;
    EXPECT_TRUE(r.run_secs.size() == 2u || r.run_secs.size() == 3u || r.run_secs.size() == 4u) << r.run_secs.size();
    untouched += r.run_secs.size() == 3u;
  }
  EXPECT_EQ(untouched, 1) << "the call's fastest is timed as usual";
  // The cut kernels were released: the next call reuses their ids.
  for (const MeasureResult& r : runner.Measure({Tiled(f), f, Tiled(f)}, 0, 1e9)) {
    EXPECT_EQ(r.status, MeasureStatus::kOk) << r.error;
    EXPECT_EQ(r.run_secs.size(), 3u);
  }
}

// The reference files this process holds open: the anonymous in-memory
// files (memfd) named tunedb-reference, as /proc/self/fd shows them.
std::vector<std::filesystem::path> OpenReferenceFiles() {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (!ec && target.rfind("/memfd:tunedb-reference", 0) == 0) out.push_back(entry.path());
  }
  return out;
}

TEST(RunnerTest, TheFirstWorkerSharesTheReferenceThroughAnInMemoryFile) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "runner_reference";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::setenv("TMPDIR", dir.c_str(), 1), 0);
  ASSERT_TRUE(OpenReferenceFiles().empty());
  {
    Runner runner(BuildWorkload("matmul:M=16,N=16,K=16").func, QuickConfig());
    std::vector<std::filesystem::path> files = OpenReferenceFiles();
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(std::filesystem::file_size(files[0]), 16u * 16u * sizeof(float)) << "the output C, float32";
    PrimFunc f = BuildWorkload("matmul:M=16,N=16,K=16").func;
    for (const MeasureResult& r : runner.Measure({f, Tiled(f)})) EXPECT_EQ(r.status, MeasureStatus::kOk) << r.error;
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "nothing on disk, so nothing for a SIGKILL to leave behind";
  }
  EXPECT_TRUE(OpenReferenceFiles().empty());
  ::unsetenv("TMPDIR");
}

// Same parameters as matmul 16, different computation: A * B^T instead of
// A * B.
PrimFunc WrongMatmul16() {
  PrimFunc wrong = BuildWorkload("matmul:M=16,N=16,K=16").func;
  auto* c = static_cast<StoreNode*>(CollectBlocks(wrong)[1]->body.get());
  const Expr& product = c->value->operands[1];
  Expr a = product->operands[0], b = product->operands[1];
  c->value = c->value->operands[0] + a * Load(b->buffer, {b->operands[1], b->operands[0]});
  return wrong;
}

TEST(RunnerTest, WrongResultsAreCaught) {
  PrimFunc f = BuildWorkload("matmul:M=16,N=16,K=16").func;
  PrimFunc wrong = WrongMatmul16();
  Runner runner(f, QuickConfig());
  std::vector<MeasureResult> results = runner.Measure({wrong});
  EXPECT_EQ(results[0].status, MeasureStatus::kWrongResult);
  EXPECT_NE(results[0].error.find("output C: element"), std::string::npos) << results[0].error;
  EXPECT_TRUE(results[0].run_secs.empty());
}

// An element a kernel never writes is caught in an integer output too.
// Outputs used to start as NaN converted to int32, which is 0 on x86: a
// kernel that skipped an element whose right value is 0 passed its check
// (found through fuzz/compiled_text.cc, whose UBSan build flagged the
// conversion).
TEST(RunnerTest, AnIntegerOutputElementNeverWrittenIsCaught) {
  PrimFunc f = ParseWorkloadText("input A: i32[8]\nB[i] = A[i] * 0\noutput B\n");
  PrimFunc skips = ParseWorkloadText("input A: i32[8]\nB[i] = A[i] * 0\noutput B\n");
  // The loop over B stops one element short of it.
  ASSERT_EQ(CollectBlocks(skips)[0]->body->kind, StmtKind::kFor);
  static_cast<ForNode*>(CollectBlocks(skips)[0]->body.get())->extent = 7;
  Runner runner(f, QuickConfig());
  std::vector<MeasureResult> results = runner.Measure({f, skips});
  EXPECT_EQ(results[0].status, MeasureStatus::kOk) << results[0].error;
  EXPECT_EQ(results[1].status, MeasureStatus::kWrongResult) << results[1].error;
}

TEST(RunnerTest, CrashesAndHangsAreContained) {
  PrimFunc f = BuildWorkload("matmul:M=16,N=16,K=16").func;
  MeasureConfig crash = QuickConfig();
  crash.fault = {FaultInjection::kCrash, 1};
  {
    Runner runner(f, crash);
    std::vector<MeasureResult> r = runner.Measure({f, f, f});
    EXPECT_EQ(r[0].status, MeasureStatus::kOk) << r[0].error;
    EXPECT_EQ(r[1].status, MeasureStatus::kRunError);
    EXPECT_NE(r[1].error.find("signal 11"), std::string::npos) << r[1].error;
    EXPECT_EQ(r[2].status, MeasureStatus::kOk) << r[2].error;  // the next candidate is measured normally
    // Their repeats are complete even where the crash took their worker
    // (and the kernels it kept for the later passes) down.
    EXPECT_EQ(r[0].run_secs.size(), 3u);
    EXPECT_EQ(r[2].run_secs.size(), 3u);
  }
  MeasureConfig hang = QuickConfig();
  hang.fault = {FaultInjection::kHang, 0};
  hang.run_timeout_s = 1;
  {
    Runner runner(f, hang);
    std::vector<MeasureResult> r = runner.Measure({f, f});
    EXPECT_EQ(r[0].status, MeasureStatus::kTimeout);
    EXPECT_NE(r[0].error.find("running took longer than"), std::string::npos) << r[0].error;
    EXPECT_EQ(r[1].status, MeasureStatus::kOk) << StatusName(r[1].status) << ": " << r[1].error;
    // The runner keeps working afterwards (the fault applies to candidate 0
    // of every call).
    std::vector<MeasureResult> again = runner.Measure({f, f});
    EXPECT_EQ(again[0].status, MeasureStatus::kTimeout);
    EXPECT_EQ(again[1].status, MeasureStatus::kOk) << again[1].error;
  }
}

// A build that times out replaces its worker, and with it the kernels the
// worker built earlier in the call: those are built again and timed, not
// reported "ok" with no timing.
TEST(RunnerTest, KernelsLostWithAWorkerWhoseLaterBuildTimedOutAreBuiltAgain) {
  PrimFunc f = BuildWorkload("matmul:M=16,N=16,K=16").func;
  MeasureConfig c = QuickConfig();
  c.workers = 1;  // candidates 0, 1 and 2 all build in it, in turn
  c.build_timeout_s = 1;
  c.fault = {FaultInjection::kEndlessBuild, 1};
  Runner runner(f, c);
  std::vector<MeasureResult> r = runner.Measure({f, f, f});
  EXPECT_EQ(r[1].status, MeasureStatus::kTimeout);
  EXPECT_NE(r[1].error.find("building took longer than"), std::string::npos) << r[1].error;
  for (int i : {0, 2}) {
    EXPECT_EQ(r[i].status, MeasureStatus::kOk) << i << ": " << r[i].error;
    EXPECT_EQ(r[i].run_secs.size(), 3u) << i;
  }
}

// The timeout is for one run: a candidate whose runs each take a fraction
// of it is measured even when its verification run and repeats together
// last several times longer. A kernel that hangs still times out (above).
TEST(RunnerTest, TheTimeoutIsForOneRunNotForAllOfACandidatesRuns) {
  // A fixed timeout either cut one run on a loaded machine (the unscheduled
  // 512 matmul took 0.1-0.7 s a run) or fitted all the runs on a fast one,
  // so the timeout is five times this machine's slowest of three runs.
  PrimFunc f = BuildWorkload("matmul:M=256,N=256,K=256").func;
  MeasureConfig c = QuickConfig();
  c.workers = 1;
  c.number = 1;
  c.repeat = 3;
  double slowest_run = 0;
  {
    Runner calibration(f, c);
    std::vector<MeasureResult> r = calibration.Measure({f});
    ASSERT_EQ(r[0].status, MeasureStatus::kOk) << StatusName(r[0].status) << ": " << r[0].error;
    for (double s : r[0].run_secs) slowest_run = std::max(slowest_run, s);
  }
  c.repeat = 20;
  c.run_timeout_s = 5 * slowest_run;
  Runner runner(f, c);
  auto start = std::chrono::steady_clock::now();
  std::vector<MeasureResult> r = runner.Measure({f});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r[0].status, MeasureStatus::kOk) << StatusName(r[0].status) << ": " << r[0].error
                                              << " (timeout " << c.run_timeout_s << " s)";
  EXPECT_EQ(r[0].run_secs.size(), 20u);
  // Twenty-one runs in all: if they fit in one timeout, this test shows nothing.
  EXPECT_GT(secs, c.run_timeout_s) << "runs too fast here to outlast the timeout";
}

TEST(RunnerTest, BuildErrors) {
  PrimFunc f = BuildWorkload("matmul:M=16,N=16,K=16").func;
  PrimFunc other = BuildWorkload("matmul:M=8,N=16,K=16").func;
  Runner runner(f, QuickConfig());
  std::vector<MeasureResult> r = runner.Measure({other, f});
  EXPECT_EQ(r[0].status, MeasureStatus::kBuildError);
  EXPECT_EQ(r[0].error, "parameter 0 of the candidate differs from the workload's");
  EXPECT_EQ(r[1].status, MeasureStatus::kOk);
}

// A program that traps on its own inputs (here an integer division by
// zero, which the compiler cannot see) is the user's error: the interpreter
// names the block and the expression, ahead of the compiled reference,
// which dies of SIGFPE.
TEST(RunnerTest, AProgramThatTrapsIsNamedNotACrashedWorker) {
  PrimFunc f = ParseWorkloadText("input A: f32[4]\nY[i] = 7 / i32(A[i] * 0.0)\n");
  try {
    Runner runner(f, QuickConfig());
    FAIL() << "the program divides by zero";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "worker: interpreter: division by zero in block Y: 7 // T.Cast(\"int32\", A[v_i] * T.float32(0.0))");
  }
  MeasureConfig unchecked = QuickConfig();
  unchecked.interpreter_check_max_ops = -1;  // -1 skips even this program of 4 elements
  try {
    Runner runner(f, unchecked);
    FAIL() << "the program divides by zero";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "computing the reference (the unscheduled program, compiled) failed: the worker process was killed "
                 "by signal 8 (Floating point exception)");
  }
}

TEST(RunnerTest, MissingWorkerIsAClearError) {
  MeasureConfig c = QuickConfig();
  c.worker_path = "/nonexistent/tunedb-worker";
  try {
    Runner runner(BuildWorkload("matmul:M=4,N=4,K=4").func, c);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the measuring worker /nonexistent/tunedb-worker is missing or not executable");
  }
}

TEST(RunnerTest, RepeatsSpreadOverTheCallOrBackToBack) {
  PrimFunc f = BuildWorkload("matmul:M=16,N=16,K=16").func;
  for (bool spread : {true, false}) {
    MeasureConfig c = QuickConfig();
    c.spread_repeats = spread;
    Runner runner(f, c);
    std::vector<MeasureResult> r = runner.Measure({f, Tiled(f), f});
    for (const MeasureResult& m : r) {
      EXPECT_EQ(m.status, MeasureStatus::kOk) << m.error;
      ASSERT_EQ(m.run_secs.size(), 3u) << (spread ? "spread" : "back to back");
      for (double secs : m.run_secs) EXPECT_GT(secs, 0);
    }
    // The kernels kept between passes are released: a second call in the
    // same workers reuses their ids.
    std::vector<MeasureResult> again = runner.Measure({Tiled(f), f});
    EXPECT_EQ(again[0].run_secs.size(), 3u);
    EXPECT_EQ(again[1].status, MeasureStatus::kOk) << again[1].error;
  }
}

TEST(RunnerTest, MeasureAgainTimesTheLastCallsKernelsWithoutBuildingThem) {
  PrimFunc f = BuildWorkload("matmul:M=32,N=32,K=32").func;
  Runner runner(f, QuickConfig());
  std::vector<MeasureResult> first = runner.Measure({f, Tiled(f), f});
  for (const MeasureResult& r : first) ASSERT_EQ(r.status, MeasureStatus::kOk) << r.error;
  const double built = runner.phase_secs().build;
  const double ran = runner.phase_secs().run;
  for (const std::vector<std::size_t>& which : {std::vector<std::size_t>{1, 0}, std::vector<std::size_t>{2}}) {
    std::vector<MeasureResult> again = runner.MeasureAgain(which);
    ASSERT_EQ(again.size(), which.size());
    for (const MeasureResult& r : again) {
      EXPECT_EQ(r.status, MeasureStatus::kOk) << r.error;
      EXPECT_EQ(r.run_secs.size(), 3u);
      EXPECT_EQ(r.compile_secs, 0) << "the kernel was built again";
    }
  }
  EXPECT_EQ(runner.phase_secs().build, built);
  EXPECT_GT(runner.phase_secs().run, ran);
  EXPECT_THROW(runner.MeasureAgain({3}), std::out_of_range);
  // A new call replaces the kernels kept.
  runner.Measure({Tiled(f)});
  EXPECT_EQ(runner.MeasureAgain({0})[0].status, MeasureStatus::kOk);
  EXPECT_THROW(runner.MeasureAgain({1}), std::out_of_range);
}

TEST(RunnerTest, MeasureAgainBuildsAndChecksAgainWhatIsNotKept) {
  PrimFunc f = BuildWorkload("matmul:M=16,N=16,K=16").func;
  // A kernel that computed wrong is not kept: timed again, it is built and
  // verified again, never timed as if it were right.
  {
    Runner runner(f, QuickConfig());
    std::vector<MeasureResult> r = runner.Measure({WrongMatmul16(), f});
    ASSERT_EQ(r[0].status, MeasureStatus::kWrongResult);
    std::vector<MeasureResult> again = runner.MeasureAgain({0, 1});
    EXPECT_EQ(again[0].status, MeasureStatus::kWrongResult);
    EXPECT_GT(again[0].compile_secs, 0);
    EXPECT_TRUE(again[0].run_secs.empty());
    EXPECT_EQ(again[1].status, MeasureStatus::kOk) << again[1].error;
  }
  // A crash takes its worker's kernels with it: those are built again, and
  // the crashing one crashes again.
  MeasureConfig crash = QuickConfig();
  crash.fault = {FaultInjection::kCrash, 1};
  Runner runner(f, crash);
  runner.Measure({f, f, f});
  std::vector<MeasureResult> again = runner.MeasureAgain({0, 1, 2});
  EXPECT_EQ(again[0].status, MeasureStatus::kOk) << again[0].error;
  EXPECT_EQ(again[1].status, MeasureStatus::kRunError);
  EXPECT_NE(again[1].error.find("signal 11"), std::string::npos) << again[1].error;
  EXPECT_EQ(again[2].status, MeasureStatus::kOk) << again[2].error;
  EXPECT_EQ(again[0].run_secs.size(), 3u);
  EXPECT_EQ(again[2].run_secs.size(), 3u);
}

TEST(RunnerTest, PhaseTimesAddUpTheBuildsAndTheRunsOfEveryCall) {
  PrimFunc f = BuildWorkload("matmul:M=32,N=32,K=32").func;
  for (bool flush : {false, true}) {
    MeasureConfig c = QuickConfig();
    c.flush_cache = flush;
    Runner runner(f, c);
    EXPECT_EQ(runner.phase_secs().build, 0);
    EXPECT_EQ(runner.phase_secs().run, 0);
    auto start = std::chrono::steady_clock::now();
    std::vector<MeasureResult> results = runner.Measure({f, Tiled(f)});
    double call_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The repeat that ends the growth of runs per repeat is kept, except
    // when each repeat must follow a cache flush: three repeats either way.
    for (const MeasureResult& r : results) EXPECT_EQ(r.run_secs.size(), 3u) << (flush ? "flushed" : "not flushed");
    PhaseSecs first = runner.phase_secs();
    EXPECT_GT(first.build, 0);
    EXPECT_GT(first.run, 3 * c.min_repeat_ms / 1000) << "two candidates, three repeats each";
    EXPECT_LE(first.build + first.run, call_secs);
    runner.Measure({Tiled(f)});
    EXPECT_GT(runner.phase_secs().build, first.build);
    EXPECT_GT(runner.phase_secs().run, first.run);
  }
}

TEST(RunnerTest, MedianOfRepeats) {
  MeasureResult r;
  r.run_secs = {3, 1, 2};
  EXPECT_EQ(r.MedianSecs(), 2);
  r.run_secs = {4, 1, 2, 3};
  EXPECT_EQ(r.MedianSecs(), 2.5);
  r.run_secs.clear();
  EXPECT_TRUE(std::isnan(r.MedianSecs()));
}

// Whether `sig` is blocked in process `pid`'s main thread, from its
// /proc status ("SigBlk:\t<hex mask>").
bool Blocks(pid_t pid, int sig) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1)) & 1;
  }
  return false;
}

// A Ctrl-C reaches every process of the tuner's group, and a worker is in
// that group until posix_spawn gives it its own. The runner starts it with
// SIGINT and SIGTERM blocked; the worker drops what came meanwhile and
// unblocks them. A worker killed that way failed `tunedb e2e` with "the
// worker process was killed by signal 2" instead of stopping it cleanly.
TEST(RunnerTest, TheWorkerDropsASignalThatCameBeforeItsOwnGroup) {
  int to_worker[2];
  ASSERT_EQ(::pipe(to_worker), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    sigset_t both;
    sigemptyset(&both);
    sigaddset(&both, SIGINT);
    sigaddset(&both, SIGTERM);
    ::sigprocmask(SIG_BLOCK, &both, nullptr);
    ::raise(SIGINT);  // pending, as one sent to the group during the spawn
    ::dup2(to_worker[0], 0);
    ::close(to_worker[1]);
    ::execl(TUNEDB_WORKER, TUNEDB_WORKER, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(to_worker[0]);
  // Until the exec, the child is this test's process: wait for the worker.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto name = [pid] {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string text;
    std::getline(comm, text);
    return text;
  };
  while (name() != "tunedb-worker" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(name(), "tunedb-worker");
  while (Blocks(pid, SIGINT) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  int status = 0;
  EXPECT_FALSE(Blocks(pid, SIGINT)) << "the worker kept SIGINT blocked";
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "the pending SIGINT ended the worker";
  // Sent to the worker itself, it still ends the worker.
  ::kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::close(to_worker[1]);  // ends a worker that ignored it
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << "status " << status;
}

}  // namespace
}  // namespace tunedb::measure
