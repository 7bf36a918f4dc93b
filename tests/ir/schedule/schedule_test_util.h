// Helpers shared by the schedule tests: run a program and its scheduled
// version in the reference interpreter on the same random inputs.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/schedule/schedule.h"

namespace tunedb::ir::testing {

// Empty when `scheduled` computes what `reference` computes on inputs from
// `seed`; otherwise the reason.
inline std::string SameResult(const PrimFunc& reference, const PrimFunc& scheduled, std::uint64_t seed = 1) {
  std::vector<NDArray> expected = MakeArguments(reference, seed);
  std::vector<NDArray> actual = MakeArguments(scheduled, seed);
  try {
    Interpret(reference, expected);
    Interpret(scheduled, actual);
  } catch (const IrError& e) {
    return std::string("interpreter: ") + e.what();
  }
  for (int i : OutputParams(reference)) {
    std::string why;
    if (!AllClose(actual[i], expected[i], 1e-4, 1e-4, &why)) return "output " + std::to_string(i) + ": " + why;
  }
  return "";
}

#define EXPECT_SAME_RESULT(ref, sch)                                                        \
  do {                                                                                      \
    std::string why_ = ::tunedb::ir::testing::SameResult((ref), (sch).func());              \
    EXPECT_EQ(why_, "") << ::tunedb::ir::PrintProgram((sch).func()) << (sch).trace().AsScript(); \
  } while (0)

}  // namespace tunedb::ir::testing
