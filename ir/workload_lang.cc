#include "ir/workload_lang.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "ir/limits.h"
#include "ir/text_file.h"
#include "ir/simplify.h"
#include "ir/te.h"

namespace tunedb::ir {

WorkloadParseError::WorkloadParseError(const std::string& file, int line, int column,
                                       const std::string& what)
    : IrError(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + what),
      line_(line),
      column_(column) {}

namespace {

// ---- lexer ------------------------------------------------------------------

enum class Tok { kIdent, kInt, kFloat, kPunct, kNewline, kEnd };

struct Token {
  Tok kind;
  std::string text;
  int line;
  int column;
};

std::string Describe(const Token& t) {
  switch (t.kind) {
    case Tok::kNewline: return "end of line";
    case Tok::kEnd: return "end of file";
    default: return "'" + t.text + "'";
  }
}

std::vector<Token> Lex(std::string_view text, const std::string& file) {
  std::vector<Token> tokens;
  int line = 1, col = 1;
  std::size_t i = 0;
  auto advance = [&](std::size_t n) {
    i += n;
    col += static_cast<int>(n);
  };
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') {
      tokens.push_back({Tok::kNewline, "\n", line, col});
      ++i;
      ++line;
      col = 1;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      advance(1);
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') advance(1);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      tokens.push_back({Tok::kIdent, std::string(text.substr(i, j - i)), line, col});
      advance(j - i);
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      std::size_t j = i;
      bool is_float = false;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      if (j < text.size() && text[j] == '.') {
        is_float = true;
        ++j;
        while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      }
      if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < text.size() && (text[k] == '+' || text[k] == '-')) ++k;
        if (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) {
          is_float = true;
          j = k;
          while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        }
      }
      tokens.push_back({is_float ? Tok::kFloat : Tok::kInt, std::string(text.substr(i, j - i)), line, col});
      advance(j - i);
    } else {
      static const char* kTwo[] = {"<=", ">=", "==", "!=", "&&", "||"};
      std::string punct(1, c);
      for (const char* two : kTwo) {
        if (text.substr(i, 2) == two) punct = two;
      }
      if (punct.size() == 1 && std::string_view("()[],:=+-*/%<>!?").find(c) == std::string_view::npos) {
        // A control or non-ASCII byte is shown as \xNN: printed raw, a NUL
        // would cut the message short.
        unsigned char byte = static_cast<unsigned char>(c);
        char shown[8];
        if (std::isprint(byte)) {
          std::snprintf(shown, sizeof shown, "%c", c);
        } else {
          std::snprintf(shown, sizeof shown, "\\x%02x", byte);
        }
        throw WorkloadParseError(file, line, col, std::string("unexpected character '") + shown + "'");
      }
      tokens.push_back({Tok::kPunct, punct, line, col});
      advance(punct.size());
    }
  }
  tokens.push_back({Tok::kNewline, "\n", line, col});
  tokens.push_back({Tok::kEnd, "", line, col});
  return tokens;
}

// ---- syntax tree of an expression ------------------------------------------

struct Node;
using NodePtr = std::shared_ptr<Node>;
enum class NodeKind { kNumber, kName, kIndex, kCall, kUnary, kBinary, kTernary };

struct Node {
  NodeKind kind;
  std::string text;  // number text, name, function, operator
  bool is_float = false;
  std::vector<NodePtr> args;
  int line, column;
  int depth = 1;  // levels down to the deepest leaf, bounded by kMaxReadExprDepth
};

// ---- parser -----------------------------------------------------------------

struct ReduceAxisSyntax {
  std::string name;
  std::int64_t extent;
  int line, column;
};

class Parser {
 public:
  Parser(std::string_view text, std::string file) : file_(std::move(file)), tokens_(Lex(text, file_)) {}

