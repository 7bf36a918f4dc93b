#include "measure/versioning.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "ir/dtype.h"
#include "ir/simplify.h"

namespace tunedb::measure {
namespace {

using namespace ir;

bool IsTrue(const Expr& e) {
  std::int64_t v = 0;
  return AsConstInt(e, &v) && v != 0;
}

bool IsBoundCheck(const Expr& e) {
  switch (e->kind) {
    case ExprKind::kLt: case ExprKind::kLe: case ExprKind::kGt: case ExprKind::kGe:
      return IsInt(e->operands[0]->dtype) && e->operands[0]->dtype == e->operands[1]->dtype;
    default: return false;
  }
}

// Loads and calls make a check depend on data, not only on where it is.
bool OnlyArithmetic(const Expr& e) {
  bool ok = true;
  VisitExpr(e, [&](const Expr& x) { ok = ok && x->kind != ExprKind::kLoad && x->kind != ExprKind::kCall; });
  return ok;
}

// The largest modulus of a residue test: a loop unrolled by it is that
// many copies of its body.
constexpr std::int64_t kMaxModulus = 4;

// m when e is a floormod by a constant m in [2, kMaxModulus], else 0.
std::int64_t SmallModulus(const Expr& e) {
  std::int64_t m = 0;
  if (e->kind != ExprKind::kFloorMod || !AsConstInt(e->operands[1], &m)) return 0;
  return m >= 2 && m <= kMaxModulus ? m : 0;
}

// The modulus m of a residue test of `x`: c compares `(a * x + rest) % m`
// (a SmallModulus, a not a multiple of m), so that in a loop over x
// unrolled by m each copy sees one residue. 0 when c has none.
std::int64_t ResidueModulus(const Expr& c, const ExprNode* x, const VarRanges& ranges) {
  std::int64_t modulus = 0;
  VisitExpr(c, [&](const Expr& e) {
    const std::int64_t m = modulus ? 0 : SmallModulus(e);
    if (m == 0 || !UsesVar(e->operands[0], x)) return;
    auto coefficients = LinearCoefficients(e->operands[0], {x}, ranges);
    if (coefficients && coefficients->size() == 1 && coefficients->front().second % m != 0) modulus = m;
  });
  return modulus;
}

// Bound checks are the comparisons that versioning and range splits read;
// residue tests, comparisons of a floormod by a small constant, are the
// ones a loop is unrolled for (ResidueUnroller).
enum class Tests : std::uint8_t { kBounds, kResidues };

bool IsResidueTest(const Expr& e) {
  if (!IsComparison(e->kind) || !IsInt(e->operands[0]->dtype) || !OnlyArithmetic(e)) return false;
  bool residue = false;
  VisitExpr(e, [&](const Expr& x) { residue = residue || SmallModulus(x) != 0; });
  return residue;
}

// The checks of a statement, in order of appearance, each node once: the
// comparisons of if-conditions and select conditions, alone or under `and`.
class CheckCollector {
 public:
  explicit CheckCollector(Tests tests = Tests::kBounds) : tests_(tests) {}

  std::vector<Expr> checks;

  void Collect(const Stmt& s) {
    VisitStmt(s, [&](const Stmt& n) {
      if (n->kind == StmtKind::kIf) {
        const auto& i = static_cast<const IfNode&>(*n);
        Condition(i.condition);
        Selects(i.condition);
      } else if (n->kind == StmtKind::kStore) {
        const auto& st = static_cast<const StoreNode&>(*n);
        for (const Expr& index : st.indices) Selects(index);
        Selects(st.value);
      }
    });
  }

  void Condition(const Expr& c) {
    if (c->kind == ExprKind::kAnd) {
      for (const Expr& operand : c->operands) Condition(operand);
    } else if ((tests_ == Tests::kBounds ? IsBoundCheck(c) : IsResidueTest(c)) && seen_.insert(c.get()).second) {
      checks.push_back(c);
    }
  }

 private:
  Tests tests_;
  std::set<const ExprNode*> seen_;

  void Selects(const Expr& e) {
    VisitExpr(e, [&](const Expr& x) {
      if (x->kind == ExprKind::kSelect) Condition(x->operands[0]);
    });
  }
};

std::set<const ExprNode*> LoopVarsIn(const Stmt& s) {
  std::set<const ExprNode*> vars;
  VisitStmt(s, [&](const Stmt& n) {
    if (n->kind == StmtKind::kFor) vars.insert(static_cast<const ForNode&>(*n).loop_var.get());
  });
  return vars;
}

bool IsZero(const Expr& e) {
  return (e->kind == ExprKind::kIntImm && e->int_value == 0) ||
         (e->kind == ExprKind::kFloatImm && e->float_value == 0.0);
}

bool IsFalse(const Expr& e) {
  std::int64_t v = 1;
  return AsConstInt(e, &v) && v == 0;
}

// e with the nodes of `checks` replaced by `value`, and what that decides
// folded: `true and x` is x, `false and x` is false, select(true, a, b) is
// a and select(false, a, b) is b.
Expr WithChecks(const Expr& e, const std::set<const ExprNode*>& checks, bool value) {
  if (checks.count(e.get())) return BoolImm(value);
  if (e->operands.empty()) return e;
  std::vector<Expr> operands;
  bool changed = false;
  for (const Expr& o : e->operands) {
    operands.push_back(WithChecks(o, checks, value));
    changed = changed || operands.back() != o;
  }
  if (!changed) return e;
  if (e->kind == ExprKind::kAnd) {
    if (IsFalse(operands[0]) || IsFalse(operands[1])) return BoolImm(false);
    if (IsTrue(operands[0])) return operands[1];
    if (IsTrue(operands[1])) return operands[0];
  }
  if (e->kind == ExprKind::kSelect && IsTrue(operands[0])) return operands[1];
  if (e->kind == ExprKind::kSelect && IsFalse(operands[0])) return operands[2];
  return WithOperands(*e, std::move(operands));
}

// e with each select whose condition is a constant replaced by the side
// it takes (simplification decides conditions, not selects).
Expr FoldConstantSelects(const Expr& e) {
  if (e->operands.empty()) return e;
  std::vector<Expr> operands;
  bool changed = false;
  for (const Expr& o : e->operands) {
    operands.push_back(FoldConstantSelects(o));
    changed = changed || operands.back() != o;
  }
  if (e->kind == ExprKind::kSelect && IsTrue(operands[0])) return operands[1];
  if (e->kind == ExprKind::kSelect && IsFalse(operands[0])) return operands[2];
  return changed ? WithOperands(*e, std::move(operands)) : e;
}

// Replaces each statement directly under s by fn(statement), in place: a
// loop's or a block's body, a sequence's statements, an if's branches.
void RewriteChildren(const Stmt& s, const std::function<Stmt(const Stmt&)>& fn) {
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      n.body = fn(n.body);
      return;
    }
    case StmtKind::kSeq:
      for (Stmt& c : static_cast<SeqNode&>(*s).stmts) c = fn(c);
      return;
    case StmtKind::kIf: {
      auto& n = static_cast<IfNode&>(*s);
      n.then_case = fn(n.then_case);
      if (n.else_case) n.else_case = fn(n.else_case);
      return;
    }
    case StmtKind::kStore: return;
    case StmtKind::kBlock: {
      auto& n = static_cast<BlockNode&>(*s);
      n.body = fn(n.body);
      return;
    }
  }
}

