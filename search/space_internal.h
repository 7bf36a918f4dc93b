// Small program queries shared by the schedule rules and the
// postprocessors. Private to search/.
#pragma once

#include <string>
#include <vector>

#include "ir/schedule/trace.h"
#include "ir/stmt.h"

namespace tunedb::search::internal {

using ir::UsesVar;

inline bool HasReduction(const ir::BlockNode& b) {
  for (const ir::IterVar& iv : b.iter_vars) {
    if (iv.kind == ir::IterKind::kReduce) return true;
  }
  return false;
}

// Whether a trace instruction annotates something with `key` (the root's
// meta_schedule.* annotations, which mutators and WithDecisionsOf edit).
inline bool IsAnnotateOf(const ir::Instruction& inst, const char* key) {
  return inst.kind == "Annotate" && inst.attrs.is_array() && !inst.attrs.empty() && inst.attrs[0].is_string() &&
         inst.attrs[0].get<std::string>() == key && inst.inputs.size() == 2;
}

// Names of every block but the root, in program order.
inline std::vector<std::string> BlockNames(const ir::PrimFunc& func) {
  std::vector<std::string> names;
  for (const ir::BlockNode* b : ir::CollectBlocks(func)) {
    if (b != &func.root()) names.push_back(b->name);
  }
  return names;
}

}  // namespace tunedb::search::internal
