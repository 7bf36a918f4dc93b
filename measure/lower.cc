#include "measure/lower.h"

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "ir/region.h"
#include "ir/simplify.h"

namespace tunedb::measure {
namespace {

using namespace tunedb::ir;

// ---- unroll pragmas --------------------------------------------------------------

std::int64_t Steps(const Stmt& s) {
  if (!s) return 0;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      return n.extent * Steps(n.body);
    }
    case StmtKind::kSeq: {
      std::int64_t total = 0;
      for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) total += Steps(c);
      return total;
    }
    case StmtKind::kIf: return Steps(static_cast<IfNode&>(*s).then_case) + Steps(static_cast<IfNode&>(*s).else_case);
    case StmtKind::kStore: return 1;
    case StmtKind::kBlock: return Steps(static_cast<BlockNode&>(*s).init) + Steps(static_cast<BlockNode&>(*s).body);
  }
  return 0;
}

bool HasVectorizedLoop(const Stmt& s) {
  bool found = false;
  VisitStmt(s, [&](const Stmt& n) {
    found = found || (n->kind == StmtKind::kFor && static_cast<ForNode&>(*n).for_kind == ForKind::kVectorized);
  });
  return found;
}

// Scalar loop nests longer than this are not unrolled: see ApplyUnrollPragmas.
constexpr std::int64_t kMaxUnrolledScalarSteps = 64;

// TVM's pragma_auto_unroll_max_step: loops under the annotated loop whose
// nest has at most that many steps are unrolled. Except a nest without a
// vectorized loop and more than kMaxUnrolledScalarSteps steps, which stays a
// loop for LLVM. Each of its steps is a few scalar instructions, and
// hundreds of them in one basic block cost LLVM's instruction selection and
// schedulers seconds: a 512-long packing copy, 1.1-2.6 s of compile where
// other candidates take under 0.2 s; a 64 x 8 scalar multiply-accumulate,
// 2.3 s. Left a loop, a copy's row is vectorized by LLVM's loop vectorizer,
// which never sees unrolled code; a scalar tile is slow either way. A nest
// with a vectorized loop is limited by max_step alone (its steps count
// lanes, as TVM's do).
void ApplyUnrollPragmas(const Stmt& root) {
  VisitStmt(root, [&](const Stmt& s) {
    if (s->kind != StmtKind::kFor) return;
    auto& loop = static_cast<ForNode&>(*s);
    auto it = loop.annotations.find("pragma_auto_unroll_max_step");
    if (it == loop.annotations.end() || !std::holds_alternative<std::int64_t>(it->second)) return;
    std::int64_t max_step = std::get<std::int64_t>(it->second);
    if (max_step <= 0) return;
    VisitStmt(loop.body, [&](const Stmt& inner) {
      if (inner->kind != StmtKind::kFor) return;
      auto& l = static_cast<ForNode&>(*inner);
      if (l.for_kind != ForKind::kSerial) return;
      std::int64_t steps = Steps(inner);
      if (steps > max_step || (steps > kMaxUnrolledScalarSteps && !HasVectorizedLoop(l.body))) return;
      l.for_kind = ForKind::kUnrolled;
    });
  });
}

// ---- blocks to statements ---------------------------------------------------------

Stmt RemoveBlocks(const Stmt& s, const VarRanges& ranges) {
  if (!s) return nullptr;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      n.body = RemoveBlocks(n.body, ranges);
      return s;
    }
    case StmtKind::kSeq: {
      auto& n = static_cast<SeqNode&>(*s);
      for (Stmt& c : n.stmts) c = RemoveBlocks(c, ranges);
      return s;
    }
    case StmtKind::kIf: {
      auto& n = static_cast<IfNode&>(*s);
      n.then_case = RemoveBlocks(n.then_case, ranges);
      n.else_case = RemoveBlocks(n.else_case, ranges);
      return s;
    }
    case StmtKind::kStore: return s;
    case StmtKind::kBlock: break;
  }
  auto& b = static_cast<BlockNode&>(*s);
  if (b.iter_vars.empty() && !b.init) {  // an allocation scope (the root)
    b.body = RemoveBlocks(b.body, ranges);
    b.reads.clear();
    b.writes.clear();
    return s;
  }
  VarMap to_bindings;
  Expr first_step;
  for (std::size_t k = 0; k < b.iter_vars.size(); ++k) {
    to_bindings[b.iter_vars[k].var.get()] = b.bindings[k];
    if (b.iter_vars[k].kind == IterKind::kReduce) {
      Expr is_zero = Binary(ExprKind::kEq, b.bindings[k], IntImm(b.bindings[k]->dtype, 0));
      first_step = first_step ? (first_step && is_zero) : is_zero;
    }
  }
  Stmt body = SubstituteStmt(b.body, to_bindings);
  if (b.init) {
    Stmt init = SubstituteStmt(b.init, to_bindings);
    Expr cond = first_step ? Simplify(first_step, ranges) : BoolImm(true);
    std::int64_t always = 0;
    if (AsConstInt(cond, &always) && always) {
      body = MakeSeq({init, body});
    } else {
      body = MakeSeq({MakeIf(cond, init), body});
    }
  }
  if (b.predicate) body = MakeIf(b.predicate, body);
  if (!b.alloc_buffers.empty()) {
    auto scope = std::make_shared<BlockNode>();
    scope->name = b.name;
    scope->alloc_buffers = b.alloc_buffers;
    scope->body = body;
    body = scope;
  }
  return body;
}

