// The Schedule class: random-variable tables, transactions and trace
// recording, lookups, loop kinds, annotations and sampling. The larger
// primitives live in loop_transform.cc, block_motion.cc, cache.cc and
// reduction.cc.
#include "ir/schedule/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "ir/factor.h"
#include "ir/mix.h"
#include "ir/schedule/schedule_internal.h"

namespace tunedb::ir {

using sched::Apply;
using sched::Fail;
using sched::In;
using sched::Record;
using sched::Ref;
using sched::Refs;

// ---- state ----------------------------------------------------------------------

BlockRV Schedule::State::AddBlock(std::shared_ptr<BlockNode> b) {
  blocks.push_back(std::move(b));
  return BlockRV{static_cast<int>(blocks.size()) - 1};
}

LoopRV Schedule::State::AddLoop(std::shared_ptr<ForNode> l, LoopEntry::Mark mark) {
  loops.push_back({std::move(l), mark});
  return LoopRV{static_cast<int>(loops.size()) - 1};
}

ExprRV Schedule::State::AddExpr(std::int64_t v) {
  exprs.push_back(v);
  return ExprRV{static_cast<int>(exprs.size()) - 1};
}

std::shared_ptr<BlockNode> Schedule::State::BlockOf(BlockRV rv, const char* primitive) const {
  if (rv.id < 0 || rv.id >= static_cast<int>(blocks.size())) Fail(primitive, "unknown block variable");
  const auto& b = blocks[rv.id];
  if (sched::PathTo(func, b.get()).empty()) {
    Fail(primitive, "block '" + b->name + "' is no longer in the program (an earlier primitive removed it)");
  }
  return b;
}

std::shared_ptr<ForNode> Schedule::State::LoopOf(LoopRV rv, const char* primitive) const {
  if (rv.id < 0 || rv.id >= static_cast<int>(loops.size())) Fail(primitive, "unknown loop variable");
  const LoopEntry& e = loops[rv.id];
  if (e.mark != LoopEntry::kNone) {
    Fail(primitive, std::string("expected a loop, got the ") + (e.mark == LoopEntry::kRoot ? "root" : "inline") +
                        " mark of sample_compute_location");
  }
  if (sched::PathTo(func, e.loop.get()).empty()) {
    Fail(primitive, "loop '" + e.loop->loop_var->name +
                        "' is no longer in the program (an earlier split or fuse replaced it)");
  }
  return e.loop;
}

std::int64_t Schedule::State::ExprOf(ExprRV rv, const char* primitive) const {
  if (rv.id < 0 || rv.id >= static_cast<int>(exprs.size())) Fail(primitive, "unknown integer variable");
  return exprs[rv.id];
}

std::uint64_t Schedule::State::NextRandom() { return Mix64(rand_state += kGoldenGamma); }

std::int64_t Schedule::State::RandomInt(std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(NextRandom() % static_cast<std::uint64_t>(hi - lo));
}

double Schedule::State::RandomUnit() { return static_cast<double>(NextRandom() >> 11) * 0x1.0p-53; }

// ---- construction ---------------------------------------------------------------

Schedule::Schedule(const PrimFunc& func, std::uint64_t seed) : state_(std::make_unique<State>()) {
  state_->func = Clone(func);
  state_->rand_state = seed;
}

namespace {

// A deep copy of the program with the tables remapped to the new nodes.
void CopyState(const Schedule::State& from, Schedule::State& to) {
  std::unordered_map<const StmtNode*, Stmt> copies;
  std::function<Stmt(const Stmt&)> clone = [&](const Stmt& s) -> Stmt {
    if (!s) return nullptr;
    Stmt c;
    switch (s->kind) {
      case StmtKind::kFor: {
        auto n = std::make_shared<ForNode>(static_cast<const ForNode&>(*s));
        n->body = clone(n->body);
        c = n;
        break;
      }
      case StmtKind::kSeq: {
        auto n = std::make_shared<SeqNode>(static_cast<const SeqNode&>(*s));
        for (Stmt& x : n->stmts) x = clone(x);
        c = n;
        break;
      }
      case StmtKind::kIf: {
        auto n = std::make_shared<IfNode>(static_cast<const IfNode&>(*s));
        n->then_case = clone(n->then_case);
        n->else_case = clone(n->else_case);
        c = n;
        break;
      }
      case StmtKind::kStore: c = std::make_shared<StoreNode>(static_cast<const StoreNode&>(*s)); break;
      case StmtKind::kBlock: {
        auto n = std::make_shared<BlockNode>(static_cast<const BlockNode&>(*s));
        n->init = clone(n->init);
        n->body = clone(n->body);
        c = n;
        break;
      }
    }
    copies[s.get()] = c;
    return c;
  };
  to.func = from.func;
  to.func.body = clone(from.func.body);
  to.trace = from.trace;
  to.exprs = from.exprs;
  to.rand_state = from.rand_state;
  to.blocks.clear();
  for (const auto& b : from.blocks) {
    auto it = copies.find(b.get());
    // A removed block keeps its (detached) node: handles to it stay invalid.
    to.blocks.push_back(it != copies.end() ? std::static_pointer_cast<BlockNode>(it->second) : b);
  }
  to.loops.clear();
  for (const LoopEntry& l : from.loops) {
    auto it = l.loop ? copies.find(l.loop.get()) : copies.end();
    to.loops.push_back({it != copies.end() ? std::static_pointer_cast<ForNode>(it->second) : l.loop, l.mark});
  }
}

}  // namespace

Schedule::Schedule(const Schedule& other) : state_(std::make_unique<State>()) { CopyState(*other.state_, *state_); }

Schedule& Schedule::operator=(const Schedule& other) {
  if (this != &other) CopyState(*other.state_, *state_);
  return *this;
}

Schedule::~Schedule() = default;

const PrimFunc& Schedule::func() const { return state_->func; }
const Trace& Schedule::trace() const { return state_->trace; }

// ---- values ----------------------------------------------------------------------

std::int64_t Schedule::Get(ExprRV rv) const { return state_->ExprOf(rv, "get"); }
const ForNode& Schedule::Get(LoopRV rv) const { return *state_->LoopOf(rv, "get"); }
const BlockNode& Schedule::Get(BlockRV rv) const { return *state_->BlockOf(rv, "get"); }
bool Schedule::IsRootMark(LoopRV rv) const {
  return rv.id >= 0 && rv.id < static_cast<int>(state_->loops.size()) && state_->loops[rv.id].mark == LoopEntry::kRoot;
}
bool Schedule::IsInlineMark(LoopRV rv) const {
  return rv.id >= 0 && rv.id < static_cast<int>(state_->loops.size()) &&
         state_->loops[rv.id].mark == LoopEntry::kInline;
}

// ---- lookups -----------------------------------------------------------------------

BlockRV Schedule::GetBlock(const std::string& name, const std::string& func_name) {
  State& s = *state_;
  if (func_name != s.func.name) {
    Fail("get_block", "no function named '" + func_name + "' (the program's function is '" + s.func.name + "')");
  }
  std::vector<BlockNode*> found;
  std::string names;
  for (BlockNode* b : CollectBlocks(s.func)) {
    if (b->name == name) found.push_back(b);
    names += (names.empty() ? "" : ", ") + b->name;
  }
  if (found.empty()) Fail("get_block", "no block named '" + name + "' (blocks: " + names + ")");
  if (found.size() > 1) Fail("get_block", "several blocks are named '" + name + "'");
  auto node = std::static_pointer_cast<BlockNode>(*sched::SlotOf(s.func, found[0]));
  BlockRV rv = s.AddBlock(node);
  Record(s, "GetBlock", {}, {name, func_name}, {Ref(rv)});
  return rv;
}

std::vector<LoopRV> Schedule::GetLoops(BlockRV block) {
  State& s = *state_;
  auto b = s.BlockOf(block, "get_loops");
  std::vector<LoopRV> out;
  for (ForNode* l : sched::LoopsAbove(s.func, b.get())) {
    out.push_back(s.AddLoop(std::static_pointer_cast<ForNode>(*sched::SlotOf(s.func, l))));
  }
  Record(s, "GetLoops", {In(block)}, nlohmann::json::array(), Refs(out));
  return out;
}

namespace {

std::vector<BlockRV> AddBlocks(Schedule::State& s, const std::vector<BlockNode*>& blocks) {
  std::vector<BlockRV> out;
  for (BlockNode* b : blocks) out.push_back(s.AddBlock(std::static_pointer_cast<BlockNode>(*sched::SlotOf(s.func, b))));
  return out;
}

}  // namespace

std::vector<BlockRV> Schedule::GetChildBlocks(BlockOrLoop parent) {
  State& s = *state_;
  std::vector<BlockNode*> blocks;
  if (std::holds_alternative<BlockRV>(parent)) {
    auto b = s.BlockOf(std::get<BlockRV>(parent), "get_child_blocks");
    blocks = sched::BlocksIn(b->body);
  } else {
    auto l = s.LoopOf(std::get<LoopRV>(parent), "get_child_blocks");
    blocks = sched::BlocksIn(l);
  }
  std::vector<BlockRV> out = AddBlocks(s, blocks);
  Record(s, "GetChildBlocks", {In(parent)}, nlohmann::json::array(), Refs(out));
  return out;
}

std::vector<BlockRV> Schedule::GetProducers(BlockRV block) {
  State& s = *state_;
  auto b = s.BlockOf(block, "get_producers");
  sched::BufferSet loaded = sched::LoadedBuffers(*b);
  std::vector<BlockNode*> found;
  for (BlockNode* other : sched::LeafBlocks(s.func)) {
    if (other == b.get()) continue;
    for (const BufferNode* buf : sched::StoredBuffers(*other)) {
      if (loaded.count(buf)) {
        found.push_back(other);
        break;
      }
    }
  }
  std::vector<BlockRV> out = AddBlocks(s, found);
  Record(s, "GetProducers", {In(block)}, nlohmann::json::array(), Refs(out));
  return out;
}

std::vector<BlockNode*> ConsumerBlocks(const PrimFunc& func, const BlockNode& block) {
  sched::BufferSet stored = sched::StoredBuffers(block);
  std::vector<BlockNode*> found;
  for (BlockNode* other : sched::LeafBlocks(func)) {
    if (other == &block) continue;
    for (const BufferNode* buf : sched::LoadedBuffers(*other)) {
      if (stored.count(buf)) {
        found.push_back(other);
        break;
      }
    }
  }
  return found;
}

std::vector<BlockRV> Schedule::GetConsumers(BlockRV block) {
  State& s = *state_;
  auto b = s.BlockOf(block, "get_consumers");
  std::vector<BlockRV> out = AddBlocks(s, ConsumerBlocks(s.func, *b));
  Record(s, "GetConsumers", {In(block)}, nlohmann::json::array(), Refs(out));
  return out;
}

// ---- loop kinds and annotations ----------------------------------------------------

// SetLoopKind, Annotate and Unannotate change one attribute of one node,
// after every check that can refuse them: a refusal leaves nothing to undo,
// and the program's structure, which Apply re-checks, is unchanged. So they
// skip Apply's transaction and checks, which cost as much as the whole
// program and ran for each of the dozens of them that postprocessing
// applies to every candidate.
static void SetLoopKind(Schedule::State& s, LoopRV rv, ForKind kind, const char* primitive, const char* inst) {
  auto loop = s.LoopOf(rv, primitive);
  if (kind == ForKind::kParallel || kind == ForKind::kVectorized) {
    for (BlockNode* b : sched::BlocksIn(loop)) {
      bool uses_loop_in_spatial = false;
      for (std::size_t i = 0; i < b->iter_vars.size(); ++i) {
        bool uses = false;
        VisitExpr(b->bindings[i], [&](const Expr& x) { uses |= x.get() == loop->loop_var.get(); });
        if (!uses) continue;
        if (b->iter_vars[i].kind == IterKind::kReduce) {
          Fail(primitive, "loop " + loop->loop_var->name + " drives the reduction variable " +
                              b->iter_vars[i].var->name + " of block '" + b->name +
                              "'; only loops over spatial variables can run in parallel or as vectors");
        }
        uses_loop_in_spatial = true;
      }
      if (b->init && !uses_loop_in_spatial && loop->extent > 1) {
        Fail(primitive, "block '" + b->name + "' accumulates into the same elements in every iteration of loop " +
                            loop->loop_var->name);
      }
    }
  }
  loop->for_kind = kind;
  Record(s, inst, {InstInput(RVRef{RVKind::kLoop, rv.id})}, nlohmann::json::array(), {});
}

void Schedule::Parallel(LoopRV loop) { SetLoopKind(*state_, loop, ForKind::kParallel, "parallel", "Parallel"); }
void Schedule::Vectorize(LoopRV loop) { SetLoopKind(*state_, loop, ForKind::kVectorized, "vectorize", "Vectorize"); }
void Schedule::Unroll(LoopRV loop) { SetLoopKind(*state_, loop, ForKind::kUnrolled, "unroll", "Unroll"); }

void Schedule::Annotate(BlockOrLoop target, const std::string& key, const AnnotationArg& value) {
  State& s = *state_;
  AnnotationValue v;
  InstInput value_input;
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    v = *i;
    value_input = *i;
  } else if (const auto* str = std::get_if<std::string>(&value)) {
    v = *str;
    value_input = *str;
  } else {
    ExprRV rv = std::get<ExprRV>(value);
    v = s.ExprOf(rv, "annotate");
    value_input = Ref(rv);
  }
  // In place, without Apply (see SetLoopKind).
  if (std::holds_alternative<BlockRV>(target)) {
    s.BlockOf(std::get<BlockRV>(target), "annotate")->annotations[key] = v;
  } else {
    s.LoopOf(std::get<LoopRV>(target), "annotate")->annotations[key] = v;
  }
  Record(s, "Annotate", {In(target), value_input}, {key}, {});
}