  PrimFunc Parse() {
    while (Peek().kind != Tok::kEnd) {
      if (Peek().kind == Tok::kNewline) {
        Next();
        continue;
      }
      const Token& t = Peek();
      if (t.kind == Tok::kIdent && t.text == "input" && PeekAt(1).kind == Tok::kIdent) {
        ParseInput();
      } else if (t.kind == Tok::kIdent && t.text == "output" && PeekAt(1).kind == Tok::kIdent) {
        ParseOutput();
      } else if (t.kind == Tok::kIdent) {
        ParseStage();
      } else {
        Fail(t, "expected 'input', 'output' or a stage definition, found " + Describe(t));
      }
      ExpectEndOfLine();
    }
    return Finish();
  }

 private:
  struct TensorInfo {
    te::Tensor tensor;
    bool is_input;
    int line, column;
  };

  [[noreturn]] void Fail(const Token& at, const std::string& what) const {
    throw WorkloadParseError(file_, at.line, at.column, what);
  }
  [[noreturn]] void Fail(const Node& at, const std::string& what) const {
    throw WorkloadParseError(file_, at.line, at.column, what);
  }

  const Token& Peek() const { return tokens_[pos_]; }
  const Token& PeekAt(std::size_t k) const { return tokens_[std::min(pos_ + k, tokens_.size() - 1)]; }
  const Token& Next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool IsPunct(const char* p) const { return Peek().kind == Tok::kPunct && Peek().text == p; }
  bool Accept(const char* p) {
    if (!IsPunct(p)) return false;
    Next();
    return true;
  }
  const Token& Expect(const char* p, const std::string& context) {
    if (!IsPunct(p)) Fail(Peek(), std::string("expected '") + p + "' " + context + ", found " + Describe(Peek()));
    return Next();
  }
  const Token& ExpectIdent(const std::string& what) {
    if (Peek().kind != Tok::kIdent) Fail(Peek(), "expected " + what + ", found " + Describe(Peek()));
    return Next();
  }
  std::int64_t ExpectPositiveInt(const std::string& what) {
    const Token& t = Peek();
    if (t.kind != Tok::kInt) Fail(t, "expected " + what + " (a positive integer), found " + Describe(t));
    Next();
    std::int64_t v = 0;
    for (char c : t.text) {
      v = v * 10 + (c - '0');
      if (v > (std::int64_t{1} << 40)) Fail(t, what + " is too large");
    }
    if (v < 1) Fail(t, what + " must be at least 1");
    return v;
  }
  void ExpectEndOfLine() {
    if (Peek().kind != Tok::kNewline && Peek().kind != Tok::kEnd) {
      Fail(Peek(), "expected end of line, found " + Describe(Peek()));
    }
  }

  void CheckNewName(const Token& t) {
    if (tensors_.count(t.text)) {
      const TensorInfo& prev = tensors_.at(t.text);
      Fail(t, "'" + t.text + "' is already defined at line " + std::to_string(prev.line));
    }
  }

  void ParseInput() {
    Next();  // input
    const Token& name = ExpectIdent("an input name");
    CheckNewName(name);
    Expect(":", "after the input name");
    const Token& type = ExpectIdent("a data type (f32, f64, i32, i64)");
    DataType dtype;
    try {
      dtype = ParseDataType(type.text);
    } catch (const IrError& e) {
      Fail(type, e.what());
    }
    if (dtype == DataType::kBool) Fail(type, "inputs cannot be bool");
    Expect("[", "to start the input's shape");
    std::vector<std::int64_t> shape;  // empty: a scalar, `s: f32[]`, as a stage `S[] = ...` is one
    if (!IsPunct("]")) {
      do {
        shape.push_back(ExpectPositiveInt("a dimension"));
      } while (Accept(","));
    }
    Expect("]", "to close the input's shape");
    try {
      tensors_[name.text] = {builder_.Placeholder(name.text, shape, dtype), true, name.line, name.column};
    } catch (const IrError& e) {
      Fail(name, e.what());
    }
    inputs_.push_back(name.text);
  }

