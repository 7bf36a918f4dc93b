// A small reduction moved outside the vector lanes (see rules.h).
//
// A pooling window is a reduction with no input reused across a spatial
// loop, so no tiling rule takes it, and its window loops stay inside the
// last spatial loop: that loop is then not the innermost, and the
// postprocessor cannot vectorize it. TVM's rules leave it the same way.
// With the window between the two parts of the last spatial loop, every
// step of the window is one vector operation over the lanes, whose loads
// are contiguous (stride 1) or a few elements apart (a stride-2 window,
// which code generation loads as vectors and a shuffle). 2 x 2 max pooling
// of 64 x 112 x 112 in NCHW, 64-trial sessions on a Zen 5 VM, their best
// kernels re-timed side by side: 3.7 GFLOP/s before, 31.6 after
// (bench/RESULTS.md, session 65).
#include "search/rules/rules.h"

#include <set>

#include "ir/simplify.h"

namespace tunedb::search::rules {
namespace {

// Code generation loads lanes up to this many elements apart as vectors and
// a shuffle (measure/codegen.cc); further apart they are gathered, and the
// window gains nothing outside them.
constexpr std::int64_t kMaxLaneStride = 4;

// Whether every access of `region` that moves with `var` moves only its last
// dimension, by 1 to max_stride elements per step.
bool StepsAlongLastDimension(const ir::BufferRegion& region, const ir::ExprNode* var, std::int64_t max_stride) {
  const std::set<const ir::ExprNode*> vars{var};
  for (std::size_t d = 0; d < region.ranges.size(); ++d) {
    const ir::Expr& index = region.ranges[d].min;
    if (!UsesVar(index, var)) continue;
    const ir::Expr& extent = region.ranges[d].extent;
    if (d + 1 != region.ranges.size() || extent->kind != ir::ExprKind::kIntImm || extent->int_value != 1) {
      return false;
    }
    auto coefficients = ir::LinearCoefficients(index, vars, {});
    if (!coefficients || coefficients->size() != 1) return false;
    const std::int64_t stride = coefficients->front().second;
    if (stride < 1 || stride > max_stride) return false;
  }
  return true;
}

}  // namespace

int WindowLanesLoop(const BlockNode& b) {
  if (!b.init || b.writes.size() != 1 || !HasReduction(b)) return -1;
  const IterShape shape = IterShapeOf(b);
  const int lanes = VectorLoop(shape.extents, shape.kinds);
  if (lanes < 0) return -1;
  // Only the window after the lanes' loop, as an unscheduled block has it.
  for (std::size_t i = static_cast<std::size_t>(lanes) + 1; i < shape.kinds.size(); ++i) {
    if (shape.kinds[i] != IterKind::kReduce) return -1;
  }
  const ir::ExprNode* var = b.iter_vars[static_cast<std::size_t>(lanes)].var.get();
  if (!StepsAlongLastDimension(b.writes[0], var, 1)) return -1;
  for (const ir::BufferRegion& read : b.reads) {
    if (!StepsAlongLastDimension(read, var, kMaxLaneStride)) return -1;
  }
  return lanes;
}

void WindowOutsideLanes(Schedule& sch, const std::string& name, const SpaceOptions& o) {
  BlockRV block = sch.GetBlock(name);
  const BlockNode& node = sch.Get(block);
  const int lanes_iter = WindowLanesLoop(node);
  if (lanes_iter < 0) throw ScheduleError("window outside the lanes: " + name + " has no window after its lanes");
  std::vector<LoopRV> loops = sch.GetLoops(block);
  // Loop i drives iteration variable i, as in an unscheduled block.
  bool untransformed = loops.size() == node.iter_vars.size();
  for (std::size_t i = 0; untransformed && i < loops.size(); ++i) {
    untransformed = node.bindings[i].get() == sch.Get(loops[i]).loop_var.get();
  }
  if (!untransformed) throw ScheduleError("window outside the lanes: the loops of " + name + " were transformed");

  // Recorded decision: up to four vectors of lanes, within the vectorize
  // limit.
  const auto at = static_cast<std::size_t>(lanes_iter);
  const std::int64_t extent = node.iter_vars[at].extent;
  const std::int64_t vectors = 4 * VectorLanes(o, OutputElementBytes(node));
  const std::int64_t lanes = LargestDivisorAtMost(extent, std::min<std::int64_t>(o.max_vectorize, vectors));
  std::vector<ExprRV> tiles = sch.SamplePerfectTile(loops[at], 2, o.max_vectorize,
                                                    std::vector<std::int64_t>{extent / lanes, lanes});
  std::vector<LoopRV> parts = sch.Split(loops[at], {tiles[0], tiles[1]});
  std::vector<LoopRV> order{parts[0]};
  order.insert(order.end(), loops.begin() + static_cast<std::ptrdiff_t>(at) + 1, loops.end());
  order.push_back(parts[1]);
  sch.Reorder(order);

  // An elementwise consumer (average pooling's scale) goes under the outer
  // part, after the window, so the result goes to memory once.
  std::vector<BlockNode*> readers = ir::ConsumerBlocks(sch.func(), sch.Get(block));
  if (readers.size() != 1 || HasReduction(*readers[0])) return;
  try {
    sch.ReverseComputeAt(sch.GetBlock(readers[0]->name), parts[0], /*preserve_unit_loops=*/true);
  } catch (const ScheduleError&) {
    // stays a nest of its own: correct, one more pass over the output
  }
}

}  // namespace tunedb::search::rules
