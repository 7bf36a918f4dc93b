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

// Every pass recurses through a tree, so none deeper than kMaxExprDepth is
// built (20,000 nested negations overflowed the stack of `tunedb run`).
TEST(ExprTest, NoTreeDeeperThanTheLimitIsBuilt) {
  Expr i = MakeVar("i");
  EXPECT_EQ(i->depth, 1);
  Expr e = i;
  for (int level = 2; level <= kMaxExprDepth; ++level) e = e + IntImm(DataType::kInt32, 1);
  EXPECT_EQ(e->depth, kMaxExprDepth);
  try {
    Expr deeper = e * IntImm(DataType::kInt32, 2);
    FAIL() << "built at depth " << deeper->depth;
  } catch (const IrError& err) {
    EXPECT_STREQ(err.what(), "an expression nested deeper than 256 levels");
  }
  // A rewrite builds with WithOperands, which counts alike: i replaced by
  // a tree of two levels deepens e by one.
  VarMap map{{i.get(), i + IntImm(DataType::kInt32, 1)}};
  EXPECT_THROW(Substitute(e, map), IrError);
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

TEST(ExprTest, SubstituteSharesUnchangedSubtreesOfAChangedTree) {
  Expr i = MakeVar("i"), j = MakeVar("j");
  Expr left = i * 4, right = j * 8;
  Expr e = left + right;
  Expr s = Substitute(e, VarMap{{j.get(), MakeVar("k")}});
  EXPECT_EQ(PrintExpr(s), "i * 4 + k * 8");
  EXPECT_EQ(s->operands[0], left);  // the untouched operand is the same node
  EXPECT_EQ(Substitute(e, VarMap{{i.get(), i}}), e);  // a variable mapped to itself changes nothing
}

TEST(ExprTest, RewriteLoadsRebuildsOnlyAboveARewrittenLoad) {
  Buffer a = MakeBuffer("A", {4}), b = MakeBuffer("B", {4});
  Expr i = MakeVar("i");
  Expr load_a = Load(a, {i}), load_b = Load(b, {i});
  Expr e = load_a * 2.0f + load_b;
  Expr to_c = Load(MakeBuffer("C", {4}), {i});
  Expr r = RewriteLoads(e, [&](const Expr& load) { return load->buffer == b ? to_c : nullptr; });
  EXPECT_EQ(PrintExpr(r), "A[i] * T.float32(2.0) + C[i]");
  EXPECT_EQ(r->operands[0], e->operands[0]);
  EXPECT_EQ(RewriteLoads(e, [](const Expr&) { return Expr(); }), e);
}

TEST(ExprTest, WithOperandsKeepsEveryOtherField) {
  Buffer a = MakeBuffer("A", {4});
  Expr i = MakeVar("i"), j = MakeVar("j");
  Expr load = WithOperands(*Load(a, {i}), {j});
  EXPECT_EQ(load->kind, ExprKind::kLoad);
  EXPECT_EQ(load->buffer, a);
  EXPECT_EQ(load->dtype, DataType::kFloat32);
  EXPECT_EQ(load->operands, std::vector<Expr>{j});
  Expr x = FloatImm(DataType::kFloat32, 1), y = FloatImm(DataType::kFloat32, 2);
  Expr call = WithOperands(*Call("exp", {x}), {y});
  EXPECT_EQ(call->name, "exp");
  EXPECT_EQ(call->operands, std::vector<Expr>{y});
}

TEST(ExprTest, AsConstInt) {
  std::int64_t v = 0;
  EXPECT_TRUE(AsConstInt(IntImm(DataType::kInt64, 7), &v));
  EXPECT_EQ(v, 7);
  EXPECT_FALSE(AsConstInt(MakeVar("i"), &v));
}

}  // namespace
}  // namespace tunedb::ir
