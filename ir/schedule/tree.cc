// Tree surgery shared by the schedule primitives (see schedule_internal.h).
#include <algorithm>
#include <map>
#include <unordered_set>

#include "ir/printer.h"
#include "ir/schedule/schedule_internal.h"

namespace tunedb::ir::sched {

void Fail(const char* primitive, const std::string& what) {
  throw ScheduleError(std::string(primitive) + ": " + what);
}

// ---- transactions -------------------------------------------------------------

namespace {

Stmt ShallowCopy(const StmtNode& n) {
  switch (n.kind) {
    case StmtKind::kFor: return std::make_shared<ForNode>(static_cast<const ForNode&>(n));
    case StmtKind::kSeq: return std::make_shared<SeqNode>(static_cast<const SeqNode&>(n));
    case StmtKind::kIf: return std::make_shared<IfNode>(static_cast<const IfNode&>(n));
    case StmtKind::kStore: return std::make_shared<StoreNode>(static_cast<const StoreNode&>(n));
    case StmtKind::kBlock: return std::make_shared<BlockNode>(static_cast<const BlockNode&>(n));
  }
  return nullptr;
}

void AssignNode(StmtNode* dst, const StmtNode& src) {
  switch (src.kind) {
    case StmtKind::kFor: *static_cast<ForNode*>(dst) = static_cast<const ForNode&>(src); break;
    case StmtKind::kSeq: *static_cast<SeqNode*>(dst) = static_cast<const SeqNode&>(src); break;
    case StmtKind::kIf: *static_cast<IfNode*>(dst) = static_cast<const IfNode&>(src); break;
    case StmtKind::kStore: *static_cast<StoreNode*>(dst) = static_cast<const StoreNode&>(src); break;
    case StmtKind::kBlock: *static_cast<BlockNode*>(dst) = static_cast<const BlockNode&>(src); break;
  }
}

}  // namespace

Transaction::Transaction(Schedule::State& state) : state_(state), trace_size_(state.trace.insts.size()) {
  saved_tables_.func = state.func;
  saved_tables_.blocks = state.blocks;
  saved_tables_.loops = state.loops;
  saved_tables_.exprs = state.exprs;
  saved_tables_.rand_state = state.rand_state;
  VisitStmt(state.func.body, [&](const Stmt& s) { saved_nodes_.emplace_back(s.get(), ShallowCopy(*s)); });
}

Transaction::~Transaction() {
  if (committed_) return;
  for (auto& [node, copy] : saved_nodes_) AssignNode(node, *copy);
  state_.func = saved_tables_.func;
  Trace& trace = state_.trace;
  trace.insts.erase(trace.insts.begin() + static_cast<std::ptrdiff_t>(trace_size_), trace.insts.end());
  trace.decisions.erase(trace.decisions.lower_bound(trace_size_), trace.decisions.end());
  state_.blocks = saved_tables_.blocks;
  state_.loops = saved_tables_.loops;
  state_.exprs = saved_tables_.exprs;
  state_.rand_state = saved_tables_.rand_state;
}

// ---- navigation ---------------------------------------------------------------

namespace {

bool PathSearch(const Stmt& s, const StmtNode* target, std::vector<StmtNode*>* path) {
  if (!s) return false;
  path->push_back(s.get());
  if (s.get() == target) return true;
  bool found = false;
  switch (s->kind) {
    case StmtKind::kFor: found = PathSearch(static_cast<ForNode&>(*s).body, target, path); break;
    case StmtKind::kSeq:
      for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) {
        if ((found = PathSearch(c, target, path))) break;
      }
      break;
    case StmtKind::kIf: {
      auto& n = static_cast<IfNode&>(*s);
      found = PathSearch(n.then_case, target, path) || PathSearch(n.else_case, target, path);
      break;
    }
    case StmtKind::kStore: break;
    case StmtKind::kBlock: {
      auto& n = static_cast<BlockNode&>(*s);
      found = PathSearch(n.init, target, path) || PathSearch(n.body, target, path);
      break;
    }
  }
  if (!found) path->pop_back();
  return found;
}

Stmt* SlotSearch(Stmt* slot, const StmtNode* target) {
  if (!*slot) return nullptr;
  if (slot->get() == target) return slot;
  StmtNode& s = **slot;
  switch (s.kind) {
    case StmtKind::kFor: return SlotSearch(&static_cast<ForNode&>(s).body, target);
    case StmtKind::kSeq:
      for (Stmt& c : static_cast<SeqNode&>(s).stmts) {
        if (Stmt* r = SlotSearch(&c, target)) return r;
      }
      return nullptr;
    case StmtKind::kIf: {
      auto& n = static_cast<IfNode&>(s);
      if (Stmt* r = SlotSearch(&n.then_case, target)) return r;
      return SlotSearch(&n.else_case, target);
    }
    case StmtKind::kStore: return nullptr;
    case StmtKind::kBlock: {
      auto& n = static_cast<BlockNode&>(s);
      if (Stmt* r = SlotSearch(&n.init, target)) return r;
      return SlotSearch(&n.body, target);
    }
  }
  return nullptr;
}

}  // namespace

