// Helpers shared by the schedule tests: run a program and its scheduled
// version in the reference interpreter on the same random inputs.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/schedule/schedule.h"
#include "ir/workload_lang.h"
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

// A dot product of 1009 floats reduced by `reduction` ("sum", "max"), and
// a script that rfactors it into 2 jobs and then 16 vector lanes: 1009 is
// prime, so the split divides nothing and each rfactor is guarded. Where
// rfactor over an imperfect split is tested (schedule_test.cc,
// codegen_test.cc).
inline PrimFunc PrimeLengthDot(const std::string& reduction) {
  return ParseWorkloadText("input A: f32[1009]\ninput B: f32[1009]\nS[] = " + reduction + "(i in 1009) A[i] * B[i]\n");
}
inline const char* kJobsThenLanes = R"(
s = sch.get_block("S")
i, = sch.get_loops(s)
p, r, l = sch.split(i, factors=[2, None, 16])
jobs = sch.rfactor(p, factor_axis=0)
p1, r1, l1 = sch.get_loops(jobs)
lanes = sch.rfactor(l1, factor_axis=1)
)";

#define EXPECT_SAME_RESULT(ref, sch)                                                        \
  do {                                                                                      \
    std::string why_ = ::tunedb::ir::testing::SameResult((ref), (sch).func());              \
    EXPECT_EQ(why_, "") << ::tunedb::ir::PrintProgram((sch).func()) << (sch).trace().AsScript(); \
  } while (0)

}  // namespace tunedb::ir::testing
