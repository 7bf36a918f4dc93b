// Fuzz target: a workload-language text, compiled unscheduled and run.
//
// What the parser accepts, code generation must compute as the reference
// interpreter does (ir/interpreter.h pins the semantics: float32 rounding
// after each operation, int32 that wraps, floordiv and floormod, a select
// that evaluates only its chosen branch). The program is lowered, compiled
// by LLVM for this CPU and run on the interpreter's random inputs; its
// outputs must be the interpreter's. Where the interpreter stops on the
// data (a division by zero, a cast out of range), the program is not run.
// A program that does not build is a finding too.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "fuzz/compiled_check.h"
#include "fuzz/fuzz_check.h"
#include "ir/interpreter.h"
#include "ir/workload_lang.h"

using namespace tunedb;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::optional<ir::PrimFunc> parsed;
  try {
    parsed = ir::ParseWorkloadText(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.tw");
  } catch (const std::exception&) {
    return 0;  // workload_text checks how texts are refused
  }
  const ir::PrimFunc& f = *parsed;
  if (!fuzz::SmallEnoughToRun(f)) return 0;
  std::vector<ir::NDArray> expected = ir::MakeArguments(f, 1);
  try {
    ir::Interpret(f, expected);
  } catch (const ir::IrError&) {
    return 0;
  }
  fuzz::CheckCompiled(f, expected, f, "fuzz.tw");
  return 0;
}
