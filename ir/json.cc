#include "ir/json.h"

#include <cmath>
#include <limits>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/json_text.h"
#include "ir/limits.h"
#include "ir/verify.h"

namespace tunedb::ir {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "tunedb.program/1";

json FloatToJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

class Writer {
 public:
  json Program(const PrimFunc& f) {
    json params = json::array();
    for (const Buffer& b : f.params) params.push_back(BufferId(b));
    json body = StmtJson(f.body);
    return json{{"format", kFormat}, {"name", f.name}, {"buffers", buffers_},
                {"vars", vars_},     {"params", params}, {"body", body}};
  }

 private:
  int BufferId(const Buffer& b) {
    auto [it, fresh] = buffer_ids_.emplace(b.get(), static_cast<int>(buffers_.size()));
    if (fresh) {
      buffers_.push_back({{"name", b->name}, {"dtype", DataTypeName(b->dtype)},
                          {"shape", b->shape}, {"scope", b->scope}});
    }
    return it->second;
  }
  int VarId(const Expr& v) {
    auto [it, fresh] = var_ids_.emplace(v.get(), static_cast<int>(vars_.size()));
    if (fresh) vars_.push_back({{"name", v->name}, {"dtype", DataTypeName(v->dtype)}});
    return it->second;
  }

  json ExprJson(const Expr& e) {
    if (!e) return nullptr;
    switch (e->kind) {
      case ExprKind::kIntImm: return json::array({"int", DataTypeName(e->dtype), e->int_value});
      case ExprKind::kFloatImm:
        return json::array({"float", DataTypeName(e->dtype), FloatToJson(e->float_value)});
      case ExprKind::kVar: return json::array({"var", VarId(e)});
      case ExprKind::kLoad: return json::array({"load", BufferId(e->buffer), ExprList(e->operands)});
      case ExprKind::kCall: return json::array({"call", e->name, ExprList(e->operands)});
      case ExprKind::kCast:
        return json::array({"cast", DataTypeName(e->dtype), ExprJson(e->operands[0])});
      default: {
        json a = json::array({ExprKindName(e->kind)});
        for (const Expr& o : e->operands) a.push_back(ExprJson(o));
        return a;
      }
    }
  }
  json ExprList(const std::vector<Expr>& es) {
    json a = json::array();
    for (const Expr& e : es) a.push_back(ExprJson(e));
    return a;
  }
  json Annot(const Annotations& annotations) {
    json o = json::object();
    for (const auto& [k, v] : annotations) {
      if (const auto* i = std::get_if<std::int64_t>(&v)) {
        o[k] = *i;
      } else {
        o[k] = std::get<std::string>(v);
      }
    }
    return o;
  }
  json Regions(const std::vector<BufferRegion>& regions) {
    json a = json::array();
    for (const BufferRegion& r : regions) {
      json ranges = json::array();
      for (const Range& range : r.ranges) ranges.push_back({ExprJson(range.min), ExprJson(range.extent)});
      a.push_back({{"buffer", BufferId(r.buffer)}, {"ranges", ranges}});
    }
    return a;
  }