// ---- compaction ------------------------------------------------------------------------

// Shrinking an intermediate buffer X to what one iteration of a loop L
// touches (and allocating it inside L) is correct when no value of X flows
// from one iteration of L, or of a loop around it, to another:
//  (a) every block that accumulates into X (an init, or a read of its own
//      output) has all its reduction loops inside L, so a whole reduction
//      happens within one iteration;
//  (b) within one iteration, what is read of X lies inside what is written;
//  (c) in an iteration where a block that reads X runs, the blocks that
//      write X write: a writer's predicate over L and the loops around it
//      (a split's `j_0 * 5 + j_1 < 12`, held at j_0 = 2 while j_1 runs)
//      may skip whole iterations, whose readers would find nothing in a
//      buffer allocated anew (in the program as scheduled they read what
//      an earlier iteration left, which the blocks may rely on).
// The plan is made on the blocked program, where iteration kinds are known,
// and applied after the blocks are gone.
struct CompactionPlan {
  Buffer from;
  ForNode* loop;  // allocated around its body; nullptr: stays at the root, only laid out anew
  std::vector<Expr> mins;
  std::vector<std::int64_t> shape;
  // The compacted buffer's dimensions, outermost first, as dimensions of
  // `from` (see VectorFriendlyOrder).
  std::vector<std::size_t> order;
  // Elements allocated per row of the innermost dimension, its extent or
  // more (PaddedRow); 0: its extent.
  std::int64_t row = 0;
};

// An index as sum(coefficient * atom) + constant, analysed once: each
// atom's loop variables and bounds. The planner asks for the region of
// every access at every candidate depth; with this form each question is a
// pass over a few terms instead of a fresh simplification.
struct IndexTerm {
  Expr atom;
  std::int64_t coeff;
  std::vector<const ExprNode*> vars;  // loop variables the atom mentions
  std::optional<IntBound> bound;
};

struct AffineIndex {
  std::vector<IndexTerm> terms;
  std::int64_t constant = 0;
  DataType dtype = DataType::kInt32;
};

AffineIndex Analyze(const Expr& index, const VarRanges& ranges) {
  LinearForm form = ToLinearForm(index, ranges);
  AffineIndex a;
  a.constant = form.constant;
  a.dtype = index->dtype;
  for (auto& [atom, coeff] : form.terms) {
    std::optional<IntBound> bound;
    auto range = atom->kind == ExprKind::kVar ? ranges.find(atom.get()) : ranges.end();
    if (range != ranges.end()) {
      bound = IntBound{0, range->second - 1};
    } else {
      bound = BoundOfSimplified(atom, ranges);
    }
    IndexTerm t{atom, coeff, {}, bound};
    VisitExpr(atom, [&](const Expr& x) {
      if (x->kind == ExprKind::kVar) t.vars.push_back(x.get());
    });
    a.terms.push_back(std::move(t));
  }
  return a;
}

struct LoopPath {
  std::vector<ForNode*> loops;                                // around a block, outermost first
  std::unordered_map<const ExprNode*, std::size_t> depth_of;  // loop variable -> its position in `loops`
};

struct BlockAccess {
  const BlockNode* block;
  const LoopPath* path;
  std::vector<Expr> exprs;           // the indices over loop variables
  std::vector<AffineIndex> indices;  // the same, analysed
  bool is_write;
};

// One dimension of an access while the loops at `depth` and deeper run:
// [fixed + low, fixed + low + extent), `fixed` being the terms over the
// outer (held) loops.
struct Span {
  std::vector<const IndexTerm*> fixed;
  std::int64_t low;
  std::int64_t extent;
};

bool IsFree(const BlockAccess& a, const ExprNode* var, std::size_t depth) {
  auto it = a.path->depth_of.find(var);
  return it != a.path->depth_of.end() && it->second >= depth;
}

