#include "api/server/routes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "costmodel/dataset.h"
#include "costmodel/model.h"
#include "costmodel/tuning_model.h"
#include "ir/flops.h"
#include "ir/json.h"
#include "ir/json_text.h"
#include "ir/printer.h"
#include "ir/schedule/trace.h"
#include "ir/structural.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"

namespace tunedb::api {

using nlohmann::json;

namespace {

// What a workload's records are rated by; -1 where its program is opaque
// (a TVM workload tunedb cannot read).
struct Work {
  std::int64_t flops = -1;
  std::int64_t param_bytes = -1;
};

Work WorkOf(const ir::PrimFunc& func) { return {ir::CountFlops(func), ir::ParamBytes(func)}; }

}  // namespace

// The last model /v1/predict used, loaded once per model id; and the work of each
// workload (FLOPs, parameter bytes), so that the hot route (best) parses no
// program.
struct Routes::ModelCache {
  std::mutex mutex;
  std::int64_t model_id = 0;
  std::int64_t training_rows = 0;
  std::shared_ptr<costmodel::CostModel> model;
  std::map<std::string, Work> work;  // by workload hash
  // Rendered records of the best route, by record id, with the timings they
  // were rendered from: later timings (Database::AddTimings, from this
  // server or from a tuner writing the file) are a record's only change,
  // so an entry whose timings still match is current. The map is bounded.
  struct RenderedRecord {
    std::vector<double> run_secs;
    std::string json;
  };
  std::unordered_map<std::int64_t, RenderedRecord> best_records;
};

namespace {

// A client error: becomes a 4xx response with this message.
struct BadRequest {
  int status;
  std::string message;
};

[[noreturn]] void Fail(int status, const std::string& message) { throw BadRequest{status, message}; }

// A stored workload's program. It was checked when it was stored, so one
// that no longer reads was damaged in the file: the server's fault (500),
// never the request's.
ir::PrimFunc StoredProgram(const db::Workload& w) {
  try {
    return ir::ProgramFromJson(w.input.program);
  } catch (const ir::IrError& e) {
    Fail(500, "workload " + w.input.hash + ": its stored program is damaged (" + e.what() +
                  "); tunedb db check names the damage");
  }
}

HttpResponse Json(const json& body, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = JsonText(body);
  return r;
}

json ParseBody(const HttpRequest& req) {
  if (req.body.empty()) Fail(400, "the request needs a JSON body");
  json j;
  try {
    j = ir::ParseJson(req.body);
  } catch (const ir::JsonTextError& e) {
    Fail(400, std::string("malformed JSON body: ") + e.what());
  }
  if (!j.is_object()) Fail(400, "the body must be a JSON object");
  return j;
}

// A time in seconds since 1970 given as a query parameter; nullopt when
// it is not given.
std::optional<double> SecondsParam(const HttpRequest& req, const std::string& name) {
  auto it = req.query.find(name);
  if (it == req.query.end() || it->second.empty()) return std::nullopt;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size() || !std::isfinite(v) || v < 0) {
    Fail(400, "query parameter " + name + " must be seconds since 1970, got '" + it->second + "'");
  }
  return v;
}

std::int64_t IntParam(const HttpRequest& req, const std::string& name, std::int64_t fallback, std::int64_t lo,
                      std::int64_t hi) {
  auto it = req.query.find(name);
  if (it == req.query.end() || it->second.empty()) return fallback;
  std::size_t used = 0;
  std::int64_t v = 0;
  try {
    v = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size() || v < lo || v > hi) {
    Fail(400, "query parameter " + name + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                  "], got '" + it->second + "'");
  }
  return v;
}

// A workload given as a library spec, a program (JSON) or workload-language
// text. Files are never read: a request names no path on the server.
ir::Workload WorkloadFromBody(const json& body) {
  try {
    if (body.contains("spec")) {
      if (!body["spec"].is_string()) Fail(400, "spec must be a string");
      return ir::BuildWorkload(body["spec"].get<std::string>());
    }
    ir::Workload w;
    if (body.contains("program")) {
      const json& p = body["program"];
      w.func = ir::ProgramFromJson(p.is_string() ? p.get<std::string>() : p.dump());
    } else if (body.contains("text")) {
      if (!body["text"].is_string()) Fail(400, "text must be a string");
      w.func = ir::ParseWorkloadText(body["text"].get<std::string>(), "<request>");
    } else {
      Fail(400, "give the workload as spec (\"matmul:M=512\"), program (tunedb JSON) or text (workload language)");
    }
    w.spec = body.value("name", std::string("custom:") + ir::WorkloadHash(w.func));
    w.name = w.spec;
    return w;
  } catch (const ir::IrError& e) {
    Fail(400, std::string("bad workload: ") + e.what());
  }
}

db::WorkloadInput AsInput(const ir::Workload& w) {
  return {ir::WorkloadHash(w.func), w.spec, "tunedb", ir::CanonicalEncoding(w.func), ir::ProgramToJson(w.func)};
}

json RecordJson(const db::TuningRecord& r, Work work, bool with_script) {
  json j = {{"id", r.id},
            {"workload_hash", r.workload_hash},
            {"target", r.target},
            {"status", db::StatusName(r.status)},
            {"run_secs", r.run_secs},
            {"created", r.created},
            {"session_id", r.session_id}};
  double median = r.Median();
  j["median_secs"] = std::isfinite(median) ? json(median) : json(nullptr);
  // GFLOP/s where the program counts FLOPs, GB/s of its parameters always
  // (the rate of a transpose, which counts none); null where unknown.
  const bool timed = std::isfinite(median) && median > 0;
  auto per_second = [&](std::int64_t amount) {
    return timed && amount > 0 ? json(static_cast<double>(amount) / median / 1e9) : json(nullptr);
  };
  j["gflops"] = per_second(work.flops);
  j["gbytes_per_sec"] = per_second(work.param_bytes);
  if (!r.error.empty()) j["error"] = r.error;
  // What the record says of where it ran, and an imported TVM record's own
  // target and arguments (JSON text, verbatim), so that a client copying
  // records (db merge, export-tvm from a server) loses nothing.
  if (!r.hardware.empty()) j["hardware"] = r.hardware;
  if (!r.target_json.empty()) j["target_json"] = r.target_json;
  if (!r.args_info.empty()) j["args_info"] = r.args_info;
  try {
    json trace = ir::ParseJson(r.trace);
    j["trace"] = trace;
    if (with_script) j["script"] = ir::Trace::FromJson(trace).AsScript();
  } catch (const std::exception&) {
    j["trace"] = r.trace;  // kept verbatim (e.g. an imported TVM trace tunedb cannot read)
  }
  return j;
}

// "-mcpu=X" of a target string.
std::string CpuOf(const std::string& target) {
  std::size_t at = target.find("-mcpu=");
  if (at == std::string::npos) return "";
  std::size_t end = target.find(' ', at);
  return target.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
}

bool IsWriteRoute(const std::string& method, const std::string& route) {
  return method == "POST" && (route == "/v1/workloads" || route == "/v1/records" || route == "/v1/sessions" ||
                              route == "/v1/sessions/{id}/end" || route == "/v1/sessions/{id}/claim" ||
                              route == "/v1/records/{id}/timings" || route == "/v1/models");
}

std::int64_t IdInPath(const std::string& path, const std::string& prefix) {
  std::string digits = path.substr(prefix.size(), path.find('/', prefix.size()) - prefix.size());
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18) {
    Fail(404, "no such id: " + digits);
  }
  return std::stoll(digits);
}

