// Integer factoring for tile sizes.
//
// Both run in O(sqrt(n)): loop extents reach 2^48 (ir/limits.h), where
// trying every number up to n would not finish.
#pragma once

#include <cstdint>
#include <vector>

namespace tunedb::ir {

// Every divisor of n >= 1, ascending, 1 and n included.
std::vector<std::int64_t> Divisors(std::int64_t n);

// The prime factors of n >= 1 with multiplicity, ascending (none for 1).
std::vector<std::int64_t> PrimeFactors(std::int64_t n);

}  // namespace tunedb::ir
