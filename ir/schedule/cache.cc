// cache_read and cache_write: stage a buffer through a copy in another
// buffer (scope "global" or "local"), so that later compute_at /
// reverse_compute_at can localize the copy. The copy block covers the whole
// buffer and sits at the root, next to the block it serves. pad_einsum
// stages a block's inputs and output the same way, through copies padded
// with zeros to the block's padded domain.
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "ir/schedule/schedule_internal.h"

namespace tunedb::ir {

using sched::Apply;
using sched::Fail;
using sched::In;
using sched::Record;
using sched::Ref;

namespace {

void CheckScope(const std::string& scope, const char* p) {
  if (scope != "global" && scope != "local") {
    Fail(p, "storage scope '" + scope + "' is not supported (use \"global\" or \"local\")");
  }
}

// dst[v0, ..., vn] = src[v0, ..., vn] over the whole buffer, in a block
// named after the cache buffer (as TVM names it: A_global, C_local).
std::shared_ptr<BlockNode> CopyBlock(const PrimFunc& f, const Buffer& src, const Buffer& dst, const Buffer& cache) {
  auto block = std::make_shared<BlockNode>();
  block->name = sched::UniqueBlockName(f, cache->name);
  std::vector<Expr> vars;
  for (std::size_t d = 0; d < dst->shape.size(); ++d) {
    Expr v = MakeVar("v" + std::to_string(d));
    block->iter_vars.push_back({v, dst->shape[d], IterKind::kSpatial});
    block->bindings.push_back(IntImm(DataType::kInt32, 0));  // set by BuildNest
    vars.push_back(v);
  }
  block->body = MakeStore(dst, vars, Load(src, vars));
  sched::RecomputeRegions(*block);
  return block;
}

Stmt FullNest(const std::shared_ptr<BlockNode>& block) {
  std::vector<Expr> mins;
  std::vector<std::int64_t> extents;
  for (const IterVar& iv : block->iter_vars) {
    mins.push_back(IntImm(DataType::kInt32, 0));
    extents.push_back(iv.extent);
  }
  return sched::BuildNest(block, mins, extents, true, {});
}

// Inserts `s` next to the root-level statement holding `anchor`.
void InsertAtRoot(PrimFunc& f, const StmtNode* anchor, Stmt s, bool after) {
  StmtNode* top = sched::RootLevelStmt(f, anchor);
  auto& root = static_cast<BlockNode&>(*f.body);
  std::vector<Stmt> children = sched::Children(root.body);
  int pos = 0;
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (children[i].get() == top) pos = static_cast<int>(i) + (after ? 1 : 0);
  }
  sched::InsertAt(&root.body, pos, std::move(s));
}

// Another block in `block`'s root-level loop nest that writes `buffer`
// (or reads it): a copy of the whole buffer beside that nest would run
// before that writer (or after that reader), never between them.
const BlockNode* SharingTheNest(PrimFunc& f, const BlockNode& block, const BufferNode* buffer, bool writes) {
  for (const BlockNode* other : sched::BlocksIn(*sched::SlotOf(f, sched::RootLevelStmt(f, &block)))) {
    if (other == &block) continue;
    if ((writes ? sched::StoredBuffers(*other) : sched::LoadedBuffers(*other)).count(buffer)) return other;
  }
  return nullptr;
}

// For each dimension of an access of block b, the iteration variables it
// moves with.
std::vector<std::set<const ExprNode*>> MovesWith(const BlockNode& b, const std::vector<Expr>& indices) {
  std::vector<std::set<const ExprNode*>> out(indices.size());
  for (std::size_t d = 0; d < indices.size(); ++d) {
    for (const IterVar& iv : b.iter_vars) {
      if (UsesVar(indices[d], iv.var.get())) out[d].insert(iv.var.get());
    }
  }
  return out;
}

Buffer StageBuffer(const Buffer& of, const std::string& scope) {
  return MakeBuffer(of->name + "_" + scope, of->shape, of->dtype, scope);
}

}  // namespace

