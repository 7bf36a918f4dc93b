#include "ir/printer.h"

#include <gtest/gtest.h>

#include "ir/te.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

TEST(PrinterTest, MatmulGolden) {
  EXPECT_EQ(PrintProgram(BuildWorkload("matmul:M=128,N=64,K=32").func),
            R"(# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((128, 32), "float32"), B: T.Buffer((32, 64), "float32"), C: T.Buffer((128, 64), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    # with T.block("root"):
    for i, j, k in T.grid(128, 64, 32):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B[v_k, v_j])
            T.writes(C[v_i, v_j])
            with T.init():
                C[v_i, v_j] = T.float32(0.0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]
)");
}

TEST(PrinterTest, SoftmaxGolden) {
  std::string text = PrintProgram(BuildWorkload("softmax:M=4,N=8").func);
  EXPECT_NE(text.find("    T_softmax_maxelem = T.alloc_buffer((4,))\n"), std::string::npos) << text;
  EXPECT_NE(text.find("T_softmax_maxelem[v_i] = T.float32(\"-inf\")"), std::string::npos) << text;
  EXPECT_NE(text.find("T_softmax_exp[v_i, v_j] = T.exp(A[v_i, v_j] - T_softmax_maxelem[v_i])"),
            std::string::npos) << text;
  EXPECT_NE(text.find("T_softmax_norm[v_i, v_j] = T_softmax_exp[v_i, v_j] / T_softmax_expsum[v_i]"),
            std::string::npos) << text;
}

TEST(PrinterTest, LoopKindsAnnotationsAndAxisForms) {
  // A hand-made scheduled-looking nest: split loop, kinds, annotations, predicate.
  Buffer a = MakeBuffer("A", {10});
  Expr i0 = MakeVar("i_0"), i1 = MakeVar("i_1"), vi = MakeVar("v_i");
  auto block = std::make_shared<BlockNode>();
  block->name = "B";
  block->iter_vars = {{vi, 10, IterKind::kSpatial}};
  block->bindings = {i0 * 4 + i1};
  block->predicate = Binary(ExprKind::kLt, i0 * 4 + i1, IntImm(DataType::kInt32, 10));
  block->writes = {{a, {{vi, IntImm(DataType::kInt32, 1)}}}};
  block->body = MakeStore(a, {vi}, FloatImm(DataType::kFloat32, 1.5));
  auto inner = std::static_pointer_cast<ForNode>(MakeFor(i1, 4, block, ForKind::kVectorized));
  auto outer = std::static_pointer_cast<ForNode>(MakeFor(i0, 3, inner, ForKind::kParallel));
  outer->annotations["pragma_auto_unroll_max_step"] = std::int64_t{64};
  auto root = std::make_shared<BlockNode>();
  root->name = "root";
  root->annotations["meta_schedule.vectorize"] = std::int64_t{64};
  root->body = outer;
  PrimFunc f;
  f.params = {a};
  f.body = root;
  std::string text = PrintProgram(f);
  EXPECT_NE(text.find("    with T.block(\"root\"):\n        T.block_attr({\"meta_schedule.vectorize\": 64})\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("for i_0 in T.parallel(3, annotations={\"pragma_auto_unroll_max_step\": 64}):"),
            std::string::npos) << text;
  EXPECT_NE(text.find("for i_1 in T.vectorized(4):"), std::string::npos) << text;
  EXPECT_NE(text.find("v_i = T.axis.spatial(10, i_0 * 4 + i_1)"), std::string::npos) << text;
  EXPECT_NE(text.find("T.where(i_0 * 4 + i_1 < 10)"), std::string::npos) << text;
  EXPECT_NE(text.find("A[v_i] = T.float32(1.5)"), std::string::npos) << text;
}

TEST(PrinterTest, ClashingNamesAreMadeUnique) {
  te::Builder b;
  auto X = b.Placeholder("X", {2, 3});
  auto Y = b.Compute("X", {{"i", 2}, {"i", 3}}, [&](const te::Vars& v) { return X(v[0], v[1]); });
  std::string text = PrintProgram(b.Build({X, Y}));
  EXPECT_NE(text.find("def main(X: T.Buffer((2, 3), \"float32\"), X_1: T.Buffer((2, 3), \"float32\"))"),
            std::string::npos) << text;
  EXPECT_NE(text.find("for i, i_1 in T.grid(2, 3):"), std::string::npos) << text;
  EXPECT_NE(text.find("X_1[v_i, v_i_1] = X[v_i, v_i_1]"), std::string::npos) << text;
}

TEST(PrinterTest, ExpressionsParenthesizeOnlyWhenNeeded) {
  Expr a = MakeVar("a"), b = MakeVar("b"), c = MakeVar("c");
  EXPECT_EQ(PrintExpr(a + b * c), "a + b * c");
  EXPECT_EQ(PrintExpr((a + b) * c), "(a + b) * c");
  EXPECT_EQ(PrintExpr(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(PrintExpr((a - b) - c), "a - b - c");
  EXPECT_EQ(PrintExpr(FloorDiv(a, b) + FloorMod(a, c)), "a // b + a % c");
  EXPECT_EQ(PrintExpr(Not(a < 3.0 && b >= 1.0)), "not (a < 3 and b >= 1)");
  EXPECT_EQ(PrintExpr(IntImm(DataType::kInt64, 5)), "T.int64(5)");
  EXPECT_EQ(PrintExpr(Cast(DataType::kFloat32, a)), "T.Cast(\"float32\", a)");
}

TEST(PrinterTest, EveryWorkloadPrints) {
  for (const WorkloadDef& def : BuiltinWorkloads()) {
    std::string text = PrintProgram(BuildWorkload(def.name).func);
    EXPECT_NE(text.find("@T.prim_func"), std::string::npos) << def.name;
  }
}

}  // namespace
}  // namespace tunedb::ir
