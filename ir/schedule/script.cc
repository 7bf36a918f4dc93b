#include "ir/schedule/script.h"

#include <cctype>
#include <map>

#include <nlohmann/json.hpp>

#include "ir/schedule/instruction.h"
#include "ir/text_file.h"

namespace tunedb::ir {
namespace {

// Lists and calls are read recursively (and their values freed so), and
// 100,000 nested brackets overflowed the stack; a script's lists nest a
// level or two.
constexpr int kMaxBracketDepth = 64;

struct Tok {
  enum Kind { kName, kInt, kFloat, kString, kPunct, kNewline, kEnd } kind;
  std::string text;
  int line;
};

class ScriptRunner {
 public:
  ScriptRunner(Schedule& sch, std::string_view text, std::string file) : sch_(sch), file_(std::move(file)) {
    Lex(text);
  }

  void Run() {
    while (Peek().kind != Tok::kEnd) {
      if (Peek().kind == Tok::kNewline) {
        Next();
        continue;
      }
      line_ = Peek().line;
      Statement();
      if (Peek().kind != Tok::kNewline && Peek().kind != Tok::kEnd) {
        Fail("unexpected '" + Peek().text + "' after the statement");
      }
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw ScheduleError(file_ + ":" + std::to_string(line_) + ": " + what);
  }

  void Lex(std::string_view text) {
    int line = 1, depth = 0;
    std::size_t i = 0;
    while (i < text.size()) {
      char c = text[i];
      if (c == '\n') {
        if (depth == 0) tokens_.push_back({Tok::kNewline, "\n", line});
        ++line;
        ++i;
      } else if (c == '#') {
        while (i < text.size() && text[i] != '\n') ++i;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t j = i;
        while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
        tokens_.push_back({Tok::kName, std::string(text.substr(i, j - i)), line});
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        std::size_t j = i;
        bool is_float = false;
        while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.' ||
                                   text[j] == 'e' || text[j] == 'E' ||
                                   ((text[j] == '-' || text[j] == '+') && (text[j - 1] == 'e' || text[j - 1] == 'E')))) {
          is_float |= !std::isdigit(static_cast<unsigned char>(text[j]));
          ++j;
        }
        tokens_.push_back({is_float ? Tok::kFloat : Tok::kInt, std::string(text.substr(i, j - i)), line});
        i = j;
      } else if (c == '"' || c == '\'') {
        std::size_t j = i + 1;
        std::string s;
        while (j < text.size() && text[j] != c && text[j] != '\n') {
          if (text[j] == '\\' && j + 1 < text.size()) ++j;
          s += text[j++];
        }
        if (j >= text.size() || text[j] != c) {
          line_ = line;
          Fail("unterminated string");
        }
        // A string becomes part of the trace (a block name, an annotation),
        // and the trace is stored as JSON, which holds UTF-8 text only: the
        // JSON writer is the judge.
        try {
          (void)nlohmann::json(s).dump();
        } catch (const nlohmann::json::type_error&) {
          line_ = line;
          Fail("a string that is not UTF-8 text");
        }
        tokens_.push_back({Tok::kString, s, line});
        i = j + 1;
      } else if (std::string_view("()[],=.*:-").find(c) != std::string_view::npos) {
        if ((c == '(' || c == '[') && ++depth > kMaxBracketDepth) {
          line_ = line;
          Fail("brackets nested deeper than " + std::to_string(kMaxBracketDepth) + " levels");
        }
        if (c == ')' || c == ']') --depth;
        tokens_.push_back({Tok::kPunct, std::string(1, c), line});
        ++i;
      } else if (c == '-' && i + 1 < text.size() && text[i + 1] == '>') {
        tokens_.push_back({Tok::kPunct, "->", line});
        i += 2;
      } else {
        line_ = line;
        Fail(std::string("unexpected character '") + c + "'");
      }
    }
    tokens_.push_back({Tok::kNewline, "\n", line});
    tokens_.push_back({Tok::kEnd, "", line});
  }

  const Tok& Peek(std::size_t k = 0) const { return tokens_[std::min(pos_ + k, tokens_.size() - 1)]; }
  const Tok& Next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool IsPunct(const char* p, std::size_t k = 0) const { return Peek(k).kind == Tok::kPunct && Peek(k).text == p; }
  void Expect(const char* p, const std::string& context) {
    if (!IsPunct(p)) {
      Fail(std::string("expected '") + p + "' " + context + ", found " +
           (Peek().kind == Tok::kNewline ? "end of line" : "'" + Peek().text + "'"));
    }
    Next();
  }
  void SkipLine() {
    while (Peek().kind != Tok::kNewline && Peek().kind != Tok::kEnd) Next();
  }

