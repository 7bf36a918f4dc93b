// Schedule: loop-nest transformations of a program, recorded as a trace.
//
// A Schedule owns a copy of a program and edits it through primitives with
// TVM's names and semantics (tir.Schedule): lookups (get_block, get_loops,
// ...), loop transformations (split, fuse, reorder, parallel, vectorize,
// unroll, annotate), block motion (compute_at, reverse_compute_at,
// compute_inline, reverse_compute_inline), caching (cache_read,
// cache_write), reduction rewrites (decompose_reduction, rfactor) and
// sampling (sample_perfect_tile, sample_categorical,
// sample_compute_location).
//
// Blocks, loops and integers are handled through random variables (BlockRV,
// LoopRV, ExprRV): small handles that stay valid while the object they name
// exists. A loop replaced by split or fuse is gone, and using its handle is
// an error.
//
// Guarantees:
//  - A primitive either succeeds or throws ScheduleError (naming the
//    primitive, the block or loop, and the condition that failed) and leaves
//    the program, the random variables and the trace exactly as they were.
//  - Every successful call appends one instruction to the trace; sampling
//    instructions also record their decision.
//  - Sampling draws from the schedule's own generator, seeded explicitly:
//    the same seed and the same calls make the same choices.
//  - No primitive changes what the program computes (tests check this
//    against the reference interpreter).
//
// Thread-safety: a Schedule is not shared between threads; copies are
// independent.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/schedule/error.h"
#include "ir/schedule/trace.h"
#include "ir/stmt.h"

namespace tunedb::ir {

struct BlockRV {
  int id = -1;
};
struct LoopRV {
  int id = -1;
};
struct ExprRV {
  int id = -1;
};

// A split factor: a literal, a sampled variable, or none (inferred).
using SplitFactor = std::variant<std::monostate, std::int64_t, ExprRV>;
using BlockOrLoop = std::variant<BlockRV, LoopRV>;
using AnnotationArg = std::variant<std::int64_t, std::string, ExprRV>;

class Schedule {
 public:
  Schedule(const PrimFunc& func, std::uint64_t seed);
  Schedule(const Schedule& other);
  Schedule& operator=(const Schedule& other);
  ~Schedule();

  const PrimFunc& func() const;
  const Trace& trace() const;

  // ---- lookups ----
  BlockRV GetBlock(const std::string& name, const std::string& func_name = "main");
  std::vector<LoopRV> GetLoops(BlockRV block);
  std::vector<BlockRV> GetChildBlocks(BlockOrLoop parent);
  std::vector<BlockRV> GetProducers(BlockRV block);
  std::vector<BlockRV> GetConsumers(BlockRV block);

  // ---- loops ----
  // Splits a loop into len(factors) nested loops. At most one factor may be
  // none (inferred as ceil(extent / product of the others)). When the
  // product exceeds the extent, blocks under the loop get a predicate, and
  // disable_predication (which would leave it out) is refused. Factors that
  // multiply past what the loop variable's type counts are refused too.
  std::vector<LoopRV> Split(LoopRV loop, const std::vector<SplitFactor>& factors,
                            bool preserve_unit_iters = true, bool disable_predication = false);
  // Fuses directly nested loops (each the only child of the previous).
  LoopRV Fuse(const std::vector<LoopRV>& loops, bool preserve_unit_iters = true);
  // Reorders loops of one chain (nested, each the only child of the previous).
  void Reorder(const std::vector<LoopRV>& loops);
  void Parallel(LoopRV loop);
  void Vectorize(LoopRV loop);
  void Unroll(LoopRV loop);
  void Annotate(BlockOrLoop target, const std::string& key, const AnnotationArg& value);
  void Unannotate(BlockOrLoop target, const std::string& key);