BlockRV Schedule::CacheRead(BlockRV block_rv, int read_buffer_index, const std::string& storage_scope) {
  State& s = *state_;
  const char* p = "cache_read";
  BlockRV out = Apply(s, p, [&] {
    auto block = s.BlockOf(block_rv, p);
    if (block.get() == s.func.body.get()) Fail(p, "the root block reads nothing");
    CheckScope(storage_scope, p);
    if (read_buffer_index < 0 || read_buffer_index >= static_cast<int>(block->reads.size())) {
      Fail(p, "block '" + block->name + "' has " + std::to_string(block->reads.size()) +
                  " read region(s); read_buffer_index " + std::to_string(read_buffer_index) + " is out of range");
    }
    Buffer src = block->reads[read_buffer_index].buffer;
    if (sched::StoredBuffers(*block).count(src.get())) {
      Fail(p, "block '" + block->name + "' updates " + src->name + " in place, so a copy made before it would "
                  "miss its own updates");
    }
    if (const BlockNode* producer = SharingTheNest(s.func, *block, src.get(), /*writes=*/true)) {
      Fail(p, "block '" + producer->name + "' writes " + src->name + " in the loop nest of block '" + block->name +
                  "', so a copy of the whole buffer beside that nest would run before it (stage the read before "
                  "the compute_at)");
    }
    Buffer cache = StageBuffer(src, storage_scope);
    auto copy = CopyBlock(s.func, src, cache, cache);
    // The loads staged are those that move with the same variables as the
    // chosen read, dimension by dimension: a stencil's X[i - 1] and X[i + 1]
    // share one copy, whose region under a loop is one window; a symmetric
    // product's A[i, k] and A[j, k] do not, as the union of an i tile's rows
    // and a j tile's would span the whole buffer. The other loads keep
    // reading the buffer.
    std::vector<Expr> chosen_indices;
    for (const Range& r : block->reads[read_buffer_index].ranges) chosen_indices.push_back(r.min);
    const auto chosen = MovesWith(*block, chosen_indices);
    for (const Stmt* part : {&block->init, &block->body}) {
      RewriteExprs(*part, [&](const Expr& e) {
        return sched::ReplaceLoads(e, src.get(), [&](const Expr& load) -> Expr {
          if (MovesWith(*block, load->operands) != chosen) return nullptr;
          return Load(cache, load->operands);
        });
      });
    }
    sched::RecomputeRegions(*block);
    InsertAtRoot(s.func, block.get(), FullNest(copy), /*after=*/false);
    static_cast<BlockNode&>(*s.func.body).alloc_buffers.push_back(cache);
    return s.AddBlock(copy);
  });
  Record(s, "CacheRead", {In(block_rv)}, {read_buffer_index, storage_scope}, {Ref(out)});
  return out;
}

BlockRV Schedule::CacheWrite(BlockRV block_rv, int write_buffer_index, const std::string& storage_scope) {
  State& s = *state_;
  const char* p = "cache_write";
  BlockRV out = Apply(s, p, [&] {
    auto block = s.BlockOf(block_rv, p);
    if (block.get() == s.func.body.get()) Fail(p, "the root block writes nothing");
    CheckScope(storage_scope, p);
    if (write_buffer_index < 0 || write_buffer_index >= static_cast<int>(block->writes.size())) {
      Fail(p, "block '" + block->name + "' has " + std::to_string(block->writes.size()) +
                  " write region(s); write_buffer_index " + std::to_string(write_buffer_index) + " is out of range");
    }
    Buffer dst = block->writes[write_buffer_index].buffer;
    for (BlockNode* other : sched::LeafBlocks(s.func)) {
      if (other != block.get() && sched::StoredBuffers(*other).count(dst.get())) {
        Fail(p, "buffer " + dst->name + " is also written by block '" + other->name + "'");
      }
    }
    if (const BlockNode* reader = SharingTheNest(s.func, *block, dst.get(), /*writes=*/false)) {
      Fail(p, "block '" + reader->name + "' reads " + dst->name + " in the loop nest of block '" + block->name +
                  "', so a copy of the whole buffer beside that nest would run after it (stage the write before "
                  "the compute_at)");
    }
    Buffer cache = StageBuffer(dst, storage_scope);
    for (const Stmt* part : {&block->init, &block->body}) {
      for (StoreNode* st : sched::Stores(*part)) {
        if (st->buffer == dst) st->buffer = cache;
      }
      RewriteExprs(*part, [&](const Expr& e) {
        return sched::ReplaceLoads(e, dst.get(), [&](const Expr& load) { return Load(cache, load->operands); });
      });
    }
    sched::RecomputeRegions(*block);
    auto copy = CopyBlock(s.func, cache, dst, cache);
    InsertAtRoot(s.func, block.get(), FullNest(copy), /*after=*/true);
    static_cast<BlockNode&>(*s.func.body).alloc_buffers.push_back(cache);
    return s.AddBlock(copy);
  });
  Record(s, "CacheWrite", {In(block_rv)}, {write_buffer_index, storage_scope}, {Ref(out)});
  return out;
}

