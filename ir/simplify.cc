#include "ir/simplify.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace tunedb::ir {
namespace {

std::int64_t FloorDivConst(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
std::int64_t FloorModConst(std::int64_t a, std::int64_t b) { return a - FloorDivConst(a, b) * b; }

// Coefficients and constants of a linear form wrap as two's complement: the
// program's + - * on integers wrap (the interpreter's semantics), so a form
// gathered with wrapping arithmetic is exact modulo 2^64, and so modulo 2^32
// for int32. (Unchecked, C++ overflow is undefined: i64(i) * 2^62 * 4 hit it.)
std::int64_t WrapMul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}
std::int64_t WrapAdd(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

// Bounds are arithmetic over the integers, so they must not wrap: a bound
// that does not fit int64 is not known.
std::optional<IntBound> CheckedBound(__int128 lo, __int128 hi) {
  constexpr __int128 kMin = std::numeric_limits<std::int64_t>::min(), kMax = std::numeric_limits<std::int64_t>::max();
  if (lo < kMin || hi > kMax) return std::nullopt;
  return IntBound{static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi)};
}

// Whether a * b (both positive) is a constant of type t: a divisor past it
// would wrap into another.
bool FitsProduct(std::int64_t a, std::int64_t b, DataType t) {
  std::int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p)) return false;
  return t != DataType::kInt32 || p <= std::numeric_limits<std::int32_t>::max();
}

// sum(coeff * atom) + constant, atoms in order of first appearance.
struct Linear {
  struct Term {
    Expr atom;
    std::int64_t coeff;
  };
  std::vector<Term> terms;
  std::int64_t constant = 0;

  // A caller done with its atom moves it in (A is Expr), others lend it
  // (const Expr&): a copy of an Expr is an atomic update in a multi-threaded
  // process, so only a new term copies.
  template <typename A>
  void Add(A&& atom, std::int64_t coeff) {
    if (Term* t = Find(atom)) {
      t->coeff = WrapAdd(t->coeff, coeff);
    } else {
      Append(Term{std::forward<A>(atom), coeff});
    }
  }
  Term* Find(const Expr& atom) {
    bool is_var = atom->kind == ExprKind::kVar;  // variables are equal only to themselves
    for (Term& t : terms) {
      if (t.atom == atom || (!is_var && ExprEqual(t.atom, atom))) return &t;
    }
    return nullptr;
  }
  void Append(Term&& t) {
    // Index expressions have a few terms: one allocation instead of growing
    // through 1, 2 and 4.
    if (terms.empty()) terms.reserve(4);
    terms.push_back(std::move(t));
  }
  void AddAll(const Linear& other, std::int64_t scale) {
    for (const Term& t : other.terms) Add(t.atom, WrapMul(t.coeff, scale));
    constant = WrapAdd(constant, WrapMul(other.constant, scale));
  }
  void AddAll(Linear&& other, std::int64_t scale) {
    for (Term& t : other.terms) Add(std::move(t.atom), WrapMul(t.coeff, scale));
    constant = WrapAdd(constant, WrapMul(other.constant, scale));
  }
  void DropZeros() {
    terms.erase(std::remove_if(terms.begin(), terms.end(), [](const Term& t) { return t.coeff == 0; }),
                terms.end());
  }
  bool IsConst() const { return terms.empty(); }
};

class Simplifier {
 public:
  // keep_loads: loads are atoms whose indices are left as they are (they
  // were simplified already).
  explicit Simplifier(const VarRanges& ranges, bool keep_loads = false) : ranges_(ranges), keep_loads_(keep_loads) {}

  Expr Run(const Expr& e) {
    if (IsInt(e->dtype)) return FromLinear(ToLinear(e), e->dtype);
    if (e->dtype == DataType::kBool) return SimplifyBool(e);
    return SimplifyOperands(e);
  }

