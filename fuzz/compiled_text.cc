// Fuzz target: a workload-language text, compiled unscheduled and run.
//
// What the parser accepts, code generation must compute as the reference
// interpreter does (ir/interpreter.h pins the semantics: float32 rounding
// after each operation, int32 that wraps, floordiv and floormod, a select
// that evaluates only its chosen branch). The program is lowered, compiled
// by LLVM for this CPU and run on the interpreter's random inputs, then
// again with integer inputs from all over their type; its outputs must be
// the interpreter's. Where the interpreter stops on the
// data (a division by zero, a cast out of range), the program is not run.
// A program that does not build is a finding too.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "fuzz/compiled_check.h"
#include "fuzz/fuzz_check.h"
#include "ir/interpreter.h"
#include "ir/mix.h"
#include "ir/workload_lang.h"

using namespace tunedb;

namespace {

// Gives each integer input values from all over its type; false when there
// is none.
bool WidenIntegers(const ir::PrimFunc& f, std::vector<ir::NDArray>& args) {
  std::vector<int> outputs = ir::OutputParams(f);
  std::uint64_t state = 0x243f6a8885a308d3ULL;
  bool any = false;
  for (std::size_t p = 0; p < args.size(); ++p) {
    ir::DataType t = f.params[p]->dtype;
    bool is_output = std::find(outputs.begin(), outputs.end(), static_cast<int>(p)) != outputs.end();
    if (is_output || (t != ir::DataType::kInt32 && t != ir::DataType::kInt64)) continue;
    any = true;
    for (std::int64_t i = 0; i < args[p].size(); ++i) {
      std::uint64_t z = ir::Mix64(state += ir::kGoldenGamma);  // splitmix64
      args[p].SetInt(i, t == ir::DataType::kInt32 ? static_cast<std::int32_t>(static_cast<std::uint32_t>(z))
                                                  : static_cast<std::int64_t>(z));
    }
  }
  return any;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::optional<ir::PrimFunc> parsed;
  try {
    parsed = ir::ParseWorkloadText(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.tw");
  } catch (const std::exception&) {
    return 0;  // workload_text checks how texts are refused
  }
  const ir::PrimFunc& f = *parsed;
  if (!fuzz::SmallEnoughToRun(f)) return 0;
  // Small integers first, which keep data-dependent indices in bounds; then
  // integers from all over their type, where products computed from data
  // wrap (floordiv(B[i] * 4, 4) is not B[i] then).
  for (bool wide : {false, true}) {
    std::vector<ir::NDArray> inputs = ir::MakeArguments(f, 1);
    if (wide && !WidenIntegers(f, inputs)) break;
    std::vector<ir::NDArray> expected = inputs;
    try {
      ir::Interpret(f, expected);
    } catch (const ir::IrError&) {
      continue;
    }
    fuzz::CheckCompiled(f, inputs, expected, f, wide ? "fuzz.tw (wide integers)" : "fuzz.tw");
  }
  return 0;
}