json SessionJson(const db::Session& s) {
  return {{"id", s.id},           {"command", s.command}, {"host", s.host},     {"target", s.target},
          {"strategy", s.strategy}, {"seed", s.seed},     {"trials", s.trials}, {"started", s.started},
          {"ended", s.ended}, {"owner", s.owner}, {"last_active", s.last_active}};
}

json ModelJson(const db::StoredModel& m) {
  return {{"id", m.id},
          {"feature_version", m.feature_version},
          {"objective", m.objective},
          {"training_rows", m.training_rows},
          {"metrics", m.metrics},
          {"created", m.created}};
}

bool TokenMatches(const std::string& header, const std::string& token) {
  const std::string expected = "Bearer " + token;
  if (header.size() != expected.size()) return false;
  unsigned diff = 0;  // constant time in the header's content
  for (std::size_t i = 0; i < header.size(); ++i) diff |= static_cast<unsigned>(header[i] ^ expected[i]);
  return diff == 0;
}

}  // namespace

Routes::Routes(std::string token, bool read_only, std::size_t body_limit)
    : token_(std::move(token)), read_only_(read_only), body_limit_(body_limit), models_(std::make_unique<ModelCache>()) {}
Routes::~Routes() = default;

std::string Routes::RouteName(const std::string& path) {
  static const std::string kPrefix = "/v1/workloads/";
  if (path.rfind(kPrefix, 0) == 0 && path.size() > kPrefix.size()) {
    std::string rest = path.substr(kPrefix.size());
    std::size_t slash = rest.find('/');
    if (slash == std::string::npos) return "/v1/workloads/{hash}";
    if (rest.substr(slash) == "/best") return "/v1/workloads/{hash}/best";
    return "unknown";
  }
  static const std::string kSessions = "/v1/sessions/", kModels = "/v1/models/", kRecords = "/v1/records/";
  static const std::string kTimings = "/timings";
  if (path.rfind(kRecords, 0) == 0 && path.size() > kRecords.size() + kTimings.size() &&
      path.compare(path.size() - kTimings.size(), kTimings.size(), kTimings) == 0) {
    return "/v1/records/{id}/timings";
  }
  for (const char* action : {"end", "claim"}) {
    std::string suffix = std::string("/") + action;
    if (path.rfind(kSessions, 0) == 0 && path.size() > kSessions.size() + suffix.size() &&
        path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return "/v1/sessions/{id}" + suffix;
    }
  }
  if (path.rfind(kModels, 0) == 0 && path.size() > kModels.size() && path.find('/', kModels.size()) == std::string::npos) {
    return "/v1/models/{id}";
  }
  for (const char* known : {"/", "/metrics", "/v1/health", "/v1/stats", "/v1/workloads", "/v1/query", "/v1/records",
                            "/v1/predict", "/v1/sessions", "/v1/models"}) {
    if (path == known) return path;
  }
  return "unknown";
}