  std::optional<IntBound> Bound(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntImm: return IntBound{e->int_value, e->int_value};
      case ExprKind::kVar: {
        auto it = ranges_.find(e.get());
        if (it == ranges_.end() || it->second < 1) return std::nullopt;
        return IntBound{0, it->second - 1};
      }
      case ExprKind::kAdd: case ExprKind::kSub: {
        auto a = Bound(e->operands[0]), b = Bound(e->operands[1]);
        if (!a || !b) return std::nullopt;
        using W = __int128;
        if (e->kind == ExprKind::kAdd) return CheckedBound(W{a->min} + b->min, W{a->max} + b->max);
        return CheckedBound(W{a->min} - b->max, W{a->max} - b->min);
      }
      case ExprKind::kMul: {
        auto a = Bound(e->operands[0]), b = Bound(e->operands[1]);
        if (!a || !b) return std::nullopt;
        using W = __int128;
        W c[] = {W{a->min} * b->min, W{a->min} * b->max, W{a->max} * b->min, W{a->max} * b->max};
        return CheckedBound(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
      }
      case ExprKind::kFloorDiv: {
        auto a = Bound(e->operands[0]);
        std::int64_t c = 0;
        if (!a || !AsConstInt(e->operands[1], &c) || c <= 0) return std::nullopt;
        return IntBound{FloorDivConst(a->min, c), FloorDivConst(a->max, c)};
      }
      case ExprKind::kFloorMod: {
        std::int64_t c = 0;
        if (!AsConstInt(e->operands[1], &c) || c <= 0) return std::nullopt;
        auto a = Bound(e->operands[0]);
        if (a && a->min >= 0 && a->max < c) return a;
        return IntBound{0, c - 1};
      }
      case ExprKind::kMin: case ExprKind::kMax: {
        auto a = Bound(e->operands[0]), b = Bound(e->operands[1]);
        if (!a || !b) return std::nullopt;
        if (e->kind == ExprKind::kMin) return IntBound{std::min(a->min, b->min), std::min(a->max, b->max)};
        return IntBound{std::max(a->min, b->min), std::max(a->max, b->max)};
      }
      case ExprKind::kSelect: {
        auto a = Bound(e->operands[1]), b = Bound(e->operands[2]);
        if (!a || !b) return std::nullopt;
        return IntBound{std::min(a->min, b->min), std::max(a->max, b->max)};
      }
      default: return std::nullopt;
    }
  }

  std::optional<AffineSplit> Split(const Expr& e, const std::set<const ExprNode*>& free_vars) {
    Linear l = ToLinear(e);
    Linear fixed, free;
    fixed.constant = l.constant;
    for (const Linear::Term& t : l.terms) {
      bool has_free = false, has_fixed = false;
      VisitExpr(t.atom, [&](const Expr& x) {
        if (x->kind == ExprKind::kVar) (free_vars.count(x.get()) ? has_free : has_fixed) = true;
      });
      if (has_free && has_fixed) return std::nullopt;
      (has_free ? free : fixed).Add(t.atom, t.coeff);
    }
    auto b = Bound(free);
    if (!b) return std::nullopt;
    return AffineSplit{FromLinear(fixed, e->dtype), *b};
  }

  // Run(((i_0 * n_1 + i_1) * n_2 + i_2) ...) without building that tree:
  // the same steps in the same order, so the same result.
  Expr RowMajor(const std::vector<Expr>& indices, const std::vector<std::int64_t>& shape) {
    // Zeros are dropped once, at the end, as ToLinear does for a sum: a term
    // that cancels keeps its place should its atom come back.
    Linear l;
    for (std::size_t d = 0; d < indices.size(); ++d) {
      if (d > 0) {
        for (Linear::Term& t : l.terms) t.coeff = WrapMul(t.coeff, shape[d]);
        l.constant = WrapMul(l.constant, shape[d]);
      }
      AddTo(l, indices[d], 1);
    }
    l.DropZeros();
    return FromLinear(l, indices.empty() ? DataType::kInt32 : indices[0]->dtype);
  }

  LinearForm Form(const Expr& e) {
    Linear l = ToLinear(e);
    LinearForm f;
    for (const Linear::Term& t : l.terms) f.terms.emplace_back(t.atom, t.coeff);
    f.constant = l.constant;
    return f;
  }

