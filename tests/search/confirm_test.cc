#include "search/confirm.h"

#include <limits>

#include <gtest/gtest.h>

namespace tunedb::search {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using Indices = std::vector<std::size_t>;

TEST(NextContenders, FasterThanTheBestComeFirstFastestFirst) {
  // Best so far 1.0 s; margin 5%: 1.04 is a near tie, 1.2 is not.
  std::vector<double> medians = {1.2, 0.9, 1.04, 0.8};
  EXPECT_EQ(NextContenders(medians, {false, false, false, false}, 1.0, 0.05, 2), (Indices{3, 1}));
  EXPECT_EQ(NextContenders(medians, {false, false, false, false}, 1.0, 0.05, 8), (Indices{3, 1, 2}));
}

TEST(NextContenders, ANearTieGetsASecondLookThoughItDidNotBeatTheBest) {
  EXPECT_EQ(NextContenders({1.04, 1.2}, {false, false}, 1.0, 0.05, 2), (Indices{0}));
  // Without a margin only a candidate that beats the best is looked at.
  EXPECT_TRUE(NextContenders({1.04, 1.2}, {false, false}, 1.0, 0.0, 2).empty());
}

TEST(NextContenders, DoneWhenTheFastestContenderIsConfirmed) {
  std::vector<double> medians = {0.9, 0.95, 0.97};
  EXPECT_TRUE(NextContenders(medians, {true, false, false}, 1.0, 0.05, 2).empty());
  // The second look slowed the front one down: the new front is looked at.
  medians[0] = 0.99;
  EXPECT_EQ(NextContenders(medians, {true, false, false}, 1.0, 0.05, 2), (Indices{1, 2}));
}

TEST(NextContenders, FailuresAreNeverContendersAndTheFirstChunkHasNoBest) {
  std::vector<double> medians = {kInf, 3.0, 2.0};
  EXPECT_EQ(NextContenders(medians, {false, false, false}, kInf, 0.05, 2), (Indices{2, 1}));
  EXPECT_TRUE(NextContenders({kInf, kInf}, {false, false}, kInf, 0.05, 2).empty());
}

}  // namespace
}  // namespace tunedb::search