HttpResponse Routes::Handle(const HttpRequest& req, db::Database& database) {
  const std::string route = RouteName(req.path);
  static const std::map<std::string, std::string> kMethods = {
      {"/v1/health", "GET"},   {"/v1/workloads", "GET, POST"},       {"/v1/workloads/{hash}", "GET"},
      {"/v1/workloads/{hash}/best", "GET"}, {"/v1/query", "POST"},   {"/v1/records", "GET, POST"},
      {"/v1/predict", "POST"},  {"/v1/stats", "GET"},                {"/v1/sessions", "GET, POST"},
      {"/v1/sessions/{id}/end", "POST"}, {"/v1/sessions/{id}/claim", "POST"}, {"/v1/records/{id}/timings", "POST"},
      {"/v1/models", "GET, POST"},       {"/v1/models/{id}", "GET"}};
  auto allowed = kMethods.find(route);
  if (allowed == kMethods.end()) return JsonError(404, "no route " + req.path);
  if (allowed->second.find(req.method) == std::string::npos) {
    HttpResponse r = JsonError(405, req.method + " is not allowed on " + route + " (allowed: " + allowed->second + ")");
    r.headers.push_back({"Allow", allowed->second});
    return r;
  }
  // A misspelt filter (workload_hash= for workload=) would otherwise be
  // ignored, and the answer look like the filtered one: every record.
  static const std::map<std::string, std::vector<std::string>> kQueryParams = {
      {"GET /v1/workloads", {"limit", "after"}},
      {"GET /v1/workloads/{hash}/best", {"target", "k", "nearest"}},
      {"GET /v1/records", {"workload", "target", "status", "limit", "after", "created_from", "created_to"}}};
  static const std::vector<std::string> kNone;
  auto listed = kQueryParams.find(req.method + " " + route);
  const std::vector<std::string>& takes = listed == kQueryParams.end() ? kNone : listed->second;
  for (const auto& [name, value] : req.query) {
    if (std::find(takes.begin(), takes.end(), name) != takes.end()) continue;
    std::string names;
    for (const std::string& known : takes) names += (names.empty() ? "" : ", ") + known;
    return JsonError(400, "unknown query parameter " + name + " on " + req.method + " " + route +
                              " (it takes: " + (names.empty() ? "none" : names) + ")");
  }
  if (read_only_ && IsWriteRoute(req.method, route)) {
    return JsonError(403, "this server serves its database read-only (tunedb serve --read-only): " + req.method + " " +
                              route + " is refused");
  }
  if (!token_.empty() && IsWriteRoute(req.method, route) && !TokenMatches(req.authorization, token_)) {
    HttpResponse r = JsonError(401, req.authorization.empty() ? "this route needs Authorization: Bearer <token>"
                                                              : "wrong token");
    r.headers.push_back({"WWW-Authenticate", "Bearer"});
    return r;
  }
  try {
    auto work_of = [&](const std::string& hash) -> Work {
      {
        std::lock_guard<std::mutex> lock(models_->mutex);
        auto it = models_->work.find(hash);
        if (it != models_->work.end()) return it->second;
      }
      Work work;
      std::optional<db::Workload> w = database.FindWorkload(hash);
      if (w && w->input.kind == "tunedb") {
        try {
          work = WorkOf(ir::ProgramFromJson(w->input.program));
        } catch (const ir::IrError&) {
        }
      }
      std::lock_guard<std::mutex> lock(models_->mutex);
      models_->work[hash] = work;
      return work;
    };
    auto best = [&](const std::string& hash, const std::string& asked, int k, bool allow_nearest) {
      // A compiler's str(target) names the records a tuner stored under its
      // own spelling of the same target.
      const std::string target = db::CanonicalTarget(asked);
      json out = {{"workload_hash", hash}, {"target", target}, {"exact", true}};
      std::string served = target;
      std::vector<db::TuningRecord> records = database.TopK(hash, target, k);
      if (records.empty() && allow_nearest) {
        // The compiler's target has nothing: offer the nearest target's best
        // (same CPU first), flagged, rather than nothing.
        std::vector<std::string> targets = database.Targets(hash);
        std::string nearest;
        for (const std::string& t : targets) {
          if (!database.TopK(hash, t, 1).empty() && (nearest.empty() || (CpuOf(t) == CpuOf(target) && CpuOf(nearest) != CpuOf(target)))) {
            nearest = t;
          }
        }
        out["exact"] = false;
        if (!nearest.empty()) {
          out["nearest_target"] = nearest;
          out["note"] = "no valid record for target \"" + target + "\"; these are the nearest target's";
          served = nearest;
          records = database.TopK(hash, nearest, k);
        } else {
          out["note"] = "no valid record for this workload on any target";
        }
      }
      if (records.empty() && !database.FindWorkload(hash)) Fail(404, "no workload with hash " + hash);
      // The hot route: each record is rendered once (its trace parsed and
      // printed as a script) and then served from the cache.
      Work work = work_of(hash);
      std::string list = "[";
      int listed = 0;
      json skipped = json::array();
      std::size_t next = 0;
      while (listed < k) {
        if (next == records.size()) {
          // SQLite keeps no checksums: a damaged row reads back. A compiler
          // gets the best records it can use, the next ones standing in for
          // those skipped, and is told which were.
          if (skipped.empty()) break;  // every record there is was listed
          std::vector<db::TuningRecord> more = database.TopK(hash, served, static_cast<int>(records.size()) + k);
          if (more.size() == records.size()) break;
          records = std::move(more);
        }
        const db::TuningRecord& r = records[next++];
        std::string rendered;
        {
          std::lock_guard<std::mutex> lock(models_->mutex);
          auto it = models_->best_records.find(r.id);
          if (it != models_->best_records.end() && it->second.run_secs == r.run_secs) rendered = it->second.json;
        }
        if (rendered.empty()) {
          if (std::string problem = db::ServingProblem(r); !problem.empty()) {
            skipped.push_back({{"id", r.id}, {"error", problem}});
            continue;
          }
          rendered = JsonText(RecordJson(r, work, true));
          std::lock_guard<std::mutex> lock(models_->mutex);
          if (models_->best_records.size() >= 100000) models_->best_records.clear();
          models_->best_records.insert_or_assign(r.id, ModelCache::RenderedRecord{r.run_secs, rendered});
        }
        list += (list.size() > 1 ? "," : "") + rendered;
        ++listed;
      }
      list += "]";
      if (!skipped.empty()) out["skipped"] = skipped;
      std::string body = JsonText(out);
      body.pop_back();  // the closing brace
      return body + ",\"records\":" + list + "}";
    };

    if (route == "/v1/health") {
      // Whether this caller's writes would be taken, so that a client
      // with long work before its first write (training a model) can stop
      // before it starts.
      json health = {{"status", "ok"}, {"max_body_bytes", body_limit_}, {"max_records_per_post", kMaxRecordsPerPost},
                     {"writes", read_only_ ? "read-only" : token_.empty() ? "open" : "token"}};
      if (!read_only_ && !token_.empty()) {
        health["token"] = req.authorization.empty() ? "none" : TokenMatches(req.authorization, token_) ? "accepted" : "wrong";
      }
      return Json(health);
    }

    if (route == "/v1/workloads" && req.method == "GET") {
      std::int64_t limit = IntParam(req, "limit", 100, 1, 1000), after = IntParam(req, "after", 0, 0,
                                                                                   std::numeric_limits<std::int64_t>::max());
      json list = json::array();
      std::int64_t last = 0;
      for (const db::WorkloadStats& s : database.Workloads()) {
        if (s.workload.id <= after) continue;
        if (static_cast<std::int64_t>(list.size()) >= limit) break;
        json best = json::array();
        for (const auto& [target, secs] : s.best) best.push_back({{"target", target}, {"median_secs", secs}});
        list.push_back({{"id", s.workload.id},
                        {"hash", s.workload.input.hash},
                        {"name", s.workload.input.name},
                        {"kind", s.workload.input.kind},
                        {"records", s.records},
                        {"ok_records", s.ok_records},
                        {"best", best}});
        last = s.workload.id;
      }
      json out = {{"workloads", list}};
      out["next_after"] = static_cast<std::int64_t>(list.size()) == limit ? json(last) : json(nullptr);
      return Json(out);
    }

    if (route == "/v1/workloads/{hash}") {
      std::string hash = req.path.substr(std::string("/v1/workloads/").size());
      std::optional<db::Workload> w = database.FindWorkload(hash);
      if (!w) Fail(404, "no workload with hash " + hash);
      json out = {{"hash", hash}, {"id", w->id}, {"name", w->input.name}, {"kind", w->input.kind},
                  {"targets", database.Targets(hash)}};
      if (w->input.kind == "tunedb") {
        ir::PrimFunc f = StoredProgram(*w);
        out["program"] = ir::ParseJson(w->input.program);
        out["printed"] = ir::PrintProgram(f);
        out["flops"] = ir::CountFlops(f);
        out["param_bytes"] = ir::ParamBytes(f);
      } else {
        out["program"] = w->input.program;  // TVM's workload blob, verbatim
      }
      return Json(out);
    }

    if (route == "/v1/workloads/{hash}/best") {
      std::string rest = req.path.substr(std::string("/v1/workloads/").size());
      std::string hash = rest.substr(0, rest.find('/'));
      auto target = req.query.find("target");
      if (target == req.query.end() || target->second.empty()) {
        Fail(400, "query parameter target is required, e.g. target=llvm -mcpu=znver4 -num-cores=2");
      }
      int k = static_cast<int>(IntParam(req, "k", 1, 1, kMaxBestRecords));
      HttpResponse r;
      r.body = best(hash, target->second, k, IntParam(req, "nearest", 1, 0, 1) == 1);
      return r;
    }

    if (route == "/v1/query") {
      json body = ParseBody(req);
      ir::Workload w = WorkloadFromBody(body);
      std::string hash = ir::WorkloadHash(w.func);
      if (!body.contains("target") || !body["target"].is_string()) Fail(400, "target (a string) is required");
      const std::string k_range = "[1, " + std::to_string(kMaxBestRecords) + "]";
      if (body.contains("k") && !body["k"].is_number_integer()) Fail(400, "k must be an integer in " + k_range);
      std::int64_t k = body.value("k", std::int64_t{1});
      if (k < 1 || k > kMaxBestRecords) Fail(400, "k must be in " + k_range);
      json out = {{"workload_hash", hash}, {"known", database.FindWorkload(hash).has_value()}};
      if (out["known"].get<bool>()) {
        out.update(json::parse(best(hash, body["target"].get<std::string>(), static_cast<int>(k), true)));
      } else {
        out["records"] = json::array();
        out["note"] = "the database has no such workload";
      }
      return Json(out);
    }

    if (route == "/v1/records" && req.method == "GET") {
      db::RecordQuery q;
      if (auto it = req.query.find("workload"); it != req.query.end() && !it->second.empty()) q.workload_hash = it->second;
      if (auto it = req.query.find("target"); it != req.query.end() && !it->second.empty()) q.target = db::CanonicalTarget(it->second);
      if (auto it = req.query.find("status"); it != req.query.end() && !it->second.empty()) {
        try {
          q.status = db::ParseStatus(it->second);
        } catch (const db::DatabaseError& e) {
          Fail(400, std::string("query parameter status: ") + e.what());
        }
      }
      q.limit = IntParam(req, "limit", 100, 1, 1000);
      q.after_id = IntParam(req, "after", 0, 0, std::numeric_limits<std::int64_t>::max());
      std::optional<double> from = SecondsParam(req, "created_from"), to = SecondsParam(req, "created_to");
      if (from.has_value() != to.has_value()) Fail(400, "query parameters created_from and created_to go together");
      if (from) q.created_within = std::make_pair(*from, *to);
      json list = json::array();
      std::vector<db::TuningRecord> records = database.Records(q);
      for (const db::TuningRecord& r : records) list.push_back(RecordJson(r, work_of(r.workload_hash), false));
      json out = {{"records", list}};
      out["next_after"] = static_cast<std::int64_t>(records.size()) == q.limit ? json(records.back().id) : json(nullptr);
      return Json(out);
    }

    if (route == "/v1/workloads" && req.method == "POST") {
      ir::Workload w = WorkloadFromBody(ParseBody(req));
      db::WorkloadInput in = AsInput(w);
      std::int64_t id = database.CommitWorkload(in);
      return Json({{"hash", in.hash}, {"id", id}, {"name", in.name}}, 201);
    }

    if (route == "/v1/records" && req.method == "POST") {
      json body = ParseBody(req);
      if (!body.contains("records") || !body["records"].is_array()) Fail(400, "records must be a list");
      if (body["records"].size() > static_cast<std::size_t>(kMaxRecordsPerPost)) {
        Fail(400, "at most " + std::to_string(kMaxRecordsPerPost) + " records per request");
      }
      std::vector<db::TuningRecord> records;
      for (std::size_t i = 0; i < body["records"].size(); ++i) {
        const json& j = body["records"][i];
        const std::string at = "records[" + std::to_string(i) + "]";
        if (!j.is_object()) Fail(400, at + " must be an object");
        db::TuningRecord r;
        if (!j.contains("workload_hash") || !j["workload_hash"].is_string()) Fail(400, at + ".workload_hash is required");
        r.workload_hash = j["workload_hash"].get<std::string>();
        if (!database.FindWorkload(r.workload_hash)) Fail(400, at + ": no workload with hash " + r.workload_hash);
        if (!j.contains("target") || !j["target"].is_string()) Fail(400, at + ".target is required");
        r.target = db::CanonicalTarget(j["target"].get<std::string>());
        if (!j.contains("trace")) Fail(400, at + ".trace is required");
        try {
          const json& t = j["trace"];
          r.trace = ir::Trace::FromJson(t.is_string() ? ir::ParseJson(t.get<std::string>()) : t).ToJson().dump();
        } catch (const std::exception& e) {
          Fail(400, at + ".trace: " + e.what());
        }
        try {
          r.status = db::ParseStatus(j.value("status", std::string("ok")));
        } catch (const db::DatabaseError& e) {
          Fail(400, at + ".status: " + e.what());
        }
        if (j.contains("run_secs")) {
          if (!j["run_secs"].is_array()) Fail(400, at + ".run_secs must be a list of seconds");
          for (const json& s : j["run_secs"]) {
            if (!s.is_number() || !(s.get<double>() > 0) || !std::isfinite(s.get<double>())) {
              Fail(400, at + ".run_secs must hold positive numbers");
            }
            r.run_secs.push_back(s.get<double>());
          }
        }
        if (r.status == db::RecordStatus::kOk && r.run_secs.empty()) Fail(400, at + ": an ok record needs run_secs");
        r.error = j.value("error", std::string());
        r.hardware = j.value("hardware", std::string());
        r.target_json = j.value("target_json", std::string());
        r.args_info = j.value("args_info", std::string());
        if (j.contains("created")) {
          // A record copied from another database keeps the time it was measured.
          if (!j["created"].is_number() || !(j["created"].get<double>() > 0) ||
              !std::isfinite(j["created"].get<double>())) {
            Fail(400, at + ".created must be a positive number of seconds since 1970");
          }
          r.created = j["created"].get<double>();
        }
        if (j.contains("session_id")) {
          if (!j["session_id"].is_number_integer()) Fail(400, at + ".session_id must be an integer");
          r.session_id = j["session_id"].get<std::int64_t>();
        }
        records.push_back(std::move(r));
      }
      // Records copied from another database (they give `created`) may be
      // measurements this one holds, timed again there since: those add
      // their later timings rather than a second record, as db merge does.
      db::MergeCounts counts = db::CommitCopies(database, std::move(records));
      return Json({{"added", counts.records}, {"records_with_later_timings", counts.records_with_later_timings}}, 201);
    }

    if (route == "/v1/stats") {
      return Json({{"records", database.Size()}, {"workloads", database.Workloads().size()}});
    }

    if (route == "/v1/sessions" && req.method == "GET") {
      json list = json::array();
      for (const db::Session& s : database.Sessions()) list.push_back(SessionJson(s));
      // The times above are this server's clock; "now" lets a client on
      // another host read them in its own (RemoteDatabase::Sessions).
      return Json({{"sessions", list}, {"now", db::NowSeconds()}});
    }

    if (route == "/v1/sessions" && req.method == "POST") {
      json body = ParseBody(req);
      db::Session s;
      try {
        s.command = body.value("command", std::string());
        s.host = body.value("host", std::string());
        s.target = db::CanonicalTarget(body.value("target", std::string()));
        s.strategy = body.value("strategy", std::string());
        s.seed = body.value("seed", std::uint64_t{0});
        s.trials = body.value("trials", std::int64_t{0});
        s.started = body.value("started", 0.0);
        s.owner = body.value("owner", std::string());
      } catch (const json::exception& e) {
        Fail(400, std::string("session: ") + e.what());
      }
      return Json({{"id", database.StartSession(s)}}, 201);
    }

    if (route == "/v1/sessions/{id}/end") {
      std::int64_t id = IdInPath(req.path, "/v1/sessions/");
      json body = ParseBody(req);
      if (!body.contains("ended") || !body["ended"].is_number()) Fail(400, "ended (unix seconds) is required");
      database.EndSession(id, body["ended"].get<double>());
      return Json({{"id", id}});
    }

    if (route == "/v1/sessions/{id}/claim") {
      std::int64_t id = IdInPath(req.path, "/v1/sessions/");
      json body = ParseBody(req);
      for (const char* field : {"expected", "owner"}) {
        if (!body.contains(field) || !body[field].is_string()) {
          Fail(400, std::string(field) + " (a session owner, \"\" for none) is required as a string");
        }
      }
      bool claimed = database.ClaimSession(id, body["expected"].get<std::string>(), body["owner"].get<std::string>());
      return Json({{"id", id}, {"claimed", claimed}});
    }

    if (route == "/v1/records/{id}/timings") {
      std::int64_t id = IdInPath(req.path, "/v1/records/");
      json body = ParseBody(req);
      const json* secs = body.contains("run_secs") ? &body["run_secs"] : nullptr;
      bool valid = secs && secs->is_array() && !secs->empty() && secs->size() <= db::Database::kMaxTimings;
      for (std::size_t i = 0; valid && i < secs->size(); ++i) {
        valid = (*secs)[i].is_number() && (*secs)[i].get<double>() > 0 && std::isfinite((*secs)[i].get<double>());
      }
      if (!valid) {
        Fail(400, "run_secs (1 to " + std::to_string(db::Database::kMaxTimings) +
                      " timings, positive seconds) is required");
      }
      if (!database.AddTimings(id, secs->get<std::vector<double>>())) Fail(404, "no valid record with id " + std::to_string(id));
      return Json({{"id", id}});
    }

    if (route == "/v1/models" && req.method == "GET") {
      json list = json::array();
      for (const db::StoredModel& m : database.Models()) list.push_back(ModelJson(m));
      return Json({{"models", list}});
    }

    if (route == "/v1/models/{id}") {
      const std::int64_t id = IdInPath(req.path, "/v1/models/");
      std::optional<db::StoredModel> m = database.LoadModel(id);
      if (!m && id == 0) Fail(404, "the database has no cost model yet (run tunedb train or tunedb tune)");
      if (!m) Fail(404, "no model with id " + std::to_string(id));
      json out = ModelJson(*m);
      out["blob"] = m->blob;
      return Json(out);
    }

    if (route == "/v1/models" && req.method == "POST") {
      json body = ParseBody(req);
      db::StoredModel m;
      if (!body.contains("blob") || !body["blob"].is_string()) Fail(400, "blob (the model's text) is required");
      try {
        m.blob = body["blob"].get<std::string>();
        m.feature_version = body.value("feature_version", 0);
        m.objective = body.value("objective", std::string());
        m.training_rows = body.value("training_rows", std::int64_t{0});
        m.metrics = body.value("metrics", std::string("{}"));
      } catch (const json::exception& e) {
        Fail(400, std::string("model: ") + e.what());
      }
      return Json({{"id", database.SaveModel(m)}}, 201);
    }

    if (route == "/v1/predict") {
      json body = ParseBody(req);
      if (!body.contains("workload") || !body["workload"].is_string()) Fail(400, "workload (a hash) is required");
      if (!body.contains("traces") || !body["traces"].is_array()) Fail(400, "traces must be a list of traces");
      std::string hash = body["workload"].get<std::string>();
      std::optional<db::Workload> w = database.FindWorkload(hash);
      if (!w) Fail(404, "no workload with hash " + hash);
      if (w->input.kind != "tunedb") Fail(400, "workload " + hash + " is an imported TVM workload; tunedb cannot featurize it");
      // Which model: the one a tuning session would start from (the most
      // training records, the newest of equals; the newest when none was
      // trained on enough) unless the request names one, so that a caller
      // can pin the model it compared against.
      std::int64_t wanted = 0;
      if (body.contains("model")) {
        if (!body["model"].is_number_integer() || body["model"].get<std::int64_t>() < 0) {
          Fail(400, "model must be a stored model's id (0 or absent: the one tuning sessions start from)");
        }
        wanted = body["model"].get<std::int64_t>();
      }
      if (wanted == 0) {
        std::vector<db::StoredModel> stored = database.Models();
        if (stored.empty()) Fail(409, "the database has no cost model yet (run tunedb train or tunedb tune)");
        wanted = costmodel::ModelASessionStartsFrom(stored, costmodel::kSessionMinSamples);
        if (wanted == 0) wanted = stored[0].id;
      }
      ir::PrimFunc func = StoredProgram(*w);
      std::vector<std::vector<costmodel::FeatureRow>> features;
      for (std::size_t i = 0; i < body["traces"].size(); ++i) {
        const json& t = body["traces"][i];
        try {
          features.push_back(costmodel::CandidateFeatures(
              func, ir::Trace::FromJson(t.is_string() ? ir::ParseJson(t.get<std::string>()) : t)));
        } catch (const std::exception& e) {
          Fail(400, "traces[" + std::to_string(i) + "]: " + e.what());
        }
      }
      std::lock_guard<std::mutex> lock(models_->mutex);
      // Nothing cached yet is told by the model, not by its id: a damaged
      // row can hold id 0, the cache's initial id.
      if (!models_->model || models_->model_id != wanted) {
        std::optional<db::StoredModel> blob = database.LoadModel(wanted);
        if (!blob) Fail(404, "no model with id " + std::to_string(wanted));
        models_->model = std::make_shared<costmodel::CostModel>(costmodel::CostModel::Load(blob->blob));
        models_->model_id = wanted;
        models_->training_rows = blob->training_rows;
      }
      // XGBoost predictions on one booster are serialized.
      std::vector<double> scores = features.empty() ? std::vector<double>{} : models_->model->Predict(features);
      return Json({{"workload_hash", hash},
                   {"model_id", models_->model_id},
                   {"training_rows", models_->training_rows},
                   {"scores", scores}});
    }
  } catch (const BadRequest& e) {
    return JsonError(e.status, e.message);
  } catch (const costmodel::CostModelError& e) {
    return JsonError(409, std::string("cost model: ") + e.what());
  } catch (const ir::IrError& e) {
    return JsonError(400, e.what());
  } catch (const db::DatabaseError& e) {
    return JsonError(500, std::string("database: ") + e.what());
  } catch (const json::exception& e) {
    // A body field of the wrong JSON type that a route read without
    // checking it first.
    return JsonError(400, std::string("bad request body: ") + e.what());
  } catch (const std::exception& e) {
    // Never let one request end the server.
    return JsonError(500, std::string("internal error: ") + e.what());
  }
  return JsonError(404, "no route " + req.path);
}

}  // namespace tunedb::api
