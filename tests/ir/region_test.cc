#include "ir/region.h"

#include <gtest/gtest.h>

#include "ir/printer.h"

namespace tunedb::ir {
namespace {

Expr C(std::int64_t v) { return IntImm(DataType::kInt32, v); }
Expr Lt(const Expr& a, const Expr& b) { return Binary(ExprKind::kLt, a, b); }
Expr Ge(const Expr& a, const Expr& b) { return Binary(ExprKind::kGe, a, b); }

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

TEST(RegionTest, TouchesWholeRegionSeesStridesGapsAndDiagonals) {
  Expr i = MakeVar("i"), i0 = MakeVar("i0"), i1 = MakeVar("i1"), j = MakeVar("j");
  VarRanges ranges{{i.get(), 4}, {i0.get(), 2}, {i1.get(), 4}, {j.get(), 4}};
  // Rows i0 * 4 + i1: all of [0, 8). Rows i0 * 4 + i with i held and i0
  // running: i and i + 4, not the three between.
  EXPECT_TRUE(TouchesWholeRegion({{{i0 * C(4) + i1}, {i0.get(), i1.get()}}}, ranges));
  EXPECT_FALSE(TouchesWholeRegion({{{i0 * C(4) + i}, {i0.get()}}}, ranges));
  // A stride the smaller ones reach (i1 * 2 + i0 over [0, 8)) is no gap.
  EXPECT_TRUE(TouchesWholeRegion({{{i1 * C(2) + i0}, {i0.get(), i1.get()}}}, ranges));
  // [j, j]: 4 of the 16 elements of its box.
  EXPECT_FALSE(TouchesWholeRegion({{{j, j}, {j.get()}}}, ranges));
  // floormod(j + 2, 4) over j in [0, 4) is every value of [0, 4); over a
  // wrap of part of a period (j in [0, 4) into 8: j + 6 -> 6, 7, 0, 1) not.
  EXPECT_TRUE(TouchesWholeRegion({{{FloorMod(j + C(2), C(4))}, {j.get()}}}, ranges));
  EXPECT_FALSE(TouchesWholeRegion({{{FloorMod(j + C(6), C(8))}, {j.get()}}}, ranges));
  // Two writes that meet ([0, 4) and [4, 8)) or leave [4, 6) between them.
  EXPECT_TRUE(TouchesWholeRegion({{{j}, {j.get()}}, {{j + C(4)}, {j.get()}}}, ranges));
  EXPECT_FALSE(TouchesWholeRegion({{{j}, {j.get()}}, {{j + C(6)}, {j.get()}}}, ranges));
}

TEST(RegionTest, HoldsForSomeAndHoldsInBounds) {
  Expr i0 = MakeVar("i0"), i1 = MakeVar("i1");
  VarRanges ranges{{i0.get(), 6}, {i1.get(), 2}};
  // i0 * 2 + i1 < 10 holds for some i1 exactly where i0 * 2 < 10.
  auto some = HoldsForSome(Lt(i0 * C(2) + i1, C(10)), {i0.get()}, ranges);
  ASSERT_TRUE(some);
  EXPECT_EQ(PrintExpr(*some), "i0 * 2 - 10 < 0");
  // >= takes the largest value of the others: i0 * 2 + i1 >= 3 for some i1
  // where i0 * 2 + 1 >= 3.
  auto at_least = HoldsForSome(Ge(i0 * C(2) + i1, C(3)), {i0.get()}, ranges);
  ASSERT_TRUE(at_least);
  EXPECT_EQ(PrintExpr(*at_least), "i0 * 2 - 3 >= -1");
  EXPECT_FALSE(HoldsForSome(Binary(ExprKind::kEq, i0 * C(2) + i1, C(3)), {i0.get()}, ranges));
  // Rows i0 * 2 + i1 - 1 of a buffer of 10: `i0 * 2 + i1 - 1 >= 0` and
  // `i0 * 2 + i1 < 11` skip only rows outside it; `< 10` skips row 9.
  Expr row = i0 * C(2) + i1 - C(1);
  EXPECT_TRUE(HoldsInBounds(Ge(row, C(0)), row, 10, ranges));
  EXPECT_TRUE(HoldsInBounds(Lt(i0 * C(2) + i1, C(11)), row, 10, ranges));
  EXPECT_FALSE(HoldsInBounds(Lt(i0 * C(2) + i1, C(10)), row, 10, ranges));
}

}  // namespace
}  // namespace tunedb::ir
