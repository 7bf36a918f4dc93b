// The exact, machine-readable form of a program.
//
// ProgramToJson and ProgramFromJson round-trip exactly: names, loop kinds,
// annotations, float constants (bit for bit, including infinities) and the
// identity structure of variables and buffers (a variable used in two
// places is one entry of the "vars" table, referenced by index).
//
//   {"format": "tunedb.program/1", "name": "main",
//    "buffers": [{"name": "A", "dtype": "float32", "shape": [4, 4], "scope": "global"}, ...],
//    "vars": [{"name": "i", "dtype": "int32"}, ...],
//    "params": [0, 1, 2],
//    "body": {"type": "block", "name": "root", ...}}
//
// Expressions are arrays: ["int", "int32", 5], ["float", "float32", 0.5],
// ["var", 3], ["add", a, b], ["load", 0, [i, j]], ["call", "exp", [x]],
// ["cast", "float64", x], ["select", c, t, f], ["not", c].
#pragma once

#include <string>
#include <string_view>

#include "ir/stmt.h"

namespace tunedb::ir {

// Compact JSON text (one line); `indent` > 0 pretty-prints.
std::string ProgramToJson(const PrimFunc& func, int indent = -1);

// Throws IrError naming the JSON path of the first problem
// ("body.body.stmts[1]: unknown statement type 'loop'").
PrimFunc ProgramFromJson(std::string_view text);

}  // namespace tunedb::ir
