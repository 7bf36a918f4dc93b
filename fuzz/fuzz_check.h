// What the fuzz targets check, and how they report a finding.
//
// A finding is an input that breaks a promise tunedb makes about text it
// is handed: it is parsed or refused with the module's own error naming
// where; a program it accepts is valid and round-trips; a schedule it
// accepts computes what the unscheduled program computes, and its trace
// replays to the same program. A finding aborts, so that libFuzzer (or
// the replay driver, replay_main.cc) reports it with the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ir/schedule/schedule.h"
#include "ir/schedule/trace.h"
#include "ir/structural.h"
#include "tests/ir/schedule/same_result.h"

namespace tunedb::fuzz {

[[noreturn]] inline void Finding(const std::string& what) {
  std::fprintf(stderr, "finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Programs larger than this are not interpreted: a padding far past the
// shape makes a valid program of gigabytes, and the interpreter would
// spend the fuzzer's time on it.
inline constexpr std::int64_t kMaxInterpretedBytes = std::int64_t{1} << 20;

// The sum over an unscheduled program's blocks of their iteration domains:
// what the interpreter would run.
inline std::int64_t Iterations(const ir::PrimFunc& f) {
  constexpr std::int64_t kCap = std::int64_t{1} << 40;
  std::int64_t total = 0;
  for (const ir::BlockNode* block : ir::CollectBlocks(f)) {
    std::int64_t n = 1;
    for (const ir::IterVar& iv : block->iter_vars) n = iv.extent > 0 && n <= kCap / iv.extent ? n * iv.extent : kCap;
    total += n;
  }
  return total;
}
inline constexpr std::int64_t kMaxInterpretedIterations = 200'000;

// Whether an unscheduled program is small enough to run: a text that loops
// for long, or holds gigabytes, is parsed and checked, not run.
inline bool SmallEnoughToRun(const ir::PrimFunc& f) {
  return ir::testing::LargestBufferBytes(f) <= kMaxInterpretedBytes && Iterations(f) <= kMaxInterpretedIterations;
}

// The checks on a schedule that was accepted: its program computes what
// `reference` computes on random inputs, and its trace, through its JSON
// text, replays onto `reference` to the same program (and so does the
// trace simplified, which is what the database stores).
inline void CheckSchedule(const ir::PrimFunc& reference, const ir::Schedule& sch, std::string_view context) {
  const std::string where(context);
  if (ir::testing::LargestBufferBytes(sch.func()) <= kMaxInterpretedBytes) {
    std::string why = ir::testing::SameResult(reference, sch.func());
    if (!why.empty()) Finding(where + ": the schedule changed what the program computes: " + why);
  }
  const std::uint64_t hash = ir::StructuralHash(sch.func());
  for (bool simplified : {false, true}) {
    const ir::Trace trace = simplified ? sch.trace().Simplified(false) : sch.trace();
    try {
      ir::Schedule again = ir::ReplayTrace(reference, ir::Trace::FromJsonText(trace.ToJson().dump()), 0);
      if (ir::StructuralHash(again.func()) != hash) {
        Finding(where + ": the " + (simplified ? "simplified " : "") + "trace replays to another program");
      }
    } catch (const std::exception& e) {
      Finding(where + ": the " + (simplified ? "simplified " : "") + "trace does not replay: " + e.what());
    }
  }
}

}  // namespace tunedb::fuzz
