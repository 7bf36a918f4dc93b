// The default design space (see space.h): the schedule rules under
// search/rules/ applied to every block, consumer to producer, each
// branching the partial schedules into its variants; and the replay
// of designs into candidates.
#include "search/space.h"
#include "search/rules/rules.h"

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ir/flops.h"
#include "ir/schedule/script.h"
#include "ir/structural.h"
#include "search/space_internal.h"

namespace tunedb::search {

// The rules, and the names they use (search/rules/rules.h).
using namespace rules;
using internal::Branch;

SpaceOptions SpaceOptionsFor(int cores, int vector_bits) {
  SpaceOptions o;
  o.cores = cores;
  o.vector_bits = vector_bits;
  // AVX-512 has 32 vector registers, AVX2 and SSE 16.
  o.vector_registers = vector_bits >= 512 ? 32 : 16;
  o.accumulator_vectors = o.vector_registers / 2;
  return o;
}

std::vector<ir::Trace> DefaultDesignSpace(const ir::PrimFunc& workload, const SpaceOptions& options) {
  // Every stage inlined where it can be; when some transcendental stage has
  // several readers, a second start keeping those stages; and when a
  // padding stage was inlined, a last start keeping it (TVM's CPU rules
  // always keep it). Last, because a cold search measures the first spaces'
  // register blocks first (strategy.h), and the benchmark's convolution
  // does as well with its padding inlined (bench/RESULTS.md, session 66).
  Schedule base(workload, /*seed=*/0), shared(workload, /*seed=*/0), padded(workload, /*seed=*/0);
  bool keeps_shared = false;
  std::vector<std::string> paddings;
  for (const std::string& name : BlockNames(workload)) {
    AutoInline(base, name);
    if (TranscendentalSharedStage(shared.func(), shared.Get(shared.GetBlock(name)))) {
      keeps_shared = true;
    } else {
      AutoInline(shared, name);
    }
    if (PaddingStage(padded.func(), padded.Get(padded.GetBlock(name)))) {
      paddings.push_back(name);
    } else {
      AutoInline(padded, name);
    }
  }
  auto has_block = [](const Schedule& s, const std::string& name) {
    std::vector<std::string> blocks = BlockNames(s.func());
    return std::find(blocks.begin(), blocks.end(), name) != blocks.end();
  };
  const bool keeps_padding =
      std::any_of(paddings.begin(), paddings.end(), [&](const std::string& name) { return !has_block(base, name); });

  std::vector<Schedule> partial{base};
  if (keeps_shared) partial.push_back(shared);
  if (keeps_padding) partial.push_back(padded);
  // The workload's blocks, of which each start holds some.
  std::vector<std::string> names = BlockNames(workload);
  // Consumers before producers: a producer's compute location is chosen
  // among its consumer's (already tiled) loops.
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    const std::string& name = *it;
    const std::string where = "block '" + name + "'";  // in a rule's bug report
    // Inlined (into its consumer's write-back, by an earlier rule), or kept
    // only in the start that keeps shared stages.
    auto holder = std::find_if(partial.begin(), partial.end(), [&](const Schedule& s) { return has_block(s, name); });
    if (holder == partial.end()) continue;
    Schedule probe = *holder;
    BlockRV block = probe.GetBlock(name);
    const BlockNode& node = probe.Get(block);
    if (NeedsMultiLevelTiling(node) || ReducesAlongColumns(node, options)) {
      // In the order a cold search measures the variants' own register
      // blocks (strategy.h), of which a small first batch measures only
      // the first few. The accumulator at level 2 first: it is exactly the
      // register block the recorded decisions make, where at level 1 it
      // spans the middle tiles too. With it, the operand read as vectors
      // (matmul's B, dense's W) packed, as BLAS does, and not packed,
      // which wins where the operand is small or already contiguous (a
      // convolution's weights, matmul 128); then the same at level 1; the
      // other inputs packed; no write cache last. Sessions of 4 trials,
      // seeds 0-3, the kept kernels re-timed side by side, before (no write
      // cache first) and after: dense_bias_relu 128 x 784 x 128 38.0 ->
      // 201.7 GFLOP/s, matmul 1024 179.9 -> 208.7, matmul 127 x 129 x 131
      // 57.5 -> 91.3 (bench/RESULTS.md, session 38).
      // A read as its buffer's name and which of that buffer's reads it is.
      auto name_of = [&](int read) {
        const std::string& name = node.reads[static_cast<std::size_t>(read)].buffer->name;
        int nth = 0;
        for (int r = 0; r < read; ++r) nth += node.reads[static_cast<std::size_t>(r)].buffer->name == name;
        return std::make_pair(name, nth);
      };
      std::vector<std::pair<std::string, int>> vector_operands, other_inputs;
      for (int input : ReusedInputs(node)) {
        (IsVectorOperand(node, input) ? vector_operands : other_inputs).push_back(name_of(input));
      }
      std::vector<TilingVariant> variants;
      for (int level : {2, 1}) {
        for (const auto& [input, nth] : vector_operands) variants.push_back({level, input, false, -1, nth});
        variants.push_back({level, ""});
      }
      for (int level : {2, 1}) {
        for (const auto& [input, nth] : other_inputs) variants.push_back({level, input, false, -1, nth});
      }
      variants.push_back({0, ""});
      // With padding, the variants with a write cache again on the padded
      // block (the accumulator's write-back is where the padding is cut
      // off), first: a cold search measures the first spaces' own register
      // blocks first (strategy.h), and unpadded, prime extents have none.
      std::vector<std::int64_t> padding = RegisterBlockPadding(node, options);
      if (!padding.empty()) {
        // pad_einsum refuses some paddings (an index not linear in a padded
        // variable, as an upsampling's h / 2; a padded reduction whose added
        // terms would not be 0); then there are no padded variants. A
        // convolution's window it would pad, but RegisterBlockPadding leaves
        // windows out.
        try {
          Schedule trial = probe;
          trial.PadEinsum(trial.GetBlock(name), padding);
        } catch (const ScheduleError&) {
          padding.clear();
        }
      }
      if (!padding.empty()) {
        std::vector<TilingVariant> padded;
        for (const TilingVariant& v : variants) {
          if (v.write_cache_level > 0) {
            padded.push_back({v.write_cache_level, v.read_cache, true, -1, v.read_cache_nth});
          }
        }
        variants.insert(variants.begin(), padded.begin(), padded.end());
      }
      // Lanes along the batch, first again: where they apply, they save
      // packing most of what the block reads.
      const auto [lanes_loop, lanes_input] = BatchLanesLoop(node, options, padding);
      if (lanes_loop >= 0) {
        const auto [input, nth] = name_of(lanes_input);
        variants.insert(variants.begin(),
                        {{1, input, false, lanes_loop, nth}, {2, input, false, lanes_loop, nth}});
      }
      // A matrix-vector product's vector rfactor (-1) goes first too, after
      // them, for the same reason.
      std::vector<int> indices;
      for (std::size_t v = 0; v < variants.size(); ++v) indices.push_back(static_cast<int>(v));
      if (StreamedInput(node, options.accumulator_vectors) >= 0) {
        indices.insert(indices.begin() + (lanes_loop >= 0 ? 2 : 0), -1);
      }
      partial = Branch(partial, indices, false, "multi-level tiling of " + where, [&](Schedule& s, int v) {
        if (v < 0) {
          MatrixVectorRFactor(s, name, options);
          return;
        }
        const TilingVariant& variant = variants[static_cast<std::size_t>(v)];
        if (!variant.padded) {
          MultiLevelTiling(s, name, variant, options);
          return;
        }
        std::vector<std::string> before = BlockNames(s.func()), added;
        s.PadEinsum(s.GetBlock(name), padding);
        for (const std::string& block : BlockNames(s.func())) {
          if (std::find(before.begin(), before.end(), block) == before.end()) added.push_back(block);
        }
        MultiLevelTiling(s, name, variant, options);
        InlinePaddedInputs(s, added);
      }, options.max_spaces);
    } else if (NeedsRFactor(node, options) || NeedsVectorRFactor(node)) {
      // Variants 0 and 1 factor the outer or inner part of the reduction
      // into a new leading axis (more parallel jobs); 2 factors a vector;
      // 3 both jobs and a vector.
      std::vector<int> variants;
      if (NeedsRFactor(node, options)) variants = {0, 1};
      if (NeedsVectorRFactor(node)) variants.push_back(2);
      if (NeedsParallelVectorRFactor(node, options)) variants.push_back(3);
      partial = Branch(partial, variants, true, "rfactor of " + where, [&](Schedule& s, int v) {
        if (v == 3) {
          ParallelRowVectorRFactor(s, name, options);
        } else if (v == 2) {
          // A row reduction streams its input as a matrix-vector product
          // does: its rows' partial sums go in registers the same way.
          Schedule blocked = s;
          try {
            MatrixVectorRFactor(blocked, name, options);
            s = std::move(blocked);
          } catch (const ScheduleError&) {
            RowVectorRFactor(s, name, options);
          }
        } else {
          RFactor(s, name, v, options.max_vectorize);
        }
      }, options.max_spaces);
    } else if (TransposedLoops(node).first >= 0 && IsParam(probe.func(), node.writes[0].buffer)) {
      // An output that transposes (an intermediate one is computed where
      // its consumer reads it, below, or inlined).
      partial = Branch(partial, {0}, false, "transposes in blocks of " + where, [&](Schedule& s, int) {
        if (has_block(s, name)) TransposeInBlocks(s, name, options);
      });
    } else if (WindowLanesLoop(node) >= 0) {
      // A pooling window: moved outside the vector lanes first, and as
      // before (a compute location) second.
      partial = Branch(partial, {0, 1}, false, "window outside the lanes of " + where, [&](Schedule& s, int v) {
        if (v == 0) {
          if (!has_block(s, name)) throw ScheduleError("window outside the lanes: no block " + name);
          WindowOutsideLanes(s, name, options);
        } else if (has_block(s, name)) {
          RandomComputeLocation(s, name);
        }
      }, options.max_spaces);
    } else {
      for (Schedule& s : partial) {
        if (has_block(s, name)) RandomComputeLocation(s, name);
      }
    }
  }
  std::vector<ir::Trace> spaces;
  for (Schedule& s : partial) {
    ParallelVectorizeUnroll(s, options);
    spaces.push_back(s.trace());
  }
  return spaces;
}