  // ---- caches ----
  BlockRV CacheRead(BlockRV block, int read_buffer_index, const std::string& storage_scope);
  BlockRV CacheWrite(BlockRV block, int write_buffer_index, const std::string& storage_scope);
  // Pads an einsum-like block's iteration domain (TVM's pad_einsum): each
  // iteration variable's extent grows to a multiple of padding[i], so that
  // tiles divide it. Every input read along a padded variable is copied
  // first into a zero-padded buffer (block <input>_pad), the output goes to
  // a padded buffer whose real part is copied back after (block
  // <output>_unpad). A padded variable must index buffer dimensions as
  // itself or an input's window (c * v + ..., a convolution's w + kw, whose
  // padded copy grows by c per added value), and be bound to a whole loop
  // that holds only this block; a padded reduction variable needs an update
  // out += a * b * ... whose factors all read with it, so that every padded
  // term adds 0.
  void PadEinsum(BlockRV block, const std::vector<std::int64_t>& padding);

  // ---- block motion ----
  void ComputeAt(BlockRV block, LoopRV loop, bool preserve_unit_loops = false, int index = -1);
  void ReverseComputeAt(BlockRV block, LoopRV loop, bool preserve_unit_loops = false, int index = -1);
  void ComputeInline(BlockRV block);
  void ReverseComputeInline(BlockRV block);

  // ---- reductions ----
  BlockRV DecomposeReduction(BlockRV block, LoopRV loop);
  BlockRV RFactor(LoopRV loop, int factor_axis);

  // ---- sampling ----
  std::vector<ExprRV> SamplePerfectTile(LoopRV loop, int n, int max_innermost_factor,
                                        std::optional<std::vector<std::int64_t>> decision = std::nullopt);
  ExprRV SampleCategorical(const std::vector<std::int64_t>& candidates, const std::vector<double>& probs,
                           std::optional<std::int64_t> decision = std::nullopt);
  // A loop at which compute_at(block, loop) is legal, or the root (decision
  // -1: leave the block where it is) or inline (decision -2, when the block
  // can be inlined and at most one block reads it; a replayed -2 needs only
  // the first). The returned LoopRV may be one of these two marks, which
  // compute_at understands.
  LoopRV SampleComputeLocation(BlockRV block, std::optional<std::int64_t> decision = std::nullopt);
  // The decisions SampleComputeLocation may take for `block` now, in its
  // order: -2 when inlining is offered (above), -1, then one per legal loop.
  // Records nothing and changes nothing (the mutator of compute locations
  // asks this rather than replaying once per location).
  std::vector<std::int64_t> ComputeLocationChoices(BlockRV block);

  // Marks the end of the design space and the start of postprocessing.
  void EnterPostproc();

  // ---- values of random variables ----
  std::int64_t Get(ExprRV rv) const;
  const ForNode& Get(LoopRV rv) const;
  const BlockNode& Get(BlockRV rv) const;
  bool IsRootMark(LoopRV rv) const;
  bool IsInlineMark(LoopRV rv) const;

  struct State;  // the program, random-variable tables and trace

 private:
  // Replays without undoing a failed primitive (State::undo_failed_primitives).
  friend Schedule ReplayTrace(const PrimFunc& func, const Trace& trace, std::uint64_t seed, bool remove_postproc);

  std::unique_ptr<State> state_;
};

// The leaf blocks of `func` that read a buffer `block` writes, in program
// order: what Schedule::GetConsumers returns, without recording anything.
// For rules that only look: GetConsumers is recorded with as many results
// as it found, and when that number depends on an earlier sample (a stage
// inlined or not), the trace refuses to replay with other samples.
std::vector<BlockNode*> ConsumerBlocks(const PrimFunc& func, const BlockNode& block);

// Replays a trace on a fresh schedule of `func`. Sampling instructions use
// the trace's decisions (repaired as TVM does when a tile decision no longer
// fits the loop); instructions after EnterPostproc are skipped when
// remove_postproc. Throws ScheduleError naming the instruction that failed.
Schedule ReplayTrace(const PrimFunc& func, const Trace& trace, std::uint64_t seed,
                     bool remove_postproc = false);

}  // namespace tunedb::ir
