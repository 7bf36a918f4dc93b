// `tunedb show`: the program of a workload, its workload hash and FLOP count.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/cli/commands.h"
#include "ir/flops.h"
#include "ir/json.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "ir/workloads.h"

namespace tunedb::cli {
namespace {

struct ShowOptions {
  std::string workload = "matmul";
  bool json = false;
};

void RunShow(const ShowOptions& options) {
  ir::Workload w = ir::LoadWorkload(options.workload);
  std::string hash = ir::WorkloadHash(w.func);
  std::int64_t flops = ir::CountFlops(w.func);
  if (options.json) {
    nlohmann::json out = {{"workload", w.spec},
                          {"name", w.name},
                          {"hash", hash},
                          {"flops", flops},
                          {"program", nlohmann::json::parse(ir::ProgramToJson(w.func))}};
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("# workload: {}\n# hash:     {}\n# flops:    {}\n\n{}", w.spec, hash, flops,
             ir::PrintProgram(w.func));
}

}  // namespace

void AddShowCommand(CLI::App& app) {
  auto options = std::make_shared<ShowOptions>();
  CLI::App* cmd = app.add_subcommand("show", "Print a workload's program, workload hash and FLOP count");
  cmd->add_option("-w,--workload", options->workload,
                  "Built-in spec (matmul:M=512,N=512,K=512) or a workload-language file")
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "Print JSON (program in tunedb's exact JSON form)");
  cmd->callback([options] { RunShow(*options); });
}

}  // namespace tunedb::cli
