#include "ir/schedule/instruction.h"

#include <cstdio>

#include "ir/printer.h"
#include "ir/schedule/error.h"

namespace tunedb::ir {
namespace {

using P = ParamSpec;

ScriptValue Int(std::int64_t v) {
  ScriptValue s;
  s.kind = ScriptValue::kInt;
  s.i = v;
  return s;
}
ScriptValue Bool(bool v) {
  ScriptValue s;
  s.kind = ScriptValue::kBool;
  s.i = v;
  return s;
}
ScriptValue Str(const std::string& v) {
  ScriptValue s;
  s.kind = ScriptValue::kString;
  s.s = v;
  return s;
}
ScriptValue None() { return ScriptValue{}; }

const std::vector<KindInfo>& Kinds() {
  static const std::vector<KindInfo> kinds = {
      {"GetBlock", "get_block", true, KindInfo::kOne,
       {{"name", P::kAttr, P::kString}, {"func_name", P::kAttr, P::kString, Str("main")}}},
      {"GetLoops", "get_loops", true, KindInfo::kList, {{"block", P::kInput}}},
      {"GetChildBlocks", "get_child_blocks", true, KindInfo::kList, {{"block_or_loop", P::kInput}}},
      {"GetProducers", "get_producers", true, KindInfo::kList, {{"block", P::kInput}}},
      {"GetConsumers", "get_consumers", true, KindInfo::kList, {{"block", P::kInput}}},
      {"Split", "split", false, KindInfo::kList,
       {{"loop", P::kInput},
        {"factors", P::kInputList},
        {"preserve_unit_iters", P::kAttr, P::kBool, Bool(true)},
        {"disable_predication", P::kAttr, P::kBool, Bool(false)}}},
      {"Fuse", "fuse", false, KindInfo::kOne,
       {{"loops", P::kVariadicInputs}, {"preserve_unit_iters", P::kAttr, P::kBool, Bool(true)}}},
      {"Reorder", "reorder", false, KindInfo::kNothing, {{"ordered_loops", P::kVariadicInputs}}},
      {"Parallel", "parallel", false, KindInfo::kNothing, {{"loop", P::kInput}}},
      {"Vectorize", "vectorize", false, KindInfo::kNothing, {{"loop", P::kInput}}},
      {"Unroll", "unroll", false, KindInfo::kNothing, {{"loop", P::kInput}}},
      {"Annotate", "annotate", false, KindInfo::kNothing,
       {{"block_or_loop", P::kInput}, {"ann_key", P::kAttr, P::kString}, {"ann_val", P::kInput}}},
      {"Unannotate", "unannotate", false, KindInfo::kNothing,
       {{"block_or_loop", P::kInput}, {"ann_key", P::kAttr, P::kString}}},
      {"CacheRead", "cache_read", false, KindInfo::kOne,
       {{"block", P::kInput}, {"read_buffer_index", P::kAttr, P::kInt}, {"storage_scope", P::kAttr, P::kString}}},
      {"CacheWrite", "cache_write", false, KindInfo::kOne,
       {{"block", P::kInput}, {"write_buffer_index", P::kAttr, P::kInt}, {"storage_scope", P::kAttr, P::kString}}},
      {"PadEinsum", "pad_einsum", false, KindInfo::kNothing,
       {{"block", P::kInput}, {"padding", P::kAttr, P::kIntList}}},
      {"ComputeAt", "compute_at", false, KindInfo::kNothing,
       {{"block", P::kInput},
        {"loop", P::kInput},
        {"preserve_unit_loops", P::kAttr, P::kBool, Bool(false)},
        {"index", P::kAttr, P::kInt, Int(-1)}}},
      {"ReverseComputeAt", "reverse_compute_at", false, KindInfo::kNothing,
       {{"block", P::kInput},
        {"loop", P::kInput},
        {"preserve_unit_loops", P::kAttr, P::kBool, Bool(false)},
        {"index", P::kAttr, P::kInt, Int(-1)}}},
      {"ComputeInline", "compute_inline", false, KindInfo::kNothing, {{"block", P::kInput}}},
      {"ReverseComputeInline", "reverse_compute_inline", false, KindInfo::kNothing, {{"block", P::kInput}}},
      {"DecomposeReduction", "decompose_reduction", false, KindInfo::kOne, {{"block", P::kInput}, {"loop", P::kInput}}},
      {"RFactor", "rfactor", false, KindInfo::kOne, {{"loop", P::kInput}, {"factor_axis", P::kAttr, P::kInt}}},
      {"SamplePerfectTile", "sample_perfect_tile", true, KindInfo::kList,
       {{"loop", P::kInput},
        {"n", P::kAttr, P::kInt},
        {"max_innermost_factor", P::kAttr, P::kInt, Int(16)},
        {"decision", P::kDecision, P::kIntList, None()}}},
      {"SampleCategorical", "sample_categorical", true, KindInfo::kOne,
       {{"candidates", P::kAttr, P::kIntList},
        {"probs", P::kAttr, P::kFloatList},
        {"decision", P::kDecision, P::kInt, None()}}},
      {"SampleComputeLocation", "sample_compute_location", true, KindInfo::kOne,
       {{"block", P::kInput}, {"decision", P::kDecision, P::kInt, None()}}},
      {"EnterPostproc", "enter_postproc", false, KindInfo::kNothing, {}},
  };
  return kinds;
}

[[noreturn]] void Fail(const std::string& what) { throw ScheduleError(what); }

// ---- typed access to instruction inputs and attrs ----

RVRef InputRV(const Instruction& inst, std::size_t i, RVKind kind, const char* what) {
  if (i >= inst.inputs.size() || !std::holds_alternative<RVRef>(inst.inputs[i]) ||
      std::get<RVRef>(inst.inputs[i]).kind != kind) {
    Fail(inst.kind + ": input " + std::to_string(i) + " must be a " + what);
  }
  return std::get<RVRef>(inst.inputs[i]);
}
BlockRV InputBlock(const Instruction& inst, std::size_t i) { return {InputRV(inst, i, RVKind::kBlock, "block").id}; }
LoopRV InputLoop(const Instruction& inst, std::size_t i) { return {InputRV(inst, i, RVKind::kLoop, "loop").id}; }
BlockOrLoop InputBlockOrLoop(const Instruction& inst, std::size_t i) {
  if (i < inst.inputs.size() && std::holds_alternative<RVRef>(inst.inputs[i])) {
    RVRef r = std::get<RVRef>(inst.inputs[i]);
    if (r.kind == RVKind::kBlock) return BlockRV{r.id};
    if (r.kind == RVKind::kLoop) return LoopRV{r.id};
  }
  Fail(inst.kind + ": input " + std::to_string(i) + " must be a block or a loop");
}
std::vector<LoopRV> InputLoops(const Instruction& inst, std::size_t from) {
  std::vector<LoopRV> out;
  for (std::size_t i = from; i < inst.inputs.size(); ++i) out.push_back(InputLoop(inst, i));
  return out;
}

const nlohmann::json* Attr(const Instruction& inst, std::size_t i) {
  return inst.attrs.is_array() && i < inst.attrs.size() ? &inst.attrs[i] : nullptr;
}
std::int64_t AttrInt(const Instruction& inst, std::size_t i, std::optional<std::int64_t> fallback = std::nullopt) {
  const nlohmann::json* a = Attr(inst, i);
  if (!a) {
    if (fallback) return *fallback;
    Fail(inst.kind + ": missing attribute " + std::to_string(i));
  }
  if (a->is_boolean()) return a->get<bool>() ? 1 : 0;
  if (!a->is_number_integer()) Fail(inst.kind + ": attribute " + std::to_string(i) + " must be an integer");
  return a->get<std::int64_t>();
}
bool AttrBool(const Instruction& inst, std::size_t i, bool fallback) { return AttrInt(inst, i, fallback ? 1 : 0) != 0; }
std::string AttrString(const Instruction& inst, std::size_t i) {
  const nlohmann::json* a = Attr(inst, i);
  if (!a || !a->is_string()) Fail(inst.kind + ": attribute " + std::to_string(i) + " must be a string");
  return a->get<std::string>();
}

template <typename RV>
std::vector<RVRef> AsRefs(const std::vector<RV>& rvs, RVKind kind) {
  std::vector<RVRef> out;
  for (const RV& r : rvs) out.push_back({kind, r.id});
  return out;
}

// ---- script formatting ----

std::string FormatFloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  // Shortest form that reads back the same.
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::stod(buf) == v) {
      s = buf;
      break;
    }
  }
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string JsonAsPython(const nlohmann::json& j, ParamSpec::Type type) {
  if (type == ParamSpec::kBool) return (j.is_boolean() ? j.get<bool>() : j.get<std::int64_t>() != 0) ? "True" : "False";
  if (j.is_null()) return "None";
  if (j.is_boolean()) return j.get<bool>() ? "True" : "False";
  if (j.is_string()) return PythonString(j.get<std::string>());
  if (j.is_number_integer()) return std::to_string(j.get<std::int64_t>());
  if (j.is_number()) return FormatFloat(j.get<double>());
  if (j.is_array()) {
    std::string s = "[";
    for (std::size_t i = 0; i < j.size(); ++i) {
      s += (i ? ", " : "") + JsonAsPython(j[i], type == ParamSpec::kFloatList ? ParamSpec::kAny : ParamSpec::kAny);
    }
    return s + "]";
  }
  return j.dump();
}

