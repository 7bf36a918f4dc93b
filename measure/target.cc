#include "measure/target.h"

#include <sched.h>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

namespace tunedb::measure {
namespace {

// The host target's subtarget table, which knows its CPUs and features,
// set up for a CPU and features (none: the table alone).
std::unique_ptr<llvm::MCSubtargetInfo> HostSubtargetInfo(const std::string& text, const std::string& cpu = "",
                                                         const std::string& features = "") {
  llvm::InitializeNativeTarget();  // registers the host's target; repeat calls are no-ops
  std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) throw std::invalid_argument("target '" + text + "': LLVM has no target for " + triple + ": " + error);
  std::unique_ptr<llvm::MCSubtargetInfo> info(target->createMCSubtargetInfo(triple, cpu, features));
  if (!info) throw std::invalid_argument("target '" + text + "': LLVM has no subtarget table for " + triple);
  return info;
}

// Kernels run on this machine, so a triple may only name its own.
void CheckTripleIsHost(const std::string& text, const std::string& given) {
  llvm::Triple host(llvm::sys::getProcessTriple()), asked(llvm::Triple::normalize(given));
  if (asked.getArch() != host.getArch() || asked.getOS() != host.getOS()) {
    throw std::invalid_argument("target '" + text + "': -mtriple=" + given + " is not this machine's (" + host.str() +
                                "): tunedb measures every kernel where it runs");
  }
}

// LLVM only warns about a CPU it does not know, then generates code for a
// machine without the features of any real one; on x86-64 that aborts the
// process ("64-bit code requested on a subtarget that doesn't support it").
// So an unknown CPU is refused here, where the message can name it.
void CheckCpuKnown(const std::string& text, const std::string& cpu) {
  if (!HostSubtargetInfo(text)->isCPUStringValid(cpu)) {
    throw std::invalid_argument("target '" + text + "': LLVM does not know the CPU '" + cpu + "' for " +
                                llvm::sys::getProcessTriple() + " (LLVM's names: znver4, skylake-avx512, generic, ...)");
  }
}

// An -mattr feature LLVM does not know is dropped with a warning on
// stderr, and the kernels are built for a machine the user did not ask
// for. So each one must be +name or -name of a feature LLVM knows.
void CheckFeaturesKnown(const std::string& text, const std::string& features) {
  std::unique_ptr<llvm::MCSubtargetInfo> info = HostSubtargetInfo(text);
  std::istringstream in(features);
  std::string feature;
  while (std::getline(in, feature, ',')) {
    if (feature.size() < 2 || (feature[0] != '+' && feature[0] != '-')) {
      throw std::invalid_argument("target '" + text + "': -mattr entry '" + feature +
                                  "' must be +name or -name (e.g. -mattr=+avx512f,-avx512vl)");
    }
    std::string name = feature.substr(1);
    // LLVM 16 has no lookup of a feature name; toggling one flips its bit,
    // and leaves the bits alone (after its own warning) when it is unknown.
    llvm::FeatureBitset before = info->getFeatureBits();
    if (info->ToggleFeature(name) == before) {
      throw std::invalid_argument("target '" + text + "': LLVM does not know the feature '" + name + "' of -mattr");
    }
  }
}

}  // namespace

std::string Target::ToString() const {
  return "llvm -mcpu=" + cpu + (mattr.empty() ? "" : " -mattr=" + mattr) + " -num-cores=" + std::to_string(num_cores);
}

int Target::VectorBits() const {
  // The CPU's own features count too: "-mcpu=skylake-avx512" alone has
  // AVX-512, and "-mattr=-avx512f" leaves a znver4 its AVX2.
  std::unique_ptr<llvm::MCSubtargetInfo> info = HostSubtargetInfo(ToString(), cpu, features);
  if (info->checkFeatures("+avx512f")) return 512;
  if (info->checkFeatures("+avx")) return 256;
  return 128;
}

Target Target::Host() {
  Target t;
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features;
  if (llvm::sys::getHostCPUFeatures(features)) {
    std::string list;
    for (const auto& f : features) {
      if (!f.second) continue;
      list += (list.empty() ? "+" : ",+") + f.first().str();
    }
    t.features = list;
  }
  cpu_set_t set;
  t.num_cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                           : static_cast<int>(std::thread::hardware_concurrency());
  if (t.num_cores < 1) t.num_cores = 1;
  return t;
}

Target Target::Parse(const std::string& text) {
  Target host = Host();
  Target t = host;
  std::istringstream in(text);
  std::string word;
  if (!(in >> word) || word != "llvm") {
    throw std::invalid_argument("target '" + text + "': must start with 'llvm' (e.g. llvm -mcpu=znver4 -num-cores=2)");
  }
  while (in >> word) {
    if (word.rfind("-mcpu=", 0) == 0) {
      t.cpu = word.substr(6);
      if (t.cpu.empty()) throw std::invalid_argument("target '" + text + "': empty -mcpu");
    } else if (word.rfind("-num-cores=", 0) == 0) {
      // Each core is a thread of the pool that runs parallel loops: a count
      // far past any machine's would start that many threads (or fail to,
      // inside a running kernel).
      std::string value = word.substr(11);
      std::size_t used = 0;
      long cores = 0;
      try {
        cores = std::stol(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != value.size()) {
        throw std::invalid_argument("target '" + text + "': -num-cores must be a whole number, not '" + value + "'");
      }
      if (cores < 1 || cores > kMaxCores) {
        throw std::invalid_argument("target '" + text + "': -num-cores must be between 1 and " +
                                    std::to_string(kMaxCores) + ", not " + value);
      }
      t.num_cores = static_cast<int>(cores);
    } else if (word.rfind("-mtriple=", 0) == 0) {
      CheckTripleIsHost(text, word.substr(9));
    } else if (word.rfind("-mattr=", 0) == 0) {
      t.mattr = word.substr(7);
      CheckFeaturesKnown(text, t.mattr);
    } else {
      throw std::invalid_argument("target '" + text + "': unknown option '" + word + "'");
    }
  }
  if (t.cpu != host.cpu) CheckCpuKnown(text, t.cpu);
  // Another CPU brings its own defaults; -mattr is applied on top of them.
  if (!t.mattr.empty()) {
    t.features = t.mattr;
  } else if (t.cpu != host.cpu) {
    t.features.clear();
  }
  return t;
}

}  // namespace tunedb::measure
