// The register block: the decisions a tiled block's design space records
// (see rules.h), and the padding and vectorized loop that make one fit.
#include "search/rules/rules.h"

#include <algorithm>
#include <set>

namespace tunedb::search::rules {

namespace {

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

// The most rows a register block of `vectors` vectors of columns keeps in
// registers: its accumulators, the vectors it loads per step and one
// broadcast must fit the target's vector registers, and it keeps at most
// three quarters of them, and 16, as accumulators. AVX-512 (32 registers)
// gets 16 accumulators (4 x 4, 8 x 2); AVX2 (16) gets 12 (4 rows x 3
// vectors, 6 x 2) and 8 with 4 vectors. On AVX2 a register block that
// keeps 8 covers the multiply-adds' latency on two ports with nothing to
// spare: `bench/cpu/microkernel.c` on one core of this Zen 5, compiled for
// znver3, ran 2 x 4 and 4 x 2 at 89.8 GFLOP/s, 4 x 3 and 6 x 2 at 115.3
// and 114.8 (the peak is 116.7), and 3 x 4 and 4 x 4, whose operands no
// longer fit, at 59.4 and 72.5 (bench/RESULTS.md, session 71).
std::int64_t MostRows(const SpaceOptions& o, std::int64_t vectors) {
  const std::int64_t accumulators = std::min<std::int64_t>(16, o.vector_registers * 3 / 4);
  const std::int64_t fit = (o.vector_registers - vectors - 1) / vectors;
  return std::max<std::int64_t>(1, std::min(accumulators / vectors, fit));
}

// The multiple of rows that RegisterBlockPadding pads the rows' extent to:
// 4, or the rows of a whole register block where the blocks the extents
// allow keep at most two thirds as many accumulators, and there are at
// least 8 blocks of rows (so the padding adds under an eighth). On AVX2 no
// power of two divides into 6 x 2 or 4 x 3 blocks of 12 accumulators:
// matmul 1024 keeps 8 (2 x 4), and its rows padded to 1026 give 6 x 2:
// for znver3 on this Zen 5, 64-trial sessions kept 202.5 GFLOP/s against
// 186.3, level with OpenBLAS's Haswell kernel (bench/RESULTS.md, session
// 71).
std::int64_t RowMultiple(std::int64_t columns, std::int64_t rows, std::int64_t lanes, const SpaceOptions& o) {
  constexpr std::int64_t kRows = 4;
  // AVX-512's blocks of 16 divide powers of two already, and its spaces
  // were tuned without this padding: dense 100 x 784 -> 32, rows padded to
  // 8 x 2 blocks, kept 202.8 GFLOP/s in 64-trial sessions against 329.3.
  if (o.vector_registers >= 32) return kRows;
  std::int64_t kept = 0, whole = 0, whole_rows = kRows;
  for (std::int64_t vectors = 4; vectors >= 1; --vectors) {
    if (vectors * lanes > o.max_vectorize || columns % (vectors * lanes) != 0) continue;
    const std::int64_t most = MostRows(o, vectors);
    kept = std::max(kept, vectors * LargestDivisorAtMost(rows, most));
    if (vectors * most > whole) {
      whole = vectors * most;
      whole_rows = most;
    }
  }
  return 3 * kept <= 2 * whole && rows >= 8 * whole_rows ? whole_rows : kRows;
}

// Whether some read indexes a dimension with an expression of a variable
// that `padding` pads: a window, as a convolution reads X[h + kh, w + kw].
bool PadsAWindow(const BlockNode& b, const std::vector<std::int64_t>& padding) {
  std::set<const ir::ExprNode*> padded;
  for (std::size_t i = 0; i < padding.size(); ++i) {
    if (padding[i] > 1) padded.insert(b.iter_vars[i].var.get());
  }
  bool window = false;
  ir::VisitStmtExprs(b.body, [&](const ir::Expr& e) {
    ir::VisitExpr(e, [&](const ir::Expr& load) {
      if (load->kind != ir::ExprKind::kLoad) return;
      for (const ir::Expr& index : load->operands) {
        if (padded.count(index.get())) continue;
        ir::VisitExpr(index, [&](const ir::Expr& x) { window = window || padded.count(x.get()) > 0; });
      }
    });
  });
  return window;
}

}  // namespace

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
BlockLoops RegisterBlockLoops(const BlockNode& node, const std::vector<const ir::ExprNode*>& loop_vars,
                              const std::vector<std::int64_t>& extents, const std::vector<IterKind>& kinds,
                              int vector_loop) {
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
// registers (unless the operand read as vectors stays in place with a
// large panel, below); the other spatial loops go outermost up to the
// parallel limit; the last reduction loop is unrolled by up to 4, or a reduction
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
                                                            int sliding, int second_rows, bool operand_in_place) {
  std::int64_t lanes = VectorLanes(o, element_bytes);
  // Every innermost factor within the space's limit, or the sample refuses it.
  std::int64_t limit = o.max_vectorize;
  const auto [vectorized, rows, last_reduce] = block_loops;
  std::vector<std::vector<std::int64_t>> tiles;
  // Each row is a broadcast per step. With the lanes along a batch (one
  // vector at batch 16), the rows are the weight's, read in place. At a
  // row stride that is a multiple of 4 KiB (1024 or 4096 inputs), every
  // row's line falls in the same set of the 12-way L1, and 16 rows evict
  // each other: dense 16 x 1024 x 1024 by hand, 130-164 GFLOP/s with 16
  // rows, 219-225 with 8. At 1000 inputs 16 rows gain only 2-4% (228-237
  // -> 231-246), so 8 for all (bench/RESULTS.md, session 68).
  auto most_rows_for = [&](std::int64_t vectors) {
    std::int64_t most = std::min<std::int64_t>(limit, MostRows(o, vectors));
    return vector_loop >= 0 ? std::min<std::int64_t>(most, 8) : most;
  };
  auto extent_of = [&](int loop) { return loop >= 0 ? extents[static_cast<std::size_t>(loop)] : 1; };
  // The rows of both loops for `vectors` vectors of columns. (It reads
  // block_loops.rows: clang before 16 refuses a structured binding here.)
  auto row_tiles = [&](std::int64_t vectors) {
    std::int64_t most = most_rows_for(vectors);
    std::int64_t first = LargestDivisorAtMost(extent_of(block_loops.rows), most);
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
  // The rows beyond the block go outside the reduction (level 1), so the
  // accumulators stay in registers across all of it, and the operand's
  // panel (the reduction by the block's columns) is read once per row
  // group. Read in place with a panel over half a 1 MiB L2, each of those
  // reads streams it from memory again, and the rows go inside the outer
  // reduction loop (level 2) instead: the accumulators are reloaded per
  // step of it, the panel read once. Skinny matmul 16 x 4096 x 1024, B in
  // place, by hand: 148-155 -> 244-264 GFLOP/s; 256 x 4096 x 1024:
  // 132-147 -> 204-219. Packed, the panel streams well and level 1 wins
  // (the same 256 x 4096 x 1024: 271-281 against 186-197), as it does at
  // matmul 1024 (bench/RESULTS.md, session 68).
  std::int64_t reduction = 1;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    if (kinds[i] != IterKind::kSpatial) reduction *= extents[i];
  }
  constexpr std::int64_t kPanelBudgetBytes = 512 * 1024;
  const bool rows_inside_reduction =
      operand_in_place && vector_loop < 0 && reduction * columns * element_bytes > kPanelBudgetBytes;
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
      if (rows_inside_reduction) {
        tiles.push_back({e / row_tile / middle, 1, middle, row_tile});
      } else {
        tiles.push_back({e / row_tile / middle, middle, 1, row_tile});
      }
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
// Also a loop in whole vectors where the default lanes leave part of one
// that `padding` (the RegisterBlockPadding pad_einsum accepts, or none)
// does not fill, and the input packed for the other lanes feeds at least a
// vector of multiply-adds per element. A 1 x 1 convolution in NCHW,
// Y[co, h, w] = sum_ci W[co, ci] * X[ci, h, w] at 14 x 14, is vectorized
// along w by default: one masked vector of 14 lanes, with h no second
// vector (its rows are 14 apart), so every multiply-add of its register
// block needs a broadcast. Along co, with W packed (each element used 196
// times), it gets whole vectors and rows along w. 256 -> 512 channels,
// 64-trial sessions, the kept kernels re-timed side by side: 173.2 ->
// 321.6 GFLOP/s (bench/RESULTS.md, session 72). Dense with 10 outputs,
// whose packed X would serve 10 multiply-adds an element, found no better
// (149.6 and 145.4).
std::pair<int, int> BatchLanesLoop(const BlockNode& b, const SpaceOptions& o,
                                   const std::vector<std::int64_t>& padding) {
  // Named references, not a structured binding: the lambdas below capture
  // them, which clang before 16 (the fuzzing build's) refuses.
  const IterShape shape = IterShapeOf(b);
  const std::vector<std::int64_t>& extents = shape.extents;
  const std::vector<IterKind>& kinds = shape.kinds;
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
      if (!ReadUses(read, var) || UsesVar(read.ranges.back().min, var)) continue;
      if (input < 0 || read.buffer->NumElements() > b.reads[static_cast<std::size_t>(input)].buffer->NumElements()) {
        input = static_cast<int>(r);
      }
      elements += read.buffer->NumElements();
    }
    return std::make_pair(elements, input);
  };
  const std::int64_t by_default = transposed(last).first;
  const std::size_t at = static_cast<std::size_t>(last);
  const bool partial_default = extents[at] % lanes != 0 && (padding.empty() || padding[at] == 1);
  // How many times the block uses each element of input `read`: the extents
  // of the spatial loops that do not move it.
  auto reuse = [&](int read) {
    const ir::BufferRegion& region = b.reads[static_cast<std::size_t>(read)];
    std::int64_t times = 1;
    for (std::size_t i = 0; i < b.iter_vars.size(); ++i) {
      if (kinds[i] == IterKind::kSpatial && !ReadUses(region, b.iter_vars[i].var.get())) times *= extents[i];
    }
    return times;
  };
  for (int v = last; v-- > 0;) {
    std::int64_t e = extents[static_cast<std::size_t>(v)];
    if (kinds[static_cast<std::size_t>(v)] != IterKind::kSpatial || e < lanes || e % (lanes / 2) != 0) {
      continue;
    }
    auto [elements, input] = transposed(v);
    if (input < 0) continue;
    if (2 * elements <= by_default || (partial_default && e % lanes == 0 && reuse(input) >= lanes)) {
      return {v, input};
    }
  }
  return {-1, -1};
}

