#include "ir/expr.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ir/error.h"

namespace tunedb::ir {
namespace {

// n's depth from its operands'; IrError beyond kMaxExprDepth.
void SetDepth(ExprNode& n) {
  for (const Expr& o : n.operands) {
    if (o) n.depth = std::max(n.depth, o->depth + 1);
  }
  if (n.depth > kMaxExprDepth) {
    throw IrError("an expression nested deeper than " + std::to_string(kMaxExprDepth) + " levels");
  }
}

Expr New(ExprKind kind, DataType dtype, std::vector<Expr> operands = {}) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->dtype = dtype;
  n->operands = std::move(operands);
  SetDepth(*n);
  return n;
}

// Moves expressions into an operand list. A braced list would copy them:
// an initializer_list's elements are const, and every copy of an Expr is an
// atomic reference-count update once the process has a second thread.
template <typename... E>
std::vector<Expr> Operands(E&&... e) {
  std::vector<Expr> v;
  v.reserve(sizeof...(e));
  (v.push_back(std::move(e)), ...);
  return v;
}

void CheckNotNull(const Expr& e, std::string_view what) {
  if (!e) throw IrError(std::string(what) + ": missing operand");
}

}  // namespace

std::string_view ExprKindName(ExprKind kind) {
  switch (kind) {
    case ExprKind::kIntImm: return "int";
    case ExprKind::kFloatImm: return "float";
    case ExprKind::kVar: return "var";
    case ExprKind::kAdd: return "add";
    case ExprKind::kSub: return "sub";
    case ExprKind::kMul: return "mul";
    case ExprKind::kDiv: return "div";
    case ExprKind::kFloorDiv: return "floordiv";
    case ExprKind::kFloorMod: return "floormod";
    case ExprKind::kMin: return "min";
    case ExprKind::kMax: return "max";
    case ExprKind::kEq: return "eq";
    case ExprKind::kNe: return "ne";
    case ExprKind::kLt: return "lt";
    case ExprKind::kLe: return "le";
    case ExprKind::kGt: return "gt";
    case ExprKind::kGe: return "ge";
    case ExprKind::kAnd: return "and";
    case ExprKind::kOr: return "or";
    case ExprKind::kNot: return "not";
    case ExprKind::kSelect: return "select";
    case ExprKind::kCast: return "cast";
    case ExprKind::kLoad: return "load";
    case ExprKind::kCall: return "call";
  }
  return "?";
}

bool IsBinary(ExprKind kind) { return kind >= ExprKind::kAdd && kind <= ExprKind::kOr; }

bool IsComparison(ExprKind kind) { return kind >= ExprKind::kEq && kind <= ExprKind::kGe; }

Expr IntImm(DataType dtype, std::int64_t value) {
  if (!IsInt(dtype) && dtype != DataType::kBool) {
    throw IrError("integer constant of non-integer type " + std::string(DataTypeName(dtype)));
  }
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::kIntImm;
  n->dtype = dtype;
  n->int_value = dtype == DataType::kInt32 ? static_cast<std::int32_t>(value)
                 : dtype == DataType::kBool ? (value != 0)
                                             : value;
  return n;
}

Expr FloatImm(DataType dtype, double value) {
  if (!IsFloat(dtype)) {
    throw IrError("float constant of non-float type " + std::string(DataTypeName(dtype)));
  }
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::kFloatImm;
  n->dtype = dtype;
  // A float32 constant holds exactly the float32 value it denotes.
  n->float_value = dtype == DataType::kFloat32 ? static_cast<double>(static_cast<float>(value))
                                               : value;
  return n;
}

Expr BoolImm(bool value) { return IntImm(DataType::kBool, value ? 1 : 0); }

Expr MakeVar(std::string name, DataType dtype) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::kVar;
  n->dtype = dtype;
  n->name = std::move(name);
  return n;
}

Expr MakeConst(DataType dtype, double value) {
  if (IsFloat(dtype)) return FloatImm(dtype, value);
  return IntImm(dtype, static_cast<std::int64_t>(value));
}

