// The check the compiling fuzz targets share (compiled_steps,
// compiled_text): a program lowered, compiled by LLVM for this CPU and run
// computes what the interpreter computed, as tunedb's measurement checks
// every candidate.
#pragma once

#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "ir/interpreter.h"
#include "measure/lower.h"
#include "tests/measure/test_util.h"

namespace tunedb::fuzz {

// Runs `program` compiled on `inputs` (the reference's arguments before
// it ran), its outputs poisoned first, and compares its outputs with
// `expected` (the interpreter's arguments after running `reference` on
// them): "" or how they differ. A program that does not build is a finding.
inline std::string CompiledDiffers(const ir::PrimFunc& reference, const std::vector<ir::NDArray>& inputs,
                                   const std::vector<ir::NDArray>& expected, const ir::PrimFunc& program,
                                   const std::string& where, const measure::CompileOptions& options) {
  std::vector<ir::NDArray> args = inputs;
  for (int i : ir::OutputParams(reference)) args[i].Poison();
  std::vector<void*> pointers;
  for (ir::NDArray& a : args) pointers.push_back(a.data());
  measure::Kernel kernel;
  try {
    kernel = measure::SharedJit().Compile(measure::Lower(program), options);
  } catch (const std::exception& e) {
    Finding(where + ": an accepted program does not build: " + e.what());
  }
  kernel.fn(pointers.data());
  measure::SharedJit().Release(kernel);
  return measure::testing::CompareOutputs(reference, expected, args);
}

// A program that does not build, or that computes another result, is a
// finding. Compiled code may fuse a float multiply and add into one FMA,
// which rounds once where the interpreter rounds twice, and a formula that
// cancels magnifies that past any tolerance (a sum of products that cancels
// to about zero, then rsqrt: NaN against 2368, found by compiled_text). So
// a difference counts only when the program compiled without contraction
// differs too.
inline void CheckCompiled(const ir::PrimFunc& reference, const std::vector<ir::NDArray>& inputs,
                          const std::vector<ir::NDArray>& expected, const ir::PrimFunc& program,
                          const std::string& where) {
  std::string why = CompiledDiffers(reference, inputs, expected, program, where, {});
  if (why.empty()) return;
  measure::CompileOptions rounded;
  rounded.contract_fma = false;
  std::string again = CompiledDiffers(reference, inputs, expected, program, where, rounded);
  if (!again.empty()) {
    Finding(where + ": the compiled program computes another result: " + why + "; without FMA: " + again);
  }
}

}  // namespace tunedb::fuzz
