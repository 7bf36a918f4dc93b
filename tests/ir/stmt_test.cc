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

TEST(StmtTest, CloneWithoutRegionsDropsOnlyReadsAndWrites) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=2,IN=2,OUT=2").func;
  PrimFunc g = CloneWithoutRegions(f);
  std::vector<BlockNode*> original = CollectBlocks(f), copy = CollectBlocks(g);
  ASSERT_EQ(copy.size(), original.size());
  for (std::size_t b = 1; b < copy.size(); ++b) {  // the root has no regions to drop
    SCOPED_TRACE(original[b]->name);
    EXPECT_NE(copy[b], original[b]);
    EXPECT_TRUE(copy[b]->reads.empty());
    EXPECT_TRUE(copy[b]->writes.empty());
    EXPECT_FALSE(original[b]->reads.empty());
    EXPECT_EQ(copy[b]->name, original[b]->name);
    EXPECT_EQ(copy[b]->bindings, original[b]->bindings);
    EXPECT_EQ(copy[b]->iter_vars.size(), original[b]->iter_vars.size());
    EXPECT_EQ(copy[b]->predicate, original[b]->predicate);
    EXPECT_EQ(copy[b]->annotations, original[b]->annotations);
    EXPECT_EQ(copy[b]->init != nullptr, original[b]->init != nullptr);
    EXPECT_NE(copy[b]->body, original[b]->body);  // statements below are copies too
  }
  EXPECT_EQ(g.root().alloc_buffers, f.root().alloc_buffers);
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