// nullopt when a term mixes held and running loops, or is unbounded.
std::optional<Span> SpanAt(const BlockAccess& a, const AffineIndex& index, std::size_t depth) {
  Span s{{}, index.constant, 1};
  std::int64_t high = index.constant;
  for (const IndexTerm& t : index.terms) {
    bool free = false, held = false;
    for (const ExprNode* v : t.vars) (IsFree(a, v, depth) ? free : held) = true;
    if (free && held) return std::nullopt;
    if (!free) {
      s.fixed.push_back(&t);
      continue;
    }
    if (!t.bound) return std::nullopt;
    std::int64_t lo = t.bound->min * t.coeff, hi = t.bound->max * t.coeff;
    s.low += std::min(lo, hi);
    high += std::max(lo, hi);
  }
  s.extent = high - s.low + 1;
  return s;
}

// Whether two spans' fixed parts are the same sum, so their minimums differ
// by a constant.
bool SameFixed(const Span& a, const Span& b) {
  if (a.fixed.size() != b.fixed.size()) return false;
  for (const IndexTerm* x : a.fixed) {
    bool found = false;
    for (const IndexTerm* y : b.fixed) found = found || (x->coeff == y->coeff && ExprEqual(x->atom, y->atom));
    if (!found) return false;
  }
  return true;
}

// The union of spans with the same fixed part; nullopt when they differ.
std::optional<Span> Union(const std::vector<Span>& spans) {
  if (spans.empty()) return std::nullopt;
  Span u = spans[0];
  std::int64_t high = u.low + u.extent;
  for (const Span& s : spans) {
    if (!SameFixed(u, s)) return std::nullopt;
    u.low = std::min(u.low, s.low);
    high = std::max(high, s.low + s.extent);
  }
  u.extent = high - u.low;
  return u;
}

// Whether one write covers its whole bounding box when the loops at `depth`
// and deeper run: each dimension's index is affine in its own running loops
// (no loop in two dimensions), with coefficients that leave no gap (sorted,
// each at most one past what the smaller ones reach).
bool CoversBox(const BlockAccess& a, std::size_t depth, const VarRanges& ranges) {
  std::set<const ExprNode*> used;
  for (const AffineIndex& index : a.indices) {
    std::vector<Step> steps;
    for (const IndexTerm& t : index.terms) {
      bool free = false;
      for (const ExprNode* v : t.vars) free = free || IsFree(a, v, depth);
      if (!free) continue;
      if (t.atom->kind != ExprKind::kVar || !used.insert(t.atom.get()).second) return false;
      steps.push_back({t.coeff < 0 ? -t.coeff : t.coeff, ranges.at(t.atom.get())});
    }
    if (!LeavesNoGap(std::move(steps))) return false;
  }
  return true;
}

Expr SpanMin(const Span& s, DataType dtype, const VarRanges& ranges) {
  Expr e = IntImm(dtype, s.low);
  for (const IndexTerm* t : s.fixed) e = e + t->atom * IntImm(dtype, t->coeff);
  return Simplify(e, ranges);
}

void CollectLeafBlocks(const Stmt& s, std::vector<ForNode*>& loops,
                       std::vector<std::pair<BlockNode*, std::vector<ForNode*>>>* out) {
  if (!s) return;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      loops.push_back(&n);
      CollectLeafBlocks(n.body, loops, out);
      loops.pop_back();
      return;
    }
    case StmtKind::kSeq:
      for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) CollectLeafBlocks(c, loops, out);
      return;
    case StmtKind::kIf:
      CollectLeafBlocks(static_cast<IfNode&>(*s).then_case, loops, out);
      CollectLeafBlocks(static_cast<IfNode&>(*s).else_case, loops, out);
      return;
    case StmtKind::kStore: return;
    case StmtKind::kBlock: out->emplace_back(static_cast<BlockNode*>(s.get()), loops); return;
  }
}

// The dimension of an access that a vectorized loop around it moves, when
// exactly one does, one element per lane (nullopt otherwise), and how many
// times the access runs.
struct LaneUse {
  std::optional<std::size_t> dim;
  double executions = 1;
};

LaneUse LaneDimension(const BlockAccess& a) {
  LaneUse use;
  const ExprNode* lane = nullptr;
  for (const ForNode* loop : a.path->loops) {
    use.executions *= static_cast<double>(loop->extent);
    if (loop->for_kind == ForKind::kVectorized) lane = loop->loop_var.get();
  }
  if (!lane) return use;
  for (std::size_t d = 0; d < a.indices.size(); ++d) {
    for (const IndexTerm& t : a.indices[d].terms) {
      if (std::find(t.vars.begin(), t.vars.end(), lane) == t.vars.end()) continue;
      if (use.dim || t.atom.get() != lane || t.coeff != 1) return {std::nullopt, use.executions};
      use.dim = d;
    }
  }
  return use;
}

