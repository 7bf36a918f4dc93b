#include "ir/flops.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "ir/workload_lang.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

std::int64_t Flops(const std::string& spec) { return CountFlops(BuildWorkload(spec).func); }

TEST(FlopsTest, MatmulCountsTwoPerMultiplyAdd) {
  EXPECT_EQ(Flops("matmul:M=512,N=512,K=512"), 2LL * 512 * 512 * 512);
  EXPECT_EQ(Flops("matmul:M=3,N=5,K=7"), 2 * 3 * 5 * 7);
  EXPECT_EQ(Flops("batch_matmul:B=2,M=3,N=5,K=7"), 2 * 2 * 3 * 5 * 7);
}

TEST(FlopsTest, DenseCountsBiasAndRelu) {
  // 2*B*OUT*IN for the matmul, B*OUT for the add, B*OUT for the max.
  EXPECT_EQ(Flops("dense_bias_relu:B=4,IN=8,OUT=2"), 2 * 4 * 2 * 8 + 4 * 2 + 4 * 2);
}

TEST(FlopsTest, ConvCountsNothingForItsPadding) {
  // Padding's select copies an element or a zero: no arithmetic. The
  // convolution counts 2 per MAC.
  EXPECT_EQ(Flops("conv2d_nhwc:N=1,H=4,W=4,CI=2,CO=3,KH=3,KW=3,stride=1,pad=1"), 2LL * 1 * 4 * 4 * 3 * 3 * 3 * 2);
}

// One side of a select runs: its condition's operations count, and the
// larger side's, and the choice itself does not (as TVM counts). Counting
// the select and both sides made a zero border's `c ? A * B : 0` three
// operations per multiply-add, and a padded convolution read above the
// machine's peak.
TEST(FlopsTest, ASelectCountsItsConditionAndItsLargerSide) {
  EXPECT_EQ(CountFlops(ParseWorkloadText(
                "input A: f32[8, 9]\ninput B: f32[9]\nY[i] = sum(k in 9) (k < 8 ? A[i, k] * B[k] : 0.0)\n")),
            8 * 9 * 2);
  // A condition on data counts its comparison; sides of 2 and 1 count 2.
  EXPECT_EQ(CountFlops(ParseWorkloadText("input A: f32[8]\nY[i] = A[i] > 0.5 ? A[i] * A[i] + 1.0 : -A[i]\n")),
            8 * (1 + 2));
  // Selects nested on a side: the larger path.
  EXPECT_EQ(CountFlops(ParseWorkloadText(
                "input A: f32[8]\nY[i] = i < 2 ? A[i] : (i < 5 ? A[i] * 2.0 + 1.0 : A[i] * 3.0)\n")),
            8 * 2);
}

TEST(FlopsTest, SoftmaxCountsEveryStage) {
  // max: M*N, exp stage: sub + exp = 2*M*N, sum: M*N, norm: M*N.
  EXPECT_EQ(Flops("softmax:M=2,N=8"), 2 * 8 + 2 * 2 * 8 + 2 * 8 + 2 * 8);
}

// Integers computed from tensor data count as TVM counts them; integer
// arithmetic on indices alone, conditions on indices and a load's indices
// are addressing, not work.
TEST(FlopsTest, IntegerOperationsOnDataCountAndIndexArithmeticDoesNot) {
  PrimFunc int_matmul =
      ParseWorkloadText("input A: i32[3, 7]\ninput B: i32[7, 5]\nC[i, j] = sum(k in 7) A[i, k] * B[k, j]\n");
  EXPECT_EQ(CountFlops(int_matmul), 2 * 3 * 5 * 7);
  // i * 2 + 1 and the comparison are on the index; the add of the two
  // loads under the select is on data, and so is the outer add; B[i] * 3
  // inside T's index is addressing.
  PrimFunc mixed = ParseWorkloadText(
      "input A: i64[8]\ninput B: i32[8]\ninput T: i64[100]\n"
      "Y[i] = (i * 2 + 1 < 9 ? i64(B[i]) + A[i] : i64(0)) + T[B[i] * 3 % 100]\n");
  EXPECT_EQ(CountFlops(mixed), 8 * 2);
  PrimFunc float_of_index = ParseWorkloadText("input A: f32[8]\nY[i] = A[i] * f32(i + 1)\n");
  EXPECT_EQ(CountFlops(float_of_index), 8 * 1);
}

TEST(FlopsTest, BlockInstancesCountEveryTimeABodyRuns) {
  EXPECT_EQ(CountBlockInstances(BuildWorkload("matmul:M=3,N=5,K=7").func), 3 * 5 * 7);
  // Padding's 6 x 6 x 2 elements, then the convolution's.
  EXPECT_EQ(CountBlockInstances(BuildWorkload("conv2d_nhwc:N=1,H=4,W=4,CI=2,CO=3,KH=3,KW=3,stride=1,pad=1").func),
            6 * 6 * 2 + 4 * 4 * 3 * 3 * 3 * 2);
  EXPECT_EQ(CountBlockInstances(ParseWorkloadText("input X: f64[6, 10]\nY[i, j] = X[j, i]\n")), 60);
}

TEST(FlopsTest, ParamBytesCountEveryInputAndOutputOnce) {
  // A, B and C of 4-byte floats; padding's intermediate buffer is no
  // parameter.
  EXPECT_EQ(ParamBytes(BuildWorkload("matmul:M=3,N=5,K=7").func), 4 * (3 * 7 + 7 * 5 + 3 * 5));
  EXPECT_EQ(ParamBytes(BuildWorkload("conv2d_nhwc:N=1,H=4,W=4,CI=2,CO=3,KH=3,KW=3,stride=1,pad=1").func),
            4 * (4 * 4 * 2 + 3 * 3 * 2 * 3 + 4 * 4 * 3));
  PrimFunc transpose = ParseWorkloadText("input X: f64[6, 10]\nY[i, j] = X[j, i]\n");
  EXPECT_EQ(CountFlops(transpose), 0);
  EXPECT_EQ(ParamBytes(transpose), 8 * 2 * 60);
  // A gather touches at most the rows it reads of its table: 4 x 16 of
  // E's 1000 x 16, then I and Y whole.
  PrimFunc gather = ParseWorkloadText("input E: f32[1000, 16]\ninput I: i32[4]\nY[i, j] = E[I[i], j]\n");
  EXPECT_EQ(ParamBytes(gather), 4 * (4 * 16) + 4 * 4 + 4 * (4 * 16));
}

TEST(FlopsTest, DurationsAreQuotedInTheUnitThatShowsThem) {
  EXPECT_EQ(DurationText(14e-9), "14.0 ns");
  EXPECT_EQ(DurationText(1.05e-6), "1.05 us");
  EXPECT_EQ(DurationText(99.5e-6), "99.50 us");
  EXPECT_EQ(DurationText(2e-3), "2.0000 ms");
  // Printed whole however long: 1e103 ms has 104 digits.
  EXPECT_EQ(DurationText(1e100).size(), 104 + std::string(".0000 ms").size());
  EXPECT_EQ(DurationText(std::numeric_limits<double>::infinity()), "-");
  EXPECT_EQ(DurationText(std::nan("")), "-");
}

}  // namespace
}  // namespace tunedb::ir