// The padding (pad_einsum) that gives a tiled block's register block whole
// vectors and rows: the vectorized loop's extent up to a multiple of the
// lanes (of two vectors' lanes, see below), the rows' up to a multiple of
// 4 or of a whole block's rows (RowMultiple), and, with them, the last
// reduction's up to a multiple of 4 (its unroll, unless a sliding
// reduction is unrolled instead). Prime extents otherwise leave a register
// block of one row (M = 127) or of 43 columns (N = 129).
// Empty when the extents need none: padding only the reduction would copy
// both inputs for an unroll.
std::vector<std::int64_t> RegisterBlockPadding(const BlockNode& b, const SpaceOptions& o) {
  // Named members, not a structured binding: the lambda below reads the
  // extents, which clang before 16 refuses (scripts/fuzz.sh builds with 14).
  const IterShape shape = IterShapeOf(b);
  const std::vector<std::int64_t>& extents = shape.extents;
  std::vector<const ir::ExprNode*> loop_vars;
  for (const ir::Expr& binding : b.bindings) loop_vars.push_back(binding.get());
  const auto [vectorized, rows, last_reduce] = RegisterBlockLoops(b, loop_vars, extents, shape.kinds);
  if (vectorized < 0) return {};
  const std::int64_t lanes = VectorLanes(o, OutputElementBytes(b));
  constexpr std::int64_t kUnroll = 4;
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
  if (rows >= 0) {
    const std::int64_t multiple = padding[static_cast<std::size_t>(vectorized)];
    const std::int64_t columns = (e + multiple - 1) / multiple * multiple;
    spatial = pad(rows, RowMultiple(columns, extents[static_cast<std::size_t>(rows)], lanes, o)) || spatial;
  }
  if (!spatial) return {};
  // pad_einsum widens a convolution's input window for padded output
  // columns, but that padding did not pay: 64-trial sessions, seeds 0 and
  // 1, the kept kernels re-timed side by side on a Zen 4, without and with
  // it: conv2d 14 x 14 x 256 for AVX2 (rows 14 -> 16) 198.2 and 187.8
  // GFLOP/s, 56 x 56 x 64 (56 -> 60, 6 x 2 blocks of 12 accumulators for 8)
  // 194.8 and 193.1, 7 x 7 x 512 for AVX-512 205.7 and 201.1, the depthwise
  // NHWC convolution for AVX2 178.0 and 140.1 (bench/RESULTS.md, session
  // 73). On that machine a hand-written AVX2 block of 8 accumulators runs
  // at 94% of one of 12, less than the padding's added work.
  if (PadsAWindow(b, padding)) return {};
  // A sliding reduction is unrolled instead of the last (RegisterBlockedTiles).
  if (last_reduce >= 0 && SlidingReduction(b, loop_vars, extents, shape.kinds, rows) < 0) pad(last_reduce, kUnroll);
  return padding;
}

}  // namespace tunedb::search::rules