std::string InputAsPython(const InstInput& in, const std::function<std::string(const RVRef&)>& name_of) {
  if (std::holds_alternative<std::monostate>(in)) return "None";
  if (const auto* r = std::get_if<RVRef>(&in)) return name_of(*r);
  if (const auto* i = std::get_if<std::int64_t>(&in)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&in)) return FormatFloat(*d);
  return PythonString(std::get<std::string>(in));
}

// ---- script values -> instruction parts ----

InstInput ValueToInput(const ScriptValue& v, const std::string& where) {
  switch (v.kind) {
    case ScriptValue::kNone: return std::monostate{};
    case ScriptValue::kInt: case ScriptValue::kBool: return v.i;
    case ScriptValue::kFloat: return v.f;
    case ScriptValue::kString: return v.s;
    case ScriptValue::kRV: return v.rv;
    case ScriptValue::kList: break;
  }
  Fail(where + ": a list is not allowed here");
}

nlohmann::json ValueToJson(const ScriptValue& v, ParamSpec::Type type, const std::string& where) {
  auto expect = [&](bool ok, const char* what) {
    if (!ok) Fail(where + ": expected " + what);
  };
  switch (type) {
    case ParamSpec::kBool:
      expect(v.kind == ScriptValue::kBool || v.kind == ScriptValue::kInt, "True or False");
      return v.i != 0 ? 1 : 0;
    case ParamSpec::kInt:
      expect(v.kind == ScriptValue::kInt, "an integer");
      return v.i;
    case ParamSpec::kString:
      expect(v.kind == ScriptValue::kString, "a string");
      return v.s;
    case ParamSpec::kIntList: {
      expect(v.kind == ScriptValue::kList, "a list of integers");
      nlohmann::json a = nlohmann::json::array();
      for (const ScriptValue& x : v.list) {
        expect(x.kind == ScriptValue::kInt, "a list of integers");
        a.push_back(x.i);
      }
      return a;
    }
    case ParamSpec::kFloatList: {
      expect(v.kind == ScriptValue::kList, "a list of numbers");
      nlohmann::json a = nlohmann::json::array();
      for (const ScriptValue& x : v.list) {
        expect(x.kind == ScriptValue::kInt || x.kind == ScriptValue::kFloat, "a list of numbers");
        a.push_back(x.kind == ScriptValue::kInt ? static_cast<double>(x.i) : x.f);
      }
      return a;
    }
    case ParamSpec::kAny: break;
  }
  switch (v.kind) {
    case ScriptValue::kNone: return nullptr;
    case ScriptValue::kInt: case ScriptValue::kBool: return v.i;
    case ScriptValue::kFloat: return v.f;
    case ScriptValue::kString: return v.s;
    default: Fail(where + ": unexpected value");
  }
}

}  // namespace

