// `tunedb run`: compile one program (the workload, or it scheduled by a
// script or a trace), verify it against the reference and time it.
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/core.h>

#include "api/cli/commands.h"
#include "api/cli/program_source.h"
#include "ir/flops.h"
#include "ir/structural.h"
#include "measure/jit.h"
#include "measure/lower.h"
#include "measure/runner.h"

namespace tunedb::cli {
namespace {

struct RunOptions {
  ProgramSource source;
  int repeat = 5;
  int number = 0;
  double min_repeat_ms = 50;
  bool flush_cache = false;
  double timeout_s = 10;
  std::string target;
  std::string emit_llvm;
};

void RunRun(const RunOptions& o) {
  ScheduledProgram p = LoadScheduledProgram(o.source);
  measure::MeasureConfig config;
  config.target = TargetOption(o.target);
  config.repeat = o.repeat;
  config.number = o.number;
  config.min_repeat_ms = o.min_repeat_ms;
  config.flush_cache = o.flush_cache;
  config.run_timeout_s = o.timeout_s;
  if (std::string problem = measure::MeasureConfigProblem(config); !problem.empty()) throw UsageError(problem);
  config.workers = 1;
  if (!o.emit_llvm.empty()) {
    measure::Jit jit(config.target);
    std::ofstream out(o.emit_llvm);
    if (!out) throw UsageError("cannot write " + o.emit_llvm);
    out << jit.OptimizedIR(measure::Lower(p.program));
    out.close();
    if (!out) throw UsageError("writing " + o.emit_llvm + " failed (is the disk full?)");
  }
  measure::Runner runner(p.workload.func, config);
  measure::MeasureResult r = runner.Measure({p.program})[0];
  std::int64_t flops = ir::CountFlops(p.workload.func);
  fmt::print("workload:  {} (hash {})\n", p.workload.spec, ir::WorkloadHash(p.workload.func));
  fmt::print("target:    {}\n", config.target.ToString());
  fmt::print("reference: {}\n", runner.reference_check() == "interpreter" ? "checked against the interpreter"
                                                                           : "not checked against the interpreter (" +
                                                                                 runner.reference_check() + ")");
  fmt::print("status:    {}\n", measure::StatusName(r.status));
  if (!r.error.empty()) fmt::print("error:     {}\n", r.error);
  if (r.compile_secs > 0) fmt::print("compile:   {:.1f} ms\n", r.compile_secs * 1e3);
  if (r.status == measure::MeasureStatus::kOk) {
    double median = r.MedianSecs();
    auto [lo, hi] = std::minmax_element(r.run_secs.begin(), r.run_secs.end());
    fmt::print("median:    {} ({} repeats, {} .. {})\n", DurationText(median), r.run_secs.size(), DurationText(*lo),
               DurationText(*hi));
    if (flops > 0) {
      fmt::print("GFLOPS:    {:.2f}\n", static_cast<double>(flops) / median / 1e9);
    } else {
      fmt::print("GB/s:      {:.2f} (inputs and outputs; the program counts no FLOPs)\n",
                 static_cast<double>(ir::ParamBytes(p.workload.func)) / median / 1e9);
    }
  }
  if (!o.emit_llvm.empty()) fmt::print("LLVM IR:   {}\n", o.emit_llvm);
  if (r.status != measure::MeasureStatus::kOk) throw ProblemsReported();
}

}  // namespace

void AddRunCommand(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Compile, verify and time a workload (optionally scheduled)");
  AddProgramSourceOptions(cmd, &o->source);
  cmd->add_option("--repeat", o->repeat, "Timed repeats (the median is reported)")->capture_default_str();
  cmd->add_option("--number", o->number, "Runs per repeat (0: grow until a repeat lasts --min-repeat-ms)")
      ->capture_default_str();
  cmd->add_option("--min-repeat-ms", o->min_repeat_ms, "Minimum duration of one repeat (at most half of --timeout)")
      ->capture_default_str();
  cmd->add_flag("--flush-cache", o->flush_cache, "Flush the caches before each repeat");
  cmd->add_option("--timeout", o->timeout_s, "Seconds before a run counts as hung")->capture_default_str();
  cmd->add_option("--target", o->target, "Target string, e.g. \"llvm -mcpu=znver4 -num-cores=2\" (default: the host)");
  cmd->add_option("--emit-llvm", o->emit_llvm, "Write the optimized LLVM IR to this file");
  cmd->callback([o] { RunRun(*o); });
}

}  // namespace tunedb::cli
