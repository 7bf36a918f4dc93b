// The default design space's schedule rules (see space.h). Each rule works
// through the public Schedule API only, so everything it does is recorded
// in the trace and replays exactly; a variant that a primitive refuses is
// simply not part of the space.
#include "search/space.h"
#include "search/space_internal.h"

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ir/schedule/script.h"
#include "ir/structural.h"

namespace tunedb::search {
namespace {

using internal::BlockNames;
using internal::HasReduction;
using internal::UsesVar;
using ir::BlockNode;
using ir::BlockRV;
using ir::ExprRV;
using ir::IterKind;
using ir::LoopRV;
using ir::Schedule;
using ir::ScheduleError;

bool IsParam(const ir::PrimFunc& func, const ir::Buffer& buffer) {
  for (const ir::Buffer& p : func.params) {
    if (p.get() == buffer.get()) return true;
  }
  return false;
}

// ---- auto-inline ------------------------------------------------------------

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

// ---- multi-level tiling -------------------------------------------------------

// Blocks worth tiling: a reduction where some input is reused across a
// spatial loop (matmul's A is reused across j). Reductions that read every
// input once per iteration (a row sum) gain nothing from tiling.
bool NeedsMultiLevelTiling(const BlockNode& b) {
  if (!HasReduction(b)) return false;
  for (const ir::BufferRegion& read : b.reads) {
    for (const ir::IterVar& iv : b.iter_vars) {
      if (iv.kind != IterKind::kSpatial || iv.extent == 1) continue;
      bool used = false;
      for (const ir::Range& r : read.ranges) used = used || UsesVar(r.min, iv.var.get());
      if (!used) return true;
    }
  }
  return false;
}

std::int64_t ExtentProduct(const BlockNode& b, IterKind kind) {
  std::int64_t p = 1;
  for (const ir::IterVar& iv : b.iter_vars) {
    if (iv.kind == kind) p *= iv.extent;
  }
  return p;
}

// Reductions that read every input once, along the rows of an input that
// a spatial loop walks contiguously: a column sum, S[j] = sum_i X[i, j].
// Untiled, the reduction is the inner loop, and it walks down a column, a
// row (8 KB, two pages, at 2048 floats) apart per element; tiled, it goes
// outside the vectorized j, and each row is read as a stream. Column sum
// 2048 x 2048: 14.0 ms untiled, 0.28 ms tiled by hand, 64 columns per job
// 0.50 ms (bench/RESULTS.md, session 33). Not when the spatial part is too
// small to keep the cores busy: rfactor takes those (NeedsRFactor).
bool ReducesAlongColumns(const BlockNode& b, const SpaceOptions& o) {
  if (!HasReduction(b) || ExtentProduct(b, IterKind::kSpatial) < std::int64_t{o.cores} * o.max_jobs_per_core) {
    return false;
  }
  // An input read across the reduction (down its columns), whose last
  // dimension moves with a spatial loop and with no reduction loop.
  for (const ir::BufferRegion& read : b.reads) {
    if (read.ranges.empty()) continue;
    bool last_spatial = false, last_reduce = false, reduced = false;
    for (const ir::IterVar& iv : b.iter_vars) {
      if (iv.extent == 1) continue;
      bool in_last = UsesVar(read.ranges.back().min, iv.var.get());
      if (iv.kind == IterKind::kSpatial) {
        last_spatial = last_spatial || in_last;
      } else {
        last_reduce = last_reduce || in_last;
        for (const ir::Range& range : read.ranges) reduced = reduced || UsesVar(range.min, iv.var.get());
      }
    }
    if (last_spatial && !last_reduce && reduced) return true;
  }
  return false;
}

// The iteration kind each loop drives: the kind of the iter var bound to
// exactly that loop. nullopt when a binding is not a plain loop variable
// (the block was already transformed) and tiling should leave it alone.
std::optional<std::vector<IterKind>> LoopKinds(Schedule& sch, BlockRV b, const std::vector<LoopRV>& loops) {
  const BlockNode& node = sch.Get(b);
  std::vector<IterKind> kinds;
  for (LoopRV l : loops) {
    const ir::ExprNode* var = sch.Get(l).loop_var.get();
    std::optional<IterKind> kind;
    for (std::size_t i = 0; i < node.bindings.size(); ++i) {
      if (node.bindings[i].get() == var) {
        kind = node.iter_vars[i].kind;
      } else if (UsesVar(node.bindings[i], var)) {
        return std::nullopt;
      }
    }
    kinds.push_back(kind.value_or(IterKind::kSpatial));
  }
  return kinds;
}

// Inputs reused across some spatial loop (matmul's A across j, B across i):
// the candidates for a read cache.
std::vector<int> ReusedInputs(const BlockNode& b) {
  std::vector<int> out;
  for (std::size_t r = 0; r < b.reads.size(); ++r) {
    bool reused = false;
    for (const ir::IterVar& iv : b.iter_vars) {
      if (iv.kind != IterKind::kSpatial || iv.extent == 1) continue;
      bool used = false;
      for (const ir::Range& range : b.reads[r].ranges) used = used || UsesVar(range.min, iv.var.get());
      reused = reused || !used;
    }
    bool is_output = !b.writes.empty() && b.reads[r].buffer.get() == b.writes[0].buffer.get();
    if (reused && !is_output) out.push_back(static_cast<int>(r));
  }
  return out;
}

struct TilingVariant {
  int write_cache_level = 0;  // 0: none; 1 or 2: a local accumulator at that level
  int read_cache = -1;        // read buffer index packed per outer tile, or -1
  bool padded = false;        // pad_einsum first (RegisterBlockPadding)
  int vector_loop = -1;       // the loop to vectorize, -1: the last spatial one (BatchLanesLoop)
};

// Which dimensions of the region `read` of block `node` move with the loop
// whose variable is `loop_var` (an untransformed loop, bound to one
// iteration variable or to none).
std::vector<bool> DimensionsMovingWith(const BlockNode& node, const ir::BufferRegion& read,
                                       const ir::ExprNode* loop_var) {
  std::vector<bool> moves(read.ranges.size(), false);
  for (std::size_t i = 0; i < node.bindings.size(); ++i) {
    if (node.bindings[i].get() != loop_var) continue;
    for (std::size_t d = 0; d < read.ranges.size(); ++d) {
      moves[d] = moves[d] || UsesVar(read.ranges[d].min, node.iter_vars[i].var.get());
    }
  }
  return moves;
}

bool ReadMovesWith(const BlockNode& node, const ir::BufferRegion& read, const ir::ExprNode* loop_var) {
  std::vector<bool> moves = DimensionsMovingWith(node, read, loop_var);
  return std::find(moves.begin(), moves.end(), true) != moves.end();
}

// Whether the vector loop reads `read` along another dimension than its
// last (dense's W[j, k] with j vectorized). Lowering then lays a packed copy
// out with that dimension innermost (measure/lower.h), so the copy reads
// rows of the input and writes columns.
bool PackingTransposes(const BlockNode& node, const ir::BufferRegion& read, const ir::ExprNode* vector_loop_var) {
  std::vector<bool> moves = DimensionsMovingWith(node, read, vector_loop_var);
  return moves.size() >= 2 && !moves.back() && std::find(moves.begin(), moves.end(), true) != moves.end();
}

// A transposing copy goes in 8 x 8 blocks, unrolled, instead of storing
// element by element with a stride: dense_bias_relu's packed register
// blocks ran 157-163 -> 174-180 GFLOP/s (bench/RESULTS.md, session 21).
// Code generation then transposes each block in registers (8 vector loads,
// 24 shuffles, 8 vector stores; measure/codegen.cc), which LLVM did not:
// it copied the 64 elements one by one (session 24: 293-318 -> 326-360). Unrolled, the block's inner loop
// is not vectorized by the postprocessor: in a hand-written schedule, a
// vector load and eight strided stores ran 175-181 where the unrolled
// block ran 184-188. The factor is fixed, not sampled: a tile mutation
// that leaves a copy extent not divisible by 8 makes an imperfect split,
// which stays correct.
void CopyInBlocks(Schedule& sch, BlockRV copy) {
  constexpr std::int64_t kBlock = 8;
  std::vector<LoopRV> loops = sch.GetLoops(copy);
  if (loops.size() < 2) return;
  LoopRV rows = loops[loops.size() - 2], columns = loops.back();
  if (sch.Get(rows).extent < kBlock || sch.Get(columns).extent < kBlock) return;
  std::vector<LoopRV> r = sch.Split(rows, {std::monostate{}, kBlock});
  std::vector<LoopRV> c = sch.Split(columns, {std::monostate{}, kBlock});
  sch.Reorder({r[0], c[0], r[1], c[1]});
  sch.Unroll(r[1]);
  sch.Unroll(c[1]);
}

// Bytes of one element of what the block writes (a float by default).
int OutputElementBytes(const BlockNode& b) {
  return b.writes.empty() ? 4 : ir::DataTypeBytes(b.writes[0].buffer->dtype);
}

// Elements of that size in one of the target's vector registers.
std::int64_t VectorLanes(const SpaceOptions& o, int element_bytes) {
  return std::max(1, o.vector_bits / 8 / element_bytes);
}

// The largest divisor of n that is at most limit (1 at least).
std::int64_t LargestDivisorAtMost(std::int64_t n, std::int64_t limit) {
  for (std::int64_t d = std::min(n, std::max<std::int64_t>(limit, 1)); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

// A block's iteration extents and kinds, in the order of its iteration
// variables (an untransformed block's loop order).
struct IterShape {
  std::vector<std::int64_t> extents;
  std::vector<IterKind> kinds;
};
IterShape IterShapeOf(const BlockNode& b) {
  IterShape shape;
  for (const ir::IterVar& iv : b.iter_vars) {
    shape.extents.push_back(iv.extent);
    shape.kinds.push_back(iv.kind);
  }
  return shape;
}

// The loop whose innermost tile the postprocessor vectorizes: the last
// spatial loop longer than 1 (-1 when there is none).
int VectorLoop(const std::vector<std::int64_t>& extents, const std::vector<IterKind>& kinds) {
  for (std::size_t i = extents.size(); i-- > 0;) {
    if (kinds[i] == IterKind::kSpatial && extents[i] > 1) return static_cast<int>(i);
  }
  return -1;
}

// Whether `loop` can give a register block rows of broadcasts against the
// vectors of loop `vectorized`: it moves some input, and none that the
// vectorized loop moves, so every row reuses the same vectors (matmul's i;
// a convolution's w in NHWC, its output channels in NCHW; never a batch,
// which moves both inputs). `loop_vars` are the block's loops, bound to
// its iteration variables.
bool RowsOfBroadcasts(const BlockNode& node, const std::vector<const ir::ExprNode*>& loop_vars, int loop,
                      int vectorized) {
  bool moves_an_input = false;
  for (const ir::BufferRegion& read : node.reads) {
    if (!ReadMovesWith(node, read, loop_vars[static_cast<std::size_t>(loop)])) continue;
    if (ReadMovesWith(node, read, loop_vars[static_cast<std::size_t>(vectorized)])) return false;
    moves_an_input = true;
  }
  return moves_an_input;
}

// The loops of a register block, by position (-1 where there is none): the
// one the postprocessor vectorizes (`vector_loop`, or by default the last
// spatial loop longer than 1), the rows and the last reduction loop, which
// is unrolled. The rows are the last other spatial loop longer than 1 that
// gives rows of broadcasts (RowsOfBroadcasts), or else the last other
// spatial loop longer than 1 (a depthwise convolution has no such loop).
// In NCHW the loop before the vectorized w is h, whose rows each read
// their own vectors of the input: conv2d 64 -> 64 at 56 x 56, tuned with 4
// rows of h, ran 221-239 GFLOP/s, and its trace with 4 rows of output
// channels instead 284-300 (bench/RESULTS.md, session 33).
struct BlockLoops {
  int vectorized = -1, rows = -1, last_reduce = -1;
};
BlockLoops RegisterBlockLoops(const BlockNode& node, const std::vector<const ir::ExprNode*>& loop_vars,
                              const std::vector<std::int64_t>& extents, const std::vector<IterKind>& kinds,
                              int vector_loop = -1) {
  BlockLoops l;
  l.vectorized = vector_loop >= 0 ? vector_loop : VectorLoop(extents, kinds);
  int last_other = -1;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    const int at = static_cast<int>(i);
    if (kinds[i] != IterKind::kSpatial) {
      l.last_reduce = at;
    } else if (extents[i] > 1 && at != l.vectorized) {
      last_other = at;
      if (l.vectorized >= 0 && RowsOfBroadcasts(node, loop_vars, at, l.vectorized)) l.rows = at;
    }
  }
  if (l.rows < 0) l.rows = last_other;
  return l;
}

// A reduction loop that slides along the register block's rows: some input
// is read at (row + it), as a convolution reads X[h + kh, w + kw, ci] with
// its rows along w. Unrolled whole, inside the rows, one step's inputs are
// the next row's (4 rows x 3 steps read 6 input elements, not 12). Conv2d
// 56 x 56 x 64 -> 64, the register block's trace timed alternately (bench/
// RESULTS.md, session 32): kw unrolled 356-364 GFLOP/s, ci unrolled by 4
// 297-323, neither 315-324, both 272-281. At most kMaxSlidingUnroll steps
// (a 3 x 3 kernel's); -1: none. `loop_vars` are the block's loops, bound
// to its iteration variables.
constexpr std::int64_t kMaxSlidingUnroll = 4;
int SlidingReduction(const BlockNode& node, const std::vector<const ir::ExprNode*>& loop_vars,
                     const std::vector<std::int64_t>& extents, const std::vector<IterKind>& kinds, int rows) {
  if (rows < 0) return -1;
  int sliding = -1;
  for (std::size_t i = 0; i < loop_vars.size(); ++i) {
    if (kinds[i] == IterKind::kSpatial || extents[i] < 2 || extents[i] > kMaxSlidingUnroll) continue;
    for (const ir::BufferRegion& read : node.reads) {
      std::vector<bool> with_rows = DimensionsMovingWith(node, read, loop_vars[static_cast<std::size_t>(rows)]);
      std::vector<bool> with_this = DimensionsMovingWith(node, read, loop_vars[i]);
      for (std::size_t d = 0; d < with_rows.size(); ++d) {
        if (with_rows[d] && with_this[d]) sliding = static_cast<int>(i);
      }
    }
  }
  return sliding;  // the innermost
}

// A second loop of rows for the register block, for when the rows loop's
// extent has no divisor that fills the block (14 has none in 3..4): the
// innermost other spatial loop longer than 1 that gives rows of broadcasts
// too (an NHWC convolution's h). -1: none.
int SecondRowsLoop(const BlockNode& node, const std::vector<const ir::ExprNode*>& loop_vars,
                   const std::vector<std::int64_t>& extents, const std::vector<IterKind>& kinds, int rows,
                   int vectorized) {
  if (rows < 0 || vectorized < 0) return -1;
  int second = -1;
  for (int i = 0; i < static_cast<int>(loop_vars.size()); ++i) {
    if (i == rows || i == vectorized || kinds[static_cast<std::size_t>(i)] != IterKind::kSpatial ||
        extents[static_cast<std::size_t>(i)] < 2) {
      continue;
    }
    if (RowsOfBroadcasts(node, loop_vars, i, vectorized)) second = i;
  }
  return second;
}

// The tiling's own decisions, recorded in the design space: the register
// block a BLAS micro-kernel would use. The last spatial loop (the one the
// postprocessor vectorizes) gets up to four vectors as its innermost tile,
// the spatial loop before it as many rows as the accumulator registers
// allow, both with a level-2 tile of 1, so that the block of accumulators
// stays the same across the outer reduction loop and LLVM keeps it in
// registers; the other spatial loops go outermost up to the parallel
// limit; the last reduction loop is unrolled by up to 4, or a reduction
// loop sliding along the rows (SlidingReduction, `sliding` >= 0) is
// unrolled whole instead. When the rows' extent leaves the block short of
// rows, a second loop of rows (SecondRowsLoop, `second_rows` >= 0) makes up
// the rest: conv2d 14 x 14 x 256 gets 2 x 2 rows instead of 2. Random tiles
// rarely land on such a block at large sizes. A cold search measures these
// decisions first (strategy.h): the kernels 64-trial matmul 1024 sessions
// kept went from 139 to 163 GFLOP/s on average, timed side by side
// (bench/RESULTS.md, session 20).
std::vector<std::vector<std::int64_t>> RegisterBlockedTiles(const std::vector<std::int64_t>& extents,
                                                            const std::vector<IterKind>& kinds,
                                                            int element_bytes, const SpaceOptions& o,
                                                            int vector_loop, const BlockLoops& block_loops,
                                                            int sliding, int second_rows) {
  std::int64_t lanes = VectorLanes(o, element_bytes);
  // Every innermost factor within the space's limit, or the sample refuses it.
  std::int64_t limit = o.max_vectorize;
  const auto [vectorized, rows, last_reduce] = block_loops;
  std::vector<std::vector<std::int64_t>> tiles;
  // Each row is a broadcast per step. With the lanes along a batch (one
  // vector at batch 16), more than 8 would outnumber the loads the ports
  // take with the multiply-adds: dense 16 x 1024 x 1024 by hand, 112
  // GFLOP/s with 16 rows, 260 with 8.
  auto most_rows_for = [&](std::int64_t vectors) {
    std::int64_t most = std::min<std::int64_t>(limit, o.accumulator_vectors / vectors);
    return vector_loop >= 0 ? std::min<std::int64_t>(most, 8) : most;
  };
  auto extent_of = [&](int loop) { return loop >= 0 ? extents[static_cast<std::size_t>(loop)] : 1; };
  // The rows of both loops for `vectors` vectors of columns.
  auto row_tiles = [&](std::int64_t vectors) {
    std::int64_t most = most_rows_for(vectors);
    std::int64_t first = LargestDivisorAtMost(extent_of(rows), most);
    return std::make_pair(first, LargestDivisorAtMost(extent_of(second_rows), most / first));
  };
  std::int64_t columns = 1;
  if (vectorized >= 0) {
    // Whole vectors when a multiple of the lanes divides the extent (1008
    // columns go 48 at a time, not 63): the count of vectors that fills
    // the most accumulators with the rows the extents allow, the most
    // vectors among equals. A prime count of rows (7 x 7 outputs) fills 14
    // with 2 vectors and 7 rows, where 4 vectors left it 1 row, 4.
    std::int64_t e = extents[static_cast<std::size_t>(vectorized)];
    std::int64_t most = std::min<std::int64_t>(limit, 4 * lanes);
    columns = LargestDivisorAtMost(e, most);
    std::int64_t filled = 0;
    for (std::int64_t c = most / lanes * lanes; c >= lanes; c -= lanes) {
      if (e % c != 0) continue;
      auto [first, second] = row_tiles(c / lanes);
      if (c / lanes * first * second > filled) {
        filled = c / lanes * first * second;
        columns = c;
      }
    }
  }
  std::int64_t vectors = (columns + lanes - 1) / lanes;
  std::int64_t most_rows = most_rows_for(vectors);
  std::int64_t row_tile = row_tiles(vectors).first;
  std::int64_t jobs_left = std::int64_t{o.cores} * o.max_jobs_per_core;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    std::int64_t e = extents[i];
    int at = static_cast<int>(i);
    if (kinds[i] != IterKind::kSpatial) {
      std::int64_t unroll = 1;
      if (sliding >= 0) {
        if (at == sliding) unroll = e;
      } else if (at == last_reduce) {
        unroll = LargestDivisorAtMost(e, std::min<std::int64_t>(4, limit));
      }
      tiles.push_back({e / unroll, unroll});
    } else if (at == vectorized) {
      tiles.push_back({e / columns, 1, 1, columns});
    } else if (at == rows) {
      std::int64_t middle = LargestDivisorAtMost(e / row_tile, 4);
      tiles.push_back({e / row_tile / middle, middle, 1, row_tile});
    } else if (at == second_rows) {
      // The rest of the block's rows; the remaining extent goes outermost
      // up to the parallel limit, as the other loops' does.
      std::int64_t inner = LargestDivisorAtMost(e, most_rows / row_tile);
      std::int64_t outer = LargestDivisorAtMost(e / inner, jobs_left);
      jobs_left /= outer;
      tiles.push_back({outer, e / inner / outer, 1, inner});
    } else {
      // Outermost, up to the parallel limit (the postprocessor fuses the
      // outer loops while their product stays within it); the rest next.
      std::int64_t outer = LargestDivisorAtMost(e, jobs_left);
      jobs_left /= outer;
      tiles.push_back({outer, e / outer, 1, 1});
    }
  }
  return tiles;
}

// Dense at small batches, Y[i, j] = sum_k X[i, k] * W[j, k]: vectorized
// along j, as tiling does by default, every vector of W is read a row apart
// per lane, so W is packed transposed, a copy of the whole weight for a
// product that reads it once. Vectorized along the batch i instead, the
// small X is the one packed transposed, each W[j, k] is broadcast from its
// row in place, and W is read once, contiguously. Dense 32 x 1024 x 1024,
// hand-written: 182 GFLOP/s tuned with W packed, 314 with the lanes along
// i (a 32 x 8 register block: 2 vectors of X, 8 broadcasts of W).
// Returns the spatial iteration variable to vectorize instead of the last
// one, and the input to pack (-1, -1 when there is none): a loop of at
// least a vector, in whole half vectors, whose transposed inputs hold at
// most half the elements of those the default vectorization transposes.
// Half vectors: batch 24 (a vector and a half, 24 x 8 blocks) went from
// 163.7 to 280.7 GFLOP/s in 64 trials, batch 40 from 219.2 to 251.3; at
// other extents the search found no better (batch 20: 155.2 and 154.8,
// batch 100: 290.3 and 271.0).
std::pair<int, int> BatchLanesLoop(const BlockNode& b, const SpaceOptions& o) {
  const auto [extents, kinds] = IterShapeOf(b);
  int last = VectorLoop(extents, kinds);
  if (last < 0) return {-1, -1};
  const std::int64_t lanes = VectorLanes(o, OutputElementBytes(b));
  // The elements of the inputs that vectorizing `v` reads along another
  // dimension than their last, and the largest of them.
  auto transposed = [&](int v) {
    std::int64_t elements = 0;
    int input = -1;
    const ir::ExprNode* var = b.iter_vars[static_cast<std::size_t>(v)].var.get();
    for (std::size_t r = 0; r < b.reads.size(); ++r) {
      const ir::BufferRegion& read = b.reads[r];
      if (read.ranges.empty() || (!b.writes.empty() && read.buffer.get() == b.writes[0].buffer.get())) continue;
      bool moves = false, last_moves = UsesVar(read.ranges.back().min, var);
      for (const ir::Range& range : read.ranges) moves = moves || UsesVar(range.min, var);
      if (!moves || last_moves) continue;
      if (input < 0 || read.buffer->NumElements() > b.reads[static_cast<std::size_t>(input)].buffer->NumElements()) {
        input = static_cast<int>(r);
      }
      elements += read.buffer->NumElements();
    }
    return std::make_pair(elements, input);
  };
  const std::int64_t by_default = transposed(last).first;
  for (int v = last; v-- > 0;) {
    std::int64_t e = extents[static_cast<std::size_t>(v)];
    if (kinds[static_cast<std::size_t>(v)] != IterKind::kSpatial || e < lanes || e % (lanes / 2) != 0) {
      continue;
    }
    auto [elements, input] = transposed(v);
    if (input >= 0 && 2 * elements <= by_default) return {v, input};
  }
  return {-1, -1};
}

// ---- padding -------------------------------------------------------------------

// The padding (pad_einsum) that gives a tiled block's register block whole
// vectors and rows: the vectorized loop's extent up to a multiple of the
// lanes (of two vectors' lanes, see below), the rows' up to a multiple of
// 4, and, with them, the last reduction's up to a multiple of 4 (its
// unroll, unless a sliding reduction is unrolled instead). Prime extents otherwise
// leave a register block of one row (M = 127) or of 43 columns (N = 129).
// Empty when the extents need none: padding only the reduction would copy
// both inputs for an unroll.
std::vector<std::int64_t> RegisterBlockPadding(const BlockNode& b, const SpaceOptions& o) {
  const auto [extents, kinds] = IterShapeOf(b);
  std::vector<const ir::ExprNode*> loop_vars;
  for (const ir::Expr& binding : b.bindings) loop_vars.push_back(binding.get());
  const auto [vectorized, rows, last_reduce] = RegisterBlockLoops(b, loop_vars, extents, kinds);
  if (vectorized < 0) return {};
  const std::int64_t lanes = VectorLanes(o, OutputElementBytes(b));
  constexpr std::int64_t kRows = 4, kUnroll = 4;
  std::vector<std::int64_t> padding(extents.size(), 1);
  auto pad = [&](int at, std::int64_t multiple) {
    std::int64_t e = extents[static_cast<std::size_t>(at)];
    if (e <= multiple || e % multiple == 0) return false;
    padding[static_cast<std::size_t>(at)] = multiple;
    return true;
  };
  // Padded to a count of vectors with no divisor in 2..4 (5, 7, 13, ...),
  // the register block would be one vector wide, and every multiply-add
  // would need a broadcast: one more vector makes it even. Batch matmul 197
  // x 197 x 64 (columns padded to 208 = 13 vectors, 10 x 16 blocks): 316
  // us; padded to 224, with 8 x 32 blocks, 243 us. Not below 8 vectors,
  // where the one more is too much more work (dense with 100 outputs: 51.0
  // us padded to 112, 55.9 to 128), nor for an extent that is a whole
  // number of vectors (64-trial sessions of 208 and 80 columns found the
  // same either way).
  std::int64_t e = extents[static_cast<std::size_t>(vectorized)], vectors = (e + lanes - 1) / lanes;
  bool odd = e % lanes != 0 && vectors >= 8 && vectors % 2 != 0 && vectors % 3 != 0;
  bool spatial = pad(vectorized, odd ? 2 * lanes : lanes);
  if (rows >= 0) spatial = pad(rows, kRows) || spatial;
  if (!spatial) return {};
  // A sliding reduction is unrolled instead of the last (RegisterBlockedTiles).
  if (last_reduce >= 0 && SlidingReduction(b, loop_vars, extents, kinds, rows) < 0) pad(last_reduce, kUnroll);
  return padding;
}

// No padded input keeps a copy of its own: the padding goes into what reads
// it. Into a packed copy, it is one pass over the input instead of two: a
// hand schedule of matmul 1021 x 1023 x 1019 padded to 1024 x 1024 x 1020
// ran 10.3-13.8 ms with B padded then packed, 7.4 ms with the padding in
// the packing (6.7 ms unpadded at 1024 x 1024 x 1020). Into the tiled
// block, the read becomes a guarded select, which code generation emits
// as a load from a selected address (measure/codegen.cc): at 127 x 127 x
// 127 the copy of A, made before the parallel loop, took 29.7 us against
// 15.1 us inlined; at 1021 it made no difference (bench/RESULTS.md,
// session 28). `added` are the blocks pad_einsum added: the inputs'
// padded copies and the output's copy-back.
void InlinePaddedInputs(Schedule& sch, const std::vector<std::string>& added) {
  std::vector<std::string> names = BlockNames(sch.func());
  for (const std::string& name : added) {
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;  // inlined already
    BlockRV pad = sch.GetBlock(name);
    if (!sch.GetProducers(pad).empty()) continue;  // the copy-back, left where it is
    try {
      sch.ComputeInline(pad);
    } catch (const ScheduleError&) {
    }
  }
}

// SSRSRS tiling; write_cache_level 0 = no cache, 1 or 2 = a "local"
// accumulator written back at the end of that spatial tile level.
//
// With a read cache, one input's tile is packed as BLAS packs a panel: the
// outermost loops it moves with (B's j_0) go first, the copy goes under
// them, and the other outermost loops (i_0) follow, so each panel is copied
// once and read contiguously by every tile of the rows. A panel of B read
// in place has a row stride of 4 KiB at N = 1024, which conflicts in the
// caches; its packed copy does not. Copied under all outermost loops
// instead, it was copied again for every i_0 (bench/RESULTS.md, session 14).
void MultiLevelTiling(Schedule& sch, const std::string& name, TilingVariant variant, const SpaceOptions& options) {
  const int write_cache_level = variant.write_cache_level;
  BlockRV b = sch.GetBlock(name);
  std::vector<LoopRV> loops = sch.GetLoops(b);
  auto kinds = LoopKinds(sch, b, loops);
  if (!kinds) throw ScheduleError("multi-level tiling: block " + name + " has non-trivial bindings");
  std::vector<std::int64_t> extents;
  for (LoopRV l : loops) extents.push_back(sch.Get(l).extent);
  std::vector<bool> packed_moves(loops.size(), false);
  bool packing_transposes = false;
  if (variant.read_cache >= 0) {
    const BlockNode& node = sch.Get(b);
    const ir::BufferRegion& read = node.reads.at(static_cast<std::size_t>(variant.read_cache));
    for (std::size_t i = 0; i < loops.size(); ++i) {
      packed_moves[i] = ReadMovesWith(node, read, sch.Get(loops[i]).loop_var.get());
    }
    int vectorized = variant.vector_loop >= 0 ? variant.vector_loop : VectorLoop(extents, *kinds);
    packing_transposes =
        vectorized >= 0 &&
        PackingTransposes(node, read, sch.Get(loops[static_cast<std::size_t>(vectorized)]).loop_var.get());
  }
  std::vector<std::vector<LoopRV>> levels(6);
  const int spatial_levels[4] = {0, 1, 3, 5}, reduce_levels[2] = {2, 4};
  std::size_t outer_moving = 0;  // how many of levels[0] the packed tile moves with
  std::vector<const ir::ExprNode*> loop_vars;
  for (LoopRV l : loops) loop_vars.push_back(sch.Get(l).loop_var.get());
  const BlockLoops block_loops = RegisterBlockLoops(sch.Get(b), loop_vars, extents, *kinds, variant.vector_loop);
  int sliding = SlidingReduction(sch.Get(b), loop_vars, extents, *kinds, block_loops.rows);
  int second_rows =
      SecondRowsLoop(sch.Get(b), loop_vars, extents, *kinds, block_loops.rows, block_loops.vectorized);
  std::vector<std::vector<std::int64_t>> blocked = RegisterBlockedTiles(
      extents, *kinds, OutputElementBytes(sch.Get(b)), options, variant.vector_loop, block_loops, sliding,
      second_rows);
  for (std::size_t i = 0; i < loops.size(); ++i) {
    bool spatial = (*kinds)[i] == IterKind::kSpatial;
    int n = spatial ? 4 : 2;
    std::vector<ExprRV> tiles = sch.SamplePerfectTile(loops[i], n, options.max_vectorize, blocked[i]);
    std::vector<ir::SplitFactor> factors(tiles.begin(), tiles.end());
    std::vector<LoopRV> parts = sch.Split(loops[i], factors);
    for (int k = 0; k < n; ++k) levels[spatial ? spatial_levels[k] : reduce_levels[k]].push_back(parts[k]);
    if (spatial && packed_moves[i]) {
      // Keep the outermost loops the packed tile moves with ahead of the others.
      std::vector<LoopRV>& outer = levels[0];
      std::rotate(outer.begin() + static_cast<std::ptrdiff_t>(outer_moving), outer.end() - 1, outer.end());
      ++outer_moving;
    }
  }
  if (variant.vector_loop >= 0) {
    // The vectorized loop's innermost tile goes last, where the
    // postprocessor vectorizes.
    std::vector<LoopRV>& inner = levels[5];
    std::size_t at = 0;
    for (int i = 0; i < variant.vector_loop; ++i) at += (*kinds)[static_cast<std::size_t>(i)] == IterKind::kSpatial;
    std::rotate(inner.begin() + static_cast<std::ptrdiff_t>(at), inner.begin() + static_cast<std::ptrdiff_t>(at) + 1,
                inner.end());
  }
  if (variant.read_cache >= 0 && outer_moving == 0) {
    throw ScheduleError("multi-level tiling: the packed input of " + name + " moves with no outer loop");
  }
  std::vector<LoopRV> order;
  for (const auto& level : levels) order.insert(order.end(), level.begin(), level.end());
  sch.Reorder(order);
  if (write_cache_level == 0) return;
  const std::vector<LoopRV>& at_level = levels[spatial_levels[write_cache_level - 1]];
  if (at_level.empty()) throw ScheduleError("multi-level tiling: no spatial loop to put the write cache under");
  BlockRV cache = sch.CacheWrite(b, 0, "local");
  sch.ReverseComputeAt(cache, at_level.back(), /*preserve_unit_loops=*/true);
  if (variant.read_cache >= 0) {
    BlockRV packed = sch.CacheRead(b, variant.read_cache, "global");
    // With the lanes along the batch, the packed input is the small one: it
    // is copied whole, once, in a parallel loop of its own before the
    // product's. (Under the batch's outer tile, often one iteration, that
    // loop held both nests, and the postprocessor made neither parallel.)
    if (variant.vector_loop < 0) sch.ComputeAt(packed, levels[0][outer_moving - 1], /*preserve_unit_loops=*/true);
    if (packing_transposes) CopyInBlocks(sch, packed);
  }
  // An elementwise consumer (bias, relu) is fused into the write-back, so
  // the result goes to memory once, as TVM's MultiLevelTilingWithFusion does.
  // A padded block's write-back first takes in the copy-back of the real
  // part (as a predicate), then the consumer after it.
  //
  // Vectorized along another dimension than the output's last, the
  // accumulator is laid out transposed (measure/lower.h), so its write-back
  // transposes too: in blocks, as a packed copy does, which code generation
  // transposes in registers. A consumer then goes under the same tile
  // after it, not into it: fused into it, the write-back was a scalar loop
  // that LLVM did not unroll, whose accesses at unknown offsets kept the
  // accumulator in memory (dense_bias_relu 16 x 2048 x 1000, 16 x 8
  // blocks: 506 us fused; 271 us with the write-back unrolled by hand, 252
  // with the consumer after it).
  const bool transposed = variant.vector_loop >= 0;
  for (int fused = 0; fused < (variant.padded ? 2 : 1); ++fused) {
    std::vector<BlockNode*> readers = ir::ConsumerBlocks(sch.func(), sch.Get(cache));
    if (readers.size() != 1 || HasReduction(*readers[0])) break;
    BlockRV consumer = sch.GetBlock(readers[0]->name);
    try {
      if (transposed) {
        sch.ReverseComputeAt(consumer, at_level.back(), /*preserve_unit_loops=*/true);
      } else {
        sch.ReverseComputeInline(consumer);
      }
    } catch (const ScheduleError&) {
      break;  // stays where it is: correct, one more pass over the output
    }
  }
  if (transposed) CopyInBlocks(sch, cache);
}

// ---- rfactor ----------------------------------------------------------------

// A reduction whose spatial part is too small to keep the cores busy is
// split into partial reductions over a factored axis (TVM's AddRFactor).
bool NeedsRFactor(const BlockNode& b, const SpaceOptions& o) {
  return HasReduction(b) && ExtentProduct(b, IterKind::kSpatial) < std::int64_t{o.cores} * o.max_jobs_per_core &&
         ExtentProduct(b, IterKind::kReduce) >= 64;
}

void RFactor(Schedule& sch, const std::string& name, int factor_part, int max_innermost) {
  BlockRV b = sch.GetBlock(name);
  std::vector<LoopRV> loops = sch.GetLoops(b);
  auto kinds = LoopKinds(sch, b, loops);
  if (!kinds) throw ScheduleError("rfactor: block " + name + " has non-trivial bindings");
  std::vector<LoopRV> reduce;
  for (std::size_t i = 0; i < loops.size(); ++i) {
    if ((*kinds)[i] == IterKind::kReduce) reduce.push_back(loops[i]);
  }
  LoopRV fused = reduce.size() == 1 ? reduce[0] : sch.Fuse(reduce);
  std::vector<ExprRV> tiles = sch.SamplePerfectTile(fused, 2, max_innermost);
  std::vector<LoopRV> parts = sch.Split(fused, {tiles[0], tiles[1]});
  sch.RFactor(parts[factor_part], 0);
}

// A reduction whose innermost loop reduces along an input's last dimension
// (a row sum, softmax's row max) leaves the postprocessor no spatial loop to
// vectorize, and its adds form one chain, each waiting for the one before.
// Splitting off a vector's worth of that loop and rfactoring it into the
// last axis of a partial result, rf[i, k1] += A[i, k0 * lanes + k1], mends
// both: k1 is a contiguous spatial loop for the postprocessor to vectorize,
// and the lanes hold independent partial sums.
bool NeedsVectorRFactor(const BlockNode& b) {
  if (!HasReduction(b) || b.iter_vars.empty() || b.iter_vars.back().kind != IterKind::kReduce) return false;
  if (ExtentProduct(b, IterKind::kReduce) < 64) return false;
  const ir::ExprNode* inner = b.iter_vars.back().var.get();
  for (const ir::BufferRegion& read : b.reads) {
    if (!read.ranges.empty() && UsesVar(read.ranges.back().min, inner)) return true;
  }
  return false;
}

// The space's own decision splits off one vector of the output's type.
// Returns the block of partial sums.
BlockRV VectorRFactor(Schedule& sch, const std::string& name, const SpaceOptions& o) {
  BlockRV b = sch.GetBlock(name);
  std::vector<LoopRV> loops = sch.GetLoops(b);
  auto kinds = LoopKinds(sch, b, loops);
  if (!kinds || kinds->back() != IterKind::kReduce) {
    throw ScheduleError("rfactor: block " + name + " does not end in a plain reduction loop");
  }
  int spatial = static_cast<int>(std::count(kinds->begin(), kinds->end(), IterKind::kSpatial));
  std::int64_t extent = sch.Get(loops.back()).extent;
  std::int64_t lanes = VectorLanes(o, OutputElementBytes(sch.Get(b)));
  std::optional<std::vector<std::int64_t>> decision;
  if (extent % lanes == 0 && lanes <= o.max_vectorize) decision = std::vector<std::int64_t>{extent / lanes, lanes};
  std::vector<ExprRV> tiles = sch.SamplePerfectTile(loops.back(), 2, o.max_vectorize, decision);
  std::vector<LoopRV> parts = sch.Split(loops.back(), {tiles[0], tiles[1]});
  return sch.RFactor(parts[1], spatial);
}

// A reduction that reads some input along its innermost reduction loop and
// reuses it little: a matrix-vector product such as dense at batch 1, Y[0,
// j] = sum_k X[0, k] * W[j, k], or a few rows at a time (small batches).
// Tiling vectorizes j, which reads W a row apart in every lane, and packing
// W costs as much as the product at these sizes. The dot-product form reads
// W in contiguous vectors: the vector rfactor, blocked for registers
// (MatrixVectorRFactor). Returns the index of that input among the block's
// reads, or -1 when every input is reused more than `max_reuse` times (the
// spatial iterations that do not move it).
int StreamedInput(const BlockNode& b, std::int64_t max_reuse) {
  if (!NeedsVectorRFactor(b)) return -1;
  const ir::ExprNode* inner = b.iter_vars.back().var.get();
  for (std::size_t r = 0; r < b.reads.size(); ++r) {
    const ir::BufferRegion& read = b.reads[r];
    if (read.ranges.empty() || !UsesVar(read.ranges.back().min, inner)) continue;
    std::int64_t reuse = 1;
    for (const ir::IterVar& iv : b.iter_vars) {
      if (iv.kind != IterKind::kSpatial) continue;
      bool used = false;
      for (const ir::Range& range : read.ranges) used = used || UsesVar(range.min, iv.var.get());
      if (!used) reuse *= iv.extent;
    }
    if (reuse <= max_reuse) return static_cast<int>(r);
  }
  return -1;
}

// The matrix-vector variant. After the vector rfactor, rf[i, j, k1] +=
// X[i, k0 * 16 + k1] * W[j, k0 * 16 + k1], the partial sums of a block of
// rows of W (the last loop moving W, split; the space records up to 8 rows,
// fewer with more reuse) and of every row of X (the loops not moving W) are
// kept in registers across k0: one vector of W serves every row of X, and
// the blocked rows make independent chains of adds. The sum of each
// output's lanes and its elementwise consumers (bias, relu) go under the
// block's loop, so the product is one parallel loop.
// Dense at batch 8, 1024 x 1024, hand-written: 89 us with one row of W, 76
// with 2, 95 with 4 (32 accumulators spill), against 180 us tiled.
// At batch 1, fusing the sums: 784 -> 128, 3.8-3.9 -> 2.7-2.9 us.
void MatrixVectorRFactor(Schedule& sch, const std::string& name, const SpaceOptions& o) {
  BlockRV original = sch.GetBlock(name);
  int streamed_read = StreamedInput(sch.Get(original), o.accumulator_vectors);
  if (streamed_read < 0) throw ScheduleError("matrix-vector rfactor: " + name + " streams no input");
  ir::Buffer streamed = sch.Get(original).reads[static_cast<std::size_t>(streamed_read)].buffer;
  BlockRV rf = VectorRFactor(sch, name, o);
  std::vector<LoopRV> loops = sch.GetLoops(rf);
  auto kinds = LoopKinds(sch, rf, loops);
  if (!kinds || kinds->size() < 3 || kinds->back() != IterKind::kSpatial ||
      (*kinds)[kinds->size() - 2] != IterKind::kReduce) {
    throw ScheduleError("matrix-vector rfactor: unexpected loops of " + name + "_rf");
  }
  const BlockNode& node = sch.Get(rf);
  const ir::BufferRegion* w = nullptr;
  for (const ir::BufferRegion& read : node.reads) {
    if (read.buffer == streamed) w = &read;
  }
  if (w == nullptr) throw ScheduleError("matrix-vector rfactor: " + name + "_rf does not read " + streamed->name);
  std::vector<LoopRV> moving, reusing;  // before the reduction loop
  std::int64_t reuse = 1;
  for (std::size_t l = 0; l + 2 < loops.size(); ++l) {
    const ir::ForNode& f = sch.Get(loops[l]);
    if (f.extent > 1 && !ReadMovesWith(node, *w, f.loop_var.get())) {
      reusing.push_back(loops[l]);
      reuse *= f.extent;
    } else {
      moving.push_back(loops[l]);
    }
  }
  if (moving.empty()) throw ScheduleError("matrix-vector rfactor: no loop of " + name + "_rf moves its input");
  std::int64_t extent = sch.Get(moving.back()).extent, rows = 1;
  for (std::int64_t d = 1; d <= 8 && d <= extent; ++d) {
    if (extent % d == 0 && reuse * d <= o.accumulator_vectors) rows = d;
  }
  std::vector<ExprRV> tiles =
      sch.SamplePerfectTile(moving.back(), 2, o.accumulator_vectors, std::vector<std::int64_t>{extent / rows, rows});
  std::vector<LoopRV> parts = sch.Split(moving.back(), {tiles[0], tiles[1]});
  std::vector<LoopRV> order(moving.begin(), moving.end() - 1);
  order.push_back(parts[0]);
  order.push_back(loops[loops.size() - 2]);
  order.insert(order.end(), reusing.begin(), reusing.end());
  order.push_back(parts[1]);
  order.push_back(loops.back());
  sch.Reorder(order);
  LoopRV at = parts[0];
  BlockRV accumulators = sch.CacheWrite(rf, 0, "local");
  sch.ReverseComputeAt(accumulators, at, /*preserve_unit_loops=*/true);
  BlockRV sum = sch.GetBlock(name);
  sch.ReverseComputeAt(sum, at, /*preserve_unit_loops=*/true);
  for (int fused = 0; fused < 2; ++fused) {
    std::vector<BlockNode*> readers = ir::ConsumerBlocks(sch.func(), sch.Get(sum));
    if (readers.size() != 1 || HasReduction(*readers[0])) break;
    // A shared stage (softmax's exp) gets a compute location of its own.
    if (TranscendentalSharedStage(sch.func(), *readers[0])) break;
    BlockRV consumer = sch.GetBlock(readers[0]->name);
    try {
      sch.ReverseComputeAt(consumer, at, /*preserve_unit_loops=*/true);
    } catch (const ScheduleError&) {
      break;  // stays a nest of its own: correct, one more parallel loop
    }
    sum = consumer;
  }
}

// ---- transposes ----------------------------------------------------------------

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
    if (read.ranges.size() < 2 || UsesVar(read.ranges.back().min, last_var)) continue;
    bool moves_with_last = false;
    for (const ir::Range& range : read.ranges) moves_with_last = moves_with_last || UsesVar(range.min, last_var);
    if (!moves_with_last) continue;
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
  // Mutated tiles stay within a vector's lanes: a 64 x 64 block, unrolled,
  // took over a minute to build.
  const std::int64_t most_inner = std::max<std::int64_t>(8, lanes);
  auto split = [&](int at, std::int64_t e) {
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

// ---- random compute location, annotations -------------------------------------

void RandomComputeLocation(Schedule& sch, const std::string& name) {
  BlockRV b = sch.GetBlock(name);
  const BlockNode& node = sch.Get(b);
  if (node.writes.size() != 1 || IsParam(sch.func(), node.writes[0].buffer)) return;
  if (ir::ConsumerBlocks(sch.func(), node).empty()) return;
  try {
    LoopRV at = sch.SampleComputeLocation(b);
    sch.ComputeAt(b, at, /*preserve_unit_loops=*/true);
  } catch (const ScheduleError&) {
  }
}

void ParallelVectorizeUnroll(Schedule& sch, const SpaceOptions& o) {
  BlockRV root = sch.GetBlock("root");
  sch.Annotate(root, "meta_schedule.parallel", std::int64_t{o.cores} * o.max_jobs_per_core);
  sch.Annotate(root, "meta_schedule.vectorize", std::int64_t{o.max_vectorize});
  std::vector<double> probs(o.unroll_steps.size(), 1.0 / static_cast<double>(o.unroll_steps.size()));
  // Recorded decision: 64 steps, enough to unroll a register block's rows
  // and reduction steps (the design space's own decisions, see above).
  std::optional<std::int64_t> decision;
  auto at = std::find(o.unroll_steps.begin(), o.unroll_steps.end(), 64);
  if (at != o.unroll_steps.end()) decision = at - o.unroll_steps.begin();
  ExprRV unroll = sch.SampleCategorical(o.unroll_steps, probs, decision);
  sch.Annotate(root, "meta_schedule.unroll_explicit", unroll);
}

// Runs `rule` on a copy of each partial schedule; keeps the copies it
// accepted. When it accepts none, the schedule goes on unchanged.
template <typename Rule>
std::vector<Schedule> Branch(const std::vector<Schedule>& partial, const std::vector<int>& variants, bool keep_original,
                             Rule&& rule) {
  std::vector<Schedule> out;
  for (const Schedule& s : partial) {
    std::size_t before = out.size();
    if (keep_original) out.push_back(s);
    for (int v : variants) {
      Schedule copy = s;
      try {
        rule(copy, v);
        out.push_back(std::move(copy));
      } catch (const ScheduleError&) {
      }
    }
    if (out.size() == before) out.push_back(s);
  }
  return out;
}

}  // namespace

SpaceOptions SpaceOptionsFor(int cores, int vector_bits) {
  SpaceOptions o;
  o.cores = cores;
  o.vector_bits = vector_bits;
  // AVX-512 has 32 vector registers, AVX2 and SSE 16.
  o.accumulator_vectors = vector_bits >= 512 ? 16 : 8;
  return o;
}

std::vector<ir::Trace> DefaultDesignSpace(const ir::PrimFunc& workload, const SpaceOptions& options) {
  // Every stage inlined where it can be; and, when some transcendental
  // stage has several readers, a second start keeping those stages.
  Schedule base(workload, /*seed=*/0), shared(workload, /*seed=*/0);
  bool keeps_shared = false;
  for (const std::string& name : BlockNames(workload)) {
    AutoInline(base, name);
    if (TranscendentalSharedStage(shared.func(), shared.Get(shared.GetBlock(name)))) {
      keeps_shared = true;
    } else {
      AutoInline(shared, name);
    }
  }

  std::vector<Schedule> partial{base};
  if (keeps_shared) partial.push_back(shared);
  std::vector<std::string> names = BlockNames((keeps_shared ? shared : base).func());
  auto has_block = [](const Schedule& s, const std::string& name) {
    std::vector<std::string> blocks = BlockNames(s.func());
    return std::find(blocks.begin(), blocks.end(), name) != blocks.end();
  };
  // Consumers before producers: a producer's compute location is chosen
  // among its consumer's (already tiled) loops.
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    const std::string& name = *it;
    // Inlined (into its consumer's write-back, by an earlier rule), or kept
    // only in the start that keeps shared stages.
    auto holder = std::find_if(partial.begin(), partial.end(), [&](const Schedule& s) { return has_block(s, name); });
    if (holder == partial.end()) continue;
    Schedule probe = *holder;
    BlockRV block = probe.GetBlock(name);
    const BlockNode& node = probe.Get(block);
    if (NeedsMultiLevelTiling(node) || ReducesAlongColumns(node, options)) {
      std::vector<TilingVariant> variants = {{0, -1}, {1, -1}, {2, -1}};
      for (int input : ReusedInputs(node)) {
        variants.push_back({1, input});
        variants.push_back({2, input});
      }
      // With padding, the variants with a write cache again on the padded
      // block (the accumulator's write-back is where the padding is cut
      // off), first: a cold search measures the first spaces' own register
      // blocks first (strategy.h), and unpadded, prime extents have none.
      std::vector<std::int64_t> padding = RegisterBlockPadding(node, options);
      if (!padding.empty()) {
        std::vector<TilingVariant> padded;
        for (const TilingVariant& v : variants) {
          if (v.write_cache_level > 0) padded.push_back({v.write_cache_level, v.read_cache, true});
        }
        variants.insert(variants.begin(), padded.begin(), padded.end());
      }
      // Lanes along the batch, first again: where they apply, they save
      // packing most of what the block reads.
      const auto [lanes_loop, lanes_input] = BatchLanesLoop(node, options);
      if (lanes_loop >= 0) {
        variants.insert(variants.begin(), {{1, lanes_input, false, lanes_loop}, {2, lanes_input, false, lanes_loop}});
      }
      // A matrix-vector product's vector rfactor (-1) goes first too, after
      // them, for the same reason.
      std::vector<int> indices;
      for (std::size_t v = 0; v < variants.size(); ++v) indices.push_back(static_cast<int>(v));
      if (StreamedInput(node, options.accumulator_vectors) >= 0) {
        indices.insert(indices.begin() + (lanes_loop >= 0 ? 2 : 0), -1);
      }
      partial = Branch(partial, indices, false, [&](Schedule& s, int v) {
        if (v < 0) {
          MatrixVectorRFactor(s, name, options);
          return;
        }
        const TilingVariant& variant = variants[static_cast<std::size_t>(v)];
        if (!variant.padded) {
          MultiLevelTiling(s, name, variant, options);
          return;
        }
        std::vector<std::string> before = BlockNames(s.func()), added;
        s.PadEinsum(s.GetBlock(name), padding);
        for (const std::string& block : BlockNames(s.func())) {
          if (std::find(before.begin(), before.end(), block) == before.end()) added.push_back(block);
        }
        MultiLevelTiling(s, name, variant, options);
        InlinePaddedInputs(s, added);
      });
    } else if (NeedsRFactor(node, options) || NeedsVectorRFactor(node)) {
      // Variants 0 and 1 factor the outer or inner part of the reduction
      // into a new leading axis (more parallel jobs); 2 factors a vector.
      std::vector<int> variants;
      if (NeedsRFactor(node, options)) variants = {0, 1};
      if (NeedsVectorRFactor(node)) variants.push_back(2);
      partial = Branch(partial, variants, true, [&](Schedule& s, int v) {
        if (v == 2) {
          // A row reduction streams its input as a matrix-vector product
          // does: its rows' partial sums go in registers the same way.
          Schedule blocked = s;
          try {
            MatrixVectorRFactor(blocked, name, options);
            s = std::move(blocked);
          } catch (const ScheduleError&) {
            VectorRFactor(s, name, options);
          }
        } else {
          RFactor(s, name, v, options.max_vectorize);
        }
      });
    } else if (TransposedLoops(node).first >= 0 && IsParam(probe.func(), node.writes[0].buffer)) {
      // An output that transposes (an intermediate one is computed where
      // its consumer reads it, below, or inlined).
      partial = Branch(partial, {0}, false, [&](Schedule& s, int) {
        if (has_block(s, name)) TransposeInBlocks(s, name, options);
      });
    } else {
      for (Schedule& s : partial) {
        if (has_block(s, name)) RandomComputeLocation(s, name);
      }
    }
  }
  std::vector<ir::Trace> spaces;
  for (Schedule& s : partial) {
    ParallelVectorizeUnroll(s, options);
    spaces.push_back(s.trace());
  }
  return spaces;
}

std::vector<ir::Trace> ScriptDesignSpace(const ir::PrimFunc& workload, const std::string& script,
                                         const std::string& file_name) {
  Schedule sch(workload, /*seed=*/0);
  ir::RunScheduleScript(sch, script, file_name);
  return {sch.trace()};
}

std::string VariantOf(const ir::Trace& design) {
  std::string key;
  for (const ir::Instruction& inst : design.insts) {
    key += inst.kind + inst.attrs.dump();
    for (const ir::InstInput& in : inst.inputs) {
      if (const ir::RVRef* rv = std::get_if<ir::RVRef>(&in)) {
        key += " " + std::to_string(static_cast<int>(rv->kind)) + ":" + std::to_string(rv->id);
      }
    }
    key += ";";
  }
  return key;
}

namespace {

bool IsParallelLimit(const ir::Instruction& inst) {
  return internal::IsAnnotateOf(inst, "meta_schedule.parallel") && std::holds_alternative<std::int64_t>(inst.inputs[1]);
}

}  // namespace

ir::Trace WithDecisionsOf(const ir::Trace& onto, const ir::Trace& design) {
  // design's sampling instructions by kind, in order.
  std::map<std::string, std::vector<std::size_t>> samples;
  for (std::size_t index : design.SamplingInstructions()) samples[design.insts[index].kind].push_back(index);
  const ir::Instruction* parallel = nullptr;
  for (const ir::Instruction& inst : design.insts) {
    if (IsParallelLimit(inst)) parallel = &inst;
  }
  ir::Trace out = WithoutDecisions(onto);
  std::map<std::string, std::size_t> seen;
  for (std::size_t index : onto.SamplingInstructions()) {
    const ir::Instruction& inst = onto.insts[index];
    std::size_t k = seen[inst.kind]++;
    auto it = samples.find(inst.kind);
    if (it == samples.end() || k >= it->second.size()) continue;
    std::size_t from = it->second[k];
    auto decision = design.decisions.find(from);
    if (decision != design.decisions.end() && design.insts[from].attrs == inst.attrs) {
      out.decisions[index] = decision->second;
    }
  }
  if (parallel) {
    for (ir::Instruction& inst : out.insts) {
      if (IsParallelLimit(inst)) inst.inputs[1] = parallel->inputs[1];
    }
  }
  return out;
}

ir::Trace WithoutDecisions(const ir::Trace& design) {
  ir::Trace t = design;
  t.decisions.clear();
  return t;
}

std::optional<Candidate> Realize(const ir::PrimFunc& workload, const ir::Trace& design, std::uint64_t seed) {
  try {
    Schedule sch = ir::ReplayTrace(workload, design, seed, /*remove_postproc=*/true);
    Candidate c;
    c.design = sch.trace();
    ApplyPostprocessors(sch);
    c.trace = sch.trace();
    c.program = sch.func();
    c.program_hash = ir::StructuralHash(c.program);
    return c;
  } catch (const std::exception&) {
    // IrError is the expected refusal; anything else is a bug in a rule or
    // primitive, and still only costs this candidate.
    return std::nullopt;
  }
}

std::vector<std::optional<Candidate>> RealizeBatch(const ir::PrimFunc& workload,
                                                   const std::vector<RealizeRequest>& requests, int threads) {
  std::vector<std::optional<Candidate>> out(requests.size());
  int n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n = std::min<int>(n, static_cast<int>(requests.size()));
  // Each Schedule clones the workload; the threads share only immutable
  // expressions. Work is dealt round robin, so results are in request order.
  auto work = [&](int t) {
    for (std::size_t i = static_cast<std::size_t>(t); i < requests.size(); i += static_cast<std::size_t>(std::max(1, n))) {
      out[i] = Realize(workload, *requests[i].design, requests[i].seed);
    }
  };
  if (n <= 1) {
    work(0);
    return out;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < n; ++t) pool.emplace_back(work, t);
  for (std::thread& th : pool) th.join();
  return out;
}

std::optional<ir::Trace> DesignOf(const ir::PrimFunc& workload, const ir::Trace& stored) {
  try {
    return ir::ReplayTrace(workload, stored, /*seed=*/0, /*remove_postproc=*/true).trace();
  } catch (const ir::IrError&) {
    return std::nullopt;
  }
}

}  // namespace tunedb::search
