#include "ir/schedule/trace.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/json_text.h"
#include "ir/printer.h"
#include "ir/schedule/error.h"
#include "ir/schedule/instruction.h"
#include "ir/schedule/schedule.h"
#include "ir/schedule/schedule_internal.h"

namespace tunedb::ir {
namespace {

char Prefix(RVKind k) { return k == RVKind::kBlock ? 'b' : k == RVKind::kLoop ? 'l' : 'v'; }

// TVM's naming: one counter over all outputs, a letter per kind.
std::map<RVRef, std::string> NameRVs(const Trace& t) {
  std::map<RVRef, std::string> names;
  int counter = 0;
  for (const Instruction& inst : t.insts) {
    for (const RVRef& r : inst.outputs) names[r] = std::string(1, Prefix(r.kind)) + std::to_string(counter++);
  }
  return names;
}

std::string NameOf(const std::map<RVRef, std::string>& names, const RVRef& r) {
  auto it = names.find(r);
  return it != names.end() ? it->second : std::string(1, Prefix(r.kind)) + "?" + std::to_string(r.id);
}

std::string Unquote(const std::string& s) {
  std::string out;
  for (std::size_t i = 1; i + 1 < s.size(); ++i) {
    if (s[i] == '\\' && i + 2 < s.size()) ++i;
    out += s[i];
  }
  return out;
}

}  // namespace

nlohmann::json Trace::ToJson() const {
  std::map<RVRef, std::string> names = NameRVs(*this);
  nlohmann::json insts_json = nlohmann::json::array();
  for (const Instruction& inst : insts) {
    nlohmann::json inputs = nlohmann::json::array();
    for (const InstInput& in : inst.inputs) {
      if (std::holds_alternative<std::monostate>(in)) {
        inputs.push_back("None");
      } else if (const auto* r = std::get_if<RVRef>(&in)) {
        inputs.push_back(NameOf(names, *r));
      } else if (const auto* i = std::get_if<std::int64_t>(&in)) {
        inputs.push_back(*i);
      } else if (const auto* d = std::get_if<double>(&in)) {
        inputs.push_back(*d);
      } else {
        inputs.push_back(PythonString(std::get<std::string>(in)));
      }
    }
    nlohmann::json outputs = nlohmann::json::array();
    for (const RVRef& r : inst.outputs) outputs.push_back(NameOf(names, r));
    insts_json.push_back({inst.kind, inputs, inst.attrs, outputs});
  }
  nlohmann::json decisions_json = nlohmann::json::array();
  for (const auto& [index, decision] : decisions) decisions_json.push_back({index, decision});
  return {insts_json, decisions_json};
}

Trace Trace::FromJson(const nlohmann::json& j) {
  auto fail = [](const std::string& what) -> void { throw ScheduleError("trace JSON: " + what); };
  if (!j.is_array() || j.empty() || j.size() > 2 || !j[0].is_array()) {
    fail("expected [[instructions...], [[index, decision]...]]");
  }
  Trace t;
  std::map<std::string, RVRef> rvs;
  int next_id[3] = {0, 0, 0};
  for (std::size_t n = 0; n < j[0].size(); ++n) {
    const nlohmann::json& ij = j[0][n];
    std::string at = "instruction " + std::to_string(n);
    if (!ij.is_array() || ij.size() != 4 || !ij[0].is_string() || !ij[1].is_array() || !ij[2].is_array() ||
        !ij[3].is_array()) {
      fail(at + ": expected [kind, inputs, attrs, outputs]");
    }
    Instruction inst;
    inst.kind = ij[0].get<std::string>();
    const KindInfo* info = FindKind(inst.kind);
    if (!info) fail(at + ": unknown instruction kind '" + inst.kind + "'");
    inst.kind = info->kind;  // GetSBlock -> GetBlock
    at += " (" + inst.kind + ")";
    for (const nlohmann::json& in : ij[1]) {
      if (in.is_null()) {
        inst.inputs.emplace_back();
      } else if (in.is_boolean()) {
        inst.inputs.emplace_back(std::in_place_type<std::int64_t>, static_cast<std::int64_t>(in.get<bool>()));
      } else if (in.is_number_integer()) {
        inst.inputs.emplace_back(std::in_place_type<std::int64_t>, in.get<std::int64_t>());
      } else if (in.is_number()) {
        inst.inputs.emplace_back(std::in_place_type<double>, in.get<double>());
      } else if (in.is_string()) {
        std::string s = in.get<std::string>();
        if (s == "None") {
          inst.inputs.emplace_back();
        } else if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
          inst.inputs.emplace_back(std::in_place_type<std::string>, Unquote(s));
        } else if (rvs.count(s)) {
          inst.inputs.emplace_back(std::in_place_type<RVRef>, rvs.at(s));
        } else {
          fail(at + ": input '" + s + "' is not a random variable defined by an earlier instruction");
        }
      } else {
        fail(at + ": unsupported input " + in.dump());
      }
    }
    inst.attrs = ij[2];
    for (const nlohmann::json& out : ij[3]) {
      if (!out.is_string() || out.get<std::string>().empty()) fail(at + ": outputs must be names");
      std::string name = out.get<std::string>();
      RVKind kind;
      switch (name[0]) {
        case 'b': kind = RVKind::kBlock; break;
        case 'l': kind = RVKind::kLoop; break;
        case 'v': kind = RVKind::kExpr; break;
        default: fail(at + ": output '" + name + "' does not start with b, l or v"); kind = RVKind::kExpr;
      }
      if (rvs.count(name)) fail(at + ": output '" + name + "' is defined twice");
      RVRef ref{kind, next_id[static_cast<int>(kind)]++};
      rvs[name] = ref;
      inst.outputs.push_back(ref);
    }
    t.insts.push_back(std::move(inst));
  }
  if (j.size() == 2) {
    if (!j[1].is_array()) fail("decisions must be a list of [index, decision]");
    for (const nlohmann::json& d : j[1]) {
      if (!d.is_array() || d.size() != 2 || !d[0].is_number_integer()) fail("decisions must be [index, decision] pairs");
      std::int64_t index = d[0].get<std::int64_t>();
      if (index < 0 || index >= static_cast<std::int64_t>(t.insts.size())) {
        fail("decision for instruction " + std::to_string(index) + ", which does not exist");
      }
      if (!IsSamplingKind(t.insts[index].kind)) {
        fail("decision for instruction " + std::to_string(index) + " (" + t.insts[index].kind +
             "), which does not sample");
      }
      t.decisions[static_cast<std::size_t>(index)] = d[1];
    }
  }
  return t;
}

