#include "ir/region.h"

#include <algorithm>
#include <cstdlib>

namespace tunedb::ir {
namespace {

std::int64_t FloorDiv(std::int64_t a, std::int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

bool Dense(const Expr& e, const std::set<const ExprNode*>& free_vars, const VarRanges& ranges,
           std::set<const ExprNode*>& used);

// Whether a non-constant part of a linear form takes every value between its
// bounds: a free variable (each used once, see Dense), a floordiv of a dense
// expression, or a floormod of one that wraps around whole periods or none.
bool DenseAtom(const Expr& atom, const std::set<const ExprNode*>& free_vars, const VarRanges& ranges,
               std::set<const ExprNode*>& used) {
  std::int64_t divisor = 0;
  switch (atom->kind) {
    case ExprKind::kVar: return used.insert(atom.get()).second;
    case ExprKind::kFloorDiv:
      return AsConstInt(atom->operands[1], &divisor) && divisor > 0 && Dense(atom->operands[0], free_vars, ranges, used);
    case ExprKind::kFloorMod: {
      if (!AsConstInt(atom->operands[1], &divisor) || divisor <= 0) return false;
      if (!Dense(atom->operands[0], free_vars, ranges, used)) return false;
      std::optional<IntBound> b = BoundOfSimplified(atom->operands[0], ranges);
      return b && (b->max - b->min + 1 >= divisor || FloorDiv(b->min, divisor) == FloorDiv(b->max, divisor));
    }
    default: return false;
  }
}

// Whether e takes every value between its least and greatest as the
// variables of `free_vars` run over their ranges. Its parts must move
// independently: `used` collects the free variables seen, and one seen
// twice (in two parts, or in another index of the same access) is a no.
bool Dense(const Expr& e, const std::set<const ExprNode*>& free_vars, const VarRanges& ranges,
           std::set<const ExprNode*>& used) {
  std::vector<Step> steps;
  for (const auto& [atom, coefficient] : ToLinearForm(e, ranges).terms) {
    bool moves = false;
    VisitExpr(atom, [&](const Expr& x) { moves = moves || (x->kind == ExprKind::kVar && free_vars.count(x.get())); });
    if (!moves) continue;
    std::optional<IntBound> b = BoundOfSimplified(atom, ranges);
    if (!b || !DenseAtom(atom, free_vars, ranges, used)) return false;
    steps.push_back({std::abs(coefficient), b->max - b->min + 1});
  }
  return LeavesNoGap(std::move(steps));
}

}  // namespace


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


bool LeavesNoGap(std::vector<Step> steps) {
  // Smallest stride first: the values so far are every one of [0, reach],
  // and a stride of at most reach + 1 keeps them so.
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.stride < b.stride; });
  std::int64_t reach = 0;
  for (const Step& step : steps) {
    if (step.count <= 1) continue;
    if (step.stride > reach + 1) return false;
    reach += step.stride * (step.count - 1);
  }
  return true;
}

bool HoldsInBounds(const Expr& condition, const Expr& index, std::int64_t extent, const VarRanges& ranges) {
  std::int64_t bound = 0, k = 0;
  if ((condition->kind != ExprKind::kLt && condition->kind != ExprKind::kGe) ||
      !AsConstInt(condition->operands[1], &bound) || !AsConstInt(Simplify(condition->operands[0] - index, ranges), &k)) {
    return false;
  }
  return condition->kind == ExprKind::kLt ? bound >= extent + k : k >= bound;
}

std::optional<Expr> HoldsForSome(const Expr& condition, const std::set<const ExprNode*>& held,
                                 const VarRanges& ranges) {
  const ExprKind kind = condition->kind;
  if (kind != ExprKind::kLt && kind != ExprKind::kLe && kind != ExprKind::kGt && kind != ExprKind::kGe) {
    return std::nullopt;
  }
  std::set<const ExprNode*> others;
  VisitExpr(condition, [&](const Expr& x) {
    if (x->kind == ExprKind::kVar && !held.count(x.get())) others.insert(x.get());
  });
  std::optional<AffineSplit> split = SplitAffine(condition->operands[0] - condition->operands[1], others, ranges);
  if (!split) return std::nullopt;
  // held + others OP 0 for some values of the others: for their best case.
  bool upper = kind == ExprKind::kLt || kind == ExprKind::kLe;
  std::int64_t best = upper ? split->free.min : split->free.max;
  return Simplify(Binary(kind, split->fixed, IntImm(split->fixed->dtype, -best)), ranges);
}

bool TouchesWholeRegion(const std::vector<RegionAccess>& accesses, const VarRanges& ranges) {
  if (accesses.empty()) return true;
  const std::size_t rank = accesses[0].indices.size();
  std::vector<std::vector<DimRegion>> regions;
  for (const RegionAccess& a : accesses) {
    if (a.indices.size() != rank) return false;
    std::set<const ExprNode*> used;
    std::vector<DimRegion> region;
    for (const Expr& index : a.indices) {
      Expr simplified = Simplify(index, ranges);
      std::optional<DimRegion> r = AccessRegion(simplified, a.free_vars, ranges);
      if (!r || !Dense(simplified, a.free_vars, ranges, used)) return false;
      region.push_back(*r);
    }
    regions.push_back(std::move(region));
  }
  // The accesses' boxes, as offsets from the first: alike but in one
  // dimension at most, where their spans must leave no gap between them.
  std::optional<std::size_t> differing;
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;  // [first, last] along `differing`
  for (std::size_t d = 0; d < rank; ++d) {
    std::vector<std::pair<std::int64_t, std::int64_t>> here;
    bool alike = true;
    for (const std::vector<DimRegion>& region : regions) {
      std::int64_t offset = 0;
      if (!AsConstInt(Simplify(region[d].min - regions[0][d].min, ranges), &offset)) return false;
      alike = alike && offset == 0 && region[d].extent == regions[0][d].extent;
      here.push_back({offset, offset + region[d].extent - 1});
    }
    if (alike) continue;
    if (differing) return false;
    differing = d;
    spans = std::move(here);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t k = 1; k < spans.size(); ++k) {
    if (spans[k].first > spans[k - 1].second + 1) return false;
    spans[k].second = std::max(spans[k].second, spans[k - 1].second);
  }
  return true;
}

}  // namespace tunedb::ir
