// Auto-inline (see rules.h).
#include "search/rules/rules.h"

namespace tunedb::search::rules {

// Injective stages writing an intermediate buffer go into their consumers
// (TVM's AutoInline with into_consumer): they cost a pass over memory and
// inlining them is what lets the consumer's tiling cover them. Outputs stay.
void AutoInline(Schedule& sch, const std::string& name) {
  BlockRV b = sch.GetBlock(name);
  const BlockNode& node = sch.Get(b);
  if (HasReduction(node) || node.init || node.writes.size() != 1) return;
  if (IsParam(sch.func(), node.writes[0].buffer)) return;
  try {
    sch.ComputeInline(b);
  } catch (const ScheduleError&) {
    // Not inlinable (e.g. read with another layout by a reduction): it stays
    // a stage of its own and gets a random compute location later.
  }
}

// A stage computing exp, log or tanh that several stages read (softmax's
// exp, read by its sum and its normalization): inlined, each reader
// computes it again; kept, it is computed once into a buffer they share,
// at a sampled compute location. Softmax 128 x 1024 by hand: 48.9 us with
// exp inlined, 42.3 us computed once per 8 rows.
bool TranscendentalSharedStage(const ir::PrimFunc& func, const BlockNode& node) {
  if (HasReduction(node) || node.init || node.writes.size() != 1) return false;
  if (IsParam(func, node.writes[0].buffer) || ir::ConsumerBlocks(func, node).size() < 2) return false;
  bool transcendental = false;
  ir::VisitStmt(node.body, [&](const ir::Stmt& st) {
    if (st->kind != ir::StmtKind::kStore) return;
    ir::VisitExpr(static_cast<ir::StoreNode&>(*st).value, [&](const ir::Expr& e) {
      transcendental = transcendental ||
                       (e->kind == ir::ExprKind::kCall && (e->name == "exp" || e->name == "log" || e->name == "tanh"));
    });
  });
  return transcendental;
}

// A padding stage (TOPI's PaddedInput): an intermediate copy of an input
// whose every element is a select, the read guarded by the border test.
// TVM's CPU rules never inline one (AutoInline's disallow_if_then_else);
// inlined, the test runs on every read of a convolution's inner loop. A
// 13-channel depthwise convolution, 31 x 31, 5 x 5 window, on 2 cores: the
// unscheduled program (padding a stage of its own) 8.3 us, the best of 64
// trials 12.5 us with the padding always inlined; by hand, the padding
// computed per output row under the parallel loop, 6.1 us; and the space
// that also keeps it, 64 trials, 86.9 GFLOP/s against 61.6 (7.2 us against
// 10.1; bench/RESULTS.md, session 66).
bool PaddingStage(const ir::PrimFunc& func, const BlockNode& node) {
  if (HasReduction(node) || node.init || node.writes.size() != 1) return false;
  if (IsParam(func, node.writes[0].buffer) || node.body->kind != ir::StmtKind::kStore) return false;
  const ir::Expr& value = static_cast<const ir::StoreNode&>(*node.body).value;
  if (value->kind != ir::ExprKind::kSelect) return false;
  auto reads_input = [](const ir::Expr& e) { return e->kind == ir::ExprKind::kLoad; };
  return reads_input(value->operands[1]) || reads_input(value->operands[2]);
}

}  // namespace tunedb::search::rules