  std::optional<std::vector<std::pair<const ExprNode*, std::int64_t>>> Coefficients(
      const Expr& e, const std::set<const ExprNode*>& vars) {
    std::vector<std::pair<const ExprNode*, std::int64_t>> out;
    Linear read;
    const Linear& l = ReadSum(e, 1, read) ? read : (read = ToLinear(e));
    for (const Linear::Term& t : l.terms) {
      if (t.atom->kind == ExprKind::kVar && vars.count(t.atom.get())) {
        out.emplace_back(t.atom.get(), t.coeff);
        continue;
      }
      bool mentions = false;
      VisitExpr(t.atom, [&](const Expr& x) { mentions |= x->kind == ExprKind::kVar && vars.count(x.get()); });
      if (mentions) return std::nullopt;
    }
    return out;
  }

  PartialCoefficients CoefficientsByVar(const Expr& e, const std::set<const ExprNode*>& vars) {
    PartialCoefficients out;
    Linear read;
    const Linear& l = ReadSum(e, 1, read) ? read : (read = ToLinear(e));
    for (const Linear::Term& t : l.terms) {
      if (t.atom->kind == ExprKind::kVar && vars.count(t.atom.get())) {
        out.linear.emplace_back(t.atom.get(), t.coeff);
        continue;
      }
      VisitExpr(t.atom, [&](const Expr& x) {
        if (x->kind == ExprKind::kVar && vars.count(x.get())) out.nonlinear.insert(x.get());
      });
    }
    std::erase_if(out.linear, [&](const auto& vc) { return out.nonlinear.count(vc.first) > 0; });
    return out;
  }

