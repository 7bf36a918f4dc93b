#include "ir/interpreter.h"

#include <cmath>
#include <limits>
#include <set>

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/te.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

// Each built-in workload at a small shape against the same computation
// written as plain loops in double precision.
constexpr double kTol = 1e-5;

std::vector<NDArray> Execute(const PrimFunc& f, std::uint64_t seed) {
  std::vector<NDArray> args = MakeArguments(f, seed);
  Interpret(f, args);
  return args;
}

TEST(InterpreterTest, Matmul) {
  Workload w = BuildWorkload("matmul:M=5,N=7,K=3");
  auto args = Execute(w.func, 1);
  const NDArray &A = args[0], &B = args[1], &C = args[2];
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 7; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += A.GetFloat(i * 3 + k) * B.GetFloat(k * 7 + j);
      EXPECT_NEAR(C.GetFloat(i * 7 + j), s, kTol);
    }
  }
}

TEST(InterpreterTest, HandComputedMatmul) {
  Workload w = BuildWorkload("matmul:M=2,N=2,K=2");
  std::vector<NDArray> args = MakeArguments(w.func, 0);
  double a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  for (int i = 0; i < 4; ++i) {
    args[0].SetFloat(i, a[i]);
    args[1].SetFloat(i, b[i]);
  }
  Interpret(w.func, args);
  EXPECT_EQ(args[2].GetFloat(0), 19);
  EXPECT_EQ(args[2].GetFloat(1), 22);
  EXPECT_EQ(args[2].GetFloat(2), 43);
  EXPECT_EQ(args[2].GetFloat(3), 50);
}

TEST(InterpreterTest, BatchMatmul) {
  Workload w = BuildWorkload("batch_matmul:B=2,M=3,N=4,K=5");
  auto args = Execute(w.func, 2);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) {
        double s = 0;
        for (int k = 0; k < 5; ++k) s += args[0].GetFloat((b * 3 + i) * 5 + k) * args[1].GetFloat((b * 5 + k) * 4 + j);
        EXPECT_NEAR(args[2].GetFloat((b * 3 + i) * 4 + j), s, kTol);
      }
}

TEST(InterpreterTest, DenseBiasRelu) {
  Workload w = BuildWorkload("dense_bias_relu:B=3,IN=6,OUT=4");
  auto args = Execute(w.func, 3);
  const NDArray &X = args[0], &W = args[1], &bias = args[2], &Y = args[3];
  int positives = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = bias.GetFloat(j);
      for (int k = 0; k < 6; ++k) s += X.GetFloat(i * 6 + k) * W.GetFloat(j * 6 + k);
      EXPECT_NEAR(Y.GetFloat(i * 4 + j), std::max(s, 0.0), kTol);
      positives += s > 0;
    }
  EXPECT_GT(positives, 0);
  EXPECT_LT(positives, 12);  // the relu is exercised on both sides
}

void CheckConv(const std::string& spec, bool depthwise, int N, int H, int W, int CI, int CO, int KH, int KW,
               int S, int P) {
  Workload w = BuildWorkload(spec);
  auto args = Execute(w.func, 4);
  const NDArray &X = args[0], &Wt = args[1], &Out = args[2];
  int OH = (H + 2 * P - KH) / S + 1, OW = (W + 2 * P - KW) / S + 1;
  int C = depthwise ? CI : CO;
  for (int n = 0; n < N; ++n)
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow)
        for (int co = 0; co < C; ++co) {
          double s = 0;
          for (int kh = 0; kh < KH; ++kh)
            for (int kw = 0; kw < KW; ++kw) {
              int h = oh * S + kh - P, x = ow * S + kw - P;
              if (h < 0 || h >= H || x < 0 || x >= W) continue;
              if (depthwise) {
                s += X.GetFloat(((n * H + h) * W + x) * CI + co) * Wt.GetFloat((kh * KW + kw) * CI + co);
              } else {
                for (int ci = 0; ci < CI; ++ci) {
                  s += X.GetFloat(((n * H + h) * W + x) * CI + ci) * Wt.GetFloat(((kh * KW + kw) * CI + ci) * CO + co);
                }
              }
            }
          EXPECT_NEAR(Out.GetFloat(((n * OH + oh) * OW + ow) * C + co), s, kTol) << spec;
        }
}

