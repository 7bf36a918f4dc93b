#include "ir/region.h"

#include <algorithm>

namespace tunedb::ir {

std::optional<DimRegion> AccessRegion(const Expr& index, const std::set<const ExprNode*>& free_vars,
                                      const VarRanges& ranges) {
  auto split = SplitAffine(index, free_vars, ranges);
  if (!split) return std::nullopt;
  Expr min = Simplify(split->fixed + IntImm(index->dtype, split->free.min), ranges);
  return DimRegion{min, split->free.max - split->free.min + 1};
}

std::vector<std::optional<DimRegion>> UnionRegion(const std::vector<RegionAccess>& accesses, std::size_t rank,
                                                  const VarRanges& ranges) {
  std::vector<std::optional<DimRegion>> region(rank);
  std::vector<bool> first(rank, true);
  for (const RegionAccess& a : accesses) {
    for (std::size_t d = 0; d < rank; ++d) {
      if (!first[d] && !region[d]) continue;  // already unknown
      auto r = AccessRegion(Simplify(a.indices[d], ranges), a.free_vars, ranges);
      if (!r) {
        region[d] = std::nullopt;
        first[d] = false;
        continue;
      }
      if (first[d]) {
        region[d] = r;
        first[d] = false;
        continue;
      }
      // [m0, m0 + e0) and [m1, m1 + e1) join exactly when m1 - m0 is a constant.
      std::int64_t diff = 0;
      if (!AsConstInt(Simplify(r->min - region[d]->min, ranges), &diff)) {
        region[d] = std::nullopt;
        continue;
      }
      std::int64_t lo = std::min<std::int64_t>(0, diff);
      std::int64_t hi = std::max(region[d]->extent - 1, diff + r->extent - 1);
      region[d] = DimRegion{Simplify(region[d]->min + IntImm(region[d]->min->dtype, lo), ranges), hi - lo + 1};
    }
  }
  return region;
}

}  // namespace tunedb::ir
