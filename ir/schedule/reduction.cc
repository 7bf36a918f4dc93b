// decompose_reduction and rfactor.
#include <algorithm>
#include <map>

#include "ir/schedule/schedule_internal.h"
#include "ir/te.h"

namespace tunedb::ir {

using sched::Apply;
using sched::Fail;
using sched::In;
using sched::Record;
using sched::Ref;

namespace {

// Which kinds of iteration variables a loop drives in a block.
struct LoopUse {
  bool spatial = false;
  bool reduce = false;
};
LoopUse UseOf(const BlockNode& b, const ForNode& loop) {
  LoopUse u;
  for (std::size_t k = 0; k < b.iter_vars.size(); ++k) {
    if (!UsesVar(b.bindings[k], loop.loop_var.get())) continue;
    (b.iter_vars[k].kind == IterKind::kSpatial ? u.spatial : u.reduce) = true;
  }
  return u;
}

}  // namespace

BlockRV Schedule::DecomposeReduction(BlockRV block_rv, LoopRV loop_rv) {
  State& s = *state_;
  const char* p = "decompose_reduction";
  BlockRV out = Apply(s, p, [&] {
    auto block = s.BlockOf(block_rv, p);
    auto loop = s.LoopOf(loop_rv, p);
    const std::string where = "block '" + block->name + "' at loop " + loop->loop_var->name;
    if (!block->init) Fail(p, where + ": the block has no init (not a reduction, or already decomposed)");
    std::vector<ForNode*> loops = sched::LoopsAbove(s.func, block.get());
    auto it = std::find(loops.begin(), loops.end(), loop.get());
    if (it == loops.end()) Fail(p, where + ": the loop is not an ancestor of the block");
    for (auto o = loops.begin(); o != it; ++o) {
      if (UseOf(*block, **o).reduce) {
        Fail(p, where + ": loop " + (*o)->loop_var->name +
                    " above it drives a reduction variable, so the init would run more than once");
      }
    }
    // Loops at and below `loop` that drive spatial variables are copied for
    // the init; loops over reduction variables only are left out.
    VarMap to_init;
    std::set<const ExprNode*> available;
    for (auto o = loops.begin(); o != it; ++o) available.insert((*o)->loop_var.get());
    std::vector<std::shared_ptr<ForNode>> init_loops;
    for (auto l = it; l != loops.end(); ++l) {
      LoopUse u = UseOf(*block, **l);
      if (!u.spatial && !u.reduce && (*l)->extent > 1) {
        Fail(p, where + ": loop " + (*l)->loop_var->name +
                    " at or below it does not drive the block, so the update would run several times per init");
      }
      if (u.spatial && u.reduce) {
        Fail(p, where + ": loop " + (*l)->loop_var->name + " drives both spatial and reduction variables");
      }
      if (!u.spatial) continue;
      auto copy = std::make_shared<ForNode>();
      copy->loop_var = MakeVar((*l)->loop_var->name + "_init", (*l)->loop_var->dtype);
      copy->extent = (*l)->extent;
      to_init[(*l)->loop_var.get()] = copy->loop_var;
      available.insert((*l)->loop_var.get());
      init_loops.push_back(copy);
    }
    // Without the init, an update that runs twice for one element (as after a
    // compute_at with overlapping regions) would add twice.
    if (!sched::ProvablyInjective(*block, std::vector<ForNode*>(it, loops.end()), sched::LoopRanges(s.func))) {
      Fail(p, where + ": the loops from this one inward may visit an iteration of the block more than once");
    }
    auto init = std::make_shared<BlockNode>();
    init->name = sched::UniqueBlockName(s.func, block->name + "_init");
    VarMap to_new_iters;
    for (std::size_t k = 0; k < block->iter_vars.size(); ++k) {
      const IterVar& iv = block->iter_vars[k];
      if (iv.kind != IterKind::kSpatial) continue;
      Expr v = MakeVar(iv.var->name, iv.var->dtype);
      init->iter_vars.push_back({v, iv.extent, IterKind::kSpatial});
      init->bindings.push_back(Substitute(block->bindings[k], to_init));
      to_new_iters[iv.var.get()] = v;
    }
    for (const Expr& c : Conjuncts(block->predicate)) {
      bool ok = true;
      VisitExpr(c, [&](const Expr& x) { ok &= x->kind != ExprKind::kVar || available.count(x.get()); });
      if (ok) init->predicate = sched::AndPredicate(init->predicate, Substitute(c, to_init));
    }
    init->body = Clone(block->init);
    SubstituteInPlace(init->body, to_new_iters);
    sched::RecomputeRegions(*init);
    Stmt nest = init;
    for (std::size_t i = init_loops.size(); i-- > 0;) {
      init_loops[i]->body = nest;
      nest = init_loops[i];
    }
    // Insert the init nest right before `loop`.
    std::vector<StmtNode*> path = sched::PathTo(s.func, loop.get());
    StmtNode* parent = path[path.size() - 2];
    if (parent->kind == StmtKind::kSeq) {
      auto& seq = static_cast<SeqNode&>(*parent);
      auto pos = std::find_if(seq.stmts.begin(), seq.stmts.end(), [&](const Stmt& x) { return x == loop; });
      seq.stmts.insert(pos, nest);
    } else {
      sched::ReplaceStmt(s.func, loop.get(), MakeSeq({nest, loop}));
    }
    block->init = nullptr;
    block->name = sched::UniqueBlockName(s.func, block->name + "_update");
    sched::RecomputeRegions(*block);
    return s.AddBlock(init);
  });
  Record(s, "DecomposeReduction", {In(block_rv), In(loop_rv)}, nlohmann::json::array(), {Ref(out)});
  return out;
}

BlockRV Schedule::RFactor(LoopRV loop_rv, int factor_axis) {
  State& s = *state_;
  const char* p = "rfactor";
  BlockRV out = Apply(s, p, [&] {
    auto loop = s.LoopOf(loop_rv, p);
    std::vector<BlockNode*> under = sched::BlocksIn(loop);
    if (under.size() != 1) Fail(p, "loop " + loop->loop_var->name + " must contain exactly one block");
    auto block = std::static_pointer_cast<BlockNode>(*sched::SlotOf(s.func, under[0]));
    const std::string where = "block '" + block->name + "' at loop " + loop->loop_var->name;
    if (!block->init) Fail(p, where + ": the block is not a reduction with an init");
    LoopUse use = UseOf(*block, *loop);
    if (!use.reduce || use.spatial) Fail(p, where + ": the loop must drive reduction variables only");

    // Recognize out[idx] = combine(out[idx], value) with init out[idx] = identity.
    if (block->body->kind != StmtKind::kStore || block->init->kind != StmtKind::kStore) {
      Fail(p, where + ": the block must be a single update store");
    }
    auto& update = static_cast<StoreNode&>(*block->body);
    const Expr& rhs = update.value;
    Buffer out_buf = update.buffer;
    auto is_self = [&](const Expr& e) {
      if (e->kind != ExprKind::kLoad || e->buffer != out_buf) return false;
      for (std::size_t d = 0; d < e->operands.size(); ++d) {
        if (!ExprEqual(e->operands[d], update.indices[d])) return false;
      }
      return true;
    };
    te::ReduceOp op;
    if (rhs->kind == ExprKind::kAdd) {
      op = te::ReduceOp::kSum;
    } else if (rhs->kind == ExprKind::kMax) {
      op = te::ReduceOp::kMax;
    } else if (rhs->kind == ExprKind::kMin) {
      op = te::ReduceOp::kMin;
    } else {
      Fail(p, where + ": the update is not a sum, max or min reduction");
    }
    Expr value;
    if (is_self(rhs->operands[0])) {
      value = rhs->operands[1];
    } else if (is_self(rhs->operands[1])) {
      value = rhs->operands[0];
    } else {
      Fail(p, where + ": the update does not combine the output element with a new value");
    }
    Expr identity = te::ReduceIdentity(op, out_buf->dtype);
    if (!ExprEqual(static_cast<StoreNode&>(*block->init).value, identity)) {
      Fail(p, where + ": the init is not the identity of the reduction");
    }
    int rank = static_cast<int>(out_buf->shape.size());
    if (factor_axis < 0) factor_axis += rank + 1;
    if (factor_axis < 0 || factor_axis > rank) {
      Fail(p, "factor_axis " + std::to_string(factor_axis) + " is out of range for a buffer of rank " + std::to_string(rank));
    }
    auto combine = [&](const Expr& a, const Expr& b) {
      return op == te::ReduceOp::kSum ? a + b : op == te::ReduceOp::kMax ? Max(a, b) : Min(a, b);
    };

    // The rfactor buffer: the output with the loop's extent at factor_axis.
    std::vector<std::int64_t> rf_shape = out_buf->shape;
    rf_shape.insert(rf_shape.begin() + factor_axis, loop->extent);
    Buffer rf_buf = MakeBuffer(out_buf->name + "_rf", rf_shape, out_buf->dtype);

    // rf block: spatial variables, the loop as a new spatial variable, and
    // one reduction variable per other loop that drives the reduction.
    auto rf = std::make_shared<BlockNode>();
    rf->name = sched::UniqueBlockName(s.func, block->name + "_rf");
    VarMap loop_to_iter, old_to_new;
    for (std::size_t k = 0; k < block->iter_vars.size(); ++k) {
      const IterVar& iv = block->iter_vars[k];
      if (iv.kind != IterKind::kSpatial) continue;
      Expr v = MakeVar(iv.var->name, iv.var->dtype);
      rf->iter_vars.push_back({v, iv.extent, IterKind::kSpatial});
      rf->bindings.push_back(block->bindings[k]);
      old_to_new[iv.var.get()] = v;
    }
    Expr rf_var = MakeVar("v" + loop->loop_var->name, loop->loop_var->dtype);
    rf->iter_vars.push_back({rf_var, loop->extent, IterKind::kSpatial});
    rf->bindings.push_back(loop->loop_var);
    loop_to_iter[loop->loop_var.get()] = rf_var;
    for (ForNode* l : sched::LoopsAbove(s.func, block.get())) {
      if (l == loop.get()) continue;
      LoopUse u = UseOf(*block, *l);
      if (!u.reduce) continue;
      if (u.spatial) Fail(p, where + ": loop " + l->loop_var->name + " drives both spatial and reduction variables");
      Expr v = MakeVar("v" + l->loop_var->name, l->loop_var->dtype);
      rf->iter_vars.push_back({v, l->extent, IterKind::kReduce});
      rf->bindings.push_back(l->loop_var);
      loop_to_iter[l->loop_var.get()] = v;
    }
    for (std::size_t k = 0; k < block->iter_vars.size(); ++k) {
      if (block->iter_vars[k].kind == IterKind::kReduce) {
        old_to_new[block->iter_vars[k].var.get()] = Substitute(block->bindings[k], loop_to_iter);
      }
    }
    // The original reduction variables are now expressions of the rf block's
    // variables; where such an expression can leave its domain (imperfect
    // splits), the value is guarded: outside, the update combines the
    // identity. A guard in the body, unlike a predicate over loops, survives
    // a later compute_at, and it leaves the init of every rfactor slot in
    // place. On the value rather than around the store, it leaves the
    // update one plain store, which a later rfactor recognizes and which
    // LLVM keeps in a register across a vectorized loop; a masked store of
    // the partial sums went through memory at every step (a dot product
    // of 1000003 floats, 2 jobs of 16 lanes: 0.28 ms, against 54 us
    // unguarded at 1000000; bench/RESULTS.md, session 85).
    VarRanges iter_ranges;
    for (const IterVar& iv : rf->iter_vars) iter_ranges[iv.var.get()] = iv.extent;
    Expr guard;
    for (const IterVar& iv : block->iter_vars) {
      if (iv.kind != IterKind::kReduce) continue;
      Expr value_of = Simplify(old_to_new.at(iv.var.get()), iter_ranges);
      auto bound = BoundOf(value_of, iter_ranges);
      if (!bound || bound->min < 0) guard = sched::AndPredicate(guard, Binary(ExprKind::kGe, value_of, IntImm(value_of->dtype, 0)));
      if (!bound || bound->max >= iv.extent) {
        guard = sched::AndPredicate(guard, Binary(ExprKind::kLt, value_of, IntImm(value_of->dtype, iv.extent)));
      }
    }
    // A condition joins the guard unless it states one already there (an
    // imperfect split's bound, found both from the variables' ranges and
    // in the split's predicate): each is checked at every step.
    auto add_to_guard = [&](const Expr& c) {
      const Expr simple = Simplify(c, iter_ranges);
      for (const Expr& g : Conjuncts(guard)) {
        if (ExprEqual(Simplify(g, iter_ranges), simple)) return;
      }
      guard = sched::AndPredicate(guard, c);
    };
    std::set<const ExprNode*> reduction_loops;
    for (const auto& [var, iter] : loop_to_iter) {
      (void)iter;
      reduction_loops.insert(var);
    }
    // Predicate conjuncts over reduction loops (which may also exclude
    // duplicate visits of an imperfect split) move into the guard, over the
    // rf block's variables; the others stay in the predicate.
    for (const Expr& c : Conjuncts(block->predicate)) {
      bool uses_reduction_loop = false, uses_other_var = false;
      VisitExpr(c, [&](const Expr& x) {
        if (x->kind != ExprKind::kVar) return;
        (reduction_loops.count(x.get()) ? uses_reduction_loop : uses_other_var) = true;
      });
      if (!uses_reduction_loop) {
        rf->predicate = sched::AndPredicate(rf->predicate, c);
      } else if (uses_other_var) {
        Fail(p, where + ": the block's predicate mixes reduction and other loops");
      } else {
        add_to_guard(Substitute(c, loop_to_iter));
      }
    }
    std::vector<Expr> rf_indices;
    for (const Expr& i : update.indices) rf_indices.push_back(Substitute(i, old_to_new));
    rf_indices.insert(rf_indices.begin() + factor_axis, rf_var);
    rf->init = MakeStore(rf_buf, rf_indices, identity);
    Expr rf_value = Substitute(value, old_to_new);
    if (guard) rf_value = Select(guard, rf_value, identity);
    rf->body = MakeStore(rf_buf, rf_indices, combine(Load(rf_buf, rf_indices), rf_value));
    sched::RecomputeRegions(*rf);
    sched::ReplaceStmt(s.func, block.get(), rf);

    // The original block becomes the write-back: out = combine over the
    // rfactor dimension, under a fresh loop nest after the rf nest.
    std::vector<IterVar> wb_iters;
    VarMap old_spatial;
    for (const IterVar& iv : block->iter_vars) {
      if (iv.kind != IterKind::kSpatial) continue;
      Expr v = MakeVar(iv.var->name, iv.var->dtype);
      wb_iters.push_back({v, iv.extent, IterKind::kSpatial});
      old_spatial[iv.var.get()] = v;
    }
    Expr wb_r = MakeVar("v" + loop->loop_var->name, loop->loop_var->dtype);
    wb_iters.push_back({wb_r, loop->extent, IterKind::kReduce});
    std::vector<Expr> out_indices;
    for (const Expr& i : update.indices) out_indices.push_back(Substitute(i, old_spatial));
    std::vector<Expr> rf_read = out_indices;
    rf_read.insert(rf_read.begin() + factor_axis, wb_r);
    block->iter_vars = wb_iters;
    block->bindings.assign(wb_iters.size(), IntImm(DataType::kInt32, 0));
    block->predicate = nullptr;
    block->init = MakeStore(out_buf, out_indices, identity);
    block->body = MakeStore(out_buf, out_indices, combine(Load(out_buf, out_indices), Load(rf_buf, rf_read)));
    sched::RecomputeRegions(*block);
    auto& root = static_cast<BlockNode&>(*s.func.body);
    StmtNode* top = sched::RootLevelStmt(s.func, rf.get());
    bool consumer_in_top = false;
    for (BlockNode* b : sched::BlocksIn(*sched::SlotOf(s.func, top))) {
      consumer_in_top |= b != rf.get() && sched::LoadedBuffers(*b).count(out_buf.get()) > 0;
    }
    if (!consumer_in_top) {
      // Its own nest after the root-level statement that holds the rf block.
      std::vector<Expr> mins;
      std::vector<std::int64_t> extents;
      for (const IterVar& iv : wb_iters) {
        mins.push_back(IntImm(DataType::kInt32, 0));
        extents.push_back(iv.extent);
      }
      Stmt nest = sched::BuildNest(block, mins, extents, true, {});
      std::vector<Stmt> children = sched::Children(root.body);
      int pos = 0;
      for (std::size_t i = 0; i < children.size(); ++i) {
        if (children[i].get() == top) pos = static_cast<int>(i) + 1;
      }
      sched::InsertAt(&root.body, pos, nest);
    } else {
      // The reduction was moved under a loop of its consumer (compute_at),
      // so after that statement is too late: the write-back goes right
      // after the outermost loop that drives the reduction, inside the
      // loops above it, which bind its spatial variables as they bind the
      // rf block's (softmax's row sums, computed row by row).
      std::vector<ForNode*> above = sched::LoopsAbove(s.func, rf.get());
      std::size_t first = 0;
      while (first < above.size() && !loop_to_iter.count(above[first]->loop_var.get())) ++first;
      if (first == 0 || first == above.size()) {
        Fail(p, where + ": a consumer shares the reduction's outermost loop, so the write-back has no place");
      }
      // The write-back goes after the reduction's loops, so a reader of the
      // output inside them would read it before it is written.
      for (BlockNode* b : sched::BlocksIn(*sched::SlotOf(s.func, above[first]))) {
        if (b != rf.get() && sched::LoadedBuffers(*b).count(out_buf.get())) {
          Fail(p, where + ": block '" + b->name + "' reads " + out_buf->name +
                      " inside the reduction's loops, so the write-back has no place");
        }
      }
      std::set<const ExprNode*> outer;
      for (std::size_t i = 0; i < first; ++i) outer.insert(above[i]->loop_var.get());
      std::vector<Expr> mins;
      std::vector<std::int64_t> extents;
      for (std::size_t k = 0; k < rf->iter_vars.size(); ++k) {
        if (rf->iter_vars[k].kind != IterKind::kSpatial || rf->iter_vars[k].var.get() == rf_var.get()) continue;
        bool only_outer = true;
        VisitExpr(rf->bindings[k], [&](const Expr& x) {
          if (x->kind == ExprKind::kVar && !outer.count(x.get())) only_outer = false;
        });
        if (!only_outer) {
          Fail(p, where + ": a loop between the consumer's loops and the reduction's own drives its spatial "
                          "variables, so the write-back has no place");
        }
        mins.push_back(rf->bindings[k]);
        extents.push_back(1);
      }
      mins.push_back(IntImm(DataType::kInt32, 0));
      extents.push_back(loop->extent);
      Stmt nest = sched::BuildNest(block, mins, extents, false, sched::LoopRanges(s.func));
      ForNode* parent = above[first - 1];
      std::vector<Stmt> children = sched::Children(parent->body);
      int pos = -1;
      for (std::size_t i = 0; i < children.size(); ++i) {
        if (children[i].get() == above[first]) pos = static_cast<int>(i) + 1;
      }
      if (pos < 0) Fail(p, where + ": the reduction's loops are not directly under loop " + parent->loop_var->name);
      sched::InsertAt(&parent->body, pos, nest);
    }
    root.alloc_buffers.push_back(rf_buf);
    return s.AddBlock(rf);
  });
  Record(s, "RFactor", {In(loop_rv)}, {factor_axis}, {Ref(out)});
  return out;
}

}  // namespace tunedb::ir
