// `tunedb show`: the program of a workload (optionally scheduled by a
// schedule script or a stored trace), its workload hash and FLOP count.
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/cli/commands.h"
#include "api/cli/program_source.h"
#include "ir/flops.h"
#include "ir/json.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "ir/workloads.h"
#include "measure/lower.h"
#include "measure/target.h"
#include "measure/versioning.h"
#include "search/split.h"

namespace tunedb::cli {
namespace {

struct ShowOptions {
  ProgramSource source;
  bool json = false;
  bool lowered = false;
};

void RunShow(const ShowOptions& options) {
  ScheduledProgram p = LoadScheduledProgram(options.source);
  std::string hash = ir::WorkloadHash(p.workload.func);
  std::int64_t flops = ir::CountFlops(p.workload.func);
  bool scheduled = !p.trace_json.empty();
  // The tasks `tune --split` makes of it, when it has several, and
  // whether `tune` splits it unasked (search/split.h).
  std::vector<std::string> parts;
  for (const ir::Workload& part : ir::WorkloadParts(p.workload)) parts.push_back(part.spec);
  const std::vector<std::string> compute_bound = search::ComputeBoundParts(p.workload);
  const bool splits = !search::PartsToTuneFirst(p.workload, search::Split::kAuto).empty();
  if (options.json) {
    nlohmann::json out = {{"workload", p.workload.spec},
                          {"name", p.workload.name},
                          {"hash", hash},
                          {"flops", flops},
                          {"parts", parts},
                          {"compute_bound_parts", compute_bound},
                          {"split_by_default", splits},
                          {"program", nlohmann::json::parse(ir::ProgramToJson(p.program))}};
    if (scheduled) out["trace"] = nlohmann::json::parse(p.trace_json);
    fmt::print("{}\n", out.dump(2));
    return;
  }
  // What code generation compiles: lowered, its bounds checks versioned.
  const ir::PrimFunc shown = options.lowered ? measure::VersionBoundsChecks(measure::Lower(p.program), measure::Target::Host().VectorBits()) : p.program;
  std::string parts_line;
  if (!parts.empty()) {
    parts_line = fmt::format("\n# parts:    {} (compute-bound: {}; tune splits it{})", fmt::join(parts, " "),
                             compute_bound.empty() ? "none" : fmt::format("{}", fmt::join(compute_bound, ", ")),
                             splits ? "" : " only with --split");
  }
  fmt::print("# workload: {}\n# hash:     {}\n# flops:    {}{}\n\n{}", p.workload.spec, hash, flops, parts_line,
             ir::PrintProgram(shown));
  if (scheduled) fmt::print("\n# trace:\n{}", p.trace_script);
}

}  // namespace

void AddShowCommand(CLI::App& app) {
  auto options = std::make_shared<ShowOptions>();
  CLI::App* cmd = app.add_subcommand("show", "Print a workload's program (optionally scheduled), hash and FLOP count");
  AddProgramSourceOptions(cmd, &options->source);
  cmd->add_flag("--json", options->json, "Print JSON: the program in tunedb's exact form and the trace in TVM's");
  cmd->add_flag("--lowered", options->lowered,
                "Print the program as code generation compiles it: lowered (flat buffers, compacted caches) and "
                "its bounds checks versioned");
  cmd->callback([options] { RunShow(*options); });
}

}  // namespace tunedb::cli
