// Random compute location (see rules.h).
#include "search/rules/rules.h"

namespace tunedb::search::rules {

void RandomComputeLocation(Schedule& sch, const std::string& name) {
  BlockRV b = sch.GetBlock(name);
  const BlockNode& node = sch.Get(b);
  if (node.writes.size() != 1 || IsParam(sch.func(), node.writes[0].buffer)) return;
  if (ir::ConsumerBlocks(sch.func(), node).empty()) return;
  try {
    LoopRV at = sch.SampleComputeLocation(b);
    sch.ComputeAt(b, at, /*preserve_unit_loops=*/true);
  } catch (const ScheduleError&) {
  }
}

}  // namespace tunedb::search::rules