const KindInfo* FindKind(const std::string& kind) {
  const std::string name = kind == "GetSBlock" ? "GetBlock" : kind;
  for (const KindInfo& k : Kinds()) {
    if (name == k.kind) return &k;
  }
  return nullptr;
}

const KindInfo* FindMethod(const std::string& method) {
  const std::string name = method == "get_sblock" ? "get_block" : method;
  for (const KindInfo& k : Kinds()) {
    if (name == k.method) return &k;
  }
  return nullptr;
}

bool IsSamplingKind(std::string_view kind) {
  return kind == "SamplePerfectTile" || kind == "SampleCategorical" || kind == "SampleComputeLocation";
}

void BuildInstruction(const KindInfo& info, const std::vector<std::optional<ScriptValue>>& args, Instruction* inst,
                      std::optional<nlohmann::json>* decision) {
  inst->kind = info.kind;
  inst->inputs.clear();
  inst->attrs = nlohmann::json::array();
  inst->outputs.clear();
  decision->reset();
  for (std::size_t i = 0; i < info.params.size(); ++i) {
    const ParamSpec& p = info.params[i];
    const std::string where = std::string(info.method) + ": " + p.name;
    std::optional<ScriptValue> v = args[i];
    if (!v) v = p.default_value;
    if (!v) Fail(std::string(info.method) + ": missing argument '" + p.name + "'");
    switch (p.role) {
      case ParamSpec::kInput: inst->inputs.push_back(ValueToInput(*v, where)); break;
      case ParamSpec::kInputList:
      case ParamSpec::kVariadicInputs:
        if (v->kind != ScriptValue::kList) Fail(where + ": expected a list");
        for (const ScriptValue& x : v->list) inst->inputs.push_back(ValueToInput(x, where));
        break;
      case ParamSpec::kAttr: inst->attrs.push_back(ValueToJson(*v, p.type, where)); break;
      case ParamSpec::kDecision:
        if (v->kind != ScriptValue::kNone) *decision = ValueToJson(*v, p.type, where);
        break;
    }
  }
}

