// Expressions of the tensor IR.
//
// An expression is an immutable tree shared by pointer (Expr). One node type
// with a kind tag covers every form; this keeps the printer, the structural
// hash, the JSON form and the interpreter as single switch statements that
// are easy to check for completeness.
//
// Variables are expressions of kind kVar. Their identity is the node itself:
// two variables named "i" are different variables.
//
// Type rules (checked at construction, IrError on violation):
//  - binary arithmetic and comparisons need operands of one dtype;
//  - + - * min max work on ints and floats; / (kDiv) on floats only;
//    floordiv/floormod on ints only;
//  - comparisons give bool; and/or/not take bool;
//  - select(c, t, f) needs a bool c and t, f of one dtype. Only the chosen
//    branch is evaluated (as TVM's if_then_else), so a guarded load such as
//    padding's select(in_bounds, X[h - 1], 0) never reads out of bounds.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/buffer.h"
#include "ir/dtype.h"

namespace tunedb::ir {

// The numeric values are part of the structural hash (structural.h): add new
// kinds at the end only.
enum class ExprKind : std::uint8_t {
  kIntImm, kFloatImm, kVar,
  kAdd, kSub, kMul, kDiv, kFloorDiv, kFloorMod, kMin, kMax,
  kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr,
  kNot, kSelect, kCast, kLoad, kCall,
};

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  DataType dtype;
  std::int64_t int_value = 0;     // kIntImm (bool immediates too)
  double float_value = 0.0;       // kFloatImm
  std::string name;               // kVar: name hint; kCall: function name
  Buffer buffer;                  // kLoad
  std::vector<Expr> operands;     // binary: a, b; kNot/kCast: a; kSelect: c, t, f;
                                  // kLoad: indices; kCall: arguments
  int depth = 1;                  // levels down to the deepest leaf (1: a leaf), set when built
  // A new field must be copied by WithOperands too.
};

// How deep an expression tree may be. Every pass walks trees recursively
// (lowering, the interpreter, code generation: a stack frame or more per
// level), and a tree deep enough overflows the stack: 20,000 nested
// negations crashed `tunedb run`, and one such text crashed the server that
// was asked about it. Building a node deeper than this throws IrError, so
// no tree in memory is deeper: a schedule primitive that would build one
// fails, and the readers (the workload language, JSON programs) refuse one
// naming where. Tensor programs nest a few dozen levels, inlined chains of
// stages included; code generation under AddressSanitizer, the hungriest
// pass, overflowed an 8 MiB stack at about 800.
inline constexpr int kMaxExprDepth = 256;

// How deep an expression the readers accept: less, so that what they read
// also builds and lowers, which add levels (a reduction's combine, a cast,
// a row-major index under each load). fuzz/compiled_text found a sum of
// 250 nested negations that parsed and then could not be lowered.
inline constexpr int kMaxReadExprDepth = 200;

// Names used in printing and JSON: "add", "floordiv", "select", ...
std::string_view ExprKindName(ExprKind kind);
bool IsBinary(ExprKind kind);
bool IsComparison(ExprKind kind);

// ---- construction -------------------------------------------------------

Expr IntImm(DataType dtype, std::int64_t value);
Expr FloatImm(DataType dtype, double value);
Expr BoolImm(bool value);
Expr MakeVar(std::string name, DataType dtype = DataType::kInt32);
Expr Binary(ExprKind kind, Expr a, Expr b);
Expr Not(Expr a);
Expr Select(Expr condition, Expr true_value, Expr false_value);
Expr Cast(DataType dtype, Expr a);
Expr Load(Buffer buffer, std::vector<Expr> indices);

// Math functions callable from the IR: exp, log, sqrt, rsqrt, tanh, sigmoid,
// abs, floor, ceil (one argument) and pow (two). The result has the dtype of
// the (float) arguments.
Expr Call(std::string name, std::vector<Expr> args);
bool IsMathFunction(std::string_view name, int* arity = nullptr);

// A constant of the given dtype: int for int types, float for float types.
Expr MakeConst(DataType dtype, double value);

// Operators for builder code. A plain number next to an expression becomes a
// constant of the expression's dtype, as in TVM's te: A(i, k) * 2.0.
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);
Expr operator+(const Expr& a, double b);
Expr operator-(const Expr& a, double b);
Expr operator*(const Expr& a, double b);
Expr operator+(double a, const Expr& b);
Expr operator*(double a, const Expr& b);
Expr operator&&(const Expr& a, const Expr& b);
Expr operator||(const Expr& a, const Expr& b);
Expr operator<(const Expr& a, double b);
Expr operator>=(const Expr& a, double b);
Expr FloorDiv(const Expr& a, const Expr& b);
Expr FloorMod(const Expr& a, const Expr& b);
Expr Min(const Expr& a, const Expr& b);
Expr Max(const Expr& a, const Expr& b);

// ---- inspection and rewriting ---------------------------------------------

// Constant value if the expression is an int immediate.
bool AsConstInt(const Expr& e, std::int64_t* value);

// Whether the variable node `var` occurs in e (false for a null e).
bool UsesVar(const Expr& e, const ExprNode* var);

// Whether e reads a buffer anywhere (false for a null e).
bool HasLoad(const Expr& e);

// The terms of a conjunction, `a and (b and c)` as a, b, c; any other e as
// itself, and none for a null e (a block without a predicate).
std::vector<Expr> Conjuncts(const Expr& e);

// Replaces variables by expressions (keyed by variable node).
using VarMap = std::unordered_map<const ExprNode*, Expr>;
Expr Substitute(const Expr& e, const VarMap& map);

// A node with e's fields and the given operands (what a rewrite builds
// above a changed child). Copies every field of ExprNode but operands.
Expr WithOperands(const ExprNode& e, std::vector<Expr> operands);

// Rebuilds e bottom-up, replacing every load by fn(load), where the load
// already carries its rewritten indices; fn returns null to keep it.
Expr RewriteLoads(const Expr& e, const std::function<Expr(const Expr& load)>& fn);

// Calls fn on every node in pre-order.
template <typename Fn>
void VisitExpr(const Expr& e, Fn&& fn) {
  fn(e);
  for (const Expr& operand : e->operands) VisitExpr(operand, fn);
}

}  // namespace tunedb::ir
