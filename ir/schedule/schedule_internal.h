// Internals of the schedule module: the schedule's state and the tree
// surgery that primitives share. Not part of the public interface.
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/schedule/schedule.h"
#include "ir/simplify.h"

namespace tunedb::ir {

struct LoopEntry {
  std::shared_ptr<ForNode> loop;  // null for the root and inline marks
  enum Mark { kNone, kRoot, kInline } mark = kNone;
};

struct Schedule::State {
  PrimFunc func;
  Trace trace;
  std::vector<std::shared_ptr<BlockNode>> blocks;  // BlockRV id -> block
  std::vector<LoopEntry> loops;                    // LoopRV id -> loop
  std::vector<std::int64_t> exprs;                 // ExprRV id -> value
  std::uint64_t rand_state = 0;
  // Whether a primitive that fails leaves the schedule as it was. Keeping
  // that promise costs a copy of every node of the program per primitive
  // (Transaction); ReplayTrace turns it off, since a trace that fails to
  // replay throws its schedule away.
  bool undo_failed_primitives = true;

  // ---- random variables ----
  BlockRV AddBlock(std::shared_ptr<BlockNode> b);
  LoopRV AddLoop(std::shared_ptr<ForNode> l, LoopEntry::Mark mark = LoopEntry::kNone);
  ExprRV AddExpr(std::int64_t v);
  // Resolve a handle to a node that is still in the program, or throw
  // ScheduleError("<primitive>: ...").
  std::shared_ptr<BlockNode> BlockOf(BlockRV rv, const char* primitive) const;
  std::shared_ptr<ForNode> LoopOf(LoopRV rv, const char* primitive) const;
  std::int64_t ExprOf(ExprRV rv, const char* primitive) const;

  // ---- randomness (splitmix64) ----
  std::uint64_t NextRandom();
  std::int64_t RandomInt(std::int64_t lo, std::int64_t hi);  // [lo, hi)
  double RandomUnit();                                       // [0, 1)
};

namespace sched {

// Throws ScheduleError("<primitive>: <what>").
[[noreturn]] void Fail(const char* primitive, const std::string& what);

// The most iterations a loop (or block iteration variable) of type `t` can
// count: the variable and the constants beside it (split's and fuse's
// strides, padded extents) have that type, and an int32 constant of 2^31
// would wrap to a negative number. For int64, half the range, so that a
// count plus a factor (an imperfect split's rounding up) cannot overflow.
inline std::int64_t MaxIterations(DataType t) {
  return t == DataType::kInt32 ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max() / 2;
}

// Saves every node of the program and the schedule's tables; restores them
// in place (so handles keep pointing at the same nodes) unless committed.
// The trace is not copied: inside a primitive it only grows (a nested
// primitive records its instruction, which the outer one may pop again),
// so undoing it is cutting it back to its length. Copying it made every
// primitive cost as much as the trace was long (a fifth of a softmax
// session's search time went to it).
class Transaction {
 public:
  explicit Transaction(Schedule::State& state);
  ~Transaction();
  void Commit() { committed_ = true; }

 private:
  Schedule::State& state_;
  Schedule::State saved_tables_;  // all but the trace
  std::size_t trace_size_;
  std::vector<std::pair<StmtNode*, Stmt>> saved_nodes_;
  bool committed_ = false;
};

// ---- navigation ----

// Nodes from the root block down to `target`, both included; empty when
// target is not in the program.
std::vector<StmtNode*> PathTo(const PrimFunc& f, const StmtNode* target);
bool Contains(const Stmt& subtree, const StmtNode* target);
// The pointer that holds `target` (a parent's field or the function body).
Stmt* SlotOf(PrimFunc& f, const StmtNode* target);
// Loops enclosing `target`, outermost first.
std::vector<ForNode*> LoopsAbove(const PrimFunc& f, const StmtNode* target);
// The topmost statement of the loop chain that holds only `block`: walking
// up while the parent is a loop.
StmtNode* ExclusiveTop(const PrimFunc& f, const BlockNode* block);
// The child of the root block's body (or the body itself) containing target.
StmtNode* RootLevelStmt(const PrimFunc& f, const StmtNode* target);

std::vector<BlockNode*> BlocksIn(const Stmt& s);  // pre-order, leaf blocks
std::vector<BlockNode*> LeafBlocks(const PrimFunc& f);
BlockNode* FindBlock(const PrimFunc& f, const std::string& name);

// A few buffers, in the order a block first mentions them. Primitives
// walk these and name the first that fails a check; a std::set of
// pointers would order them by heap address, so an error could name
// another buffer in another process.
class BufferSet {
 public:
  void insert(const BufferNode* b) {
    if (!count(b)) order_.push_back(b);
  }
  std::size_t count(const BufferNode* b) const {
    return std::find(order_.begin(), order_.end(), b) != order_.end() ? 1 : 0;
  }
  std::size_t size() const { return order_.size(); }
  auto begin() const { return order_.begin(); }
  auto end() const { return order_.end(); }

