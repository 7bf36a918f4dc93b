// Fuzz target: a trace in TVM MetaSchedule's JSON layout (ir/schedule/
// trace.h), as the database stores it and `tunedb run --trace` reads it.
//
// Promise: on each small workload, the trace replays, or is refused with a
// ScheduleError that starts "trace" and names the instruction. A trace
// that replays computes what the unscheduled program computes, and the
// trace of the replayed schedule replays to the same program again.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/small_workloads.h"

using namespace tunedb;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<ir::Trace> trace;
  try {
    trace = ir::Trace::FromJsonText(text);
  } catch (const ir::ScheduleError& e) {
    if (std::string_view(e.what()).substr(0, 5) != "trace") fuzz::Finding(std::string("unplaced: ") + e.what());
    return 0;
  } catch (const std::exception& e) {
    fuzz::Finding(std::string("not a ScheduleError: ") + e.what());
  }
  // A trace names its blocks, so it replays onto one kind of program at
  // most; the others refuse it at its first lookup.
  for (const fuzz::SmallWorkload& w : fuzz::SmallWorkloads()) {
    std::optional<ir::Schedule> sch;
    try {
      sch = ir::ReplayTrace(w.func, *trace, 0);
    } catch (const ir::ScheduleError& e) {
      if (std::string_view(e.what()).substr(0, 5) != "trace") fuzz::Finding(w.spec + ": unplaced: " + e.what());
      continue;
    } catch (const std::exception& e) {
      fuzz::Finding(w.spec + ": not a ScheduleError: " + e.what());
    }
    fuzz::CheckSchedule(w.func, *sch, w.spec);
  }
  return 0;
}