// A compacted buffer is private to the kernel, so its layout is lowering's
// choice. By default it keeps the original's; but when the vectorized
// loops that access it move another dimension than the last (a staged
// copy of dense's W, read along its rows W[j, k] with j vectorized), every
// vector access is a gather. Then the dimension that the most vector
// accesses (counted by how often they run) move becomes the innermost, so
// those accesses are contiguous; the copy that fills the buffer writes
// with a stride instead, once per tile.
std::vector<std::size_t> VectorFriendlyOrder(const std::vector<BlockAccess>& accesses, std::size_t rank) {
  std::vector<std::size_t> order(rank);
  for (std::size_t d = 0; d < rank; ++d) order[d] = d;
  if (rank < 2) return order;
  std::vector<double> contiguous_runs(rank, 0);
  for (const BlockAccess& a : accesses) {
    LaneUse use = LaneDimension(a);
    if (use.dim) contiguous_runs[*use.dim] += use.executions;
  }
  std::size_t best = rank - 1;
  for (std::size_t d = 0; d < rank; ++d) {
    if (contiguous_runs[d] > contiguous_runs[best]) best = d;
  }
  if (best != rank - 1) {
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(best));
    order.push_back(best);
  }
  return order;
}

// The row to allocate for dimension `dim` of a compacted buffer, its
// innermost, of `extent` elements. Code generation runs the last lanes of
// a vectorized loop, fewer than a 512-bit register holds and not a power
// of two, as one masked vector of the next power of two, and on a private
// buffer as a whole-vector load and store (codegen.cc, PrivateTail). Rows
// of 14 overlap such vectors, so each store kept what the next row held (a
// blend in every step of an accumulation) and LLVM kept the accumulator in
// memory: a 3 x 3 depthwise convolution in NCHW at 14 x 14, one thread,
// ran 112 us against 29 us at 14 x 16 (bench/RESULTS.md, session 72).
// Rows padded to the vector's end hold it alone, and code generation
// leaves the padding's lanes unblended (BufferNode::padded_rows). Only
// where each access in a vectorized loop moves this dimension alone, one
// element per lane over its whole extent, so every tail ends its row.
std::int64_t PaddedRow(const std::vector<BlockAccess>& accesses, std::size_t dim, std::int64_t extent,
                       DataType dtype) {
  constexpr std::int64_t kWidestVectorBytes = 64;
  const std::int64_t lanes = kWidestVectorBytes / DataTypeBytes(dtype);
  const std::int64_t rest = extent % lanes;
  if (rest == 0 || std::has_single_bit(static_cast<std::uint64_t>(rest))) return extent;
  bool vectorized = false;
  for (const BlockAccess& a : accesses) {
    const ForNode* lane = nullptr;
    for (const ForNode* loop : a.path->loops) {
      if (loop->for_kind == ForKind::kVectorized) lane = loop;
    }
    if (!lane) continue;
    for (std::size_t d = 0; d < a.indices.size(); ++d) {
      for (const IndexTerm& t : a.indices[d].terms) {
        if (std::find(t.vars.begin(), t.vars.end(), lane->loop_var.get()) == t.vars.end()) continue;
        if (d != dim || t.atom.get() != lane->loop_var.get() || t.coeff != 1 || lane->extent != extent) {
          return extent;
        }
        vectorized = true;
      }
    }
  }
  if (!vectorized) return extent;
  return extent - rest + static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(rest)));
}

