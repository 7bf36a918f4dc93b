// The built-in workload library and workload specs.
//
// A spec names a library workload and optional shape parameters,
// "matmul:M=512,N=512,K=512"; parameters left out take their defaults. A
// spec may instead be the path of a workload-language file (see
// workload_lang.h) or of a program in tunedb's JSON form (json.h; what
// `tunedb show --json` prints, or a compiler exports). LoadWorkload
// accepts all three.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/stmt.h"

namespace tunedb::ir {

struct WorkloadParam {
  std::string name;
  std::int64_t default_value;
  std::string meaning;
};

using WorkloadParams = std::map<std::string, std::int64_t>;

struct WorkloadDef {
  std::string name;
  std::string description;
  std::vector<WorkloadParam> params;
  std::function<PrimFunc(const WorkloadParams&)> build;
};

// Every library workload, in a fixed order.
const std::vector<WorkloadDef>& BuiltinWorkloads();

struct Workload {
  // Canonical spec with every parameter spelled out ("matmul:M=512,N=512,K=512"),
  // or the file path for a workload-language file.
  std::string spec;
  std::string name;  // library name, or the file's stem
  PrimFunc func;
};

// Parses a library spec. Throws IrError naming the unknown workload or
// parameter, or the malformed value.
Workload BuildWorkload(std::string_view spec);

// A library spec, or else an existing file (the workload language, or a
// JSON program: one whose first character is '{'), or "FILE#OUTPUT": the
// program of one output of a workload-language file (the stages it needs,
// that output alone as result), or "SPEC@A+B": the part of SPEC's program
// made of its stages A and B (ir/parts.h).
Workload LoadWorkload(std::string_view spec_or_path);

// The tasks of a spec or file: a workload-language file with several
// outputs gives one workload per output ("FILE#OUTPUT"), anything else
// itself.
std::vector<Workload> LoadWorkloads(std::string_view spec_or_path);

// The parts of a workload's program (ir/parts.h), "SPEC@STAGES" each; none
// when its stages make one group.
std::vector<Workload> WorkloadParts(const Workload& whole);

}  // namespace tunedb::ir