// An if whose condition became a constant is the branch it takes.
Stmt FoldConstantIfs(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      n.body = FoldConstantIfs(n.body);
      return s;
    }
    case StmtKind::kSeq:
      for (Stmt& c : static_cast<SeqNode&>(*s).stmts) c = FoldConstantIfs(c);
      return s;
    case StmtKind::kIf: {
      auto& n = static_cast<IfNode&>(*s);
      n.then_case = FoldConstantIfs(n.then_case);
      n.else_case = FoldConstantIfs(n.else_case);
      if (IsTrue(n.condition)) return n.then_case ? n.then_case : MakeSeq({});
      if (IsFalse(n.condition)) return n.else_case ? n.else_case : MakeSeq({});
      return s;
    }
    case StmtKind::kStore: return s;
    case StmtKind::kBlock: {
      auto& n = static_cast<BlockNode&>(*s);
      n.body = FoldConstantIfs(n.body);
      return s;
    }
  }
  return s;
}

// Whether e loads the element that `store` writes.
bool LoadsTheStoredElement(const Expr& e, const StoreNode& store) {
  if (e->kind != ExprKind::kLoad || e->buffer != store.buffer || e->operands.size() != store.indices.size()) {
    return false;
  }
  for (std::size_t i = 0; i < store.indices.size(); ++i) {
    if (!ExprEqual(e->operands[i], store.indices[i])) return false;
  }
  return true;
}

// Whether `value`, stored to `store`'s element, leaves it as it is: the
// element plus zero. Also a float zero, though -0.0 + 0.0 is +0.0: an
// element that a store reads back is a sum's accumulator (nothing else
// reads the element it writes), which starts at +0.0 and never holds -0.0,
// since a sum in round-to-nearest is -0.0 only when both terms are.
bool AddsZeroToItself(const StoreNode& store, const Expr& value) {
  if (value->kind != ExprKind::kAdd) return false;
  for (std::size_t side = 0; side < 2; ++side) {
    if (IsZero(value->operands[1 - side]) && LoadsTheStoredElement(value->operands[side], store)) return true;
  }
  return false;
}

// Whether a store reads the element it writes: an accumulator's update.
bool ReadsItsOwnElement(const StoreNode& store) {
  bool reads = false;
  VisitExpr(store.value, [&](const Expr& x) { reads = reads || LoadsTheStoredElement(x, store); });
  return reads;
}

// Whether s does nothing where `check` fails: it is stores alone (and the
// loops around them), each adding to a sum a term that is zero there: a
// masked term, `C[i, j] += k <= i ? A[i, k] * B[k, j] : 0`.
bool NothingWhereItFails(const Stmt& s, const Expr& check) {
  bool stores = false, nothing = true;
  const std::set<const ExprNode*> failing{check.get()};
  VisitStmt(s, [&](const Stmt& n) {
    if (n->kind == StmtKind::kIf) nothing = false;
    if (n->kind != StmtKind::kStore) return;
    const auto& store = static_cast<const StoreNode&>(*n);
    stores = true;
    nothing = nothing && AddsZeroToItself(store, WithChecks(store.value, failing, false));
  });
  return stores && nothing;
}

// Whether an if in s sits inside one of its loops (`in_loop`: s itself
// does). A masked product's version pays only where its copy leaves the
// register block without branches: a transposed convolution's copies still
// held the skips of their masked steps (MaskSkipper) around the loop of
// its columns; LLVM kept the accumulators in memory, and the kernel ran
// 0.55 ms where it ran 0.26 unversioned (bench/RESULTS.md, session 78).
bool BranchInALoop(const Stmt& s, bool in_loop = false) {
  if (!s) return false;
  switch (s->kind) {
    case StmtKind::kFor: return BranchInALoop(static_cast<const ForNode&>(*s).body, true);
    case StmtKind::kSeq:
      for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) {
        if (BranchInALoop(c, in_loop)) return true;
      }
      return false;
    case StmtKind::kIf: {
      const auto& n = static_cast<const IfNode&>(*s);
      return in_loop || BranchInALoop(n.then_case, in_loop) || BranchInALoop(n.else_case, in_loop);
    }
    case StmtKind::kStore: return false;
    case StmtKind::kBlock: return BranchInALoop(static_cast<const BlockNode&>(*s).body, in_loop);
  }
  return false;
}

// The range of each loop variable under root. A variable of two loops
// (none that lowering makes, but nothing forbids it) gets the larger range:
// a check that holds throughout a larger range holds throughout the smaller
// one.
VarRanges LoopRanges(const Stmt& root) {
  VarRanges ranges;
  VisitStmt(root, [&](const Stmt& s) {
    if (s->kind != StmtKind::kFor) return;
    const auto& n = static_cast<const ForNode&>(*s);
    std::int64_t& extent = ranges[n.loop_var.get()];
    extent = std::max(extent, n.extent);
  });
  return ranges;
}

// The checks that mask a product in a store's selects, `c ? a * b : 0`.
// LLVM fuses a multiply into the add that takes its result, never across a
// select, so each vector register of such a term costs a multiply, a blend
// and an add where an unmasked one costs one multiply-add (a triangular
// matrix's product: 0.79 ms, 0.64 ms versioned; bench/RESULTS.md, session
// 78). A mask on a factor, `(c ? a : 0) * b`, still fuses.
std::set<const ExprNode*> MaskedProductChecks(const Stmt& s) {
  if (s->kind != StmtKind::kStore) return {};
  CheckCollector collector;
  VisitExpr(static_cast<const StoreNode&>(*s).value, [&](const Expr& x) {
    if (x->kind != ExprKind::kSelect) return;
    for (int side = 1; side <= 2; ++side) {
      if (x->operands[side]->kind == ExprKind::kMul && IsZero(x->operands[3 - side])) collector.Condition(x->operands[0]);
    }
  });
  std::set<const ExprNode*> checks;
  for (const Expr& c : collector.checks) checks.insert(c.get());
  return checks;
}

// How often each statement runs per iteration of a loop: the checks that
// run about as often as the loop's busiest store are the ones worth a
// version (a padded matmul's register block: yes; its write-back, 1/100 as
// often: no). A vectorized loop counts once, as its checks run once; but a
// check that differs between its lanes keeps code generation from
// vectorizing the loop at all (codegen.h), which makes it worth a version
// however rarely it runs (a padded copy of B, per column panel). And a
// check the same for all lanes of a loop wider than one vector register is
// shared by several multiply-adds: a 3 x 3 convolution's input checks,
// in blocks of 4 x 64 lanes, cost nothing measurable, and versions of them
// added half to its compile time (bench/RESULTS.md, session 39); unless it
// masks a product, which costs every register (MaskedProductChecks).
struct Weights {
  explicit Weights(int vector_bits, Tests tests = Tests::kBounds) : vector_bits_(vector_bits), tests_(tests) {}

