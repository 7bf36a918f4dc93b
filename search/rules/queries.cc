// Block and loop queries shared by the schedule rules (see queries.h).
#include "search/rules/queries.h"

#include <algorithm>

namespace tunedb::search::rules {

bool IsParam(const ir::PrimFunc& func, const ir::Buffer& buffer) {
  for (const ir::Buffer& p : func.params) {
    if (p.get() == buffer.get()) return true;
  }
  return false;
}

std::int64_t ExtentProduct(const BlockNode& b, IterKind kind) {
  std::int64_t p = 1;
  for (const ir::IterVar& iv : b.iter_vars) {
    if (iv.kind == kind) p *= iv.extent;
  }
  return p;
}

std::optional<std::vector<IterKind>> LoopKinds(Schedule& sch, BlockRV b, const std::vector<LoopRV>& loops) {
  const BlockNode& node = sch.Get(b);
  std::vector<IterKind> kinds;
  for (LoopRV l : loops) {
    const ir::ExprNode* var = sch.Get(l).loop_var.get();
    std::optional<IterKind> kind;
    for (std::size_t i = 0; i < node.bindings.size(); ++i) {
      if (node.bindings[i].get() == var) {
        kind = node.iter_vars[i].kind;
      } else if (UsesVar(node.bindings[i], var)) {
        return std::nullopt;
      }
    }
    kinds.push_back(kind.value_or(IterKind::kSpatial));
  }
  return kinds;
}

bool ReadUses(const ir::BufferRegion& read, const ir::ExprNode* var) {
  for (const ir::Range& range : read.ranges) {
    if (UsesVar(range.min, var)) return true;
  }
  return false;
}

std::vector<bool> DimensionsMovingWith(const BlockNode& node, const ir::BufferRegion& read,
                                       const ir::ExprNode* loop_var) {
  std::vector<bool> moves(read.ranges.size(), false);
  for (std::size_t i = 0; i < node.bindings.size(); ++i) {
    if (node.bindings[i].get() != loop_var) continue;
    for (std::size_t d = 0; d < read.ranges.size(); ++d) {
      moves[d] = moves[d] || UsesVar(read.ranges[d].min, node.iter_vars[i].var.get());
    }
  }
  return moves;
}

bool ReadMovesWith(const BlockNode& node, const ir::BufferRegion& read, const ir::ExprNode* loop_var) {
  std::vector<bool> moves = DimensionsMovingWith(node, read, loop_var);
  return std::find(moves.begin(), moves.end(), true) != moves.end();
}

int OutputElementBytes(const BlockNode& b) {
  return b.writes.empty() ? 4 : ir::DataTypeBytes(b.writes[0].buffer->dtype);
}

std::int64_t VectorLanes(const SpaceOptions& o, int element_bytes) {
  return std::max(1, o.vector_bits / 8 / element_bytes);
}

std::int64_t LargestDivisorAtMost(std::int64_t n, std::int64_t limit) {
  for (std::int64_t d = std::min(n, std::max<std::int64_t>(limit, 1)); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

IterShape IterShapeOf(const BlockNode& b) {
  IterShape shape;
  for (const ir::IterVar& iv : b.iter_vars) {
    shape.extents.push_back(iv.extent);
    shape.kinds.push_back(iv.kind);
  }
  return shape;
}

int VectorLoop(const std::vector<std::int64_t>& extents, const std::vector<IterKind>& kinds) {
  for (std::size_t i = extents.size(); i-- > 0;) {
    if (kinds[i] == IterKind::kSpatial && extents[i] > 1) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace tunedb::search::rules
