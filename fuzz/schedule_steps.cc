// Fuzz target: schedule primitives chosen by the input's bytes.
//
// The property tests (tests/ir/schedule/property_test.cc) apply random
// primitives from a seed; here the same scheduler draws its choices (the
// workload, the block, the primitive, its loops and factors) from the
// input, so coverage guidance steers towards sequences that reach new code.
// Promise: a primitive either applies or throws ScheduleError and leaves
// the schedule as it was; the schedule computes what the unscheduled
// program computes, and its trace replays to the same program.
#include <cstdint>

#include "fuzz/fuzz_check.h"
#include "fuzz/scheduled_by_input.h"

using namespace tunedb;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::optional<fuzz::ScheduledByInput> s = fuzz::ScheduleByInput(data, size);
  if (!s) return 0;
  fuzz::CheckSchedule(s->workload.func, s->schedule, s->workload.spec + " after " + s->steps);
  return 0;
}
