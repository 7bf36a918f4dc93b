#include "measure/lower.h"

#include <algorithm>
#include <functional>
#include <set>
#include <map>
#include <unordered_map>

#include "ir/error.h"
#include "ir/region.h"
#include "ir/simplify.h"

namespace tunedb::measure {
namespace {

using namespace tunedb::ir;

// ---- unroll pragmas --------------------------------------------------------------

std::int64_t Steps(const Stmt& s) {
  if (!s) return 0;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      return n.extent * Steps(n.body);
    }
    case StmtKind::kSeq: {
      std::int64_t total = 0;
      for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) total += Steps(c);
      return total;
    }
    case StmtKind::kIf: return Steps(static_cast<IfNode&>(*s).then_case) + Steps(static_cast<IfNode&>(*s).else_case);
    case StmtKind::kStore: return 1;
    case StmtKind::kBlock: return Steps(static_cast<BlockNode&>(*s).init) + Steps(static_cast<BlockNode&>(*s).body);
  }
  return 0;
}

// TVM's pragma_auto_unroll_max_step: loops under the annotated loop whose
// nest has at most that many steps are unrolled.
void ApplyUnrollPragmas(const Stmt& root) {
  VisitStmt(root, [&](const Stmt& s) {
    if (s->kind != StmtKind::kFor) return;
    auto& loop = static_cast<ForNode&>(*s);
    auto it = loop.annotations.find("pragma_auto_unroll_max_step");
    if (it == loop.annotations.end() || !std::holds_alternative<std::int64_t>(it->second)) return;
    std::int64_t max_step = std::get<std::int64_t>(it->second);
    if (max_step <= 0) return;
    VisitStmt(loop.body, [&](const Stmt& inner) {
      if (inner->kind != StmtKind::kFor) return;
      auto& l = static_cast<ForNode&>(*inner);
      if (l.for_kind == ForKind::kSerial && Steps(inner) <= max_step) l.for_kind = ForKind::kUnrolled;
    });
  });
}

// ---- blocks to statements ---------------------------------------------------------

Stmt RemoveBlocks(const Stmt& s, const VarRanges& ranges) {
  if (!s) return nullptr;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      n.body = RemoveBlocks(n.body, ranges);
      return s;
    }
    case StmtKind::kSeq: {
      auto& n = static_cast<SeqNode&>(*s);
      for (Stmt& c : n.stmts) c = RemoveBlocks(c, ranges);
      return s;
    }
    case StmtKind::kIf: {
      auto& n = static_cast<IfNode&>(*s);
      n.then_case = RemoveBlocks(n.then_case, ranges);
      n.else_case = RemoveBlocks(n.else_case, ranges);
      return s;
    }
    case StmtKind::kStore: return s;
    case StmtKind::kBlock: break;
  }
  auto& b = static_cast<BlockNode&>(*s);
  if (b.iter_vars.empty() && !b.init) {  // an allocation scope (the root)
    b.body = RemoveBlocks(b.body, ranges);
    b.reads.clear();
    b.writes.clear();
    return s;
  }
  VarMap to_bindings;
  Expr first_step;
  for (std::size_t k = 0; k < b.iter_vars.size(); ++k) {
    to_bindings[b.iter_vars[k].var.get()] = b.bindings[k];
    if (b.iter_vars[k].kind == IterKind::kReduce) {
      Expr is_zero = Binary(ExprKind::kEq, b.bindings[k], IntImm(b.bindings[k]->dtype, 0));
      first_step = first_step ? (first_step && is_zero) : is_zero;
    }
  }
  Stmt body = SubstituteStmt(b.body, to_bindings);
  if (b.init) {
    Stmt init = SubstituteStmt(b.init, to_bindings);
    Expr cond = first_step ? Simplify(first_step, ranges) : BoolImm(true);
    std::int64_t always = 0;
    if (AsConstInt(cond, &always) && always) {
      body = MakeSeq({init, body});
    } else {
      body = MakeSeq({MakeIf(cond, init), body});
    }
  }
  if (b.predicate) body = MakeIf(b.predicate, body);
  if (!b.alloc_buffers.empty()) {
    auto scope = std::make_shared<BlockNode>();
    scope->name = b.name;
    scope->alloc_buffers = b.alloc_buffers;
    scope->body = body;
    body = scope;
  }
  return body;
}

// ---- expression and access rewriting -------------------------------------------