std::vector<StmtNode*> PathTo(const PrimFunc& f, const StmtNode* target) {
  std::vector<StmtNode*> path;
  PathSearch(f.body, target, &path);
  return path;
}

bool Contains(const Stmt& subtree, const StmtNode* target) {
  std::vector<StmtNode*> path;
  return PathSearch(subtree, target, &path);
}

Stmt* SlotOf(PrimFunc& f, const StmtNode* target) { return SlotSearch(&f.body, target); }

std::vector<ForNode*> LoopsAbove(const PrimFunc& f, const StmtNode* target) {
  std::vector<ForNode*> loops;
  std::vector<StmtNode*> path = PathTo(f, target);
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    if (path[i]->kind == StmtKind::kFor) loops.push_back(static_cast<ForNode*>(path[i]));
  }
  return loops;
}

StmtNode* ExclusiveTop(const PrimFunc& f, const BlockNode* block) {
  std::vector<StmtNode*> path = PathTo(f, block);
  std::size_t i = path.size() - 1;
  while (i > 0 && path[i - 1]->kind == StmtKind::kFor) --i;
  return path[i];
}

StmtNode* RootLevelStmt(const PrimFunc& f, const StmtNode* target) {
  std::vector<StmtNode*> path = PathTo(f, target);
  if (path.size() < 2) return nullptr;
  // path[0] is the root block; path[1] its body (maybe a sequence).
  if (path[1]->kind == StmtKind::kSeq && path.size() > 2) return path[2];
  return path[1];
}

std::vector<BlockNode*> BlocksIn(const Stmt& s) {
  std::vector<BlockNode*> blocks;
  VisitStmt(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::kBlock) blocks.push_back(static_cast<BlockNode*>(x.get()));
  });
  return blocks;
}

std::vector<BlockNode*> LeafBlocks(const PrimFunc& f) {
  std::vector<BlockNode*> blocks = CollectBlocks(f);
  if (!blocks.empty()) blocks.erase(blocks.begin());  // the root
  return blocks;
}

BlockNode* FindBlock(const PrimFunc& f, const std::string& name) {
  for (BlockNode* b : CollectBlocks(f)) {
    if (b->name == name) return b;
  }
  return nullptr;
}

BufferSet StoredBuffers(const BlockNode& b) {
  BufferSet out;
  for (const Stmt* part : {&b.init, &b.body}) {
    VisitStmt(*part, [&](const Stmt& s) {
      if (s->kind == StmtKind::kStore) out.insert(static_cast<StoreNode&>(*s).buffer.get());
    });
  }
  return out;
}

namespace {

void ForEachExpr(const Stmt& s, const std::function<void(const Expr&)>& fn) {
  VisitStmt(s, [&](const Stmt& x) {
    switch (x->kind) {
      case StmtKind::kIf: fn(static_cast<IfNode&>(*x).condition); break;
      case StmtKind::kStore: {
        auto& n = static_cast<StoreNode&>(*x);
        for (const Expr& i : n.indices) fn(i);
        fn(n.value);
        break;
      }
      default: break;
    }
  });
}

}  // namespace

BufferSet LoadedBuffers(const BlockNode& b) {
  BufferSet out;
  for (const Stmt* part : {&b.init, &b.body}) {
    ForEachExpr(*part, [&](const Expr& e) {
      VisitExpr(e, [&](const Expr& x) {
        if (x->kind == ExprKind::kLoad) out.insert(x->buffer.get());
      });
    });
  }
  return out;
}