// ---- pad_einsum ---------------------------------------------------------------

namespace {

// What padding one block needs: the padded extent of each iteration
// variable, and for each buffer it accesses the padded shape (the
// dimensions indexed by exactly a padded variable grow; the others stay).
struct PadPlan {
  std::vector<std::int64_t> extents;
  std::map<const BufferNode*, std::vector<std::int64_t>> shapes;
  // The buffers in the order the block first accesses them: the padded
  // copies are made in this order, the same on every replay (the map's
  // order is the buffers' addresses').
  std::vector<Buffer> order;
};

bool IsFactorReadWith(const Expr& e, const ExprNode* var) {
  if (e->kind == ExprKind::kCast) return IsFactorReadWith(e->operands[0], var);
  if (e->kind != ExprKind::kLoad) return false;
  for (const Expr& index : e->operands) {
    if (index.get() == var) return true;
  }
  return false;
}

// Padding a reduction variable adds terms for its padded values, which must
// be zero: the update must be `out += f1 * f2 * ...` with every factor a
// constant or a read indexed by that variable (a padded read gives 0, so
// every added term is 0 * 0 or 0 * constant).
bool AddsZeroWhenPadded(const BlockNode& b, const ExprNode* var) {
  if (!b.body || b.body->kind != StmtKind::kStore) return false;
  const auto& store = static_cast<const StoreNode&>(*b.body);
  const Expr& v = store.value;
  if (v->kind != ExprKind::kAdd) return false;
  const Expr* product = nullptr;
  for (int side = 0; side < 2; ++side) {
    const Expr& acc = v->operands[side];
    if (acc->kind == ExprKind::kLoad && acc->buffer == store.buffer && acc->operands.size() == store.indices.size()) {
      bool same = true;
      for (std::size_t d = 0; d < store.indices.size(); ++d) same = same && acc->operands[d] == store.indices[d];
      if (same) product = &v->operands[1 - side];
    }
  }
  if (!product) return false;
  bool any_read = false;
  std::function<bool(const Expr&)> factors_ok = [&](const Expr& e) {
    if (e->kind == ExprKind::kMul) return factors_ok(e->operands[0]) && factors_ok(e->operands[1]);
    if (e->kind == ExprKind::kIntImm || e->kind == ExprKind::kFloatImm) return true;
    any_read = true;
    return IsFactorReadWith(e, var);
  };
  return factors_ok(*product) && any_read;
}

PadPlan PlanPadding(const BlockNode& b, const std::vector<std::int64_t>& padding, const char* p) {
  if (padding.size() != b.iter_vars.size()) {
    sched::Fail(p, "block '" + b.name + "' has " + std::to_string(b.iter_vars.size()) +
                       " iteration variables; padding has " + std::to_string(padding.size()) + " entries");
  }
  PadPlan plan;
  std::map<const ExprNode*, std::int64_t> padded;  // var -> padded extent
  for (std::size_t i = 0; i < padding.size(); ++i) {
    const IterVar& iv = b.iter_vars[i];
    if (padding[i] < 1) sched::Fail(p, "padding " + std::to_string(i) + " is " + std::to_string(padding[i]) + "; it must be at least 1");
    // Both checks keep the rounding up within int64 and the result within
    // what the variable's type counts.
    std::int64_t most = sched::MaxIterations(iv.var->dtype);
    std::int64_t e = padding[i] <= most ? (iv.extent + padding[i] - 1) / padding[i] * padding[i] : most + 1;
    if (e > most) {
      sched::Fail(p, "padding " + std::to_string(i) + " (" + std::to_string(padding[i]) + ") pads " + iv.var->name +
                         " past what its " + std::string(DataTypeName(iv.var->dtype)) + " type counts");
    }
    plan.extents.push_back(e);
    if (e == iv.extent) continue;
    padded[iv.var.get()] = e;
    if (iv.kind == IterKind::kReduce && !AddsZeroWhenPadded(b, iv.var.get())) {
      sched::Fail(p, "block '" + b.name + "': padding reduction variable " + iv.var->name +
                         " needs an update out += a * b * ... whose every factor reads with " + iv.var->name);
    }
  }
  if (padded.empty()) sched::Fail(p, "the padding changes no extent of block '" + b.name + "'");
  VarRanges ranges;
  std::map<const ExprNode*, const IterVar*> iter_of;
  for (const IterVar& iv : b.iter_vars) {
    ranges[iv.var.get()] = iv.extent;
    iter_of[iv.var.get()] = &iv;
  }
  const sched::BufferSet stored = sched::StoredBuffers(b);
  // How much a dimension that an input reads at c * v + (the rest), a
  // window such as a convolution's w + kw, grows when variable v is padded:
  // c elements per added value of v. The outputs at a spatial variable's
  // added values are cut off, so what they read past the input's end is
  // never used, and the real outputs read only what they read before; a
  // reduction variable's added terms are 0 whatever the window reads, since
  // every factor also reads with the variable itself (AddsZeroWhenPadded).
  auto window_growth = [&](const Buffer& buffer, std::size_t d, const Expr& index) {
    const std::string where = "block '" + b.name + "' indexes dimension " + std::to_string(d) + " of " + buffer->name;
    if (stored.count(buffer.get())) {
      sched::Fail(p, where + ", which it writes, with an expression of a padded variable; an output must be indexed "
                             "by padded variables themselves");
    }
    std::set<const ExprNode*> used;
    VisitExpr(index, [&](const Expr& x) {
      if (padded.count(x.get())) used.insert(x.get());
    });
    auto coefficients = LinearCoefficients(index, used, ranges);
    if (!coefficients) {
      sched::Fail(p, where + " with an expression that is not linear in a padded variable; only a plain variable or "
                             "a window (c * v + ...) can be padded");
    }
    std::int64_t growth = 0;
    for (const auto& [var, c] : *coefficients) {
      const IterVar& iv = *iter_of.at(var);
      if (c <= 0) sched::Fail(p, where + " backwards along padded variable " + iv.var->name);
      std::int64_t added = 0;
      if (__builtin_mul_overflow(c, padded.at(var) - iv.extent, &added) ||
          __builtin_add_overflow(growth, added, &growth)) {
        growth = std::numeric_limits<std::int64_t>::max();
      }
    }
    std::int64_t most = sched::MaxIterations(index->dtype);
    if (growth > most - buffer->shape[d]) {
      sched::Fail(p, where + " with a window that the padding would widen past what its " +
                         std::string(DataTypeName(index->dtype)) + " index counts");
    }
    return growth;
  };
  // Every access: a dimension indexed by a padded variable must be indexed
  // by exactly that variable, over the variable's whole extent, or be an
  // input's window (above).
  auto visit = [&](const Buffer& buffer, const std::vector<Expr>& indices) {
    std::vector<std::int64_t> shape = buffer->shape;
    for (std::size_t d = 0; d < indices.size(); ++d) {
      auto it = padded.find(indices[d].get());
      bool uses_padded = false;
      VisitExpr(indices[d], [&](const Expr& x) { uses_padded = uses_padded || padded.count(x.get()); });
      if (it == padded.end()) {
        if (uses_padded) shape[d] += window_growth(buffer, d, indices[d]);
        continue;
      }
      std::int64_t original = 0;
      for (const IterVar& iv : b.iter_vars) {
        if (iv.var.get() == it->first) original = iv.extent;
      }
      if (buffer->shape[d] != original) {
        sched::Fail(p, "dimension " + std::to_string(d) + " of " + buffer->name + " has " + std::to_string(buffer->shape[d]) +
                           " elements, not the " + std::to_string(original) + " of " + it->first->name);
      }
      shape[d] = it->second;
    }
    auto [at, fresh] = plan.shapes.emplace(buffer.get(), shape);
    if (fresh) plan.order.push_back(buffer);
    if (!fresh && at->second != shape) sched::Fail(p, "block '" + b.name + "' reads " + buffer->name + " with different paddings");
  };
  for (const Stmt* part : {&b.init, &b.body}) {
    if (!*part) continue;
    auto check = [&](const Expr& e) {
      VisitExpr(e, [&](const Expr& x) {
        if (x->kind == ExprKind::kLoad) visit(x->buffer, x->operands);
        bool integer_division = (x->kind == ExprKind::kDiv || x->kind == ExprKind::kFloorDiv ||
                                 x->kind == ExprKind::kFloorMod) && !IsFloat(x->dtype);
        if (integer_division) {
          bool reads = false;
          VisitExpr(x->operands[1], [&](const Expr& y) { reads = reads || y->kind == ExprKind::kLoad; });
          if (reads) sched::Fail(p, "block '" + b.name + "' divides by a value it reads; a padded 0 would trap");
        }
      });
    };
    VisitStmtExprs(*part, check);
    for (StoreNode* st : sched::Stores(*part)) visit(st->buffer, st->indices);
  }
  return plan;
}

}  // namespace

