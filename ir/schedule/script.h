// Schedule scripts: the Python-like form of a trace, written by users or by
// Trace::AsScript, executed against a Schedule.
//
//   b0 = sch.get_block("C")
//   i, j, k = sch.get_loops(b0)
//   j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
//   sch.reorder(i, j0, k, j1)
//   sch.decompose_reduction(b0, j0)
//
// Supported: assignments to one or several names (with one *rest), calls
// sch.METHOD(positional..., keyword=...) with TVM's method and parameter
// names, nested calls, lists, ints, floats, strings, True/False/None,
// `*name` to spread a list, `name[i]` to index one. A leading
// `def f(sch):` line, indentation, `return`, `import`/`from` lines and `#`
// comments are ignored, so a TVM schedule function can be pasted as is.
// A `decision=` argument of a sample_* call fixes its decision.
//
// Errors name the file and line: "mm.py:3: split: loop j: ...".
#pragma once

#include <string_view>

#include "ir/schedule/schedule.h"

namespace tunedb::ir {

void RunScheduleScript(Schedule& sch, std::string_view text, std::string_view file = "<schedule>");

}  // namespace tunedb::ir
