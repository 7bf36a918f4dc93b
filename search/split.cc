#include "search/split.h"

#include "ir/flops.h"

namespace tunedb::search {
namespace {

bool IsComputeBound(const ir::PrimFunc& part, double whole_flops) {
  const double flops = static_cast<double>(ir::CountFlops(part));
  const double bytes = static_cast<double>(ir::ParamBytes(part));
  return bytes > 0 && flops >= kComputeBoundFlopsPerByte * bytes && flops >= kComputeBoundShare * whole_flops;
}

// The part's stage names: what follows the last '@' of its spec.
std::string StagesOf(const ir::Workload& part) { return part.spec.substr(part.spec.rfind('@') + 1); }

std::vector<std::string> ComputeBoundNames(const ir::Workload& whole, const std::vector<ir::Workload>& parts) {
  const double whole_flops = static_cast<double>(ir::CountFlops(whole.func));
  std::vector<std::string> names;
  for (const ir::Workload& part : parts) {
    if (IsComputeBound(part.func, whole_flops)) names.push_back(StagesOf(part));
  }
  return names;
}

}  // namespace

std::vector<std::string> ComputeBoundParts(const ir::Workload& whole) {
  return ComputeBoundNames(whole, ir::WorkloadParts(whole));
}

std::vector<ir::Workload> PartsToTuneFirst(const ir::Workload& whole, Split split) {
  if (split == Split::kOff) return {};
  std::vector<ir::Workload> parts = ir::WorkloadParts(whole);
  if (split == Split::kAuto && ComputeBoundNames(whole, parts).size() < 2) return {};
  return parts;
}

}  // namespace tunedb::search
