// The compilation target: the host CPU, or one named by a target string in
// TVM's form, "llvm -mcpu=<cpu> -num-cores=<n>".
#pragma once

#include <string>
#include <vector>

namespace tunedb::measure {

struct Target {
  std::string cpu;       // LLVM's CPU name ("skylake-avx512", "znver4", "generic", ...)
  std::string features;  // "+avx2,-avx512f,..." on top of the CPU's defaults (empty: none)
  std::string mattr;     // -mattr as the target string gave it, part of its name (empty: none)
  int num_cores = 1;     // threads for parallel loops, at most kMaxCores

  static constexpr int kMaxCores = 1024;

  // "llvm -mcpu=<cpu> -num-cores=<n>", with " -mattr=<mattr>" after the CPU
  // when one was given: records built with other features are kept apart.
  std::string ToString() const;
  // Widest vector register the CPU and features allow, in bits (512, 256
  // or 128).
  int VectorBits() const;

  // The machine we run on: LLVM's host CPU name and features, and the cores
  // this process may use. A CPU newer than LLVM 16 (which it calls
  // "generic") is named after the newest CPU it knows within the host's
  // features.
  static Target Host();
  // Parses a target string. -mcpu defaults to the host's; a CPU equal to
  // the host's takes the host's features. -mtriple may only name this
  // machine's (kernels are measured here). TVM's "-keys=cpu", which its
  // str(target) prints, is taken and left out; "-key value" is read as
  // "-key=value", as TVM reads it. Throws
  // std::invalid_argument naming the bad part, a CPU that LLVM does not
  // know included.
  static Target Parse(const std::string& text);
};

enum class CpuVendor { kAmd, kIntel, kOther };

// The newest CPU LLVM knows that has none of the vector extensions (SSE,
// AVX, AVX-512, FMA, ...) in `absent_features` (names as LLVM's host
// detection gives them), the vendor's own before the x86-64 levels;
// "generic" when none fits. How Target::Host names a CPU newer than LLVM.
// Other absent features do not count: a virtual machine hides system ones
// (RDPID, PKU, ...) that the host's exact feature list turns off anyway.
std::string NewestKnownCpuWithin(const std::vector<std::string>& absent_features, CpuVendor vendor);

}  // namespace tunedb::measure
