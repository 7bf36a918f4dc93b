#include "costmodel/metrics.h"

#include <gtest/gtest.h>

namespace tunedb::costmodel {
namespace {

TEST(MetricsTest, HandComputed) {
  std::vector<double> labels = {1.0, 0.5, 0.25, 1.0, 0.1};
  std::vector<int> groups = {0, 0, 0, 1, 1};
  std::vector<double> perfect = {3, 2, 1, 2, 1};
  EXPECT_DOUBLE_EQ(PairwiseAccuracy(perfect, labels, groups), 1.0);
  std::vector<double> reversed = {1, 2, 3, 1, 2};
  EXPECT_DOUBLE_EQ(PairwiseAccuracy(reversed, labels, groups), 0.0);
  // Top-1 of group 0 picks label 0.25 (best 1.0), of group 1 picks 0.1: mean (0.25 + 0.1) / 2.
  EXPECT_DOUBLE_EQ(TopKScore(reversed, labels, groups, 1), (0.25 + 0.1) / 2);
  EXPECT_DOUBLE_EQ(TopKScore(reversed, labels, groups, 3), 1.0);
}

}  // namespace
}  // namespace tunedb::costmodel
