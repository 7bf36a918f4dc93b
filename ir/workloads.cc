#include "ir/workloads.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "ir/json_text.h"
#include "ir/parts.h"
#include "ir/te.h"
#include "ir/text_file.h"
#include "ir/workload_lang.h"

namespace tunedb::ir {
namespace {

using te::Axis;
using te::ReduceOp;
using te::Vars;

constexpr DataType kF32 = DataType::kFloat32;

PrimFunc Matmul(const WorkloadParams& p) {
  std::int64_t M = p.at("M"), N = p.at("N"), K = p.at("K");
  te::Builder b;
  auto A = b.Placeholder("A", {M, K});
  auto B = b.Placeholder("B", {K, N});
  auto C = b.Reduce("C", {{"i", M}, {"j", N}}, ReduceOp::kSum, {{"k", K}},
                    [&](const Vars& s, const Vars& r) { return A(s[0], r[0]) * B(r[0], s[1]); });
  return b.Build({A, B, C});
}

PrimFunc BatchMatmul(const WorkloadParams& p) {
  std::int64_t Bt = p.at("B"), M = p.at("M"), N = p.at("N"), K = p.at("K");
  te::Builder b;
  auto A = b.Placeholder("A", {Bt, M, K});
  auto B = b.Placeholder("B", {Bt, K, N});
  auto C = b.Reduce("C", {{"b", Bt}, {"i", M}, {"j", N}}, ReduceOp::kSum, {{"k", K}},
                    [&](const Vars& s, const Vars& r) {
                      return A(s[0], s[1], r[0]) * B(s[0], r[0], s[2]);
                    });
  return b.Build({A, B, C});
}

// TOPI's dense: Y = X W^T, W stored as [OUT, IN].
PrimFunc Dense(const WorkloadParams& p) {
  std::int64_t B = p.at("B"), IN = p.at("IN"), OUT = p.at("OUT");
  te::Builder b;
  auto X = b.Placeholder("X", {B, IN});
  auto W = b.Placeholder("W", {OUT, IN});
  auto mm = b.Reduce("T_matmul_NT", {{"i", B}, {"j", OUT}}, ReduceOp::kSum, {{"k", IN}},
                     [&](const Vars& s, const Vars& r) { return X(s[0], r[0]) * W(s[1], r[0]); });
  return b.Build({X, W, mm});
}

PrimFunc DenseBiasRelu(const WorkloadParams& p) {
  std::int64_t B = p.at("B"), IN = p.at("IN"), OUT = p.at("OUT");
  te::Builder b;
  auto X = b.Placeholder("X", {B, IN});
  auto W = b.Placeholder("W", {OUT, IN});
  auto bias = b.Placeholder("bias", {OUT});
  auto mm = b.Reduce("T_matmul_NT", {{"i", B}, {"j", OUT}}, ReduceOp::kSum, {{"k", IN}},
                     [&](const Vars& s, const Vars& r) { return X(s[0], r[0]) * W(s[1], r[0]); });
  auto add = b.Compute("T_add", {{"i", B}, {"j", OUT}},
                       [&](const Vars& s) { return mm(s[0], s[1]) + bias(s[1]); });
  auto relu = b.Compute("T_relu", {{"i", B}, {"j", OUT}},
                        [&](const Vars& s) { return Max(add(s[0], s[1]), FloatImm(kF32, 0)); });
  return b.Build({X, W, bias, relu});
}

// Padding as its own stage, as TOPI does: PaddedInput[n, h, w, c] is the
// input shifted by `pad`, zero outside.
te::Tensor Pad(te::Builder& b, const te::Tensor& X, std::int64_t pad) {
  const auto& s = X.buffer()->shape;
  std::int64_t N = s[0], H = s[1], W = s[2], C = s[3];
  return b.Compute("PaddedInput", {{"i0", N}, {"i1", H + 2 * pad}, {"i2", W + 2 * pad}, {"i3", C}},
                   [&](const Vars& v) {
                     if (pad == 0) return X(v[0], v[1], v[2], v[3]);
                     Expr lo = IntImm(DataType::kInt32, pad);
                     Expr inside = v[1] >= static_cast<double>(pad) &&
                                   v[1] < static_cast<double>(H + pad) &&
                                   v[2] >= static_cast<double>(pad) &&
                                   v[2] < static_cast<double>(W + pad);
                     return Select(inside, X(v[0], v[1] - lo, v[2] - lo, v[3]), FloatImm(kF32, 0));
                   });
}

// index * stride, written without the multiplication when stride is 1.
Expr Strided(const Expr& index, std::int64_t stride) {
  return stride == 1 ? index : index * IntImm(DataType::kInt32, stride);
}

std::int64_t ConvOut(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t pad,
                     const char* what) {
  std::int64_t out = (in + 2 * pad - k) / stride + 1;
  if (in + 2 * pad < k || out < 1) {
    throw IrError(std::string("the kernel is larger than the padded input along ") + what);
  }
  return out;
}

PrimFunc Conv2dNhwc(const WorkloadParams& p) {
  std::int64_t N = p.at("N"), H = p.at("H"), W = p.at("W"), CI = p.at("CI"), CO = p.at("CO"),
               KH = p.at("KH"), KW = p.at("KW"), S = p.at("stride"), P = p.at("pad");
  std::int64_t OH = ConvOut(H, KH, S, P, "H"), OW = ConvOut(W, KW, S, P, "W");
  te::Builder b;
  auto X = b.Placeholder("X", {N, H, W, CI});
  auto Wt = b.Placeholder("W", {KH, KW, CI, CO});
  auto padded = Pad(b, X, P);
  auto out = b.Reduce("Conv2dOutput", {{"nn", N}, {"yy", OH}, {"xx", OW}, {"ff", CO}},
                      ReduceOp::kSum, {{"ry", KH}, {"rx", KW}, {"rc", CI}},
                      [&](const Vars& s, const Vars& r) {
                        return padded(s[0], Strided(s[1], S) + r[0], Strided(s[2], S) + r[1], r[2]) *
                               Wt(r[0], r[1], r[2], s[3]);
                      });
  return b.Build({X, Wt, out});
}

PrimFunc DepthwiseConv2dNhwc(const WorkloadParams& p) {
  std::int64_t N = p.at("N"), H = p.at("H"), W = p.at("W"), C = p.at("C"), KH = p.at("KH"),
               KW = p.at("KW"), S = p.at("stride"), P = p.at("pad");
  std::int64_t OH = ConvOut(H, KH, S, P, "H"), OW = ConvOut(W, KW, S, P, "W");
  te::Builder b;
  auto X = b.Placeholder("X", {N, H, W, C});
  auto Wt = b.Placeholder("W", {KH, KW, C});
  auto padded = Pad(b, X, P);
  auto out = b.Reduce("DepthwiseConv2d", {{"b", N}, {"i", OH}, {"j", OW}, {"c", C}},
                      ReduceOp::kSum, {{"di", KH}, {"dj", KW}},
                      [&](const Vars& s, const Vars& r) {
                        return padded(s[0], Strided(s[1], S) + r[0], Strided(s[2], S) + r[1], s[3]) *
                               Wt(r[0], r[1], s[3]);
                      });
  return b.Build({X, Wt, out});
}

PrimFunc Softmax(const WorkloadParams& p) {
  std::int64_t M = p.at("M"), N = p.at("N");
  te::Builder b;
  auto A = b.Placeholder("A", {M, N});
  auto maxelem = b.Reduce("T_softmax_maxelem", {{"i", M}}, ReduceOp::kMax, {{"k", N}},
                          [&](const Vars& s, const Vars& r) { return A(s[0], r[0]); });
  auto ex = b.Compute("T_softmax_exp", {{"i", M}, {"j", N}}, [&](const Vars& s) {
    return Call("exp", {A(s[0], s[1]) - maxelem(s[0])});
  });
  auto sum = b.Reduce("T_softmax_expsum", {{"i", M}}, ReduceOp::kSum, {{"k", N}},
                      [&](const Vars& s, const Vars& r) { return ex(s[0], r[0]); });
  auto norm = b.Compute("T_softmax_norm", {{"i", M}, {"j", N}},
                        [&](const Vars& s) { return ex(s[0], s[1]) / sum(s[0]); });
  return b.Build({A, norm});
}

PrimFunc ReduceSum(const WorkloadParams& p) {
  std::int64_t M = p.at("M"), N = p.at("N");
  te::Builder b;
  auto A = b.Placeholder("A", {M, N});
  auto red = b.Reduce("A_red", {{"i", M}}, ReduceOp::kSum, {{"k", N}},
                      [&](const Vars& s, const Vars& r) { return A(s[0], r[0]); });
  return b.Build({A, red});
}

std::int64_t ParseInt(std::string_view text, std::string_view what) {
  std::int64_t v = 0;
  if (text.empty()) throw IrError(std::string(what) + ": missing value");
  for (char c : text) {
    if (c < '0' || c > '9') {
      throw IrError(std::string(what) + ": '" + std::string(text) + "' is not a positive integer");
    }
    v = v * 10 + (c - '0');
    if (v > (std::int64_t{1} << 40)) throw IrError(std::string(what) + ": value too large");
  }
  return v;
}

std::string Join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

}  // namespace

const std::vector<WorkloadDef>& BuiltinWorkloads() {
  static const std::vector<WorkloadDef> kDefs = {
      {"matmul", "C[i, j] = sum_k A[i, k] * B[k, j]",
       {{"M", 512, "rows of A and C"}, {"N", 512, "columns of B and C"}, {"K", 512, "reduction length"}},
       Matmul},
      {"batch_matmul", "C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]",
       {{"B", 8, "batch"}, {"M", 128, "rows"}, {"N", 128, "columns"}, {"K", 128, "reduction length"}},
       BatchMatmul},
      {"dense", "Y = X W^T (TOPI's dense: W is [OUT, IN])",
       {{"B", 128, "batch (rows of X)"}, {"IN", 784, "input features"}, {"OUT", 128, "output features"}},
       Dense},
      {"dense_bias_relu", "Y = relu(X W^T + bias): matmul, bias add and relu as three stages",
       {{"B", 128, "batch (rows of X)"}, {"IN", 784, "input features"}, {"OUT", 128, "output features"}},
       DenseBiasRelu},
      {"conv2d_nhwc", "2-D convolution, NHWC input, HWIO weights, padding as its own stage",
       {{"N", 1, "batch"}, {"H", 56, "input height"}, {"W", 56, "input width"},
        {"CI", 64, "input channels"}, {"CO", 64, "output channels"}, {"KH", 3, "kernel height"},
        {"KW", 3, "kernel width"}, {"stride", 1, "stride"}, {"pad", 1, "zero padding per side"}},
       Conv2dNhwc},
      {"depthwise_conv2d_nhwc", "depthwise 2-D convolution, NHWC input, HWC weights",
       {{"N", 1, "batch"}, {"H", 56, "input height"}, {"W", 56, "input width"},
        {"C", 64, "channels"}, {"KH", 3, "kernel height"}, {"KW", 3, "kernel width"},
        {"stride", 1, "stride"}, {"pad", 1, "zero padding per side"}},
       DepthwiseConv2dNhwc},
      {"softmax", "row-wise softmax: max, exp, sum and normalize stages",
       {{"M", 128, "rows"}, {"N", 1024, "row length"}}, Softmax},
      {"reduce_sum", "B[i] = sum_k A[i, k]", {{"M", 1024, "rows"}, {"N", 1024, "row length"}},
       ReduceSum},
  };
  return kDefs;
}

Workload BuildWorkload(std::string_view spec) {
  std::string_view name = spec.substr(0, spec.find(':'));
  const WorkloadDef* def = nullptr;
  std::vector<std::string> names;
  for (const WorkloadDef& d : BuiltinWorkloads()) {
    names.push_back(d.name);
    if (d.name == name) def = &d;
  }
  if (!def) {
    throw IrError("unknown workload '" + std::string(name) + "' (built-in workloads: " + Join(names) +
                  ", as NAME:P=V,... e.g. matmul:M=128,N=128,K=128; or give the path of a workload file)");
  }
  WorkloadParams params;
  for (const WorkloadParam& p : def->params) params[p.name] = p.default_value;

  if (spec.size() > name.size()) {
    std::string_view rest = spec.substr(name.size() + 1);
    // A parameter given twice is refused: the last value silently winning
    // would tune another workload than a typo (M for K) meant.
    std::set<std::string> given;
    if (!rest.empty() && rest.back() == ',') {
      throw IrError("workload " + def->name + ": expected NAME=VALUE after the last ',' of '" + std::string(spec) + "'");
    }
    while (!rest.empty()) {
      std::string_view item = rest.substr(0, rest.find(','));
      rest = item.size() < rest.size() ? rest.substr(item.size() + 1) : std::string_view();
      auto eq = item.find('=');
      if (eq == std::string_view::npos) {
        throw IrError("workload " + def->name + ": expected NAME=VALUE, got '" + std::string(item) + "'");
      }
      std::string key(item.substr(0, eq));
      if (!params.count(key)) {
        std::vector<std::string> known;
        for (const WorkloadParam& p : def->params) known.push_back(p.name);
        throw IrError("workload " + def->name + " has no parameter '" + key + "' (parameters: " +
                      Join(known) + ")");
      }
      if (!given.insert(key).second) {
        throw IrError("workload " + def->name + ": parameter " + key + " is given twice");
      }
      std::int64_t value = ParseInt(item.substr(eq + 1), "workload " + def->name + " parameter " + key);
      // Padding may be zero; every other parameter is an extent or a stride.
      if (value < 1 && key != "pad") {
        throw IrError("workload " + def->name + " parameter " + key + " must be at least 1");
      }
      params[key] = value;
    }
  }
  Workload w;
  w.name = def->name;
  w.spec = def->name + ":";
  bool first = true;
  for (const WorkloadParam& p : def->params) {
    w.spec += (first ? "" : ",") + p.name + "=" + std::to_string(params[p.name]);
    first = false;
  }
  w.func = def->build(params);
  return w;
}

namespace {

std::string ReadWorkloadFile(const std::filesystem::path& path) {
  std::string text, why;
  if (!ReadWholeFile(path.string(), &text, &why)) throw IrError("cannot read workload file " + path.string() + ": " + why);
  return text;
}

// The text with its `output` lines blanked (line numbers stay) and one
// `output NAME` appended: the program of that output alone.
std::string WithOnlyOutput(const std::string& text, const std::string& output) {
  std::stringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    std::size_t first = line.find_first_not_of(" \t");
    bool is_output = first != std::string::npos && line.compare(first, 6, "output") == 0 &&
                     (line.size() == first + 6 || line[first + 6] == ' ' || line[first + 6] == '\t');
    out += (is_output ? "" : line) + "\n";
  }
  return out + "output " + output + "\n";
}

// No workload-language text starts with '{'; a JSON object always does.
bool IsJsonText(const std::string& text) {
  std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

// A program in tunedb's JSON form, or what `tunedb show --json` prints for
// an unscheduled workload (the program under "program").
PrimFunc ProgramFromJsonFile(const std::string& text, const std::filesystem::path& path) {
  nlohmann::json doc;
  try {
    doc = ParseJson(text);
  } catch (const JsonTextError& e) {
    throw IrError(path.string() + ": starts with '{' but is not valid JSON: " + e.what());
  }
  if (doc.is_object() && doc.contains("program")) {
    if (doc.contains("trace")) {
      throw IrError(path.string() + ": this is a scheduled program (tunedb show --json with a schedule); a "
                    "workload is the program before scheduling");
    }
    doc = doc["program"];
  }
  try {
    return ProgramFromJson(doc.dump());
  } catch (const IrError& e) {
    throw IrError(path.string() + ": " + e.what());
  }
}

std::vector<std::string> OutputNames(const PrimFunc& func) {
  std::vector<std::string> names;
  for (int i : OutputParams(func)) names.push_back(func.params[static_cast<std::size_t>(i)]->name);
  return names;
}

}  // namespace

Workload LoadWorkload(std::string_view spec_or_path) {
  std::filesystem::path path(spec_or_path);
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    Workload w;
    w.spec = path.string();
    w.name = path.stem().string();
    std::string text = ReadWorkloadFile(path);
    w.func = IsJsonText(text) ? ProgramFromJsonFile(text, path) : ParseWorkloadText(text, path.string());
    return w;
  }
  // "SPEC@A+B": the part of SPEC's program made of its stages A and B.
  std::size_t at = spec_or_path.rfind('@');
  if (at != std::string_view::npos && spec_or_path.find('/', at) == std::string_view::npos) {
    Workload whole = LoadWorkload(spec_or_path.substr(0, at));
    std::vector<std::string> stages;
    std::string_view list = spec_or_path.substr(at + 1);
    for (std::size_t start = 0;;) {
      std::size_t plus = list.find('+', start);
      stages.emplace_back(list.substr(start, plus - start));
      if (stages.back().empty()) {
        throw IrError(std::string(spec_or_path) + ": a part is its stages' names joined by '+' (SPEC@A+B); one is empty");
      }
      if (plus == std::string_view::npos) break;
      start = plus + 1;
    }
    Workload w;
    w.spec = std::string(spec_or_path);
    w.name = whole.name + "@" + std::string(list);
    try {
      w.func = PartOf(whole.func, stages);
    } catch (const IrError& e) {
      throw IrError(std::string(spec_or_path) + ": " + e.what());
    }
    return w;
  }
  // "file.tw#NAME": the program of one output of a file.
  std::size_t hash = spec_or_path.rfind('#');
  if (hash != std::string_view::npos && std::filesystem::is_regular_file(spec_or_path.substr(0, hash), ec)) {
    std::filesystem::path file(spec_or_path.substr(0, hash));
    std::string output(spec_or_path.substr(hash + 1));
    std::string text = ReadWorkloadFile(file);
    std::vector<std::string> outputs = OutputNames(ParseWorkloadText(text, file.string()));
    if (std::find(outputs.begin(), outputs.end(), output) == outputs.end()) {
      std::string list;
      for (const std::string& o : outputs) list += (list.empty() ? "" : ", ") + o;
      throw IrError("workload file " + file.string() + " has no output '" + output + "' (outputs: " + list + ")");
    }
    Workload w;
    w.spec = std::string(spec_or_path);
    w.name = file.stem().string() + "#" + output;
    w.func = ParseWorkloadText(WithOnlyOutput(text, output), file.string());
    return w;
  }
  // What names a file that cannot be read as one gets a message about the
  // file, not "unknown workload" with the list of built-in ones: a spec
  // never has a '/', nor a workload file's extension.
  std::filesystem::path file(spec_or_path.substr(0, hash));
  if (std::filesystem::exists(file, ec)) {
    throw IrError(file.string() + (std::filesystem::is_directory(file, ec) ? " is a directory" : " is not a regular file") +
                  ", not a workload file");
  }
  if (spec_or_path.find('/') != std::string_view::npos || file.extension() == ".tw" || file.extension() == ".json") {
    throw IrError("no workload file " + file.string() + " (no such file)");
  }
  return BuildWorkload(spec_or_path);
}

std::vector<Workload> LoadWorkloads(std::string_view spec_or_path) {
  Workload whole = LoadWorkload(spec_or_path);
  std::filesystem::path path(spec_or_path);
  std::error_code ec;
  std::vector<std::string> outputs = OutputNames(whole.func);
  if (!std::filesystem::is_regular_file(path, ec) || outputs.size() < 2 || IsJsonText(ReadWorkloadFile(path))) {
    return {whole};
  }
  std::vector<Workload> parts;
  for (const std::string& o : outputs) parts.push_back(LoadWorkload(path.string() + "#" + o));
  return parts;
}

std::vector<Workload> WorkloadParts(const Workload& whole) {
  std::vector<std::vector<std::string>> groups = StageGroups(whole.func);
  std::vector<Workload> parts;
  if (groups.size() < 2) return parts;
  for (const std::vector<std::string>& g : groups) {
    Workload w;
    w.spec = whole.spec + "@" + PartName(g);
    w.name = whole.name + "@" + PartName(g);
    w.func = PartOf(whole.func, g);
    parts.push_back(std::move(w));
  }
  return parts;
}

}  // namespace tunedb::ir
