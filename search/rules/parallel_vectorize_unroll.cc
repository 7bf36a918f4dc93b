// Parallel, vectorize and unroll annotations of the root block (see rules.h).
#include "search/rules/rules.h"

#include <algorithm>

namespace tunedb::search::rules {

void ParallelVectorizeUnroll(Schedule& sch, const SpaceOptions& o) {
  BlockRV root = sch.GetBlock("root");
  sch.Annotate(root, "meta_schedule.parallel", std::int64_t{o.cores} * o.max_jobs_per_core);
  sch.Annotate(root, "meta_schedule.vectorize", std::int64_t{o.max_vectorize});
  std::vector<double> probs(o.unroll_steps.size(), 1.0 / static_cast<double>(o.unroll_steps.size()));
  // Recorded decision: 64 steps, enough to unroll a register block's rows
  // and reduction steps (the design space's own decisions, register_block.cc).
  std::optional<std::int64_t> decision;
  auto at = std::find(o.unroll_steps.begin(), o.unroll_steps.end(), 64);
  if (at != o.unroll_steps.end()) decision = at - o.unroll_steps.begin();
  ExprRV unroll = sch.SampleCategorical(o.unroll_steps, probs, decision);
  sch.Annotate(root, "meta_schedule.unroll_explicit", unroll);
}

}  // namespace tunedb::search::rules
