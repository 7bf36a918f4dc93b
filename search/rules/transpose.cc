// Transposes tiled in blocks that fit in registers (see rules.h).
#include "search/rules/rules.h"

namespace tunedb::search::rules {

// An elementwise block that reads some input across its rows: the output's
// last dimension moves with the last loop, the input's last dimension with
// another loop `a`, and the input moves with the last loop along another
// dimension (Y[i, j] = X[j, i], or NCHW -> NHWC). In loop order one of the
// two is walked a row apart per element. Returns {a, last}, or {-1, -1}.
std::pair<int, int> TransposedLoops(const BlockNode& b) {
  if (HasReduction(b) || b.iter_vars.size() < 2 || b.writes.size() != 1 || b.writes[0].ranges.empty()) return {-1, -1};
  const auto [extents, kinds] = IterShapeOf(b);
  const int last = VectorLoop(extents, kinds);
  if (last < 0) return {-1, -1};
  const ir::ExprNode* last_var = b.iter_vars[static_cast<std::size_t>(last)].var.get();
  if (!UsesVar(b.writes[0].ranges.back().min, last_var)) return {-1, -1};
  for (const ir::BufferRegion& read : b.reads) {
    if (read.ranges.size() < 2 || UsesVar(read.ranges.back().min, last_var) || !ReadUses(read, last_var)) continue;
    for (int a = last; a-- > 0;) {
      if (extents[static_cast<std::size_t>(a)] > 1 &&
          UsesVar(read.ranges.back().min, b.iter_vars[static_cast<std::size_t>(a)].var.get())) {
        return {a, last};
      }
    }
  }
  return {-1, -1};
}

// Tiles the two loops of a transpose (TransposedLoops) in three levels, the
// innermost two unrolled: an n x n block that code generation transposes in
// registers when it is a plain copy (n vector loads, n log2 n shuffles, n
// vector stores; measure/codegen.cc), and else copies element by element
// within a few cache lines of either buffer. Recorded: n the largest of a
// vector's lanes, half of them, ... down to 4 that divides both extents,
// blocks of 4 x 4 of them. Transpose 2048 x 2048 by hand: 14.5 ms untiled,
// 1.14 ms in 8 x 8 blocks, 0.97-0.99 ms in 16 x 16 ones, 2-8 of them per
// tile alike (bench/RESULTS.md, session 33).
void TransposeInBlocks(Schedule& sch, const std::string& name, const SpaceOptions& o) {
  BlockRV b = sch.GetBlock(name);
  const auto [a, last] = TransposedLoops(sch.Get(b));
  std::vector<LoopRV> loops = sch.GetLoops(b);
  if (a < 0 || !LoopKinds(sch, b, loops) || loops.size() != sch.Get(b).iter_vars.size()) {
    throw ScheduleError("transpose in blocks: block " + name + " is not a plain transpose");
  }
  const std::int64_t ea = sch.Get(loops[static_cast<std::size_t>(a)]).extent;
  const std::int64_t el = sch.Get(loops[static_cast<std::size_t>(last)]).extent;
  const std::int64_t lanes = VectorLanes(o, OutputElementBytes(sch.Get(b)));
  std::int64_t n = 0;
  for (std::int64_t m = lanes; m >= 4 && n == 0; m /= 2) {
    if (ea % m == 0 && el % m == 0) n = m;
  }
  // No block size divides both (1009 x 1007): blocks of a vector's lanes
  // all the same, a loop that they do not divide split into `[None, 1,
  // lanes]`, its last block masked past the end; versioning copies the
  // blocks inside without their checks, which code generation transposes
  // in registers. By hand, 1009 x 1007: 69 us so, 0.18 ms for a 32-trial
  // session's best without blocks; 1008 x 1008, 68 us (bench/RESULTS.md,
  // session 86).
  const bool masked = n == 0 && std::min(ea, el) >= lanes;
  if (masked) n = lanes;
  // Mutated tiles stay within a vector's lanes: a 64 x 64 block, unrolled,
  // took over a minute to build.
  const std::int64_t most_inner = std::max<std::int64_t>(8, lanes);
  auto split = [&](int at, std::int64_t e) {
    if (masked && e % n != 0) {
      return sch.Split(loops[static_cast<std::size_t>(at)], {std::monostate{}, std::int64_t{1}, n});
    }
    std::int64_t inner = n > 0 ? n : LargestDivisorAtMost(e, 8);
    std::int64_t middle = LargestDivisorAtMost(e / inner, 4);
    std::vector<ExprRV> tiles =
        sch.SamplePerfectTile(loops[static_cast<std::size_t>(at)], 3, static_cast<int>(most_inner),
                              std::vector<std::int64_t>{e / inner / middle, middle, inner});
    return sch.Split(loops[static_cast<std::size_t>(at)], std::vector<ir::SplitFactor>(tiles.begin(), tiles.end()));
  };
  std::vector<LoopRV> pa = split(a, ea), pl = split(last, el);
  std::vector<LoopRV> order;
  for (std::size_t i = 0; i < loops.size(); ++i) {
    if (static_cast<int>(i) != a && static_cast<int>(i) != last) order.push_back(loops[i]);
  }
  order.insert(order.end(), {pa[0], pl[0], pa[1], pl[1], pa[2], pl[2]});
  sch.Reorder(order);
  sch.Unroll(pa[2]);
  sch.Unroll(pl[2]);
}

}  // namespace tunedb::search::rules
