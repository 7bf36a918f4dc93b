// Helpers shared by the schedule tests: run a program and its scheduled
// version in the reference interpreter on the same random inputs.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/schedule/schedule.h"
#include "tests/ir/schedule/same_result.h"

namespace tunedb::ir::testing {

// reduce_sum:M=6,N=16 with rows visited 0, 2, 4, 1, 3, 5 and two
// write-backs: the first split over its one-element region by 4, so it
// writes in the first of four iterations, and the second moved under that
// split. A random schedule like it gave NaN (schedule_test.cc, BlockMotion;
// lower_test.cc).
inline const char* kWriteBackUnderASplitOfOne = R"(
b0 = sch.get_block("A_red")
i, k = sch.get_loops(b0)
i0, i1 = sch.split(i, factors=[3, 2])
sch.reorder(i1, i0, k)
wb = sch.cache_write(b0, 0, "local")
sch.reverse_compute_at(wb, i0, preserve_unit_loops=True)
a0, a1, a2 = sch.get_loops(wb)
x0, x1 = sch.split(a2, factors=[None, 4])
wb2 = sch.cache_write(wb, 0, "local")
sch.reverse_compute_at(wb2, x1, preserve_unit_loops=True)
)";

#define EXPECT_SAME_RESULT(ref, sch)                                                        \
  do {                                                                                      \
    std::string why_ = ::tunedb::ir::testing::SameResult((ref), (sch).func());              \
    EXPECT_EQ(why_, "") << ::tunedb::ir::PrintProgram((sch).func()) << (sch).trace().AsScript(); \
  } while (0)

}  // namespace tunedb::ir::testing