  void ParseOutput() {
    const Token& kw = Next();  // output
    do {
      const Token& name = ExpectIdent("an output name");
      auto it = tensors_.find(name.text);
      if (it == tensors_.end()) Fail(name, "output '" + name.text + "' is not defined");
      if (it->second.is_input) Fail(name, "output '" + name.text + "' is an input, not a computed stage");
      for (const std::string& o : outputs_) {
        if (o == name.text) Fail(name, "output '" + name.text + "' is listed twice");
      }
      outputs_.push_back(name.text);
    } while (Accept(","));
    output_line_ = kw.line;
  }

  void ParseStage() {
    const Token& name = Next();
    CheckNewName(name);
    if (output_line_) Fail(name, "stages must come before the 'output' line");
    Expect("[", "after the stage name (a stage is NAME[i, j, ...] = ...)");
    struct IndexDef {
      Token token;
      std::optional<std::int64_t> extent;
    };
    std::vector<IndexDef> indices;
    std::set<std::string> index_names;
    if (!IsPunct("]")) {
      do {
        const Token& idx = ExpectIdent("an index name");
        if (!index_names.insert(idx.text).second) Fail(idx, "index '" + idx.text + "' appears twice");
        IndexDef def{idx, std::nullopt};
        if (Peek().kind == Tok::kIdent && Peek().text == "in") {
          Next();
          def.extent = ExpectPositiveInt("the extent of '" + idx.text + "'");
        }
        indices.push_back(def);
      } while (Accept(","));
    }
    Expect("]", "to close the stage's indices");
    Expect("=", "after the stage's indices");

    // A reduction: OP(k in N, ...) EXPR
    std::optional<te::ReduceOp> op;
    std::vector<ReduceAxisSyntax> reduce_axes;
    const Token& head = Peek();
    if (head.kind == Tok::kIdent && (head.text == "sum" || head.text == "max" || head.text == "min") &&
        PeekAt(1).text == "(" && PeekAt(2).kind == Tok::kIdent && PeekAt(3).text == "in") {
      op = head.text == "sum" ? te::ReduceOp::kSum : head.text == "max" ? te::ReduceOp::kMax : te::ReduceOp::kMin;
      Next();
      Next();
      do {
        const Token& r = ExpectIdent("a reduction index");
        if (index_names.count(r.text)) Fail(r, "reduction index '" + r.text + "' is already an index of the stage");
        index_names.insert(r.text);
        if (!(Peek().kind == Tok::kIdent && Peek().text == "in")) {
          Fail(Peek(), "expected 'in' after reduction index '" + r.text + "', found " + Describe(Peek()));
        }
        Next();
        reduce_axes.push_back({r.text, ExpectPositiveInt("the extent of '" + r.text + "'"), r.line, r.column});
      } while (Accept(","));
      Expect(")", "to close the reduction's indices");
    }
    NodePtr body = ParseExpr();

    // Resolve extents of the spatial indices from their uses.
    std::vector<te::Axis> axes;
    for (IndexDef& def : indices) {
      if (!def.extent) def.extent = InferExtent(def.token, *body);
      axes.push_back({def.token.text, *def.extent});
    }
    std::vector<te::Axis> raxes;
    for (const ReduceAxisSyntax& r : reduce_axes) raxes.push_back({r.name, r.extent});

    te::Tensor out;
    try {
      if (op) {
        out = builder_.Reduce(name.text, axes, *op, raxes, [&](const te::Vars& s, const te::Vars& r) {
          std::map<std::string, Expr> scope;
          ranges_.clear();
          for (std::size_t i = 0; i < axes.size(); ++i) {
            scope[axes[i].name] = s[i];
            ranges_[s[i].get()] = axes[i].extent;
          }
          for (std::size_t i = 0; i < raxes.size(); ++i) {
            scope[raxes[i].name] = r[i];
            ranges_[r[i].get()] = raxes[i].extent;
          }
          return Lower(*body, scope, std::nullopt);
        });
      } else {
        out = builder_.Compute(name.text, axes, [&](const te::Vars& s) {
          std::map<std::string, Expr> scope;
          ranges_.clear();
          for (std::size_t i = 0; i < axes.size(); ++i) {
            scope[axes[i].name] = s[i];
            ranges_[s[i].get()] = axes[i].extent;
          }
          return Lower(*body, scope, std::nullopt);
        });
      }
    } catch (const WorkloadParseError&) {
      throw;
    } catch (const IrError& e) {
      Fail(name, std::string("in stage '") + name.text + "': " + e.what());
    }
    if (out.buffer()->dtype == DataType::kBool) Fail(name, "stage '" + name.text + "' computes bool values; use select to make numbers");
    tensors_[name.text] = {out, false, name.line, name.column};
    stages_.push_back(name.text);
  }