std::string InstructionToScript(const Instruction& inst, const nlohmann::json* decision,
                                const std::function<std::string(const RVRef&)>& name_of) {
  const KindInfo* info = FindKind(inst.kind);
  std::string line;
  if (!inst.outputs.empty()) {
    for (std::size_t i = 0; i < inst.outputs.size(); ++i) line += (i ? ", " : "") + name_of(inst.outputs[i]);
    // A list of one is unpacked as TVM prints it, "b1, = ...": "b1 = ..."
    // would name the list, not the block in it.
    if (info && info->returns == KindInfo::kList && inst.outputs.size() == 1) line += ",";
    line += " = ";
  }
  line += std::string("sch.") + (info ? info->method : inst.kind) + "(";
  if (!info) return line + ")";
  std::size_t input = 0, attr = 0;
  std::vector<std::string> args;
  for (const ParamSpec& p : info->params) {
    switch (p.role) {
      case ParamSpec::kInput:
        if (input < inst.inputs.size()) args.push_back(std::string(p.name) + "=" + InputAsPython(inst.inputs[input++], name_of));
        break;
      case ParamSpec::kInputList: {
        std::string list = "[";
        for (std::size_t k = 0; input < inst.inputs.size(); ++k) list += (k ? ", " : "") + InputAsPython(inst.inputs[input++], name_of);
        args.push_back(std::string(p.name) + "=" + list + "]");
        break;
      }
      case ParamSpec::kVariadicInputs:
        while (input < inst.inputs.size()) args.push_back(InputAsPython(inst.inputs[input++], name_of));
        break;
      case ParamSpec::kAttr:
        if (attr < inst.attrs.size()) args.push_back(std::string(p.name) + "=" + JsonAsPython(inst.attrs[attr++], p.type));
        break;
      case ParamSpec::kDecision:
        if (decision) args.push_back(std::string(p.name) + "=" + JsonAsPython(*decision, p.type));
        break;
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i) line += (i ? ", " : "") + args[i];
  return line + ")";
}

std::vector<RVRef> ApplyInstruction(Schedule& sch, const Instruction& inst, const nlohmann::json* decision) {
  const std::string& k = inst.kind;
  auto decision_ints = [&]() -> std::optional<std::vector<std::int64_t>> {
    if (!decision || decision->is_null()) return std::nullopt;
    if (!decision->is_array()) Fail(k + ": the decision must be a list of integers");
    std::vector<std::int64_t> v;
    for (const auto& x : *decision) {
      if (!x.is_number_integer()) Fail(k + ": the decision must be a list of integers");
      v.push_back(x.get<std::int64_t>());
    }
    return v;
  };
  auto decision_int = [&]() -> std::optional<std::int64_t> {
    if (!decision || decision->is_null()) return std::nullopt;
    if (!decision->is_number_integer()) Fail(k + ": the decision must be an integer");
    return decision->get<std::int64_t>();
  };
  if (k == "GetBlock" || k == "GetSBlock") {
    std::string func_name = inst.attrs.size() > 1 ? AttrString(inst, 1) : "main";
    return {{RVKind::kBlock, sch.GetBlock(AttrString(inst, 0), func_name).id}};
  }
  if (k == "GetLoops") return AsRefs(sch.GetLoops(InputBlock(inst, 0)), RVKind::kLoop);
  if (k == "GetChildBlocks") return AsRefs(sch.GetChildBlocks(InputBlockOrLoop(inst, 0)), RVKind::kBlock);
  if (k == "GetProducers") return AsRefs(sch.GetProducers(InputBlock(inst, 0)), RVKind::kBlock);
  if (k == "GetConsumers") return AsRefs(sch.GetConsumers(InputBlock(inst, 0)), RVKind::kBlock);
  if (k == "Split") {
    std::vector<SplitFactor> factors;
    for (std::size_t i = 1; i < inst.inputs.size(); ++i) {
      const InstInput& in = inst.inputs[i];
      if (std::holds_alternative<std::monostate>(in)) {
        factors.push_back(std::monostate{});
      } else if (const auto* v = std::get_if<std::int64_t>(&in)) {
        factors.push_back(*v);
      } else if (const auto* r = std::get_if<RVRef>(&in); r && r->kind == RVKind::kExpr) {
        factors.push_back(ExprRV{r->id});
      } else {
        Fail("Split: factor " + std::to_string(i - 1) + " must be an integer, a sampled variable or None");
      }
    }
    return AsRefs(sch.Split(InputLoop(inst, 0), factors, AttrBool(inst, 0, true), AttrBool(inst, 1, false)),
                  RVKind::kLoop);
  }
  if (k == "Fuse") return {{RVKind::kLoop, sch.Fuse(InputLoops(inst, 0), AttrBool(inst, 0, true)).id}};
  if (k == "Reorder") {
    sch.Reorder(InputLoops(inst, 0));
    return {};
  }
  if (k == "Parallel") {
    sch.Parallel(InputLoop(inst, 0));
    return {};
  }
  if (k == "Vectorize") {
    sch.Vectorize(InputLoop(inst, 0));
    return {};
  }
  if (k == "Unroll") {
    sch.Unroll(InputLoop(inst, 0));
    return {};
  }
  if (k == "Annotate") {
    if (inst.inputs.size() != 2) Fail("Annotate: expected a block or loop and a value");
    const InstInput& v = inst.inputs[1];
    AnnotationArg value;
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
      value = *i;
    } else if (const auto* s = std::get_if<std::string>(&v)) {
      value = *s;
    } else if (const auto* r = std::get_if<RVRef>(&v); r && r->kind == RVKind::kExpr) {
      value = ExprRV{r->id};
    } else {
      Fail("Annotate: the value must be an integer, a string or a sampled variable");
    }
    sch.Annotate(InputBlockOrLoop(inst, 0), AttrString(inst, 0), value);
    return {};
  }
  if (k == "Unannotate") {
    sch.Unannotate(InputBlockOrLoop(inst, 0), AttrString(inst, 0));
    return {};
  }
  if (k == "CacheRead") {
    return {{RVKind::kBlock,
             sch.CacheRead(InputBlock(inst, 0), static_cast<int>(AttrInt(inst, 0)), AttrString(inst, 1)).id}};
  }
  if (k == "CacheWrite") {
    return {{RVKind::kBlock,
             sch.CacheWrite(InputBlock(inst, 0), static_cast<int>(AttrInt(inst, 0)), AttrString(inst, 1)).id}};
  }
  if (k == "PadEinsum") {
    const nlohmann::json* a = Attr(inst, 0);
    if (!a || !a->is_array()) Fail("PadEinsum: the padding must be a list of integers");
    std::vector<std::int64_t> padding;
    for (const auto& x : *a) {
      if (!x.is_number_integer()) Fail("PadEinsum: the padding must be a list of integers");
      padding.push_back(x.get<std::int64_t>());
    }
    sch.PadEinsum(InputBlock(inst, 0), padding);
    return {};
  }
  if (k == "ComputeAt") {
    sch.ComputeAt(InputBlock(inst, 0), InputLoop(inst, 1), AttrBool(inst, 0, false),
                  static_cast<int>(AttrInt(inst, 1, -1)));
    return {};
  }
  if (k == "ReverseComputeAt") {
    sch.ReverseComputeAt(InputBlock(inst, 0), InputLoop(inst, 1), AttrBool(inst, 0, false),
                         static_cast<int>(AttrInt(inst, 1, -1)));
    return {};
  }
  if (k == "ComputeInline") {
    sch.ComputeInline(InputBlock(inst, 0));
    return {};
  }
  if (k == "ReverseComputeInline") {
    sch.ReverseComputeInline(InputBlock(inst, 0));
    return {};
  }
  if (k == "DecomposeReduction") {
    return {{RVKind::kBlock, sch.DecomposeReduction(InputBlock(inst, 0), InputLoop(inst, 1)).id}};
  }
  if (k == "RFactor") return {{RVKind::kBlock, sch.RFactor(InputLoop(inst, 0), static_cast<int>(AttrInt(inst, 0))).id}};
  if (k == "SamplePerfectTile") {
    return AsRefs(sch.SamplePerfectTile(InputLoop(inst, 0), static_cast<int>(AttrInt(inst, 0)),
                                        static_cast<int>(AttrInt(inst, 1, 16)), decision_ints()),
                  RVKind::kExpr);
  }
  if (k == "SampleCategorical") {
    const nlohmann::json* c = Attr(inst, 0);
    const nlohmann::json* pr = Attr(inst, 1);
    if (!c || !c->is_array() || !pr || !pr->is_array()) Fail("SampleCategorical: expected candidate and probability lists");
    std::vector<std::int64_t> candidates;
    std::vector<double> probs;
    for (const auto& x : *c) {
      if (!x.is_number_integer()) Fail("SampleCategorical: candidates must be integers");
      candidates.push_back(x.get<std::int64_t>());
    }
    for (const auto& x : *pr) {
      if (!x.is_number()) Fail("SampleCategorical: probabilities must be numbers");
      probs.push_back(x.get<double>());
    }
    return {{RVKind::kExpr, sch.SampleCategorical(candidates, probs, decision_int()).id}};
  }
  if (k == "SampleComputeLocation") {
    return {{RVKind::kLoop, sch.SampleComputeLocation(InputBlock(inst, 0), decision_int()).id}};
  }
  if (k == "EnterPostproc") {
    sch.EnterPostproc();
    return {};
  }
  Fail("unknown instruction kind '" + k + "'");
}

}  // namespace tunedb::ir
