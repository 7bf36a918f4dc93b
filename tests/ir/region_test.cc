#include "ir/region.h"

#include <gtest/gtest.h>

#include "ir/printer.h"

namespace tunedb::ir {
namespace {

Expr C(std::int64_t v) { return IntImm(DataType::kInt32, v); }

TEST(RegionTest, AffineIndexOverInnerLoops) {
  Expr i0 = MakeVar("i0"), i1 = MakeVar("i1"), k = MakeVar("k");
  VarRanges ranges{{i0.get(), 4}, {i1.get(), 8}, {k.get(), 3}};
  // i0 fixed; i1 and k vary: [i0*8, i0*8 + 7 + 2] -> extent 10.
  auto r = AccessRegion(i0 * C(8) + i1 + k, {i1.get(), k.get()}, ranges);
  ASSERT_TRUE(r);
  EXPECT_EQ(PrintExpr(r->min), "i0 * 8");
  EXPECT_EQ(r->extent, 10);
  // A term mixing fixed and free variables is not affine...
  EXPECT_FALSE(AccessRegion(FloorDiv(i0 * C(3) + i1, C(4)), {i1.get()}, ranges));
  // ...unless simplification separates them: (i0 * 8 + i1) // 16 is i0 // 2.
  auto fixed = AccessRegion(FloorDiv(i0 * C(8) + i1, C(16)), {i1.get()}, ranges);
  ASSERT_TRUE(fixed);
  EXPECT_EQ(PrintExpr(fixed->min), "i0 // 2");
  EXPECT_EQ(fixed->extent, 1);
}

TEST(RegionTest, UnionOfShiftedAccesses) {
  Expr i = MakeVar("i"), j = MakeVar("j");
  VarRanges ranges{{i.get(), 10}, {j.get(), 4}};
  std::vector<RegionAccess> accesses = {{{i * C(4) + j}, {j.get()}}, {{i * C(4) + j + C(2)}, {j.get()}}};
  auto u = UnionRegion(accesses, 1, ranges);
  ASSERT_TRUE(u[0]);
  EXPECT_EQ(PrintExpr(u[0]->min), "i * 4");
  EXPECT_EQ(u[0]->extent, 6);
  // Minimums that differ by a non-constant: unknown.
  accesses.push_back({{i}, {}});
  EXPECT_FALSE(UnionRegion(accesses, 1, ranges)[0]);
}

}  // namespace
}  // namespace tunedb::ir