TEST(InterpreterTest, Conv2dNhwc) {
  CheckConv("conv2d_nhwc:N=2,H=5,W=6,CI=3,CO=4,KH=3,KW=3,stride=1,pad=1", false, 2, 5, 6, 3, 4, 3, 3, 1, 1);
  CheckConv("conv2d_nhwc:N=1,H=7,W=7,CI=2,CO=2,KH=3,KW=2,stride=2,pad=0", false, 1, 7, 7, 2, 2, 3, 2, 2, 0);
}

TEST(InterpreterTest, DepthwiseConv2dNhwc) {
  CheckConv("depthwise_conv2d_nhwc:N=1,H=6,W=5,C=3,KH=3,KW=3,stride=1,pad=1", true, 1, 6, 5, 3, 3, 3, 3, 1, 1);
  CheckConv("depthwise_conv2d_nhwc:N=1,H=8,W=8,C=2,KH=3,KW=3,stride=2,pad=2", true, 1, 8, 8, 2, 2, 3, 3, 2, 2);
}

TEST(InterpreterTest, Softmax) {
  Workload w = BuildWorkload("softmax:M=3,N=5");
  auto args = Execute(w.func, 5);
  for (int i = 0; i < 3; ++i) {
    double m = -1e30, s = 0, total = 0;
    for (int j = 0; j < 5; ++j) m = std::max(m, args[0].GetFloat(i * 5 + j));
    for (int j = 0; j < 5; ++j) s += std::exp(args[0].GetFloat(i * 5 + j) - m);
    for (int j = 0; j < 5; ++j) {
      double expected = std::exp(args[0].GetFloat(i * 5 + j) - m) / s;
      EXPECT_NEAR(args[1].GetFloat(i * 5 + j), expected, kTol);
      total += args[1].GetFloat(i * 5 + j);
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(InterpreterTest, ReduceSum) {
  Workload w = BuildWorkload("reduce_sum:M=4,N=9");
  auto args = Execute(w.func, 6);
  for (int i = 0; i < 4; ++i) {
    double s = 0;
    for (int k = 0; k < 9; ++k) s += args[0].GetFloat(i * 9 + k);
    EXPECT_NEAR(args[1].GetFloat(i), s, kTol);
  }
}

TEST(InterpreterTest, Float32OperationsRoundEachStep) {
  // 1 + 2^-30 is 1 in float32: the interpreter must not keep double precision.
  te::Builder b;
  auto X = b.Placeholder("X", {1});
  auto Y = b.Compute("Y", {{"i", 1}}, [&](const te::Vars& v) {
    return (X(v[0]) + FloatImm(DataType::kFloat32, std::ldexp(1.0, -30))) - X(v[0]);
  });
  PrimFunc f = b.Build({X, Y});
  std::vector<NDArray> args{NDArray(DataType::kFloat32, {1}), NDArray(DataType::kFloat32, {1})};
  args[0].SetFloat(0, 1.0);
  Interpret(f, args);
  EXPECT_EQ(args[1].GetFloat(0), 0.0);
}

TEST(InterpreterTest, OutOfBoundsAccessIsAnErrorNamingTheBlock) {
  te::Builder b;
  auto X = b.Placeholder("X", {4});
  auto Y = b.Compute("shift", {{"i", 4}}, [&](const te::Vars& v) { return X(v[0] + 1); });
  PrimFunc f = b.Build({X, Y});
  auto args = MakeArguments(f, 0);
  try {
    Interpret(f, args);
    FAIL() << "expected an error";
  } catch (const IrError& e) {
    EXPECT_STREQ(e.what(), "out-of-bounds access X[4] in block shift (dimension 0 has extent 4)");
  }
}

// An integer input that indexes another tensor (an embedding lookup) gets
// indices inside it: with the -8..8 of other integers, every candidate of
// a gather stopped at "out-of-bounds access E[-8, 0]" before its check.
TEST(InterpreterTest, AGathersIndicesAreDrawnInsideTheTableTheyIndex) {
  PrimFunc f = ParseWorkloadText(
      "input E: f32[7, 3]\ninput F: f32[5, 3]\ninput I: i32[60]\ninput N: i32[60]\n"
      "Y[i, j] = E[I[i], j] + F[i64(I[i]), j] + f32(N[i])\n");
  std::vector<NDArray> args = MakeArguments(f, 3);
  std::set<std::int64_t> indices, others;
  for (std::int64_t k = 0; k < 60; ++k) {
    indices.insert(args[2].GetInt(k));
    others.insert(args[3].GetInt(k));
  }
  EXPECT_EQ(indices, (std::set<std::int64_t>{0, 1, 2, 3, 4})) << "F's 5 rows bound I, E's 7 do not";
  EXPECT_LT(*others.begin(), 0) << "an integer read as a value keeps its -8..8";
  EXPECT_GT(*others.rbegin(), 4);
  EXPECT_NO_THROW(Interpret(f, args));
}

// An index computed from the input as a * v + c keeps the values that
// land inside the table: E[I[i] + 1] once stopped a session at "E[-8, 0]",
// as only a whole index was drawn inside.
TEST(InterpreterTest, AGathersIndexComputedFromItsInputLandsInsideTheTable) {
  struct Case {
    const char* index;
    std::set<std::int64_t> values;
  };
  for (const Case& c : {Case{"I[i] + 1", {-1, 0, 1, 2, 3, 4, 5}}, Case{"2 * I[i]", {0, 1, 2, 3}},
                        Case{"2 * i64(I[i]) - 1", {1, 2, 3}}, Case{"6 - I[i]", {0, 1, 2, 3, 4, 5, 6}},
                        Case{"1 - 3 * I[i]", {-1, 0}}}) {
    SCOPED_TRACE(c.index);
    PrimFunc f = ParseWorkloadText(std::string("input E: f32[7, 3]\ninput I: i32[80]\nY[i, j] = E[") + c.index +
                                   ", j]\n");
    std::vector<NDArray> args = MakeArguments(f, 3);
    std::set<std::int64_t> values;
    for (std::int64_t k = 0; k < 80; ++k) values.insert(args[1].GetInt(k));
    EXPECT_EQ(values, c.values);
    EXPECT_NO_THROW(Interpret(f, args));
  }
}

TEST(InterpreterTest, BindingOutsideTheDomainIsAnError) {
  Workload w = BuildWorkload("matmul:M=2,N=2,K=2");
  PrimFunc f = Clone(w.func);
  BlockNode* c = CollectBlocks(f)[1];
  c->bindings[0] = c->bindings[0] + 1;
  auto args = MakeArguments(f, 0);
  EXPECT_THROW(Interpret(f, args), IrError);
}

// A loop's variable is bound inside the loop only: a block after it that
// reads the variable is an error naming the variable and the block.
TEST(InterpreterTest, AVariableOutsideItsLoopIsUnbound) {
  te::Builder b;
  auto X = b.Placeholder("X", {2});
  auto Y = b.Compute("Y", {{"i", 2}}, [&](const te::Vars& v) { return X(v[0]) + 1.0; });
  auto Z = b.Compute("Z", {{"i", 2}}, [&](const te::Vars& v) { return Y(v[0]) * 2.0; });
  PrimFunc f = b.Build({X, Z});
  std::vector<BlockNode*> blocks = CollectBlocks(f);
  ASSERT_EQ(blocks.size(), 3u);
  ASSERT_EQ(blocks[2]->name, "Z");
  blocks[2]->bindings[0] = blocks[1]->bindings[0];  // the loop variable around Y
  auto args = MakeArguments(f, 0);
  try {
    Interpret(f, args);
    FAIL() << "expected an error";
  } catch (const IrError& e) {
    EXPECT_EQ(std::string(e.what()), "interpreter: variable " + blocks[1]->bindings[0]->name + " is not bound in block Z");
  }
}

TEST(InterpreterTest, ReadingAnUnwrittenIntermediateGivesNaN) {
  // Drop the init of a reduction into an intermediate: the accumulator
  // starts as NaN, so the result is NaN instead of silently plausible.
  te::Builder b;
  auto X = b.Placeholder("X", {2, 3});
  auto S = b.Reduce("S", {{"i", 2}}, te::ReduceOp::kSum, {{"k", 3}},
                    [&](const te::Vars& s, const te::Vars& r) { return X(s[0], r[0]); });
  auto Y = b.Compute("Y", {{"i", 2}}, [&](const te::Vars& s) { return S(s[0]) + 1.0; });
  PrimFunc f = b.Build({X, Y});
  auto args = MakeArguments(f, 0);
  Interpret(f, args);
  EXPECT_FALSE(std::isnan(args[1].GetFloat(0)));
  CollectBlocks(f)[1]->init = nullptr;
  Interpret(f, args);
  EXPECT_TRUE(std::isnan(args[1].GetFloat(0)));
}

TEST(InterpreterTest, ArgumentsMustMatchParameters) {
  Workload w = BuildWorkload("matmul:M=2,N=2,K=2");
  std::vector<NDArray> args = MakeArguments(w.func, 0);
  args[0] = NDArray(DataType::kFloat32, {3, 2});
  EXPECT_THROW(Interpret(w.func, args), IrError);
  args.pop_back();
  EXPECT_THROW(Interpret(w.func, args), IrError);
}

TEST(InterpreterTest, IntegerFloorDivisionAndModulo) {
  te::Builder b;
  auto X = b.Placeholder("X", {6}, DataType::kInt32);
  auto Q = b.Compute("Q", {{"i", 6}}, [&](const te::Vars& v) { return FloorDiv(X(v[0]), IntImm(DataType::kInt32, 4)); });
  auto R = b.Compute("R", {{"i", 6}}, [&](const te::Vars& v) { return FloorMod(X(v[0]), IntImm(DataType::kInt32, 4)); });
  PrimFunc f = b.Build({X, Q, R});
  std::vector<NDArray> args = MakeArguments(f, 0);
  std::int64_t xs[] = {-7, -4, -1, 0, 5, 8};
  for (int i = 0; i < 6; ++i) args[0].SetInt(i, xs[i]);
  Interpret(f, args);
  std::int64_t q[] = {-2, -1, -1, 0, 1, 2}, r[] = {1, 0, 3, 0, 1, 0};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(args[1].GetInt(i), q[i]) << xs[i];
    EXPECT_EQ(args[2].GetInt(i), r[i]) << xs[i];
  }
}

// The most negative value over -1 wraps to itself, as + - * wrap, where
// C++'s division would trap.
TEST(InterpreterTest, TheMostNegativeValueOverMinusOneWraps) {
  te::Builder b;
  auto X = b.Placeholder("X", {2}, DataType::kInt64);
  auto D = b.Placeholder("D", {2}, DataType::kInt64);
  auto Q = b.Compute("Q", {{"i", 2}}, [&](const te::Vars& v) { return FloorDiv(X(v[0]), D(v[0])); });
  auto R = b.Compute("R", {{"i", 2}}, [&](const te::Vars& v) { return FloorMod(X(v[0]), D(v[0])); });
  PrimFunc f = b.Build({X, D, Q, R});
  std::vector<NDArray> args = MakeArguments(f, 0);
  const std::int64_t min = std::numeric_limits<std::int64_t>::min();
  args[0].SetInt(0, min);
  args[0].SetInt(1, 9);
  args[1].SetInt(0, -1);
  args[1].SetInt(1, -1);
  Interpret(f, args);
  EXPECT_EQ(args[2].GetInt(0), min);
  EXPECT_EQ(args[3].GetInt(0), 0);
  EXPECT_EQ(args[2].GetInt(1), -9);
  EXPECT_EQ(args[3].GetInt(1), 0);
}

}  // namespace
}  // namespace tunedb::ir
