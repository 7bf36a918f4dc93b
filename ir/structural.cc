#include "ir/structural.h"

#include <cstring>
#include <unordered_map>

#include "ir/mix.h"

namespace tunedb::ir {
namespace {

class Encoder {
 public:
  std::string Encode(const PrimFunc& f) {
    U64(f.params.size());
    for (const Buffer& b : f.params) BufferRef(b);
    Stmt(f.body);
    return std::move(out_);
  }

 private:
  void Byte(std::uint8_t b) { out_.push_back(static_cast<char>(b)); }
  void U64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) Byte(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void Str(const std::string& s) {
    U64(s.size());
    out_ += s;
  }
  void F64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    U64(bits);
  }

  // First appearance: a definition marker and the buffer's type; later: its number.
  void BufferRef(const Buffer& b) {
    auto [it, fresh] = buffers_.emplace(b.get(), buffers_.size());
    if (fresh) {
      Byte('B');
      Byte(static_cast<std::uint8_t>(b->dtype));
      Str(b->scope);
      U64(b->shape.size());
      for (std::int64_t d : b->shape) U64(static_cast<std::uint64_t>(d));
    } else {
      Byte('b');
      U64(it->second);
    }
  }
  void VarRef(const ir::Expr& v) {
    auto [it, fresh] = vars_.emplace(v.get(), vars_.size());
    if (fresh) {
      Byte('V');
      Byte(static_cast<std::uint8_t>(v->dtype));
    } else {
      Byte('v');
      U64(it->second);
    }
  }

  void Annot(const Annotations& a) {
    U64(a.size());
    for (const auto& [k, v] : a) {
      Str(k);
      if (const auto* i = std::get_if<std::int64_t>(&v)) {
        Byte('i');
        U64(static_cast<std::uint64_t>(*i));
      } else {
        Byte('s');
        Str(std::get<std::string>(v));
      }
    }
  }

  void Expr(const ir::Expr& e) {
    if (!e) {
      Byte(0xFF);
      return;
    }
    Byte(static_cast<std::uint8_t>(e->kind));
    Byte(static_cast<std::uint8_t>(e->dtype));
    switch (e->kind) {
      case ExprKind::kIntImm: U64(static_cast<std::uint64_t>(e->int_value)); return;
      case ExprKind::kFloatImm: F64(e->float_value); return;
      case ExprKind::kVar: VarRef(e); return;
      case ExprKind::kLoad: BufferRef(e->buffer); break;
      case ExprKind::kCall: Str(e->name); break;
      default: break;
    }
    U64(e->operands.size());
    for (const ir::Expr& o : e->operands) Expr(o);
  }

  void Regions(const std::vector<BufferRegion>& regions) {
    U64(regions.size());
    for (const BufferRegion& r : regions) {
      BufferRef(r.buffer);
      U64(r.ranges.size());
      for (const Range& range : r.ranges) {
        Expr(range.min);
        Expr(range.extent);
      }
    }
  }

  void Stmt(const ir::Stmt& s) {
    if (!s) {
      Byte(0xFF);
      return;
    }
    Byte(static_cast<std::uint8_t>(s->kind));
    switch (s->kind) {
      case StmtKind::kFor: {
        const auto& n = static_cast<const ForNode&>(*s);
        VarRef(n.loop_var);
        U64(static_cast<std::uint64_t>(n.extent));
        Byte(static_cast<std::uint8_t>(n.for_kind));
        Annot(n.annotations);
        Stmt(n.body);
        return;
      }
      case StmtKind::kSeq: {
        const auto& n = static_cast<const SeqNode&>(*s);
        U64(n.stmts.size());
        for (const ir::Stmt& c : n.stmts) Stmt(c);
        return;
      }
      case StmtKind::kIf: {
        const auto& n = static_cast<const IfNode&>(*s);
        Expr(n.condition);
        Stmt(n.then_case);
        Stmt(n.else_case);
        return;
      }
      case StmtKind::kStore: {
        const auto& n = static_cast<const StoreNode&>(*s);
        BufferRef(n.buffer);
        U64(n.indices.size());
        for (const ir::Expr& i : n.indices) Expr(i);
        Expr(n.value);
        return;
      }
      case StmtKind::kBlock: {
        const auto& n = static_cast<const BlockNode&>(*s);
        Str(n.name);
        U64(n.iter_vars.size());
        for (const IterVar& iv : n.iter_vars) {
          VarRef(iv.var);
          U64(static_cast<std::uint64_t>(iv.extent));
          Byte(static_cast<std::uint8_t>(iv.kind));
        }
        for (const ir::Expr& b : n.bindings) Expr(b);
        Expr(n.predicate);
        Regions(n.reads);
        Regions(n.writes);
        U64(n.alloc_buffers.size());
        for (const Buffer& b : n.alloc_buffers) BufferRef(b);
        Annot(n.annotations);
        Stmt(n.init);
        Stmt(n.body);
        return;
      }
    }
  }

  std::string out_;
  std::unordered_map<const BufferNode*, std::uint64_t> buffers_;
  std::unordered_map<const ExprNode*, std::uint64_t> vars_;
};

}  // namespace

std::string CanonicalEncoding(const PrimFunc& func) { return Encoder().Encode(func); }

bool StructuralEqual(const PrimFunc& a, const PrimFunc& b) {
  return CanonicalEncoding(a) == CanonicalEncoding(b);
}

std::uint64_t StructuralHash(const PrimFunc& func) { return HashBytes(CanonicalEncoding(func)); }

std::string WorkloadHash(const PrimFunc& func) { return std::to_string(StructuralHash(func)); }

}  // namespace tunedb::ir