void Schedule::Unannotate(BlockOrLoop target, const std::string& key) {
  State& s = *state_;
  // In place, without Apply (see SetLoopKind).
  if (std::holds_alternative<BlockRV>(target)) {
    s.BlockOf(std::get<BlockRV>(target), "unannotate")->annotations.erase(key);
  } else {
    s.LoopOf(std::get<LoopRV>(target), "unannotate")->annotations.erase(key);
  }
  Record(s, "Unannotate", {In(target)}, {key}, {});
}

void Schedule::EnterPostproc() { Record(*state_, "EnterPostproc", {}, nlohmann::json::array(), {}); }

// ---- sampling ------------------------------------------------------------------------

std::vector<ExprRV> Schedule::SamplePerfectTile(LoopRV loop, int n, int max_innermost_factor,
                                                std::optional<std::vector<std::int64_t>> decision) {
  State& s = *state_;
  const char* p = "sample_perfect_tile";
  auto l = s.LoopOf(loop, p);
  if (n < 1) Fail(p, "n must be at least 1, got " + std::to_string(n));
  if (max_innermost_factor == 0 || max_innermost_factor < -1) {
    Fail(p, "max_innermost_factor must be positive (or -1 for no limit)");
  }
  std::int64_t extent = l->extent;
  std::vector<std::int64_t> tiles;
  if (decision) {
    // Replay, repaired as TVM does: walking inward-out, a factor that no
    // longer divides what is left takes all of it.
    if (static_cast<int>(decision->size()) != n) {
      Fail(p, "the decision has " + std::to_string(decision->size()) + " factors for n=" + std::to_string(n));
    }
    tiles = *decision;
    std::int64_t left = extent;
    for (int i = n - 1; i > 0; --i) {
      if (tiles[i] < 1 || left % tiles[i] != 0) tiles[i] = left;
      left /= tiles[i];
    }
    tiles[0] = left;
  } else {
    // The innermost factor uniformly among the divisors allowed; the rest of
    // the extent's prime factors each to a uniformly chosen outer position.
    std::vector<std::int64_t> inner_choices = Divisors(extent);
    if (max_innermost_factor != -1) {
      std::erase_if(inner_choices, [&](std::int64_t d) { return d > max_innermost_factor; });
    }
    tiles.assign(n, 1);
    std::int64_t inner = n == 1 ? extent : inner_choices[s.RandomInt(0, static_cast<std::int64_t>(inner_choices.size()))];
    tiles[n - 1] = inner;
    if (n > 1) {
      for (std::int64_t prime : PrimeFactors(extent / inner)) tiles[s.RandomInt(0, n - 1)] *= prime;
    }
  }
  std::vector<ExprRV> out;
  for (std::int64_t t : tiles) out.push_back(s.AddExpr(t));
  Record(s, "SamplePerfectTile", {In(loop)}, {n, max_innermost_factor}, Refs(out), nlohmann::json(tiles));
  return out;
}