Expr Binary(ExprKind kind, Expr a, Expr b) {
  if (!IsBinary(kind)) throw IrError("Binary: not a binary operator");
  const std::string_view name = ExprKindName(kind);
  CheckNotNull(a, name);
  CheckNotNull(b, name);
  auto op = [&] { return std::string(name); };  // only for errors
  if (a->dtype != b->dtype) {
    throw IrError(op() + ": operand types differ (" + std::string(DataTypeName(a->dtype)) +
                  " and " + std::string(DataTypeName(b->dtype)) + ")");
  }
  DataType t = a->dtype;
  DataType result = t;
  switch (kind) {
    case ExprKind::kAdd: case ExprKind::kSub: case ExprKind::kMul:
    case ExprKind::kMin: case ExprKind::kMax:
      if (t == DataType::kBool) throw IrError(op() + ": operands must be numbers, not bool");
      break;
    case ExprKind::kDiv:
      if (!IsFloat(t)) throw IrError("div: operands must be floats (use floordiv for integers)");
      break;
    case ExprKind::kFloorDiv: case ExprKind::kFloorMod:
      if (!IsInt(t)) throw IrError(op() + ": operands must be integers");
      break;
    case ExprKind::kAnd: case ExprKind::kOr:
      if (t != DataType::kBool) throw IrError(op() + ": operands must be bool");
      break;
    default:  // comparisons
      result = DataType::kBool;
      break;
  }
  return New(kind, result, Operands(a, b));
}

Expr Not(Expr a) {
  CheckNotNull(a, "not");
  if (a->dtype != DataType::kBool) throw IrError("not: operand must be bool");
  return New(ExprKind::kNot, DataType::kBool, Operands(a));
}

Expr Select(Expr condition, Expr true_value, Expr false_value) {
  CheckNotNull(condition, "select");
  CheckNotNull(true_value, "select");
  CheckNotNull(false_value, "select");
  if (condition->dtype != DataType::kBool) throw IrError("select: condition must be bool");
  if (true_value->dtype != false_value->dtype) {
    throw IrError("select: branch types differ (" +
                  std::string(DataTypeName(true_value->dtype)) + " and " +
                  std::string(DataTypeName(false_value->dtype)) + ")");
  }
  DataType t = true_value->dtype;
  return New(ExprKind::kSelect, t, Operands(condition, true_value, false_value));
}

Expr Cast(DataType dtype, Expr a) {
  CheckNotNull(a, "cast");
  return New(ExprKind::kCast, dtype, Operands(a));
}

Expr Load(Buffer buffer, std::vector<Expr> indices) {
  if (!buffer) throw IrError("load: missing buffer");
  if (indices.size() != buffer->shape.size()) {
    throw IrError("load of " + buffer->name + ": " + std::to_string(indices.size()) +
                  " indices for a buffer of rank " + std::to_string(buffer->shape.size()));
  }
  for (const Expr& i : indices) {
    if (!i) throw IrError("load of " + buffer->name + ": missing operand");
    if (!IsInt(i->dtype)) throw IrError("load of " + buffer->name + ": index must be an integer");
  }
  Expr e = New(ExprKind::kLoad, buffer->dtype, std::move(indices));
  const_cast<ExprNode&>(*e).buffer = std::move(buffer);
  return e;
}

bool IsMathFunction(std::string_view name, int* arity) {
  static const char* kUnary[] = {"exp", "log", "sqrt", "rsqrt", "tanh",
                                 "sigmoid", "abs", "floor", "ceil"};
  for (const char* f : kUnary) {
    if (name == f) {
      if (arity) *arity = 1;
      return true;
    }
  }
  if (name == "pow") {
    if (arity) *arity = 2;
    return true;
  }
  return false;
}

Expr Call(std::string name, std::vector<Expr> args) {
  int arity = 0;
  if (!IsMathFunction(name, &arity)) throw IrError("unknown function '" + name + "'");
  if (static_cast<int>(args.size()) != arity) {
    throw IrError(name + ": expected " + std::to_string(arity) + " argument(s), got " +
                  std::to_string(args.size()));
  }
  for (const Expr& a : args) {
    CheckNotNull(a, name);
    if (!IsFloat(a->dtype)) throw IrError(name + ": arguments must be floats");
    if (a->dtype != args[0]->dtype) throw IrError(name + ": argument types differ");
  }
  DataType t = args[0]->dtype;
  Expr e = New(ExprKind::kCall, t, std::move(args));
  const_cast<ExprNode&>(*e).name = std::move(name);
  return e;
}

Expr operator+(const Expr& a, const Expr& b) { return Binary(ExprKind::kAdd, a, b); }
Expr operator-(const Expr& a, const Expr& b) { return Binary(ExprKind::kSub, a, b); }
Expr operator*(const Expr& a, const Expr& b) { return Binary(ExprKind::kMul, a, b); }
Expr operator/(const Expr& a, const Expr& b) { return Binary(ExprKind::kDiv, a, b); }
Expr operator+(const Expr& a, double b) { return a + MakeConst(a->dtype, b); }
Expr operator-(const Expr& a, double b) { return a - MakeConst(a->dtype, b); }
Expr operator*(const Expr& a, double b) { return a * MakeConst(a->dtype, b); }
Expr operator+(double a, const Expr& b) { return MakeConst(b->dtype, a) + b; }
Expr operator*(double a, const Expr& b) { return MakeConst(b->dtype, a) * b; }
Expr operator&&(const Expr& a, const Expr& b) { return Binary(ExprKind::kAnd, a, b); }
Expr operator||(const Expr& a, const Expr& b) { return Binary(ExprKind::kOr, a, b); }
Expr operator<(const Expr& a, double b) { return Binary(ExprKind::kLt, a, MakeConst(a->dtype, b)); }
Expr operator>=(const Expr& a, double b) {
  return Binary(ExprKind::kGe, a, MakeConst(a->dtype, b));
}
Expr FloorDiv(const Expr& a, const Expr& b) { return Binary(ExprKind::kFloorDiv, a, b); }
Expr FloorMod(const Expr& a, const Expr& b) { return Binary(ExprKind::kFloorMod, a, b); }
Expr Min(const Expr& a, const Expr& b) { return Binary(ExprKind::kMin, a, b); }
Expr Max(const Expr& a, const Expr& b) { return Binary(ExprKind::kMax, a, b); }