 private:
  std::vector<const BufferNode*> order_;  // a block touches a handful
};

// Buffers a block stores to / loads from (init, then body).
BufferSet StoredBuffers(const BlockNode& b);
BufferSet LoadedBuffers(const BlockNode& b);
// The stores of a block's body (not init), in order.
std::vector<StoreNode*> Stores(const Stmt& s);

// ---- editing ----

void ReplaceStmt(PrimFunc& f, const StmtNode* old_stmt, Stmt replacement);
// Removes a statement; an emptied loop is removed with it and a sequence of
// one is collapsed into its element.
void RemoveStmt(PrimFunc& f, const StmtNode* target);
// Inserts `s` as child `index` of the container `parent_body` (a loop body
// slot): the body becomes a sequence when it is not one.
void InsertAt(Stmt* parent_body, int index, Stmt s);
// Children of a body slot: the sequence's elements, or the one statement.
std::vector<Stmt> Children(const Stmt& body);

// Replaces, bottom-up, every load of `buffer` in e by fn(load).
Expr ReplaceLoads(const Expr& e, const BufferNode* buffer, const std::function<Expr(const Expr&)>& fn);
// Removes a buffer from the root block's allocations.
void RemoveAllocation(PrimFunc& f, const BufferNode* buffer);
bool IsParam(const PrimFunc& f, const BufferNode* buffer);
// A block name not used yet: `name`, else name_1, name_2, ...
std::string UniqueBlockName(const PrimFunc& f, const std::string& name);
// Builds the loop nest of `block` for the iteration ranges [mins[k],
// mins[k] + extents[k]) of its iteration variables: one loop per variable
// named ax0, ax1, ... (unit loops dropped unless preserve_unit_loops), new
// bindings, and a predicate wherever a binding may leave the domain.
Stmt BuildNest(const std::shared_ptr<BlockNode>& block, const std::vector<Expr>& mins,
               const std::vector<std::int64_t>& extents, bool preserve_unit_loops, const VarRanges& outer_ranges);
// Position among `children` for an index argument of compute_at-like
// primitives: -1 the last legal position (ub), -2 the first (lb), else the
// index itself, which must lie in [lb, ub].
int ChoosePosition(int lb, int ub, int index, const char* primitive);

// Loop variable -> extent for every loop in the program.
VarRanges LoopRanges(const PrimFunc& f);
// Simplifies bindings and predicates of every block with the loop ranges;
// a predicate that always holds is dropped.
void NormalizeBindings(PrimFunc& f);
// Reads as TVM lists them: distinct loads of the init and body; a block with
// an init leaves out its own output (the update's read is implied).
void RecomputeRegions(BlockNode& b);

// Checks the invariants every primitive must keep: variables in scope, every
// block reachable, writers of a buffer before its readers. Throws
// ScheduleError("<primitive>: internal error: ...") otherwise.
void CheckProgram(const PrimFunc& f, const char* primitive);

// True when distinct iterations of `loops` (the others held fixed) give
// distinct iteration-variable tuples of block b. Provable shapes: each loop
// enters the bindings linearly, directly or through the floordiv/floormod
// digits of a fuse, every digit of a loop is used once, and within a
// binding the coefficients form a mixed radix (as splits make them).
bool ProvablyInjective(const BlockNode& b, const std::vector<ForNode*>& loops, const VarRanges& ranges);

// For a block with an init, the loops from its outermost reduction loop
// inward must visit each iteration once: a repeated visit inside the
// reduction would add twice (an outer repeat only recomputes from the
// init). Throws ScheduleError("<primitive>: ...") otherwise.
void CheckReductionLoopOrder(const PrimFunc& f, const char* primitive);

// A fresh variable named like `like` with a suffix.
Expr FreshVar(const std::string& name, DataType dtype = DataType::kInt32);
// a && b where either may be null (meaning true).
Expr AndPredicate(const Expr& a, const Expr& b);


// ---- recording ----

inline RVRef Ref(BlockRV rv) { return {RVKind::kBlock, rv.id}; }
inline RVRef Ref(LoopRV rv) { return {RVKind::kLoop, rv.id}; }
inline RVRef Ref(ExprRV rv) { return {RVKind::kExpr, rv.id}; }
inline InstInput In(BlockRV rv) { return Ref(rv); }
inline InstInput In(LoopRV rv) { return Ref(rv); }
inline InstInput In(ExprRV rv) { return Ref(rv); }
inline InstInput In(const BlockOrLoop& rv) {
  return std::holds_alternative<BlockRV>(rv) ? In(std::get<BlockRV>(rv)) : In(std::get<LoopRV>(rv));
}
template <typename RV>
std::vector<RVRef> Refs(const std::vector<RV>& rvs) {
  std::vector<RVRef> out;
  for (const RV& rv : rvs) out.push_back(Ref(rv));
  return out;
}

// Runs a primitive's body inside a transaction, normalizes bindings, checks
// the program, and commits. On any error the schedule is left as it was.
// The IR's own refusals (an expression nested past kMaxExprDepth) are the
// primitive's failure too: the rules and the search take a ScheduleError
// for a schedule that cannot be.
template <typename Fn>
auto Apply(Schedule::State& s, const char* primitive, Fn&& body) {
  std::optional<Transaction> t;
  if (s.undo_failed_primitives) t.emplace(s);
  try {
    auto result = body();
    NormalizeBindings(s.func);
    CheckProgram(s.func, primitive);
    CheckReductionLoopOrder(s.func, primitive);
    if (t) t->Commit();
    return result;
  } catch (const ScheduleError&) {
    throw;
  } catch (const IrError& e) {
    Fail(primitive, e.what());
  }
}

inline void Record(Schedule::State& s, std::string kind, std::vector<InstInput> inputs, nlohmann::json attrs,
                   std::vector<RVRef> outputs, std::optional<nlohmann::json> decision = std::nullopt) {
  s.trace.insts.push_back({std::move(kind), std::move(inputs), std::move(attrs), std::move(outputs)});
  if (decision) s.trace.decisions[s.trace.insts.size() - 1] = *decision;
}

}  // namespace sched
}  // namespace tunedb::ir
