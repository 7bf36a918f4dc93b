// Code generation: a lowered program (lower.h) becomes an LLVM module,
// after its bounds checks are versioned (versioning.h).
// Internal to tunedb_jit: the only header of the project that includes LLVM.
//
// The module defines `void <name>(ptr args)`, where args points to one data
// pointer per parameter, in order. Inside:
//  - integers are 64-bit (int32 data is sign-extended on load and truncated
//    on store), floats are float/double, float add/mul may contract to FMA;
//  - exp, sigmoid, tanh and log of a float are computed inline
//    (polynomials, within 2 ulp), so they vectorize; other math calls are
//    LLVM intrinsics or libm;
//  - a vectorized loop becomes LLVM vector operations over all its lanes
//    (contiguous accesses as vector loads/stores, invariant ones broadcast,
//    others gathered lane by lane); a body that cannot be vectorized that
//    way (a nested loop, a branch that depends on the lane) stays a scalar
//    loop for LLVM's own loop vectorizer;
//  - in a vectorized loop, a select with a lane-invariant condition over
//    loads that are broadcast or contiguous has no branch: each load reads
//    its elements where its side is chosen and a zero cell elsewhere (the
//    address is selected), so it never leaves its buffer; other selects over
//    loads branch;
//  - a serial loop whose body is `if x < T` on its own variable, T fixed in
//    the loop (versioning writes a version or a skip so), is two loops,
//    [0, T) and [T, extent) with T clamped to the range, each with one
//    branch's statements: no branch is left inside the loop;
//  - an unrolled loop is emitted once per iteration (up to 4096 statements);
//  - a parallel loop is outlined into a function called through
//    tunedb_parallel_for (runtime.h); parallel loops inside it run serially;
//  - allocation scopes become stack arrays (hoisted to the function entry)
//    up to 1 MiB, heap allocations above.
#pragma once

#include <memory>
#include <string>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "ir/stmt.h"

namespace tunedb::measure {

struct CodegenOptions {
  std::string cpu;
  std::string features;
  int vector_bits = 128;
  // Whether float add, subtract and multiply may fuse into FMA, which
  // rounds once where the interpreter rounds twice. Off only where a test
  // tells contraction's rounding apart from a wrong result.
  bool contract_fma = true;
  // Test-only faults, to exercise the worker's containment.
  bool fault_crash = false;
  bool fault_hang = false;
};

std::unique_ptr<llvm::Module> GenerateModule(const ir::PrimFunc& lowered, llvm::LLVMContext& ctx,
                                             const std::string& name, const CodegenOptions& options);

}  // namespace tunedb::measure
