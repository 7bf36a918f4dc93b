// `tunedb tune`: the tuning loop of search/tuner.h with a progress bar, a
// table after each batch (TVM's task-scheduler table) and the best schedule
// at the end. Ctrl-C or SIGTERM stops after the candidates in flight are
// measured and committed (commands.h, InterruptHandler); a second signal,
// a second or more later, kills the process.
#include <unistd.h>

#include <cmath>

#include <fmt/core.h>

#include "api/cli/commands.h"
#include "api/remote/remote_database.h"
#include "ir/flops.h"
#include "ir/schedule/trace.h"
#include "search/tuner.h"

namespace tunedb::cli {
namespace {

struct TuneCliOptions {
  std::vector<std::string> workloads;
  int trials = 64;
  int batch = search::TuneOptions{}.batch;
  std::string db = "tunedb.sqlite";
  std::string strategy = "evolutionary";
  std::string space = "default";
  std::string task_scheduler = "gradient";
  std::uint64_t seed = 0;
  std::string target;
  int population = 512;
  int repeat = 3;
  double min_repeat_ms = 20;
  double timeout_s = measure::MeasureConfig{}.run_timeout_s;
  int model_min_samples = search::TuneOptions{}.model_min_samples;
  int confirm_best = search::TuneOptions{}.confirm_best;
  double confirm_margin = search::TuneOptions{}.confirm_margin;
  int final_check = search::TuneOptions{}.final_check;
  std::string token_file;
  bool no_transfer = false;
  bool split = false;
  bool no_split = false;
  bool no_baseline = false;
};

std::string FormatLatency(double secs) {
  if (!std::isfinite(secs) || secs <= 0) return "-";
  // A kernel of a few nanoseconds still shows its figure.
  return secs >= 1e-5 ? fmt::format("{:.1f}", secs * 1e6) : fmt::format("{:.4f}", secs * 1e6);
}

void PrintTable(const std::vector<search::TaskStatus>& tasks) {
  fmt::print("{:>3} | {:<36} | {:>10} | {:>14} | {:>12} | {:>6} | {:>8} | {}\n", "ID", "Workload", "FLOP",
             "Speed (GFLOPS)", "Latency (us)", "Trials", "Failures", "Done");
  fmt::print("{}\n", std::string(118, '-'));
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const search::TaskStatus& t = tasks[i];
    // A program with no FLOPs (a transpose) is rated in GB/s, unit shown.
    ir::Rate rate = ir::RateOf(t.flops, t.param_bytes, t.best_secs);
    std::string speed = rate.value <= 0                ? std::string("-")
                        : t.flops > 0                  ? fmt::format("{:.2f}", rate.value)
                                                       : fmt::format("{:.2f} {}", rate.value, rate.unit);
    fmt::print("{:>3} | {:<36} | {:>10.4g} | {:>14} | {:>12} | {:>6} | {:>8} | {}\n", i, t.name,
               static_cast<double>(t.flops), speed, FormatLatency(t.best_secs), t.trials, t.failures,
               t.done ? "Y" : "");
  }
  std::fflush(stdout);
}

void PrintProgress(const search::TuneEvent& e, const std::vector<search::TaskStatus>& tasks, bool tty) {
  double best = 0;
  for (const auto& t : tasks) best = std::max(best, t.GFlops());
  int width = 30;
  int filled = e.trials_total > 0 ? width * e.trials_done / e.trials_total : width;
  std::string bar = std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(width - filled), '.');
  // A program with no FLOPs to count (a transpose) shows its best time.
  std::string best_text = best > 0 ? fmt::format(" | best {:.1f} GFLOP/s", best) : "";
  if (best <= 0 && tasks.size() == 1 && std::isfinite(tasks[0].best_secs) && tasks[0].best_secs > 0) {
    best_text = " | best " + DurationText(tasks[0].best_secs);
  }
  std::string line =
      fmt::format("[{}] {}/{} trials{} | {:.1f} s", bar, e.trials_done, e.trials_total, best_text, e.elapsed_secs);
  if (tty) {
    fmt::print(stderr, "\r{}", line);
  } else {
    fmt::print(stderr, "{}\n", line);
  }
  std::fflush(stderr);
}

std::string CommandKey(const TuneCliOptions& o, const std::string& target) {
  std::string key = "tune";
  for (const auto& w : o.workloads) key += " --workload " + w;
  key += fmt::format(" --trials {} --batch {} --strategy {} --space {} --task-scheduler {} --seed {} --target \"{}\"",
                     o.trials, o.batch, o.strategy, o.space, o.task_scheduler, o.seed, target);
  if (o.split) key += " --split";
  if (o.no_split) key += " --no-split";
  return key;
}

