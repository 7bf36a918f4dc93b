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

}  // namespace tunedb::measure