// Replaces buffer `from` by `to` in every load and store, mapping indices.
void RebindBuffer(const Stmt& s, const BufferNode* from, const Buffer& to,
                  const std::function<std::vector<Expr>(const std::vector<Expr>&)>& map_indices) {
  VisitStmt(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::kStore) {
      auto& n = static_cast<StoreNode&>(*x);
      if (n.buffer.get() == from) {
        n.buffer = to;
        n.indices = map_indices(n.indices);
      }
    }
  });
  RewriteExprs(s, [&](const Expr& e) {
    return RewriteLoads(e, [&](const Expr& load) -> Expr {
      if (load->buffer.get() != from) return nullptr;
      return Load(to, map_indices(load->operands));
    });
  });
}

// ---- compaction ------------------------------------------------------------------------

// Shrinking an intermediate buffer X to what one iteration of a loop L
// touches (and allocating it inside L) is correct when no value of X flows
// from one iteration of L, or of a loop around it, to another:
//  (a) every block that accumulates into X (an init, or a read of its own
//      output) has all its reduction loops inside L, so a whole reduction
//      happens within one iteration;
//  (b) within one iteration, what is read of X lies inside what is written.
// The plan is made on the blocked program, where iteration kinds are known,
// and applied after the blocks are gone.
struct CompactionPlan {
  Buffer from;
  ForNode* loop;
  std::vector<Expr> mins;
  std::vector<std::int64_t> shape;
};

struct BlockAccess {
  BlockNode* block;
  std::vector<ForNode*> loops;     // around the block, outermost first
  std::vector<Expr> indices;       // over loop variables
  bool is_write;
};

void CollectLeafBlocks(const Stmt& s, std::vector<ForNode*>& loops,
                       std::vector<std::pair<BlockNode*, std::vector<ForNode*>>>* out) {
  if (!s) return;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      loops.push_back(&n);
      CollectLeafBlocks(n.body, loops, out);
      loops.pop_back();
      return;
    }
    case StmtKind::kSeq:
      for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) CollectLeafBlocks(c, loops, out);
      return;
    case StmtKind::kIf:
      CollectLeafBlocks(static_cast<IfNode&>(*s).then_case, loops, out);
      CollectLeafBlocks(static_cast<IfNode&>(*s).else_case, loops, out);
      return;
    case StmtKind::kStore: return;
    case StmtKind::kBlock: out->emplace_back(static_cast<BlockNode*>(s.get()), loops); return;
  }
}

// Whether one write access covers its whole bounding box when the free loops
// run: each dimension's index is affine in its own free loops (no loop in
// two dimensions), with coefficients that leave no gap (sorted, each at most
// one past what the smaller ones reach).
bool CoversBox(const std::vector<Expr>& indices, const std::set<const ExprNode*>& free_vars, const VarRanges& ranges) {
  std::set<const ExprNode*> used;
  for (const Expr& index : indices) {
    auto coeffs = LinearCoefficients(index, free_vars, ranges);
    if (!coeffs) return false;
    std::vector<std::pair<std::int64_t, std::int64_t>> terms;  // |coefficient|, extent
    for (const auto& [var, c] : *coeffs) {
      if (c == 0) continue;
      if (!used.insert(var).second) return false;
      terms.emplace_back(c < 0 ? -c : c, ranges.at(var));
    }
    std::sort(terms.begin(), terms.end());
    std::int64_t reach = 0;  // values 0..reach are covered so far
    for (const auto& [c, extent] : terms) {
      if (c > reach + 1) return false;
      reach += c * (extent - 1);
    }
  }
  return true;
}

