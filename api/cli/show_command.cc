// `tunedb show`: the program of a workload (optionally scheduled by a
// schedule script or a stored trace), its workload hash and FLOP count.
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/cli/commands.h"
#include "ir/flops.h"
#include "ir/json.h"
#include "ir/printer.h"
#include "ir/schedule/schedule.h"
#include "ir/schedule/script.h"
#include "ir/structural.h"
#include "ir/workloads.h"

namespace tunedb::cli {
namespace {

struct ShowOptions {
  std::string workload = "matmul";
  std::string schedule_file;
  std::string trace_file;
  std::uint64_t seed = 0;
  bool json = false;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void RunShow(const ShowOptions& options) {
  ir::Workload w = ir::LoadWorkload(options.workload);
  std::string hash = ir::WorkloadHash(w.func);
  std::int64_t flops = ir::CountFlops(w.func);
  std::optional<ir::Schedule> sch;
  if (!options.schedule_file.empty()) {
    sch.emplace(w.func, options.seed);
    ir::RunScheduleScript(*sch, ReadFile(options.schedule_file), options.schedule_file);
  } else if (!options.trace_file.empty()) {
    ir::Trace trace = ir::Trace::FromJsonText(ReadFile(options.trace_file));
    sch.emplace(ir::ReplayTrace(w.func, trace, options.seed));
  }
  const ir::PrimFunc& program = sch ? sch->func() : w.func;
  if (options.json) {
    nlohmann::json out = {{"workload", w.spec},
                          {"name", w.name},
                          {"hash", hash},
                          {"flops", flops},
                          {"program", nlohmann::json::parse(ir::ProgramToJson(program))}};
    if (sch) out["trace"] = sch->trace().ToJson();
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("# workload: {}\n# hash:     {}\n# flops:    {}\n\n{}", w.spec, hash, flops, ir::PrintProgram(program));
  if (sch) fmt::print("\n# trace:\n{}", sch->trace().AsScript());
}

}  // namespace

void AddShowCommand(CLI::App& app) {
  auto options = std::make_shared<ShowOptions>();
  CLI::App* cmd = app.add_subcommand("show", "Print a workload's program (optionally scheduled), hash and FLOP count");
  cmd->add_option("-w,--workload", options->workload,
                  "Built-in spec (matmul:M=512,N=512,K=512) or a workload-language file")
      ->capture_default_str();
  auto* schedule = cmd->add_option("--schedule", options->schedule_file,
                                   "A schedule script (Python-like, TVM's method names) to apply");
  auto* trace = cmd->add_option("--trace", options->trace_file, "A trace in TVM's JSON layout to replay");
  schedule->excludes(trace);
  cmd->add_option("--seed", options->seed, "Seed of the schedule's random sampling")->capture_default_str();
  cmd->add_flag("--json", options->json, "Print JSON: the program in tunedb's exact form and the trace in TVM's");
  cmd->callback([options] { RunShow(*options); });
}

}  // namespace tunedb::cli
