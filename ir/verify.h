// Well-formedness of a program that came from outside (JSON from a client
// or a file), checked before anything runs it.
//
// Programs that tunedb builds (the workload library and language, schedule
// primitives) are well formed by construction; a program read from JSON is
// only well typed expression by expression (the constructors check that).
// Without this check a buffer used outside its allocation or a variable
// used outside its loop reached the interpreter or code generation of a
// measuring worker and failed there.
#pragma once

#include "ir/stmt.h"

namespace tunedb::ir {

// Throws IrError naming the block (and the buffer or variable) of the first
// problem:
// - every buffer accessed (loads, stores, block regions) is a parameter or
//   allocated by an enclosing block;
// - every variable used is bound where it is used: a loop's variable inside
//   its loop; a block's iteration variables inside its body, init and
//   regions (its bindings and predicate see only the enclosing loops); no
//   loop or block binds a variable that is already bound;
// - loop and iteration variables are integers (an int32 one counts at most
//   2^31 values), each binding has the type of its iteration variable, a
//   predicate is bool;
// - no integer part of an expression that reads no data can leave its
//   type (FindIntEscape, ir/limits.h);
// - a block's region has a range per dimension of its buffer, each range's
//   start and extent of one integer type.
// (Expression and store types are checked where they are made.)
void VerifyProgram(const PrimFunc& func);

}  // namespace tunedb::ir