std::vector<StoreNode*> Stores(const Stmt& s) {
  std::vector<StoreNode*> out;
  VisitStmt(s, [&](const Stmt& x) {
    if (x->kind == StmtKind::kStore) out.push_back(static_cast<StoreNode*>(x.get()));
  });
  return out;
}

// ---- editing ------------------------------------------------------------------

void ReplaceStmt(PrimFunc& f, const StmtNode* old_stmt, Stmt replacement) {
  Stmt* slot = SlotOf(f, old_stmt);
  if (!slot) throw ScheduleError("internal error: statement to replace is not in the program");
  *slot = std::move(replacement);
}

void RemoveStmt(PrimFunc& f, const StmtNode* target) {
  std::vector<StmtNode*> path = PathTo(f, target);
  if (path.size() < 2) throw ScheduleError("internal error: statement to remove is not in the program");
  StmtNode* parent = path[path.size() - 2];
  if (parent->kind == StmtKind::kSeq) {
    auto& seq = static_cast<SeqNode&>(*parent);
    seq.stmts.erase(std::remove_if(seq.stmts.begin(), seq.stmts.end(),
                                   [&](const Stmt& s) { return s.get() == target; }),
                    seq.stmts.end());
    if (seq.stmts.size() == 1 && path.size() >= 3) {
      ReplaceStmt(f, parent, seq.stmts[0]);
    }
    return;
  }
  if (parent->kind == StmtKind::kFor) {
    RemoveStmt(f, parent);  // the loop would be empty
    return;
  }
  if (parent->kind == StmtKind::kBlock) {
    auto& block = static_cast<BlockNode&>(*parent);
    if (block.body.get() == target) block.body = MakeSeq({});
    return;
  }
  throw ScheduleError("internal error: cannot remove a statement from this parent");
}

std::vector<Stmt> Children(const Stmt& body) {
  if (!body) return {};
  if (body->kind == StmtKind::kSeq) return static_cast<SeqNode&>(*body).stmts;
  return {body};
}

void InsertAt(Stmt* parent_body, int index, Stmt s) {
  std::vector<Stmt> children = Children(*parent_body);
  index = std::clamp(index, 0, static_cast<int>(children.size()));
  if (*parent_body && (*parent_body)->kind == StmtKind::kSeq) {
    auto& seq = static_cast<SeqNode&>(**parent_body);
    seq.stmts.insert(seq.stmts.begin() + index, std::move(s));
    return;
  }
  children.insert(children.begin() + index, std::move(s));
  *parent_body = MakeSeq(std::move(children));
}

VarRanges LoopRanges(const PrimFunc& f) {
  VarRanges ranges;
  VisitStmt(f.body, [&](const Stmt& s) {
    if (s->kind == StmtKind::kFor) {
      auto& n = static_cast<ForNode&>(*s);
      ranges[n.loop_var.get()] = n.extent;
    }
  });
  return ranges;
}

void NormalizeBindings(PrimFunc& f) {
  VarRanges ranges = LoopRanges(f);
  for (BlockNode* b : LeafBlocks(f)) {
    for (Expr& e : b->bindings) e = Simplify(e, ranges);
    if (b->predicate) {
      b->predicate = Simplify(b->predicate, ranges);
      std::int64_t v = 0;
      if (AsConstInt(b->predicate, &v) && v != 0) b->predicate = nullptr;
    }
  }
}

void RecomputeRegions(BlockNode& b) {
  sched::BufferSet stored = StoredBuffers(b);
  auto add_region = [](std::vector<BufferRegion>& regions, const Buffer& buffer, const std::vector<Expr>& indices) {
    for (const BufferRegion& r : regions) {
      if (r.buffer != buffer) continue;
      bool same = true;
      for (std::size_t d = 0; d < indices.size(); ++d) same &= ExprEqual(r.ranges[d].min, indices[d]);
      if (same) return;
    }
    BufferRegion region{buffer, {}};
    for (const Expr& i : indices) region.ranges.push_back({i, IntImm(i->dtype, 1)});
    regions.push_back(std::move(region));
  };
  std::vector<BufferRegion> reads, writes;
  for (const Stmt* part : {&b.init, &b.body}) {
    ForEachExpr(*part, [&](const Expr& e) {
      VisitExpr(e, [&](const Expr& x) {
        if (x->kind != ExprKind::kLoad) return;
        if (b.init && stored.count(x->buffer.get())) return;
        add_region(reads, x->buffer, x->operands);
      });
    });
  }
  for (StoreNode* s : Stores(b.body)) add_region(writes, s->buffer, s->indices);
  b.reads = std::move(reads);
  b.writes = std::move(writes);
}