bool AsConstInt(const Expr& e, std::int64_t* value) {
  if (!e || e->kind != ExprKind::kIntImm) return false;
  *value = e->int_value;
  return true;
}

bool HasLoad(const Expr& e) {
  if (!e) return false;
  if (e->kind == ExprKind::kLoad) return true;
  for (const Expr& operand : e->operands) {
    if (HasLoad(operand)) return true;
  }
  return false;
}

bool UsesVar(const Expr& e, const ExprNode* var) {
  if (!e) return false;
  if (e.get() == var) return true;
  for (const Expr& operand : e->operands) {
    if (UsesVar(operand, var)) return true;
  }
  return false;
}

std::vector<Expr> Conjuncts(const Expr& e) {
  if (!e) return {};
  if (e->kind != ExprKind::kAnd) return {e};
  std::vector<Expr> out = Conjuncts(e->operands[0]);
  for (Expr& c : Conjuncts(e->operands[1])) out.push_back(std::move(c));
  return out;
}

Expr WithOperands(const ExprNode& e, std::vector<Expr> operands) {
  auto n = std::make_shared<ExprNode>();
  n->kind = e.kind;
  n->dtype = e.dtype;
  n->int_value = e.int_value;
  n->float_value = e.float_value;
  n->name = e.name;
  n->buffer = e.buffer;
  n->operands = std::move(operands);
  SetDepth(*n);
  return n;
}

namespace {

// The rewrites below return nullptr for a subtree they leave as it is, so
// that an unchanged subtree costs no reference-count updates (each one an
// atomic operation in a multi-threaded process); the callers build a node
// only above a change.

// e with each operand o replaced by rewrite(o) where that is not null;
// nullptr when none is. The operand list is copied from the first change on.
template <typename Rewrite>
Expr ReplaceOperands(const Expr& e, Rewrite&& rewrite) {
  std::vector<Expr> ops;
  for (std::size_t k = 0; k < e->operands.size(); ++k) {
    Expr o = rewrite(e->operands[k]);
    if (!o) {
      if (!ops.empty()) ops.push_back(e->operands[k]);
      continue;
    }
    if (ops.empty()) {
      ops.reserve(e->operands.size());
      ops.assign(e->operands.begin(), e->operands.begin() + static_cast<std::ptrdiff_t>(k));
    }
    ops.push_back(std::move(o));
  }
  return ops.empty() ? nullptr : WithOperands(*e, std::move(ops));
}

Expr RewriteLoadsOrNull(const Expr& e, const std::function<Expr(const Expr& load)>& fn) {
  // A leaf holds no load, unless it is one: a load of a zero-dimensional
  // buffer (a scalar, S[]) has no index operands.
  if (e->operands.empty() && e->kind != ExprKind::kLoad) return nullptr;
  Expr rebuilt = ReplaceOperands(e, [&](const Expr& o) { return RewriteLoadsOrNull(o, fn); });
  if (e->kind == ExprKind::kLoad) {
    if (Expr r = fn(rebuilt ? rebuilt : e)) return r;
  }
  return rebuilt;
}

Expr SubstituteOrNull(const Expr& e, const VarMap& map) {
  if (e->kind == ExprKind::kVar) {
    auto it = map.find(e.get());
    return it == map.end() || it->second == e ? nullptr : it->second;
  }
  return ReplaceOperands(e, [&](const Expr& o) { return SubstituteOrNull(o, map); });
}

}  // namespace

Expr RewriteLoads(const Expr& e, const std::function<Expr(const Expr& load)>& fn) {
  if (!e) return e;
  Expr r = RewriteLoadsOrNull(e, fn);
  return r ? r : e;
}

Expr Substitute(const Expr& e, const VarMap& map) {
  Expr r = SubstituteOrNull(e, map);
  return r ? r : e;
}

}  // namespace tunedb::ir
