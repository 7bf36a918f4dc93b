#include "ir/schedule/schedule.h"

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/schedule/script.h"
#include "ir/structural.h"
#include "ir/workloads.h"
#include "tests/ir/schedule/schedule_test_util.h"

namespace tunedb::ir {
namespace {

PrimFunc Matmul(int m = 16, int n = 16, int k = 16) {
  return BuildWorkload("matmul:M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k)).func;
}

TEST(ScheduleTest, TheLectureSchedule) {
  PrimFunc f = Matmul();
  Schedule sch(f, 0);
  BlockRV c = sch.GetBlock("C");
  std::vector<LoopRV> loops = sch.GetLoops(c);
  ASSERT_EQ(loops.size(), 3u);
  std::vector<LoopRV> j = sch.Split(loops[1], {std::monostate{}, std::int64_t{4}});
  sch.Reorder({loops[0], j[0], loops[2], j[1]});
  BlockRV init = sch.DecomposeReduction(c, j[0]);
  EXPECT_EQ(sch.Get(init).name, "C_init");
  EXPECT_EQ(sch.Get(c).name, "C_update");
  EXPECT_SAME_RESULT(f, sch);
  std::string text = PrintProgram(sch.func());
  EXPECT_NE(text.find("for j_0_init, j_1_init in T.grid(4, 4):"), std::string::npos) << text;
  EXPECT_NE(text.find("for j_0, k, j_1 in T.grid(4, 16, 4):"), std::string::npos) << text;
  EXPECT_NE(text.find("v_j = T.axis.spatial(16, j_0 * 4 + j_1)"), std::string::npos) << text;
  EXPECT_EQ(sch.trace().AsScript(),
            "b0 = sch.get_block(name=\"C\", func_name=\"main\")\n"
            "l1, l2, l3 = sch.get_loops(block=b0)\n"
            "l4, l5 = sch.split(loop=l2, factors=[None, 4], preserve_unit_iters=True, disable_predication=False)\n"
            "sch.reorder(l1, l4, l3, l5)\n"
            "b6 = sch.decompose_reduction(block=b0, loop=l4)\n");
}

}  // namespace
}  // namespace tunedb::ir
