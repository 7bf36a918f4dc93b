#include "ir/workload_lang.h"

#include <cmath>

#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "ir/te.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

using te::ReduceOp;
using te::Vars;

TEST(WorkloadLangTest, TheLinearLayerExample) {
  PrimFunc parsed = ParseWorkloadText(R"(
# a linear layer with ReLU
input X: f32[128, 784]
input W: f32[128, 784]
Y[i, j] = sum(k in 784) X[i, k] * W[j, k]
Z[i, j] = max(Y[i, j], 0.0)
output Z
)");
  te::Builder b;
  auto X = b.Placeholder("X", {128, 784});
  auto W = b.Placeholder("W", {128, 784});
  auto Y = b.Reduce("Y", {{"i", 128}, {"j", 128}}, ReduceOp::kSum, {{"k", 784}},
                    [&](const Vars& s, const Vars& r) { return X(s[0], r[0]) * W(s[1], r[0]); });
  auto Z = b.Compute("Z", {{"i", 128}, {"j", 128}},
                     [&](const Vars& s) { return Max(Y(s[0], s[1]), FloatImm(DataType::kFloat32, 0)); });
  EXPECT_TRUE(StructuralEqual(parsed, b.Build({X, W, Z}))) << PrintProgram(parsed);
}

TEST(WorkloadLangTest, MatchesTheLibraryMatmul) {
  PrimFunc parsed = ParseWorkloadText(
      "input A: f32[16, 8]\ninput B: f32[8, 4]\nC[i, j] = sum(k in 8) A[i, k] * B[k, j]\n");
  EXPECT_EQ(WorkloadHash(parsed), WorkloadHash(BuildWorkload("matmul:M=16,N=4,K=8").func));
}

TEST(WorkloadLangTest, ExpressionsAndDefaultOutputs) {
  PrimFunc f = ParseWorkloadText(R"(
input A: f32[4, 6]
input idx: i32[6]
P[i, j in 8] = (j >= 1 && j < 7) ? A[i, j - 1] : 0.0   # padding
S[i] = max(j in 8) P[i, j]
E[i, j] = exp(P[i, j] - S[i]) / 2 + f32(idx[j % 6]) * -1.5
)");
  // E is the only stage no other stage reads: it is the default output.
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_EQ(f.params[2]->name, "E");
  EXPECT_EQ(f.params[2]->shape, (std::vector<std::int64_t>{4, 8}));
  auto args = MakeArguments(f, 9);
  Interpret(f, args);
  double row_max = 0;  // padding zeros take part in the max
  for (int j = 0; j < 6; ++j) row_max = std::max(row_max, args[0].GetFloat(j));
  double p1 = args[0].GetFloat(0);  // P[0, 1] = A[0, 0]
  double expected = std::exp(p1 - row_max) / 2 + static_cast<double>(args[1].GetInt(1)) * -1.5;
  EXPECT_NEAR(args[2].GetFloat(1), expected, 1e-5);
}

TEST(WorkloadLangTest, SeveralOutputs) {
  PrimFunc f = ParseWorkloadText("input A: f32[4]\nB[i] = A[i] * 2\nC[i] = B[i] + 1\noutput B, C\n");
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_EQ(f.params[1]->name, "B");
  EXPECT_TRUE(f.root().alloc_buffers.empty());
}

// A scalar is `f32[]` as an input and `S[]` as a stage, read as `a[]`. An
// input could not be one, and no stage could read one; TVMScript writes
// its element `S[()]`.
TEST(WorkloadLangTest, ScalarsAreDeclaredAndReadWithEmptyBrackets) {
  PrimFunc f = ParseWorkloadText("input X: f32[3]\ninput a: f32[]\nS[] = sum(k in 3) X[k]\nY[i] = X[i] * a[] - S[]\n");
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_TRUE(f.params[1]->shape.empty());
  auto args = MakeArguments(f, 4);
  Interpret(f, args);
  double sum = args[0].GetFloat(0) + args[0].GetFloat(1) + args[0].GetFloat(2);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(args[2].GetFloat(i), args[0].GetFloat(i) * args[1].GetFloat(0) - sum, 1e-5);
  std::string text = PrintProgram(f);
  EXPECT_NE(text.find("Y[v_i] = X[v_i] * a[()] - S[()]"), std::string::npos) << text;
  EXPECT_NE(text.find("T.writes(S[()])"), std::string::npos) << text;
}

