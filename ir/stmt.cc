#include "ir/stmt.h"

#include "ir/error.h"

namespace tunedb::ir {

std::string_view ForKindName(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unrolled";
  }
  return "?";
}

const BlockNode& PrimFunc::root() const {
  if (!body || body->kind != StmtKind::kBlock) throw IrError("function body is not a root block");
  return static_cast<const BlockNode&>(*body);
}

Stmt MakeFor(Expr loop_var, std::int64_t extent, Stmt body, ForKind kind) {
  if (extent < 1) throw IrError("loop extent must be at least 1, got " + std::to_string(extent));
  auto n = std::make_shared<ForNode>();
  n->loop_var = std::move(loop_var);
  n->extent = extent;
  n->for_kind = kind;
  n->body = std::move(body);
  return n;
}

Stmt MakeSeq(std::vector<Stmt> stmts) {
  auto n = std::make_shared<SeqNode>();
  n->stmts = std::move(stmts);
  return n;
}

Stmt MakeStore(Buffer buffer, std::vector<Expr> indices, Expr value) {
  if (indices.size() != buffer->shape.size()) {
    throw IrError("store to " + buffer->name + ": " + std::to_string(indices.size()) +
                  " indices for a buffer of rank " + std::to_string(buffer->shape.size()));
  }
  if (value->dtype != buffer->dtype) {
    throw IrError("store to " + buffer->name + ": value of type " +
                  std::string(DataTypeName(value->dtype)) + " into a " +
                  std::string(DataTypeName(buffer->dtype)) + " buffer");
  }
  auto n = std::make_shared<StoreNode>();
  n->buffer = std::move(buffer);
  n->indices = std::move(indices);
  n->value = std::move(value);
  return n;
}

Stmt MakeIf(Expr condition, Stmt then_case, Stmt else_case) {
  if (condition->dtype != DataType::kBool) throw IrError("if: condition must be bool");
  auto n = std::make_shared<IfNode>();
  n->condition = std::move(condition);
  n->then_case = std::move(then_case);
  n->else_case = std::move(else_case);
  return n;
}

namespace {

Stmt CloneTree(const Stmt& s, bool regions) {
  if (!s) return nullptr;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto n = std::make_shared<ForNode>(static_cast<const ForNode&>(*s));
      n->body = CloneTree(n->body, regions);
      return n;
    }
    case StmtKind::kSeq: {
      auto n = std::make_shared<SeqNode>(static_cast<const SeqNode&>(*s));
      for (Stmt& c : n->stmts) c = CloneTree(c, regions);
      return n;
    }
    case StmtKind::kIf: {
      auto n = std::make_shared<IfNode>(static_cast<const IfNode&>(*s));
      n->then_case = CloneTree(n->then_case, regions);
      n->else_case = CloneTree(n->else_case, regions);
      return n;
    }
    case StmtKind::kStore:
      return std::make_shared<StoreNode>(static_cast<const StoreNode&>(*s));
    case StmtKind::kBlock: {
      const auto& b = static_cast<const BlockNode&>(*s);
      std::shared_ptr<BlockNode> n;
      if (regions) {
        n = std::make_shared<BlockNode>(b);
      } else {  // every field but reads and writes
        n = std::make_shared<BlockNode>();
        n->name = b.name;
        n->iter_vars = b.iter_vars;
        n->bindings = b.bindings;
        n->predicate = b.predicate;
        n->init = b.init;
        n->body = b.body;
        n->alloc_buffers = b.alloc_buffers;
        n->annotations = b.annotations;
      }
      n->init = CloneTree(n->init, regions);
      n->body = CloneTree(n->body, regions);
      return n;
    }
  }
  return nullptr;
}

}  // namespace

Stmt Clone(const Stmt& s) { return CloneTree(s, true); }

PrimFunc Clone(const PrimFunc& func) {
  PrimFunc copy = func;
  copy.body = Clone(func.body);
  return copy;
}

PrimFunc CloneWithoutRegions(const PrimFunc& func) {
  PrimFunc copy = func;
  copy.body = CloneTree(func.body, false);
  return copy;
}

void SubstituteInPlace(const Stmt& copy, const VarMap& map) {
  auto sub = [&](Expr& e) {
    if (e) e = Substitute(e, map);
  };
  VisitStmt(copy, [&](const Stmt& s) {
    switch (s->kind) {
      case StmtKind::kIf: sub(static_cast<IfNode&>(*s).condition); break;
      case StmtKind::kStore: {
        auto& n = static_cast<StoreNode&>(*s);
        for (Expr& i : n.indices) sub(i);
        sub(n.value);
        break;
      }
      case StmtKind::kBlock: {
        auto& n = static_cast<BlockNode&>(*s);
        for (Expr& b : n.bindings) sub(b);
        sub(n.predicate);
        for (auto* regions : {&n.reads, &n.writes}) {
          for (BufferRegion& r : *regions) {
            for (Range& range : r.ranges) {
              sub(range.min);
              sub(range.extent);
            }
          }
        }
        break;
      }
      default: break;
    }
  });
}

void RewriteExprs(const Stmt& stmt, const std::function<Expr(const Expr&)>& fn) {
  VisitStmt(stmt, [&](const Stmt& x) {
    switch (x->kind) {
      case StmtKind::kIf: {
        auto& n = static_cast<IfNode&>(*x);
        n.condition = fn(n.condition);
        break;
      }
      case StmtKind::kStore: {
        auto& n = static_cast<StoreNode&>(*x);
        for (Expr& i : n.indices) i = fn(i);
        n.value = fn(n.value);
        break;
      }
      default: break;
    }
  });
}

Stmt SubstituteStmt(const Stmt& stmt, const VarMap& map) {
  Stmt copy = Clone(stmt);
  SubstituteInPlace(copy, map);
  return copy;
}

std::vector<BlockNode*> CollectBlocks(const PrimFunc& func) {
  std::vector<BlockNode*> blocks;
  VisitStmt(func.body, [&](const Stmt& s) {
    if (s->kind == StmtKind::kBlock) blocks.push_back(static_cast<BlockNode*>(s.get()));
  });
  return blocks;
}

}  // namespace tunedb::ir
