// A thin adapter over LLVM's ORC LLJIT: compile a lowered program into a
// callable kernel, look it up, free it. One resource tracker per kernel, so
// a long tuning session does not accumulate code.
//
// Thread-safety: one Jit per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "ir/stmt.h"
#include "measure/target.h"

namespace tunedb::measure {

// Generated code that LLVM rejects, or an internal code-generation failure.
class BuildError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Kernel entry point: args[i] points to the data of parameter i.
using KernelFn = void (*)(void** args);

struct Kernel {
  KernelFn fn = nullptr;
  std::uint64_t id = 0;
  double compile_secs = 0;  // code generation + O3 + machine code + link
};

struct CompileOptions {
  // CodegenOptions::contract_fma.
  bool contract_fma = true;
  // Test-only faults (measure config's fault injection): a kernel that
  // writes through a null pointer, or one that never returns.
  bool fault_crash = false;
  bool fault_hang = false;
};

class Jit {
 public:
  explicit Jit(const Target& target);
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  const Target& target() const;

  // `lowered` is the output of Lower(). Throws BuildError.
  Kernel Compile(const ir::PrimFunc& lowered, const CompileOptions& options = {});
  // Frees the kernel's code. Using its function pointer afterwards is undefined.
  void Release(const Kernel& kernel);

  // The O3-optimized LLVM IR of a lowered program, as text.
  std::string OptimizedIR(const ir::PrimFunc& lowered);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunedb::measure
