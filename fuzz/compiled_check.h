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

// Runs `program` compiled on MakeArguments(reference, 1), its outputs
// poisoned first, and compares them with `expected` (the interpreter's
// arguments after running `reference` on the same inputs). A program that
// does not build, or that computes another result, is a finding.
inline void CheckCompiled(const ir::PrimFunc& reference, const std::vector<ir::NDArray>& expected,
                          const ir::PrimFunc& program, const std::string& where) {
  std::vector<ir::NDArray> args = ir::MakeArguments(reference, 1);
  for (int i : ir::OutputParams(reference)) args[i].Poison();
  std::vector<void*> pointers;
  for (ir::NDArray& a : args) pointers.push_back(a.data());
  measure::Kernel kernel;
  try {
    kernel = measure::SharedJit().Compile(measure::Lower(program));
  } catch (const std::exception& e) {
    Finding(where + ": an accepted program does not build: " + e.what());
  }
  kernel.fn(pointers.data());
  measure::SharedJit().Release(kernel);
  std::string why = measure::testing::CompareOutputs(reference, expected, args);
  if (!why.empty()) Finding(where + ": the compiled program computes another result: " + why);
}

}  // namespace tunedb::fuzz
