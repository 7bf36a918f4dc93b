// Small program queries shared by the schedule rules and the
// postprocessors, and the design space's branching on a rule's variants.
// Private to search/.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "ir/schedule/error.h"
#include "ir/schedule/schedule.h"
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

// Runs `rule` on a copy of each partial schedule; keeps the copies it
// accepted. When it accepts none, the schedule goes on unchanged. A
// ScheduleError is the rule declining; any other exception is a bug in it,
// which ends the design space with `what` (the rule and its block) in the
// message rather than a bare "vector::_M_range_check".
template <typename Rule>
std::vector<ir::Schedule> Branch(const std::vector<ir::Schedule>& partial, const std::vector<int>& variants,
                                 bool keep_original, const std::string& what, Rule&& rule) {
  std::vector<ir::Schedule> out;
  for (const ir::Schedule& s : partial) {
    std::size_t before = out.size();
    if (keep_original) out.push_back(s);
    for (int v : variants) {
      ir::Schedule copy = s;
      try {
        rule(copy, v);
        out.push_back(std::move(copy));
      } catch (const ir::ScheduleError&) {
      } catch (const std::exception& e) {
        throw std::logic_error("design space: " + what + ", variant " + std::to_string(v) + ": " + e.what() +
                               " (a bug in tunedb's schedule rules)");
      }
    }
    if (out.size() == before) out.push_back(s);
  }
  return out;
}

}  // namespace tunedb::search::internal
