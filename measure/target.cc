#include "measure/target.h"

#include <sched.h>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

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

// Vector extensions, which decide what a kernel's loops may use.
bool IsSimdFeature(const std::string& name) {
  for (const char* prefix : {"sse", "avx", "fma", "f16c", "gfni", "vaes", "vpclmulqdq"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::string NewestKnownCpuWithin(const std::vector<std::string>& absent_features, CpuVendor vendor) {
  // Newest first, as LLVM 16 names them. The vendor's own list comes first
  // for its scheduling model; the x86-64 levels fit any vendor.
  static const std::vector<std::string> kAmd = {"znver4", "znver3", "znver2", "znver1"};
  static const std::vector<std::string> kIntel = {"graniterapids", "sapphirerapids", "alderlake",   "icelake-server",
                                                  "cascadelake",   "skylake-avx512", "skylake",     "broadwell",
                                                  "haswell"};
  static const std::vector<std::string> kLevels = {"x86-64-v4", "x86-64-v3", "x86-64-v2", "x86-64"};
  std::vector<std::string> candidates = vendor == CpuVendor::kAmd     ? kAmd
                                        : vendor == CpuVendor::kIntel ? kIntel
                                                                      : std::vector<std::string>{};
  candidates.insert(candidates.end(), kLevels.begin(), kLevels.end());
  std::unique_ptr<llvm::MCSubtargetInfo> table = HostSubtargetInfo("host");
  for (const std::string& cpu : candidates) {
    if (!table->isCPUStringValid(cpu)) continue;
    std::unique_ptr<llvm::MCSubtargetInfo> info = HostSubtargetInfo("host", cpu);
    bool fits = true;
    for (const std::string& feature : absent_features) {
      fits = fits && !(IsSimdFeature(feature) && info->checkFeatures("+" + feature));
    }
    if (fits) return cpu;
  }
  return "generic";
}

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

namespace {

// The host's CPU name and features, without the core count.
Target DetectHostCpu() {
  Target t;
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features;
  if (llvm::sys::getHostCPUFeatures(features)) {
    // Both ways, as clang's -march=native: the CPU's name brings defaults
    // that a virtual machine may hide (a Zen 4 guest without RDPID, say).
    std::string list;
    std::vector<std::string> absent;
    for (const auto& f : features) {
      list += (list.empty() ? "" : ",") + std::string(f.second ? "+" : "-") + f.first().str();
      if (!f.second) absent.push_back(f.first().str());
    }
    t.features = list;
    // LLVM 16 calls a CPU newer than itself "generic" (a Zen 5, say), yet
    // detects its features. Records are filed under the CPU's name, and
    // "generic" must mean the baseline x86-64 everywhere, so such a host
    // takes the name of the newest CPU LLVM knows with no vector extension
    // the host lacks (a Zen 5 is a "znver4", as TVM's users name it).
    if (t.cpu == "generic") {
      __builtin_cpu_init();
      CpuVendor vendor = __builtin_cpu_is("amd")     ? CpuVendor::kAmd
                         : __builtin_cpu_is("intel") ? CpuVendor::kIntel
                                                     : CpuVendor::kOther;
      t.cpu = NewestKnownCpuWithin(absent, vendor);
    }
  }
  return t;
}

}  // namespace

Target Target::Host() {
  // The CPU stays the same while the process runs; the cores it may use
  // need not.
  static const Target cpu = DetectHostCpu();
  Target t = cpu;
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
  std::string kind;
  if (!(in >> kind) || kind != "llvm") {
    throw std::invalid_argument("target '" + text + "': must start with 'llvm' (e.g. llvm -mcpu=znver4 -num-cores=2)");
  }
  // TVM's parser also takes "-key value" (`-num-cores 2`): such a pair is
  // read as "-key=value".
  std::vector<std::string> words;
  for (std::string token; in >> token;) {
    if (!words.empty() && token[0] != '-' && words.back()[0] == '-' && words.back().find('=') == std::string::npos) {
      words.back() += "=" + token;
    } else {
      words.push_back(token);
    }
  }
  for (const std::string& word : words) {
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
    } else if (word == "-keys=cpu") {
      // TVM's default keys of an llvm target, which its str(target) prints.
    } else if (word.rfind("-mattr=", 0) == 0) {
      t.mattr = word.substr(7);
      CheckFeaturesKnown(text, t.mattr);
    } else if (word == "-mcpu" || word == "-num-cores" || word == "-mtriple" || word == "-mattr" || word == "-keys") {
      throw std::invalid_argument("target '" + text + "': " + word + " needs a value (" + word + "=VALUE)");
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