  std::int64_t busiest_store = 0;
  std::unordered_map<const ExprNode*, std::int64_t> check_runs;
  std::set<const ExprNode*> per_lane;  // checks that differ between a vectorized loop's lanes

  void Add(const Stmt& s, std::int64_t runs) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        const auto& n = static_cast<const ForNode&>(*s);
        if (n.for_kind == ForKind::kVectorized) lanes_.push_back(&n);
        Add(n.body, n.for_kind == ForKind::kVectorized ? runs : runs * n.extent);
        if (n.for_kind == ForKind::kVectorized) lanes_.pop_back();
        return;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) Add(c, runs);
        return;
      case StmtKind::kIf: {
        const auto& n = static_cast<const IfNode&>(*s);
        CheckCollector collector(tests_);
        collector.Condition(n.condition);
        Count(collector.checks, runs, n.then_case);
        Add(n.then_case, runs);
        Add(n.else_case, runs);
        return;
      }
      case StmtKind::kStore: {
        busiest_store = std::max(busiest_store, runs);
        CheckCollector collector(tests_);
        collector.Collect(s);
        Count(collector.checks, runs, s);
        return;
      }
      case StmtKind::kBlock: Add(static_cast<const BlockNode&>(*s).body, runs); return;
    }
  }

  std::int64_t Runs(const Expr& check) const {
    auto it = check_runs.find(check.get());
    return it == check_runs.end() ? 0 : it->second;
  }
  bool Hot(const Expr& check) const { return per_lane.count(check.get()) || Runs(check) * 8 >= busiest_store; }
  // A check shared by a wide vector's registers that masks a product
  // (MaskedProductChecks), as often as the busiest store.
  bool HotMaskOfAProduct(const Expr& check) const { return RunsAsMaskOfAProduct(check) * 8 >= busiest_store; }
  std::int64_t RunsAsMaskOfAProduct(const Expr& check) const {
    auto it = masked_product_runs_.find(check.get());
    return it == masked_product_runs_.end() ? 0 : it->second;
  }

 private:
  int vector_bits_;
  Tests tests_;
  std::vector<const ForNode*> lanes_;  // the vectorized loops around
  std::unordered_map<const ExprNode*, std::int64_t> masked_product_runs_;

  // `guarded`: the statement the checks guard (an if's then-branch, or the
  // store whose selects they are).
  void Count(const std::vector<Expr>& checks, std::int64_t runs, const Stmt& guarded) {
    std::optional<std::set<const ExprNode*>> masked_products;  // looked for only where a vector is wide
    for (const Expr& c : checks) {
      bool differs = false;
      for (const ForNode* lane : lanes_) differs = differs || UsesVar(c, lane->loop_var.get());
      if (differs) {
        per_lane.insert(c.get());
      } else if (tests_ == Tests::kBounds && !lanes_.empty() &&
                 lanes_.back()->extent * ElementBits(guarded) > vector_bits_) {
        // Shared by the registers of a wide vector (a residue test's work is
        // not), unless it masks a product.
        if (!masked_products) masked_products = MaskedProductChecks(guarded);
        if (masked_products->count(c.get())) {
          std::int64_t& n = masked_product_runs_[c.get()];
          n = std::max(n, runs);
        }
        continue;
      }
      std::int64_t& n = check_runs[c.get()];
      n = std::max(n, runs);
    }
  }

  static std::int64_t ElementBits(const Stmt& s) {
    std::int64_t bits = 32;
    VisitStmt(s, [&](const Stmt& n) {
      if (n->kind == StmtKind::kStore) bits = 8 * DataTypeBytes(static_cast<const StoreNode&>(*n).buffer->dtype);
    });
    return bits;
  }
};

struct Hold {
  Expr condition;
  bool edge_is_wide = true;  // more than 1/8 of the loop's iterations may fail it
};

// The condition, over the variables outside the loops `inner`, under
// which `check` holds in every iteration of those loops; nullopt when the
// check is not affine in them (or depends on data). `var`, when given:
// the loop around them, whose iterations at the edge fail the condition.
std::optional<Hold> HoldsThroughout(const Expr& check, const std::set<const ExprNode*>& inner,
                                    const ExprNode* var, const VarRanges& ranges) {
  Expr difference = check->operands[0] - check->operands[1];
  std::optional<AffineSplit> split = SplitAffine(difference, inner, ranges);
  if (!split || !OnlyArithmetic(split->fixed)) return std::nullopt;
  // fixed + free OP 0 for every free in [min, max]: its worst case.
  bool upper = check->kind == ExprKind::kLt || check->kind == ExprKind::kLe;
  std::int64_t worst = upper ? split->free.max : split->free.min;
  Expr bound = IntImm(split->fixed->dtype, -worst);
  Hold hold{Simplify(Binary(check->kind, split->fixed, bound), ranges)};
  if (!var) return hold;
  // The iterations of `var` where the inner range (free.max - free.min +
  // 1 wide) straddles the bound: at most that width over var's step,
  // rounded up.
  auto coefficients = LinearCoefficients(split->fixed, {var}, ranges);
  if (coefficients && coefficients->size() == 1) {
    std::int64_t step = std::abs(coefficients->front().second);
    std::int64_t edge = (split->free.max - split->free.min + step) / step;
    hold.edge_is_wide = edge * 8 > ranges.at(var);
  }
  return hold;
}

// The condition under which `check` fails in every iteration of the loops
// `inner`: its negation holds throughout.
std::optional<Expr> FailsThroughout(const Expr& check, const std::set<const ExprNode*>& inner,
                                    const VarRanges& ranges) {
  ExprKind negated = ExprKind::kGe;
  switch (check->kind) {
    case ExprKind::kLt: negated = ExprKind::kGe; break;
    case ExprKind::kLe: negated = ExprKind::kGt; break;
    case ExprKind::kGt: negated = ExprKind::kLe; break;
    case ExprKind::kGe: negated = ExprKind::kLt; break;
    default: return std::nullopt;
  }
  Expr negation = Binary(negated, check->operands[0], check->operands[1]);
  std::optional<Hold> h = HoldsThroughout(negation, inner, nullptr, ranges);
  std::int64_t value = 0;
  if (!h || (AsConstInt(h->condition, &value) && value == 0)) return std::nullopt;
  return h->condition;
}

class Versioner {
 public:
  Versioner(const Stmt& root, int vector_bits) : vector_bits_(vector_bits), ranges_(LoopRanges(root)) {
    std::vector<const ForNode*> loops;
    PlanLevels(root, loops);
  }