  std::int64_t InferExtent(const Token& index, const Node& body) {
    std::optional<std::int64_t> extent;
    std::function<void(const Node&)> visit = [&](const Node& n) {
      if (n.kind == NodeKind::kIndex) {
        auto it = tensors_.find(n.text);
        if (it == tensors_.end()) Fail(n, "unknown tensor '" + n.text + "'");
        const auto& shape = it->second.tensor.buffer()->shape;
        for (std::size_t d = 0; d < n.args.size() && d < shape.size(); ++d) {
          const Node& a = *n.args[d];
          if (a.kind == NodeKind::kName && a.text == index.text) {
            if (extent && *extent != shape[d]) {
              Fail(a, "index '" + index.text + "' has extent " + std::to_string(*extent) +
                          " from an earlier use but " + std::to_string(shape[d]) + " in " + n.text +
                          "; give it explicitly as '" + index.text + " in N'");
            }
            extent = shape[d];
          }
        }
      }
      for (const NodePtr& a : n.args) visit(*a);
    };
    visit(body);
    if (!extent) {
      Fail(index, "cannot infer the extent of index '" + index.text +
                      "' (it is never a plain index of a tensor); write '" + index.text + " in N'");
    }
    return *extent;
  }

  // ---- expressions: precedence climbing ----

  NodePtr MakeNode(NodeKind kind, const Token& at, std::string text, std::vector<NodePtr> args = {}) {
    auto n = std::make_shared<Node>();
    n->kind = kind;
    n->text = std::move(text);
    n->args = std::move(args);
    n->line = at.line;
    n->column = at.column;
    for (const NodePtr& a : n->args) n->depth = std::max(n->depth, a->depth + 1);
    if (n->depth > kMaxReadExprDepth) Fail(at, TooDeep());
    return n;
  }

  // Every pass over an expression recurses through it (kMaxReadExprDepth), and
  // so does this parser: ParseUnary counts its open calls, which every level
  // of parentheses, indices, arguments and prefix operators passes through.
  static std::string TooDeep() {
    return "the expression is nested deeper than " + std::to_string(kMaxReadExprDepth) +
           " levels; compute a part of it as a stage of its own";
  }

  NodePtr ParseExpr() {
    NodePtr cond = ParseBinary(0);
    if (IsPunct("?")) {
      const Token& q = Next();
      NodePtr a = ParseExpr();
      Expect(":", "in 'cond ? a : b'");
      NodePtr b = ParseExpr();
      return MakeNode(NodeKind::kTernary, q, "?", {cond, a, b});
    }
    return cond;
  }

  static int Precedence(const std::string& op) {
    if (op == "||") return 1;
    if (op == "&&") return 2;
    if (op == "==" || op == "!=") return 3;
    if (op == "<" || op == "<=" || op == ">" || op == ">=") return 4;
    if (op == "+" || op == "-") return 5;
    if (op == "*" || op == "/" || op == "%") return 6;
    return -1;
  }

  NodePtr ParseBinary(int min_prec) {
    NodePtr lhs = ParseUnary();
    while (Peek().kind == Tok::kPunct) {
      int prec = Precedence(Peek().text);
      if (prec < 0 || prec < min_prec) break;
      const Token& op = Next();
      NodePtr rhs = ParseBinary(prec + 1);
      lhs = MakeNode(NodeKind::kBinary, op, op.text, {lhs, rhs});
    }
    return lhs;
  }

