// The tuning loop behind `tunedb tune`: for one or several workloads on one
// target, repeat until the trial budget is spent or nothing new is left:
//
//   task scheduler picks a workload -> its strategy proposes a batch ->
//   the batch is measured (in chunks, each committed to the database at
//   once) -> the cost model learns from the results.
//
// Warm start: each workload's records on this target become the
// "measured" set (never measured again), the cost model's history, and the
// elite that seeds the evolutionary population; the best records of
// similar workloads (the same library computation at other shapes) are
// replayed onto it (transfer), and so are the best records of its parts
// (ir/parts.h), composed onto it. The cost model starts from the
// database's newest stored model and is stored back at the end.
//
// Resume: a session is ended only when its budget is spent (or the space
// is exhausted). Running the same command again after an interruption
// continues that session with the trials it has left.
//
// Failures of candidates are records with a status, never exceptions.
// Errors of the setup (a bad workload, space file or target) throw before
// anything is measured.
//
// Thread-safety: one Tune call per database object.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "costmodel/tuning_model.h"
#include "db/database.h"
#include "measure/runner.h"
#include "search/split.h"
#include "search/strategy.h"
#include "search/task_scheduler.h"

namespace tunedb::search {

struct TuneOptions {
  std::vector<std::string> workloads;  // library specs or workload files (one task per output)
  int trials = 64;                     // measured candidates, shared by all workloads
  // Candidates per search round: 16, not TVM's 64. At the usual budget of
  // 64 trials a batch of 64 is a single round, ranked by the heuristic
  // alone; in rounds of 16 the model, trained after each round (see
  // model_min_samples), steers the search of the three that follow. Better
  // bests at matmul 512 and 1024 and on dense_bias_relu, within the
  // wall-time targets (bench/RESULTS.md, sessions 17 and 18).
  int batch = 16;
  std::string strategy = "evolutionary";  // or "random"
  std::string space = "default";          // or a schedule script file
  std::string task_scheduler = "gradient";
  std::uint64_t seed = 0;
  measure::MeasureConfig measure;      // the target is measure.target
  EvolutionaryOptions evolutionary;
  int chunk = 16;                      // candidates measured (and committed) at a time
  // Of each chunk's candidates that beat the task's best so far, or come
  // within confirm_margin of it, this many (the fastest) are timed again
  // before they are committed, and their record keeps every repeat. The
  // best of many noisy timings is biased towards a lucky one, and a near
  // tie is decided by noise; a second look keeps that luck out of the best
  // the session reports, serves and races against (search/confirm.h).
  // 0 turns it off.
  int confirm_best = 2;
  double confirm_margin = 0.05;
  // At the end of a session that ran to its budget, each workload's best
  // final_check kernels in the database are timed together (repeats
  // alternating, final_check_passes times `measure.repeat` each), and
  // their timings join their records (Database::AddTimings). A record's
  // median comes from the moments it was timed, and a shared VM's speed
  // drifts 10-20% between moments: the best by median can be a slower
  // kernel timed in a fast one (bench/RESULTS.md, session 50). Side by
  // side, the drift touches all alike. 0 or 1 turns it off.
  int final_check = 4;
  int final_check_passes = 3;
  int model_min_samples = costmodel::kSessionMinSamples;  // the cost model's heuristic until this many samples
  bool transfer = true;
  // Tune a workload's parts (ir/parts.h) first, as workloads of their own,
  // with three quarters of the trials; then the workload itself, its
  // search seeded with its parts' best schedules composed (measured
  // first), with the rest. One task for a program of many stages spreads
  // its trials over all their choices at once. kAuto splits the workloads
  // with two or more compute-bound parts, in the default space with the
  // evolutionary search (search/split.h).
  Split split = Split::kAuto;
  // Time the unscheduled program at the end, unless the database holds its
  // timing on this target (a record with an empty trace, which this stores).
  bool measure_baseline = true;
  std::string command;                 // the command line, to find a session to resume
};

// One workload's state as the progress output shows it.
struct TaskStatus {
  std::string name, hash;
  std::int64_t flops = 0;
  std::int64_t param_bytes = 0; // its inputs and outputs (ir::ParamBytes), for GB/s where flops is 0
  double best_secs = 0;         // +inf until a valid candidate exists
  std::string best_trace;       // trace JSON of the best record
  int trials = 0;               // measured in this session
  int failures = 0;             // of those, not ok
  int history = 0;              // records of this workload and target before the session
  int transferred = 0;          // designs replayed from similar workloads
  int composed = 0;             // designs composed from its parts' best schedules (ir/parts.h)
  bool done = false;            // no new candidates left
  double baseline_secs = 0;     // unscheduled program (0: not measured)
  bool baseline_stored = false; // baseline_secs, or baseline_error, is from an earlier session's record
  std::string baseline_error;   // why the unscheduled program has no time, when it failed
  double baseline_over_secs = 0;  // > 0: it timed out, one run taking longer than this
  double GFlops() const;
};

struct TuneEvent {
  enum Kind { kSetup, kMeasured, kBatchDone, kNote } kind;
  int task = -1;
  int trials_done = 0, trials_total = 0;  // whole session
  double elapsed_secs = 0;
  std::string message;  // kSetup: what was loaded (history, transfer, model); kNote: a line for the user
};

// Where a session's wall time went, in seconds. A tuner that is slow must
// say whether the search, the compiler or the timed runs are to blame.
struct SessionTimes {
  double warm_start = 0;  // loading the stored model, the records (learnt from) and transfer designs
  double search = 0;      // the strategies choosing candidates (sampling, mutation, features, ranking)
  double workers = 0;     // starting the measuring workers, beyond what overlapped the first search
  double build = 0;       // lowering and compiling candidates, spread over the workers
  double run = 0;         // verifying and timing them, one at a time (second looks included)
  double commit = 0;      // committing records to the database
  double model = 0;       // featurizing measured candidates, training the cost model, storing it at the end
  double baseline = 0;    // timing the unscheduled programs at the end
  double Sum() const { return warm_start + search + workers + build + run + commit + model + baseline; }
};
// "search 1.2 s, build 4.1 s, runs 6.8 s, ..., other 0.2 s": the parts
// that took any time, then what none of them covers.
std::string TimesText(const SessionTimes& times, double wall_secs);

struct TuneReport {
  std::vector<TaskStatus> tasks;
  std::int64_t session_id = 0;
  bool resumed = false;
  bool interrupted = false;
  double wall_secs = 0;
  SessionTimes times;   // wall_secs - times.Sum() is what none of them covers
  int final_check_rounds = 0;  // rounds of TuneOptions::final_check, all workloads
  std::string final_check_note;  // why its timings were not stored (a server older than them), if they were not
  std::string model;  // the cost model at the end, described
};

using TuneObserver = std::function<void(const TuneEvent&, const std::vector<TaskStatus>&)>;

// What Tune refuses before it touches the database: the options' numbers
// and names, each workload spec, and a --space script run on each
// workload. Opening a database file creates it, so a caller runs this
// first: a mistyped command then leaves no file behind. Throws
// std::invalid_argument, ir::IrError or ir::ScheduleError.
void CheckTuneOptions(const TuneOptions& options);

// `stop` is polled between chunks (Ctrl-C sets it). Throws on setup errors
// (those of CheckTuneOptions, which it runs first, and db::DatabaseError).
TuneReport Tune(db::Database& database, const TuneOptions& options, const TuneObserver& observer = nullptr,
                const std::atomic<bool>* stop = nullptr);

}  // namespace tunedb::search
