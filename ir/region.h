// Region analysis: which part of a buffer a set of accesses touches while
// some loops run over their ranges and the others are held fixed.
//
// Used by compute_at / reverse_compute_at (the region one iteration of a
// loop reads or writes) and by lowering (shrinking an intermediate buffer to
// what one iteration of its innermost common loop uses).
#pragma once

#include <optional>
#include <set>
#include <vector>

#include "ir/simplify.h"

namespace tunedb::ir {

// [min, min + extent) of one dimension; min is an expression over the fixed
// loops, extent a constant.
struct DimRegion {
  Expr min;
  std::int64_t extent;
};

// The region of one index when the `free` variables run over their ranges.
// nullopt when the index is not affine in them (a term mixes fixed and free
// variables).
std::optional<DimRegion> AccessRegion(const Expr& index, const std::set<const ExprNode*>& free_vars,
                                      const VarRanges& ranges);

// One access: its index list (over loop variables) and the variables that
// vary for it.
struct RegionAccess {
  std::vector<Expr> indices;
  std::set<const ExprNode*> free_vars;
};

// The union, per dimension, of the accesses' regions: exact when their
// minimums differ by constants, nullopt for a dimension where they do not
// or an index is not affine.
std::vector<std::optional<DimRegion>> UnionRegion(const std::vector<RegionAccess>& accesses, std::size_t rank,
                                                  const VarRanges& ranges);

// Whether the accesses touch every element of their UnionRegion: no index
// skips values between its least and greatest (i_0 * 2 + i over i_0 in
// [0, 2) touches i and i + 2, not i + 1), no two indices move with one
// variable (a diagonal touches n of n x n), and where the accesses'
// regions differ, they differ in one dimension and meet there. A consumer
// that reverse_compute_at moves under a loop reads the whole region its
// producers write in one iteration; an element inside it that they skip
// would come from another iteration, or from nowhere once lowering keeps
// one iteration's region. False when it cannot tell.
bool TouchesWholeRegion(const std::vector<RegionAccess>& accesses, const VarRanges& ranges);

// Whether sum(stride_k * v_k), each v_k in [0, count_k), takes every value
// between its least and greatest: sorted by stride, each stride at most one
// past what the smaller ones reach.
struct Step {
  std::int64_t stride;  // absolute coefficient
  std::int64_t count;   // values of its variable
};
bool LeavesNoGap(std::vector<Step> steps);

// Whether `condition` holds wherever `index` lies in [0, extent): index + k
// < c with c >= extent + k, or index + k >= 0 with k >= 0. A write under
// such a condition skips only elements outside its buffer, which no reader
// reads.
bool HoldsInBounds(const Expr& condition, const Expr& index, std::int64_t extent, const VarRanges& ranges);

// The condition over the `held` variables under which `condition`, a
// comparison affine in the others, holds for some values of the others in
// their ranges (i_0 * 4 + i_1 < 10 over i_1 in [0, 4): i_0 * 4 < 10): in
// which iterations of loops over `held` a block with that predicate runs
// at all. nullopt when the condition is not such a comparison.
std::optional<Expr> HoldsForSome(const Expr& condition, const std::set<const ExprNode*>& held,
                                 const VarRanges& ranges);

}  // namespace tunedb::ir
