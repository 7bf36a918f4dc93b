// compute_at, reverse_compute_at, compute_inline, reverse_compute_inline.
//
// compute_at moves a producer under a loop of its consumers and shrinks its
// loops to the region those consumers read in one iteration of the loop;
// reverse_compute_at moves a consumer under a loop of its producers and
// shrinks it to the region they write in one iteration. Regions come from
// the affine analysis of access indices (sched::AccessRegion); a read region
// that cannot be analysed falls back to the whole dimension (correct, just
// recomputing more), a written region that cannot be analysed is an error
// (consuming more than is produced would read unfinished data).
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "ir/printer.h"
#include "ir/region.h"
#include "ir/schedule/schedule_internal.h"

namespace tunedb::ir {

using sched::Apply;
using sched::Fail;
using sched::In;
using sched::Record;

namespace {

// Accesses of one buffer by a block, as index lists over the block's
// iteration variables.
struct Access {
  BlockNode* block;
  std::vector<Expr> indices;
};

std::vector<Access> LoadsOf(BlockNode* b, const BufferNode* buffer) {
  std::vector<Access> out;
  for (const Stmt* part : {&b->init, &b->body}) {
    RewriteExprs(*part, [&](const Expr& e) {
      VisitExpr(e, [&](const Expr& x) {
        if (x->kind == ExprKind::kLoad && x->buffer.get() == buffer) out.push_back({b, x->operands});
      });
      return e;
    });
  }
  return out;
}

std::vector<Access> StoresOf(BlockNode* b, const BufferNode* buffer) {
  std::vector<Access> out;
  for (const Stmt* part : {&b->init, &b->body}) {
    for (StoreNode* s : sched::Stores(*part)) {
      if (s->buffer.get() == buffer) out.push_back({b, s->indices});
    }
  }
  return out;
}

// The accesses as one iteration of `loop` sees them: indices over loop
// variables, the loops strictly inside `loop` on the way to each accessing
// block free.
std::vector<RegionAccess> PerIteration(const PrimFunc& f, const ForNode* loop, const std::vector<Access>& accesses) {
  std::vector<RegionAccess> out;
  for (const Access& a : accesses) {
    RegionAccess r;
    bool inside = false;
    for (ForNode* l : sched::LoopsAbove(f, a.block)) {
      if (inside) r.free_vars.insert(l->loop_var.get());
      if (l == loop) inside = true;
    }
    VarMap to_loops;
    for (std::size_t k = 0; k < a.block->iter_vars.size(); ++k) {
      to_loops[a.block->iter_vars[k].var.get()] = a.block->bindings[k];
    }
    for (const Expr& index : a.indices) r.indices.push_back(Substitute(index, to_loops));
    out.push_back(std::move(r));
  }
  return out;
}

// The region of `buffer` the accesses touch in one iteration of `loop`.
// Dimensions that cannot be analysed are nullopt.
std::vector<std::optional<DimRegion>> RegionPerIteration(const PrimFunc& f, const ForNode* loop,
                                                        const std::vector<Access>& accesses, const Buffer& buffer) {
  return UnionRegion(PerIteration(f, loop, accesses), buffer->shape.size(), sched::LoopRanges(f));
}

// For a block storing buffer X at indices that are distinct iteration
// variables: dim -> iteration-variable position.
std::vector<int> StoreDimsToIters(const BlockNode& b, const std::vector<Expr>& indices, const char* primitive,
                                  const std::string& access = "writes") {
  std::vector<int> dims;
  for (const Expr& index : indices) {
    int found = -1;
    for (std::size_t k = 0; k < b.iter_vars.size(); ++k) {
      if (index == b.iter_vars[k].var) found = static_cast<int>(k);
    }
    if (found < 0 || std::find(dims.begin(), dims.end(), found) != dims.end()) {
      Fail(primitive, "block '" + b.name + "' " + access + " at an index that is not a distinct iteration variable (" +
                          PrintExpr(index) + ")");
    }
    dims.push_back(found);
  }
  return dims;
}

std::vector<BlockNode*> ReadersOf(const PrimFunc& f, const BufferNode* buffer, const BlockNode* except) {
  std::vector<BlockNode*> out;
  for (BlockNode* b : sched::LeafBlocks(f)) {
    if (b != except && sched::LoadedBuffers(*b).count(buffer)) out.push_back(b);
  }
  return out;
}

std::vector<BlockNode*> WritersOf(const PrimFunc& f, const BufferNode* buffer, const BlockNode* except) {
  std::vector<BlockNode*> out;
  for (BlockNode* b : sched::LeafBlocks(f)) {
    if (b != except && sched::StoredBuffers(*b).count(buffer)) out.push_back(b);
  }
  return out;
}

bool SubtreeHasAny(const Stmt& s, const std::vector<BlockNode*>& blocks) {
  for (BlockNode* b : blocks) {
    if (sched::Contains(s, b)) return true;
  }
  return false;
}

// What a conjunct of producer `w`'s predicate that mentions loops inside
// the target loop (those not in `fixed`) does to the region w writes in
// one iteration.
enum class ConditionEffect {
  // It holds wherever a write is inside its buffer (HoldsInBounds, for a
  // dimension of a store), which a reader inside the buffer never sees.
  kNone,
  // Its inner loops move no written index (a split reduction's `k_0 * 3 +
  // k_1 < 20` skips steps, not elements): it says only whether the
  // iteration writes at all.
  kWhetherAny,
  // It narrows what an iteration writes further.
  kNarrows,
};

ConditionEffect EffectOf(const BlockNode& w, const Expr& condition, const std::set<const ExprNode*>& fixed,
                         const VarRanges& ranges) {
  VarMap to_loops;
  for (std::size_t k = 0; k < w.iter_vars.size(); ++k) to_loops[w.iter_vars[k].var.get()] = w.bindings[k];
  struct Written {
    Expr index;  // over loops
    std::int64_t extent;
  };
  std::vector<Written> written;
  std::set<const ExprNode*> moving;  // inner loops that move a written index
  for (const StoreNode* store : sched::Stores(w.body)) {
    for (std::size_t d = 0; d < store->indices.size(); ++d) {
      written.push_back({Substitute(store->indices[d], to_loops), store->buffer->shape[d]});
      VisitExpr(written.back().index, [&](const Expr& x) {
        if (x->kind == ExprKind::kVar && !fixed.count(x.get())) moving.insert(x.get());
      });
    }
  }
  bool moves = false;
  VisitExpr(condition, [&](const Expr& x) { moves = moves || moving.count(x.get()); });
  if (!moves) return ConditionEffect::kWhetherAny;
  for (const Written& wr : written) {
    if (HoldsInBounds(condition, wr.index, wr.extent, ranges)) return ConditionEffect::kNone;
  }
  return ConditionEffect::kNarrows;
}

// Takes the block's loop nest out and puts a new one, over the given
// iteration ranges, under `loop`: after every child that holds one of
// `producers`, before every child that holds one of `consumers` (`index`
// chooses within that range, see ChoosePosition).
void MoveUnder(Schedule::State& s, const std::shared_ptr<BlockNode>& block, ForNode& loop, const std::vector<Expr>& mins,
               const std::vector<std::int64_t>& extents, const std::vector<BlockNode*>& producers,
               const std::vector<BlockNode*>& consumers, bool preserve_unit_loops, int index, const char* p) {
  sched::RemoveStmt(s.func, sched::ExclusiveTop(s.func, block.get()));
  std::vector<Stmt> children = sched::Children(loop.body);
  int lb = 0, ub = static_cast<int>(children.size());
  for (int i = 0; i < static_cast<int>(children.size()); ++i) {
    if (SubtreeHasAny(children[i], producers)) lb = i + 1;
  }
  for (int i = static_cast<int>(children.size()) - 1; i >= 0; --i) {
    if (SubtreeHasAny(children[i], consumers)) ub = i;
  }
  int pos = sched::ChoosePosition(lb, ub, index, p);
  Stmt nest = sched::BuildNest(block, mins, extents, preserve_unit_loops, sched::LoopRanges(s.func));
  sched::InsertAt(&loop.body, pos, nest);
}

// Whether `block`, outside `loop`, runs before it: leaf blocks in program
// order, and the loop's own blocks are contiguous in that order.
bool Precedes(const PrimFunc& f, const BlockNode* block, const ForNode& loop) {
  const std::vector<BlockNode*> inside = sched::BlocksIn(loop.body);
  for (const BlockNode* b : sched::LeafBlocks(f)) {
    if (b == block) return true;
    if (!inside.empty() && b == inside.front()) return false;  // where the loop starts
  }
  return false;
}

std::shared_ptr<BlockNode> CheckLeaf(Schedule::State& s, BlockRV rv, const char* p) {
  auto b = s.BlockOf(rv, p);
  if (b.get() == s.func.body.get()) Fail(p, "the root block cannot be moved or inlined");
  return b;
}

void ComputeAtImpl(Schedule::State& s, BlockRV block_rv, LoopRV loop_rv, bool preserve_unit_loops, int index,
                   const char* p) {
  auto block = CheckLeaf(s, block_rv, p);
  auto loop = s.LoopOf(loop_rv, p);
  const std::string where = "block '" + block->name + "' at loop " + loop->loop_var->name;
  if (sched::Contains(loop, block.get())) Fail(p, where + ": the block is already under this loop");

  sched::BufferSet stored = sched::StoredBuffers(*block);
  if (stored.size() != 1) Fail(p, where + ": the block must write exactly one buffer");
  const BufferNode* out_buf = *stored.begin();
  if (!WritersOf(s.func, out_buf, block.get()).empty()) {
    Fail(p, where + ": buffer " + out_buf->name + " is also written by other blocks");
  }
  if (!block->init && sched::LoadedBuffers(*block).count(out_buf)) {
    Fail(p, where + ": the block updates " + out_buf->name + " in place; recomputing it would apply the update twice");
  }
  std::vector<Access> writes = StoresOf(block.get(), out_buf);
  Buffer out = sched::Stores(block->body)[0]->buffer;
  std::vector<int> dim_to_iter = StoreDimsToIters(*block, writes[0].indices, p);
  for (const Access& w : writes) {
    if (StoreDimsToIters(*block, w.indices, p) != dim_to_iter) Fail(p, where + ": the block writes at several index patterns");
  }
  std::vector<BlockNode*> consumers = ReadersOf(s.func, out_buf, block.get());
  if (consumers.empty()) Fail(p, where + ": the block has no consumer");
  std::vector<Access> reads;
  for (BlockNode* c : consumers) {
    if (!sched::Contains(loop, c)) {
      Fail(p, where + ": consumer '" + c->name + "' is not under the loop");
    }
    for (const Access& a : LoadsOf(c, out_buf)) reads.push_back(a);
  }
  std::vector<std::optional<DimRegion>> region = RegionPerIteration(s.func, loop.get(), reads, out);

  std::vector<Expr> mins;
  std::vector<std::int64_t> extents;
  for (const IterVar& iv : block->iter_vars) {
    mins.push_back(IntImm(iv.var->dtype, 0));
    extents.push_back(iv.extent);
  }
  for (std::size_t d = 0; d < dim_to_iter.size(); ++d) {
    int k = dim_to_iter[d];
    if (block->iter_vars[k].kind != IterKind::kSpatial || !region[d]) continue;
    mins[k] = region[d]->min;
    extents[k] = region[d]->extent;
  }

  std::vector<BlockNode*> producers;
  for (const BufferNode* buf : sched::LoadedBuffers(*block)) {
    for (BlockNode* w : WritersOf(s.func, buf, block.get())) producers.push_back(w);
  }
  MoveUnder(s, block, *loop, mins, extents, producers, consumers, preserve_unit_loops, index, p);
}

void ReverseComputeAtImpl(Schedule::State& s, BlockRV block_rv, LoopRV loop_rv, bool preserve_unit_loops, int index,
                          const char* p) {
  auto block = CheckLeaf(s, block_rv, p);
  auto loop = s.LoopOf(loop_rv, p);
  const std::string where = "block '" + block->name + "' at loop " + loop->loop_var->name;
  if (sched::Contains(loop, block.get())) Fail(p, where + ": the block is already under this loop");
  for (const BufferNode* buf : sched::StoredBuffers(*block)) {
    // A reduction reads what it accumulates; any other block that reads
    // what it writes updates it in place.
    if (!block->init && sched::LoadedBuffers(*block).count(buf)) {
      Fail(p, where + ": the block updates " + buf->name + " in place");
    }
    if (!WritersOf(s.func, buf, block.get()).empty()) Fail(p, where + ": buffer " + buf->name + " has other writers");
  }

  const VarRanges ranges = sched::LoopRanges(s.func);
  std::vector<Expr> mins(block->iter_vars.size());
  std::vector<std::int64_t> extents(block->iter_vars.size(), 0);
  std::vector<BlockNode*> producers;
  // The iteration variable that reads each dimension of each buffer whose
  // region moves with the loop.
  std::map<std::pair<const BufferNode*, std::size_t>, int> reader_of;
  for (const BufferNode* buf : sched::LoadedBuffers(*block)) {
    std::vector<BlockNode*> writers = WritersOf(s.func, buf, block.get());
    std::vector<BlockNode*> inside;
    for (BlockNode* w : writers) {
      if (sched::Contains(loop, w)) inside.push_back(w);
    }
    if (inside.empty()) {
      // Written wholly outside the loop: that must happen before it.
      for (BlockNode* w : writers) {
        if (!Precedes(s.func, w, *loop)) {
          Fail(p, where + ": block '" + w->name + "' writes " + buf->name +
                      ", which the block reads, after the loop");
        }
      }
      continue;
    }
    if (inside.size() != writers.size()) {
      Fail(p, where + ": buffer " + buf->name + " is also written outside the loop");
    }
    std::vector<Access> written;
    Buffer buffer;
    for (BlockNode* w : inside) {
      producers.push_back(w);
      for (const Access& a : StoresOf(w, buf)) written.push_back(a);
      for (StoreNode* st : sched::Stores(w->body)) {
        if (st->buffer.get() == buf) buffer = st->buffer;
      }
    }
    std::vector<RegionAccess> per_iteration = PerIteration(s.func, loop.get(), written);
    std::vector<std::optional<DimRegion>> region = UnionRegion(per_iteration, buffer->shape.size(), ranges);
    // The block will read all of that region in each iteration; elements
    // inside it that the iteration does not write (a stride, a gap between
    // two writes) would be another iteration's, unfinished or, once
    // lowering keeps one iteration's region of the buffer, nobody's.
    if (!TouchesWholeRegion(per_iteration, ranges)) {
      Fail(p, where + ": one iteration does not write all of the region of " + buf->name +
                  " it touches (a stride or a gap), so the block would read elements other iterations write");
    }
    for (const Access& a : LoadsOf(block.get(), buf)) {
      for (std::size_t d = 0; d < a.indices.size(); ++d) {
        if (!region[d]) Fail(p, where + ": cannot tell which part of " + buf->name + " one iteration produces");
        // The read index must be v + c for an iteration variable v.
        Expr index = Simplify(a.indices[d]);
        std::int64_t c = 0;
        Expr v = index;
        if (index->kind == ExprKind::kAdd && AsConstInt(index->operands[1], &c)) v = index->operands[0];
        if (index->kind == ExprKind::kSub && AsConstInt(index->operands[1], &c)) {
          v = index->operands[0];
          c = -c;
        }
        int k = -1;
        for (std::size_t j = 0; j < block->iter_vars.size(); ++j) {
          if (block->iter_vars[j].var == v) k = static_cast<int>(j);
        }
        if (k >= 0 && block->iter_vars[k].kind == IterKind::kReduce) {
          // A reduction keeps its whole range under the loop: one iteration
          // must produce every element it reads along this dimension.
          std::int64_t first = 0;
          if (!AsConstInt(Simplify(region[d]->min), &first) || c < first ||
              c + block->iter_vars[k].extent > first + region[d]->extent) {
            Fail(p, where + ": one iteration produces only part of " + buf->name + " along the reduction over " +
                        block->iter_vars[k].var->name);
          }
          continue;
        }
        if (k < 0 || block->iter_vars[k].kind != IterKind::kSpatial) {
          Fail(p, where + ": the block reads " + buf->name + " at " + PrintExpr(a.indices[d]) +
                      ", which is not an iteration variable plus a constant");
        }
        // Over all iterations the producers write all of the buffer, so v
        // runs over [-c, shape - c); that must cover v's whole domain, or
        // some iterations (e.g. the border of a padding) would never run.
        if (c < 0 || block->iter_vars[k].extent > buffer->shape[d] - c) {
          Fail(p, where + ": some iterations of the block read no element of " + buf->name +
                      " (such as padding), so they would never run");
        }
        // Read along one dimension through two variables (A[i, k] * A[j,
        // k], a symmetric product), the block would run only where they
        // meet in one iteration's region: the pairs of rows from different
        // iterations would never run.
        if (region[d]->extent < buffer->shape[d]) {
          auto [reader, first] = reader_of.emplace(std::make_pair(buf, d), k);
          if (!first && reader->second != k) {
            Fail(p, where + ": the block reads " + buf->name + " along dimension " + std::to_string(d) +
                        " through both " + block->iter_vars[reader->second].var->name + " and " +
                        block->iter_vars[k].var->name + ", and one iteration produces part of it: the pairs from "
                        "different iterations would never run");
          }
        }
        Expr min = Simplify(region[d]->min - IntImm(region[d]->min->dtype, c));
        if (extents[k] != 0 && (extents[k] != region[d]->extent || !ExprEqual(mins[k], min))) {
          Fail(p, where + ": the reads of " + buf->name + " disagree on the range of " + block->iter_vars[k].var->name);
        }
        mins[k] = min;
        extents[k] = region[d]->extent;
      }
    }
  }
  if (producers.empty()) Fail(p, where + ": no producer of the block's inputs is under the loop");
  for (std::size_t k = 0; k < block->iter_vars.size(); ++k) {
    if (extents[k] == 0) {
      mins[k] = IntImm(block->iter_vars[k].var->dtype, 0);
      extents[k] = block->iter_vars[k].extent;
    }
  }

  // The regions above ignore the producers' conditions. A condition over
  // the loop and the loops around it says in which iterations a producer
  // writes anything at all (a split of a one-element region by 2 writes in
  // the first of two): the block takes it, since in the other iterations
  // there is nothing for it to read, and lowering, which keeps only one
  // iteration's region of a buffer, would hand it another iteration's (or
  // no) data. A condition over loops inside may skip steps that write no
  // other element (then the block takes where some step writes), or keep
  // the writes in the buffer's bounds, which the block's own reads
  // respect; one that narrows what an iteration writes further is
  // refused, as the region would claim elements nobody wrote.
  std::set<const ExprNode*> fixed;
  for (ForNode* l : sched::LoopsAbove(s.func, loop.get())) fixed.insert(l->loop_var.get());
  fixed.insert(loop->loop_var.get());
  Expr produced_here;
  for (BlockNode* w : producers) {
    if (!w->predicate) continue;
    for (const Expr& c : Conjuncts(w->predicate)) {
      bool over_fixed = true;
      VisitExpr(c, [&](const Expr& x) { over_fixed = over_fixed && (x->kind != ExprKind::kVar || fixed.count(x.get())); });
      if (over_fixed) {
        produced_here = sched::AndPredicate(produced_here, c);
        continue;
      }
      switch (EffectOf(*w, c, fixed, ranges)) {
        case ConditionEffect::kNone: break;
        case ConditionEffect::kWhetherAny: {
          // Over the loop too, it may leave whole iterations without a
          // write (the last steps of a padded reduction split around the
          // loop): the block takes where some inner iteration writes.
          bool over_inner_only = true;
          VisitExpr(c, [&](const Expr& x) { over_inner_only = over_inner_only && !fixed.count(x.get()); });
          if (over_inner_only) break;
          std::optional<Expr> some = HoldsForSome(c, fixed, ranges);
          if (!some) {
            Fail(p, where + ": producer '" + w->name + "' writes only where " + PrintExpr(c) +
                        ", and which iterations of the loop write cannot be told");
          }
          produced_here = sched::AndPredicate(produced_here, *some);
          break;
        }
        case ConditionEffect::kNarrows:
          Fail(p, where + ": producer '" + w->name + "' writes only where " + PrintExpr(c) +
                      ", so one iteration writes less than its region");
      }
    }
  }

  std::vector<BlockNode*> consumers;
  for (const BufferNode* buf : sched::StoredBuffers(*block)) {
    for (BlockNode* r : ReadersOf(s.func, buf, block.get())) consumers.push_back(r);
  }
  MoveUnder(s, block, *loop, mins, extents, producers, consumers, preserve_unit_loops, index, p);
  if (produced_here) block->predicate = sched::AndPredicate(block->predicate, produced_here);
}

// A block that is one store of an expression over its spatial iteration
// variables, at indices that are exactly those variables.
StoreNode* CheckElementwise(const BlockNode& b, const char* p) {
  if (b.init) Fail(p, "block '" + b.name + "' is a reduction");
  for (const IterVar& iv : b.iter_vars) {
    if (iv.kind != IterKind::kSpatial) Fail(p, "block '" + b.name + "' has a reduction variable " + iv.var->name);
  }
  if (!b.body || b.body->kind != StmtKind::kStore) Fail(p, "block '" + b.name + "' is not a single store");
  if (b.predicate) Fail(p, "block '" + b.name + "' has a predicate");
  return static_cast<StoreNode*>(b.body.get());
}

}  // namespace

void Schedule::ComputeAt(BlockRV block, LoopRV loop, bool preserve_unit_loops, int index) {
  State& s = *state_;
  const char* p = "compute_at";
  Apply(s, p, [&] {
    if (IsRootMark(loop)) {
      s.BlockOf(block, p);
    } else if (IsInlineMark(loop)) {
      ComputeInline(block);
      s.trace.insts.pop_back();  // recorded below as the compute_at it was asked for
    } else {
      ComputeAtImpl(s, block, loop, preserve_unit_loops, index, p);
    }
    return 0;
  });
  Record(s, "ComputeAt", {In(block), In(loop)}, {preserve_unit_loops ? 1 : 0, index}, {});
}

void Schedule::ReverseComputeAt(BlockRV block, LoopRV loop, bool preserve_unit_loops, int index) {
  State& s = *state_;
  const char* p = "reverse_compute_at";
  Apply(s, p, [&] {
    if (IsRootMark(loop)) {
      s.BlockOf(block, p);
    } else if (IsInlineMark(loop)) {
      ReverseComputeInline(block);
      s.trace.insts.pop_back();
    } else {
      ReverseComputeAtImpl(s, block, loop, preserve_unit_loops, index, p);
    }
    return 0;
  });
  Record(s, "ReverseComputeAt", {In(block), In(loop)}, {preserve_unit_loops ? 1 : 0, index}, {});
}

void Schedule::ComputeInline(BlockRV block_rv) {
  State& s = *state_;
  const char* p = "compute_inline";
  Apply(s, p, [&] {
    auto block = CheckLeaf(s, block_rv, p);
    StoreNode* store = CheckElementwise(*block, p);
    const BufferNode* buf = store->buffer.get();
    if (sched::IsParam(s.func, buf)) Fail(p, "block '" + block->name + "' writes the function output " + buf->name);
    std::vector<int> dims = StoreDimsToIters(*block, store->indices, p);
    if (dims.size() != block->iter_vars.size()) {
      Fail(p, "block '" + block->name + "' does not write one element per iteration");
    }
    if (!WritersOf(s.func, buf, block.get()).empty()) Fail(p, "buffer " + buf->name + " has other writers");
    for (BlockNode* c : ReadersOf(s.func, buf, block.get())) {
      auto inline_load = [&](const Expr& load) {
        VarMap map;
        for (std::size_t d = 0; d < dims.size(); ++d) map[block->iter_vars[dims[d]].var.get()] = load->operands[d];
        return Substitute(store->value, map);
      };
      for (const Stmt* part : {&c->init, &c->body}) {
        RewriteExprs(*part, [&](const Expr& e) { return sched::ReplaceLoads(e, buf, inline_load); });
      }
      sched::RecomputeRegions(*c);
    }
    sched::RemoveStmt(s.func, sched::ExclusiveTop(s.func, block.get()));
    sched::RemoveAllocation(s.func, buf);
    return 0;
  });
  Record(s, "ComputeInline", {In(block_rv)}, nlohmann::json::array(), {});
}

void Schedule::ReverseComputeInline(BlockRV block_rv) {
  State& s = *state_;
  const char* p = "reverse_compute_inline";
  Apply(s, p, [&] {
    auto consumer = CheckLeaf(s, block_rv, p);
    StoreNode* cstore = CheckElementwise(*consumer, p);
    // The intermediate buffers the consumer reads, with their producers.
    std::vector<std::pair<const BufferNode*, BlockNode*>> inputs;
    for (const BufferNode* b : sched::LoadedBuffers(*consumer)) {
      if (sched::IsParam(s.func, b)) continue;
      std::vector<BlockNode*> writers = WritersOf(s.func, b, consumer.get());
      if (writers.empty()) continue;
      if (writers.size() != 1) Fail(p, "buffer " + b->name + " has several producers");
      inputs.emplace_back(b, writers[0]);
    }
    if (inputs.empty()) Fail(p, "block '" + consumer->name + "' reads no intermediate buffer produced by another block");
    // Of several, the consumer goes into the producer whose loop nest runs
    // last; the others must be complete before that nest starts (written
    // in an earlier nest of the root), where the merged block reads them.
    // TVM refuses any second producer; a division by a row sum after the
    // product that divides (attention's O / Z) needs this one.
    const std::vector<Stmt> nests = sched::Children(s.func.root().body);
    auto nest_of = [&](const BlockNode* b) {
      const StmtNode* top = sched::RootLevelStmt(s.func, b);
      return std::find_if(nests.begin(), nests.end(), [&](const Stmt& n) { return n.get() == top; }) - nests.begin();
    };
    auto [buf, producer] = *std::max_element(inputs.begin(), inputs.end(), [&](const auto& a, const auto& b) {
      return nest_of(a.second) < nest_of(b.second);
    });
    for (const auto& [other, writer] : inputs) {
      if (other != buf && nest_of(writer) >= nest_of(producer)) {
        Fail(p, "block '" + consumer->name + "' reads several intermediate buffers, and " + other->name +
                    " is not complete before the loop nest of " + buf->name + "'s producer");
      }
    }
    // First: a reduction producer reads its own buffer, and would be
    // reported as another reader of it.
    StoreNode* pstore = CheckElementwise(*producer, p);
    if (ReadersOf(s.func, buf, consumer.get()).size() != 0) {
      Fail(p, "buffer " + buf->name + " is read by blocks other than '" + consumer->name + "'");
    }
    std::vector<int> pdims = StoreDimsToIters(*producer, pstore->indices, p);
    std::vector<Access> loads = LoadsOf(consumer.get(), buf);
    std::vector<int> cdims = StoreDimsToIters(*consumer, loads[0].indices, p, "reads " + buf->name);
    for (const Access& a : loads) {
      for (std::size_t d = 0; d < a.indices.size(); ++d) {
        if (a.indices[d] != loads[0].indices[d]) Fail(p, "block '" + consumer->name + "' reads " + buf->name + " at several indices");
      }
    }
    if (cdims.size() != consumer->iter_vars.size()) {
      Fail(p, "the indices of " + buf->name + " in block '" + consumer->name + "' do not determine its iteration");
    }
    // Consumer iteration variable at dim d -> producer iteration variable at
    // dim d. A consumer that reads a leading part of the buffer (pad_einsum's
    // copy-back of the real part) narrows the producer's domain to its own,
    // and leaves a predicate where the producer's loops run past it. The
    // domain, not only the predicate, must narrow: a predicate that the
    // loops make always true is simplified away, and a later compute_at
    // rebuilds the loops from the domain (a random schedule of
    // depthwise_conv2d then wrote DepthwiseConv2d[27] of 27).
    VarMap to_producer;
    Expr predicate = producer->predicate;
    for (std::size_t d = 0; d < cdims.size(); ++d) {
      const IterVar& civ = consumer->iter_vars[cdims[d]];
      IterVar& piv = producer->iter_vars[pdims[d]];
      if (civ.extent > piv.extent) Fail(p, "the iteration domains of the producer and the consumer differ");
      if (civ.extent < piv.extent) {
        const Expr& binding = producer->bindings[pdims[d]];
        predicate = sched::AndPredicate(predicate, Binary(ExprKind::kLt, binding, IntImm(binding->dtype, civ.extent)));
        piv.extent = civ.extent;
      }
      to_producer[civ.var.get()] = piv.var;
    }
    Expr value = Substitute(cstore->value, to_producer);
    value = sched::ReplaceLoads(value, buf, [&](const Expr&) { return pstore->value; });
    std::vector<Expr> indices;
    for (const Expr& i : cstore->indices) indices.push_back(Substitute(i, to_producer));
    producer->body = MakeStore(cstore->buffer, indices, value);
    producer->predicate = predicate;
    sched::RecomputeRegions(*producer);
    sched::RemoveStmt(s.func, sched::ExclusiveTop(s.func, consumer.get()));
    sched::RemoveAllocation(s.func, buf);
    return 0;
  });
  Record(s, "ReverseComputeInline", {In(block_rv)}, nlohmann::json::array(), {});
}

}  // namespace tunedb::ir
