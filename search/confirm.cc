#include "search/confirm.h"

#include <algorithm>
#include <cmath>

namespace tunedb::search {

std::vector<std::size_t> NextContenders(const std::vector<double>& medians, const std::vector<bool>& confirmed,
                                        double best, double margin, int max_at_once) {
  const double threshold = std::isfinite(best) ? best * (1 + margin) : best;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < medians.size(); ++i) {
    if (std::isfinite(medians[i]) && medians[i] < threshold) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return medians[a] < medians[b]; });
  std::vector<std::size_t> next;
  if (order.empty() || confirmed[order.front()]) return next;
  for (std::size_t i : order) {
    if (static_cast<int>(next.size()) == max_at_once) break;
    if (!confirmed[i]) next.push_back(i);
  }
  return next;
}

}  // namespace tunedb::search
