#include "ir/factor.h"

namespace tunedb::ir {

std::vector<std::int64_t> Divisors(std::int64_t n) {
  std::vector<std::int64_t> small;
  std::vector<std::int64_t> large;
  for (std::int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

std::vector<std::int64_t> PrimeFactors(std::int64_t n) {
  std::vector<std::int64_t> primes;
  for (std::int64_t p = 2; p <= n / p; ++p) {
    while (n % p == 0) {
      primes.push_back(p);
      n /= p;
    }
  }
  if (n > 1) primes.push_back(n);
  return primes;
}

}  // namespace tunedb::ir
