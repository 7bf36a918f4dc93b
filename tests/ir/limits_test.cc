#include "ir/limits.h"

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/flops.h"
#include "ir/stmt.h"
#include "ir/verify.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

void ExpectRefused(const std::string& spec, const std::string& message) {
  try {
    BuildWorkload(spec);
    FAIL() << "expected an error for " << spec;
  } catch (const IrError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(LimitsTest, BuffersAndBlocksOverTheLimitAreRefusedByName) {
  // 3e9 x 3e9 floats is 3.6e19 bytes: int64 would wrap it around.
  ExpectRefused("matmul:M=3000000000,N=3000000000,K=3000000000",
                "buffer 'A' of shape [3000000000, 3000000000] float32 is larger than tunedb's limit of 2^48 bytes "
                "(256 TiB)");
  // 2^23 cubed: every buffer is exactly 2^48 bytes, but the block iterates
  // 2^69 times, which would make the FLOP count negative.
  ExpectRefused("matmul:M=8388608,N=8388608,K=8388608", "block 'C' iterates more than tunedb's limit of 2^48 times");
}

TEST(LimitsTest, ProgramsUpToTheLimitBuildAndCountExactly) {
  const std::int64_t n = std::int64_t{1} << 40;
  Workload w = BuildWorkload("matmul:M=" + std::to_string(n) + ",N=1,K=1");
  EXPECT_EQ(CountFlops(w.func), 2 * n);
  EXPECT_NO_THROW(CheckProgramSize(w.func));
}

TEST(LimitsTest, AnAxisWiderThanInt32CountsInInt64) {
  Workload wide = BuildWorkload("matmul:M=4294967296,N=3,K=1");
  const BlockNode* c = CollectBlocks(wide.func).back();
  ASSERT_EQ(c->iter_vars.size(), 3u);
  EXPECT_EQ(c->iter_vars[0].var->dtype, DataType::kInt64);  // 2^32 values
  EXPECT_EQ(c->iter_vars[1].var->dtype, DataType::kInt32);
  EXPECT_NO_THROW(VerifyProgram(wide.func));
  // 2^31 values: 0 .. 2^31 - 1 fit.
  Workload edge = BuildWorkload("matmul:M=1,N=1,K=2147483648");
  EXPECT_EQ(CollectBlocks(edge.func).back()->iter_vars[2].var->dtype, DataType::kInt32);
}

TEST(LimitsTest, AnIntegerPartThatCanLeaveItsTypeIsFoundInnermostFirst) {
  Expr i = MakeVar("i"), j = MakeVar("j");
  VarRanges ranges = {{i.get(), 50000}, {j.get(), 3}};
  // i * i reaches 2499900001 before the product with 3 and the modulo.
  Expr square = i * i;
  auto escape = FindIntEscape(FloorMod(square * IntImm(DataType::kInt32, 3), IntImm(DataType::kInt32, 5)), ranges);
  ASSERT_TRUE(escape);
  EXPECT_EQ(escape->part, square);
  EXPECT_EQ(escape->range, "0..2499900001");
  // One past the top, and the most negative value divided by -1.
  escape = FindIntEscape(i + IntImm(DataType::kInt32, 2147433649), ranges);
  ASSERT_TRUE(escape);
  EXPECT_EQ(escape->range, "2147433649..2147483648");
  escape = FindIntEscape(FloorDiv(IntImm(DataType::kInt32, -2147483648), j - IntImm(DataType::kInt32, 1)), ranges);
  ASSERT_TRUE(escape);
  EXPECT_EQ(escape->range, "-2147483648..2147483648");

  // Inside int32 at its edges, or divided back into it before any other
  // operation sees it: bounds follow floor division and modulo.
  EXPECT_FALSE(FindIntEscape(i + IntImm(DataType::kInt32, 2147433648), ranges));
  EXPECT_FALSE(FindIntEscape(FloorDiv(i * IntImm(DataType::kInt32, 40000), IntImm(DataType::kInt32, 7)), ranges));
  EXPECT_FALSE(FindIntEscape(FloorMod(i * j, j + IntImm(DataType::kInt32, 1)), ranges));
  EXPECT_FALSE(FindIntEscape(Max(i, j) - Min(i, j) * IntImm(DataType::kInt32, 40000), ranges));
  // Computed in int64, or converted to int32 on request: wrapping is asked for.
  Expr wide = Cast(DataType::kInt64, i) * Cast(DataType::kInt64, i);
  EXPECT_FALSE(FindIntEscape(FloorMod(wide, IntImm(DataType::kInt64, 5)), ranges));
  EXPECT_FALSE(FindIntEscape(Cast(DataType::kInt32, wide) + IntImm(DataType::kInt32, 0), ranges));
  // A value computed from data wraps at run time, in compiled code as in the
  // interpreter.
  Buffer b = MakeBuffer("B", {8}, DataType::kInt32);
  EXPECT_FALSE(FindIntEscape(Load(b, {j}) * IntImm(DataType::kInt32, 1431655766), ranges));
  // A variable without a range is not judged.
  EXPECT_FALSE(FindIntEscape(MakeVar("n") * IntImm(DataType::kInt32, 1000000), ranges));

  // int64 the same, past 2^63; bounds past it are clamped just outside.
  Expr big = IntImm(DataType::kInt64, std::int64_t{1} << 61);
  escape = FindIntEscape(Cast(DataType::kInt64, j) * big * IntImm(DataType::kInt64, 4), ranges);
  ASSERT_TRUE(escape);
  EXPECT_EQ(escape->range, "0..past 2^63");
  EXPECT_FALSE(FindIntEscape(Cast(DataType::kInt64, j) * big, ranges));
  EXPECT_FALSE(FindIntEscape(Load(MakeBuffer("C", {8}, DataType::kInt64), {j}) * big * big, ranges));
}

}  // namespace
}  // namespace tunedb::ir
