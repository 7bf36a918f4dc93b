#include "measure/reference.h"

#include "ir/schedule/error.h"
#include "ir/schedule/schedule.h"
#include "ir/simplify.h"

namespace tunedb::measure {
namespace {

bool SameIndices(const std::vector<ir::Expr>& a, const std::vector<ir::Expr>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!ir::ExprEqual(a[i], b[i])) return false;
  }
  return true;
}

// True when no two iterations of `loop` touch one element that either of
// them writes:
//  - the block variables the loop drives are bound to the loop variable
//    itself (so each iteration has its own value of them);
//  - every store's indices hold each of those variables as one index (so
//    iterations store to different elements) and read no buffer;
//  - a buffer the block stores is read only at the indices of that store
//    (a reduction's accumulator), never at another iteration's element.
// The `parallel` primitive checks that the loop drives no reduction
// variable; these are what it leaves to the program's author.
bool IterationsAreIndependent(const ir::BlockNode& block, const ir::ForNode& loop) {
  std::vector<const ir::ExprNode*> driven;
  for (std::size_t i = 0; i < block.iter_vars.size(); ++i) {
    bool uses = false;
    ir::VisitExpr(block.bindings[i], [&](const ir::Expr& x) { uses |= x.get() == loop.loop_var.get(); });
    if (!uses) continue;
    if (block.bindings[i].get() != loop.loop_var.get()) return false;
    driven.push_back(block.iter_vars[i].var.get());
  }
  std::vector<const ir::StoreNode*> stores;
  auto collect = [&](const ir::Stmt& s) {
    if (s->kind == ir::StmtKind::kStore) stores.push_back(static_cast<const ir::StoreNode*>(s.get()));
  };
  ir::VisitStmt(block.init, collect);
  ir::VisitStmt(block.body, collect);
  for (const ir::StoreNode* store : stores) {
    for (const ir::ExprNode* var : driven) {
      bool indexed = false;
      for (const ir::Expr& index : store->indices) indexed |= index.get() == var;
      if (!indexed) return false;
    }
    for (const ir::Expr& index : store->indices) {
      if (ir::HasLoad(index)) return false;
    }
    for (const ir::StoreNode* reader : stores) {
      bool ok = true;
      ir::VisitExpr(reader->value, [&](const ir::Expr& e) {
        if (e->kind == ir::ExprKind::kLoad && e->buffer.get() == store->buffer.get() &&
            !SameIndices(e->operands, store->indices)) {
          ok = false;
        }
      });
      if (!ok) return false;
    }
  }
  return true;
}

}  // namespace

ir::PrimFunc ParallelizeIndependentLoops(const ir::PrimFunc& func) {
  ir::Schedule sch(func, /*seed=*/0);
  for (const ir::BlockRV& block : sch.GetChildBlocks(sch.GetBlock("root"))) {
    std::vector<ir::LoopRV> loops = sch.GetLoops(block);
    if (loops.empty() || sch.GetChildBlocks(loops.front()).size() != 1) continue;
    if (!IterationsAreIndependent(sch.Get(block), sch.Get(loops.front()))) continue;
    try {
      sch.Parallel(loops.front());
    } catch (const ir::ScheduleError&) {
      // A loop over a reduction variable: it stays serial.
    }
  }
  return sch.func();
}

ir::PrimFunc ReductionsAboveTheInnermostLoop(const ir::PrimFunc& func) {
  ir::Schedule sch(func, /*seed=*/0);
  for (const ir::BlockRV& block : sch.GetChildBlocks(sch.GetBlock("root"))) {
    std::vector<ir::LoopRV> loops = sch.GetLoops(block);
    if (loops.empty() || sch.GetChildBlocks(loops.front()).size() != 1) continue;
    // Each loop must drive one block variable, bound to the loop variable
    // itself: spatial ones first, then at least one reduction.
    const ir::BlockNode& b = sch.Get(block);
    std::vector<ir::IterKind> kinds;
    for (const ir::LoopRV& loop : loops) {
      const ir::ExprNode* var = sch.Get(loop).loop_var.get();
      for (std::size_t i = 0; i < b.iter_vars.size(); ++i) {
        if (b.bindings[i].get() == var) kinds.push_back(b.iter_vars[i].kind);
      }
    }
    if (kinds.size() != loops.size() || !b.init) continue;
    std::size_t spatial = 0;
    while (spatial < kinds.size() && kinds[spatial] == ir::IterKind::kSpatial) ++spatial;
    bool reductions_after = spatial < kinds.size();
    for (std::size_t i = spatial; i < kinds.size(); ++i) reductions_after &= kinds[i] == ir::IterKind::kReduce;
    if (spatial < 2 || !reductions_after) continue;
    // The outermost loop stays where it is (it may run in parallel).
    std::vector<ir::LoopRV> order(loops.begin() + 1, loops.begin() + static_cast<std::ptrdiff_t>(spatial) - 1);
    order.insert(order.end(), loops.begin() + static_cast<std::ptrdiff_t>(spatial), loops.end());
    order.push_back(loops[spatial - 1]);
    try {
      sch.Reorder(order);
      sch.DecomposeReduction(block, loops[spatial]);
    } catch (const ir::ScheduleError&) {
      // Left as it was, or reordered with the init inside: either computes
      // the same values.
    }
  }
  return sch.func();
}

ir::PrimFunc ReferenceProgram(const ir::PrimFunc& func) {
  // Parallel first: the split-off init is a second block under the
  // outermost loop, which ParallelizeIndependentLoops would refuse.
  return ReductionsAboveTheInnermostLoop(ParallelizeIndependentLoops(func));
}

}  // namespace tunedb::measure
