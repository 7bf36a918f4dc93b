// Postprocessors: the root block's meta_schedule.* annotations become real
// loop kinds, and reductions are decomposed (see space.h). They run after
// EnterPostproc, so a stored trace replays them exactly, and the search can
// drop them (remove_postproc) to get back the design trace it mutates.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ir/flops.h"
#include "search/rules/queries.h"
#include "search/space.h"
#include "search/space_internal.h"

namespace tunedb::search {
namespace {

using internal::BlockNames;
using internal::HasReduction;
using internal::UsesVar;
using ir::BlockNode;
using ir::BlockRV;
using ir::ForNode;
using ir::IterKind;
using ir::LoopRV;
using ir::Schedule;
using ir::ScheduleError;

// True when no block under the loop binds a reduction iter var to it: only
// such loops may run in parallel or as vector lanes.
bool IsSpatialLoop(const ForNode& loop) {
  bool spatial = true;
  ir::VisitStmt(loop.body, [&](const ir::Stmt& s) {
    if (s->kind != ir::StmtKind::kBlock) return;
    const auto& b = static_cast<const BlockNode&>(*s);
    for (std::size_t i = 0; i < b.iter_vars.size(); ++i) {
      if (b.iter_vars[i].kind == IterKind::kReduce && UsesVar(b.bindings[i], loop.loop_var.get())) spatial = false;
    }
  });
  return spatial;
}

// Where a block's parallel band starts: its outermost loop, or the loop
// after the last of its leading one-iteration loops that holds more than
// this block's nest. A packing copy computed at a tile loop of one
// iteration shares that loop with the product it feeds, and a band that
// started there stopped at once, so the product ran on one core (a
// low-rank chain's first product, (X A^T) of rank 32: bench/RESULTS.md,
// session 83).
std::size_t BandStart(Schedule& sch, const std::vector<LoopRV>& loops) {
  std::size_t start = 0;
  for (std::size_t i = 0; i + 1 < loops.size(); ++i) {
    const ForNode& f = sch.Get(loops[i]);
    if (f.extent != 1) break;
    if (f.body.get() != &sch.Get(loops[i + 1])) start = i + 1;
  }
  return start;
}

// One block name per loop nest directly under the root, or, `by_band`,
// per parallel band: the nests under a shared loop of one iteration are
// bands of their own.
std::vector<std::string> Representatives(Schedule& sch, bool by_band) {
  std::vector<std::string> reps;
  std::set<const ForNode*> seen;
  for (const std::string& name : BlockNames(sch.func())) {
    std::vector<LoopRV> loops = sch.GetLoops(sch.GetBlock(name));
    if (loops.empty()) continue;
    const std::size_t outer = by_band ? BandStart(sch, loops) : 0;
    if (seen.insert(&sch.Get(loops[outer])).second) reps.push_back(name);
  }
  return reps;
}

std::optional<std::int64_t> IntAnnotation(const ir::Annotations& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end() || !std::holds_alternative<std::int64_t>(it->second)) return std::nullopt;
  return std::get<std::int64_t>(it->second);
}

// TVM's RewriteReductionBlock: the init moves before the outermost
// reduction loop, so the inner loops are pure multiply-accumulate.
void DecomposeReductions(Schedule& sch) {
  for (const std::string& name : BlockNames(sch.func())) {
    BlockRV b = sch.GetBlock(name);
    if (!sch.Get(b).init) continue;
    std::vector<LoopRV> loops = sch.GetLoops(b);
    const BlockNode& node = sch.Get(b);
    for (LoopRV l : loops) {
      const ir::ExprNode* var = sch.Get(l).loop_var.get();
      bool reduce = false;
      for (std::size_t i = 0; i < node.iter_vars.size(); ++i) {
        reduce = reduce || (node.iter_vars[i].kind == IterKind::kReduce && UsesVar(node.bindings[i], var));
      }
      if (!reduce) continue;
      try {
        sch.DecomposeReduction(b, l);
      } catch (const ScheduleError&) {
        // The init stays guarded inside the loop nest: slower, still correct.
      }
      break;
    }
  }
}

// Fuses the outer spatial loops of each nest while their extent product
// stays within max_jobs, and runs the fused loop in parallel. The first loop
// of more than one iteration is taken whatever its extent: loops of one
// iteration before it (a batch of one) must not leave the nest serial. So
// is the next one while the jobs are odd and fewer than a quarter of
// max_jobs (4 a core at TVM's 16 a core): the runtime gives each thread one
// contiguous chunk, and 3 jobs on 2 threads left one idle a third of the
// time, where 3 x 37 shares evenly (a plane reduction of 3 x 37 x 29 x 29:
// 9.1-9.4 us, 6.9-7.8 with the next loop fused; bench/RESULTS.md, session
// 74). An even count shares evenly already; fusing more there changed
// which loops the unroll pragma reaches, and a padded matmul 127 design
// with 4 jobs went from 21 to 36 us.
void ParallelizeOuterLoops(Schedule& sch, std::int64_t max_jobs) {
  for (const std::string& rep : Representatives(sch, /*by_band=*/true)) {
    std::vector<LoopRV> all = sch.GetLoops(sch.GetBlock(rep));
    const std::vector<LoopRV> loops(all.begin() + static_cast<std::ptrdiff_t>(BandStart(sch, all)), all.end());
    std::size_t n = 0;
    std::int64_t jobs = 1;
    for (std::size_t i = 0; i < loops.size(); ++i) {
      const ForNode& f = sch.Get(loops[i]);
      if (f.for_kind != ir::ForKind::kSerial || !IsSpatialLoop(f)) break;
      const bool too_few_to_share = jobs % 2 == 1 && jobs * 4 < max_jobs;
      if (jobs > 1 && jobs * f.extent > max_jobs && !too_few_to_share) break;
      jobs *= f.extent;
      ++n;
      bool only_child = i + 1 < loops.size() && f.body.get() == &sch.Get(loops[i + 1]);
      if (!only_child) break;
    }
    if (n == 0 || jobs < 2) continue;
    try {
      LoopRV fused = n == 1 ? loops[0] : sch.Fuse({loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(n)});
      sch.Parallel(fused);
    } catch (const ScheduleError&) {
      // left serial: a legal candidate, just slower
    }
  }
}

// Vectorizes each block's innermost loop when it is spatial and holds only
// that block: whole when it is at most max_lanes long; longer, the inner
// part of a split by its largest divisor up to max_lanes, when that is a
// vector's worth (kMinSplitLanes). The rules tile what they vectorize, but
// leave an elementwise output's rows whole, and a row of 112 was left to
// LLVM, which did not vectorize a 2x upsampling (bench/RESULTS.md,
// session 65).
constexpr std::int64_t kMinSplitLanes = 8;

void VectorizeInnerLoops(Schedule& sch, std::int64_t max_lanes) {
  for (const std::string& name : BlockNames(sch.func())) {
    BlockRV b = sch.GetBlock(name);
    std::vector<LoopRV> loops = sch.GetLoops(b);
    if (loops.empty()) continue;
    const ForNode& f = sch.Get(loops.back());
    if (f.body.get() != &sch.Get(b) || f.for_kind != ir::ForKind::kSerial) continue;
    if (f.extent < 2 || !IsSpatialLoop(f)) continue;
    const std::int64_t lanes = rules::LargestDivisorAtMost(f.extent, max_lanes);
    if (lanes != f.extent && lanes < kMinSplitLanes) continue;
    try {
      LoopRV inner = loops.back();
      if (lanes != f.extent) inner = sch.Split(inner, {std::monostate{}, lanes}).back();
      sch.Vectorize(inner);
    } catch (const ScheduleError&) {
    }
  }
}

void AnnotateUnroll(Schedule& sch, std::int64_t max_step) {
  for (const std::string& rep : Representatives(sch, /*by_band=*/false)) {
    LoopRV outer = sch.GetLoops(sch.GetBlock(rep)).front();
    sch.Annotate(outer, "pragma_auto_unroll_max_step", max_step);
    sch.Annotate(outer, "pragma_unroll_explicit", std::int64_t{1});
  }
}

}  // namespace

void ApplyPostprocessors(Schedule& sch) {
  sch.EnterPostproc();
  BlockRV root = sch.GetBlock("root");
  const ir::Annotations annotations = sch.Get(root).annotations;
  auto parallel = IntAnnotation(annotations, "meta_schedule.parallel");
  auto vectorize = IntAnnotation(annotations, "meta_schedule.vectorize");
  auto unroll = IntAnnotation(annotations, "meta_schedule.unroll_explicit");
  for (const char* key : {"meta_schedule.parallel", "meta_schedule.vectorize", "meta_schedule.unroll_explicit"}) {
    if (annotations.count(key)) sch.Unannotate(root, key);
  }
  DecomposeReductions(sch);
  // The parallel mutator can make any program serial, but a tiny one should
  // not have to find it (internal::kMinParallelStores).
  const bool worth_threads = ir::CountBlockInstances(sch.func()) >= internal::kMinParallelStores;
  if (parallel && *parallel > 1 && worth_threads) ParallelizeOuterLoops(sch, *parallel);
  if (vectorize && *vectorize > 1) VectorizeInnerLoops(sch, *vectorize);
  if (unroll && *unroll > 0) AnnotateUnroll(sch, *unroll);
}

}  // namespace tunedb::search