  NodePtr ParseUnary() {
    if (open_parses_ >= kMaxReadExprDepth) Fail(Peek(), TooDeep());
    ++open_parses_;
    NodePtr n = ParseUnaryUnchecked();
    --open_parses_;
    return n;
  }
  NodePtr ParseUnaryUnchecked() {
    if (IsPunct("-") || IsPunct("!")) {
      const Token& op = Next();
      return MakeNode(NodeKind::kUnary, op, op.text, {ParseUnary()});
    }
    return ParsePrimary();
  }

  NodePtr ParsePrimary() {
    const Token& t = Peek();
    if (t.kind == Tok::kInt || t.kind == Tok::kFloat) {
      Next();
      NodePtr n = MakeNode(NodeKind::kNumber, t, t.text);
      n->is_float = t.kind == Tok::kFloat;
      return n;
    }
    if (Accept("(")) {
      NodePtr e = ParseExpr();
      Expect(")", "to close the parenthesis");
      return e;
    }
    if (t.kind == Tok::kIdent) {
      Next();
      if (Accept("[")) {
        std::vector<NodePtr> args;  // none: a scalar's one element, `S[]`
        if (!IsPunct("]")) {
          do {
            args.push_back(ParseExpr());
          } while (Accept(","));
        }
        Expect("]", "to close the indices of " + t.text);
        return MakeNode(NodeKind::kIndex, t, t.text, std::move(args));
      }
      if (Accept("(")) {
        // OP(k in N) here is a reduction inside a larger expression, which
        // the language does not have (a stage is one reduction, whole).
        if (Peek().kind == Tok::kIdent && PeekAt(1).kind == Tok::kIdent && PeekAt(1).text == "in") {
          Fail(t, "a reduction '" + t.text + "(" + Peek().text +
                      " in N) expr' must be the whole right-hand side of a stage; compute it as a stage of its "
                      "own and use that stage here");
        }
        std::vector<NodePtr> args;
        if (!IsPunct(")")) {
          do {
            args.push_back(ParseExpr());
          } while (Accept(","));
        }
        Expect(")", "to close the arguments of " + t.text);
        return MakeNode(NodeKind::kCall, t, t.text, std::move(args));
      }
      return MakeNode(NodeKind::kName, t, t.text);
    }
    Fail(t, "expected an expression, found " + Describe(t));
  }

  // ---- lowering to IR expressions ----

  static bool IsLiteral(const Node& n) {
    return n.kind == NodeKind::kNumber || (n.kind == NodeKind::kUnary && n.text == "-" && IsLiteral(*n.args[0]));
  }

  Expr Literal(const Node& n, std::optional<DataType> hint) {
    DataType t = hint ? *hint : (n.is_float ? DataType::kFloat32 : DataType::kInt32);
    if (t == DataType::kBool) Fail(n, "a number where a condition is expected");
    if (n.is_float && IsInt(t)) Fail(n, "float literal " + n.text + " where an integer is expected");
    if (IsFloat(t)) {
      double v = 0;
      try {
        v = std::stod(n.text);
      } catch (const std::out_of_range&) {
        Fail(n, "number " + n.text + " is out of range for " + std::string(DataTypeName(t)));
      }
      // A double can hold what a float32 cannot; FloatImm would round it to
      // infinity or to zero without a word.
      if (t == DataType::kFloat32 && !Float32Holds(v)) {
        Fail(n, "number " + n.text + (std::abs(v) > 1 ? " is out of range for float32"
                                                         : " is too small for float32: it would be 0"));
      }
      return FloatImm(t, v);
    }
    std::int64_t v = 0;
    try {
      v = std::stoll(n.text);
    } catch (...) {
      Fail(n, "integer literal " + n.text + " is out of range");
    }
    // IntImm would wrap it silently.
    if (t == DataType::kInt32 && (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())) {
      Fail(n, "integer literal " + n.text + " is out of range for int32");
    }
    return IntImm(t, v);
  }

