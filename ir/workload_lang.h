// The workload language: users describe their own tensor computations in a
// small text file and tune them without recompiling tunedb.
//
//   # a linear layer with ReLU
//   input X: f32[128, 784]
//   input W: f32[128, 784]
//   Y[i, j] = sum(k in 784) X[i, k] * W[j, k]
//   Z[i, j] = max(Y[i, j], 0.0)
//   output Z
//
// Lines:
//   input NAME: DTYPE[D0, D1, ...]          a parameter (f32, f64, i32, i64)
//   NAME[i, j, ...] = EXPR                  an element-wise stage
//   NAME[i, j, ...] = OP(k in N, ...) EXPR  a reduction, OP is sum, max or min
//   output NAME, ...                        the results (default: every stage
//                                           that no other stage reads)
// An index's extent comes from its first use as a plain index of a tensor
// (Y[i, j] takes i from X[i, k]); write `i in 128` on the left to give it.
// Expressions: numbers, indices, TENSOR[expr, ...], + - * / %, comparisons,
// && || !, cond ? a : b, select(c, a, b), min, max, exp, log, sqrt, rsqrt,
// tanh, sigmoid, abs, floor, ceil, pow, and casts f32(x), i32(x), ...
// A number takes the type of what it meets (0.0 next to f32 is f32); `/`
// on integers and `%` mean floordiv and floormod. `#` starts a comment.
//
// Errors name file:line:column and what was expected.
#pragma once

#include <string>
#include <string_view>

#include "ir/error.h"
#include "ir/stmt.h"

namespace tunedb::ir {

class WorkloadParseError : public IrError {
 public:
  WorkloadParseError(const std::string& file, int line, int column, const std::string& what);
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_;
  int column_;
};

// Builds the canonical unscheduled program of the text. `file` is used only
// in error messages.
PrimFunc ParseWorkloadText(std::string_view text, std::string_view file = "<workload>");

}  // namespace tunedb::ir
