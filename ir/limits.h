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
#include <string>
#include <vector>

#include "ir/stmt.h"

namespace tunedb::ir {

inline constexpr std::int64_t kMaxBufferBytes = std::int64_t{1} << 48;      // 256 TiB
inline constexpr std::int64_t kMaxBlockIterations = std::int64_t{1} << 48;  // about 2.8e14

// Throws IrError naming the buffer when it is larger than kMaxBufferBytes.
void CheckBufferSize(const Buffer& buffer);

// Throws IrError naming the block when its iteration domain (the product of
// `extents`) has more than kMaxBlockIterations points.
void CheckIterationCount(const std::string& block, const std::vector<std::int64_t>& extents);

// Both checks over every parameter, allocation and block of the program.
void CheckProgramSize(const PrimFunc& func);

}  // namespace tunedb::ir
