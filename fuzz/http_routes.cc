// Fuzz target: a request to the REST API's routes (api/server/routes.h),
// on a database that holds a workload and two records.
//
// The input is the request: a first line "METHOD TARGET", a second line
// the Authorization header, and the body after it. The target goes through
// ParseTarget as the server's does. Beast's own parsing of the bytes on
// the wire is Boost's, tested there; this fuzzes what tunedb does with
// what Beast hands it.
//
// Promise: every request gets an answer, never an exception; bad input is
// a 4xx whose body is JSON naming what is wrong, and never a 500, which
// says the server failed (the in-memory database has no disk to fail).
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/server/routes.h"
#include "db/memory_database.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace tunedb;

constexpr const char* kToken = "tok";

api::HttpRequest Request(std::string_view text) {
  api::HttpRequest r;
  auto line = [&]() {
    std::size_t end = text.find('\n');
    std::string_view l = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    return l;
  };
  std::string_view first = line();
  std::size_t space = first.find(' ');
  r.method = std::string(first.substr(0, space));
  std::string target(space == std::string_view::npos ? "" : first.substr(space + 1));
  api::ParsedTarget parsed = api::ParseTarget(target);
  if (!parsed.error.empty()) return {};  // the server answers 400 itself
  r.path = parsed.path;
  r.query = parsed.query;
  r.authorization = std::string(line());
  r.body = std::string(text);
  return r;
}

// What the fuzzed request meets: the workload matmul 12 x 10 x 8 and two
// records of it, committed through the routes as a client commits them.
void Seed(api::Routes& routes, db::Database& database) {
  auto post = [&](const char* path, const std::string& body) {
    api::HttpRequest r{"POST", path, {}, std::string("Bearer ") + kToken, body};
    api::HttpResponse res = routes.Handle(r, database);
    if (res.status != 201) fuzz::Finding(std::string("seeding ") + path + ": " + res.body);
    return nlohmann::json::parse(res.body);
  };
  std::string hash = post("/v1/workloads", R"({"spec": "matmul:M=12,N=10,K=8"})")["hash"];
  nlohmann::json record = {{"workload_hash", hash},
                           {"target", "llvm -mcpu=znver4 -num-cores=2"},
                           {"trace", nlohmann::json::parse(R"([[["GetBlock", [], ["C", "main"], ["b0"]]], []])")},
                           {"run_secs", {0.0004, 0.00041}},
                           {"created", 1700000000.5}};
  nlohmann::json failed = record;
  failed["status"] = "build_error";
  failed["error"] = "no";
  failed.erase("run_secs");
  post("/v1/records", nlohmann::json{{"records", {record, failed}}}.dump());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  api::HttpRequest request = Request(std::string_view(reinterpret_cast<const char*>(data), size));
  if (request.method.empty()) return 0;
  db::MemoryDatabase database;
  api::Routes routes(kToken, /*read_only=*/false, /*body_limit=*/1 << 20);
  Seed(routes, database);
  api::HttpResponse res = routes.Handle(request, database);
  const std::string what = request.method + " " + request.path;
  static const std::set<int> kStatuses = {200, 201, 400, 401, 403, 404, 405, 409, 413};
  if (!kStatuses.count(res.status)) fuzz::Finding(what + ": status " + std::to_string(res.status) + ": " + res.body);
  if (res.content_type == "application/json") {
    nlohmann::json body = nlohmann::json::parse(res.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) fuzz::Finding(what + ": the answer is not JSON: " + res.body);
    if (res.status >= 400 && (!body.is_object() || !body.contains("error"))) {
      fuzz::Finding(what + ": an error answer without \"error\": " + res.body);
    }
  }
  return 0;
}