  // Versions the loops of s. `pending`: checks of loops around s to be
  // versioned in s; `depth`: versions around s already.
  Stmt Visit(const Stmt& s, const std::set<const ExprNode*>& pending, int depth) {
    if (!s) return s;
    switch (s->kind) {
      case StmtKind::kFor: {
        auto& n = static_cast<ForNode&>(*s);
        if (n.for_kind == ForKind::kVectorized) return s;  // its body is lanes, not iterations
        std::set<const ExprNode*> hot = pending;
        if (depth < kMaxVersionDepth) {
          Weights weights(vector_bits_);
          weights.Add(n.body, 1);
          CheckCollector collector;
          collector.Collect(n.body);
          for (const Expr& c : collector.checks) {
            auto level = level_.find(c.get());
            if (level == level_.end() || level->second != n.loop_var.get()) continue;
            if (weights.Hot(c) || (weights.HotMaskOfAProduct(c) && !BranchInALoop(n.body))) hot.insert(c.get());
          }
        }
        n.body = Place(n.body, hot, depth);
        return s;
      }
      case StmtKind::kSeq:
        for (Stmt& c : static_cast<SeqNode&>(*s).stmts) c = Visit(c, pending, depth);
        return s;
      case StmtKind::kIf: {
        auto& n = static_cast<IfNode&>(*s);
        n.then_case = Visit(n.then_case, pending, depth);
        n.else_case = Visit(n.else_case, pending, depth);
        return s;
      }
      case StmtKind::kStore: return s;
      case StmtKind::kBlock: {
        auto& n = static_cast<BlockNode&>(*s);
        n.body = Visit(n.body, pending, depth);
        return s;
      }
    }
    return s;
  }

 private:
  int vector_bits_;
  VarRanges ranges_;
  // Each check's loop: the one whose iterations get versions for it.
  std::unordered_map<const ExprNode*, const ExprNode*> level_;
  // Checks versioned at a loop of vector lanes alone (PlanCheck), which also
  // get a copy where they fail throughout.
  std::set<const ExprNode*> two_sided_;

  // Picks each check's loop among the loops around it whose variable it
  // uses (neither vectorized nor unrolled, with a loop between it and the
  // check, so that a version holds a loop): the outermost one at whose edge
  // few of its iterations lie (the reduction's last 4 of 132: versioning
  // at its outer loop leaves 1 of 33 iterations checked), else the
  // innermost (the last 16 of 128 rows, tiled 4 x 2 x 16: per iteration of
  // the loop of 2, not of both the 4 and the 2, which would make three
  // copies of the register block where two do).
  //
  // When no loop qualifies, a check that differs between the lanes of
  // vectorized loops inside its innermost loop is versioned there, where a
  // version holds only those lanes: code generation masks both sides of
  // such a select, so that each vector of a concatenation
  // (`j < 1000 ? A[i, j] : B[i, j - 1000]`) was two masked loads and a blend
  // and ran at half a copy's speed (bench/RESULTS.md, session 67). Such a
  // check gets a copy where it fails throughout too (the vectors of B).
  void PlanLevels(const Stmt& s, std::vector<const ForNode*>& loops) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        const auto& n = static_cast<const ForNode&>(*s);
        loops.push_back(&n);
        PlanLevels(n.body, loops);
        loops.pop_back();
        return;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) PlanLevels(c, loops);
        return;
      case StmtKind::kIf: {
        const auto& n = static_cast<const IfNode&>(*s);
        CheckCollector collector;
        collector.Condition(n.condition);
        for (const Expr& c : collector.checks) PlanCheck(c, loops, /*in_a_plain_store=*/false);
        PlanLevels(n.then_case, loops);
        PlanLevels(n.else_case, loops);
        return;
      }
      case StmtKind::kStore: {
        CheckCollector collector;
        collector.Collect(s);
        const bool plain = !ReadsItsOwnElement(static_cast<const StoreNode&>(*s));
        for (const Expr& c : collector.checks) PlanCheck(c, loops, plain);
        return;
      }
      case StmtKind::kBlock: PlanLevels(static_cast<const BlockNode&>(*s).body, loops); return;
    }
  }

  // Picks the loop of one check (PlanLevels). A check of a plain store
  // (not an accumulator's update) whose every level has a wide edge, a
  // diagonal moving with the rows as causal softmax's `j <= i ? exp(...) :
  // 0` does, is versioned around its lanes instead, also where that loop
  // is unrolled: each vector of a row then runs unmasked, as zeros, or
  // masked, where at the row's loop only the last row ran unmasked and
  // every vector computed exp on all its lanes. Not for an accumulator,
  // whose register block a branch between its unrolled rows would break
  // up (MaskedProductChecks), unless the loop around its lanes is serial
  // with a narrow edge: that version is the loop's only statement, an if
  // on a threshold of its variable (ThresholdLoops), and code generation
  // runs it as two loops, with no branch. A dot product of a prime length
  // in 2 jobs of 16 lanes versioned at the jobs ran one job's every step
  // masked, 0.15 ms where 1000000 steps unmasked took 54 us.
  void PlanCheck(const Expr& check, const std::vector<const ForNode*>& loops, bool in_a_plain_store) {
    if (level_.count(check.get())) return;
    const ExprNode* chosen = nullptr;
    bool chosen_edge_is_wide = false;
    const ExprNode* around_lanes = nullptr;
    bool lanes_in_a_serial_loop_with_a_narrow_edge = false;
    for (std::size_t i = 0; i < loops.size(); ++i) {
      const ForNode& loop = *loops[i];
      const bool unrolled = loop.for_kind == ForKind::kUnrolled;
      if (loop.for_kind == ForKind::kVectorized || (unrolled && !in_a_plain_store) || loop.extent < 2) continue;
      if (!UsesVar(check, loop.loop_var.get())) continue;
      std::set<const ExprNode*> inner;
      bool loop_inside = false, differs_between_lanes = false;
      for (std::size_t j = i + 1; j < loops.size(); ++j) {
        inner.insert(loops[j]->loop_var.get());
        loop_inside = loop_inside || loops[j]->for_kind != ForKind::kVectorized;
        differs_between_lanes = differs_between_lanes || UsesVar(check, loops[j]->loop_var.get());
      }
      if (!loop_inside && !differs_between_lanes) continue;
      if (unrolled && loop_inside) continue;  // an unrolled loop only around the lanes
      std::optional<Hold> hold = HoldsThroughout(check, inner, loop.loop_var.get(), ranges_);
      if (!hold) continue;
      if (!loop_inside) {
        around_lanes = loop.loop_var.get();
        lanes_in_a_serial_loop_with_a_narrow_edge = loop.for_kind == ForKind::kSerial && !hold->edge_is_wide;
        continue;
      }
      chosen = loop.loop_var.get();
      chosen_edge_is_wide = hold->edge_is_wide;
      if (!hold->edge_is_wide) break;
    }
    if (around_lanes && (!chosen || (in_a_plain_store && chosen_edge_is_wide))) {
      chosen = around_lanes;
      two_sided_.insert(check.get());
    } else if (around_lanes && chosen_edge_is_wide && lanes_in_a_serial_loop_with_a_narrow_edge) {
      chosen = around_lanes;
    }
    level_[check.get()] = chosen;
  }

  // Versions the statements of a loop body for the `hot` checks, each
  // statement on its own (through sequences, allocation scopes and ifs), so
  // that the multiply-adds' checks do not duplicate a packing copy beside
  // them, and an if around a loop (a masked sum's skip, MaskSkipper) hides
  // none of the loop's checks.
  // A loop whose `hot` checks run far less often than its busiest store is
  // entered, and the version made closer to them: a write-back's column
  // check, versioned around the write-back's loop and not around the
  // register block beside it.
  Stmt Place(const Stmt& s, const std::set<const ExprNode*>& hot, int depth) {
    if (!s) return s;
    if (s->kind == StmtKind::kSeq) {
      for (Stmt& c : static_cast<SeqNode&>(*s).stmts) c = Place(c, hot, depth);
      return s;
    }
    if (s->kind == StmtKind::kBlock) {
      auto& n = static_cast<BlockNode&>(*s);
      n.body = Place(n.body, hot, depth);
      return s;
    }
    if (s->kind == StmtKind::kIf) {
      auto& n = static_cast<IfNode&>(*s);
      n.then_case = Place(n.then_case, hot, depth);
      n.else_case = Place(n.else_case, hot, depth);
      return s;
    }
    CheckCollector collector;
    collector.Collect(s);
    std::vector<Expr> checks;
    for (const Expr& c : collector.checks) {
      if (hot.count(c.get())) checks.push_back(c);
    }
    // A statement without a loop would trade each check for a branch.
    if (checks.empty() || s->kind != StmtKind::kFor) return Visit(s, {}, depth);
    if (static_cast<const ForNode&>(*s).for_kind != ForKind::kUnrolled && Minor(s, checks)) {
      std::set<const ExprNode*> pending;
      for (const Expr& c : checks) pending.insert(c.get());
      return Visit(s, pending, depth);
    }
    std::set<const ExprNode*> inner = LoopVarsIn(s);
    std::set<const ExprNode*> removed;
    std::vector<Expr> holds;
    for (const Expr& check : checks) {
      std::optional<Hold> h = HoldsThroughout(check, inner, nullptr, ranges_);
      std::int64_t value = 0;
      if (!h || (AsConstInt(h->condition, &value) && value == 0)) continue;
      removed.insert(check.get());
      if (IsTrue(h->condition)) continue;
      bool known = false;
      for (const Expr& other : holds) known = known || ExprEqual(other, h->condition);
      if (!known) holds.push_back(h->condition);
    }
    if (removed.empty()) return Visit(s, {}, depth);
    auto copy_with = [&](bool value) {
      Stmt copy = Clone(s);
      RewriteExprs(copy, [&](const Expr& e) { return WithChecks(e, removed, value); });
      return Visit(FoldConstantIfs(copy), {}, depth + 1);
    };
    Stmt clean = copy_with(true);
    if (holds.empty()) return clean;
    Expr condition = holds[0];
    for (std::size_t k = 1; k < holds.size(); ++k) condition = condition && holds[k];
    // The checked copy runs at the edges only, and stays as it is: versions
    // of it too would double the code at each level for a small share of
    // the work (a padded matmul's candidates compiled 1.6x slower so).
    Stmt checked = Visit(s, {}, kMaxVersionDepth);
    // A check versioned around vector lanes alone also gets the copy where
    // it fails throughout (PlanCheck).
    if (removed.size() == 1 && two_sided_.count(*removed.begin())) {
      auto check = std::find_if(checks.begin(), checks.end(), [&](const Expr& c) { return removed.count(c.get()); });
      if (std::optional<Expr> fails = FailsThroughout(*check, inner, ranges_)) {
        checked = MakeIf(*fails, copy_with(false), checked);
      }
    }
    return MakeIf(condition, clean, checked);
  }

  // Whether `checks` run less than 1/8 as often as the busiest store of s.
  bool Minor(const Stmt& s, const std::vector<Expr>& checks) const {
    Weights weights(vector_bits_);
    weights.Add(s, 1);
    std::int64_t runs = 0;
    for (const Expr& c : checks) runs = std::max({runs, weights.Runs(c), weights.RunsAsMaskOfAProduct(c)});
    return runs * 8 < weights.busiest_store;
  }
};