std::vector<CompactionPlan> PlanCompaction(const PrimFunc& f, const VarRanges& ranges) {
  const auto& root = static_cast<const BlockNode&>(*f.body);
  std::vector<std::pair<BlockNode*, std::vector<ForNode*>>> blocks;
  std::vector<ForNode*> loops;
  CollectLeafBlocks(root.body, loops, &blocks);
  std::vector<CompactionPlan> plans;
  for (const Buffer& buf : root.alloc_buffers) {
    std::vector<BlockAccess> accesses;
    std::set<const ExprNode*> accumulation_loops;  // reduction loops of blocks accumulating into buf
    for (auto& [block, path] : blocks) {
      VarMap to_loops;
      for (std::size_t k = 0; k < block->iter_vars.size(); ++k) to_loops[block->iter_vars[k].var.get()] = block->bindings[k];
      bool writes = false, reads = false;
      for (const Stmt* part : {&block->init, &block->body}) {
        VisitStmt(*part, [&](const Stmt& s) {
          if (s->kind != StmtKind::kStore) return;
          auto& st = static_cast<StoreNode&>(*s);
          auto add_load = [&](const Expr& e) {
            VisitExpr(e, [&](const Expr& x) {
              if (x->kind != ExprKind::kLoad || x->buffer != buf) return;
              reads = true;
              std::vector<Expr> idx;
              for (const Expr& i : x->operands) idx.push_back(Substitute(i, to_loops));
              accesses.push_back({block, path, idx, false});
            });
          };
          for (const Expr& i : st.indices) add_load(i);
          add_load(st.value);
          if (st.buffer == buf) {
            writes = true;
            std::vector<Expr> idx;
            for (const Expr& i : st.indices) idx.push_back(Substitute(i, to_loops));
            accesses.push_back({block, path, idx, true});
          }
        });
      }
      if (writes && (reads || block->init)) {
        for (std::size_t k = 0; k < block->iter_vars.size(); ++k) {
          if (block->iter_vars[k].kind != IterKind::kReduce) continue;
          VisitExpr(block->bindings[k], [&](const Expr& x) {
            if (x->kind == ExprKind::kVar) accumulation_loops.insert(x.get());
          });
        }
      }
    }
    if (accesses.empty()) continue;
    std::size_t common = accesses[0].loops.size();
    for (const BlockAccess& a : accesses) {
      std::size_t k = 0;
      while (k < common && k < a.loops.size() && a.loops[k] == accesses[0].loops[k]) ++k;
      common = k;
    }
    // From the innermost common loop outwards, the first loop where (a) and (b) hold.
    for (std::size_t depth = common; depth > 0; --depth) {
      ForNode* candidate = accesses[0].loops[depth - 1];
      bool ok = true;
      for (std::size_t k = 0; k < depth && ok; ++k) ok = !accumulation_loops.count(accesses[0].loops[k]->loop_var.get());
      if (!ok) continue;
      std::vector<RegionAccess> reads, writes, all;
      for (const BlockAccess& a : accesses) {
        RegionAccess r{a.indices, {}};
        for (std::size_t k = depth; k < a.loops.size(); ++k) r.free_vars.insert(a.loops[k]->loop_var.get());
        if (a.is_write && !CoversBox(r.indices, r.free_vars, ranges)) ok = false;
        (a.is_write ? writes : reads).push_back(r);
        all.push_back(r);
      }
      // Several writes must also agree on one box (no gaps between them).
      for (std::size_t i = 1; i < writes.size() && ok; ++i) {
        for (std::size_t d = 0; d < buf->shape.size() && ok; ++d) {
          auto a = AccessRegion(Simplify(writes[0].indices[d], ranges), writes[0].free_vars, ranges);
          auto b = AccessRegion(Simplify(writes[i].indices[d], ranges), writes[i].free_vars, ranges);
          std::int64_t offset = 0;
          ok = a && b && a->extent == b->extent && AsConstInt(Simplify(b->min - a->min, ranges), &offset) && offset == 0;
        }
      }
      if (!ok) continue;
      std::size_t rank = buf->shape.size();
      auto w = UnionRegion(writes, rank, ranges);
      auto r = UnionRegion(reads, rank, ranges);
      auto region = UnionRegion(all, rank, ranges);
      CompactionPlan plan{buf, candidate, {}, {}};
      std::int64_t elements = 1;
      for (std::size_t d = 0; d < rank && ok; ++d) {
        if (!w[d] || !region[d] || (!reads.empty() && !r[d])) {
          ok = false;
          break;
        }
        if (!reads.empty()) {
          std::int64_t offset = 0;
          ok = AsConstInt(Simplify(r[d]->min - w[d]->min, ranges), &offset) && offset >= 0 &&
               offset + r[d]->extent <= w[d]->extent;
        }
        bool whole = region[d]->extent >= buf->shape[d];
        plan.shape.push_back(whole ? buf->shape[d] : region[d]->extent);
        plan.mins.push_back(whole ? IntImm(region[d]->min->dtype, 0) : region[d]->min);
        elements *= plan.shape.back();
      }
      if (!ok) continue;
      if (elements < buf->NumElements()) plans.push_back(plan);
      break;
    }
  }
  return plans;
}

void ApplyCompaction(PrimFunc& f, const std::vector<CompactionPlan>& plans, const VarRanges& ranges) {
  auto& root = static_cast<BlockNode&>(*f.body);
  for (const CompactionPlan& plan : plans) {
    Buffer compact = MakeBuffer(plan.from->name, plan.shape, plan.from->dtype, plan.from->scope);
    RebindBuffer(root.body, plan.from.get(), compact, [&](const std::vector<Expr>& indices) {
      std::vector<Expr> shifted;
      for (std::size_t d = 0; d < indices.size(); ++d) shifted.push_back(Simplify(indices[d] - plan.mins[d], ranges));
      return shifted;
    });
    auto scope = std::make_shared<BlockNode>();
    scope->name = plan.from->name;
    scope->alloc_buffers = {compact};
    scope->body = plan.loop->body;
    plan.loop->body = scope;
    root.alloc_buffers.erase(std::remove(root.alloc_buffers.begin(), root.alloc_buffers.end(), plan.from),
                             root.alloc_buffers.end());
  }
}

