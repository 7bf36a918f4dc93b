#include "measure/workspace.h"

#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "ir/schedule/schedule.h"
#include "ir/workload_lang.h"
#include "measure/lower.h"
#include "tests/measure/test_util.h"

namespace tunedb::measure {
namespace {

TEST(WorkspaceTest, AFreedBlockServesTheNextRequestItFits) {
  const WorkspaceStats before = ThisThreadWorkspace();
  void* a = tunedb_workspace_alloc(3 << 20);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 64, 0u);
  tunedb_workspace_free(a);
  EXPECT_EQ(ThisThreadWorkspace().cached_bytes, before.cached_bytes + (3 << 20));
  // The same size again, and a little less: the cached block.
  void* b = tunedb_workspace_alloc(3 << 20);
  EXPECT_EQ(b, a);
  tunedb_workspace_free(b);
  void* c = tunedb_workspace_alloc((3 << 20) - 100);
  EXPECT_EQ(c, a);
  // Under half its size: a block of its own, not the 3 MiB one.
  void* d = tunedb_workspace_alloc(1 << 20);
  EXPECT_NE(d, a);
  EXPECT_EQ(ThisThreadWorkspace().system_allocations, before.system_allocations + 2);
  tunedb_workspace_free(c);
  tunedb_workspace_free(d);
}

TEST(WorkspaceTest, TheOldestBlocksAreReleasedPastTheCacheLimit) {
  // Blocks of 60% of the limit: the cache keeps the one freed last.
  // (Untouched, their pages cost no memory.)
  const std::int64_t big = kWorkspaceCacheBytes / 10 * 6;
  void* first = tunedb_workspace_alloc(big);
  void* second = tunedb_workspace_alloc(big);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  tunedb_workspace_free(first);
  tunedb_workspace_free(second);
  EXPECT_LE(ThisThreadWorkspace().cached_bytes, kWorkspaceCacheBytes);
  const std::int64_t allocations = ThisThreadWorkspace().system_allocations;
  void* again = tunedb_workspace_alloc(big);
  EXPECT_EQ(again, second);
  EXPECT_EQ(ThisThreadWorkspace().system_allocations, allocations);
  tunedb_workspace_free(again);
}

// Three intermediates of 2 MiB, each over what code generation keeps on
// the stack: the first run takes them from the system, the runs after it
// from the cache (glibc's malloc had handed such blocks back between runs,
// and a run faulted their pages in again: 4.9 ms a run against 0.33 ms at
// 1024 x 1024, bench/RESULTS.md, session 80).
TEST(WorkspaceTest, AKernelRunAgainTakesNoMemoryFromTheSystem) {
  ir::PrimFunc f = ir::ParseWorkloadText(R"(
input A: f32[512, 1024]
T[i, j] = A[i, j] * 2.0
U[i, j] = T[i, j] + 3.0
V[i, j] = U[i, j] * T[i, j]
B[i, j] = V[i, j] + U[i, j]
output B
)");
  ir::Schedule sch(f, 0);
  for (const char* stage : {"T", "U", "V", "B"}) sch.Vectorize(sch.GetLoops(sch.GetBlock(stage))[1]);
  Kernel k = SharedJit().Compile(Lower(sch.func()));
  std::vector<ir::NDArray> expected = ir::MakeArguments(f, 5);
  ir::Interpret(f, expected);
  std::vector<std::int64_t> asked, taken;
  for (int run = 0; run < 3; ++run) {
    std::vector<ir::NDArray> args = ir::MakeArguments(f, 5);
    args[1].Poison();
    std::vector<void*> pointers = {args[0].data(), args[1].data()};
    const WorkspaceStats before = ThisThreadWorkspace();
    k.fn(pointers.data());
    asked.push_back(ThisThreadWorkspace().requests - before.requests);
    taken.push_back(ThisThreadWorkspace().system_allocations - before.system_allocations);
    EXPECT_EQ(testing::CompareOutputs(f, expected, args), "") << "run " << run;
  }
  SharedJit().Release(k);
  EXPECT_EQ(asked, (std::vector<std::int64_t>{3, 3, 3}));
  EXPECT_LE(taken[0], 3);
  EXPECT_EQ(taken[1], 0);
  EXPECT_EQ(taken[2], 0);
}

}  // namespace
}  // namespace tunedb::measure
