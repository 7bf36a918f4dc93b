#include "ir/simplify.h"

#include <functional>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "ir/printer.h"

namespace tunedb::ir {
namespace {

Expr C(std::int64_t v) { return IntImm(DataType::kInt32, v); }

class SimplifyTest : public ::testing::Test {
 protected:
  Expr i0 = MakeVar("i_0"), i1 = MakeVar("i_1"), i2 = MakeVar("i_2"), f = MakeVar("f");
  VarRanges ranges{{i0.get(), 4}, {i1.get(), 8}, {i2.get(), 4}, {f.get(), 64}};
  std::string S(const Expr& e) { return PrintExpr(Simplify(e, ranges)); }

  // Random integer expressions over the four variables: sums, differences,
  // constant multiples (zero too), floordiv and floormod by constants.
  std::mt19937_64 rng{7};
  Expr Random(int depth) {
    std::vector<Expr> vars{i0, i1, i2, f};
    int choice = depth == 0 ? static_cast<int>(rng() % 2) : static_cast<int>(rng() % 7);
    switch (choice) {
      case 0: return vars[rng() % vars.size()];
      case 1: return C(static_cast<std::int64_t>(rng() % 9) - 2);
      case 2: return Random(depth - 1) + Random(depth - 1);
      case 3: return Random(depth - 1) - Random(depth - 1);
      case 4: return Random(depth - 1) * C(static_cast<std::int64_t>(rng() % 5));
      case 5: return FloorDiv(Random(depth - 1), C(1 + static_cast<std::int64_t>(rng() % 8)));
      default: return FloorMod(Random(depth - 1), C(1 + static_cast<std::int64_t>(rng() % 8)));
    }
  }
  using Env = std::unordered_map<const ExprNode*, std::int64_t>;
  Env RandomEnv() {
    return {{i0.get(), static_cast<std::int64_t>(rng() % 4)}, {i1.get(), static_cast<std::int64_t>(rng() % 8)},
            {i2.get(), static_cast<std::int64_t>(rng() % 4)}, {f.get(), static_cast<std::int64_t>(rng() % 64)}};
  }
  static std::int64_t Eval(const Expr& x, const Env& env) {
    auto fd = [](std::int64_t a, std::int64_t b) {
      std::int64_t q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    };
    switch (x->kind) {
      case ExprKind::kIntImm: return x->int_value;
      case ExprKind::kVar: return env.at(x.get());
      case ExprKind::kAdd: return Eval(x->operands[0], env) + Eval(x->operands[1], env);
      case ExprKind::kSub: return Eval(x->operands[0], env) - Eval(x->operands[1], env);
      case ExprKind::kMul: return Eval(x->operands[0], env) * Eval(x->operands[1], env);
      case ExprKind::kFloorDiv: return fd(Eval(x->operands[0], env), Eval(x->operands[1], env));
      case ExprKind::kFloorMod: {
        std::int64_t a = Eval(x->operands[0], env), b = Eval(x->operands[1], env);
        return a - fd(a, b) * b;
      }
      default: ADD_FAILURE() << "unexpected " << PrintExpr(x); return 0;
    }
  }
};

TEST_F(SimplifyTest, FlattensNestedSplits) {
  EXPECT_EQ(S((i0 * C(8) + i1) * C(4) + i2), "i_0 * 32 + i_1 * 4 + i_2");
  EXPECT_EQ(S(i0 + C(0)), "i_0");
  EXPECT_EQ(S(i0 * C(1) + C(3) - C(3)), "i_0");
  EXPECT_EQ(S(i0 - i0), "0");
  EXPECT_EQ(S(C(2) * (i1 + C(1)) - C(5)), "i_1 * 2 - 3");
}

TEST_F(SimplifyTest, RemovesNoOpDivAndMod) {
  // f in [0, 64): the fused loop of a 16 x 4 nest.
  EXPECT_EQ(S(FloorDiv(f, C(4))), "f // 4");
  EXPECT_EQ(S(FloorMod(f, C(4))), "f % 4");
  EXPECT_EQ(S(FloorDiv(i0 * C(8) + i1, C(8))), "i_0");
  EXPECT_EQ(S(FloorMod(i0 * C(8) + i1, C(8))), "i_1");
  EXPECT_EQ(S(FloorDiv(FloorDiv(f, C(4)), C(2))), "f // 8");
  EXPECT_EQ(S(FloorDiv(f * C(4) + i2, C(16))), "f // 4");
  EXPECT_EQ(S(FloorMod(f * C(4) + i2, C(16))), "f % 4 * 4 + i_2");
  EXPECT_EQ(S(FloorDiv(f, C(64))), "0");
  EXPECT_EQ(S(FloorMod(f, C(1))), "0");
  // Merged only where the divisors' product is an int32: 65536 * 65536
  // would wrap to a divisor of 0 (fuzz/compiled_text found the chain
  // 3333333 // -33332 // 733 // 333 // 533332 // ... computed as 0, not -1).
  Expr n = MakeVar("n");
  EXPECT_EQ(S(FloorDiv(FloorDiv(n, C(65536)), C(65536))), "n // 65536 // 65536");
  EXPECT_EQ(S(FloorDiv(FloorDiv(n, C(256)), C(256))), "n // 65536");
}

TEST_F(SimplifyTest, DecidesComparisonsFromRanges) {
  EXPECT_EQ(S(Binary(ExprKind::kLt, i0 * C(8) + i1, C(32))), "T.bool(True)");
  EXPECT_EQ(S(Binary(ExprKind::kLt, i0 * C(8) + i1, C(30))), "i_0 * 8 + i_1 < 30");
  EXPECT_EQ(S(Binary(ExprKind::kGe, i1, C(0)) && Binary(ExprKind::kLt, i1, C(30))), "T.bool(True)");
  EXPECT_EQ(S(Binary(ExprKind::kGe, i1, C(8))), "T.bool(False)");
}

TEST_F(SimplifyTest, BoundsOfExpressions) {
  auto b = BoundOf(i0 * C(8) + i1 - C(2), ranges);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->min, -2);
  EXPECT_EQ(b->max, 29);
  EXPECT_FALSE(BoundOf(MakeVar("unknown"), ranges));
}

TEST_F(SimplifyTest, CoefficientsVariableByVariable) {
  // floordiv(f, 16) * 64 + i_1 * 4 + i_0 * 2 + i_0: linear in i_0 and i_1,
  // not in f (which LinearCoefficients therefore refuses for all three).
  Expr e = FloorDiv(f, C(16)) * C(64) + i1 * C(4) + i0 * C(2) + i0;
  std::set<const ExprNode*> vars{i0.get(), i1.get(), f.get()};
  EXPECT_FALSE(LinearCoefficients(e, vars, ranges));
  PartialCoefficients p = LinearCoefficientsByVar(e, vars, ranges);
  std::map<const ExprNode*, std::int64_t> linear(p.linear.begin(), p.linear.end());
  EXPECT_EQ(linear, (std::map<const ExprNode*, std::int64_t>{{i0.get(), 3}, {i1.get(), 4}}));
  EXPECT_EQ(p.nonlinear, std::set<const ExprNode*>{f.get()});
  // A variable both outside and inside a non-linear part is non-linear.
  PartialCoefficients q = LinearCoefficientsByVar(f + FloorMod(f, C(16)), {f.get()}, ranges);
  EXPECT_TRUE(q.linear.empty());
  EXPECT_EQ(q.nonlinear, std::set<const ExprNode*>{f.get()});
}

TEST_F(SimplifyTest, RandomExpressionsKeepTheirValue) {
  // Oracle test: random index expressions evaluated before and after.
  for (int trial = 0; trial < 400; ++trial) {
    Expr e = Random(4);
    Expr s = Simplify(e, ranges);
    for (int k = 0; k < 20; ++k) {
      Env env = RandomEnv();
      ASSERT_EQ(Eval(e, env), Eval(s, env)) << PrintExpr(e) << "  =>  " << PrintExpr(s);
    }
  }
}

// With values loaded from data, int32 arithmetic wraps (the interpreter's
// semantics), and only + - * may be regathered: floordiv(B[f] * 4, 4) is
// not B[f] when the product wraps, and B[f] < B[f] + 1 fails for the
// largest B[f]. Data-free parts cannot wrap (ir/limits.h), so they are
// still simplified by their bounds.
TEST_F(SimplifyTest, PartsThatReadDataAreRewrittenOnlyAsWrappingAllows) {
  Buffer b = MakeBuffer("B", {64}, DataType::kInt32);
  Expr load = Load(b, {f});
  EXPECT_EQ(S(FloorDiv(load * C(4), C(4))), "B[f] * 4 // 4");
  EXPECT_EQ(S(FloorMod(load * C(4) + i0, C(4))), "(B[f] * 4 + i_0) % 4");
  EXPECT_EQ(S(FloorDiv(i1 * C(4), C(4))), "i_1");
  EXPECT_EQ(S(Binary(ExprKind::kLt, load, load + C(1))), "B[f] < B[f] + 1");
  EXPECT_EQ(S(Binary(ExprKind::kLe, load * C(2), load + load)), "T.bool(True)");
  EXPECT_EQ(S(Binary(ExprKind::kNe, load, load + C(4294967296 / 2) * C(2))), "T.bool(False)");  // 2^32 wraps to 0
  EXPECT_EQ(S(Binary(ExprKind::kEq, load, load + C(3))), "T.bool(False)");

  // Oracle: random expressions over loads scaled past int32, evaluated as
  // the interpreter does (every int32 result wrapped) before and after.
  std::vector<std::int64_t> data(64);
  auto wrap = [](std::int64_t v) { return static_cast<std::int64_t>(static_cast<std::int32_t>(static_cast<std::uint32_t>(v))); };
  auto fd = [](std::int64_t a, std::int64_t c) {
    std::int64_t q = a / c;
    return (a % c != 0 && ((a < 0) != (c < 0))) ? q - 1 : q;
  };
  std::function<std::int64_t(const Expr&, const Env&)> eval = [&](const Expr& x, const Env& env) -> std::int64_t {
    auto op = [&](int k) { return eval(x->operands[k], env); };
    switch (x->kind) {
      case ExprKind::kIntImm: return x->int_value;
      case ExprKind::kVar: return env.at(x.get());
      case ExprKind::kLoad: return data[static_cast<std::size_t>(op(0))];
      case ExprKind::kAdd: return wrap(op(0) + op(1));
      case ExprKind::kSub: return wrap(op(0) - op(1));
      case ExprKind::kMul: return wrap(static_cast<std::int64_t>(static_cast<std::uint64_t>(op(0)) * static_cast<std::uint64_t>(op(1))));
      case ExprKind::kFloorDiv: return wrap(fd(op(0), op(1)));
      case ExprKind::kFloorMod: {
        std::int64_t a = op(0), c = op(1);
        return wrap(a - fd(a, c) * c);
      }
      default: ADD_FAILURE() << "unexpected " << PrintExpr(x); return 0;
    }
  };
  std::function<Expr(int)> random = [&](int depth) -> Expr {
    if (depth == 0 || rng() % 4 == 0) {
      return rng() % 2 ? Load(b, {f}) * C(static_cast<std::int64_t>(rng() % 2000000000)) : Random(1);
    }
    Expr a = random(depth - 1);
    switch (rng() % 4) {
      case 0: return a + random(depth - 1);
      case 1: return a - random(depth - 1);
      case 2: return FloorDiv(a, C(1 + static_cast<std::int64_t>(rng() % 8)));
      default: return FloorMod(a, C(1 + static_cast<std::int64_t>(rng() % 8)));
    }
  };
  for (int trial = 0; trial < 400; ++trial) {
    Expr e = random(4);
    Expr simplified = Simplify(e, ranges);
    for (int k = 0; k < 10; ++k) {
      for (std::int64_t& v : data) v = static_cast<std::int32_t>(static_cast<std::uint32_t>(rng()));
      Env env = RandomEnv();
      ASSERT_EQ(eval(e, env), eval(simplified, env)) << PrintExpr(e) << "  =>  " << PrintExpr(simplified);
    }
  }
}

TEST_F(SimplifyTest, RowMajorIsTheSimplifiedRowMajorSum) {
  // SimplifyRowMajor(indices) promises Simplify of the sum it never builds.
  const std::vector<std::int64_t> shape{3, 5, 7};
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Expr> indices{Random(3), Random(3), Random(3)};
    Expr sum = (indices[0] * C(shape[1]) + indices[1]) * C(shape[2]) + indices[2];
    Expr flat = SimplifyRowMajor(indices, shape, ranges);
    ASSERT_EQ(PrintExpr(flat), S(sum));
    Env env = RandomEnv();
    ASSERT_EQ(Eval(flat, env), Eval(sum, env)) << PrintExpr(sum);
  }
}

}  // namespace
}  // namespace tunedb::ir
