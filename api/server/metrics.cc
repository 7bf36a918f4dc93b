#include "api/server/metrics.h"

#include <fmt/core.h>

namespace tunedb::api {

Metrics::Metrics()
    : bounds_{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
      buckets_(bounds_.size() + 1, 0) {}

void Metrics::Observe(const std::string& route, int status, double secs) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{route, status}];
  std::size_t b = 0;
  while (b < bounds_.size() && secs > bounds_[b]) ++b;
  ++buckets_[b];
  sum_ += secs;
  ++count_;
}

std::string Metrics::Render(std::int64_t records, std::int64_t workloads) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  out += "# HELP tunedb_requests_total HTTP requests answered, by route and status.\n";
  out += "# TYPE tunedb_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    out += fmt::format("tunedb_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, n);
  }
  out += "# HELP tunedb_request_seconds Time from a request's arrival to its response ready to write.\n";
  out += "# TYPE tunedb_request_seconds histogram\n";
  std::int64_t cumulative = 0;
  for (std::size_t b = 0; b < bounds_.size(); ++b) {
    cumulative += buckets_[b];
    out += fmt::format("tunedb_request_seconds_bucket{{le=\"{}\"}} {}\n", bounds_[b], cumulative);
  }
  cumulative += buckets_.back();
  out += fmt::format("tunedb_request_seconds_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("tunedb_request_seconds_sum {}\ntunedb_request_seconds_count {}\n", sum_, count_);
  out += "# HELP tunedb_records Tuning records in the database.\n# TYPE tunedb_records gauge\n";
  out += fmt::format("tunedb_records {}\n", records);
  out += "# HELP tunedb_workloads Workloads in the database.\n# TYPE tunedb_workloads gauge\n";
  out += fmt::format("tunedb_workloads {}\n", workloads);
  return out;
}

}  // namespace tunedb::api