  // A load that every iteration runs must stay inside its tensor. Where
  // an index is a sum of distinct indices times constants, its range over
  // the stage's iteration is exact, and one outside [0, extent) is a
  // mistake of the workload (k + 1 for k in 0..N-1): say so here, with the
  // line, rather than when the first run trips over it. Other indices
  // (floor division, products of indices) are left to the interpreter's
  // check, as are loads a condition guards (padding reads under select).
  void CheckIndexInBounds(const Node& at, const Expr& index, const std::string& tensor, std::size_t dim,
                          std::int64_t extent) {
    LinearForm form = ToLinearForm(index, ranges_);
    std::int64_t lo = form.constant, hi = form.constant;
    for (const auto& [atom, coefficient] : form.terms) {
      auto range = ranges_.find(atom.get());
      if (atom->kind != ExprKind::kVar || range == ranges_.end()) return;
      std::int64_t last = 0;
      std::int64_t& end = coefficient < 0 ? lo : hi;
      if (__builtin_mul_overflow(coefficient, range->second - 1, &last) || __builtin_add_overflow(end, last, &end)) {
        return;  // beyond any tensor's extent, but let the limit checks say so
      }
    }
    if (lo >= 0 && hi < extent) return;
    Fail(StartOf(at), "dimension " + std::to_string(dim + 1) + " of '" + tensor + "' is read at " + std::to_string(lo) +
                 ".." + std::to_string(hi) + ", outside its extent " + std::to_string(extent) +
                 " (guard a padding read with select)");
  }

  // Where an expression starts, rather than its operator (k + 1 at 'k').
  static const Node& StartOf(const Node& n) {
    const Node* start = &n;
    while ((start->kind == NodeKind::kBinary || start->kind == NodeKind::kTernary) && !start->args.empty()) {
      start = start->args[0].get();
    }
    return *start;
  }

  // Counts the guarded parts being lowered (the branches of select and ?:,
  // the right side of && and ||): a load there may run only where its
  // condition holds.
  struct Guarded {
    explicit Guarded(int& depth) : depth_(depth) { ++depth_; }
    ~Guarded() { --depth_; }
    Guarded(const Guarded&) = delete;
    Guarded& operator=(const Guarded&) = delete;
    int& depth_;
  };

  // Lowers a pair of operands so that a bare number takes the type of the
  // other operand.
  std::pair<Expr, Expr> LowerPair(const Node& a, const Node& b, const std::map<std::string, Expr>& scope,
                                  std::optional<DataType> hint) {
    if (IsLiteral(a) && !IsLiteral(b)) {
      Expr rb = Lower(b, scope, std::nullopt);
      return {Lower(a, scope, rb->dtype), rb};
    }
    if (IsLiteral(b) && !IsLiteral(a)) {
      Expr ra = Lower(a, scope, std::nullopt);
      return {ra, Lower(b, scope, ra->dtype)};
    }
    if (IsLiteral(a) && IsLiteral(b) && !hint && (a.is_float || b.is_float)) hint = DataType::kFloat32;
    return {Lower(a, scope, hint), Lower(b, scope, hint)};
  }

  Expr Lower(const Node& n, const std::map<std::string, Expr>& scope, std::optional<DataType> hint) {
    Expr e;
    try {
      e = LowerUnchecked(n, scope, hint);
    } catch (const WorkloadParseError&) {
      throw;
    } catch (const IrError& err) {
      Fail(n, err.what());
    }
    // Its operands passed this check as they were lowered, so a part that
    // can leave its type is this one (ir/limits.h).
    if (auto escape = FindIntEscape(e, ranges_)) {
      bool narrow = e->dtype == DataType::kInt32;
      Fail(StartOf(n), std::string("this ") + (narrow ? "int32" : "int64") + " expression ranges over " +
                           escape->range + ", outside " + (narrow ? "int32; compute it in i64 (i64(...))" : "int64"));
    }
    return e;
  }