// Condition (c) for the loops `held` (L and those around it): every
// writer's condition on the held loops (where some iteration of the others
// satisfies its predicate) is also each reader's. Compared as written,
// after simplification: a reader that reverse_compute_at put under a
// writer's loop carries the writer's condition (see block_motion.cc).
bool ReadersRunWhereWritersWrite(const std::vector<BlockAccess>& accesses, const Buffer& buffer,
                                 const std::set<const ExprNode*>& held, const VarRanges& ranges) {
  // The held part of each conjunct of a block's predicate that depends on
  // the held loops; false when one cannot be told. `written`: the block's
  // write, whose conditions that only keep it inside the buffer are left
  // out (a padded input's copy writes the rows inside the input, and its
  // readers read no others).
  auto held_conditions = [&](const BlockNode& b, const BlockAccess* written, std::vector<Expr>& out) {
    for (const Expr& c : Conjuncts(b.predicate)) {
      bool depends = false;
      for (const ExprNode* v : held) depends = depends || UsesVar(c, v);
      if (!depends) continue;
      bool in_bounds = false;
      for (std::size_t d = 0; written && d < written->exprs.size(); ++d) {
        in_bounds = in_bounds || HoldsInBounds(c, written->exprs[d], buffer->shape[d], ranges);
      }
      if (in_bounds) continue;
      std::optional<Expr> h = HoldsForSome(c, held, ranges);
      if (!h) return false;
      std::int64_t value = 0;
      if (!AsConstInt(*h, &value) || value == 0) out.push_back(*h);
    }
    return true;
  };
  std::vector<Expr> required;
  for (const BlockAccess& a : accesses) {
    if (a.is_write && a.block->predicate && !held_conditions(*a.block, &a, required)) return false;
  }
  if (required.empty()) return true;
  for (const BlockAccess& a : accesses) {
    if (a.is_write) continue;
    std::vector<Expr> has;
    if (!held_conditions(*a.block, nullptr, has)) return false;
    for (const Expr& r : required) {
      bool found = false;
      for (const Expr& h : has) found = found || ExprEqual(h, r);
      if (!found) return false;
    }
  }
  return true;
}

// Each computation block with the loops around it, outermost first.
using LeafBlocks = std::vector<std::pair<BlockNode*, std::vector<ForNode*>>>;

LeafBlocks LeafBlocksOf(const PrimFunc& f) {
  LeafBlocks blocks;
  std::vector<ForNode*> loops;
  CollectLeafBlocks(static_cast<const BlockNode&>(*f.body).body, loops, &blocks);
  return blocks;
}

