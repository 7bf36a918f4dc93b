// Parallel, vectorize and unroll annotations of the root block (see rules.h).
#include "search/rules/rules.h"

#include <algorithm>

#include "ir/flops.h"
#include "search/space_internal.h"

namespace tunedb::search::rules {

void ParallelVectorizeUnroll(Schedule& sch, const SpaceOptions& o) {
  BlockRV root = sch.GetBlock("root");
  const std::int64_t max_jobs = std::int64_t{o.cores} * o.max_jobs_per_core;
  const std::int64_t stores = ir::CountBlockInstances(sch.func());
  if (max_jobs > 1 && stores >= internal::kMinParallelStores && stores < internal::kSampledParallelStores) {
    // Small enough that serial may win: sample it (space_internal.h).
    // Recorded decision: parallel, as above the range.
    ExprRV jobs = sch.SampleCategorical({1, max_jobs}, {0.5, 0.5}, std::int64_t{1});
    sch.Annotate(root, "meta_schedule.parallel", jobs);
  } else {
    sch.Annotate(root, "meta_schedule.parallel", max_jobs);
  }
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
