// Request metrics for GET /metrics, in Prometheus text format.
//
// Thread-safety: Observe and Render may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tunedb::api {

class Metrics {
 public:
  Metrics();
  // One answered request: its route name (Routes::RouteName), status and
  // latency from the request's arrival to the response ready to write.
  void Observe(const std::string& route, int status, double secs);
  // tunedb_requests_total{route,status}, tunedb_request_seconds (histogram),
  // tunedb_records, tunedb_workloads.
  std::string Render(std::int64_t records, std::int64_t workloads) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::int64_t> requests_;
  std::vector<double> bounds_;
  std::vector<std::int64_t> buckets_;  // one per bound, plus +Inf
  double sum_ = 0;
  std::int64_t count_ = 0;
};

}  // namespace tunedb::api