  json StmtJson(const Stmt& s) {
    if (!s) return nullptr;
    switch (s->kind) {
      case StmtKind::kFor: {
        const auto& n = static_cast<const ForNode&>(*s);
        return {{"type", "for"}, {"var", VarId(n.loop_var)}, {"extent", n.extent},
                {"kind", ForKindName(n.for_kind)}, {"annotations", Annot(n.annotations)},
                {"body", StmtJson(n.body)}};
      }
      case StmtKind::kSeq: {
        json stmts = json::array();
        for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) stmts.push_back(StmtJson(c));
        return {{"type", "seq"}, {"stmts", stmts}};
      }
      case StmtKind::kIf: {
        const auto& n = static_cast<const IfNode&>(*s);
        return {{"type", "if"}, {"condition", ExprJson(n.condition)},
                {"then", StmtJson(n.then_case)}, {"else", StmtJson(n.else_case)}};
      }
      case StmtKind::kStore: {
        const auto& n = static_cast<const StoreNode&>(*s);
        return {{"type", "store"}, {"buffer", BufferId(n.buffer)},
                {"indices", ExprList(n.indices)}, {"value", ExprJson(n.value)}};
      }
      case StmtKind::kBlock: {
        const auto& n = static_cast<const BlockNode&>(*s);
        json iters = json::array();
        for (const IterVar& iv : n.iter_vars) {
          iters.push_back({{"var", VarId(iv.var)}, {"extent", iv.extent},
                           {"kind", iv.kind == IterKind::kSpatial ? "S" : "R"}});
        }
        json allocs = json::array();
        for (const Buffer& b : n.alloc_buffers) allocs.push_back(BufferId(b));
        return {{"type", "block"}, {"name", n.name}, {"iter_vars", iters},
                {"bindings", ExprList(n.bindings)}, {"predicate", ExprJson(n.predicate)},
                {"reads", Regions(n.reads)}, {"writes", Regions(n.writes)},
                {"alloc_buffers", allocs}, {"annotations", Annot(n.annotations)},
                {"init", StmtJson(n.init)}, {"body", StmtJson(n.body)}};
      }
    }
    return nullptr;
  }

  json buffers_ = json::array();
  json vars_ = json::array();
  std::unordered_map<const BufferNode*, int> buffer_ids_;
  std::unordered_map<const ExprNode*, int> var_ids_;
};

