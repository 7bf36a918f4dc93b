// Human-readable text of programs and expressions, close to TVMScript so
// that a TVM user reads it at a glance. The text is for people and golden
// tests; the exact, parseable form is the JSON (json.h).
//
// Variable names are made unique within their scope by a numeric suffix
// (two nested loops both named "i" print as i and i_1); buffer names are
// made unique within the function the same way.
#pragma once

#include <string>

#include "ir/stmt.h"

namespace tunedb::ir {

std::string PrintProgram(const PrimFunc& func);

// An expression on its own, with variables and buffers under their names.
std::string PrintExpr(const Expr& expr);

// A string as a Python literal in double quotes (block names, scopes and
// annotation keys in programs and schedule scripts).
std::string PythonString(const std::string& s);

}  // namespace tunedb::ir
