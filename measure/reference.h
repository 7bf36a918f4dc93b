// The program that computes the reference outputs every candidate is checked
// against: the unscheduled program, with its independent outer loops run on
// all cores.
//
// The reference of a large workload is slow by design (an unscheduled 1024
// matmul runs for 7 s on one core), and it is computed while the other
// cores wait for it. Running a top-level loop in parallel changes only which
// thread computes an output element, never how: each element gets the same
// operations in the same order, so the outputs are those of the serial
// program bit for bit.
#pragma once

#include "ir/stmt.h"

namespace tunedb::measure {

// `func` with each top-level loop marked parallel where that cannot change
// a value: the loop holds exactly one block and drives only spatial
// variables of it (the `parallel` primitive's own check), each iteration
// stores to its own elements, and the block reads what it writes only at
// the element it writes (a reduction's accumulator), never another
// iteration's. Other loops stay serial.
ir::PrimFunc ParallelizeIndependentLoops(const ir::PrimFunc& func);

// `func` with the reduction loops of each top-level nest moved above its
// innermost loop, where that nest is spatial loops (at least two) then
// reduction loops over one block, and the reduction's init split off
// before them (matmul: i, k, j instead of i, j, k). Every element still
// gets its operations in the same order, so its value is the same bit for
// bit; the innermost loop now walks contiguous elements, which LLVM
// vectorizes. The unscheduled 1024 matmul's reference took about 4 s on
// two Zen 3 cores without it.
ir::PrimFunc ReductionsAboveTheInnermostLoop(const ir::PrimFunc& func);

// The reference program: both of the above.
ir::PrimFunc ReferenceProgram(const ir::PrimFunc& func);

}  // namespace tunedb::measure