std::vector<ir::Trace> ScriptDesignSpace(const ir::PrimFunc& workload, const std::string& script,
                                         const std::string& file_name) {
  Schedule sch(workload, /*seed=*/0);
  ir::RunScheduleScript(sch, script, file_name);
  return {sch.trace()};
}

std::string VariantOf(const ir::Trace& design) {
  std::string key;
  for (const ir::Instruction& inst : design.insts) {
    key += inst.kind + inst.attrs.dump();
    for (const ir::InstInput& in : inst.inputs) {
      if (const ir::RVRef* rv = std::get_if<ir::RVRef>(&in)) {
        key += " " + std::to_string(static_cast<int>(rv->kind)) + ":" + std::to_string(rv->id);
      }
    }
    key += ";";
  }
  return key;
}

namespace {

bool IsParallelLimit(const ir::Instruction& inst) {
  return internal::IsAnnotateOf(inst, "meta_schedule.parallel") && std::holds_alternative<std::int64_t>(inst.inputs[1]);
}

}  // namespace

ir::Trace WithDecisionsOf(const ir::Trace& onto, const ir::Trace& design) {
  // design's sampling instructions by kind, in order.
  std::map<std::string, std::vector<std::size_t>> samples;
  for (std::size_t index : design.SamplingInstructions()) samples[design.insts[index].kind].push_back(index);
  const ir::Instruction* parallel = nullptr;
  for (const ir::Instruction& inst : design.insts) {
    if (IsParallelLimit(inst)) parallel = &inst;
  }
  ir::Trace out = WithoutDecisions(onto);
  std::map<std::string, std::size_t> seen;
  for (std::size_t index : onto.SamplingInstructions()) {
    const ir::Instruction& inst = onto.insts[index];
    std::size_t k = seen[inst.kind]++;
    auto it = samples.find(inst.kind);
    if (it == samples.end() || k >= it->second.size()) continue;
    std::size_t from = it->second[k];
    auto decision = design.decisions.find(from);
    if (decision != design.decisions.end() && design.insts[from].attrs == inst.attrs) {
      out.decisions[index] = decision->second;
    }
  }
  if (parallel) {
    for (ir::Instruction& inst : out.insts) {
      if (IsParallelLimit(inst)) inst.inputs[1] = parallel->inputs[1];
    }
  }
  return out;
}

