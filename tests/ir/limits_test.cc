#include "ir/limits.h"

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/flops.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

void ExpectRefused(const std::string& spec, const std::string& message) {
  try {
    BuildWorkload(spec);
    FAIL() << "expected an error for " << spec;
  } catch (const IrError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(LimitsTest, BuffersAndBlocksOverTheLimitAreRefusedByName) {
  // 3e9 x 3e9 floats is 3.6e19 bytes: int64 would wrap it around.
  ExpectRefused("matmul:M=3000000000,N=3000000000,K=3000000000",
                "buffer 'A' of shape [3000000000, 3000000000] float32 is larger than tunedb's limit of 2^48 bytes "
                "(256 TiB)");
  // 2^23 cubed: every buffer is exactly 2^48 bytes, but the block iterates
  // 2^69 times, which would make the FLOP count negative.
  ExpectRefused("matmul:M=8388608,N=8388608,K=8388608", "block 'C' iterates more than tunedb's limit of 2^48 times");
}

TEST(LimitsTest, ProgramsUpToTheLimitBuildAndCountExactly) {
  const std::int64_t n = std::int64_t{1} << 40;
  Workload w = BuildWorkload("matmul:M=" + std::to_string(n) + ",N=1,K=1");
  EXPECT_EQ(CountFlops(w.func), 2 * n);
  EXPECT_NO_THROW(CheckProgramSize(w.func));
}

}  // namespace
}  // namespace tunedb::ir
