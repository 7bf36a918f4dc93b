// Fuzz target: schedule primitives chosen by the input's bytes, compiled
// and run.
//
// The schedule of schedule_steps.cc, lowered and compiled by LLVM for this
// CPU (measure/), then run on random inputs: its outputs must be the
// interpreter's for the unscheduled program, as tunedb's measurement
// checks every candidate. A schedule that the IR accepts and that does not
// build, or lowering that throws, is a finding too: the property tests
// (tests/measure/codegen_test.cc) hold every such schedule to build.
#include <cstdint>
#include <vector>

#include "fuzz/compiled_check.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/scheduled_by_input.h"

using namespace tunedb;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::optional<fuzz::ScheduledByInput> s = fuzz::ScheduleByInput(data, size);
  if (!s) return 0;
  const ir::PrimFunc& workload = s->workload.func;
  const std::string where = s->workload.spec + " after " + s->steps;
  if (ir::testing::LargestBufferBytes(s->schedule.func()) > fuzz::kMaxInterpretedBytes) return 0;
  const std::vector<ir::NDArray> inputs = ir::MakeArguments(workload, 1);
  std::vector<ir::NDArray> expected = inputs;
  ir::Interpret(workload, expected);
  fuzz::CheckCompiled(workload, inputs, expected, s->schedule.func(), where);
  return 0;
}