namespace {

using LoopStack = std::vector<ForNode*>;

// Walks f's tree with the loops around each point on a stack, outermost
// first: on_loop as a loop is entered, on_block for each block (the root
// first). Only the root block's body is walked into; the checks below run
// after every primitive, so they share this one walk.
void WalkBlocks(const PrimFunc& f, const std::function<void(ForNode&, const LoopStack&)>& on_loop,
                const std::function<void(BlockNode&, const LoopStack&)>& on_block) {
  LoopStack enclosing;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        auto& n = static_cast<ForNode&>(*s);
        on_loop(n, enclosing);
        enclosing.push_back(&n);
        walk(n.body);
        enclosing.pop_back();
        break;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) walk(c);
        break;
      case StmtKind::kIf: walk(static_cast<IfNode&>(*s).then_case); walk(static_cast<IfNode&>(*s).else_case); break;
      case StmtKind::kStore: break;
      case StmtKind::kBlock: {
        auto& b = static_cast<BlockNode&>(*s);
        on_block(b, enclosing);
        if (&b == f.body.get()) walk(b.body);
        break;
      }
    }
  };
  walk(f.body);
}

}  // namespace

void CheckProgram(const PrimFunc& f, const char* primitive) {
  auto fail = [&](const std::string& what) { Fail(primitive, "internal error: " + what); };
  // Scoping: bindings and predicates use loop variables in scope; bodies use
  // their block's iteration variables only.
  auto in_scope = [](const ExprNode* var, const LoopStack& loops) {
    return std::any_of(loops.begin(), loops.end(), [&](const ForNode* l) { return l->loop_var.get() == var; });
  };
  auto on_loop = [&](ForNode& n, const LoopStack& enclosing) {
    if (in_scope(n.loop_var.get(), enclosing)) fail("loop variable " + n.loop_var->name + " is defined twice");
  };
  auto on_block = [&](BlockNode& b, const LoopStack& enclosing) {
    if (b.bindings.size() != b.iter_vars.size()) fail("block " + b.name + " has a binding count mismatch");
    auto check_loop_scope = [&](const Expr& e) {
      if (!e) return;
      VisitExpr(e, [&](const Expr& x) {
        if (x->kind == ExprKind::kVar && !in_scope(x.get(), enclosing)) {
          fail("block " + b.name + " uses " + x->name + " outside the loops of its binding scope");
        }
      });
    };
    for (const Expr& e : b.bindings) check_loop_scope(e);
    check_loop_scope(b.predicate);
    if (&b == f.body.get()) return;
    std::unordered_set<const ExprNode*> iters;
    for (const IterVar& iv : b.iter_vars) iters.insert(iv.var.get());
    for (const Stmt* part : {&b.init, &b.body}) {
      ForEachExpr(*part, [&](const Expr& e) {
        VisitExpr(e, [&](const Expr& x) {
          if (x->kind == ExprKind::kVar && !iters.count(x.get())) {
            fail("block " + b.name + " reads variable " + x->name + " that is not one of its iteration variables");
          }
        });
      });
    }
    if (!BlocksIn(b.body).empty()) fail("block " + b.name + " contains another block");
  };
  WalkBlocks(f, on_loop, on_block);

  // Dataflow: every writer of a buffer comes before each of its readers.
  // (Each block's stores gathered once: every primitive runs this check.)
  std::vector<BlockNode*> blocks = LeafBlocks(f);
  std::vector<BufferSet> stored;
  for (BlockNode* b : blocks) stored.push_back(StoredBuffers(*b));
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    for (const BufferNode* buf : LoadedBuffers(*blocks[i])) {
      for (std::size_t j = i + 1; j < blocks.size(); ++j) {
        if (stored[j].count(buf)) {
          fail("block " + blocks[j]->name + " writes " + buf->name + " after block " + blocks[i]->name +
               " reads it");
        }
      }
    }
  }
}