  void Statement() {
    const Tok& t = Peek();
    if (t.kind == Tok::kName && (t.text == "def" || t.text == "import" || t.text == "from" || t.text == "return" ||
                                 t.text == "pass")) {
      SkipLine();
      return;
    }
    // Targets: name, name, *rest = ...
    std::vector<std::string> targets;
    int star = -1;
    std::size_t save = pos_;
    bool is_assignment = false;
    bool unpack = false;  // a trailing comma makes one name a tuple
    while (true) {
      bool starred = IsPunct("*");
      if (starred) Next();
      if (Peek().kind != Tok::kName) break;
      targets.push_back(Next().text);
      if (starred) star = static_cast<int>(targets.size()) - 1;
      if (IsPunct(",")) {
        Next();
        if (IsPunct("=")) {  // "b1, = ...": a tuple of one
          Next();
          is_assignment = true;
          unpack = true;
          break;
        }
        continue;
      }
      if (IsPunct("=")) {
        Next();
        is_assignment = true;
      }
      break;
    }
    if (!is_assignment) {
      pos_ = save;
      targets.clear();
      star = -1;
    }
    ScriptValue value = Expression();
    if (!is_assignment) return;
    Assign(targets, star, unpack, value);
  }

  void Assign(const std::vector<std::string>& targets, int star, bool unpack, const ScriptValue& value) {
    if (targets.size() == 1 && star < 0 && !unpack) {
      vars_[targets[0]] = value;
      return;
    }
    if (value.kind != ScriptValue::kList) Fail("cannot unpack one value into " + std::to_string(targets.size()) + " names");
    std::size_t n = value.list.size();
    if (star < 0) {
      if (n != targets.size()) {
        Fail("the call returned " + std::to_string(n) + " values for " + std::to_string(targets.size()) + " names");
      }
      for (std::size_t i = 0; i < n; ++i) vars_[targets[i]] = value.list[i];
      return;
    }
    std::size_t fixed = targets.size() - 1;
    if (n < fixed) Fail("the call returned " + std::to_string(n) + " values, fewer than the names to unpack");
    std::size_t rest = n - fixed;
    std::size_t v = 0;
    for (std::size_t t = 0; t < targets.size(); ++t) {
      if (static_cast<int>(t) == star) {
        ScriptValue list;
        list.kind = ScriptValue::kList;
        for (std::size_t k = 0; k < rest; ++k) list.list.push_back(value.list[v++]);
        vars_[targets[t]] = list;
      } else {
        vars_[targets[t]] = value.list[v++];
      }
    }
  }

  ScriptValue Expression() {
    const Tok& t = Peek();
    ScriptValue v;
    if (IsPunct("-") && (Peek(1).kind == Tok::kInt || Peek(1).kind == Tok::kFloat)) {
      Next();
      v = Number(Next());
      v.i = -v.i;
      v.f = -v.f;
      return v;
    }
    if (t.kind == Tok::kInt || t.kind == Tok::kFloat) return Number(Next());
    if (t.kind == Tok::kString) {
      v.kind = ScriptValue::kString;
      v.s = Next().text;
      return v;
    }
    if (IsPunct("[") || IsPunct("(")) {
      std::string close = IsPunct("[") ? "]" : ")";
      Next();
      v.kind = ScriptValue::kList;
      while (!IsPunct(close.c_str())) {
        AppendArgument(&v.list);
        if (!IsPunct(",")) break;
        Next();
      }
      Expect(close.c_str(), "to close the list");
      return v;
    }
    if (t.kind == Tok::kName) {
      std::string name = Next().text;
      if (name == "True" || name == "False") {
        v.kind = ScriptValue::kBool;
        v.i = name == "True";
        return v;
      }
      if (name == "None") return v;
      if (IsPunct(".")) return Call(name);
      auto it = vars_.find(name);
      if (it == vars_.end()) Fail("'" + name + "' is not defined");
      v = it->second;
      while (IsPunct("[")) {
        Next();
        if (Peek().kind != Tok::kInt && !(IsPunct("-") && Peek(1).kind == Tok::kInt)) Fail("expected an integer index");
        bool negative = IsPunct("-");
        if (negative) Next();
        ScriptValue number = Number(Next());
        std::int64_t index = negative ? -number.i : number.i;
        Expect("]", "after the index");
        if (v.kind != ScriptValue::kList) Fail("'" + name + "' is not a list");
        std::int64_t n = static_cast<std::int64_t>(v.list.size());
        if (index < 0) index += n;
        if (index < 0 || index >= n) Fail("index out of range for '" + name + "'");
        v = ScriptValue(v.list[index]);
      }
      return v;
    }
    Fail("expected an expression, found " + (t.kind == Tok::kNewline ? std::string("end of line") : "'" + t.text + "'"));
  }