  // Reads a sum in the shape Run gives it - ((t0 +- t1) +- ...) +- c, each
  // term an atom or atom * c - into l without simplifying again (feature
  // extraction asks for the coefficients of every lowered, so simplified,
  // index). False for any other shape, which then needs ToLinear.
  bool ReadSum(const Expr& e, std::int64_t sign, Linear& l) {
    switch (e->kind) {
      case ExprKind::kIntImm: l.constant = WrapAdd(l.constant, WrapMul(sign, e->int_value)); return true;
      case ExprKind::kAdd: return ReadSum(e->operands[0], sign, l) && ReadSum(e->operands[1], sign, l);
      case ExprKind::kSub: return ReadSum(e->operands[0], sign, l) && ReadSum(e->operands[1], -sign, l);
      case ExprKind::kMul: {
        std::int64_t c = 0;
        if (!AsConstInt(e->operands[1], &c)) break;  // a product of two non-constants: an atom
        const Expr& atom = e->operands[0];
        if (!IsAtom(atom) || atom->kind == ExprKind::kMul) return false;
        l.Add(atom, WrapMul(sign, c));
        l.DropZeros();
        return true;
      }
      default: break;
    }
    if (!IsAtom(e)) return false;
    l.Add(e, sign);
    l.DropZeros();
    return true;
  }
  static bool IsAtom(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntImm: case ExprKind::kAdd: case ExprKind::kSub: return false;
      case ExprKind::kMul: {
        std::int64_t c = 0;
        return !AsConstInt(e->operands[0], &c) && !AsConstInt(e->operands[1], &c);
      }
      default: return IsInt(e->dtype);
    }
  }

  std::optional<IntBound> Bound(const Linear& l) {
    __int128 lo = l.constant, hi = l.constant;
    for (const Linear::Term& t : l.terms) {
      auto b = Bound(t.atom);
      if (!b) return std::nullopt;
      __int128 a = __int128{b->min} * t.coeff, z = __int128{b->max} * t.coeff;
      lo += std::min(a, z);
      hi += std::max(a, z);
      if (!CheckedBound(lo, hi)) return std::nullopt;
    }
    return CheckedBound(lo, hi);
  }

 private:
  Expr SimplifyOperands(const Expr& e) {
    if (e->operands.empty() || (keep_loads_ && e->kind == ExprKind::kLoad)) return e;
    bool changed = false;
    std::vector<Expr> ops;
    for (const Expr& o : e->operands) {
      ops.push_back(Run(o));
      changed |= ops.back() != o;
    }
    if (!changed) return e;
    return WithOperands(*e, std::move(ops));
  }

  // acc += scale * e, as acc.AddAll(ToLinear(e), scale) but without a form
  // (and its allocation) for every variable, sum and constant multiple
  // inside e: their terms go straight into acc. The caller drops zeros.
  void AddTo(Linear& acc, const Expr& e, std::int64_t scale) {
    switch (e->kind) {
      case ExprKind::kIntImm: acc.constant = WrapAdd(acc.constant, WrapMul(e->int_value, scale)); return;
      case ExprKind::kVar: acc.Add(e, scale); return;
      case ExprKind::kAdd: case ExprKind::kSub:
        AddTo(acc, e->operands[0], scale);
        AddTo(acc, e->operands[1], e->kind == ExprKind::kAdd ? scale : WrapMul(scale, -1));
        return;
      case ExprKind::kMul:
        if (e->operands[1]->kind == ExprKind::kIntImm) {
          return AddTo(acc, e->operands[0], WrapMul(scale, e->operands[1]->int_value));
        }
        if (e->operands[0]->kind == ExprKind::kIntImm) {
          return AddTo(acc, e->operands[1], WrapMul(scale, e->operands[0]->int_value));
        }
        break;
      default: break;
    }
    acc.AddAll(ToLinear(e), scale);
  }

  Linear ToLinear(const Expr& e) {
    Linear l;
    switch (e->kind) {
      case ExprKind::kIntImm: l.constant = e->int_value; return l;
      case ExprKind::kVar: l.Add(e, 1); return l;
      case ExprKind::kAdd: case ExprKind::kSub: {
        AddTo(l, e, 1);
        l.DropZeros();
        return l;
      }
      case ExprKind::kMul: {
        if (e->operands[0]->kind == ExprKind::kIntImm || e->operands[1]->kind == ExprKind::kIntImm) {
          AddTo(l, e, 1);
          l.DropZeros();
          return l;
        }
        Linear a = ToLinear(e->operands[0]), b = ToLinear(e->operands[1]);
        if (b.IsConst()) {
          l.AddAll(std::move(a), b.constant);
        } else if (a.IsConst()) {
          l.AddAll(std::move(b), a.constant);
        } else {
          l.Add(Binary(ExprKind::kMul, FromLinear(a, e->dtype), FromLinear(b, e->dtype)), 1);
        }
        l.DropZeros();
        return l;
      }
      case ExprKind::kFloorDiv: return DivLinear(e);
      case ExprKind::kFloorMod: return ModLinear(e);
      case ExprKind::kMin: case ExprKind::kMax: {
        Expr a = Run(e->operands[0]), b = Run(e->operands[1]);
        auto ba = Bound(a), bb = Bound(b);
        bool is_min = e->kind == ExprKind::kMin;
        if (ba && bb && ba->max <= bb->min) return ToLinear(is_min ? a : b);
        if (ba && bb && bb->max <= ba->min) return ToLinear(is_min ? b : a);
        l.Add(Binary(e->kind, a, b), 1);
        return l;
      }
      default: {
        Expr s = SimplifyOperands(e);
        std::int64_t v = 0;
        if (AsConstInt(s, &v)) {
          l.constant = v;
        } else {
          l.Add(s, 1);
        }
        return l;
      }
    }
  }

  // floordiv(c*Q + R, c) = Q + floordiv(R, c), exactly, for c > 0.
  Linear DivLinear(const Expr& e) {
    Linear l;
    Expr divisor = Run(e->operands[1]);
    std::int64_t c = 0;
    if (!AsConstInt(divisor, &c) || c <= 0) {
      l.Add(Binary(ExprKind::kFloorDiv, Run(e->operands[0]), divisor), 1);
      return l;
    }
    if (c == 1) return ToLinear(e->operands[0]);
    if (HasLoad(e->operands[0])) {
      // floordiv(c*Q + R, c) = Q + floordiv(R, c) holds for the integers,
      // not for the wrapped value of c*Q + R, which a value computed from
      // loaded data may be: floordiv(B[i] * 4, 4) is not B[i] when B[i] * 4
      // wraps. Data-free parts cannot wrap (FindIntEscape, ir/limits.h).
      l.Add(Binary(ExprKind::kFloorDiv, Run(e->operands[0]), divisor), 1);
      return l;
    }
    Linear a = ToLinear(e->operands[0]);
    Linear rest;
    for (const Linear::Term& t : a.terms) {
      if (t.coeff % c == 0) {
        l.Add(t.atom, t.coeff / c);
      } else {
        rest.Add(t.atom, t.coeff);
      }
    }
    l.constant = FloorDivConst(a.constant, c);
    rest.constant = FloorModConst(a.constant, c);
    auto b = Bound(rest);
    if (rest.IsConst() || (b && b->min >= 0 && b->max < c)) return l;  // floordiv(rest, c) == 0
    // floordiv(k*X + Y, c) with c % k == 0 and 0 <= Y < k is floordiv(X, c / k).
    if (auto split = SplitByFactor(rest, c)) {
      auto& [k, x, y] = *split;
      (void)y;
      Expr xe = FromLinear(x, e->dtype);
      std::int64_t d = c / k, inner = 0;
      if (xe->kind == ExprKind::kFloorDiv && AsConstInt(xe->operands[1], &inner) && inner > 0 &&
          FitsProduct(inner, d, e->dtype)) {
        l.AddAll(ToLinear(Binary(ExprKind::kFloorDiv, xe->operands[0], IntImm(e->dtype, inner * d))), 1);
      } else {
        l.AddAll(Atom(Binary(ExprKind::kFloorDiv, xe, IntImm(e->dtype, d))), 1);
      }
      l.DropZeros();
      return l;
    }
    // floordiv(floordiv(x, a), c) is floordiv(x, a * c).
    std::int64_t inner = 0;
    if (rest.terms.size() == 1 && rest.terms[0].coeff == 1 && rest.constant == 0 &&
        rest.terms[0].atom->kind == ExprKind::kFloorDiv && AsConstInt(rest.terms[0].atom->operands[1], &inner) &&
        inner > 0 && FitsProduct(inner, c, e->dtype)) {
      l.AddAll(ToLinear(Binary(ExprKind::kFloorDiv, rest.terms[0].atom->operands[0], IntImm(e->dtype, inner * c))), 1);
      l.DropZeros();
      return l;
    }
    l.AddAll(Atom(Binary(ExprKind::kFloorDiv, FromLinear(rest, e->dtype), IntImm(e->dtype, c))), 1);
    l.DropZeros();
    return l;
  }

  // floormod(c*Q + R, c) = floormod(R, c), and = R when 0 <= R < c.
  Linear ModLinear(const Expr& e) {
    Linear l;
    Expr divisor = Run(e->operands[1]);
    std::int64_t c = 0;
    if (!AsConstInt(divisor, &c) || c <= 0) {
      l.Add(Binary(ExprKind::kFloorMod, Run(e->operands[0]), divisor), 1);
      return l;
    }
    if (c == 1) return l;
    if (HasLoad(e->operands[0])) {  // as in DivLinear
      l.Add(Binary(ExprKind::kFloorMod, Run(e->operands[0]), divisor), 1);
      return l;
    }
    Linear a = ToLinear(e->operands[0]);
    Linear rest;
    for (const Linear::Term& t : a.terms) {
      if (t.coeff % c != 0) rest.Add(t.atom, t.coeff);
    }
    rest.constant = FloorModConst(a.constant, c);
    auto b = Bound(rest);
    if (b && b->min >= 0 && b->max < c) return rest;
    // floormod(k*X + Y, c) with c % k == 0 and 0 <= Y < k is k*floormod(X, c/k) + Y.
    if (auto split = SplitByFactor(rest, c)) {
      auto& [k, x, y] = *split;
      l.AddAll(Atom(Binary(ExprKind::kFloorMod, FromLinear(x, e->dtype), IntImm(e->dtype, c / k))), k);
      l.AddAll(std::move(y), 1);
      l.DropZeros();
      return l;
    }
    l.Add(Binary(ExprKind::kFloorMod, FromLinear(rest, e->dtype), IntImm(e->dtype, c)), 1);
    return l;
  }

  // Writes l as k*X + Y with k > 1 dividing c and 0 <= Y < k, trying each
  // coefficient of l as k. This is the shape of a loop split (or fused loop)
  // indexed again: (f * 4 + i_2) with i_2 in [0, 4).
  struct FactorSplit {
    std::int64_t k;
    Linear x;
    Linear y;
  };
  std::optional<FactorSplit> SplitByFactor(const Linear& l, std::int64_t c) {
    for (const Linear::Term& candidate : l.terms) {
      std::int64_t k = candidate.coeff;
      if (k <= 1 || c % k != 0) continue;
      FactorSplit s{k, {}, {}};
      for (const Linear::Term& t : l.terms) {
        if (t.coeff % k == 0) {
          s.x.Add(t.atom, t.coeff / k);
        } else {
          s.y.Add(t.atom, t.coeff);
        }
      }
      s.y.constant = l.constant;
      auto b = Bound(s.y);
      if (b && b->min >= 0 && b->max < k) return s;
    }
    return std::nullopt;
  }

  // A floordiv/floormod atom, folded to a constant when its bounds are tight.
  Linear Atom(const Expr& e) {
    Linear l;
    auto b = Bound(e);
    if (b && b->min == b->max) {
      l.constant = b->min;
    } else if (e->kind == ExprKind::kFloorMod) {
      std::int64_t c = 0;
      auto xb = Bound(e->operands[0]);
      if (AsConstInt(e->operands[1], &c) && xb && xb->min >= 0 && xb->max < c) return ToLinear(e->operands[0]);
      l.Add(e, 1);
    } else {
      l.Add(e, 1);
    }
    return l;
  }

  Expr FromLinear(const Linear& l, DataType dtype) {
    Expr result;
    // Negation wraps: the most negative coefficient is its own magnitude,
    // and subtracting it is adding it (modulo 2^64).
    auto magnitude = [](std::int64_t v) { return v < 0 ? WrapMul(v, -1) : v; };
    for (const Linear::Term& t : l.terms) {
      if (t.coeff == 0) continue;
      std::int64_t mag = magnitude(t.coeff);
      Expr term = mag == 1 ? t.atom : Binary(ExprKind::kMul, t.atom, IntImm(dtype, mag));
      if (!result) {
        result = t.coeff < 0 ? Binary(ExprKind::kSub, IntImm(dtype, 0), std::move(term)) : std::move(term);
      } else {
        result = Binary(t.coeff < 0 ? ExprKind::kSub : ExprKind::kAdd, std::move(result), std::move(term));
      }
    }
    if (!result) return IntImm(dtype, l.constant);
    if (l.constant > 0) result = Binary(ExprKind::kAdd, std::move(result), IntImm(dtype, l.constant));
    if (l.constant < 0) result = Binary(ExprKind::kSub, std::move(result), IntImm(dtype, magnitude(l.constant)));
    return result;
  }

  Expr SimplifyBool(const Expr& e) {
    if (IsComparison(e->kind) && IsInt(e->operands[0]->dtype)) {
      Expr a = Run(e->operands[0]), b = Run(e->operands[1]);
      Linear diff = ToLinear(a);
      diff.AddAll(ToLinear(b), -1);
      diff.DropZeros();
      if (HasLoad(a) || HasLoad(b)) {
        // a - b is known only modulo 2^width where a value computed from
        // loaded data may wrap: it says whether a and b are equal, not
        // which is smaller (B[i] < B[i] + 1 is false for the largest B[i]).
        if (!diff.IsConst()) return Binary(e->kind, a, b);
        std::int64_t d = diff.constant;
        if (e->operands[0]->dtype == DataType::kInt32) d = static_cast<std::int32_t>(static_cast<std::uint32_t>(d));
        bool equal = d == 0;
        switch (e->kind) {
          case ExprKind::kEq: return BoolImm(equal);
          case ExprKind::kNe: return BoolImm(!equal);
          case ExprKind::kLe: case ExprKind::kGe: if (equal) return BoolImm(true); break;
          default: if (equal) return BoolImm(false); break;
        }
        return Binary(e->kind, a, b);
      }
      if (auto d = Bound(diff)) {
        std::optional<bool> known;
        switch (e->kind) {
          case ExprKind::kLt: if (d->max < 0) known = true; else if (d->min >= 0) known = false; break;
          case ExprKind::kLe: if (d->max <= 0) known = true; else if (d->min > 0) known = false; break;
          case ExprKind::kGt: if (d->min > 0) known = true; else if (d->max <= 0) known = false; break;
          case ExprKind::kGe: if (d->min >= 0) known = true; else if (d->max < 0) known = false; break;
          case ExprKind::kEq: if (d->min == 0 && d->max == 0) known = true; else if (d->min > 0 || d->max < 0) known = false; break;
          default: if (d->min > 0 || d->max < 0) known = true; else if (d->min == 0 && d->max == 0) known = false; break;
        }
        if (known) return BoolImm(*known);
      }
      return Binary(e->kind, a, b);
    }
    if (e->kind == ExprKind::kAnd || e->kind == ExprKind::kOr) {
      Expr a = Run(e->operands[0]), b = Run(e->operands[1]);
      std::int64_t va = 0, vb = 0;
      bool ca = AsConstInt(a, &va), cb = AsConstInt(b, &vb);
      bool is_and = e->kind == ExprKind::kAnd;
      if (ca) return (va != 0) == is_and ? b : a;
      if (cb) return (vb != 0) == is_and ? a : b;
      return Binary(e->kind, a, b);
    }
    if (e->kind == ExprKind::kNot) {
      Expr a = Run(e->operands[0]);
      std::int64_t v = 0;
      if (AsConstInt(a, &v)) return BoolImm(v == 0);
      return Not(a);
    }
    return SimplifyOperands(e);
  }

  const VarRanges& ranges_;
  const bool keep_loads_;
};

}  // namespace