namespace {

// One "digit" of a loop variable f used by an index: (f // lo) % (hi / lo).
struct Digit {
  const ExprNode* loop;
  std::int64_t lo, hi;
};

std::optional<Digit> DigitOf(const Expr& atom, const std::map<const ExprNode*, std::int64_t>& extents) {
  auto loop_extent = [&](const Expr& e) -> std::int64_t {
    if (e->kind != ExprKind::kVar) return 0;
    auto it = extents.find(e.get());
    return it == extents.end() ? 0 : it->second;
  };
  std::int64_t a = 0, b = 0, ext = 0;
  if ((ext = loop_extent(atom))) return Digit{atom.get(), 1, ext};
  if (atom->kind == ExprKind::kFloorDiv && AsConstInt(atom->operands[1], &a) && a > 0 &&
      (ext = loop_extent(atom->operands[0]))) {
    return Digit{atom->operands[0].get(), a, std::max(ext, a)};
  }
  if (atom->kind == ExprKind::kFloorMod && AsConstInt(atom->operands[1], &b) && b > 0) {
    const Expr& x = atom->operands[0];
    if ((ext = loop_extent(x))) return Digit{x.get(), 1, std::min(b, ext)};
    if (x->kind == ExprKind::kFloorDiv && AsConstInt(x->operands[1], &a) && a > 0 && (ext = loop_extent(x->operands[0]))) {
      return Digit{x->operands[0].get(), a, std::min(a * b, std::max(ext, a))};
    }
  }
  return std::nullopt;
}

}  // namespace

bool ProvablyInjective(const BlockNode& b, const std::vector<ForNode*>& loops, const VarRanges& ranges) {
  std::map<const ExprNode*, std::int64_t> extents;
  for (ForNode* l : loops) {
    if (l->extent > 1) extents[l->loop_var.get()] = l->extent;
  }
  std::map<const ExprNode*, std::vector<std::pair<std::int64_t, std::int64_t>>> digits;  // loop -> [lo, hi)
  for (const Expr& binding : b.bindings) {
    std::vector<std::pair<std::int64_t, std::int64_t>> terms;  // |coefficient|, digit extent
    for (const auto& [atom, coeff] : ToLinearForm(binding, ranges).terms) {
      bool mentions = false;
      VisitExpr(atom, [&](const Expr& x) { mentions |= extents.count(x.get()) > 0; });
      if (!mentions || coeff == 0) continue;
      auto d = DigitOf(atom, extents);
      if (!d) return false;
      digits[d->loop].emplace_back(d->lo, d->hi);
      terms.emplace_back(coeff < 0 ? -coeff : coeff, (d->hi + d->lo - 1) / d->lo);
    }
    std::sort(terms.begin(), terms.end());
    for (std::size_t i = 0; i + 1 < terms.size(); ++i) {
      if (terms[i + 1].first < terms[i].first * terms[i].second) return false;
    }
  }
  // Every loop's digits are used once each and together determine the loop.
  for (const auto& [loop, extent] : extents) {
    auto it = digits.find(loop);
    if (it == digits.end()) return false;
    std::vector<std::pair<std::int64_t, std::int64_t>> ds = it->second;
    std::sort(ds.begin(), ds.end());
    std::int64_t next = 1;
    for (const auto& [lo, hi] : ds) {
      if (lo != next) return false;
      next = hi;
    }
    if (next < extent) return false;
  }
  return true;
}

void CheckReductionLoopOrder(const PrimFunc& f, const char* primitive) {
  // One walk with the enclosing loops on a stack, rather than a search from
  // the root for each block: every primitive runs this check.
  VarRanges ranges;
  std::vector<std::pair<BlockNode*, LoopStack>> reductions;
  WalkBlocks(
      f, [&](ForNode& n, const LoopStack&) { ranges[n.loop_var.get()] = n.extent; },
      [&](BlockNode& b, const LoopStack& enclosing) {
        if (&b != f.body.get() && b.init) reductions.emplace_back(&b, enclosing);
      });
  // (Not a structured binding: clang 14, which builds the fuzz targets,
  // cannot capture one in a lambda.)
  for (const auto& reduction : reductions) {
    BlockNode* b = reduction.first;
    const std::vector<ForNode*>& loops = reduction.second;
    auto first_reduction = std::find_if(loops.begin(), loops.end(), [&](ForNode* l) {
      for (std::size_t k = 0; k < b->iter_vars.size(); ++k) {
        if (b->iter_vars[k].kind != IterKind::kReduce) continue;
        bool uses = false;
        VisitExpr(b->bindings[k], [&](const Expr& x) { uses |= x.get() == l->loop_var.get(); });
        if (uses) return true;
      }
      return false;
    });
    if (first_reduction == loops.end()) continue;
    if (!ProvablyInjective(*b, std::vector<ForNode*>(first_reduction, loops.end()), ranges)) {
      Fail(primitive, "inside reduction loop " + (*first_reduction)->loop_var->name + ", block '" + b->name +
                          "' would be visited more than once per element and step, repeating its accumulation");
    }
  }
}