// s without the stores that add zero to their own element (a copy whose
// mask folded to false: AddsZeroToItself) and the loops, ifs, sequences
// and blocks they leave empty; nullptr when nothing is left.
Stmt DropNoOps(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      n.body = DropNoOps(n.body);
      return n.body ? s : nullptr;
    }
    case StmtKind::kSeq: {
      std::vector<Stmt> kept;
      for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) {
        if (Stmt k = DropNoOps(c)) kept.push_back(k);
      }
      if (kept.empty()) return nullptr;
      return kept.size() == 1 ? kept[0] : MakeSeq(std::move(kept));
    }
    case StmtKind::kIf: {
      auto& n = static_cast<IfNode&>(*s);
      n.then_case = DropNoOps(n.then_case);
      n.else_case = DropNoOps(n.else_case);
      if (!n.then_case && !n.else_case) return nullptr;
      if (!n.then_case) return MakeIf(Not(n.condition), n.else_case);
      return s;
    }
    case StmtKind::kStore: {
      const auto& n = static_cast<const StoreNode&>(*s);
      return AddsZeroToItself(n, n.value) ? nullptr : s;
    }
    case StmtKind::kBlock: {
      auto& n = static_cast<BlockNode&>(*s);
      n.body = DropNoOps(n.body);
      return n.body ? s : nullptr;
    }
  }
  return s;
}

// Unrolls a loop by the modulus of its body's residue tests, where they
// mask the terms of sums, so that each copy sees one residue of the loop's
// variable (before the range splits and versioning below, which then see
// each copy). A transposed convolution of stride 2 written as a gather
// reads input row `(h + 1 - kh) / 2` where `(h + 1 - kh) % 2 == 0`: three
// quarters of its multiply-adds were masked to zero (1.73 ms, about 30
// GFLOP/s of useful work; bench/RESULTS.md, session 77). With the loop of
// kh unrolled by 2, a copy's test is decided by h alone: where a loop
// inside still moves it (the tile's rows, unrolled next), it folds there,
// the copies where it fails add zero and are dropped (DropNoOps), and the
// input index is affine again; where only loops outside decide it (h's
// parallel loop), it guards the copy, `if (h + 1) % 2 == 0: <copy>`. An
// unroll keeps the order of the iterations, so it needs no look at what
// they depend on. A test that masks no sum's term is left alone: a copy
// would drop no work, and LLVM's own unrolling folds such selects where it
// pays (unrolled here, a zero insertion inlined into a convolution,
// `select(m, X, 0) * W`, ran 0.41 ms, 0.36 ms as it was). The copies of
// one path multiply: at most kMaxCopies.
class ResidueUnroller {
 public:
  ResidueUnroller(const Stmt& root, int vector_bits) : vector_bits_(vector_bits), ranges_(LoopRanges(root)) {}

  // `copies`: the copies that unrolls around s made of it.
  Stmt Visit(const Stmt& s, std::int64_t copies) {
    if (!s) return s;
    if (s->kind == StmtKind::kFor) {
      auto& n = static_cast<ForNode&>(*s);
      if (n.for_kind == ForKind::kVectorized) return s;
      if (n.for_kind == ForKind::kSerial || n.for_kind == ForKind::kUnrolled) {
        if (std::optional<Stmt> unrolled = Unroll(n, copies)) return *unrolled;
      }
    }
    RewriteChildren(s, [&](const Stmt& c) { return Visit(c, copies); });
    return s;
  }

