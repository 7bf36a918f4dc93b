// Multi-level tiling "SSRSRS" with write and read caches (see rules.h).
#include "search/rules/rules.h"

#include <algorithm>

namespace tunedb::search::rules {

namespace {

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
//
// `columns_first`, for a copy that is a parallel loop of its own: the
// outer loop walks the source's columns, which are the copy's rows, so the
// threads split the copy by whole lines. Walking the source's rows first,
// they split every line of it instead: dense 16 x 1024 x 1024's X^T ([k][i],
// 16 floats a line) had each line written half by each core, then read by
// both; 64-trial sessions kept kernels of 207.6 GFLOP/s on average, against
// 272.9 copied along k (bench/RESULTS.md, session 69).
void CopyInBlocks(Schedule& sch, BlockRV copy, bool columns_first) {
  constexpr std::int64_t kBlock = 8;
  std::vector<LoopRV> loops = sch.GetLoops(copy);
  if (loops.size() < 2) return;
  LoopRV rows = loops[loops.size() - 2], columns = loops.back();
  if (sch.Get(rows).extent < kBlock || sch.Get(columns).extent < kBlock) return;
  std::vector<LoopRV> r = sch.Split(rows, {std::monostate{}, kBlock});
  std::vector<LoopRV> c = sch.Split(columns, {std::monostate{}, kBlock});
  if (columns_first) {
    sch.Reorder({c[0], r[0], r[1], c[1]});
  } else {
    sch.Reorder({r[0], c[0], r[1], c[1]});
  }
  sch.Unroll(r[1]);
  sch.Unroll(c[1]);
}

// The index among b's reads of the nth read of `input`, or of pad_einsum's
// padded copy of it; a ScheduleError when b reads neither.
std::size_t PackedRead(const BlockNode& b, const std::string& input, int nth) {
  for (std::size_t i = 0; i < b.reads.size(); ++i) {
    const std::string& name = b.reads[i].buffer->name;
    if ((name == input || name == input + "_pad") && nth-- == 0) return i;
  }
  throw ScheduleError("multi-level tiling: block " + b.name + " does not read " + input);
}

}  // namespace

bool IsVectorOperand(const BlockNode& b, int read) {
  const auto [extents, kinds] = IterShapeOf(b);
  const int vectorized = VectorLoop(extents, kinds);
  if (vectorized < 0) return false;
  const ir::ExprNode* vector_var = b.iter_vars[static_cast<std::size_t>(vectorized)].var.get();
  return ReadUses(b.reads.at(static_cast<std::size_t>(read)), vector_var);
}

// Blocks worth tiling: a reduction where some input is reused across a
// spatial loop (matmul's A is reused across j). Reductions that read every
// input once per iteration (a row sum) gain nothing from tiling.
bool NeedsMultiLevelTiling(const BlockNode& b) {
  if (!HasReduction(b)) return false;
  for (const ir::BufferRegion& read : b.reads) {
    for (const ir::IterVar& iv : b.iter_vars) {
      if (iv.kind != IterKind::kSpatial || iv.extent == 1) continue;
      if (!ReadUses(read, iv.var.get())) return true;
    }
  }
  return false;
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
        reduced = reduced || ReadUses(read, iv.var.get());
      }
    }
    if (last_spatial && !last_reduce && reduced) return true;
  }
  return false;
}

// Inputs reused across some spatial loop (matmul's A across j, B across i):
// the candidates for a read cache.
std::vector<int> ReusedInputs(const BlockNode& b) {
  std::vector<int> out;
  for (std::size_t r = 0; r < b.reads.size(); ++r) {
    bool reused = false;
    for (const ir::IterVar& iv : b.iter_vars) {
      if (iv.kind != IterKind::kSpatial || iv.extent == 1) continue;
      reused = reused || !ReadUses(b.reads[r], iv.var.get());
    }
    bool is_output = !b.writes.empty() && b.reads[r].buffer.get() == b.writes[0].buffer.get();
    if (reused && !is_output) out.push_back(static_cast<int>(r));
  }
  return out;
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
  const bool packs = !variant.read_cache.empty();
  int packed_read = -1;  // the packed input's index among the block's reads
  if (packs) {
    const BlockNode& node = sch.Get(b);
    packed_read = static_cast<int>(PackedRead(node, variant.read_cache, variant.read_cache_nth));
    const ir::BufferRegion& read = node.reads[static_cast<std::size_t>(packed_read)];
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
  // Whether an operand read as vectors stays in place (is not the
  // variant's packed one).
  bool operand_in_place = false;
  for (int input : ReusedInputs(sch.Get(b))) {
    operand_in_place = operand_in_place || (input != packed_read && IsVectorOperand(sch.Get(b), input));
  }
  std::vector<std::vector<std::int64_t>> blocked = RegisterBlockedTiles(
      extents, *kinds, OutputElementBytes(sch.Get(b)), options, variant.vector_loop, block_loops, sliding,
      second_rows, operand_in_place);
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
  if (packs && outer_moving == 0) {
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
  if (packs) {
    int read = static_cast<int>(PackedRead(sch.Get(b), variant.read_cache, variant.read_cache_nth));
    BlockRV packed = sch.CacheRead(b, read, "global");
    // With the lanes along the batch, the packed input is the small one: it
    // is copied whole, once, in a parallel loop of its own before the
    // product's. (Under the batch's outer tile, often one iteration, that
    // loop held both nests, and the postprocessor made neither parallel.)
    const bool copied_whole = variant.vector_loop >= 0;
    if (!copied_whole) sch.ComputeAt(packed, levels[0][outer_moving - 1], /*preserve_unit_loops=*/true);
    if (packing_transposes) CopyInBlocks(sch, packed, /*columns_first=*/copied_whole);
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
  if (transposed) CopyInBlocks(sch, cache, /*columns_first=*/false);
}

}  // namespace tunedb::search::rules
