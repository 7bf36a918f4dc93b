// Measuring candidates: build, verify and time each one in worker
// processes, so that a candidate that crashes or hangs costs one result,
// never the caller.
//
// Protocol (per Measure call):
//  1. every candidate is lowered and compiled, the builds spread over the
//     worker processes (one per core by default), in parallel;
//  2. the built candidates are then run one at a time (timing runs alone:
//     nothing else of ours runs meanwhile). Inputs are seeded random data
//     (the same in every worker); outputs start as NaN; each candidate
//     runs once and its outputs are compared with the reference
//     (wrong_result on mismatch, no timing); then `repeat` timed repeats of
//     `number` runs each, `number` grown until one repeat lasts at least
//     min_repeat_ms (the growth's last timing is the first repeat);
//     optionally the caches are flushed before each repeat (then the
//     growth's timings are not kept).
//     With spread_repeats (the default) the repeats are not back to back:
//     pass 1 checks every candidate and times one repeat, each further
//     pass times one more repeat of every candidate (after one untimed
//     run), so a drift of the machine's speed during the call touches all
//     candidates alike instead of whichever was running at the time.
//  3. the kernels stay built until the next Measure call, for MeasureAgain.
// The reference is the unscheduled program compiled by the same code
// generator; when the workload is small enough (interpreter_check_max_ops:
// its FLOPs, or its block instances where they are more) it is itself
// checked against the reference interpreter first. The first worker
// computes it and leaves its outputs in an anonymous in-memory file (memfd,
// gone with the last process holding it, even after a SIGKILL) that the
// other workers, and workers restarted after a crash, read instead of
// running the unscheduled program again.
//
// A worker that crashes (any signal) or passes its deadline is killed and
// replaced; the candidate gets run_error or timeout with the reason, and the
// next candidate is measured normally.
//
// Tolerance: |actual - expected| <= atol + rtol * |expected| per element,
// default 1e-3 both (float32 sums reassociated by tiling and contracted to
// FMA differ from the reference by far less).
//
// Thread-safety: one Runner per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/stmt.h"
#include "measure/target.h"

namespace tunedb::measure {

enum class MeasureStatus { kOk, kBuildError, kRunError, kTimeout, kWrongResult };
std::string_view StatusName(MeasureStatus status);  // "ok", "build_error", "run_error", "timeout", "wrong_result"

// A timed-out run's error: "running took longer than 10 s". The tuner tells
// by it under which --timeout an earlier session's run failed.
std::string RunTimeoutError(double run_timeout_s);

struct MeasureResult {
  MeasureStatus status = MeasureStatus::kOk;
  std::vector<double> run_secs;  // one per repeat
  std::string error;
  double compile_secs = 0;
  double MedianSecs() const;  // NaN when there is no timing
};

// Test-only: make one candidate's kernel crash or hang (a real fault in the
// generated code, run in the worker), or its build never finish (the
// worker sleeps instead of compiling), to check containment.
struct FaultInjection {
  enum Kind { kNone, kCrash, kHang, kEndlessBuild } kind = kNone;
  int candidate = -1;  // index within the Measure call
};

struct MeasureConfig {
  Target target = Target::Host();
  int repeat = 5;
  int number = 0;  // runs per repeat; 0 grows it to reach min_repeat_ms
  double min_repeat_ms = 50;
  bool flush_cache = false;
  bool spread_repeats = true;  // one repeat of every candidate per pass (see above)
  double build_timeout_s = 60;
  double run_timeout_s = 10;  // for one run of a kernel, not all of a candidate's runs
  int workers = 0;  // 0: one per target core
  std::uint64_t input_seed = 0;
  double rtol = 1e-3;
  double atol = 1e-3;
  std::int64_t interpreter_check_max_ops = 20'000'000;
  std::string worker_path;  // default: tunedb-worker beside the running executable
  FaultInjection fault;
};

// Why a MeasureConfig cannot be run, named by the command-line option
// that sets each field (--repeat, --number, --min-repeat-ms, --timeout),
// or "" when it can. Times must be finite: an infinite one reaches the
// worker as JSON null, and a deadline beyond a day overflows the clock.
std::string MeasureConfigProblem(const MeasureConfig& config);

// Wall time a Runner has spent in each phase of Measure, summed over its
// calls: building (lowering and compiling, spread over the workers) and
// running (verifying and timing, one candidate at a time).
struct PhaseSecs {
  double build = 0;
  double run = 0;
};

class Runner {
 public:
  // Starts the workers and builds the reference; throws std::runtime_error
  // when that fails (e.g. the reference disagrees with the interpreter),
  // std::invalid_argument when MeasureConfigProblem names one.
  Runner(const ir::PrimFunc& workload, MeasureConfig config);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // slow_cutoff_secs > 0: a candidate whose verification run and then the
  // fastest of up to three more (warm) runs both take longer, and at least
  // a millisecond, is not timed further; the warm run is its only timing
  // (run_secs has one entry). Tuning passes a multiple of its best time, so
  // hopeless candidates cost a few runs instead of `repeat` repeats. Runs
  // shorter than a millisecond are never cut so: a stall of the machine
  // covers a few of them (see worker.cc).
  // slow_factor > 0 (with spread repeats): after the first pass, a
  // candidate whose first timing is more than slow_factor times the call's
  // fastest first timing gets a second, short look (a tenth of the runs);
  // if that is slower too, it is not timed further either (two timings).
  // The first chunk of a session has no best time to cut against, and its
  // slowest candidates (seconds per run at matmul 1024) cost more than all
  // the others.
  std::vector<MeasureResult> Measure(const std::vector<ir::PrimFunc>& candidates, double slow_cutoff_secs = 0,
                                     double slow_factor = 0);

  // Times again candidates of the last Measure call (indices into its
  // candidates), `repeat` repeats each as Measure does, without building or
  // verifying them again: the workers keep the last call's kernels until
  // the next Measure. A kernel that is gone (its worker was replaced, or it
  // failed or was cut) is built and verified again. Throws
  // std::out_of_range for an index the last call did not have.
  std::vector<MeasureResult> MeasureAgain(const std::vector<std::size_t>& indices);

  const MeasureConfig& config() const;
  const PhaseSecs& phase_secs() const;
  // "interpreter" when the reference was checked against the interpreter,
  // otherwise why not ("skipped: 268435456 operations > 20000000").
  const std::string& reference_check() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunedb::measure