class Reader {
 public:
  PrimFunc Program(const json& j) {
    Require(j.is_object(), "", "expected a JSON object");
    if (j.contains("format")) {
      Require(j["format"] == kFormat, "format",
              "unsupported format " + j["format"].dump() + " (this build reads " + kFormat + ")");
    }
    const json& buffers = Field(j, "buffers", "");
    Require(buffers.is_array(), "buffers", "expected an array");
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      std::string path = "buffers[" + std::to_string(i) + "]";
      const json& b = buffers[i];
      Require(b.is_object(), path, "expected an object");
      std::vector<std::int64_t> shape;
      const json& js = Field(b, "shape", path);
      Require(js.is_array(), path + ".shape", "expected an array of dimensions");
      for (const json& d : js) {
        Require(d.is_number_integer() && d.get<std::int64_t>() >= 1, path + ".shape", "dimensions must be positive integers");
        shape.push_back(d.get<std::int64_t>());
      }
      buffers_.push_back(MakeBuffer(String(b, "name", path), shape, Dtype(b, "dtype", path),
                                    b.contains("scope") ? String(b, "scope", path) : "global"));
    }
    const json& vars = Field(j, "vars", "");
    Require(vars.is_array(), "vars", "expected an array");
    for (std::size_t i = 0; i < vars.size(); ++i) {
      std::string path = "vars[" + std::to_string(i) + "]";
      Require(vars[i].is_object(), path, "expected an object");
      vars_.push_back(MakeVar(String(vars[i], "name", path), Dtype(vars[i], "dtype", path)));
    }
    PrimFunc f;
    f.name = j.contains("name") ? String(j, "name", "") : "main";
    const json& params = Field(j, "params", "");
    Require(params.is_array(), "params", "expected an array of buffer indices");
    for (std::size_t i = 0; i < params.size(); ++i) {
      f.params.push_back(BufferAt(params[i], "params[" + std::to_string(i) + "]"));
    }
    f.body = StmtFrom(Field(j, "body", ""), "body");
    Require(f.body && f.body->kind == StmtKind::kBlock, "body", "the body must be the root block");
    try {
      CheckProgramSize(f);
      VerifyProgram(f);
    } catch (const IrError& e) {
      Fail("", e.what());
    }
    return f;
  }

 private:
  [[noreturn]] static void Fail(const std::string& path, const std::string& what) {
    throw IrError("program JSON" + (path.empty() ? std::string() : " at " + path) + ": " + what);
  }
  static void Require(bool ok, const std::string& path, const std::string& what) {
    if (!ok) Fail(path, what);
  }
  static std::string Join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static const json& Field(const json& o, const char* key, const std::string& path) {
    Require(o.is_object(), path, "expected an object");
    auto it = o.find(key);
    if (it == o.end()) Fail(path, std::string("missing field '") + key + "'");
    return *it;
  }
  static std::string String(const json& o, const char* key, const std::string& path) {
    const json& v = Field(o, key, path);
    Require(v.is_string(), Join(path, key), "expected a string");
    return v.get<std::string>();
  }
  static std::int64_t Int(const json& v, const std::string& path) {
    Require(v.is_number_integer(), path, "expected an integer");
    return v.get<std::int64_t>();
  }
  static DataType Dtype(const json& o, const char* key, const std::string& path) {
    std::string text = String(o, key, path);
    try {
      return ParseDataType(text);
    } catch (const IrError& e) {
      Fail(Join(path, key), e.what());
    }
  }
  Buffer BufferAt(const json& v, const std::string& path) {
    std::int64_t id = Int(v, path);
    Require(id >= 0 && id < static_cast<std::int64_t>(buffers_.size()), path,
            "buffer index " + std::to_string(id) + " is out of range");
    return buffers_[id];
  }
  Expr VarAt(const json& v, const std::string& path) {
    std::int64_t id = Int(v, path);
    Require(id >= 0 && id < static_cast<std::int64_t>(vars_.size()), path,
            "variable index " + std::to_string(id) + " is out of range");
    return vars_[id];
  }
  Annotations Annot(const json& o, const std::string& path) {
    Require(o.is_object(), path, "expected an object");
    Annotations a;
    for (auto it = o.begin(); it != o.end(); ++it) {
      if (it->is_number_integer()) {
        a[it.key()] = it->get<std::int64_t>();
      } else if (it->is_string()) {
        a[it.key()] = it->get<std::string>();
      } else {
        Fail(path + "." + it.key(), "annotation values are integers or strings");
      }
    }
    return a;
  }

  std::vector<Expr> ExprList(const json& a, const std::string& path) {
    Require(a.is_array(), path, "expected an array of expressions");
    std::vector<Expr> out;
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(ExprFrom(a[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }

  Expr ExprFrom(const json& a, const std::string& path) {
    Require(a.is_array() && !a.empty() && a[0].is_string(), path, "expected an expression array [kind, ...]");
    std::string kind = a[0].get<std::string>();
    auto arity = [&](std::size_t n) {
      Require(a.size() == n + 1, path, "'" + kind + "' takes " + std::to_string(n) + " operand(s)");
    };
    try {
      if (kind == "int") {
        arity(2);
        Require(a[1].is_string(), path, "expected a dtype name");
        return IntImm(ParseDataType(a[1].get<std::string>()), Int(a[2], path + "[2]"));
      }
      if (kind == "float") {
        arity(2);
        Require(a[1].is_string(), path, "expected a dtype name");
        double v = 0;
        if (a[2].is_number()) {
          v = a[2].get<double>();
        } else if (a[2] == "inf") {
          v = std::numeric_limits<double>::infinity();
        } else if (a[2] == "-inf") {
          v = -std::numeric_limits<double>::infinity();
        } else if (a[2] == "nan") {
          v = std::numeric_limits<double>::quiet_NaN();
        } else {
          Fail(path, "expected a number, \"inf\", \"-inf\" or \"nan\"");
        }
        const DataType dtype = ParseDataType(a[1].get<std::string>());
        // tunedb writes a float32 constant's exact value; one that float32
        // cannot hold was written by something else, and would silently
        // become infinity or 0.
        if (dtype == DataType::kFloat32 && std::isfinite(v)) {
          Require(Float32Holds(v), path + "[2]", "number " + a[2].dump() + " is out of range for float32");
        }
        return FloatImm(dtype, v);
      }
      if (kind == "var") {
        arity(1);
        return VarAt(a[1], path + "[1]");
      }
      if (kind == "load") {
        arity(2);
        return Load(BufferAt(a[1], path + "[1]"), ExprList(a[2], path + "[2]"));
      }
      if (kind == "call") {
        arity(2);
        Require(a[1].is_string(), path, "expected a function name");
        return Call(a[1].get<std::string>(), ExprList(a[2], path + "[2]"));
      }
      if (kind == "cast") {
        arity(2);
        Require(a[1].is_string(), path, "expected a dtype name");
        return Cast(ParseDataType(a[1].get<std::string>()), ExprFrom(a[2], path + "[2]"));
      }
      if (kind == "not") {
        arity(1);
        return Not(ExprFrom(a[1], path + "[1]"));
      }
      if (kind == "select") {
        arity(3);
        return Select(ExprFrom(a[1], path + "[1]"), ExprFrom(a[2], path + "[2]"), ExprFrom(a[3], path + "[3]"));
      }
      for (int k = static_cast<int>(ExprKind::kAdd); k <= static_cast<int>(ExprKind::kOr); ++k) {
        if (ExprKindName(static_cast<ExprKind>(k)) == kind) {
          arity(2);
          return Binary(static_cast<ExprKind>(k), ExprFrom(a[1], path + "[1]"), ExprFrom(a[2], path + "[2]"));
        }
      }
    } catch (const IrError& e) {
      std::string msg = e.what();
      if (msg.rfind("program JSON", 0) == 0) throw;
      Fail(path, msg);
    }
    Fail(path, "unknown expression kind '" + kind + "'");
  }

  Expr OptionalExpr(const json& o, const char* key, const std::string& path) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return nullptr;
    return ExprFrom(*it, Join(path, key));
  }
  Stmt OptionalStmt(const json& o, const char* key, const std::string& path) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return nullptr;
    return StmtFrom(*it, Join(path, key));
  }

  std::vector<BufferRegion> Regions(const json& a, const std::string& path) {
    Require(a.is_array(), path, "expected an array of regions");
    std::vector<BufferRegion> out;
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::string p = path + "[" + std::to_string(i) + "]";
      BufferRegion r{BufferAt(Field(a[i], "buffer", p), p + ".buffer"), {}};
      const json& ranges = Field(a[i], "ranges", p);
      Require(ranges.is_array(), p + ".ranges", "expected an array");
      for (std::size_t d = 0; d < ranges.size(); ++d) {
        std::string rp = p + ".ranges[" + std::to_string(d) + "]";
        Require(ranges[d].is_array() && ranges[d].size() == 2, rp, "expected [min, extent]");
        r.ranges.push_back({ExprFrom(ranges[d][0], rp + "[0]"), ExprFrom(ranges[d][1], rp + "[1]")});
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  Stmt StmtFrom(const json& o, const std::string& path) {
    std::string type = String(o, "type", path);
    try {
      if (type == "for") {
        auto n = std::make_shared<ForNode>();
        n->loop_var = VarAt(Field(o, "var", path), Join(path, "var"));
        n->extent = Int(Field(o, "extent", path), Join(path, "extent"));
        Require(n->extent >= 1, Join(path, "extent"), "loop extent must be at least 1");
        std::string kind = String(o, "kind", path);
        bool known = false;
        for (ForKind k : {ForKind::kSerial, ForKind::kParallel, ForKind::kVectorized, ForKind::kUnrolled}) {
          if (ForKindName(k) == kind) {
            n->for_kind = k;
            known = true;
          }
        }
        Require(known, Join(path, "kind"), "unknown loop kind '" + kind + "'");
        if (o.contains("annotations")) n->annotations = Annot(o["annotations"], Join(path, "annotations"));
        n->body = StmtFrom(Field(o, "body", path), Join(path, "body"));
        return n;
      }
      if (type == "seq") {
        auto n = std::make_shared<SeqNode>();
        const json& stmts = Field(o, "stmts", path);
        Require(stmts.is_array(), Join(path, "stmts"), "expected an array");
        for (std::size_t i = 0; i < stmts.size(); ++i) {
          n->stmts.push_back(StmtFrom(stmts[i], path + ".stmts[" + std::to_string(i) + "]"));
        }
        return n;
      }
      if (type == "if") {
        return MakeIf(ExprFrom(Field(o, "condition", path), Join(path, "condition")),
                      StmtFrom(Field(o, "then", path), Join(path, "then")), OptionalStmt(o, "else", path));
      }
      if (type == "store") {
        return MakeStore(BufferAt(Field(o, "buffer", path), Join(path, "buffer")),
                         ExprList(Field(o, "indices", path), Join(path, "indices")),
                         ExprFrom(Field(o, "value", path), Join(path, "value")));
      }
      if (type == "block") {
        auto n = std::make_shared<BlockNode>();
        n->name = String(o, "name", path);
        const json& iters = Field(o, "iter_vars", path);
        Require(iters.is_array(), Join(path, "iter_vars"), "expected an array");
        for (std::size_t i = 0; i < iters.size(); ++i) {
          std::string p = path + ".iter_vars[" + std::to_string(i) + "]";
          std::string kind = String(iters[i], "kind", p);
          Require(kind == "S" || kind == "R", p + ".kind", "expected \"S\" or \"R\"");
          std::int64_t extent = Int(Field(iters[i], "extent", p), p + ".extent");
          Require(extent >= 1, p + ".extent", "iteration extent must be at least 1");
          n->iter_vars.push_back({VarAt(Field(iters[i], "var", p), p + ".var"), extent,
                                  kind == "S" ? IterKind::kSpatial : IterKind::kReduce});
        }
        n->bindings = ExprList(Field(o, "bindings", path), Join(path, "bindings"));
        Require(n->bindings.size() == n->iter_vars.size(), Join(path, "bindings"),
                "expected one binding per iteration variable");
        n->predicate = OptionalExpr(o, "predicate", path);
        n->reads = Regions(Field(o, "reads", path), Join(path, "reads"));
        n->writes = Regions(Field(o, "writes", path), Join(path, "writes"));
        if (o.contains("alloc_buffers")) {
          const json& allocs = o["alloc_buffers"];
          Require(allocs.is_array(), Join(path, "alloc_buffers"), "expected an array");
          for (std::size_t i = 0; i < allocs.size(); ++i) {
            n->alloc_buffers.push_back(BufferAt(allocs[i], path + ".alloc_buffers[" + std::to_string(i) + "]"));
          }
        }
        if (o.contains("annotations")) n->annotations = Annot(o["annotations"], Join(path, "annotations"));
        n->init = OptionalStmt(o, "init", path);
        n->body = StmtFrom(Field(o, "body", path), Join(path, "body"));
        return n;
      }
    } catch (const IrError& e) {
      std::string msg = e.what();
      if (msg.rfind("program JSON", 0) == 0) throw;
      Fail(path, msg);
    }
    Fail(Join(path, "type"), "unknown statement type '" + type + "'");
  }

  std::vector<Buffer> buffers_;
  std::vector<Expr> vars_;
};

}  // namespace

std::string ProgramToJson(const PrimFunc& func, int indent) {
  return Writer().Program(func).dump(indent);
}

PrimFunc ProgramFromJson(std::string_view text) {
  json j;
  try {
    j = ParseJson(text);
  } catch (const JsonTextError& e) {
    throw IrError(std::string("program JSON is not valid JSON: ") + e.what());
  }
  return Reader().Program(j);
}

}  // namespace tunedb::ir
