#include "ir/printer.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace tunedb::ir {
namespace {

std::string FormatFloat(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string ShapeTuple(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// Binding strength for parenthesizing infix operators; higher binds tighter.
int Strength(const Expr& e) {
  switch (e->kind) {
    case ExprKind::kOr: return 1;
    case ExprKind::kAnd: return 2;
    case ExprKind::kNot: return 3;
    case ExprKind::kEq: case ExprKind::kNe: case ExprKind::kLt:
    case ExprKind::kLe: case ExprKind::kGt: case ExprKind::kGe: return 4;
    case ExprKind::kAdd: case ExprKind::kSub: return 5;
    case ExprKind::kMul: case ExprKind::kDiv: case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod: return 6;
    default: return 10;
  }
}

const char* InfixSymbol(ExprKind k) {
  switch (k) {
    case ExprKind::kAdd: return " + ";
    case ExprKind::kSub: return " - ";
    case ExprKind::kMul: return " * ";
    case ExprKind::kDiv: return " / ";
    case ExprKind::kFloorDiv: return " // ";
    case ExprKind::kFloorMod: return " % ";
    case ExprKind::kEq: return " == ";
    case ExprKind::kNe: return " != ";
    case ExprKind::kLt: return " < ";
    case ExprKind::kLe: return " <= ";
    case ExprKind::kGt: return " > ";
    case ExprKind::kGe: return " >= ";
    case ExprKind::kAnd: return " and ";
    case ExprKind::kOr: return " or ";
    default: return nullptr;
  }
}

class Printer {
 public:
  std::string Program(const PrimFunc& f) {
    out_ << "# from tvm.script import tir as T\n\n@T.prim_func\ndef " << f.name << "(";
    for (std::size_t i = 0; i < f.params.size(); ++i) {
      const Buffer& b = f.params[i];
      out_ << (i ? ", " : "") << BufferName(b) << ": T.Buffer(" << ShapeTuple(b->shape) << ", \""
           << DataTypeName(b->dtype) << "\")";
    }
    out_ << "):\n";
    Line(1) << "T.func_attr({\"global_symbol\": \"" << f.name << "\", \"tir.noalias\": True})\n";
    const auto& root = static_cast<const BlockNode&>(*f.body);
    int body_indent = 1;
    if (root.annotations.empty()) {
      Line(1) << "# with T.block(\"root\"):\n";
    } else {
      Line(1) << "with T.block(\"root\"):\n";
      Line(2) << "T.block_attr(" << AnnotationDict(root.annotations) << ")\n";
      body_indent = 2;
    }
    for (const Buffer& b : root.alloc_buffers) AllocLine(b, body_indent);
    PrintStmt(root.body, body_indent);
    return out_.str();
  }

  std::string ExprText(const Expr& e) {
    std::string s;
    PrintExprTo(e, &s);
    return s;
  }

 private:
  std::ostream& Line(int indent) {
    for (int i = 0; i < indent; ++i) out_ << "    ";
    return out_;
  }

  std::string BufferName(const Buffer& b) {
    auto it = buffer_names_.find(b.get());
    if (it != buffer_names_.end()) return it->second;
    std::string name = b->name.empty() ? "buf" : b->name;
    std::string candidate = name;
    for (int k = 1; used_buffer_names_.count(candidate); ++k) candidate = name + "_" + std::to_string(k);
    used_buffer_names_.insert(candidate);
    return buffer_names_[b.get()] = candidate;
  }

  // Gives a variable a name unique among the names in scope.
  std::string Define(const Expr& v) {
    std::string name = v->name.empty() ? "v" : v->name;
    std::string candidate = name;
    for (int k = 1; names_in_scope_.count(candidate); ++k) candidate = name + "_" + std::to_string(k);
    names_in_scope_.insert(candidate);
    var_names_[v.get()] = candidate;
    return candidate;
  }
  void Undefine(const Expr& v) {
    auto it = var_names_.find(v.get());
    if (it == var_names_.end()) return;
    names_in_scope_.erase(it->second);
    var_names_.erase(it);
  }
  std::string VarName(const Expr& v) {
    auto it = var_names_.find(v.get());
    return it != var_names_.end() ? it->second : (v->name.empty() ? "v" : v->name);
  }

  void AllocLine(const Buffer& b, int indent) {
    Line(indent) << BufferName(b) << " = T.alloc_buffer(" << ShapeTuple(b->shape);
    if (b->dtype != DataType::kFloat32) out_ << ", \"" << DataTypeName(b->dtype) << "\"";
    if (b->scope != "global") out_ << ", scope=" << PythonString(b->scope);
    out_ << ")\n";
  }

  std::string AnnotationDict(const Annotations& annotations) {
    std::string s = "{";
    bool first = true;
    for (const auto& [key, value] : annotations) {
      s += (first ? "" : ", ") + PythonString(key) + ": ";
      if (const auto* i = std::get_if<std::int64_t>(&value)) {
        s += std::to_string(*i);
      } else {
        s += PythonString(std::get<std::string>(value));
      }
      first = false;
    }
    return s + "}";
  }

  void PrintStmt(const Stmt& s, int indent) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: PrintFor(static_cast<const ForNode&>(*s), indent); break;
      case StmtKind::kSeq:
        for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) PrintStmt(c, indent);
        break;
      case StmtKind::kIf: {
        const auto& n = static_cast<const IfNode&>(*s);
        Line(indent) << "if " << ExprText(n.condition) << ":\n";
        // A branch with nothing to do (the first of a loop's ranges, where
        // a band's mask fails) is TVMScript's no-op.
        const bool empty = !n.then_case || (n.then_case->kind == StmtKind::kSeq &&
                                            static_cast<const SeqNode&>(*n.then_case).stmts.empty());
        if (empty) Line(indent + 1) << "T.evaluate(0)\n";
        PrintStmt(n.then_case, indent + 1);
        if (n.else_case) {
          Line(indent) << "else:\n";
          PrintStmt(n.else_case, indent + 1);
        }
        break;
      }
      case StmtKind::kStore: {
        const auto& n = static_cast<const StoreNode&>(*s);
        Line(indent) << BufferName(n.buffer) << "[" << IndexList(n.indices) << "] = "
                     << ExprText(n.value) << "\n";
        break;
      }
      case StmtKind::kBlock: PrintBlock(static_cast<const BlockNode&>(*s), indent); break;
    }
  }