bool ExprEqual(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (a->kind != b->kind || a->dtype != b->dtype || a->operands.size() != b->operands.size()) return false;
  switch (a->kind) {
    case ExprKind::kIntImm: return a->int_value == b->int_value;
    case ExprKind::kFloatImm:
      return a->float_value == b->float_value || (a->float_value != a->float_value && b->float_value != b->float_value);
    case ExprKind::kVar: return false;  // identity only
    case ExprKind::kLoad: if (a->buffer != b->buffer) return false; break;
    case ExprKind::kCall: if (a->name != b->name) return false; break;
    default: break;
  }
  for (std::size_t i = 0; i < a->operands.size(); ++i) {
    if (!ExprEqual(a->operands[i], b->operands[i])) return false;
  }
  return true;
}

std::optional<IntBound> BoundOf(const Expr& e, const VarRanges& ranges) {
  Simplifier s(ranges);
  return s.Bound(s.Run(e));
}

std::optional<IntBound> BoundOfSimplified(const Expr& e, const VarRanges& ranges) {
  return Simplifier(ranges).Bound(e);
}

std::optional<AffineSplit> SplitAffine(const Expr& e, const std::set<const ExprNode*>& free_vars,
                                       const VarRanges& ranges) {
  return Simplifier(ranges).Split(e, free_vars);
}

std::optional<std::vector<std::pair<const ExprNode*, std::int64_t>>> LinearCoefficients(
    const Expr& e, const std::set<const ExprNode*>& vars, const VarRanges& ranges) {
  return Simplifier(ranges).Coefficients(e, vars);
}

PartialCoefficients LinearCoefficientsByVar(const Expr& e, const std::set<const ExprNode*>& vars,
                                            const VarRanges& ranges) {
  return Simplifier(ranges).CoefficientsByVar(e, vars);
}

LinearForm ToLinearForm(const Expr& e, const VarRanges& ranges) { return Simplifier(ranges).Form(e); }

Expr Simplify(const Expr& e, const VarRanges& ranges) { return Simplifier(ranges).Run(e); }

Expr SimplifyKeepingLoads(const Expr& e, const VarRanges& ranges) { return Simplifier(ranges, true).Run(e); }

Expr SimplifyRowMajor(const std::vector<Expr>& indices, const std::vector<std::int64_t>& shape,
                      const VarRanges& ranges) {
  return Simplifier(ranges).RowMajor(indices, shape);
}

}  // namespace tunedb::ir
