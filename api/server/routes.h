// The REST API's routes as a pure handler: an HttpRequest and a database
// connection in, an HttpResponse out. No sockets here (server.h owns them),
// so every route is testable directly; the server tests run them over real
// HTTP too.
//
// Routes (all JSON, see docs/API.md):
//   GET  /v1/health                   (and the limits a client's writes must keep)
//   GET  /v1/workloads?limit=&after=
//   GET  /v1/workloads/{hash}
//   GET  /v1/workloads/{hash}/best?target=T&k=K
//   POST /v1/query                    {spec|program|text, target?, k?}
//   GET  /v1/records?workload=&target=&status=&limit=&after=
//   POST /v1/workloads                {spec|program|text}            (token)
//   POST /v1/records                  {records: [...]}               (token)
//   POST /v1/predict                  {workload, traces: [...]}
//   GET  /metrics, GET /              (served by the server: metrics, dashboard)
// Errors: 400 malformed input (the message names the field), 401 missing or
// wrong token on a write route, 404 unknown route or workload, 405 wrong
// method (with Allow), 409 when something needed is absent (no model).
//
// Thread-safety: Handle may run on many threads at once, each with its own
// database connection; the model cache is locked.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "api/server/http.h"
#include "db/database.h"

namespace tunedb::api {

// The most records the best route and /v1/query give at once (`k`). The
// tuner's warm start asks for a fifth of its population (102 of 512).
inline constexpr int kMaxBestRecords = 1000;
// The most records POST /v1/records takes at once.
inline constexpr int kMaxRecordsPerPost = 10000;

class Routes {
 public:
  // token: the bearer token write routes require; empty: writes are open.
  // read_only: the database was opened read-only, and write routes answer
  // 403 saying so. body_limit: the server's largest request body, which
  // the health route tells clients so that they can split their writes.
  Routes(std::string token, bool read_only, std::size_t body_limit);
  ~Routes();

  HttpResponse Handle(const HttpRequest& request, db::Database& database);

  // The route's name for metrics and the access log ("/v1/workloads/{hash}/best").
  static std::string RouteName(const std::string& path);

 private:
  struct ModelCache;
  std::string token_;
  bool read_only_;
  std::size_t body_limit_;
  std::unique_ptr<ModelCache> models_;
};

}  // namespace tunedb::api
