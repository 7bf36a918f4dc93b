#include "ir/factor.h"

#include <gtest/gtest.h>

#include <numeric>

namespace tunedb::ir {
namespace {

using V = std::vector<std::int64_t>;

TEST(FactorTest, DivisorsAreAscendingAndComplete) {
  EXPECT_EQ(Divisors(1), V({1}));
  EXPECT_EQ(Divisors(7), V({1, 7}));
  EXPECT_EQ(Divisors(36), V({1, 2, 3, 4, 6, 9, 12, 18, 36}));
  EXPECT_EQ(Divisors(512).size(), 10u);
  // Against trying every number, on every n up to 2000.
  for (std::int64_t n = 1; n <= 2000; ++n) {
    V slow;
    for (std::int64_t d = 1; d <= n; ++d) {
      if (n % d == 0) slow.push_back(d);
    }
    ASSERT_EQ(Divisors(n), slow) << n;
  }
}

TEST(FactorTest, PrimeFactorsMultiplyBack) {
  EXPECT_EQ(PrimeFactors(1), V());
  EXPECT_EQ(PrimeFactors(360), V({2, 2, 2, 3, 3, 5}));
  for (std::int64_t n = 1; n <= 2000; ++n) {
    V f = PrimeFactors(n);
    ASSERT_EQ(std::accumulate(f.begin(), f.end(), std::int64_t{1}, std::multiplies<>()), n) << n;
    ASSERT_TRUE(std::is_sorted(f.begin(), f.end())) << n;
  }
}

TEST(FactorTest, ExtentsAtTheSizeLimitFactorQuickly) {
  // 2^48 - 59 is prime: trying every number up to it would take hours.
  const std::int64_t prime = (std::int64_t{1} << 48) - 59;
  EXPECT_EQ(Divisors(prime), V({1, prime}));
  EXPECT_EQ(PrimeFactors(prime), V({prime}));
  EXPECT_EQ(Divisors(std::int64_t{1} << 48).size(), 49u);
}

}  // namespace
}  // namespace tunedb::ir