ExprRV Schedule::SampleCategorical(const std::vector<std::int64_t>& candidates, const std::vector<double>& probs,
                                   std::optional<std::int64_t> decision) {
  State& s = *state_;
  const char* p = "sample_categorical";
  if (candidates.empty()) Fail(p, "no candidates");
  if (candidates.size() != probs.size()) {
    Fail(p, std::to_string(candidates.size()) + " candidates but " + std::to_string(probs.size()) + " probabilities");
  }
  double total = 0;
  for (double q : probs) {
    if (!(q >= 0) || !std::isfinite(q)) Fail(p, "probabilities must be finite and non-negative");
    total += q;
  }
  if (total <= 0) Fail(p, "the probabilities sum to zero");
  std::int64_t index = 0;
  if (decision) {
    index = *decision;
    if (index < 0 || index >= static_cast<std::int64_t>(candidates.size())) {
      Fail(p, "decision " + std::to_string(index) + " is not an index of the " +
                  std::to_string(candidates.size()) + " candidates");
    }
  } else {
    double r = s.RandomUnit() * total, acc = 0;
    index = static_cast<std::int64_t>(candidates.size()) - 1;
    for (std::size_t i = 0; i < probs.size(); ++i) {
      acc += probs[i];
      if (r < acc) {
        index = static_cast<std::int64_t>(i);
        break;
      }
    }
  }
  ExprRV out = s.AddExpr(candidates[index]);
  Record(s, "SampleCategorical", {}, {candidates, probs}, {Ref(out)}, nlohmann::json(index));
  return out;
}

