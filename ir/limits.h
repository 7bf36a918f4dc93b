// Size limits every program obeys.
//
// Byte sizes, loop trip counts and FLOP counts are int64 arithmetic all
// through tunedb (allocation, lowering, features, GFLOPS figures). A spec
// like matmul:M=3000000000,N=3000000000 would overflow them silently and
// print a negative FLOP count, so programs are checked where they are made:
// by te::Builder as each tensor is added (so the workload language can point
// at the line), and by ProgramFromJson. The limits are far
// above anything that could be measured: 2^48 iterations of one block take
// over twenty minutes on a machine running at 200 GFLOP/s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/simplify.h"
#include "ir/stmt.h"

namespace tunedb::ir {

inline constexpr std::int64_t kMaxBufferBytes = std::int64_t{1} << 48;      // 256 TiB
inline constexpr std::int64_t kMaxBlockIterations = std::int64_t{1} << 48;  // about 2.8e14

// Throws IrError naming the buffer when it is larger than kMaxBufferBytes.
void CheckBufferSize(const Buffer& buffer);

// Throws IrError naming the block when its iteration domain (the product of
// `extents`) has more than kMaxBlockIterations points.
void CheckIterationCount(const std::string& block, const std::vector<std::int64_t>& extents);

// The most values an int32 loop or iteration variable can count (0 ..
// 2^31 - 1). te::Builder gives a wider axis an int64 variable, as TVM does.
inline constexpr std::int64_t kMaxInt32Extent = std::int64_t{1} << 31;

// Integer arithmetic wraps: the interpreter wraps every int32 and int64
// result, and code generation wraps what is computed from loaded data
// (A[B[i] * 3]). But index arithmetic is simplified as if over unbounded
// integers (a bound decides that a floormod is a no-op) and compiled code
// holds int32 in 64 bits, and these agree with wrapping only while no value
// leaves its type. So a part of an integer expression that reads no data
// must stay inside its type (int32 or int64) for every value of its
// variables: (i * i * 3) % 5 over i in 0..49999 does not, and compiled
// code computed another element than the interpreter. Returns the
// innermost such part and its range ("0..2499900001", or "0..past 2^63"),
// or nothing.
// Variables missing from `ranges` leave the parts that use them unjudged.
// (Simplification leaves the parts that read data as they are written,
// apart from + - *, which wrap alike.)
struct IntEscape {
  Expr part;
  std::string range;
};
std::optional<IntEscape> FindIntEscape(const Expr& e, const VarRanges& ranges);

// Both checks over every parameter, allocation and block of the program.
void CheckProgramSize(const PrimFunc& func);

}  // namespace tunedb::ir