Expr FreshVar(const std::string& name, DataType dtype) { return MakeVar(name, dtype); }

Expr AndPredicate(const Expr& a, const Expr& b) {
  if (!a) return b;
  if (!b) return a;
  return a && b;
}

}  // namespace tunedb::ir::sched

namespace tunedb::ir::sched {

Expr ReplaceLoads(const Expr& e, const BufferNode* buffer, const std::function<Expr(const Expr&)>& fn) {
  return RewriteLoads(e, [&](const Expr& load) { return load->buffer.get() == buffer ? fn(load) : nullptr; });
}


void RemoveAllocation(PrimFunc& f, const BufferNode* buffer) {
  auto& root = static_cast<BlockNode&>(*f.body);
  root.alloc_buffers.erase(std::remove_if(root.alloc_buffers.begin(), root.alloc_buffers.end(),
                                          [&](const Buffer& b) { return b.get() == buffer; }),
                           root.alloc_buffers.end());
}

bool IsParam(const PrimFunc& f, const BufferNode* buffer) {
  for (const Buffer& p : f.params) {
    if (p.get() == buffer) return true;
  }
  return false;
}

std::string UniqueBlockName(const PrimFunc& f, const std::string& name) {
  std::string candidate = name;
  for (int k = 1; FindBlock(f, candidate); ++k) candidate = name + "_" + std::to_string(k);
  return candidate;
}

Stmt BuildNest(const std::shared_ptr<BlockNode>& block, const std::vector<Expr>& mins,
               const std::vector<std::int64_t>& extents, bool preserve_unit_loops, const VarRanges& outer_ranges) {
  VarRanges ranges = outer_ranges;
  std::vector<std::shared_ptr<ForNode>> loops;
  Expr predicate;
  for (std::size_t k = 0; k < block->iter_vars.size(); ++k) {
    Expr binding = mins[k];
    if (extents[k] > 1 || preserve_unit_loops) {
      auto loop = std::make_shared<ForNode>();
      loop->loop_var = MakeVar("ax" + std::to_string(loops.size()));
      loop->extent = extents[k];
      ranges[loop->loop_var.get()] = loop->extent;
      binding = binding + loop->loop_var;
      loops.push_back(loop);
    }
    binding = Simplify(binding, ranges);
    const IterVar& iv = block->iter_vars[k];
    auto bound = BoundOf(binding, ranges);
    if (!bound || bound->min < 0) {
      predicate = AndPredicate(predicate, Binary(ExprKind::kGe, binding, IntImm(binding->dtype, 0)));
    }
    if (!bound || bound->max >= iv.extent) {
      predicate = AndPredicate(predicate, Binary(ExprKind::kLt, binding, IntImm(binding->dtype, iv.extent)));
    }
    block->bindings[k] = binding;
  }
  block->predicate = predicate;
  Stmt nest = block;
  for (std::size_t i = loops.size(); i-- > 0;) {
    loops[i]->body = nest;
    nest = loops[i];
  }
  return nest;
}

int ChoosePosition(int lb, int ub, int index, const char* primitive) {
  if (lb > ub) Fail(primitive, "no position under the loop satisfies the dependences (producers come after consumers)");
  if (index == -1) return ub;
  if (index == -2) return lb;
  if (index < lb || index > ub) {
    Fail(primitive, "index " + std::to_string(index) + " is outside the legal positions [" + std::to_string(lb) + ", " +
                        std::to_string(ub) + "]");
  }
  return index;
}

}  // namespace tunedb::ir::sched