 private:
  static constexpr std::int64_t kMaxCopies = 16;

  int vector_bits_;
  VarRanges ranges_;

  // The loop unrolled by the modulus of its hot residue tests that mask
  // every term its body adds (NothingWhereItFails); nullopt when it has
  // none, or too few iterations, or the copies would be too many.
  std::optional<Stmt> Unroll(const ForNode& loop, std::int64_t copies) {
    const ExprNode* x = loop.loop_var.get();
    Weights weights(vector_bits_, Tests::kResidues);
    weights.Add(loop.body, 1);
    CheckCollector collector(Tests::kResidues);
    collector.Collect(loop.body);
    std::int64_t m = 0;
    std::vector<Expr> tests;
    for (const Expr& c : collector.checks) {
      // The cheap questions first: a walk of c, then of the body.
      const std::int64_t modulus = ResidueModulus(c, x, ranges_);
      if (modulus == 0 || (m != 0 && modulus != m) || !weights.Hot(c) || !NothingWhereItFails(loop.body, c)) {
        continue;
      }
      m = modulus;
      tests.push_back(c);
    }
    if (tests.empty() || loop.extent < m || copies * m > kMaxCopies) return std::nullopt;
    const std::set<const ExprNode*> inner = LoopVarsIn(loop.body);
    const std::int64_t groups = loop.extent / m;
    Expr group = MakeVar(loop.loop_var->name, loop.loop_var->dtype);
    ranges_[group.get()] = groups;
    // The body where x is `at`: each test decided there folded, or guarding
    // the copy when only variables outside the loop decide it (where it
    // fails, the copy adds zero to its sums: nothing).
    auto copy_at = [&](const Expr& at) -> Stmt {
      std::set<const ExprNode*> holds, fails;
      std::vector<Expr> guards;
      // Unit loops inside are at 0 throughout, so they decide nothing (a
      // split's unit factors: h_2 in range(1)).
      VarMap at_x{{x, at}};
      for (const ExprNode* v : inner) {
        if (ranges_.at(v) == 1) at_x[v] = IntImm(v->dtype, 0);
      }
      for (const Expr& t : tests) {
        Expr value = Simplify(Substitute(t, at_x), ranges_);
        bool varies = UsesVar(value, group.get());
        for (const ExprNode* v : inner) varies = varies || UsesVar(value, v);
        if (IsTrue(value)) {
          holds.insert(t.get());
        } else if (IsFalse(value)) {
          fails.insert(t.get());
        } else if (!varies) {
          holds.insert(t.get());
          guards.push_back(value);
        }
      }
      Stmt body = Clone(loop.body);
      RewriteExprs(body, [&](const Expr& e) { return WithChecks(WithChecks(e, holds, true), fails, false); });
      SubstituteInPlace(body, {{x, at}});
      RewriteExprs(body, [&](const Expr& e) { return FoldConstantSelects(Simplify(e, ranges_)); });
      body = DropNoOps(FoldConstantIfs(body));
      if (!body) return nullptr;
      body = Visit(body, copies * m);
      for (const Expr& g : guards) body = MakeIf(g, body);
      return body;
    };
    std::vector<Stmt> pieces, group_body;
    for (std::int64_t r = 0; r < m; ++r) {
      const Expr residue = IntImm(loop.loop_var->dtype, r);
      if (Stmt c = copy_at(groups == 1 ? residue : group * IntImm(loop.loop_var->dtype, m) + residue)) {
        group_body.push_back(c);
      }
    }
    if (!group_body.empty() && groups == 1) {
      pieces = std::move(group_body);
    } else if (!group_body.empty()) {
      Stmt unrolled = MakeFor(group, groups, MakeSeq(std::move(group_body)), loop.for_kind);
      static_cast<ForNode&>(*unrolled).annotations = loop.annotations;
      pieces.push_back(unrolled);
    }
    // The iterations past the last whole group, one copy each.
    for (std::int64_t x_at = groups * m; x_at < loop.extent; ++x_at) {
      if (Stmt c = copy_at(IntImm(loop.loop_var->dtype, x_at))) pieces.push_back(c);
    }
    return MakeSeq(std::move(pieces));
  }
};

// Splits serial loops' ranges where their checks change (TVM's
// LoopPartition), before the versioning above. Versioning makes one copy
// where every check holds, which serves checks that hold on most of a
// loop's range; but reflect padding reads row `h < 3 ? 3 - h : (h >= 131 ?
// 257 - h : h - 3)`, whose two checks never hold together, so its one
// clean copy was dead and every row ran checked, and the checks on a row's
// own elements, with no loop inside to version, were never versioned at all
// (0.44 ms where a copy of that size takes 45 us; bench/RESULTS.md, session
// 76). A check whose break points on the loop's variable are constants
// (its other variables all inside the loop) is instead decided range by
// range: h in [0, 3), [3, 131) and [131, 134), each loop with its checks
// folded, and the middle one a plain copy for LLVM to vectorize.
class RangeSplitter {
 public:
  RangeSplitter(const Stmt& root, int vector_bits) : vector_bits_(vector_bits), ranges_(LoopRanges(root)) {}

  // `depth`: splits around s already.
  Stmt Visit(const Stmt& s, int depth) {
    if (!s) return s;
    if (s->kind == StmtKind::kFor) {
      auto& n = static_cast<ForNode&>(*s);
      if (n.for_kind == ForKind::kVectorized) return s;
      if (n.for_kind == ForKind::kSerial && depth < kMaxSplitDepth) {
        if (std::optional<Stmt> split = Split(n, depth)) return *split;
      }
    }
    RewriteChildren(s, [&](const Stmt& c) { return Visit(c, depth); });
    return s;
  }

 private:
  // Each split copies the loop's body once a range: at most this many
  // ranges a loop (a concatenation of four along it), and splits nested at
  // most this deep (a padded plane's rows, then each row's elements).
  static constexpr std::size_t kMaxRanges = 4;
  static constexpr int kMaxSplitDepth = 2;

  enum class State : std::uint8_t { kHolds, kFails, kMixed };

  // A check of the loop's body as a function of the loop's variable x:
  // lhs - rhs = coefficient * x + constant + (inner), with (inner), the
  // part that the loops inside move, in [free.min, free.max].
  struct Line {
    Expr check;
    std::int64_t coefficient;
    std::int64_t constant;
    IntBound free;