ir::Trace WithoutDecisions(const ir::Trace& design) {
  ir::Trace t = design;
  t.decisions.clear();
  return t;
}

std::optional<Candidate> Realize(const ir::PrimFunc& workload, const ir::Trace& design, std::uint64_t seed) {
  try {
    Schedule sch = ir::ReplayTrace(workload, design, seed, /*remove_postproc=*/true);
    Candidate c;
    c.design = sch.trace();
    ApplyPostprocessors(sch);
    c.trace = sch.trace();
    c.program = sch.func();
    c.program_hash = ir::StructuralHash(c.program);
    return c;
  } catch (const std::exception&) {
    // IrError is the expected refusal; anything else is a bug in a rule or
    // primitive, and still only costs this candidate.
    return std::nullopt;
  }
}

std::vector<std::optional<Candidate>> RealizeBatch(const ir::PrimFunc& workload,
                                                   const std::vector<RealizeRequest>& requests, int threads) {
  std::vector<std::optional<Candidate>> out(requests.size());
  int n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n = std::min<int>(n, static_cast<int>(requests.size()));
  // Each Schedule clones the workload; the threads share only immutable
  // expressions. Work is dealt round robin, so results are in request order.
  auto work = [&](int t) {
    for (std::size_t i = static_cast<std::size_t>(t); i < requests.size(); i += static_cast<std::size_t>(std::max(1, n))) {
      out[i] = Realize(workload, *requests[i].design, requests[i].seed);
    }
  };
  if (n <= 1) {
    work(0);
    return out;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < n; ++t) pool.emplace_back(work, t);
  for (std::thread& th : pool) th.join();
  return out;
}