std::vector<CompactionPlan> PlanCompaction(const PrimFunc& f, const LeafBlocks& blocks, const VarRanges& ranges) {
  const auto& root = static_cast<const BlockNode&>(*f.body);
  std::vector<LoopPath> paths(blocks.size());
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    paths[b].loops = blocks[b].second;
    for (std::size_t k = 0; k < paths[b].loops.size(); ++k) paths[b].depth_of[paths[b].loops[k]->loop_var.get()] = k;
  }
  // Each block's iteration variables in terms of its loops.
  std::vector<VarMap> to_loops(blocks.size());
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const BlockNode* block = blocks[b].first;
    for (std::size_t k = 0; k < block->iter_vars.size(); ++k) to_loops[b][block->iter_vars[k].var.get()] = block->bindings[k];
  }
  std::vector<CompactionPlan> plans;
  for (const Buffer& buf : root.alloc_buffers) {
    std::vector<BlockAccess> accesses;
    std::set<const ExprNode*> accumulation_loops;  // reduction loops of blocks accumulating into buf
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      BlockNode* block = blocks[b].first;
      auto add = [&](const std::vector<Expr>& indices, bool is_write) {
        BlockAccess a{block, &paths[b], {}, {}, is_write};
        for (const Expr& i : indices) {
          a.exprs.push_back(Substitute(i, to_loops[b]));
          a.indices.push_back(Analyze(a.exprs.back(), ranges));
        }
        accesses.push_back(std::move(a));
      };
      bool writes = false, reads = false;
      for (const Stmt* part : {&block->init, &block->body}) {
        VisitStmt(*part, [&](const Stmt& s) {
          if (s->kind != StmtKind::kStore) return;
          auto& st = static_cast<StoreNode&>(*s);
          auto add_load = [&](const Expr& e) {
            VisitExpr(e, [&](const Expr& x) {
              if (x->kind != ExprKind::kLoad || x->buffer != buf) return;
              reads = true;
              add(x->operands, false);
            });
          };
          for (const Expr& i : st.indices) add_load(i);
          add_load(st.value);
          if (st.buffer == buf) {
            writes = true;
            add(st.indices, true);
          }
        });
      }
      if (writes && (reads || block->init)) {
        for (std::size_t k = 0; k < block->iter_vars.size(); ++k) {
          if (block->iter_vars[k].kind != IterKind::kReduce) continue;
          VisitExpr(block->bindings[k], [&](const Expr& x) {
            if (x->kind == ExprKind::kVar) accumulation_loops.insert(x.get());
          });
        }
      }
    }
    if (accesses.empty()) continue;
    const std::vector<ForNode*>& first = accesses[0].path->loops;
    std::size_t common = first.size();
    for (const BlockAccess& a : accesses) {
      std::size_t k = 0;
      while (k < common && k < a.path->loops.size() && a.path->loops[k] == first[k]) ++k;
      common = k;
    }
    std::size_t rank = buf->shape.size();
    // From the innermost common loop outwards, the first loop where (a) and (b) hold.
    for (std::size_t depth = common; depth > 0; --depth) {
      bool ok = true;
      for (std::size_t k = 0; k < depth && ok; ++k) ok = !accumulation_loops.count(first[k]->loop_var.get());
      for (const BlockAccess& a : accesses) ok = ok && (!a.is_write || CoversBox(a, depth, ranges));
      if (ok) {
        std::set<const ExprNode*> held;
        for (std::size_t k = 0; k < depth; ++k) held.insert(first[k]->loop_var.get());
        ok = ReadersRunWhereWritersWrite(accesses, buf, held, ranges);
      }
      if (!ok) continue;
      CompactionPlan plan{buf, first[depth - 1], {}, {}, {}};
      std::int64_t elements = 1;
      bool has_reads = false;
      for (std::size_t d = 0; d < rank && ok; ++d) {
        std::vector<Span> writes, reads, all;
        for (const BlockAccess& a : accesses) {
          auto span = SpanAt(a, a.indices[d], depth);
          if (!span) {
            ok = false;
            break;
          }
          (a.is_write ? writes : reads).push_back(*span);
          all.push_back(*span);
        }
        if (!ok) break;
        has_reads = !reads.empty();
        // Several writes must agree on one box (no gaps between them).
        for (const Span& w : writes) ok = ok && SameFixed(writes[0], w) && w.low == writes[0].low && w.extent == writes[0].extent;
        auto w = Union(writes), region = Union(all);
        if (!ok || !w || !region) {
          ok = false;
          break;
        }
        if (has_reads) {  // what is read lies inside what is written
          auto r = Union(reads);
          ok = r && SameFixed(*r, *w) && r->low >= w->low && r->low + r->extent <= w->low + w->extent;
        }
        bool whole = region->extent >= buf->shape[d];
        DataType dtype = accesses[0].indices[d].dtype;
        plan.shape.push_back(whole ? buf->shape[d] : region->extent);
        plan.mins.push_back(whole ? IntImm(dtype, 0) : SpanMin(*region, dtype, ranges));
        elements *= plan.shape.back();
      }
      if (!ok) continue;
      // Inside a parallel loop the buffer moves in even when it shrinks
      // nowhere: allocated at the root, it would be one buffer that every
      // thread writes at once (a reduction recomputed in each iteration of
      // the parallel loop, its init racing another thread's sums).
      bool in_parallel = false;
      for (std::size_t k = 0; k < depth; ++k) in_parallel = in_parallel || first[k]->for_kind == ForKind::kParallel;
      if (elements < buf->NumElements() || in_parallel) {
        plan.order = VectorFriendlyOrder(accesses, rank);
        const std::size_t inner = plan.order.back();
        if (elements > plan.shape[inner]) {  // more than one row
          plan.row = PaddedRow(accesses, inner, plan.shape[inner], buf->dtype);
        }
        plans.push_back(plan);
      }
      break;
    }
    if (!plans.empty() && plans.back().from == buf) continue;
    // Not smaller anywhere (a copy made once, before the parallel loop): it
    // stays where it is, but its layout is still lowering's choice.
    std::vector<std::size_t> order = VectorFriendlyOrder(accesses, rank);
    if (std::is_sorted(order.begin(), order.end())) continue;
    std::vector<Expr> mins;
    for (std::size_t d = 0; d < rank; ++d) mins.push_back(IntImm(accesses[0].indices[d].dtype, 0));
    plans.push_back({buf, nullptr, mins, buf->shape, order});
  }
  return plans;
}

// Accesses of a compacted buffer go to the smaller buffer, each index
// shifted by the region's minimum in that dimension.
struct Rebinding {
  Buffer to;
  std::vector<Expr> mins;
  std::vector<std::size_t> order;  // CompactionPlan::order
};
using Rebindings = std::unordered_map<const BufferNode*, Rebinding>;

// Allocates each compacted buffer in a scope around its loop's body. The
// accesses are re-indexed while they are flattened: one pass over the
// program for both.
Rebindings ApplyCompaction(PrimFunc& f, const std::vector<CompactionPlan>& plans) {
  auto& root = static_cast<BlockNode&>(*f.body);
  Rebindings rebindings;
  for (const CompactionPlan& plan : plans) {
    std::vector<std::int64_t> shape;
    for (std::size_t d : plan.order) shape.push_back(plan.shape[d]);
    const bool padded = plan.row > shape.back();
    if (padded) shape.back() = plan.row;
    Buffer compact = MakeBuffer(plan.from->name, shape, plan.from->dtype, plan.from->scope);
    compact->padded_rows = padded;
    rebindings[plan.from.get()] = {compact, plan.mins, plan.order};
    if (plan.loop == nullptr) {  // laid out anew in place
      std::replace(root.alloc_buffers.begin(), root.alloc_buffers.end(), plan.from, compact);
      continue;
    }
    auto scope = std::make_shared<BlockNode>();
    scope->name = plan.from->name;
    scope->alloc_buffers = {compact};
    scope->body = plan.loop->body;
    plan.loop->body = scope;
    root.alloc_buffers.erase(std::remove(root.alloc_buffers.begin(), root.alloc_buffers.end(), plan.from),
                             root.alloc_buffers.end());
  }
  return rebindings;
}