  Expr LowerUnchecked(const Node& n, const std::map<std::string, Expr>& scope, std::optional<DataType> hint) {
    switch (n.kind) {
      case NodeKind::kNumber: return Literal(n, hint);
      case NodeKind::kName: {
        auto it = scope.find(n.text);
        if (it != scope.end()) return it->second;
        if (auto t = tensors_.find(n.text); t != tensors_.end()) {
          Fail(n, "tensor '" + n.text + "' needs indices: " + n.text +
                      (t->second.tensor.buffer()->shape.empty() ? "[] (a scalar)" : "[...]"));
        }
        Fail(n, "unknown name '" + n.text + "'");
      }
      case NodeKind::kIndex: {
        auto it = tensors_.find(n.text);
        if (it == tensors_.end()) {
          Fail(n, scope.count(n.text) ? "'" + n.text + "' is an index, not a tensor"
                                      : "unknown tensor '" + n.text + "'");
        }
        const Buffer& buf = it->second.tensor.buffer();
        if (n.args.size() != buf->shape.size()) {
          Fail(n, "tensor '" + n.text + "' has " + std::to_string(buf->shape.size()) + " dimension(s), indexed with " +
                      std::to_string(n.args.size()));
        }
        std::vector<Expr> idx;
        for (std::size_t d = 0; d < n.args.size(); ++d) {
          Expr e = Lower(*n.args[d], scope, DataType::kInt32);
          if (!IsInt(e->dtype)) Fail(*n.args[d], "an index of '" + n.text + "' must be an integer expression");
          if (guarded_ == 0) CheckIndexInBounds(*n.args[d], e, n.text, d, buf->shape[d]);
          idx.push_back(e);
        }
        return Load(buf, idx);
      }
      case NodeKind::kUnary: {
        if (n.text == "!") {
          Expr a = Lower(*n.args[0], scope, DataType::kBool);
          if (a->dtype != DataType::kBool) Fail(n, "'!' needs a condition");
          return Not(a);
        }
        if (n.args[0]->kind == NodeKind::kNumber) {
          auto neg = std::make_shared<Node>(*n.args[0]);
          neg->text = "-" + neg->text;
          return Literal(*neg, hint);
        }
        Expr a = Lower(*n.args[0], scope, hint);
        return MakeConst(a->dtype, 0) - a;
      }
      case NodeKind::kBinary: {
        const std::string& op = n.text;
        std::optional<DataType> operand_hint = hint;
        if (Precedence(op) <= 2) operand_hint = DataType::kBool;
        if (Precedence(op) == 3 || Precedence(op) == 4) operand_hint = std::nullopt;
        if (op == "&&" || op == "||") {
          // Short-circuit, as in C: the right side runs only when the left
          // allows, so it can guard a load (i > 0 && A[i - 1] > 0).
          Expr a = Lower(*n.args[0], scope, DataType::kBool);
          Guarded guarded(guarded_);
          Expr b = Lower(*n.args[1], scope, DataType::kBool);
          return op == "&&" ? (a && b) : (a || b);
        }
        auto [a, b] = LowerPair(*n.args[0], *n.args[1], scope, operand_hint);
        if (op == "+") return a + b;
        if (op == "-") return a - b;
        if (op == "*") return a * b;
        if (op == "/") return IsInt(a->dtype) ? FloorDiv(a, b) : a / b;
        if (op == "%") return FloorMod(a, b);
        if (op == "<") return Binary(ExprKind::kLt, a, b);
        if (op == "<=") return Binary(ExprKind::kLe, a, b);
        if (op == ">") return Binary(ExprKind::kGt, a, b);
        if (op == ">=") return Binary(ExprKind::kGe, a, b);
        if (op == "==") return Binary(ExprKind::kEq, a, b);
        return Binary(ExprKind::kNe, a, b);
      }
      case NodeKind::kTernary: {
        Expr c = Lower(*n.args[0], scope, DataType::kBool);
        Guarded guarded(guarded_);
        auto [a, b] = LowerPair(*n.args[1], *n.args[2], scope, hint);
        return Select(c, a, b);
      }
      case NodeKind::kCall: return LowerCall(n, scope, hint);
    }
    Fail(n, "unsupported expression");
  }

