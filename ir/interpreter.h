// The reference interpreter: executes any program, scheduled or not, slowly
// and exactly. It is the correctness oracle for schedules and code
// generation.
//
// Semantics it pins down:
//  - every float32 operation is rounded to float32 after it is computed
//    (math functions are evaluated in double and rounded once, at least as
//    accurate as a float libm);
//  - int32 arithmetic wraps; floordiv/floormod round toward -infinity and a
//    zero divisor is an error;
//  - select evaluates only the chosen branch;
//  - a block instance runs when its predicate holds; its bindings must then
//    lie in the iteration domain; the init runs when every reduction
//    iteration variable is 0;
//  - buffers a block allocates are filled with NaN (floats) or a sentinel
//    (integers) so that reading an element before writing it shows up as a
//    wrong result instead of passing by accident.
// Every violation (out-of-bounds access, binding outside its domain,
// division by zero, arguments of the wrong shape) throws IrError naming the
// block, buffer and indices.
#pragma once

#include <vector>

#include "ir/ndarray.h"
#include "ir/stmt.h"

namespace tunedb::ir {

// args[i] is the array for func.params[i]; outputs are written in place.
void Interpret(const PrimFunc& func, std::vector<NDArray>& args);

// Arrays for every parameter: inputs random from `seed` (each parameter its
// own derived seed), outputs zero. A parameter is an output when some block
// writes it. An integer input that is a whole index of another tensor (a
// gather, E[I[i], j], a cast around it included) holds indices into that
// dimension, [0, extent) (the smallest extent where it indexes several):
// in -8..8, like other integers, it read outside E at once, and no
// candidate of an embedding lookup could be checked.
std::vector<NDArray> MakeArguments(const PrimFunc& func, std::uint64_t seed);

// Indices of the parameters that some block writes.
std::vector<int> OutputParams(const PrimFunc& func);

}  // namespace tunedb::ir
