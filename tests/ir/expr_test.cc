#include "ir/expr.h"

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"

namespace tunedb::ir {
namespace {

TEST(ExprTest, BinaryRequiresMatchingTypes) {
  Expr i = MakeVar("i");
  Expr x = FloatImm(DataType::kFloat32, 1.5);
  EXPECT_THROW(i + x, IrError);
  EXPECT_THROW(Binary(ExprKind::kDiv, i, i), IrError);            // int division must be floordiv
  EXPECT_THROW(FloorDiv(x, x), IrError);                          // floordiv needs ints
  EXPECT_THROW(Binary(ExprKind::kAnd, i, i), IrError);            // and needs bool
  EXPECT_EQ(Binary(ExprKind::kLt, i, i)->dtype, DataType::kBool);
}

TEST(ExprTest, NumbersTakeTheTypeOfTheExpression) {
  Expr x = MakeVar("x", DataType::kFloat64);
  Expr e = x * 2.0;
  EXPECT_EQ(e->dtype, DataType::kFloat64);
  EXPECT_EQ(e->operands[1]->kind, ExprKind::kFloatImm);
  Expr i = MakeVar("i");
  Expr j = i + 3;
  EXPECT_EQ(j->operands[1]->kind, ExprKind::kIntImm);
  EXPECT_EQ(j->operands[1]->int_value, 3);
}

TEST(ExprTest, Float32ConstantsHoldFloat32Values) {
  Expr c = FloatImm(DataType::kFloat32, 0.1);
  EXPECT_EQ(c->float_value, static_cast<double>(0.1f));
}

TEST(ExprTest, Int32ConstantsWrap) {
  EXPECT_EQ(IntImm(DataType::kInt32, (std::int64_t{1} << 32) + 5)->int_value, 5);
}

TEST(ExprTest, LoadChecksRankAndIndexType) {
  Buffer a = MakeBuffer("A", {4, 4});
  EXPECT_THROW(Load(a, {MakeVar("i")}), IrError);
  EXPECT_THROW(Load(a, {MakeVar("i"), FloatImm(DataType::kFloat32, 0)}), IrError);
  EXPECT_EQ(Load(a, {MakeVar("i"), MakeVar("j")})->dtype, DataType::kFloat32);
}

TEST(ExprTest, CallChecksNameArityAndTypes) {
  Expr x = FloatImm(DataType::kFloat32, 1);
  EXPECT_THROW(Call("frobnicate", {x}), IrError);
  EXPECT_THROW(Call("exp", {x, x}), IrError);
  EXPECT_THROW(Call("exp", {IntImm(DataType::kInt32, 1)}), IrError);
  EXPECT_EQ(Call("pow", {x, x})->dtype, DataType::kFloat32);
}

TEST(ExprTest, SelectNeedsBoolConditionAndEqualBranches) {
  Expr i = MakeVar("i");
  Expr f = FloatImm(DataType::kFloat32, 0);
  EXPECT_THROW(Select(i, f, f), IrError);
  EXPECT_THROW(Select(i < 3, f, i), IrError);
  EXPECT_EQ(Select(i < 3, f, f)->dtype, DataType::kFloat32);
}

TEST(ExprTest, SubstituteReplacesOnlyMappedVariables) {
  Expr i = MakeVar("i"), j = MakeVar("j");
  Expr e = i * 4 + j;
  VarMap map{{i.get(), MakeVar("k") + 1}};
  EXPECT_EQ(PrintExpr(Substitute(e, map)), "(k + 1) * 4 + j");
  EXPECT_EQ(Substitute(e, VarMap{}), e);  // unchanged trees are shared, not copied
}

TEST(ExprTest, AsConstInt) {
  std::int64_t v = 0;
  EXPECT_TRUE(AsConstInt(IntImm(DataType::kInt64, 7), &v));
  EXPECT_EQ(v, 7);
  EXPECT_FALSE(AsConstInt(MakeVar("i"), &v));
}

}  // namespace
}  // namespace tunedb::ir
