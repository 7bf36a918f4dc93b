// Arithmetic simplification and integer bounds of index expressions.
//
// Scheduling produces index expressions such as ((i_0 * 4 + i_1) * 8 + i_2)
// or floormod(floordiv(i_j_fused, 16), 4). Simplify() puts integer
// expressions in a canonical linear form (sum of coefficient * atom plus a
// constant, atoms in order of first appearance) and uses the ranges of loop
// variables to remove floordiv/floormod where they are provably no-ops and
// to decide comparisons, so split predicates that always hold disappear.
// Float expressions are left alone apart from their integer parts (indices).
//
// Every rewrite is exact for the given ranges: Simplify(e) computes the same
// value as e whenever each variable v lies in [0, ranges[v]).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace tunedb::ir {

// Variable -> extent: the variable takes values in [0, extent).
using VarRanges = std::unordered_map<const ExprNode*, std::int64_t>;

struct IntBound {
  std::int64_t min;
  std::int64_t max;
};

// Inclusive bounds of an integer expression, when they can be derived.
std::optional<IntBound> BoundOf(const Expr& e, const VarRanges& ranges);
// The same for an expression that simplification produced (e.g. an atom of
// ToLinearForm), without simplifying it again first.
std::optional<IntBound> BoundOfSimplified(const Expr& e, const VarRanges& ranges);

Expr Simplify(const Expr& e, const VarRanges& ranges = {});

// Simplify(e), but the indices of loads in e are left as they are: for
// expressions whose loads were built from simplified indices (lowering
// simplifies each index once, as it flattens the access).
Expr SimplifyKeepingLoads(const Expr& e, const VarRanges& ranges);

// Simplify(((i_0 * shape[1] + i_1) * shape[2] + i_2) ...), the row-major
// index of an access, with the same result but without building the sum.
// Same-dtype indices; no index gives the int32 constant 0.
Expr SimplifyRowMajor(const std::vector<Expr>& indices, const std::vector<std::int64_t>& shape,
                      const VarRanges& ranges);

// e written as fixed + free, where `fixed` mentions no variable of
// `free_vars` and `free` (the rest) has known bounds. nullopt when a term
// mixes both kinds of variables (e.g. floordiv(fixed * 4 + free, 16)).
struct AffineSplit {
  Expr fixed;
  IntBound free;
};
std::optional<AffineSplit> SplitAffine(const Expr& e, const std::set<const ExprNode*>& free_vars,
                                       const VarRanges& ranges);

// The coefficients of the variables of `vars` in e, when e is a linear
// function of them (each appears only as coefficient * variable; other parts
// of e do not mention them). Variables absent from e get no entry.
std::optional<std::vector<std::pair<const ExprNode*, std::int64_t>>> LinearCoefficients(
    const Expr& e, const std::set<const ExprNode*>& vars, const VarRanges& ranges);

// The same, variable by variable: the coefficients of the variables of
// `vars` that e uses only linearly, and apart the variables that appear in
// a non-linear part of e (the fused loop in floordiv(fused, 4) * 64 + i):
// e is linear in each of the first whatever the others do.
struct PartialCoefficients {
  std::vector<std::pair<const ExprNode*, std::int64_t>> linear;
  std::set<const ExprNode*> nonlinear;
};
PartialCoefficients LinearCoefficientsByVar(const Expr& e, const std::set<const ExprNode*>& vars,
                                            const VarRanges& ranges);

// e as sum(coefficient * atom) + constant, after simplification: atoms are
// variables or non-linear parts (floordiv, floormod, products, ...).
struct LinearForm {
  std::vector<std::pair<Expr, std::int64_t>> terms;
  std::int64_t constant = 0;
};
LinearForm ToLinearForm(const Expr& e, const VarRanges& ranges);

// Deep equality of expressions (variables and buffers by identity).
bool ExprEqual(const Expr& a, const Expr& b);

}  // namespace tunedb::ir
