// Questions the schedule rules ask of a block and its loops. Private to
// search/: the rules under search/rules/ share them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/schedule/schedule.h"
#include "ir/stmt.h"
#include "search/space.h"
#include "search/space_internal.h"

namespace tunedb::search::rules {

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

// Whether `buffer` is one of the function's parameters (an input or an
// output), which no rule may inline or move.
bool IsParam(const ir::PrimFunc& func, const ir::Buffer& buffer);

// The product of the extents of the block's iteration variables of `kind`.
std::int64_t ExtentProduct(const BlockNode& b, IterKind kind);

// The iteration kind each loop drives: the kind of the iter var bound to
// exactly that loop. nullopt when a binding is not a plain loop variable
// (the block was already transformed) and tiling should leave it alone.
std::optional<std::vector<IterKind>> LoopKinds(Schedule& sch, BlockRV b, const std::vector<LoopRV>& loops);

// Whether some index of the region `read` uses the variable `var` (an
// iteration variable of the block that reads it).
bool ReadUses(const ir::BufferRegion& read, const ir::ExprNode* var);

// Which dimensions of the region `read` of block `node` move with the loop
// whose variable is `loop_var` (an untransformed loop, bound to one
// iteration variable or to none); and whether any does.
std::vector<bool> DimensionsMovingWith(const BlockNode& node, const ir::BufferRegion& read,
                                       const ir::ExprNode* loop_var);
bool ReadMovesWith(const BlockNode& node, const ir::BufferRegion& read, const ir::ExprNode* loop_var);

// Bytes of one element of what the block writes (a float by default).
int OutputElementBytes(const BlockNode& b);

// Elements of that size in one of the target's vector registers.
std::int64_t VectorLanes(const SpaceOptions& o, int element_bytes);

// The largest divisor of n that is at most limit (1 at least).
std::int64_t LargestDivisorAtMost(std::int64_t n, std::int64_t limit);

// A block's iteration extents and kinds, in the order of its iteration
// variables (an untransformed block's loop order).
struct IterShape {
  std::vector<std::int64_t> extents;
  std::vector<IterKind> kinds;
};
IterShape IterShapeOf(const BlockNode& b);

// The loop whose innermost tile the postprocessor vectorizes: the last
// spatial loop longer than 1 (-1 when there is none).
int VectorLoop(const std::vector<std::int64_t>& extents, const std::vector<IterKind>& kinds);

}  // namespace tunedb::search::rules
