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

// True when the block's init and body load a buffer they store only at
// the very indices of that store. A load elsewhere could read an element
// another iteration writes, which a parallel loop would race with.
bool ReadsOnlyItsOwnElements(const ir::BlockNode& block) {
  std::vector<const ir::StoreNode*> stores;
  auto collect = [&](const ir::Stmt& s) {
    if (s->kind == ir::StmtKind::kStore) stores.push_back(static_cast<const ir::StoreNode*>(s.get()));
  };
  ir::VisitStmt(block.init, collect);
  ir::VisitStmt(block.body, collect);
  for (const ir::StoreNode* store : stores) {
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
    if (!ReadsOnlyItsOwnElements(sch.Get(block))) continue;
    try {
      sch.Parallel(loops.front());
    } catch (const ir::ScheduleError&) {
      // A loop over a reduction variable: it stays serial.
    }
  }
  return sch.func();
}

}  // namespace tunedb::measure