    static bool Satisfies(ExprKind kind, __int128 v) {
      switch (kind) {
        case ExprKind::kLt: return v < 0;
        case ExprKind::kLe: return v <= 0;
        case ExprKind::kGt: return v > 0;
        default: return v >= 0;  // kGe
      }
    }
    State At(std::int64_t x) const {
      __int128 base = static_cast<__int128>(coefficient) * x + constant;
      bool low = Satisfies(check->kind, base + free.min), high = Satisfies(check->kind, base + free.max);
      if (low && high) return State::kHolds;
      if (!low && !high) return State::kFails;
      return State::kMixed;
    }
    // The x in (0, extent) where the state differs from the state at x - 1.
    // Along x the state runs holds, mixed, fails (or back), so
    // |rank(x) - rank(0)| grows with x, and the x where it first reaches 1
    // and 2 are found by bisection.
    void Changes(std::int64_t extent, std::set<std::int64_t>& out) const {
      auto rank = [&](std::int64_t x) {
        State s = At(x);
        return s == State::kHolds ? 0 : s == State::kMixed ? 1 : 2;
      };
      const int first = rank(0);
      for (int distance = 1; distance <= 2; ++distance) {
        std::int64_t lo = 1, hi = extent;  // the first x with the distance is in [lo, hi]; extent: none
        while (lo < hi) {
          std::int64_t mid = lo + (hi - lo) / 2;
          if (std::abs(rank(mid) - first) >= distance) hi = mid; else lo = mid + 1;
        }
        if (lo < extent) out.insert(lo);
      }
    }
  };

  int vector_bits_;
  VarRanges ranges_;

  std::optional<Line> LineOf(const Expr& check, const ExprNode* x, const std::set<const ExprNode*>& inner) const {
    std::optional<AffineSplit> split = SplitAffine(check->operands[0] - check->operands[1], inner, ranges_);
    if (!split || !OnlyArithmetic(split->fixed)) return std::nullopt;
    LinearForm form = ToLinearForm(split->fixed, ranges_);
    if (form.terms.size() != 1 || form.terms[0].first.get() != x || form.terms[0].second == 0) return std::nullopt;
    return Line{check, form.terms[0].second, form.constant, split->free};
  }

  // The loop split into ranges, each with the checks that are decided
  // there folded; nullopt when no hot check changes within the loop.
  std::optional<Stmt> Split(const ForNode& loop, int depth) {
    const ExprNode* x = loop.loop_var.get();
    Weights weights(vector_bits_);
    weights.Add(loop.body, 1);
    CheckCollector collector;
    collector.Collect(loop.body);
    std::set<const ExprNode*> inner = LoopVarsIn(loop.body);
    std::vector<Line> lines;
    for (const Expr& c : collector.checks) {
      if (!UsesVar(c, x) || !weights.Hot(c)) continue;
      if (std::optional<Line> line = LineOf(c, x, inner)) lines.push_back(*line);
    }
    if (lines.empty()) return std::nullopt;
    std::set<std::int64_t> changes{0};
    for (const Line& line : lines) line.Changes(loop.extent, changes);
    if (changes.size() < 2 || changes.size() > kMaxRanges) return std::nullopt;
    const std::vector<std::int64_t> starts(changes.begin(), changes.end());
    // Where every check holds or is mixed, versioning's copy where they hold
    // serves as well, without a copy per range (a padded matmul's last tile
    // of rows, a convolution's border rows).
    bool fails_somewhere = false;
    for (const Line& line : lines) {
      for (std::int64_t begin : starts) fails_somewhere = fails_somewhere || line.At(begin) == State::kFails;
    }
    if (!fails_somewhere) return std::nullopt;
    std::vector<Stmt> pieces;
    for (std::size_t r = 0; r < starts.size(); ++r) {
      const std::int64_t begin = starts[r], end = r + 1 < starts.size() ? starts[r + 1] : loop.extent;
      std::set<const ExprNode*> holds, fails;
      for (const Line& line : lines) {
        State state = line.At(begin);
        if (state == State::kHolds) holds.insert(line.check.get());
        if (state == State::kFails) fails.insert(line.check.get());
      }
      Stmt body = Clone(loop.body);
      RewriteExprs(body, [&](const Expr& e) { return WithChecks(WithChecks(e, holds, true), fails, false); });
      // A range of one iteration is its body at that x: the vector across a
      // concatenation's seam then selects by its lanes alone, a constant
      // mask (codegen.h).
      const bool single = end - begin == 1;
      Expr var = MakeVar(loop.loop_var->name, loop.loop_var->dtype);
      ranges_[var.get()] = end - begin;
      const Expr start = IntImm(loop.loop_var->dtype, begin);
      SubstituteInPlace(body, {{x, single ? start : var + start}});
      RewriteExprs(body, [&](const Expr& e) { return Simplify(e, ranges_); });
      body = Visit(FoldConstantIfs(body), depth + 1);
      if (single) {
        pieces.push_back(body);
        continue;
      }
      Stmt piece = MakeFor(var, end - begin, body, loop.for_kind);
      static_cast<ForNode&>(*piece).annotations = loop.annotations;
      pieces.push_back(piece);
    }
    return MakeSeq(std::move(pieces));
  }
};

// Skips the iterations of a loop in which a mask fails throughout, where
// the loop's body adds masked terms to sums and nothing else: `for k_0:
// if not <k_0 * 64 - rows' last > 0>: <body>`. A triangular matrix's
// product (`k <= i ? A[i, k] * B[k, j] : 0`) did all of a full product's
// multiply-adds and masked half of them (bench/RESULTS.md, session 76).
// Each mask is skipped at the outermost loop where it can fail throughout:
// a guard there costs a branch per iteration of that loop, and none of the
// loop's work; guards further in would cost branches in the register
// block, which kept its accumulators in memory across them (1.54 to
// 1.98 ms). Unlike versioning, there is no copy.
class MaskSkipper {
 public:
  explicit MaskSkipper(const Stmt& root) : ranges_(LoopRanges(root)) {}

  // `skipped`: the masks skipped by a loop around s already.
  Stmt Visit(const Stmt& s, const std::set<const ExprNode*>& skipped) {
    if (!s) return s;
    std::set<const ExprNode*> inside = skipped;
    Stmt result = s;
    if (s->kind == StmtKind::kFor) {
      auto& n = static_cast<ForNode&>(*s);
      if (n.for_kind == ForKind::kVectorized) return s;
      CheckCollector collector;
      collector.Collect(n.body);
      const std::set<const ExprNode*> inner = LoopVarsIn(n.body);
      // Each mask judged on the body as it was (a band's two sides both),
      // then the guards put around it, or around the whole loop where its
      // variable does not move the mask: no step of a symmetric product's
      // reduction moves `j <= i`, and its blocks above the diagonal skip
      // their loop of k (the guard went to the rows inside each step of k,
      // and the accumulators to memory).
      std::vector<Expr> whole, steps;
      for (const Expr& c : collector.checks) {
        if (inside.count(c.get()) || !NothingWhereItFails(n.body, c)) continue;
        if (std::optional<Expr> fails = FailsThroughout(c, inner, ranges_)) {
          (UsesVar(c, n.loop_var.get()) ? steps : whole).push_back(Not(*fails));
          inside.insert(c.get());
        }
      }
      for (const Expr& g : steps) n.body = MakeIf(g, n.body);
      for (const Expr& g : whole) result = MakeIf(g, result);
    }
    RewriteChildren(s, [&](const Stmt& c) { return Visit(c, inside); });
    return result;
  }