void RunTune(const TuneCliOptions& o) {
  if (o.db.rfind("https://", 0) == 0) {
    throw UsageError("--db " + o.db + ": tunedb serve speaks plain HTTP; put a TLS proxy in front and use http://");
  }
  search::TuneOptions options;
  options.workloads = o.workloads;
  options.trials = o.trials;
  options.batch = o.batch;
  options.strategy = o.strategy;
  options.space = o.space;
  options.task_scheduler = o.task_scheduler;
  options.seed = o.seed;
  options.evolutionary.population = o.population;
  options.transfer = !o.no_transfer;
  if (o.split && o.no_split) throw UsageError("--split and --no-split: choose one");
  options.split = o.split ? search::Split::kOn : o.no_split ? search::Split::kOff : search::Split::kAuto;
  options.model_min_samples = o.model_min_samples;
  if (o.confirm_best < 0) throw UsageError("--confirm-best must be 0 or more");
  options.confirm_best = o.confirm_best;
  if (!(o.confirm_margin >= 0 && std::isfinite(o.confirm_margin))) {
    throw UsageError("--confirm-margin must be a finite fraction, 0 or more");
  }
  options.confirm_margin = o.confirm_margin;
  options.final_check = o.final_check;
  options.measure_baseline = !o.no_baseline;
  options.measure.repeat = o.repeat;
  options.measure.min_repeat_ms = o.min_repeat_ms;
  options.measure.run_timeout_s = o.timeout_s;
  if (std::string problem = measure::MeasureConfigProblem(options.measure); !problem.empty()) {
    throw UsageError(problem);
  }
  options.measure.target = TargetOption(o.target);
  options.command = CommandKey(o, options.measure.target.ToString());

  try {
    search::CheckTuneOptions(options);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::string token = ReadTokenFile(o.token_file);
  std::unique_ptr<db::Database> opened = api::OpenDatabase(o.db, token);
  db::Database& database = *opened;
  bool tty = ::isatty(STDERR_FILENO) != 0;
  bool progress_open = false;
  auto observer = [&](const search::TuneEvent& e, const std::vector<search::TaskStatus>& tasks) {
    switch (e.kind) {
      case search::TuneEvent::kSetup: {
        int history = 0, transferred = 0, composed = 0;
        for (const auto& t : tasks) {
          history += t.history;
          transferred += t.transferred;
          composed += t.composed;
        }
        fmt::print("tuning {} workload(s) for {} trials: {} search, target \"{}\"\n", tasks.size(), e.trials_total,
                   o.strategy, options.measure.target.ToString());
        fmt::print("database {}: {} earlier records of these workloads on this target{}{}{}\n", o.db, history,
                   transferred > 0 ? fmt::format("; {} designs from other shapes", transferred) : "",
                   composed > 0 ? fmt::format("; {} composed from their parts' best", composed) : "",
                   e.trials_done > 0 ? fmt::format("; resuming a session with {} trials done", e.trials_done) : "");
        fmt::print("{}\n", e.message);
        std::fflush(stdout);
        break;
      }
      case search::TuneEvent::kNote:
        if (progress_open) fmt::print(stderr, "\n");
        progress_open = false;
        fmt::print("{}\n", e.message);
        std::fflush(stdout);
        break;
      case search::TuneEvent::kMeasured:
        PrintProgress(e, tasks, tty);
        progress_open = tty;
        break;
      case search::TuneEvent::kBatchDone:
        if (progress_open) fmt::print(stderr, "\n");
        progress_open = false;
        PrintTable(tasks);
        fmt::print("cost model: {}\n\n", e.message);
        break;
    }
  };

  search::TuneReport report;
  {
    InterruptHandler handler;
    try {
      report = search::Tune(database, options, observer, handler.flag());
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  if (progress_open) fmt::print(stderr, "\n");

  if (report.interrupted) {
    int done = 0;
    for (const auto& t : report.tasks) done += t.trials;
    fmt::print("interrupted: {} of {} trials measured and committed to {}; run the same command to resume\n", done,
               o.trials, o.db);
  }
  for (const search::TaskStatus& t : report.tasks) {
    fmt::print("\n== {} (hash {})\n", t.name, t.hash);
    // Say why a task stopped short of its share, or a small design space
    // (a --space script with few choices) reads as a budget ignored.
    if (t.done) {
      fmt::print("its design space gave nothing new after {} trial{} here{}\n", t.trials, t.trials == 1 ? "" : "s",
                 t.history > 0 ? fmt::format(" and {} before", t.history) : "");
    }
    if (t.best_trace.empty()) {
      fmt::print("no valid candidate yet\n");
      continue;
    }
    // The unscheduled program's own record has no instructions: say so
    // rather than print an empty script.
    std::string script = ir::Trace::FromJsonText(t.best_trace).Simplified(false).AsScript();
    fmt::print("best schedule:\n{}", script.empty() ? "none: the unscheduled program is the fastest measured\n" : script);
    fmt::print("best:        {}, {}\n", DurationText(t.best_secs), RateText(t.flops, t.param_bytes, t.best_secs));
    if (t.baseline_secs > 0 && !script.empty()) {
      fmt::print("unscheduled: {}, {}; the best is {}{}\n", DurationText(t.baseline_secs),
                 RateText(t.flops, t.param_bytes, t.baseline_secs), SpeedupText(t.baseline_secs, t.best_secs),
                 t.baseline_stored ? " (unscheduled program timed in an earlier session)" : "");
    } else if (!t.baseline_error.empty() && !script.empty()) {
      // A large workload's unscheduled program can outlast --timeout (matmul
      // 2048: 47 s a run here); the timeout still bounds the speedup.
      const char* when = t.baseline_stored ? " in an earlier session" : "";
      if (t.baseline_over_secs > 0) {
        fmt::print("unscheduled: not timed: {} (--timeout){}; the best is more than {}\n", t.baseline_error, when,
                   SpeedupText(t.baseline_over_secs, t.best_secs));
      } else {
        fmt::print("unscheduled: not timed: {}{}\n", t.baseline_error, when);
      }
    }
  }
  fmt::print("\nsession {} took {:.1f} s ({}); {}\n", report.session_id, report.wall_secs,
             search::TimesText(report.times, report.wall_secs), report.model);
  if (!report.final_check_note.empty()) fmt::print("note: {}\n", report.final_check_note);
}

}  // namespace

std::string RateText(std::int64_t flops, std::int64_t param_bytes, double secs) {
  ir::Rate rate = ir::RateOf(flops, param_bytes, secs);
  return fmt::format("{:.2f} {}{}", rate.value, rate.unit, flops > 0 ? "" : " of inputs and outputs");
}

std::string SpeedupText(double reference_secs, double new_secs) {
  double ratio = reference_secs / new_secs;
  return ratio >= 1 ? fmt::format("{:.1f}x faster", ratio) : fmt::format("{:.1f}x slower", 1 / ratio);
}

void AddTuneCommand(CLI::App& app) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* cmd = app.add_subcommand("tune", "Tune workloads by searching their schedules into the database");
  cmd->add_option("-w,--workload", o->workloads, "Workload spec or file (repeat for several)")->required();
  cmd->add_option("--trials", o->trials, "Candidates to measure, shared by all workloads")->capture_default_str();
  cmd->add_option("--db", o->db, "The SQLite database file, or a tunedb server's http://HOST:PORT")
      ->capture_default_str();
  cmd->add_option("--token-file", o->token_file, "Bearer token for a server's write routes");
  cmd->add_option("--strategy", o->strategy, "evolutionary or random")->capture_default_str();
  cmd->add_option("--space", o->space, "default, or a stochastic schedule script")->capture_default_str();
  AddSeedOption(cmd, &o->seed, "Seed of every random choice");
  cmd->add_option("--target", o->target, "Target string (default: the host)");
  cmd->add_option("--batch", o->batch, "Candidates per search round")->capture_default_str();
  cmd->add_option("--task-scheduler", o->task_scheduler, "gradient or round-robin (several workloads)")
      ->capture_default_str();
  cmd->add_option("--population", o->population, "Evolutionary population size")->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "Timed repeats per candidate")->capture_default_str();
  cmd->add_option("--min-repeat-ms", o->min_repeat_ms, "Minimum duration of one repeat (at most half of --timeout)")
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s, "Seconds before a run counts as hung")->capture_default_str();
  cmd->add_option("--model-min-samples", o->model_min_samples,
                  "Measured candidates before the cost model is trained (the heuristic ranks until then)")
      ->capture_default_str();
  cmd->add_option("--confirm-best", o->confirm_best,
                  "Per chunk, the fastest new-best candidates timed again before they are stored (0: none)")
      ->capture_default_str();
  cmd->add_option("--confirm-margin", o->confirm_margin,
                  "Candidates this fraction slower than the best also count as new-best contenders")
      ->capture_default_str();
  cmd->add_option("--final-check", o->final_check,
                  "At the end, this many of the best kernels are timed together and their records ranked by it "
                  "(0: none)")
      ->capture_default_str();
  cmd->add_flag("--no-transfer", o->no_transfer, "Do not seed the search with other shapes' best schedules");
  cmd->add_flag("--split", o->split,
                "Tune each workload's parts (groups of its stages) first, then the workload from their best "
                "schedules (by default, only a workload with two or more compute-bound parts)");
  cmd->add_flag("--no-split", o->no_split, "Tune every workload whole, never its parts first");
  cmd->add_flag("--no-baseline", o->no_baseline, "Do not time the unscheduled program at the end");
  cmd->callback([o] { RunTune(*o); });
}

}  // namespace tunedb::cli