Trace Trace::FromJsonText(std::string_view text) {
  nlohmann::json j;
  try {
    j = ParseJson(text);
  } catch (const JsonTextError& e) {
    throw ScheduleError(std::string("trace JSON is not valid JSON: ") + e.what());
  }
  return FromJson(j);
}

std::string Trace::AsScript() const {
  std::map<RVRef, std::string> names = NameRVs(*this);
  auto name_of = [&](const RVRef& r) { return NameOf(names, r); };
  std::string out;
  for (std::size_t i = 0; i < insts.size(); ++i) {
    auto d = decisions.find(i);
    out += InstructionToScript(insts[i], d == decisions.end() ? nullptr : &d->second, name_of) + "\n";
  }
  return out;
}

Trace Trace::Simplified(bool remove_postproc) const {
  std::size_t end = insts.size();
  if (remove_postproc) {
    for (std::size_t i = 0; i < insts.size(); ++i) {
      if (insts[i].kind == "EnterPostproc") {
        end = i;
        break;
      }
    }
  }
  std::vector<bool> keep(end, false);
  std::set<RVRef> used;
  for (std::size_t i = end; i-- > 0;) {
    const Instruction& inst = insts[i];
    const KindInfo* info = FindKind(inst.kind);
    bool needed = !info || !info->pure;
    for (const RVRef& r : inst.outputs) needed |= used.count(r) > 0;
    if (!needed) continue;
    keep[i] = true;
    for (const InstInput& in : inst.inputs) {
      if (const auto* r = std::get_if<RVRef>(&in)) used.insert(*r);
    }
  }
  Trace t;
  for (std::size_t i = 0; i < end; ++i) {
    if (!keep[i]) continue;
    auto d = decisions.find(i);
    if (d != decisions.end()) t.decisions[t.insts.size()] = d->second;
    t.insts.push_back(insts[i]);
  }
  return t;
}

std::vector<std::size_t> Trace::SamplingInstructions() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < insts.size(); ++i) {
    if (IsSamplingKind(insts[i].kind)) out.push_back(i);
  }
  return out;
}

Trace ConcatTraces(const std::vector<Trace>& traces) {
  Trace out;
  int offset = 0;
  for (const Trace& t : traces) {
    int next = offset;
    auto moved = [&](RVRef r) {
      r.id += offset;
      next = std::max(next, r.id + 1);
      return r;
    };
    for (std::size_t i = 0; i < t.insts.size(); ++i) {
      Instruction inst = t.insts[i];
      for (InstInput& in : inst.inputs) {
        if (auto* r = std::get_if<RVRef>(&in)) *r = moved(*r);
      }
      for (RVRef& r : inst.outputs) r = moved(r);
      auto d = t.decisions.find(i);
      if (d != t.decisions.end()) out.decisions[out.insts.size()] = d->second;
      out.insts.push_back(std::move(inst));
    }
    offset = next;
  }
  return out;
}

Schedule ReplayTrace(const PrimFunc& func, const Trace& trace, std::uint64_t seed, bool remove_postproc) {
  Schedule sch(func, seed);
  // A failed instruction throws sch away: nothing to undo until it returns.
  sch.state_->undo_failed_primitives = false;
  std::map<RVRef, RVRef> to_schedule;
  for (std::size_t i = 0; i < trace.insts.size(); ++i) {
    const Instruction& inst = trace.insts[i];
    if (remove_postproc && inst.kind == "EnterPostproc") break;
    const std::string at = "trace instruction " + std::to_string(i) + " (" + inst.kind + ")";
    Instruction resolved = inst;
    for (InstInput& in : resolved.inputs) {
      if (auto* r = std::get_if<RVRef>(&in)) {
        auto it = to_schedule.find(*r);
        if (it == to_schedule.end()) throw ScheduleError(at + ": uses a random variable defined by no earlier instruction");
        *r = it->second;
      }
    }
    auto d = trace.decisions.find(i);
    std::vector<RVRef> outputs;
    try {
      outputs = ApplyInstruction(sch, resolved, d == trace.decisions.end() ? nullptr : &d->second);
    } catch (const ScheduleError& e) {
      throw ScheduleError(at + ": " + e.what());
    }
    if (outputs.size() != inst.outputs.size()) {
      throw ScheduleError(at + ": produced " + std::to_string(outputs.size()) + " results where the trace has " +
                          std::to_string(inst.outputs.size()) + " (the trace was made for another program?)");
    }
    for (std::size_t k = 0; k < outputs.size(); ++k) to_schedule[inst.outputs[k]] = outputs[k];
  }
  sch.state_->undo_failed_primitives = true;
  return sch;
}

}  // namespace tunedb::ir
