// Small program queries shared by the schedule rules and the
// postprocessors, and the design space's branching on a rule's variants.
// Private to search/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
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

// The categorical samples, with a decision, whose value annotates the root
// with `key` (the unroll depth; the parallel limit where the space samples
// it, below), as indices into design.insts.
inline std::vector<std::size_t> SamplesAnnotating(const ir::Trace& design, const char* key) {
  std::vector<std::size_t> sites;
  for (const ir::Instruction& inst : design.insts) {
    if (!IsAnnotateOf(inst, key)) continue;
    const auto* value = std::get_if<ir::RVRef>(&inst.inputs[1]);
    if (!value) continue;
    for (const auto& [index, decision] : design.decisions) {
      const ir::Instruction& s = design.insts[index];
      if (s.kind == "SampleCategorical" && !s.outputs.empty() && s.outputs[0] == *value) sites.push_back(index);
    }
  }
  return sites;
}

// Whether threads pay depends on how much work a program does against what
// a parallel loop's dispatch costs, counted here as the program's block
// instances (ir::CountBlockInstances: its stores).
//
// Below kMinParallelStores the postprocessors leave a program serial. Two
// threads pay when the serial work exceeds twice a parallel loop's
// dispatch: 0.16-0.35 us on an idle Zen 4 VM and 0.8-1.0 us on a Zen 5
// one (bench/parallel_bench), which one core spends on 15000-100000
// multiply-adds of a small product. A tuned 16 x 32 x 16 dense layer and
// the next took 1.2 us end to end in parallel, 0.24 us serial
// (bench/RESULTS.md, session 83).
//
// From there up to kSampledParallelStores the design space samples serial
// or parallel, half and half, and measurement decides: which wins there
// depends on the machine's dispatch and on the program (on the Zen 5 VM,
// matmul 40 x 40 x 40 ran 180 GFLOP/s serial against 137 parallel, while
// a 1 x 512 x 128 dense layer, bound by memory, ran 45 serial against 59
// parallel; session 84). Above it the space is parallel, and only the
// parallel mutator makes a program serial.
inline constexpr std::int64_t kMinParallelStores = std::int64_t{1} << 15;
inline constexpr std::int64_t kSampledParallelStores = std::int64_t{1} << 18;

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
//
// Every block's variants multiply the partial schedules, so a file of
// several tiled stages would have thousands (a three-layer MLP with a
// softmax: 4536, 5 s to build, and a search that spread each batch over
// them). Past `max_out`, the product is cut to what keeps every variant
// of every block: the first partial (every earlier block's first variant)
// with each of this block's variants, each other partial with its first
// accepted one, and, as room allows, the pairs nearest the first ones (the
// smallest sum of the two positions; both lists go best first).
template <typename Rule>
std::vector<ir::Schedule> Branch(const std::vector<ir::Schedule>& partial, const std::vector<int>& variants,
                                 bool keep_original, const std::string& what, Rule&& rule,
                                 std::size_t max_out = SIZE_MAX) {
  // The largest sum of positions whose pairs, with the ones kept anyway,
  // number at most max_out (counted as if the rule accepted every variant).
  const std::size_t m = partial.size(), n = variants.size() + (keep_original ? 1 : 0);
  std::size_t diagonal = SIZE_MAX;
  if (m > 0 && n > 0 && m > max_out / n) {
    diagonal = 0;
    auto count = [&](std::size_t d) {
      std::size_t c = 0;
      for (std::size_t i = 0; i < m; ++i) {
        c += i == 0 ? n : 1 + (d > i ? std::min(n - 1, d - i) : 0);
      }
      return c;
    };
    while (diagonal < m + n && count(diagonal + 1) <= max_out) ++diagonal;
  }
  std::vector<ir::Schedule> out;
  for (std::size_t i = 0; i < m; ++i) {
    const ir::Schedule& s = partial[i];
    std::size_t before = out.size();
    // Position j among s's accepted variants (the original counts first).
    auto wanted = [&]() {
      std::size_t j = out.size() - before;
      return i == 0 || j == 0 || i + j <= diagonal;
    };
    if (keep_original) out.push_back(s);
    for (int v : variants) {
      if (!wanted()) break;
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