  static bool IsPlainSerial(const ForNode& f) {
    return f.for_kind == ForKind::kSerial && f.annotations.empty();
  }

  void PrintFor(const ForNode& first, int indent) {
    // Directly nested plain serial loops print as one T.grid, as TVMScript does.
    std::vector<const ForNode*> grid{&first};
    if (IsPlainSerial(first)) {
      while (grid.back()->body && grid.back()->body->kind == StmtKind::kFor &&
             IsPlainSerial(static_cast<const ForNode&>(*grid.back()->body))) {
        grid.push_back(static_cast<const ForNode*>(grid.back()->body.get()));
      }
    }
    std::string vars, extents;
    for (std::size_t i = 0; i < grid.size(); ++i) {
      vars += (i ? ", " : "") + Define(grid[i]->loop_var);
      extents += (i ? ", " : "") + std::to_string(grid[i]->extent);
    }
    Line(indent) << "for " << vars << " in ";
    if (grid.size() > 1) {
      out_ << "T.grid(" << extents << ")";
    } else if (IsPlainSerial(first)) {
      out_ << "range(" << first.extent << ")";
    } else {
      static const char* kFn[] = {"T.serial", "T.parallel", "T.vectorized", "T.unroll"};
      out_ << kFn[static_cast<int>(first.for_kind)] << "(" << first.extent;
      if (!first.annotations.empty()) out_ << ", annotations=" << AnnotationDict(first.annotations);
      out_ << ")";
    }
    out_ << ":\n";
    PrintStmt(grid.back()->body, indent + 1);
    for (const ForNode* f : grid) Undefine(f->loop_var);
  }

  std::string RegionText(const BufferRegion& r) {
    std::string s = BufferName(r.buffer) + "[";
    for (std::size_t i = 0; i < r.ranges.size(); ++i) {
      const Range& range = r.ranges[i];
      std::int64_t extent = 0;
      s += i ? ", " : "";
      if (AsConstInt(range.extent, &extent) && extent == 1) {
        s += ExprText(range.min);
      } else {
        s += ExprText(range.min) + ":" + ExprText(range.min + range.extent);
      }
    }
    return s + (r.ranges.empty() ? "()]" : "]");
  }

