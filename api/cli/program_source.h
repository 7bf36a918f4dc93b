// The options several commands share to name a program: a workload, and
// optionally a schedule script or a trace to apply to it.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "ir/stmt.h"
#include "ir/workloads.h"

namespace tunedb::cli {

struct ProgramSource {
  std::string workload = "matmul";
  std::string schedule_file;
  std::string trace_file;
  std::uint64_t seed = 0;
};

// --workload, --schedule, --trace, --seed.
void AddProgramSourceOptions(CLI::App* cmd, ProgramSource* source);

struct ScheduledProgram {
  ir::Workload workload;
  ir::PrimFunc program;     // the workload, scheduled when a schedule or trace was given
  std::string trace_json;   // empty without a schedule
  std::string trace_script;  // without the lookups nothing uses, as `best` and `tune` print it
};

ScheduledProgram LoadScheduledProgram(const ProgramSource& source);

}  // namespace tunedb::cli
