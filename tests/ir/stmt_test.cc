#include "ir/stmt.h"

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

TEST(StmtTest, CloneIsDeepAndEqual) {
  PrimFunc f = BuildWorkload("matmul:M=4,N=4,K=4").func;
  PrimFunc g = Clone(f);
  EXPECT_TRUE(StructuralEqual(f, g));
  EXPECT_NE(f.body.get(), g.body.get());
  static_cast<ForNode&>(*g.root().body).extent = 2;  // editing the copy leaves the original
  EXPECT_EQ(static_cast<const ForNode&>(*f.root().body).extent, 4);
}

TEST(StmtTest, SubstituteStmtRewritesEveryExpression) {
  Buffer a = MakeBuffer("A", {8});
  Expr i = MakeVar("i"), j = MakeVar("j");
  Stmt s = MakeIf(Binary(ExprKind::kLt, i, IntImm(DataType::kInt32, 4)), MakeStore(a, {i}, Cast(DataType::kFloat32, i)));
  Stmt t = SubstituteStmt(s, {{i.get(), j + 1}});
  const auto& n = static_cast<const IfNode&>(*t);
  EXPECT_EQ(PrintExpr(n.condition), "j + 1 < 4");
  EXPECT_EQ(PrintExpr(static_cast<const StoreNode&>(*n.then_case).indices[0]), "j + 1");
  EXPECT_EQ(PrintExpr(static_cast<const IfNode&>(*s).condition), "i < 4");  // the original is untouched
}

TEST(StmtTest, ConstructionChecks) {
  Buffer a = MakeBuffer("A", {8});
  EXPECT_THROW(MakeFor(MakeVar("i"), 0, MakeSeq({})), IrError);
  EXPECT_THROW(MakeStore(a, {}, FloatImm(DataType::kFloat32, 0)), IrError);
  EXPECT_THROW(MakeStore(a, {MakeVar("i")}, IntImm(DataType::kInt32, 0)), IrError);
  EXPECT_THROW(MakeIf(MakeVar("i"), MakeSeq({})), IrError);
}

TEST(StmtTest, CollectBlocksIsPreOrderRootFirst) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=2,IN=2,OUT=2").func;
  std::vector<BlockNode*> blocks = CollectBlocks(f);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0]->name, "root");
  EXPECT_EQ(blocks[3]->name, "T_relu");
}

}  // namespace
}  // namespace tunedb::ir
