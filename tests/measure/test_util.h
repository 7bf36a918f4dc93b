// Helpers for measure tests: run a program through lowering and the JIT and
// compare with the interpreter.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "ir/ndarray.h"
#include "ir/stmt.h"
#include "measure/jit.h"
#include "measure/target.h"

namespace tunedb::measure {

// One JIT for the host, shared by a test binary's tests.
inline Jit& SharedJit() {
  static Jit jit(Target::Host());
  return jit;
}

// The one CPU that tests reading optimized IR compile for. LLVM's unrolling
// and folding depend on the CPU (on a Zen 3 it unrolled a 16-row loop fully
// and folded away the guard a test looks for), and those tests check what
// the code generator hands LLVM, not the host. Nothing compiled for it runs.
inline const Target& IRTarget() {
  static const Target target = Target::Parse("llvm -mcpu=znver4 -num-cores=2");
  return target;
}

// A JIT for IRTarget(), used only for OptimizedIR.
inline Jit& IRJit() {
  static Jit jit(IRTarget());
  return jit;
}

namespace testing {

// The same data as a one-dimensional array (lowered programs take flat buffers).
inline ir::NDArray Flat(const ir::NDArray& a) {
  ir::NDArray f(a.dtype(), {a.size()});
  std::memcpy(f.data(), a.data(), a.bytes());
  return f;
}

// Outputs of `reference` (interpreted) compared with `outputs` (flat or not).
inline std::string CompareOutputs(const ir::PrimFunc& reference, const std::vector<ir::NDArray>& expected,
                                  const std::vector<ir::NDArray>& actual, double tol = 1e-4) {
  for (int i : ir::OutputParams(reference)) {
    std::string why;
    if (!ir::AllClose(Flat(actual[i]), Flat(expected[i]), tol, tol, &why)) {
      return "output " + reference.params[i]->name + ": " + why;
    }
  }
  return "";
}

}  // namespace testing
}  // namespace tunedb::measure
