// `tunedb space`: the design space `tunedb tune` would search for a
// workload on a target, one trace per design with the space's own
// decisions, and optionally each design's program as the search's first
// sample of it would be (replayed and postprocessed). What a user reads to
// see which schedules the rules consider, and what a change to the rules
// did to a workload's space.
#include <fmt/core.h>

#include "api/cli/commands.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "ir/workloads.h"
#include "measure/lower.h"
#include "measure/target.h"
#include "measure/versioning.h"
#include "search/space.h"

namespace tunedb::cli {
namespace {

struct SpaceCliOptions {
  std::string workload = "matmul";
  std::string target;
  std::string space = "default";
  bool programs = false;
  bool lowered = false;
};

void RunSpace(const SpaceCliOptions& o) {
  ir::Workload workload = ir::LoadWorkload(o.workload);
  measure::Target target = TargetOption(o.target);
  // The same spaces as the tuner's (search/tuner.cc).
  search::SpaceOptions options = search::SpaceOptionsFor(target.num_cores, target.VectorBits());
  std::vector<ir::Trace> designs = o.space == "default"
                                       ? search::DefaultDesignSpace(workload.func, options)
                                       : search::ScriptDesignSpace(workload.func, ReadTextFile(o.space), o.space);
  fmt::print("# workload: {}\n# hash:     {}\n# target:   {}\n# space:    {}, {} design{}\n", workload.spec,
             ir::WorkloadHash(workload.func), target.ToString(), o.space, designs.size(),
             designs.size() == 1 ? "" : "s");
  for (std::size_t d = 0; d < designs.size(); ++d) {
    // Without the lookups nothing uses, as `show` and `tune` print traces.
    fmt::print("\n## design {} of {}\n{}", d + 1, designs.size(), designs[d].Simplified(false).AsScript());
    if (!o.programs && !o.lowered) continue;
    // Seed 0 draws whatever the design leaves undecided, as `show --seed`.
    std::optional<search::Candidate> c = search::Realize(workload.func, designs[d], 0);
    if (!c) {
      fmt::print("# its own decisions are refused by the postprocessors\n");
      continue;
    }
    const ir::PrimFunc shown =
        o.lowered ? measure::VersionBoundsChecks(measure::Lower(c->program), target.VectorBits()) : c->program;
    fmt::print("# its program{}:\n{}", o.lowered ? ", lowered" : "", ir::PrintProgram(shown));
  }
}

}  // namespace

void AddSpaceCommand(CLI::App& app) {
  auto o = std::make_shared<SpaceCliOptions>();
  CLI::App* cmd = app.add_subcommand("space", "Print the design space tune searches for a workload and target");
  cmd->add_option("-w,--workload", o->workload,
                  "Built-in spec (matmul:M=512,N=512,K=512), a workload-language file or a JSON program")
      ->capture_default_str();
  cmd->add_option("--target", o->target, "Target string (default: the host)");
  cmd->add_option("--space", o->space, "default, or a stochastic schedule script")->capture_default_str();
  cmd->add_flag("--programs", o->programs,
                "After each design, its program with the design's own decisions, postprocessed");
  cmd->add_flag("--lowered", o->lowered, "The same, lowered as code generation compiles it");
  cmd->callback([o] { RunSpace(*o); });
}

}  // namespace tunedb::cli
