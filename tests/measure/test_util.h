// Helpers for measure tests: run a program through lowering and the JIT and
// compare with the interpreter.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/ndarray.h"
#include "ir/printer.h"
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

// A matmul's C accumulated 4 rows at a time in a private C_local
// (cache_write, written back under i0): where the padded-row tests start
// (lower_test.cc, codegen_test.cc).
inline constexpr const char* kFourRowAccumulator = R"(
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
i0, i1 = sch.split(i, factors=[None, 4])
sch.reorder(i0, k, i1, j)
b1 = sch.cache_write(b0, 0, "local")
sch.reverse_compute_at(b1, i0, preserve_unit_loops=True)
)";

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

// Whether `program`, a lowered program (flat buffers), computes in the
// interpreter what `workload` computes on MakeArguments(workload, seed):
// "" or why not, with the program printed.
inline std::string InterpretedKeepsTheResult(const ir::PrimFunc& workload, const ir::PrimFunc& program,
                                             std::uint64_t seed) {
  std::vector<ir::NDArray> expected = ir::MakeArguments(workload, seed);
  ir::Interpret(workload, expected);
  std::vector<ir::NDArray> args;
  for (const ir::NDArray& a : ir::MakeArguments(workload, seed)) args.push_back(Flat(a));
  try {
    ir::Interpret(program, args);
  } catch (const ir::IrError& e) {
    return std::string("interpreter: ") + e.what() + "\n" + ir::PrintProgram(program);
  }
  std::string why = CompareOutputs(workload, expected, args);
  return why.empty() ? "" : why + "\n" + ir::PrintProgram(program);
}

// A register block of a padded NHWC convolution: the padding inlined (a
// check on every read of the input), 4 output columns by the vectorized
// output channels, the reduction a loop around them.
inline constexpr const char* kPaddedConvRegisterBlock = R"(
sch.compute_inline(sch.get_block("PaddedInput"))
b = sch.get_block("Conv2dOutput")
nn, yy, xx, ff, ry, rx, rc = sch.get_loops(b)
x0, x1 = sch.split(xx, factors=[None, 4])
sch.reorder(nn, yy, x0, ry, rx, rc, x1, ff)
c = sch.cache_write(b, 0, "local")
sch.reverse_compute_at(c, x0, preserve_unit_loops=True)
sch.vectorize(ff)
sch.decompose_reduction(b, ry)
)";

}  // namespace testing
}  // namespace tunedb::measure