 private:
  VarRanges ranges_;
};

// `x < bound`, equivalent to condition c inside x's loop: c is a
// comparison (or its negation) affine in x, its other terms fixed in the
// loop. `holds_below`: whether c holds where x < bound.
struct Threshold {
  Expr bound;
  bool holds_below;
};

std::optional<Threshold> ThresholdOf(const Expr& c, const Expr& x, const VarRanges& ranges) {
  bool negated = false;
  Expr comparison = c;
  while (comparison->kind == ExprKind::kNot) {
    negated = !negated;
    comparison = comparison->operands[0];
  }
  if (!IsBoundCheck(comparison) || !OnlyArithmetic(comparison) || comparison->operands[0]->dtype != x->dtype) {
    return std::nullopt;
  }
  // c holds where sign * (lhs - rhs) + shift >= 0: the four comparisons as one.
  const ExprKind kind = comparison->kind;
  const std::int64_t sign = kind == ExprKind::kLt || kind == ExprKind::kLe ? -1 : 1;
  const std::int64_t shift = kind == ExprKind::kLt || kind == ExprKind::kGt ? -1 : 0;
  LinearForm form = ToLinearForm(comparison->operands[0] - comparison->operands[1], ranges);
  // That is, a * x + rest >= 0 with rest = sum(terms) + constant.
  std::int64_t a = 0, constant = 0;
  std::vector<std::pair<Expr, std::int64_t>> terms;
  if (__builtin_mul_overflow(form.constant, sign, &constant) || __builtin_add_overflow(constant, shift, &constant)) {
    return std::nullopt;
  }
  for (const auto& [atom, coefficient] : form.terms) {
    std::int64_t scaled = 0;
    if (__builtin_mul_overflow(coefficient, sign, &scaled)) return std::nullopt;
    if (atom.get() == x.get()) {
      a = scaled;
    } else if (UsesVar(atom, x.get())) {
      return std::nullopt;
    } else {
      terms.emplace_back(atom, scaled);
    }
  }
  if (a == 0) return std::nullopt;
  const DataType t = x->dtype;
  // For a > 0, c holds from ceil(-rest / a) = floordiv(a - 1 - rest, a)
  // up; for a < 0, below floordiv(rest, -a) + 1.
  const std::int64_t direction = a > 0 ? -1 : 1;
  std::int64_t offset = 0;
  if (__builtin_mul_overflow(constant, direction, &offset) || (a > 0 && __builtin_add_overflow(offset, a - 1, &offset))) {
    return std::nullopt;
  }
  Expr numerator = IntImm(t, offset);
  for (const auto& [atom, coefficient] : terms) numerator = numerator + atom * IntImm(t, coefficient * direction);
  Expr bound = FloorDiv(numerator, IntImm(t, a > 0 ? a : -a));
  if (a < 0) bound = bound + IntImm(t, 1);
  return Threshold{Simplify(bound, ranges), (a < 0) != negated};
}

// Whether x indexes an access of a register block's buffer (scope
// "local") in s.
bool IndexesALocalBuffer(const Stmt& s, const ExprNode* x) {
  bool found = false;
  auto index_uses_x = [&](const std::vector<Expr>& indices) {
    for (const Expr& i : indices) found = found || UsesVar(i, x);
  };
  VisitStmt(s, [&](const Stmt& n) {
    if (n->kind != StmtKind::kStore) return;
    const auto& store = static_cast<const StoreNode&>(*n);
    if (store.buffer->scope == "local") index_uses_x(store.indices);
    VisitExpr(store.value, [&](const Expr& e) {
      if (e->kind == ExprKind::kLoad && e->buffer->scope == "local") index_uses_x(e->operands);
    });
  });
  return found;
}

// An if that is the only statement of a serial loop's body, on a
// threshold of the loop's variable (a version's `i_0 * 500016 + i_1 * 16 +
// 15 < 1000003` around a dot product's lanes, a masked sum's skip of its
// steps), is written `if x < T`, the iterations below T in its first
// branch; code generation runs such a loop as two loops, [0, T) and [T,
// extent), with no branch in either (codegen.h). The same for the ifs that
// are the only statement of such an if's branch. Not a loop whose
// variable indexes a register block's accumulators: LLVM unrolls such a
// loop whole and keeps each accumulator in a register, which two loops of
// unknown length prevent (a transposed convolution's 4 columns, so split,
// ran 0.83 ms where it ran 0.41; bench/RESULTS.md, session 86). Nor a
// loop of fewer than kMinIterations: LLVM unrolls it whole as it is, and a
// branch per iteration costs little there (a causal softmax's 4 vectors
// of a row, split, ran 6% slower).
class ThresholdLoops {
 public:
  explicit ThresholdLoops(const Stmt& root) : ranges_(LoopRanges(root)) {}

  Stmt Visit(const Stmt& s) {
    if (!s) return s;
    if (s->kind == StmtKind::kFor) {
      auto& n = static_cast<ForNode&>(*s);
      // The body's walk for a local buffer only where there is an if to rewrite.
      if (n.for_kind == ForKind::kSerial && n.extent >= kMinIterations && n.body->kind == StmtKind::kIf &&
          !IndexesALocalBuffer(n.body, n.loop_var.get())) {
        n.body = Branches(n.body, n.loop_var);
      }
    }
    RewriteChildren(s, [&](const Stmt& c) { return Visit(c); });
    return s;
  }

 private:
  static constexpr std::int64_t kMinIterations = 16;

  VarRanges ranges_;

  Stmt Branches(const Stmt& s, const Expr& x) {
    if (!s || s->kind != StmtKind::kIf) return s;
    auto& n = static_cast<IfNode&>(*s);
    std::optional<Threshold> threshold = ThresholdOf(n.condition, x, ranges_);
    if (!threshold) return s;
    Stmt below = Branches(threshold->holds_below ? n.then_case : n.else_case, x);
    Stmt above = Branches(threshold->holds_below ? n.else_case : n.then_case, x);
    return MakeIf(Binary(ExprKind::kLt, x, threshold->bound), below ? below : MakeSeq({}), above);
  }
};

}  // namespace

PrimFunc VersionBoundsChecks(const PrimFunc& lowered, int vector_bits) {
  // Most candidates (every unpadded matmul's) have no check: they are
  // compiled as they are, without a copy or a look at each loop.
  CheckCollector collector, residues(Tests::kResidues);
  collector.Collect(lowered.body);
  residues.Collect(lowered.body);
  if (collector.checks.empty() && residues.checks.empty()) return lowered;
  PrimFunc f = Clone(lowered);
  if (!residues.checks.empty()) f.body = ResidueUnroller(f.body, vector_bits).Visit(f.body, 1);
  f.body = RangeSplitter(f.body, vector_bits).Visit(f.body, 0);
  f.body = MaskSkipper(f.body).Visit(f.body, {});
  f.body = Versioner(f.body, vector_bits).Visit(f.body, {}, 0);
  f.body = ThresholdLoops(f.body).Visit(f.body);
  return f;
}

}  // namespace tunedb::measure
