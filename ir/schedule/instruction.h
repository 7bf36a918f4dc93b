// Instruction kinds: for each TVM instruction kind, its Python method name,
// its parameters (which become inputs, attrs or the decision), and how it is
// applied to a Schedule. The trace's JSON form, its script form and replay
// all go through this one table, so the three cannot drift apart.
// Internal to ir/schedule.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/schedule/schedule.h"

namespace tunedb::ir {

// A value of the schedule script language.
struct ScriptValue {
  enum Kind { kNone, kInt, kFloat, kString, kBool, kRV, kList } kind = kNone;
  std::int64_t i = 0;
  double f = 0;
  std::string s;
  RVRef rv{RVKind::kExpr, -1};
  std::vector<ScriptValue> list;
};

struct ParamSpec {
  enum Role { kInput, kInputList, kVariadicInputs, kAttr, kDecision };
  enum Type { kAny, kBool, kInt, kString, kIntList, kFloatList };
  ParamSpec(const char* n, Role r, Type t = kAny, std::optional<ScriptValue> d = std::nullopt)
      : name(n), role(r), type(t), default_value(std::move(d)) {}
  const char* name;
  Role role;
  Type type;
  std::optional<ScriptValue> default_value;  // none: required
};

struct KindInfo {
  const char* kind;    // "Split"
  const char* method;  // "split"
  bool pure;           // no effect on the program: may be dropped when its results are unused
  enum Returns { kNothing, kOne, kList } returns;
  std::vector<ParamSpec> params;
};

const KindInfo* FindKind(const std::string& kind);      // also accepts "GetSBlock"
const KindInfo* FindMethod(const std::string& method);  // also accepts "get_sblock"

// Applies an instruction whose RV inputs are the schedule's own handles;
// returns the schedule handles of its outputs.
std::vector<RVRef> ApplyInstruction(Schedule& sch, const Instruction& inst, const nlohmann::json* decision);

// Script arguments (already bound to parameter names) -> instruction parts.
// Throws ScheduleError naming the method and parameter.
void BuildInstruction(const KindInfo& info, const std::vector<std::optional<ScriptValue>>& args, Instruction* inst,
                      std::optional<nlohmann::json>* decision);

// The script line of an instruction, given printable names of its RVs.
std::string InstructionToScript(const Instruction& inst, const nlohmann::json* decision,
                                const std::function<std::string(const RVRef&)>& name_of);

}  // namespace tunedb::ir
