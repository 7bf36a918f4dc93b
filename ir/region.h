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

}  // namespace tunedb::ir
