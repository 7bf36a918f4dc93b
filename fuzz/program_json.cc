// Fuzz target: a program in tunedb's JSON form (ir/json.h), as `tunedb
// show --json` prints it and a workload file may hold it.
//
// Promise: the text is read, or refused with an IrError naming the JSON
// path of the problem. A program read passes VerifyProgram, prints, and
// writes back to JSON that reads as the same program.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "ir/flops.h"
#include "ir/json.h"
#include "ir/printer.h"
#include "ir/verify.h"

using namespace tunedb;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<ir::PrimFunc> read;
  try {
    read = ir::ProgramFromJson(text);
  } catch (const ir::IrError&) {
    return 0;
  } catch (const std::exception& e) {
    fuzz::Finding(std::string("not an IrError: ") + e.what());
  }
  try {
    ir::VerifyProgram(*read);
    ir::PrintProgram(*read);
    ir::CountFlops(*read);
    if (ir::StructuralHash(ir::ProgramFromJson(ir::ProgramToJson(*read))) != ir::StructuralHash(*read)) {
      fuzz::Finding("the program written back reads as another program");
    }
  } catch (const std::exception& e) {
    fuzz::Finding(std::string("a program read fails a check: ") + e.what());
  }
  return 0;
}