  Expr LowerCall(const Node& n, const std::map<std::string, Expr>& scope, std::optional<DataType> hint) {
    const std::string& f = n.text;
    auto arity = [&](std::size_t k) {
      if (n.args.size() != k) {
        Fail(n, f + " takes " + std::to_string(k) + " argument(s), got " + std::to_string(n.args.size()));
      }
    };
    if (f == "max" || f == "min") {
      arity(2);
      auto [a, b] = LowerPair(*n.args[0], *n.args[1], scope, hint);
      return f == "max" ? Max(a, b) : Min(a, b);
    }
    if (f == "select") {
      arity(3);
      Expr c = Lower(*n.args[0], scope, DataType::kBool);
      Guarded guarded(guarded_);
      auto [a, b] = LowerPair(*n.args[1], *n.args[2], scope, hint);
      return Select(c, a, b);
    }
    if (f == "sum") Fail(n, "a reduction is written 'sum(k in N) expr' and must be the whole right-hand side");
    int k = 0;
    if (IsMathFunction(f, &k)) {
      arity(static_cast<std::size_t>(k));
      std::optional<DataType> float_hint = hint && IsFloat(*hint) ? hint : std::optional(DataType::kFloat32);
      std::vector<Expr> args;
      if (k == 2) {
        auto [a, b] = LowerPair(*n.args[0], *n.args[1], scope, float_hint);
        args = {a, b};
      } else {
        args.push_back(Lower(*n.args[0], scope, float_hint));
      }
      return Call(f, args);
    }
    DataType cast_to;
    try {
      cast_to = ParseDataType(f);
    } catch (const IrError&) {
      Fail(n, "unknown function '" + f + "'");
    }
    arity(1);
    Expr a = Lower(*n.args[0], scope, std::nullopt);
    return Cast(cast_to, a);
  }

  PrimFunc Finish() {
    if (stages_.empty()) Fail(Peek(), "the workload defines no stage");
    std::vector<std::string> outputs = outputs_;
    if (outputs.empty()) {
      std::set<const BufferNode*> read;
      // Every stage that no later stage reads is a result.
      PrimFunc all = builder_.Build(AllStageParams());
      VisitStmt(all.body, [&](const Stmt& s) {
        if (s->kind != StmtKind::kBlock) return;
        for (const BufferRegion& r : static_cast<const BlockNode&>(*s).reads) read.insert(r.buffer.get());
      });
      for (const std::string& s : stages_) {
        if (!read.count(tensors_.at(s).tensor.buffer().get())) outputs.push_back(s);
      }
    }
    std::vector<te::Tensor> params;
    for (const std::string& i : inputs_) params.push_back(tensors_.at(i).tensor);
    for (const std::string& o : outputs) params.push_back(tensors_.at(o).tensor);
    try {
      return builder_.Build(params);
    } catch (const IrError& e) {
      Fail(Peek(), e.what());
    }
  }

  std::vector<te::Tensor> AllStageParams() const {
    std::vector<te::Tensor> params;
    for (const std::string& i : inputs_) params.push_back(tensors_.at(i).tensor);
    for (const std::string& s : stages_) params.push_back(tensors_.at(s).tensor);
    return params;
  }

  std::string file_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  te::Builder builder_;
  std::map<std::string, TensorInfo> tensors_;
  std::vector<std::string> inputs_;
  std::vector<std::string> stages_;
  std::vector<std::string> outputs_;
  int output_line_ = 0;
  VarRanges ranges_;  // the current stage's indices and their extents
  int guarded_ = 0;   // > 0 while lowering what a condition guards
  int open_parses_ = 0;  // ParseUnary calls not yet returned
};

}  // namespace

PrimFunc ParseWorkloadText(std::string_view text, std::string_view file) {
  return Parser(WithoutByteOrderMark(text), std::string(file)).Parse();
}

}  // namespace tunedb::ir