  void PrintBlock(const BlockNode& b, int indent) {
    Line(indent) << "with T.block(" << PythonString(b.name) << "):\n";
    int in = indent + 1;
    // T.axis.remap when every binding is a distinct loop variable.
    bool remap = b.iter_vars.size() > 1;
    std::set<const ExprNode*> seen;
    for (const Expr& binding : b.bindings) {
      remap &= binding->kind == ExprKind::kVar && seen.insert(binding.get()).second;
    }
    if (remap) {
      std::string names, kinds, loops;
      for (std::size_t i = 0; i < b.iter_vars.size(); ++i) {
        names += (i ? ", " : "") + Define(b.iter_vars[i].var);
        kinds += b.iter_vars[i].kind == IterKind::kSpatial ? "S" : "R";
        loops += (i ? ", " : "") + ExprText(b.bindings[i]);
      }
      Line(in) << names << " = T.axis.remap(\"" << kinds << "\", [" << loops << "])\n";
    } else {
      for (std::size_t i = 0; i < b.iter_vars.size(); ++i) {
        const IterVar& iv = b.iter_vars[i];
        std::string binding = ExprText(b.bindings[i]);
        Line(in) << Define(iv.var) << " = T.axis."
                 << (iv.kind == IterKind::kSpatial ? "spatial" : "reduce") << "(" << iv.extent
                 << ", " << binding << ")\n";
      }
    }
    if (b.predicate) Line(in) << "T.where(" << ExprText(b.predicate) << ")\n";
    std::string reads, writes;
    for (std::size_t i = 0; i < b.reads.size(); ++i) reads += (i ? ", " : "") + RegionText(b.reads[i]);
    for (std::size_t i = 0; i < b.writes.size(); ++i) writes += (i ? ", " : "") + RegionText(b.writes[i]);
    Line(in) << "T.reads(" << reads << ")\n";
    Line(in) << "T.writes(" << writes << ")\n";
    if (!b.annotations.empty()) Line(in) << "T.block_attr(" << AnnotationDict(b.annotations) << ")\n";
    for (const Buffer& a : b.alloc_buffers) AllocLine(a, in);
    if (b.init) {
      Line(in) << "with T.init():\n";
      PrintStmt(b.init, in + 1);
    }
    PrintStmt(b.body, in);
    for (const IterVar& iv : b.iter_vars) Undefine(iv.var);
  }

  // A scalar's element is `D[()]` in TVMScript (`D[]` is not Python).
  std::string IndexList(const std::vector<Expr>& indices) {
    if (indices.empty()) return "()";
    std::string s;
    for (std::size_t i = 0; i < indices.size(); ++i) s += (i ? ", " : "") + ExprText(indices[i]);
    return s;
  }

  void PrintExprTo(const Expr& e, std::string* s) {
    switch (e->kind) {
      case ExprKind::kIntImm:
        if (e->dtype == DataType::kInt32) {
          *s += std::to_string(e->int_value);
        } else if (e->dtype == DataType::kBool) {
          *s += e->int_value ? "T.bool(True)" : "T.bool(False)";
        } else {
          *s += "T.int64(" + std::to_string(e->int_value) + ")";
        }
        return;
      case ExprKind::kFloatImm:
        *s += "T." + std::string(DataTypeName(e->dtype)) + "(" + FormatFloat(e->float_value) + ")";
        return;
      case ExprKind::kVar: *s += VarName(e); return;
      case ExprKind::kLoad:
        *s += BufferName(e->buffer) + "[" + IndexList(e->operands) + "]";
        return;
      case ExprKind::kMin: case ExprKind::kMax:
        *s += e->kind == ExprKind::kMin ? "T.min(" : "T.max(";
        PrintExprTo(e->operands[0], s);
        *s += ", ";
        PrintExprTo(e->operands[1], s);
        *s += ")";
        return;
      case ExprKind::kNot:
        *s += "not ";
        PrintOperand(e->operands[0], Strength(e), false, s);
        return;
      case ExprKind::kSelect:
        *s += "T.if_then_else(" + IndexList(e->operands) + ")";
        return;
      case ExprKind::kCast:
        *s += "T.Cast(\"" + std::string(DataTypeName(e->dtype)) + "\", ";
        PrintExprTo(e->operands[0], s);
        *s += ")";
        return;
      case ExprKind::kCall:
        *s += "T." + e->name + "(" + IndexList(e->operands) + ")";
        return;
      default: {
        const char* symbol = InfixSymbol(e->kind);
        PrintOperand(e->operands[0], Strength(e), false, s);
        *s += symbol;
        PrintOperand(e->operands[1], Strength(e), true, s);
      }
    }
  }

  // Parenthesizes an operand that binds looser than its parent (or equally,
  // on the right, since every infix operator here is left-associative).
  void PrintOperand(const Expr& e, int parent_strength, bool right, std::string* s) {
    int strength = Strength(e);
    bool paren = strength < parent_strength || (right && strength == parent_strength);
    if (paren) *s += "(";
    PrintExprTo(e, s);
    if (paren) *s += ")";
  }

  std::ostringstream out_;
  std::unordered_map<const ExprNode*, std::string> var_names_;
  std::set<std::string> names_in_scope_;
  std::unordered_map<const BufferNode*, std::string> buffer_names_;
  std::set<std::string> used_buffer_names_;
};

}  // namespace

std::string PythonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string PrintProgram(const PrimFunc& func) { return Printer().Program(func); }

std::string PrintExpr(const Expr& expr) { return Printer().ExprText(expr); }

}  // namespace tunedb::ir