void Schedule::PadEinsum(BlockRV block_rv, const std::vector<std::int64_t>& padding) {
  State& s = *state_;
  const char* p = "pad_einsum";
  Apply(s, p, [&] {
    auto block = s.BlockOf(block_rv, p);
    if (block.get() == s.func.body.get()) Fail(p, "the root block has no iteration variables");
    PadPlan plan = PlanPadding(*block, padding, p);
    // The padded variables' loops: each bound to its variable alone, in the
    // chain of loops that holds only this block.
    std::vector<StmtNode*> path = sched::PathTo(s.func, block.get());
    StmtNode* top = sched::ExclusiveTop(s.func, block.get());
    std::vector<ForNode*> own;
    for (auto it = std::find(path.begin(), path.end(), top); it != path.end(); ++it) {
      if ((*it)->kind == StmtKind::kFor) own.push_back(static_cast<ForNode*>(*it));
    }
    std::vector<ForNode*> loop_of(block->iter_vars.size(), nullptr);
    for (std::size_t i = 0; i < block->iter_vars.size(); ++i) {
      if (plan.extents[i] == block->iter_vars[i].extent) continue;
      for (ForNode* loop : own) {
        if (block->bindings[i] == loop->loop_var && loop->extent == block->iter_vars[i].extent) loop_of[i] = loop;
      }
      if (!loop_of[i]) {
        Fail(p, "iteration variable " + block->iter_vars[i].var->name + " of block '" + block->name +
                    "' is not bound to a whole loop of its own (pad before splitting or moving it)");
      }
    }
    sched::BufferSet stored = sched::StoredBuffers(*block);
    if (stored.size() != 1) Fail(p, "block '" + block->name + "' must write exactly one buffer");
    Buffer out;
    std::vector<Buffer> inputs;
    for (const Buffer& buffer : plan.order) {
      const BufferNode* node = buffer.get();
      if (plan.shapes.at(node) == node->shape) continue;
      if (stored.count(node)) {
        for (BlockNode* other : sched::LeafBlocks(s.func)) {
          if (other != block.get() && sched::StoredBuffers(*other).count(node)) {
            Fail(p, "buffer " + node->name + " is also written by block '" + other->name + "'");
          }
        }
        out = buffer;
      } else {
        inputs.push_back(buffer);
      }
    }
    // The padded copies sit at the root beside the block's nest, as
    // cache_read's and cache_write's do.
    for (const Buffer& in : inputs) {
      if (const BlockNode* producer = SharingTheNest(s.func, *block, in.get(), /*writes=*/true)) {
        Fail(p, "block '" + producer->name + "' writes " + in->name + " in the loop nest of block '" + block->name +
                    "', so a padded copy of it beside that nest would run before it (pad before the compute_at)");
      }
    }
    if (out) {
      if (const BlockNode* reader = SharingTheNest(s.func, *block, out.get(), /*writes=*/false)) {
        Fail(p, "block '" + reader->name + "' reads " + out->name + " in the loop nest of block '" + block->name +
                    "', so the copy back from the padded buffer beside that nest would run after it (pad before "
                    "the compute_at)");
      }
    }
    auto& root = static_cast<BlockNode&>(*s.func.body);
    std::map<const BufferNode*, Buffer> replacement;
    for (const Buffer& in : inputs) {
      // in_pad[v] = v inside in ? in[v] : 0
      Buffer pad = MakeBuffer(in->name + "_pad", plan.shapes.at(in.get()), in->dtype, "global");
      auto copy = std::make_shared<BlockNode>();
      copy->name = sched::UniqueBlockName(s.func, pad->name);
      std::vector<Expr> vars;
      Expr inside;
      for (std::size_t d = 0; d < pad->shape.size(); ++d) {
        Expr v = MakeVar("v" + std::to_string(d));
        copy->iter_vars.push_back({v, pad->shape[d], IterKind::kSpatial});
        copy->bindings.push_back(IntImm(DataType::kInt32, 0));  // set by BuildNest
        vars.push_back(v);
        if (pad->shape[d] != in->shape[d]) inside = sched::AndPredicate(inside, v < static_cast<double>(in->shape[d]));
      }
      copy->body = MakeStore(pad, vars, Select(inside, Load(in, vars), MakeConst(in->dtype, 0)));
      sched::RecomputeRegions(*copy);
      InsertAtRoot(s.func, block.get(), FullNest(copy), /*after=*/false);
      root.alloc_buffers.push_back(pad);
      replacement[in.get()] = pad;
    }
    Buffer out_pad;
    if (out) {
      out_pad = MakeBuffer(out->name + "_pad", plan.shapes.at(out.get()), out->dtype, "global");
      replacement[out.get()] = out_pad;
    }
    for (const Stmt* part : {&block->init, &block->body}) {
      if (!*part) continue;
      for (StoreNode* st : sched::Stores(*part)) {
        if (auto it = replacement.find(st->buffer.get()); it != replacement.end()) st->buffer = it->second;
      }
      RewriteExprs(*part, [&](const Expr& e) {
        return RewriteLoads(e, [&](const Expr& load) -> Expr {
          auto it = replacement.find(load->buffer.get());
          return it == replacement.end() ? nullptr : Load(it->second, load->operands);
        });
      });
    }
    if (out) {
      // out[v] = out_pad[v] over out's own shape.
      auto crop = CopyBlock(s.func, out_pad, out, MakeBuffer(out->name + "_unpad", out->shape, out->dtype, "global"));
      InsertAtRoot(s.func, block.get(), FullNest(crop), /*after=*/true);
      root.alloc_buffers.push_back(out_pad);
    }
    for (std::size_t i = 0; i < block->iter_vars.size(); ++i) {
      block->iter_vars[i].extent = plan.extents[i];
      if (loop_of[i]) loop_of[i]->extent = plan.extents[i];
    }
    sched::RecomputeRegions(*block);
    return 0;
  });
  Record(s, "PadEinsum", {In(block_rv)}, {padding}, {});
}

}  // namespace tunedb::ir