std::optional<ir::Trace> DesignOf(const ir::PrimFunc& workload, const ir::Trace& stored) {
  ir::Trace design;
  try {
    design = ir::ReplayTrace(workload, stored, /*seed=*/0, /*remove_postproc=*/true).trace();
  } catch (const ir::IrError&) {
    return std::nullopt;
  }
  // A record of another shape (transfer, a part's seeds) may carry the
  // serial-or-parallel sample of a program in the sampled range, decided
  // serial there. Above the range this workload's own space is parallel
  // (space_internal.h), so the sample takes its parallel candidate; the
  // parallel mutator can still try serial. Below the range the
  // postprocessors leave any program serial.
  if (ir::CountBlockInstances(workload) >= internal::kSampledParallelStores) {
    for (std::size_t index : internal::SamplesAnnotating(design, "meta_schedule.parallel")) {
      const nlohmann::json& candidates = design.insts[index].attrs[0];
      if (!candidates.is_array() || candidates.empty()) continue;
      std::size_t widest = 0;
      for (std::size_t i = 1; i < candidates.size(); ++i) {
        if (candidates[i].is_number_integer() && candidates[widest].is_number_integer() &&
            candidates[i].get<std::int64_t>() > candidates[widest].get<std::int64_t>()) {
          widest = i;
        }
      }
      design.decisions[index] = static_cast<std::int64_t>(widest);
    }
  }
  return design;
}

}  // namespace tunedb::search
