#include "ir/flops.h"

#include <gtest/gtest.h>

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

TEST(FlopsTest, ConvCountsPaddingSelectOncePerElement) {
  // Padding: one select per padded element; the convolution 2 per MAC.
  std::int64_t pad = 1 * 6 * 6 * 2;
  std::int64_t conv = 2LL * 1 * 4 * 4 * 3 * 3 * 3 * 2;
  EXPECT_EQ(Flops("conv2d_nhwc:N=1,H=4,W=4,CI=2,CO=3,KH=3,KW=3,stride=1,pad=1"), pad + conv);
}

TEST(FlopsTest, SoftmaxCountsEveryStage) {
  // max: M*N, exp stage: sub + exp = 2*M*N, sum: M*N, norm: M*N.
  EXPECT_EQ(Flops("softmax:M=2,N=8"), 2 * 8 + 2 * 2 * 8 + 2 * 8 + 2 * 8);
}

}  // namespace
}  // namespace tunedb::ir
