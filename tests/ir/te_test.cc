#include "ir/te.h"

#include <gtest/gtest.h>

#include "ir/error.h"

namespace tunedb::ir {
namespace {

using te::ReduceOp;
using te::Vars;

TEST(TeTest, MatmulIsOneBlockUnderThreeLoops) {
  te::Builder b;
  auto A = b.Placeholder("A", {4, 6});
  auto B = b.Placeholder("B", {6, 5});
  auto C = b.Reduce("C", {{"i", 4}, {"j", 5}}, ReduceOp::kSum, {{"k", 6}},
                    [&](const Vars& s, const Vars& r) { return A(s[0], r[0]) * B(r[0], s[1]); });
  PrimFunc f = b.Build({A, B, C});
  ASSERT_EQ(f.params.size(), 3u);
  const BlockNode& root = f.root();
  EXPECT_EQ(root.name, "root");
  EXPECT_TRUE(root.alloc_buffers.empty());

  std::vector<const ForNode*> loops;
  Stmt s = root.body;
  while (s->kind == StmtKind::kFor) {
    loops.push_back(static_cast<const ForNode*>(s.get()));
    s = loops.back()->body;
  }
  ASSERT_EQ(loops.size(), 3u);
  EXPECT_EQ(loops[0]->loop_var->name, "i");
  EXPECT_EQ(loops[1]->loop_var->name, "j");
  EXPECT_EQ(loops[2]->loop_var->name, "k");
  EXPECT_EQ(loops[2]->extent, 6);
  ASSERT_EQ(s->kind, StmtKind::kBlock);
  const auto& block = static_cast<const BlockNode&>(*s);
  EXPECT_EQ(block.name, "C");
  ASSERT_EQ(block.iter_vars.size(), 3u);
  EXPECT_EQ(block.iter_vars[2].kind, IterKind::kReduce);
  EXPECT_EQ(block.iter_vars[0].var->name, "v_i");
  EXPECT_EQ(block.bindings[1], loops[1]->loop_var);
  ASSERT_TRUE(block.init);
  EXPECT_EQ(block.reads.size(), 2u);  // A and B; the update's read of C is implied
  ASSERT_EQ(block.writes.size(), 1u);
  EXPECT_EQ(block.writes[0].buffer, C.buffer());
}

TEST(TeTest, IntermediatesAreAllocatedInTheRootBlock) {
  te::Builder b;
  auto X = b.Placeholder("X", {8});
  auto Y = b.Compute("Y", {{"i", 8}}, [&](const Vars& v) { return X(v[0]) * 2.0; });
  auto Z = b.Compute("Z", {{"i", 8}}, [&](const Vars& v) { return Y(v[0]) + 1.0; });
  PrimFunc f = b.Build({X, Z});
  ASSERT_EQ(f.root().alloc_buffers.size(), 1u);
  EXPECT_EQ(f.root().alloc_buffers[0], Y.buffer());
  EXPECT_EQ(CollectBlocks(f).size(), 3u);  // root, Y, Z
}

TEST(TeTest, UnusedStagesAreLeftOut) {
  te::Builder b;
  auto X = b.Placeholder("X", {8});
  b.Compute("Unused", {{"i", 8}}, [&](const Vars& v) { return X(v[0]); });
  auto Z = b.Compute("Z", {{"i", 8}}, [&](const Vars& v) { return X(v[0]) + 1.0; });
  EXPECT_EQ(CollectBlocks(b.Build({X, Z})).size(), 2u);
}

TEST(TeTest, MissingInputParameterIsAnError) {
  te::Builder b;
  auto X = b.Placeholder("X", {8});
  auto Z = b.Compute("Z", {{"i", 8}}, [&](const Vars& v) { return X(v[0]); });
  try {
    b.Build({Z});
    FAIL() << "expected an error";
  } catch (const IrError& e) {
    EXPECT_STREQ(e.what(), "input 'X' is used but not a parameter of the function");
  }
}

TEST(TeTest, BadAxesAreRejected) {
  te::Builder b;
  auto X = b.Placeholder("X", {8});
  EXPECT_THROW(b.Compute("Z", {{"i", 0}}, [&](const Vars& v) { return X(v[0]); }), IrError);
  EXPECT_THROW(b.Reduce("R", {}, ReduceOp::kSum, {}, [&](const Vars&, const Vars&) { return X(0); }),
               IrError);
}

TEST(TeTest, ReductionIdentities) {
  EXPECT_EQ(te::ReduceIdentity(ReduceOp::kSum, DataType::kFloat32)->float_value, 0.0);
  EXPECT_EQ(te::ReduceIdentity(ReduceOp::kMax, DataType::kFloat32)->float_value,
            -std::numeric_limits<double>::infinity());
  EXPECT_EQ(te::ReduceIdentity(ReduceOp::kMin, DataType::kInt32)->int_value,
            std::numeric_limits<std::int32_t>::max());
}

}  // namespace
}  // namespace tunedb::ir