// ---- flattening ---------------------------------------------------------------------

void FlattenBuffers(PrimFunc& f) {
  std::unordered_map<const BufferNode*, Buffer> flat;
  auto flatten = [&](const Buffer& b) {
    auto it = flat.find(b.get());
    if (it != flat.end()) return it->second;
    Buffer fb = MakeBuffer(b->name, {b->NumElements()}, b->dtype, b->scope);
    flat[b.get()] = fb;
    return fb;
  };
  for (Buffer& p : f.params) p = flatten(p);
  VisitStmt(f.body, [&](const Stmt& s) {
    if (s->kind != StmtKind::kBlock) return;
    for (Buffer& b : static_cast<BlockNode&>(*s).alloc_buffers) b = flatten(b);
  });
  // Row-major; 64-bit indices only for buffers of 2^31 elements or more.
  auto flat_index = [](const Buffer& b, const std::vector<Expr>& indices) {
    bool wide = b->NumElements() >= (std::int64_t{1} << 31);
    Expr index;
    for (std::size_t d = 0; d < indices.size(); ++d) {
      Expr i = wide && indices[d]->dtype == DataType::kInt32 ? Cast(DataType::kInt64, indices[d]) : indices[d];
      index = index ? index * IntImm(i->dtype, b->shape[d]) + i : i;
    }
    return index ? index : IntImm(DataType::kInt32, 0);
  };
  VisitStmt(f.body, [&](const Stmt& s) {
    if (s->kind != StmtKind::kStore) return;
    auto& n = static_cast<StoreNode&>(*s);
    auto it = flat.find(n.buffer.get());
    if (it == flat.end()) return;
    n.indices = {flat_index(n.buffer, n.indices)};
    n.buffer = it->second;
  });
  RewriteExprs(f.body, [&](const Expr& e) {
    return RewriteLoads(e, [&](const Expr& load) -> Expr {
      auto it = flat.find(load->buffer.get());
      if (it == flat.end()) return nullptr;
      return Load(it->second, {flat_index(load->buffer, load->operands)});
    });
  });
}

// ---- simplification -------------------------------------------------------------------

Stmt SimplifyStmt(const Stmt& s, const VarRanges& ranges) {
  if (!s) return nullptr;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      n.body = SimplifyStmt(n.body, ranges);
      return n.body ? s : nullptr;
    }
    case StmtKind::kSeq: {
      auto& n = static_cast<SeqNode&>(*s);
      std::vector<Stmt> kept;
      for (const Stmt& c : n.stmts) {
        if (Stmt r = SimplifyStmt(c, ranges)) kept.push_back(r);
      }
      n.stmts = std::move(kept);
      return s;
    }
    case StmtKind::kIf: {
      auto& n = static_cast<IfNode&>(*s);
      n.condition = Simplify(n.condition, ranges);
      n.then_case = SimplifyStmt(n.then_case, ranges);
      n.else_case = SimplifyStmt(n.else_case, ranges);
      std::int64_t v = 0;
      if (AsConstInt(n.condition, &v)) return v ? n.then_case : n.else_case;
      return s;
    }
    case StmtKind::kStore: {
      auto& n = static_cast<StoreNode&>(*s);
      for (Expr& i : n.indices) i = Simplify(i, ranges);
      n.value = Simplify(n.value, ranges);
      return s;
    }
    case StmtKind::kBlock: {
      auto& n = static_cast<BlockNode&>(*s);
      n.body = SimplifyStmt(n.body, ranges);
      if (!n.body) n.body = MakeSeq({});
      return s;
    }
  }
  return s;
}

}  // namespace

ir::PrimFunc Lower(const ir::PrimFunc& func) {
  PrimFunc f = Clone(func);
  VarRanges ranges;
  VisitStmt(f.body, [&](const Stmt& s) {
    if (s->kind == StmtKind::kFor) ranges[static_cast<ForNode&>(*s).loop_var.get()] = static_cast<ForNode&>(*s).extent;
  });
  ApplyUnrollPragmas(f.body);
  std::vector<CompactionPlan> plans = PlanCompaction(f, ranges);
  f.body = RemoveBlocks(f.body, ranges);
  ApplyCompaction(f, plans, ranges);
  FlattenBuffers(f);
  f.body = SimplifyStmt(f.body, ranges);
  return f;
}

}  // namespace tunedb::measure