// A UTF-8 byte-order mark first (Windows Notepad) is skipped, and an error
// on line 1 counts its columns without it.
TEST(WorkloadLangTest, AByteOrderMarkIsSkipped) {
  EXPECT_EQ(WorkloadHash(ParseWorkloadText("\xEF\xBB\xBFinput A: f32[4]\r\nB[i] = A[i] * 2.0\r\n")),
            WorkloadHash(ParseWorkloadText("input A: f32[4]\nB[i] = A[i] * 2.0\n")));
  try {
    ParseWorkloadText("\xEF\xBB\xBFinput A: f32[0]\n", "w.tw");
    FAIL() << "a dimension of 0 was taken";
  } catch (const WorkloadParseError& e) {
    EXPECT_EQ(std::string(e.what()), "w.tw:1:14: a dimension must be at least 1");
  }
}

void ExpectError(const std::string& text, const std::string& message) {
  try {
    ParseWorkloadText(text, "w.tw");
    FAIL() << "expected an error for:\n" << text;
  } catch (const WorkloadParseError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(WorkloadLangTest, ErrorsNameLineColumnAndExpectation) {
  ExpectError("input A: f32[4, 4\n", "w.tw:1:18: expected ']' to close the input's shape, found end of line");
  ExpectError("input A: f16[4]\n",
              "w.tw:1:10: unknown data type 'f16' (expected float32, float64, int32, int64 or bool)");
  ExpectError("input A: f32[4]\nB[i] = A[i] +\n", "w.tw:2:14: expected an expression, found end of line");
  ExpectError("input A: f32[4]\nB[i] = Q[i]\n", "w.tw:2:8: unknown tensor 'Q'");
  ExpectError("input A: f32[4]\nB[i] = A[i] * z\n", "w.tw:2:15: unknown name 'z'");
  ExpectError("input A: f32[4]\nB[i, j] = A[i]\n",
              "w.tw:2:6: cannot infer the extent of index 'j' (it is never a plain index of a tensor); "
              "write 'j in N'");
  ExpectError("input A: f32[4]\ninput B: f32[5]\nC[i] = A[i] + B[i]\n",
              "w.tw:3:17: index 'i' has extent 4 from an earlier use but 5 in B; give it explicitly as 'i in N'");
  ExpectError("input A: f32[4, 4]\nB[i] = A[i]\n", "w.tw:2:8: tensor 'A' has 2 dimension(s), indexed with 1");
  ExpectError("input A: f32[4]\ninput A: f32[4]\n", "w.tw:2:7: 'A' is already defined at line 1");
  ExpectError("input A: f32[4]\nB[i] = sum(k 4) A[k]\n",
              "w.tw:2:14: expected ')' to close the arguments of sum, found '4'");
  // A reduction inside a larger expression.
  ExpectError("input A: f32[4, 8]\nB[i] = max(sum(k in 8) A[i, k], 0.0)\n",
              "w.tw:2:12: a reduction 'sum(k in N) expr' must be the whole right-hand side of a stage; compute it "
              "as a stage of its own and use that stage here");
  ExpectError("input A: f32[4, 8]\nB[i] = 2.0 * max(k in 8) A[i, k]\n",
              "w.tw:2:14: a reduction 'max(k in N) expr' must be the whole right-hand side of a stage; compute it "
              "as a stage of its own and use that stage here");
  ExpectError("input A: i32[4]\nB[i] = A[i] + 0.5\n", "w.tw:2:15: float literal 0.5 where an integer is expected");
  ExpectError("input A: f32[4]\nB[i] = A[i] + A[i] $ 2\n", "w.tw:2:20: unexpected character '$'");
  ExpectError("input A: f32[4]\nB[i] = A[i] + 1e999\n", "w.tw:2:15: number 1e999 is out of range for float32");
  // A double holds these, a float32 does not: they would become infinity and 0.
  ExpectError("input A: f32[4]\nB[i] = A[i] * 1e39\n", "w.tw:2:15: number 1e39 is out of range for float32");
  ExpectError("input A: f32[4]\nB[i] = A[i] * 1e-50\n",
              "w.tw:2:15: number 1e-50 is too small for float32: it would be 0");
  ExpectError("input A: i32[4]\nB[i] = A[i] + 3000000000\n",
              "w.tw:2:15: integer literal 3000000000 is out of range for int32");
  ExpectError("input A: f32[4]\nB[i] = A[i]\noutput Q\n", "w.tw:3:8: output 'Q' is not defined");
  ExpectError("input A: f32[4]\n", "w.tw:2:1: the workload defines no stage");
  ExpectError("input A: f32[4]\nB[i] = A[i] * A\n", "w.tw:2:15: tensor 'A' needs indices: A[...]");
  ExpectError("input a: f32[]\nB[i in 2] = a\n", "w.tw:2:13: tensor 'a' needs indices: a[] (a scalar)");
  ExpectError("input A: f32[4]\nB[i in 4] = A[]\n", "w.tw:2:13: tensor 'A' has 1 dimension(s), indexed with 0");
  ExpectError("input A: f32[4]\nB[i] = A[i] < 1.0\n",
              "w.tw:2:1: stage 'B' computes bool values; use select to make numbers");
  ExpectError("input A: f32[4]\nB[i] = foo(A[i])\n", "w.tw:2:8: unknown function 'foo'");
  ExpectError("input A: f32[4]\nB[i] = A[i] + i\n", "w.tw:2:13: add: operand types differ (float32 and int32)");
  ExpectError(std::string("input A: f32[4]\nB[i] = A[i]\0\n", 29), "w.tw:2:12: unexpected character '\\x00'");
  ExpectError("input A: f32[4]\nB[i] = A[i] \xc3\xa9\n", "w.tw:2:13: unexpected character '\\xc3'");
  // Sizes over ir/limits.h point at the tensor or stage that has them.
  ExpectError("input A: f32[4]\ninput Big: f32[1099511627776, 1099511627776]\n",
              "w.tw:2:7: buffer 'Big' of shape [1099511627776, 1099511627776] float32 is larger than tunedb's "
              "limit of 2^48 bytes (256 TiB)");
  ExpectError("input A: f32[8388608]\nB[i, j, k] = A[i] * A[j] * A[k]\n",
              "w.tw:2:1: in stage 'B': block 'B' iterates more than tunedb's limit of 2^48 times");
}

// Every pass over an expression recurses through it, and 100,000 nested
// parentheses overflowed the stack (the server's too, asked about such a
// text): past kMaxReadExprDepth levels, an expression is refused where the
// level too many starts, leaving room for what building and lowering add.
TEST(WorkloadLangTest, FloatLiteralsKeepTheirValueInTheirType) {
  // 1e-40 is a float32 subnormal, 1e39 fits a float64: both are kept.
  for (const char* text : {"input A: f32[4]\nB[i] = A[i] * 1e-40\n", "input A: f64[4]\nB[i] = A[i] * 1e39\n"}) {
    PrimFunc f = ParseWorkloadText(text);
    std::vector<NDArray> args = MakeArguments(f, 1);
    Interpret(f, args);
    EXPECT_NE(args[1].GetFloat(0), 0.0) << text;
    EXPECT_TRUE(std::isfinite(args[1].GetFloat(0))) << text;
  }
}

TEST(WorkloadLangTest, AnExpressionNestedTooDeepIsRefused) {
  const std::string too_deep = "w.tw:2:208: the expression is nested deeper than 200 levels; compute a part of it "
                               "as a stage of its own";
  ExpectError("input A: f32[4]\nB[i] = " + std::string(100000, '(') + "A[i]" + std::string(100000, ')') + "\n",
              too_deep);
  ExpectError("input A: f32[4]\nB[i] = " + std::string(100000, '-') + "A[i]\n", too_deep);
  // A long sum nests to the left without any parenthesis: A[i] is two
  // levels (the load and its index), and the 199th '+' (column 7 * 199 + 6)
  // makes the 201st.
  std::string sum = "A[i]";
  for (int k = 0; k < 300; ++k) sum += " + A[i]";
  ExpectError("input A: f32[4]\nB[i] = " + sum + "\n",
              "w.tw:2:1399: the expression is nested deeper than 200 levels; compute a part of it as a stage of its "
              "own");
  // Within the limit, all of it is read, and it lowers: a reduction of 190
  // levels (found by fuzz/compiled_text at 250, when the language read up
  // to the IR's own limit) is checked where it compiles, in
  // tests/measure/codegen_test.cc.
  PrimFunc f = ParseWorkloadText("input A: f32[4]\nB[i] = " + std::string(190, '-') + "A[i]\n", "w.tw");
  EXPECT_EQ(f.params.size(), 2u);
}

// A read that every iteration makes must stay inside its tensor: refused
// at the index, not at the first run. Reads a condition guards are left
// to run time, which checks them where they happen.
TEST(WorkloadLangTest, AnUnguardedReadOutsideItsTensorIsRefusedWhereItIsWritten) {
  ExpectError("input A: f32[4, 8]\nB[i] = sum(k in 8) A[i, k + 1]\n",
              "w.tw:2:25: dimension 2 of 'A' is read at 1..8, outside its extent 8 (guard a padding read with select)");
  ExpectError("input A: f32[8]\nB[i in 5] = A[6 - 2 * i]\n",
              "w.tw:2:15: dimension 1 of 'A' is read at -2..6, outside its extent 8 (guard a padding read with select)");
  ExpectError("input A: f32[8]\nB[i in 8] = A[i] + A[i - 1]\n",
              "w.tw:2:22: dimension 1 of 'A' is read at -1..6, outside its extent 8 (guard a padding read with select)");
  // Guarded by select, ?: or the left side of && / ||: accepted, and the
  // program runs without touching anything outside A.
  for (const char* text : {"input A: f32[8]\nB[i in 10] = select(i >= 1 && i <= 8, A[i - 1], 0.0)\n",
                           "input A: f32[8]\nB[i in 10] = i >= 1 && i <= 8 ? A[i - 1] : 0.0\n",
                           "input A: f32[8]\nB[i in 10] = select(i >= 1 && i <= 8 && A[i - 1] > 0.0, 1.0, 0.0)\n",
                           "input A: f32[8]\nB[i in 10] = select(i < 1 || i > 8 || A[i - 1] > 0.0, 1.0, 0.0)\n"}) {
    PrimFunc f = ParseWorkloadText(text, "w.tw");
    std::vector<NDArray> args = MakeArguments(f, 3);
    EXPECT_NO_THROW(Interpret(f, args)) << text;
  }
  // Not a sum of indices times constants: the interpreter finds it.
  PrimFunc f = ParseWorkloadText("input A: f32[8]\nB[i in 8] = A[i * i / 7 + 1]\n", "w.tw");
  std::vector<NDArray> args = MakeArguments(f, 3);
  EXPECT_THROW(Interpret(f, args), IrError);
}

// Compiled code and simplification agree with the interpreter's wrapping
// only while index arithmetic stays inside int32 (ir/limits.h); a part that
// can leave it is refused where it starts, and i64 is the way out.
TEST(WorkloadLangTest, AnInt32ExpressionThatCanLeaveInt32IsRefused) {
  ExpectError("input A: f32[5, 16]\nR[i in 50000, j in 16] = A[(i * i * 3) % 5, j]\n",
              "w.tw:2:29: this int32 expression ranges over 0..2499900001, outside int32; compute it in i64 (i64(...))");
  ExpectError("input A: f32[4]\nR[i in 4] = A[0] + f32(2147483647 + i)\n",
              "w.tw:2:24: this int32 expression ranges over 2147483647..2147483650, outside int32; compute it in i64 "
              "(i64(...))");
  ExpectError("input A: f32[4]\nR[i in 4] = sum(k in 70000) A[i] * f32(-k * k)\n",
              "w.tw:2:40: this int32 expression ranges over -4899860001..0, outside int32; compute it in i64 "
              "(i64(...))");
  EXPECT_NO_THROW(ParseWorkloadText("input A: f32[5, 16]\nR[i in 50000, j in 16] = A[(i64(i) * i64(i) * 3) % 5, j]\n"));
  // Data-dependent values wrap at run time, and so do conversions.
  EXPECT_NO_THROW(ParseWorkloadText("input A: f32[4, 16]\ninput B: i32[8]\nR[i, j in 16] = A[B[i] * 1431655766, j]\n"));
  EXPECT_NO_THROW(ParseWorkloadText("R[i in 50000] = f32(i32(i64(i) * i64(i)) % 7)\n"));
}

}  // namespace
}  // namespace tunedb::ir
