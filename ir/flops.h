// Operation count of a program, for GFLOPS figures, and the bytes of its
// parameters, for GB/s figures where it counts none; and the text every tool
// quotes rates and durations in.
//
// Each block contributes (product of its iteration-domain extents) x
// (arithmetic operations, comparisons and math calls in its body that
// compute on data: float-typed, or integer-typed with a tensor read
// beneath them). A select counts its condition and the larger of its two
// sides, as only one runs. Init statements, index arithmetic and a load's
// indices count nothing. Because scheduling keeps every block's iteration domain,
// the count of a scheduled program equals that of its workload: matmul M x
// N x K counts 2MNK, in f32 or i32 alike ("FLOPs" as TVM counts them).
#pragma once

#include <cstdint>
#include <string>

#include "ir/stmt.h"

namespace tunedb::ir {

std::int64_t CountFlops(const PrimFunc& func);

// Bytes of the program's parameters: what it reads and writes at least once,
// each parameter whole or, where its reads and writes are fewer than its
// elements (a gather's table), as many elements as those. The rate to
// quote for a program that counts no FLOPs (a transpose, a layout change,
// a gather), which moves data and computes nothing.
std::int64_t ParamBytes(const PrimFunc& func);

// How many times the block bodies run in all: the work of a program that
// counts no FLOPs (a transpose, a gather), for limits that must hold for
// every program, such as how large a program the interpreter checks.
std::int64_t CountBlockInstances(const PrimFunc& func);

// A speed as the tools quote it: GFLOP/s for a program that counts FLOPs,
// else GB/s of its parameters, so that a transpose is not "0 GFLOP/s".
// value is 0 when secs is not a positive, finite time.
struct Rate {
  double value = 0;
  const char* unit = "GFLOP/s";  // or "GB/s"
};
Rate RateOf(std::int64_t flops, std::int64_t param_bytes, double secs);

// A duration as the tools quote it: milliseconds to four places, or
// microseconds to two below 0.1 ms and nanoseconds to one below 1 us, where
// "0.0000 ms" would hide a fast kernel; "-" when there is none (infinite or
// NaN).
std::string DurationText(double secs);

}  // namespace tunedb::ir