  // One list element or positional argument; `*name` spreads a list.
  void AppendArgument(std::vector<ScriptValue>* out) {
    if (IsPunct("*")) {
      Next();
      ScriptValue v = Expression();
      if (v.kind != ScriptValue::kList) Fail("only a list can be spread with *");
      out->insert(out->end(), v.list.begin(), v.list.end());
      return;
    }
    out->push_back(Expression());
  }

  ScriptValue Number(const Tok& t) {
    ScriptValue v;
    try {
      if (t.kind == Tok::kInt) {
        v.kind = ScriptValue::kInt;
        v.i = std::stoll(t.text);
      } else {
        v.kind = ScriptValue::kFloat;
        v.f = std::stod(t.text);
      }
    } catch (const std::exception&) {
      Fail("bad number '" + t.text + "'");
    }
    return v;
  }

  ScriptValue Call(const std::string& object) {
    Expect(".", "");
    if (Peek().kind != Tok::kName) Fail("expected a method name after '" + object + ".'");
    std::string method = Next().text;
    if (object != "sch") Fail("calls must be on 'sch' (sch." + method + "), not on '" + object + "'");
    const KindInfo* info = FindMethod(method);
    if (!info) Fail("unknown schedule method '" + method + "'");
    Expect("(", "after sch." + method);
    std::vector<ScriptValue> positional;
    std::vector<std::pair<std::string, ScriptValue>> keywords;
    while (!IsPunct(")")) {
      if (Peek().kind == Tok::kName && IsPunct("=", 1)) {
        std::string key = Next().text;
        Next();
        keywords.emplace_back(key, Expression());
      } else {
        if (!keywords.empty()) Fail(method + ": positional argument after keyword arguments");
        AppendArgument(&positional);
      }
      if (!IsPunct(",")) break;
      Next();
    }
    Expect(")", "to close the arguments of " + method);

    // Bind arguments to the method's parameters.
    std::vector<std::optional<ScriptValue>> args(info->params.size());
    std::size_t next = 0;
    for (std::size_t p = 0; p < info->params.size() && next < positional.size(); ++p) {
      if (info->params[p].role == ParamSpec::kDecision) break;
      if (info->params[p].role == ParamSpec::kVariadicInputs) {
        ScriptValue list;
        list.kind = ScriptValue::kList;
        list.list.assign(positional.begin() + next, positional.end());
        // reorder([l1, l2]) is accepted as reorder(l1, l2).
        if (list.list.size() == 1 && list.list[0].kind == ScriptValue::kList) list = list.list[0];
        args[p] = list;
        next = positional.size();
        break;
      }
      args[p] = positional[next++];
    }
    if (next < positional.size()) Fail(method + ": too many positional arguments");
    for (const auto& [key, value] : keywords) {
      bool found = false;
      for (std::size_t p = 0; p < info->params.size(); ++p) {
        if (key != info->params[p].name) continue;
        if (args[p]) Fail(method + ": argument '" + key + "' given twice");
        args[p] = value;
        found = true;
      }
      if (!found) Fail(method + ": unexpected argument '" + key + "'");
    }
    Instruction inst;
    std::optional<nlohmann::json> decision;
    try {
      BuildInstruction(*info, args, &inst, &decision);
      std::vector<RVRef> outputs = ApplyInstruction(sch_, inst, decision ? &*decision : nullptr);
      ScriptValue result;
      if (info->returns == KindInfo::kOne && outputs.size() == 1) {
        result.kind = ScriptValue::kRV;
        result.rv = outputs[0];
      } else if (info->returns == KindInfo::kList) {
        result.kind = ScriptValue::kList;
        for (const RVRef& r : outputs) {
          ScriptValue v;
          v.kind = ScriptValue::kRV;
          v.rv = r;
          result.list.push_back(v);
        }
      }
      return result;
    } catch (const ScheduleError& e) {
      Fail(e.what());
    }
  }

  Schedule& sch_;
  std::string file_;
  std::vector<Tok> tokens_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::map<std::string, ScriptValue> vars_;
};

}  // namespace

void RunScheduleScript(Schedule& sch, std::string_view text, std::string_view file) {
  ScriptRunner(sch, WithoutByteOrderMark(text), std::string(file)).Run();
}

}  // namespace tunedb::ir
