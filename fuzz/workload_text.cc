// Fuzz target: a workload-language text (ir/workload_lang.h).
//
// Promise: the text is parsed, or refused with a WorkloadParseError whose
// message starts with the file's name and the line. A parsed program
// passes VerifyProgram, prints, round-trips through its JSON form to the
// same program, and runs in the reference interpreter, where only what the
// language leaves to run time may stop it: a division by zero, a cast out
// of range, and a read outside its tensor that a condition guards or whose
// index is not a sum of indices times constants (A[B[i]], A[i * i];
// docs/WORKLOADS.md). An unguarded affine read outside its tensor is the
// parser's to refuse; tests/ir/workload_lang_test.cc holds it to that.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "ir/flops.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "ir/printer.h"
#include "ir/verify.h"
#include "ir/workload_lang.h"

namespace {

using namespace tunedb;

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<ir::PrimFunc> parsed;
  try {
    parsed = ir::ParseWorkloadText(text, "fuzz.tw");
  } catch (const ir::WorkloadParseError& e) {
    if (!StartsWith(e.what(), "fuzz.tw:")) fuzz::Finding(std::string("a parse error without its place: ") + e.what());
    return 0;
  } catch (const std::exception& e) {
    fuzz::Finding(std::string("not a WorkloadParseError: ") + e.what());
  }
  const ir::PrimFunc& f = *parsed;
  try {
    ir::VerifyProgram(f);
    ir::PrintProgram(f);
    ir::CountFlops(f);
    ir::ParamBytes(f);
    if (ir::StructuralHash(ir::ProgramFromJson(ir::ProgramToJson(f))) != ir::StructuralHash(f)) {
      fuzz::Finding("the program's JSON form reads back as another program");
    }
  } catch (const std::exception& e) {
    fuzz::Finding(std::string("a parsed program fails a check: ") + e.what());
  }
  if (!fuzz::SmallEnoughToRun(f)) return 0;
  std::vector<ir::NDArray> args = ir::MakeArguments(f, 1);
  try {
    ir::Interpret(f, args);
  } catch (const ir::IrError& e) {
    const std::string what = e.what();
    if (what.find("division by zero") == std::string::npos && what.find("cast of") == std::string::npos &&
        what.find("out-of-bounds access") == std::string::npos) {
      fuzz::Finding("a parsed program fails in the interpreter: " + what);
    }
  }
  return 0;
}
