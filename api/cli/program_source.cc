#include "api/cli/program_source.h"

#include <cctype>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "api/cli/commands.h"
#include "ir/json_text.h"
#include "ir/schedule/schedule.h"
#include "ir/schedule/script.h"
#include "ir/text_file.h"

namespace tunedb::cli {

std::string ReadTextFile(const std::string& path) {
  std::string text, why;
  if (!ir::ReadWholeFile(path, &text, &why)) throw UsageError("cannot read " + path + ": " + why);
  return text;
}

std::string ReadTokenFile(const std::string& path) {
  if (path.empty()) return "";
  std::string token = ReadTextFile(path);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) throw UsageError("the token file " + path + " is empty");
  return token;
}

void AddProgramSourceOptions(CLI::App* cmd, ProgramSource* source) {
  cmd->add_option("-w,--workload", source->workload,
                  "Built-in spec (matmul:M=512,N=512,K=512), a workload-language file or a JSON program")
      ->capture_default_str();
  auto* schedule = cmd->add_option("--schedule", source->schedule_file,
                                   "A schedule script (Python-like, TVM's method names) to apply");
  auto* trace = cmd->add_option("--trace", source->trace_file,
                                "A trace in TVM's JSON layout to replay (or tunedb best --format json's output)");
  schedule->excludes(trace);
  AddSeedOption(cmd, &source->seed, "Seed of the schedule's random sampling");
}

measure::Target TargetOption(const std::string& text) {
  if (text.empty()) return measure::Target::Host();
  try {
    return measure::Target::Parse(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

CLI::Option* AddSeedOption(CLI::App* cmd, std::uint64_t* seed, const std::string& description) {
  // CLI11 would wrap a negative seed and saturate one past 2^64 - 1.
  auto whole_64_bit = [](std::string& value) -> std::string {
    std::uint64_t parsed = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (error == std::errc() && end == value.data() + value.size() && !value.empty()) return "";
    return "a seed is a whole number from 0 to 2^64 - 1, not " + value;
  };
  return cmd->add_option("--seed", *seed, description)->check(CLI::Validator(whole_64_bit, "UINT"))->capture_default_str();
}

namespace {

// A trace file: the trace itself ([[instructions], [decisions]]), or a
// JSON object that carries one under "trace", as `tunedb best --format
// json` and `tunedb show --json` print it.
ir::Trace ReadTraceFile(const std::string& path) {
  std::string text = ReadTextFile(path);
  nlohmann::json doc = ir::ParseJsonOrDiscarded(text);
  if (doc.is_discarded()) return ir::Trace::FromJsonText(text);  // names where the JSON breaks
  if (!doc.is_object()) return ir::Trace::FromJson(doc);
  if (!doc.contains("trace")) {
    throw UsageError(path + ": a JSON object with no \"trace\" (give a trace, or the output of tunedb best "
                     "--format json)");
  }
  return ir::Trace::FromJson(doc["trace"]);
}

}  // namespace

ScheduledProgram LoadScheduledProgram(const ProgramSource& source) {
  ScheduledProgram p{ir::LoadWorkload(source.workload), {}, {}, {}};
  std::optional<ir::Schedule> sch;
  if (!source.schedule_file.empty()) {
    sch.emplace(p.workload.func, source.seed);
    ir::RunScheduleScript(*sch, ReadTextFile(source.schedule_file), source.schedule_file);
  } else if (!source.trace_file.empty()) {
    // The trace's errors name the instruction; this names the file, as a
    // schedule script's errors do.
    try {
      sch.emplace(ir::ReplayTrace(p.workload.func, ReadTraceFile(source.trace_file), source.seed));
    } catch (const ir::ScheduleError& e) {
      throw ir::ScheduleError(source.trace_file + ": " + e.what());
    }
  }
  if (sch) {
    p.program = sch->func();
    p.trace_json = sch->trace().ToJson().dump();
    p.trace_script = sch->trace().Simplified(false).AsScript();
  } else {
    p.program = p.workload.func;
  }
  return p;
}

}  // namespace tunedb::cli
