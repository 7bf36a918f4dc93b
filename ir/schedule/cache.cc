// cache_read and cache_write: stage a buffer through a copy in another
// buffer (scope "global" or "local"), so that later compute_at /
// reverse_compute_at can localize the copy. The copy block covers the whole
// buffer and sits at the root, next to the block it serves.
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
    Buffer cache = StageBuffer(src, storage_scope);
    auto copy = CopyBlock(s.func, src, cache, cache);
    for (const Stmt* part : {&block->init, &block->body}) {
      RewriteExprs(*part, [&](const Expr& e) {
        return sched::ReplaceLoads(e, src.get(), [&](const Expr& load) { return Load(cache, load->operands); });
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

}  // namespace tunedb::ir