namespace {

// The loops where compute_at(block, loop) is legal, in program order, each
// tried and rolled back; the first `limit` of them.
std::vector<std::shared_ptr<ForNode>> LegalComputeAtLoops(Schedule& sch, Schedule::State& s, BlockRV block,
                                                          const char* primitive,
                                                          std::size_t limit = SIZE_MAX) {
  auto b = s.BlockOf(block, primitive);
  std::vector<std::shared_ptr<ForNode>> all_loops;
  VisitStmt(s.func.body, [&](const Stmt& x) {
    if (x->kind == StmtKind::kFor) all_loops.push_back(std::static_pointer_cast<ForNode>(x));
  });
  std::vector<std::shared_ptr<ForNode>> legal;
  for (const auto& loop : all_loops) {
    if (legal.size() >= limit) break;
    if (sched::Contains(loop, b.get())) continue;
    sched::Transaction t(s);
    try {
      sch.ComputeAt(block, s.AddLoop(loop), true, -1);
      legal.push_back(loop);
    } catch (const ScheduleError&) {
    }
  }
  return legal;
}

bool CanInline(Schedule& sch, Schedule::State& s, BlockRV block) {
  sched::Transaction t(s);
  try {
    sch.ComputeInline(block);
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

// Whether sampling offers to inline the block: when it can be inlined and
// at most one block reads it. Inlined into several readers, it is computed
// once per reader; the design space decides that in designs of its own
// (AutoInline), and keeps some stages apart on purpose for their readers
// to share (softmax's exp, search/rules/auto_inline.cc). Offered inline as
// well, half the samples of such a kept stage were inlined again: 64-trial
// sessions of softmax, a causal softmax and a causal attention never found
// their best kernels among them (bench/RESULTS.md, session 80). A replayed
// decision -2 still inlines; only what a fresh sample may pick changes.
bool OfferInline(Schedule& sch, Schedule::State& s, BlockRV block, const char* primitive) {
  return ConsumerBlocks(s.func, *s.BlockOf(block, primitive)).size() <= 1 && CanInline(sch, s, block);
}

}  // namespace

std::vector<std::int64_t> Schedule::ComputeLocationChoices(BlockRV block) {
  const std::size_t loops = LegalComputeAtLoops(*this, *state_, block, "compute_location_choices").size();
  std::vector<std::int64_t> choices;
  if (OfferInline(*this, *state_, block, "compute_location_choices")) choices.push_back(-2);
  choices.push_back(-1);
  for (std::size_t i = 0; i < loops; ++i) choices.push_back(static_cast<std::int64_t>(i));
  return choices;
}

LoopRV Schedule::SampleComputeLocation(BlockRV block, std::optional<std::int64_t> decision) {
  State& s = *state_;
  const char* p = "sample_compute_location";
  std::int64_t chosen;
  std::vector<std::shared_ptr<ForNode>> loops;
  if (decision) {
    // A replay: only the decision's own location is looked for (every
    // candidate replays its trace, so trying every loop each time was most
    // of a replay for workloads with several stages). A decision that no
    // longer names a location (the program changed under a mutated trace)
    // falls back to leaving the block in place.
    s.BlockOf(block, p);
    chosen = *decision;
    if (chosen >= 0) {
      loops = LegalComputeAtLoops(*this, s, block, p, static_cast<std::size_t>(chosen) + 1);
      if (chosen >= static_cast<std::int64_t>(loops.size())) chosen = -1;
    } else if (chosen < -2 || (chosen == -2 && !CanInline(*this, s, block))) {
      chosen = -1;
    }
  } else {
    // Uniform over inline (when offered), the root and each legal loop.
    loops = LegalComputeAtLoops(*this, s, block, p);
    const std::int64_t first = OfferInline(*this, s, block, p) ? -2 : -1;
    chosen = first + s.RandomInt(0, static_cast<std::int64_t>(loops.size()) - first);
  }
  LoopRV out = chosen == -2   ? s.AddLoop(nullptr, LoopEntry::kInline)
               : chosen == -1 ? s.AddLoop(nullptr, LoopEntry::kRoot)
                              : s.AddLoop(loops[static_cast<std::size_t>(chosen)]);
  Record(s, "SampleComputeLocation", {In(block)}, nlohmann::json::array(), {Ref(out)}, nlohmann::json(chosen));
  return out;
}

}  // namespace tunedb::ir
