// Rfactor of reductions too small to feed the cores, or streamed along a row (see rules.h).
#include "search/rules/rules.h"

#include <algorithm>

namespace tunedb::search::rules {

namespace {

// The block's reduction loops as one loop (fused when there are several).
LoopRV FusedReduction(Schedule& sch, const std::string& name) {
  BlockRV b = sch.GetBlock(name);
  std::vector<LoopRV> loops = sch.GetLoops(b);
  auto kinds = LoopKinds(sch, b, loops);
  if (!kinds) throw ScheduleError("rfactor: block " + name + " has non-trivial bindings");
  std::vector<LoopRV> reduce;
  for (std::size_t i = 0; i < loops.size(); ++i) {
    if ((*kinds)[i] == IterKind::kReduce) reduce.push_back(loops[i]);
  }
  return reduce.size() == 1 ? reduce[0] : sch.Fuse(reduce);
}

// Whether the innermost loop reduces along an input's last dimension, over
// `min_steps` steps or more in all.
bool ReducesAlongARow(const BlockNode& b, std::int64_t min_steps) {
  if (!HasReduction(b) || b.iter_vars.empty() || b.iter_vars.back().kind != IterKind::kReduce) return false;
  if (ExtentProduct(b, IterKind::kReduce) < min_steps) return false;
  const ir::ExprNode* inner = b.iter_vars.back().var.get();
  for (const ir::BufferRegion& read : b.reads) {
    if (!read.ranges.empty() && UsesVar(read.ranges.back().min, inner)) return true;
  }
  return false;
}

// Computes the sum of block `name`'s partial sums under `at`, and up to two
// elementwise consumers after it.
void SumUnder(Schedule& sch, const std::string& name, LoopRV at) {
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

// Computes the sums of `rf`'s lanes, block `name`, under the row loop of
// rf that they belong to: the loops above its first reduction loop.
void SumsUnderTheirRows(Schedule& sch, const std::string& name, BlockRV rf) {
  std::vector<LoopRV> loops = sch.GetLoops(rf);
  auto kinds = LoopKinds(sch, rf, loops);
  if (!kinds) return;
  auto first_reduction = std::find(kinds->begin(), kinds->end(), IterKind::kReduce);
  if (first_reduction == kinds->begin() || first_reduction == kinds->end()) return;
  SumUnder(sch, name, loops[static_cast<std::size_t>(first_reduction - kinds->begin()) - 1]);
}

// Whether some d in [low, high] divides n.
bool HasADivisorIn(std::int64_t n, std::int64_t low, std::int64_t high) {
  for (std::int64_t d = low; d <= high; ++d) {
    if (n % d == 0) return true;
  }
  return false;
}

}  // namespace

// A reduction whose spatial part is too small to keep the cores busy is
// split into partial reductions over a factored axis (TVM's AddRFactor).
bool NeedsRFactor(const BlockNode& b, const SpaceOptions& o) {
  return HasReduction(b) && ExtentProduct(b, IterKind::kSpatial) < std::int64_t{o.cores} * o.max_jobs_per_core &&
         ExtentProduct(b, IterKind::kReduce) >= 64;
}

void RFactor(Schedule& sch, const std::string& name, int factor_part, int max_innermost) {
  LoopRV fused = FusedReduction(sch, name);
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
//
// Short rows pay too: a global average pool over 7 x 7 (512 channels) is 49
// dependent scalar adds per channel, against 7 adds of a 7-lane vector after
// the rfactor; by hand, 5.6 -> 2.2 us (bench/RESULTS.md, session 70). A
// pooling window that slides along the output's rows keeps the window rule
// at these lengths: its lanes are the outputs (window.cc).
bool NeedsVectorRFactor(const BlockNode& b) {
  return ReducesAlongARow(b, 64) || (ReducesAlongARow(b, 16) && WindowLanesLoop(b) < 0);
}

// The space's own decision splits off one vector of the output's type.
// A row that no width from one vector up to the widest vectorized loop
// divides (1009, a prime) is split into whole vectors and a last step
// masked past the row's end, where perfect tiles would leave it one lane
// or none vectorized: 64 rows of 1009 took 11.6 us in a 32-trial session,
// 64 rows of 1008 1.8 us (bench/RESULTS.md, session 86). Returns the block
// of partial sums.
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
  // A row shorter than a vector goes whole into the lanes (one masked
  // vector): the other split would leave one lane and nothing vectorized.
  if (extent < lanes && extent <= o.max_vectorize) decision = std::vector<std::int64_t>{1, extent};
  if (!decision && extent > lanes && lanes <= o.max_vectorize && !HasADivisorIn(extent, lanes, o.max_vectorize)) {
    std::vector<LoopRV> parts = sch.Split(loops.back(), {std::monostate{}, lanes});
    return sch.RFactor(parts[1], spatial);
  }
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
// Short dot products (under 64 steps) keep tiling alone: the variant goes
// first among tiling's, and tiled blocks' spaces were measured that way.
int StreamedInput(const BlockNode& b, std::int64_t max_reuse) {
  if (!ReducesAlongARow(b, 64)) return -1;
  const ir::ExprNode* inner = b.iter_vars.back().var.get();
  for (std::size_t r = 0; r < b.reads.size(); ++r) {
    const ir::BufferRegion& read = b.reads[r];
    if (read.ranges.empty() || !UsesVar(read.ranges.back().min, inner)) continue;
    std::int64_t reuse = 1;
    for (const ir::IterVar& iv : b.iter_vars) {
      if (iv.kind == IterKind::kSpatial && !ReadUses(read, iv.var.get())) reuse *= iv.extent;
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
  // The loops before the vector's reduction loop: the rows of the output
  // that move the input, those that reuse it, and any further reduction
  // loops (a sum over h and w: rf[n, c, w1] += X[n, c, h, w0 * 16 + w1]).
  // Those stay inside the accumulators' loop: under one of them, the sum
  // and its consumers would run again at each of its steps.
  std::vector<LoopRV> moving, reusing, reducing;
  std::int64_t reuse = 1;
  for (std::size_t l = 0; l + 2 < loops.size(); ++l) {
    const ir::ForNode& f = sch.Get(loops[l]);
    if ((*kinds)[l] == IterKind::kReduce) {
      reducing.push_back(loops[l]);
    } else if (f.extent > 1 && !ReadMovesWith(node, *w, f.loop_var.get())) {
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
  order.insert(order.end(), reducing.begin(), reducing.end());
  order.push_back(loops[loops.size() - 2]);
  order.insert(order.end(), reusing.begin(), reusing.end());
  order.push_back(parts[1]);
  order.push_back(loops.back());
  sch.Reorder(order);
  LoopRV at = parts[0];
  BlockRV accumulators = sch.CacheWrite(rf, 0, "local");
  sch.ReverseComputeAt(accumulators, at, /*preserve_unit_loops=*/true);
  SumUnder(sch, name, at);
}

// Each nest of its own is a parallel loop of its own, and with rows this
// short the threads' start and join cost as much as the sums: a global
// average pool's partial sums, their sum and the division by 49 as three
// nests ran 3.5 us, as one 2.2 (512 x 7 x 7, bench/RESULTS.md, session 70).
void RowVectorRFactor(Schedule& sch, const std::string& name, const SpaceOptions& o) {
  SumsUnderTheirRows(sch, name, VectorRFactor(sch, name, o));
}

// Where the outputs come in a multiple of the cores (4 row sums on 2
// cores), their rows are the jobs, and ParallelRowVectorRFactor is left
// out: there it tied with the space without it (bench/RESULTS.md,
// session 85).
bool NeedsParallelVectorRFactor(const BlockNode& b, const SpaceOptions& o) {
  return o.cores > 1 && NeedsRFactor(b, o) && NeedsVectorRFactor(b) &&
         ExtentProduct(b, IterKind::kSpatial) % o.cores != 0;
}

// A reduction to a handful of outputs along a row (a sum of squares over a
// whole tensor, a norm) gets from TVM's two rfactor variants either jobs
// (the outer part factored: each job one chain of scalar adds) or lanes
// (the inner part: the vector's lanes, on one core). Both at once: the
// reduction is split into jobs and steps, the jobs factored into a leading
// axis, and each job's steps given the vector rfactor, rf[p, l] += X[(p *
// steps + r) * lanes + l]: p parallel, l vectorized, and each job's lane
// sum under p. The number of jobs is sampled among the cores' multiples
// that divide the reduction; the space records one per core, which ran
// best by hand (the sum of squares of 2^20 floats on 2 cores: 26.7 us
// with 2 jobs, 28.9 with 16, 50.0 for the best lanes-only schedule of a
// 32-trial session; bench/RESULTS.md, session 85).
//
// A reduction that none of those numbers of jobs divides into whole
// vectors (a dot product of a prime length, a softmax over 50257 logits)
// is split into jobs, steps and lanes all at once, the last steps past its
// end masked: the mask costs only the steps at the edge, where code
// generation runs the others as a loop of their own (measure/versioning.h).
// The dot product of 1000003 floats ran 53 us so by hand; without jobs or
// lanes, its 32-trial session's best took 0.75 ms (bench/RESULTS.md,
// session 86).
void ParallelRowVectorRFactor(Schedule& sch, const std::string& name, const SpaceOptions& o) {
  LoopRV fused = FusedReduction(sch, name);
  const std::int64_t extent = sch.Get(fused).extent;
  const std::int64_t lanes = VectorLanes(o, OutputElementBytes(sch.Get(sch.GetBlock(name))));
  std::vector<std::int64_t> dividing, any;
  bool whole_vectors = false;
  for (std::int64_t j = std::max(2, o.cores); j <= std::int64_t{o.cores} * o.max_jobs_per_core; j *= 2) {
    // Each job keeps at least a few whole vectors of steps.
    if (extent / j < 4 * lanes) continue;
    any.push_back(j);
    if (extent % j != 0) continue;
    dividing.push_back(j);
    whole_vectors = whole_vectors || extent % (j * lanes) == 0;
  }
  const std::vector<std::int64_t>& jobs = whole_vectors ? dividing : any;
  if (jobs.empty()) throw ScheduleError("parallel rfactor: the reduction of " + name + " is too short for jobs");
  ExprRV picked = sch.SampleCategorical(jobs, std::vector<double>(jobs.size(), 1.0 / static_cast<double>(jobs.size())),
                                        std::int64_t{0});
  if (whole_vectors) {
    std::vector<LoopRV> parts = sch.Split(fused, {picked, std::monostate{}});
    BlockRV partial = sch.RFactor(parts[0], 0);
    RowVectorRFactor(sch, sch.Get(partial).name, o);
    return;
  }
  std::vector<LoopRV> parts = sch.Split(fused, {picked, std::monostate{}, lanes});
  BlockRV partial = sch.RFactor(parts[0], 0);
  const std::string partial_name = sch.Get(partial).name;
  std::vector<LoopRV> loops = sch.GetLoops(partial);
  auto kinds = LoopKinds(sch, partial, loops);
  if (!kinds) throw ScheduleError("parallel rfactor: block " + partial_name + " has non-trivial bindings");
  const int spatial = static_cast<int>(std::count(kinds->begin(), kinds->end(), IterKind::kSpatial));
  SumsUnderTheirRows(sch, partial_name, sch.RFactor(loops.back(), spatial));
}

}  // namespace tunedb::search::rules
