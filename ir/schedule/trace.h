// Traces: the record of every schedule call, the currency between tunedb's
// modules (the database stores them, the search mutates them, the cost
// model featurizes the programs they produce).
//
// An instruction is [kind, inputs, attrs, outputs] as in TVM MetaSchedule:
// kinds are TVM's names ("GetBlock", "Split", "SamplePerfectTile", ...),
// inputs are random variables or literals, attrs are JSON values, outputs
// are random variables. Sampling instructions have a decision, kept beside
// the instructions.
//
// Forms:
//  - JSON, TVM's layout: [[inst, ...], [[inst_index, decision], ...]] with
//    random variables named b0/l1/v2 by order of definition, strings quoted
//    inside the JSON string ("\"SSRSRS\""), None as "None". "GetSBlock"
//    (TVM >= 0.24) is read as "GetBlock".
//  - Script, TVM's trace.show(): one Python-like line per instruction,
//      l4, l5 = sch.split(loop=l2, factors=[None, 4], preserve_unit_iters=True, ...)
//    and parsed back by script.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace tunedb::ir {

enum class RVKind : std::uint8_t { kBlock, kLoop, kExpr };

struct RVRef {
  RVKind kind;
  int id;
  bool operator==(const RVRef& o) const { return kind == o.kind && id == o.id; }
  bool operator<(const RVRef& o) const { return kind != o.kind ? kind < o.kind : id < o.id; }
};

// An instruction input: None, a random variable, or a literal.
using InstInput = std::variant<std::monostate, RVRef, std::int64_t, double, std::string>;

struct Instruction {
  std::string kind;
  std::vector<InstInput> inputs;
  nlohmann::json attrs = nlohmann::json::array();
  std::vector<RVRef> outputs;
};

struct Trace {
  std::vector<Instruction> insts;
  std::map<std::size_t, nlohmann::json> decisions;  // instruction index -> decision

  // TVM's JSON layout (see the file comment).
  nlohmann::json ToJson() const;
  // Throws ScheduleError naming the instruction and what is wrong.
  static Trace FromJson(const nlohmann::json& j);
  static Trace FromJsonText(std::string_view text);

  // One line per instruction, as TVM's trace.show() prints it.
  std::string AsScript() const;

  // The trace without instructions whose results are never used and that
  // change nothing (lookups and samples), and, when remove_postproc, without
  // everything from EnterPostproc on.
  Trace Simplified(bool remove_postproc) const;

  // Indices of the sampling instructions, in order.
  std::vector<std::size_t> SamplingInstructions() const;
};

// The traces one after another, as one trace: each one's random variables
// renumbered past those of the traces before it, its decisions kept. How
// the schedules of a program's parts are applied to the whole program
// (ir/parts.h); replaying it fails where one part's schedule does not fit
// what the parts before it did.
Trace ConcatTraces(const std::vector<Trace>& traces);

// Instruction kinds that sample (and so carry a decision).
bool IsSamplingKind(std::string_view kind);

}  // namespace tunedb::ir