// ---- flattening ---------------------------------------------------------------------

void FlattenBuffers(PrimFunc& f, const Rebindings& compacted, const VarRanges& ranges) {
  std::unordered_map<const BufferNode*, Buffer> flat;
  auto flatten = [&](const Buffer& b) {
    auto it = flat.find(b.get());
    if (it != flat.end()) return it->second;
    Buffer fb = MakeBuffer(b->name, {b->NumElements()}, b->dtype, b->scope);
    fb->padded_rows = b->padded_rows;
    flat[b.get()] = fb;
    return fb;
  };
  for (Buffer& p : f.params) p = flatten(p);
  VisitStmt(f.body, [&](const Stmt& s) {
    if (s->kind != StmtKind::kBlock) return;
    for (Buffer& b : static_cast<BlockNode&>(*s).alloc_buffers) b = flatten(b);
  });
  // The flat buffer and row-major index of an access (of the compacted
  // buffer, shifted, when `b` was compacted), simplified; 64-bit indices
  // only for buffers of 2^31 elements or more, or where an index is int64
  // already (A[i64(i) * i64(i) % 5, j]: a row-major sum needs one type).
  auto flatten_access = [&](const Buffer& b, const std::vector<Expr>& indices) -> std::optional<std::pair<Buffer, Expr>> {
    const Buffer* buffer = &b;
    std::vector<Expr> shifted;
    auto rebound = compacted.find(b.get());
    if (rebound != compacted.end()) {
      buffer = &rebound->second.to;
      for (std::size_t d : rebound->second.order) shifted.push_back(indices[d] - rebound->second.mins[d]);
    }
    const std::vector<Expr>& idx = rebound != compacted.end() ? shifted : indices;
    auto to = flat.find(buffer->get());
    if (to == flat.end()) return std::nullopt;  // not a parameter or allocation: left as it is
    bool any_int64 = std::any_of(idx.begin(), idx.end(), [](const Expr& i) { return i->dtype == DataType::kInt64; });
    if ((*buffer)->NumElements() < (std::int64_t{1} << 31) && !any_int64) {
      return std::make_pair(to->second, SimplifyRowMajor(idx, (*buffer)->shape, ranges));
    }
    Expr index;
    for (std::size_t d = 0; d < idx.size(); ++d) {
      Expr i = idx[d]->dtype == DataType::kInt32 ? Cast(DataType::kInt64, idx[d]) : idx[d];
      index = index ? index * IntImm(i->dtype, (*buffer)->shape[d]) + i : i;
    }
    return std::make_pair(to->second, Simplify(index ? index : IntImm(DataType::kInt32, 0), ranges));
  };
  // The loads and stores of one element share their index expressions
  // (C[i, j] = C[i, j] + ...: a block's bindings were substituted by
  // pointer), so each distinct access is flattened once. The entry holds the
  // index expressions, so that no other node can take their addresses.
  struct Flattened {
    std::vector<Expr> indices;
    std::optional<std::pair<Buffer, Expr>> result;
  };
  std::map<std::vector<const void*>, Flattened> flattened;
  auto access = [&](const Buffer& b, const std::vector<Expr>& indices) {
    std::vector<const void*> key{b.get()};
    for (const Expr& i : indices) key.push_back(i.get());
    auto [it, fresh] = flattened.try_emplace(std::move(key));
    if (fresh) it->second = {indices, flatten_access(b, indices)};
    return it->second.result;
  };
  VisitStmt(f.body, [&](const Stmt& s) {
    if (s->kind != StmtKind::kStore) return;
    auto& n = static_cast<StoreNode&>(*s);
    if (auto a = access(n.buffer, n.indices)) {
      n.buffer = a->first;
      n.indices = {a->second};
    }
  });
  RewriteExprs(f.body, [&](const Expr& e) {
    return RewriteLoads(e, [&](const Expr& load) -> Expr {
      auto a = access(load->buffer, load->operands);
      return a ? Load(a->first, {a->second}) : nullptr;
    });
  });
}

// ---- simplification -------------------------------------------------------------------

