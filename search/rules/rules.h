// The schedule rules of the default design space (search/space.h says what
// the space is; DefaultDesignSpace in space.cc applies these to every
// block). Private to search/. Each rule works through the public Schedule
// API only, so everything it does is recorded in the trace and replays
// exactly; a rule that cannot apply throws ScheduleError, and the variant
// it would have made is simply not part of the space. The .cc file of each
// rule says why it does what it does, with the measurements behind it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "search/rules/queries.h"

namespace tunedb::search::rules {

// ---- auto_inline.cc ----------------------------------------------------------

// Inlines an injective stage that writes an intermediate buffer into its
// consumers (TVM's AutoInline); leaves it where it is when it cannot.
void AutoInline(Schedule& sch, const std::string& name);

// Whether the block computes exp, log or tanh into an intermediate buffer
// that several stages read (softmax's exp): such a stage is worth keeping.
bool TranscendentalSharedStage(const ir::PrimFunc& func, const BlockNode& node);

// Whether the block pads an input into an intermediate buffer (a select
// guarding the read, TOPI's PaddedInput): a stage the space also keeps.
bool PaddingStage(const ir::PrimFunc& func, const BlockNode& node);

// ---- multi_level_tiling.cc ---------------------------------------------------

// Whether the block is a reduction reusing some input across a spatial
// loop (matmul), which multi-level tiling serves.
bool NeedsMultiLevelTiling(const BlockNode& b);

// Whether the block reduces down the columns of an input with enough
// spatial work to be tiled (a column sum).
bool ReducesAlongColumns(const BlockNode& b, const SpaceOptions& o);

// Indices (among the block's reads) of the inputs reused across some
// spatial loop: the candidates for a packed read cache.
std::vector<int> ReusedInputs(const BlockNode& b);

// Whether the loop the postprocessor vectorizes moves input `read` (an
// index among the block's reads): matmul's B, dense's W, the operand read
// as vectors, where the other inputs are broadcast.
bool IsVectorOperand(const BlockNode& b, int read);

// One variant of the tiling rule.
struct TilingVariant {
  int write_cache_level = 0;  // 0: none; 1 or 2: a local accumulator at that level
  // The input packed per outer tile, by its buffer's name (or "" for none):
  // an index among the block's reads would not survive pad_einsum, whose
  // recomputed reads merge identical ones, or another start of the space
  // where a producer was inlined into the block.
  std::string read_cache;
  bool padded = false;        // pad_einsum first (RegisterBlockPadding)
  int vector_loop = -1;       // the loop to vectorize, -1: the last spatial one (BatchLanesLoop)
  // Which of that buffer's reads, in the block's order: a symmetric
  // product, sum_k A[i, k] * A[j, k], reads A twice, and packs A[j, k].
  int read_cache_nth = 0;
};

// Tiles the block "SSRSRS" with the register block as the samples'
// decisions, and the variant's write cache, packed input and fused
// elementwise consumers.
void MultiLevelTiling(Schedule& sch, const std::string& name, TilingVariant variant, const SpaceOptions& options);

// Inlines the padded copies of inputs that pad_einsum added (`added`) into
// what reads them; the output's copy-back stays.
void InlinePaddedInputs(Schedule& sch, const std::vector<std::string>& added);

// ---- register_block.cc -------------------------------------------------------

// The loops of a register block, by position (-1 where there is none).
struct BlockLoops {
  int vectorized = -1, rows = -1, last_reduce = -1;
};
BlockLoops RegisterBlockLoops(const BlockNode& node, const std::vector<const ir::ExprNode*>& loop_vars,
                              const std::vector<std::int64_t>& extents, const std::vector<IterKind>& kinds,
                              int vector_loop = -1);

// A reduction loop sliding along the register block's rows (a
// convolution's kw), unrolled whole instead of the last; -1: none.
int SlidingReduction(const BlockNode& node, const std::vector<const ir::ExprNode*>& loop_vars,
                     const std::vector<std::int64_t>& extents, const std::vector<IterKind>& kinds, int rows);

// A second loop of rows, for when the first has no divisor that fills the
// block; -1: none.
int SecondRowsLoop(const BlockNode& node, const std::vector<const ir::ExprNode*>& loop_vars,
                   const std::vector<std::int64_t>& extents, const std::vector<IterKind>& kinds, int rows,
                   int vectorized);

// The tile sizes of every loop (4 for a spatial loop, 2 for a reduction)
// that give the register block a BLAS micro-kernel would use.
// `operand_in_place`: the operand read as vectors (matmul's B) is not
// packed by the variant.
std::vector<std::vector<std::int64_t>> RegisterBlockedTiles(const std::vector<std::int64_t>& extents,
                                                            const std::vector<IterKind>& kinds,
                                                            int element_bytes, const SpaceOptions& o,
                                                            int vector_loop, const BlockLoops& block_loops,
                                                            int sliding, int second_rows, bool operand_in_place);

// The spatial loop to vectorize instead of the last (a small batch, or
// whole vectors where the last leaves part of one), and the input to pack
// with it; {-1, -1} when the default is better. `padding`: the
// RegisterBlockPadding that pad_einsum accepts for the block, or empty.
std::pair<int, int> BatchLanesLoop(const BlockNode& b, const SpaceOptions& o,
                                   const std::vector<std::int64_t>& padding);

// The pad_einsum padding that gives the register block whole vectors and
// rows; empty when the extents need none.
std::vector<std::int64_t> RegisterBlockPadding(const BlockNode& b, const SpaceOptions& o);

// ---- rfactor.cc --------------------------------------------------------------

// Whether the block's spatial part is too small to keep the cores busy and
// its reduction long enough to split (TVM's AddRFactor).
bool NeedsRFactor(const BlockNode& b, const SpaceOptions& o);

// Splits the (fused) reduction in two and rfactors part `factor_part`.
void RFactor(Schedule& sch, const std::string& name, int factor_part, int max_innermost);

// Whether the innermost loop reduces along an input's last dimension (a
// row sum), leaving no spatial loop to vectorize, over 16 steps or more
// (64 for a pooling window the window rule takes).
bool NeedsVectorRFactor(const BlockNode& b);

// Rfactors one vector of the innermost reduction into the last axis of a
// partial result; returns the block of partial sums.
BlockRV VectorRFactor(Schedule& sch, const std::string& name, const SpaceOptions& o);

// The input a matrix-vector product streams along its innermost reduction,
// reused at most `max_reuse` times; -1: none.
int StreamedInput(const BlockNode& b, std::int64_t max_reuse);

// The vector rfactor with the partial sums of a block of rows kept in
// registers, and the sums and elementwise consumers fused under it.
void MatrixVectorRFactor(Schedule& sch, const std::string& name, const SpaceOptions& o);

// The vector rfactor with each row's sum and elementwise consumers computed
// under the row's loop (where the matrix-vector form does not apply).
void RowVectorRFactor(Schedule& sch, const std::string& name, const SpaceOptions& o);

// Whether a row reduction's outputs are too few to share among the cores
// evenly (a sum to one scalar; not 4 rows on 2 cores).
bool NeedsParallelVectorRFactor(const BlockNode& b, const SpaceOptions& o);

// Both rfactors of a reduction to few outputs along a row: jobs factored
// into a leading axis (sampled among the cores' multiples), and in each
// job the vector rfactor with the job's sum under its loop. Where no
// number of jobs divides the reduction into whole vectors, its last steps
// are masked.
void ParallelRowVectorRFactor(Schedule& sch, const std::string& name, const SpaceOptions& o);

// ---- transpose.cc ------------------------------------------------------------

// The two loops of an elementwise block that reads an input across its rows
// ({a, last}), or {-1, -1}.
std::pair<int, int> TransposedLoops(const BlockNode& b);

// Tiles a transpose's two loops so that its innermost blocks transpose in
// registers.
void TransposeInBlocks(Schedule& sch, const std::string& name, const SpaceOptions& o);

// ---- window.cc ---------------------------------------------------------------

// The iteration variable whose loop becomes vector lanes when the block's
// reduction (a pooling window), which comes after it, moves outside it:
// the last spatial one, when the output steps along its last dimension
// with it and every input by 1-4 elements; -1 when there is none.
int WindowLanesLoop(const BlockNode& b);

// Splits that loop in two, the inner part sampled, and moves the window
// between the parts, so the postprocessor vectorizes the inner part; an
// elementwise consumer goes under the outer part.
void WindowOutsideLanes(Schedule& sch, const std::string& name, const SpaceOptions& o);

// ---- random_compute_location.cc ----------------------------------------------

// Computes an intermediate stage at a sampled loop of its consumer.
void RandomComputeLocation(Schedule& sch, const std::string& name);

// ---- parallel_vectorize_unroll.cc --------------------------------------------

// Annotates the root with the parallel limit, the vector limit and a
// sampled unroll depth, which the postprocessors turn into loops.
void ParallelVectorizeUnroll(Schedule& sch, const SpaceOptions& o);

}  // namespace tunedb::search::rules
