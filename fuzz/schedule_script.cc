// Fuzz target: a schedule script (ir/schedule/script.h), as `tunedb run
// --schedule` and `tunedb tune --space` read it, run on a small matmul.
//
// Promise: the script runs, or is refused with a ScheduleError that starts
// with the file's name and the line. A script that runs computes what the
// unscheduled program computes, and its trace replays to the same program.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/small_workloads.h"
#include "ir/schedule/script.h"

using namespace tunedb;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const fuzz::SmallWorkload& w = fuzz::SmallWorkloads()[0];  // matmul: the block "C", loops i, j, k
  ir::Schedule sch(w.func, 0);
  try {
    ir::RunScheduleScript(sch, text, "s.py");
  } catch (const ir::ScheduleError& e) {
    if (std::string_view(e.what()).substr(0, 5) != "s.py:") fuzz::Finding(std::string("unplaced: ") + e.what());
    return 0;
  } catch (const std::exception& e) {
    fuzz::Finding(std::string("not a ScheduleError: ") + e.what());
  }
  fuzz::CheckSchedule(w.func, sch, w.spec);
  return 0;
}