Stmt SimplifyStmt(const Stmt& s, const VarRanges& ranges) {
  if (!s) return nullptr;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto& n = static_cast<ForNode&>(*s);
      n.body = SimplifyStmt(n.body, ranges);
      return n.body ? s : nullptr;
    }
    case StmtKind::kSeq: {
      auto& n = static_cast<SeqNode&>(*s);
      std::vector<Stmt> kept;
      for (const Stmt& c : n.stmts) {
        if (Stmt r = SimplifyStmt(c, ranges)) kept.push_back(r);
      }
      n.stmts = std::move(kept);
      return s;
    }
    case StmtKind::kIf: {
      auto& n = static_cast<IfNode&>(*s);
      n.condition = Simplify(n.condition, ranges);
      n.then_case = SimplifyStmt(n.then_case, ranges);
      n.else_case = SimplifyStmt(n.else_case, ranges);
      std::int64_t v = 0;
      if (AsConstInt(n.condition, &v)) return v ? n.then_case : n.else_case;
      return s;
    }
    case StmtKind::kStore: {  // indices (the store's and its loads') were simplified by flattening
      auto& n = static_cast<StoreNode&>(*s);
      n.value = SimplifyKeepingLoads(n.value, ranges);
      return s;
    }
    case StmtKind::kBlock: {
      auto& n = static_cast<BlockNode&>(*s);
      n.body = SimplifyStmt(n.body, ranges);
      if (!n.body) n.body = MakeSeq({});
      return s;
    }
  }
  return s;
}

// A parallel loop whose iterations all store to the same elements of a
// buffer they share runs serially instead: the threads would race on
// them. The buffer is shared unless compaction allocates it inside the
// loop, which it does wherever each iteration writes what it reads (so
// this is left for stores that no iteration can own, such as an output
// written again in every iteration).
void SerializeRacingParallelLoops(const LeafBlocks& blocks, const std::vector<CompactionPlan>& plans) {
  std::unordered_map<const BufferNode*, const ForNode*> allocated_in;
  for (const CompactionPlan& plan : plans) allocated_in[plan.from.get()] = plan.loop;
  for (const auto& leaf : blocks) {
    // Named, not a structured binding: the lambda below uses it, which
    // clang before 16 refuses (scripts/fuzz.sh builds with clang 14).
    const auto& block = leaf.first;
    const auto& path = leaf.second;
    VarMap to_loops;
    for (std::size_t k = 0; k < block->iter_vars.size(); ++k) to_loops[block->iter_vars[k].var.get()] = block->bindings[k];
    for (const Stmt* part : {&block->init, &block->body}) {
      VisitStmt(*part, [&](const Stmt& st) {
        if (st->kind != StmtKind::kStore) return;
        const auto& store = static_cast<const StoreNode&>(*st);
        // Each iteration of the loops down to the one the buffer is
        // allocated in has its own; the loops inside that one share it.
        auto scope = allocated_in.find(store.buffer.get());
        bool shared = scope == allocated_in.end() || scope->second == nullptr;
        for (ForNode* loop : path) {
          if (shared && loop->for_kind == ForKind::kParallel && loop->extent > 1) {
            // Whether an index uses the loop, directly or through a binding.
            bool moves = false;
            for (const Expr& index : store.indices) {
              VisitExpr(index, [&](const Expr& x) {
                if (x->kind != ExprKind::kVar) return;
                auto bound = to_loops.find(x.get());
                moves = moves || x.get() == loop->loop_var.get() ||
                        (bound != to_loops.end() && UsesVar(bound->second, loop->loop_var.get()));
              });
            }
            if (!moves) loop->for_kind = ForKind::kSerial;
          }
          shared = shared || loop == scope->second;
        }
      });
    }
  }
}

}  // namespace

ir::PrimFunc Lower(const ir::PrimFunc& func) {
  PrimFunc f = CloneWithoutRegions(func);  // blocks are removed below; their regions are never read
  VarRanges ranges;
  VisitStmt(f.body, [&](const Stmt& s) {
    if (s->kind == StmtKind::kFor) ranges[static_cast<ForNode&>(*s).loop_var.get()] = static_cast<ForNode&>(*s).extent;
  });
  ApplyUnrollPragmas(f.body);
  const LeafBlocks blocks = LeafBlocksOf(f);
  std::vector<CompactionPlan> plans = PlanCompaction(f, blocks, ranges);
  SerializeRacingParallelLoops(blocks, plans);
  f.body = RemoveBlocks(f.body, ranges);
  Rebindings compacted = ApplyCompaction(f, plans);
  FlattenBuffers(f, compacted, ranges);
  f.body = SimplifyStmt(f.body, ranges);
  return f;
}

}  // namespace tunedb::measure
