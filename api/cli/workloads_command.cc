// `tunedb workloads`: the built-in workload library with parameters and
// defaults, so users can write specs without reading the source.
#include <fmt/core.h>

#include "api/cli/commands.h"
#include "ir/workloads.h"

namespace tunedb::cli {

void AddWorkloadsCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("workloads", "List the built-in workloads and their parameters");
  cmd->callback([] {
    fmt::print("Built-in workloads (spec: NAME:P=V,...; parameters left out take the default):\n");
    for (const ir::WorkloadDef& def : ir::BuiltinWorkloads()) {
      fmt::print("\n  {}\n      {}\n", def.name, def.description);
      for (const ir::WorkloadParam& p : def.params) {
        fmt::print("      {:<8} default {:<6} {}\n", p.name, p.default_value, p.meaning);
      }
    }
    fmt::print("\nExample: tunedb show --workload matmul:M=128,N=128,K=128\n"
               "A workload may also be a file in the workload language (see docs/WORKLOADS.md).\n");
  });
}

}  // namespace tunedb::cli
