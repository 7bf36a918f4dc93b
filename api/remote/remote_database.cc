#include "api/remote/remote_database.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "api/server/routes.h"
#include "db/sqlite_database.h"
#include "db/tvm_interop.h"
#include "ir/json.h"
#include "ir/json_text.h"
#include "ir/structural.h"

namespace tunedb::api {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using nlohmann::json;

bool IsRemoteDatabase(const std::string& location) { return location.rfind("http://", 0) == 0; }

std::unique_ptr<db::Database> OpenDatabase(const std::string& location, const std::string& token) {
  if (IsRemoteDatabase(location)) return std::make_unique<RemoteDatabase>(location, token);
  return std::make_unique<db::SqliteDatabase>(location);
}

namespace {

// How far apart a server's clock and this one may be and count as agreeing
// (see Sessions): far below db::kSessionLeaseSeconds, far above a request's
// round trip.
constexpr double kClocksAgreeSeconds = 60;

// The shortest text that reads back as the same double.
std::string ShortestText(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string Escape(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

db::TuningRecord RecordFrom(const json& j) {
  db::TuningRecord r;
  r.id = j.at("id").get<std::int64_t>();
  r.workload_hash = j.at("workload_hash").get<std::string>();
  r.target = j.at("target").get<std::string>();
  r.trace = j.at("trace").is_string() ? j.at("trace").get<std::string>() : j.at("trace").dump();
  r.run_secs = j.at("run_secs").get<std::vector<double>>();
  r.status = db::ParseStatus(j.at("status").get<std::string>());
  r.error = j.value("error", std::string());
  r.session_id = j.value("session_id", std::int64_t{0});
  r.created = j.value("created", 0.0);
  r.hardware = j.value("hardware", std::string());
  r.target_json = j.value("target_json", std::string());
  r.args_info = j.value("args_info", std::string());
  return r;
}

json RecordToJson(const db::TuningRecord& r) {
  json j = {{"workload_hash", r.workload_hash}, {"target", r.target},         {"trace", ir::ParseJson(r.trace)},
            {"run_secs", r.run_secs},           {"status", db::StatusName(r.status)}, {"error", r.error},
            {"hardware", r.hardware}};
  if (r.session_id != 0) j["session_id"] = r.session_id;
  if (r.created > 0) j["created"] = r.created;
  if (!r.target_json.empty()) j["target_json"] = r.target_json;
  if (!r.args_info.empty()) j["args_info"] = r.args_info;
  return j;
}

// The host and port of an http:// URL. An IPv6 address is written in
// brackets ([::1]:8080), as URLs write it; `host` is without them, for the
// resolver, and `host_header` as written, for the Host header.
struct Authority {
  std::string host, port = "80", host_header, error;
};

Authority ParseAuthority(const std::string& url) {
  Authority a;
  std::string rest = url.substr(std::string("http://").size());
  rest = rest.substr(0, rest.find('/'));
  std::size_t port_colon = std::string::npos;
  if (!rest.empty() && rest[0] == '[') {
    std::size_t close = rest.find(']');
    if (close == std::string::npos) {
      a.error = "an IPv6 address in a URL ends with ']'";
      return a;
    }
    a.host = rest.substr(1, close - 1);
    a.host_header = rest.substr(0, close + 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') {
        a.error = "expected ':' and a port after ']'";
        return a;
      }
      port_colon = close + 1;
    }
  } else {
    port_colon = rest.rfind(':');
    a.host = a.host_header = rest.substr(0, port_colon);
  }
  if (port_colon != std::string::npos) a.port = rest.substr(port_colon + 1);
  if (a.host.empty()) a.error = "expected http://HOST:PORT";
  return a;
}

}  // namespace

struct RemoteDatabase::Impl {
  std::string url, host, host_header, port, token;
  // The server's limits on a write (its health route; a server that does
  // not say has the defaults).
  std::size_t max_body_bytes = 8 << 20;
  std::size_t max_records_per_post = kMaxRecordsPerPost;
  std::string write_refusal;  // from the server's health answer
  std::string not_found;      // the message of the last 404 CallOrNotFound returned as nullopt
  // Once the server has answered, a refused connection is a server that
  // restarts (an upgrade, a moved database): it is waited for this long
  // before the call fails, so that tuners into it do not all end. Before
  // its first answer, a wrong URL fails at once.
  bool reached = false;
  double reconnect_wait_s = kReconnectWaitSecs;
  net::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  [[noreturn]] void Fail(const std::string& what) const { throw db::DatabaseError(url + ": " + what); }

  void Connect() {
    tcp::resolver resolver(ioc);
    beast::error_code ec;
    auto endpoints = resolver.resolve(host, port, ec);
    if (ec) Fail("cannot resolve " + host + ": " + ec.message());
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(reached ? reconnect_wait_s : 0);
    auto pause = std::chrono::milliseconds(100);
    for (;;) {
      stream.emplace(ioc);
      stream->expires_after(std::chrono::seconds(30));
      stream->connect(endpoints, ec);
      if (!ec) break;
      stream.reset();
      if (std::chrono::steady_clock::now() + pause > give_up) {
        char waited[64] = "";
        if (reached) std::snprintf(waited, sizeof waited, " (waited %g s for the server to come back)", reconnect_wait_s);
        Fail("cannot connect: " + ec.message() + waited);
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(5000));
    }
    buffer.clear();
  }

  // One request. Returns the parsed JSON body of a 2xx answer; any other
  // answer fails with the server's reason.
  json Call(http::verb method, const std::string& target, const json* body = nullptr) {
    std::optional<std::string> text;
    if (body) text = body->dump();
    return *Exchange(method, target, text ? &*text : nullptr, /*not_found_is_error=*/true);
  }

  // As Call, with a body already serialized.
  json CallWithText(http::verb method, const std::string& target, const std::string& body) {
    return *Exchange(method, target, &body, /*not_found_is_error=*/true);
  }

  // As Call, but a 404 answer (no such workload or model, or a route an
  // older server lacks) is nullopt, its message left in not_found.
  std::optional<json> CallOrNotFound(http::verb method, const std::string& target, const json* body = nullptr) {
    std::optional<std::string> text;
    if (body) text = body->dump();
    return Exchange(method, target, text ? &*text : nullptr, /*not_found_is_error=*/false);
  }

  // The request itself (body: JSON text or none), on a kept-alive
  // connection; one the server closed meanwhile is reopened once.
  std::optional<json> Exchange(http::verb method, const std::string& target, const std::string* body,
                               bool not_found_is_error) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!stream) Connect();
      http::request<http::string_body> req(method, target, 11);
      req.set(http::field::host, host_header);
      req.keep_alive(true);
      if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
      if (body) {
        req.set(http::field::content_type, "application/json");
        req.body() = *body;
      }
      req.prepare_payload();
      beast::error_code ec;
      stream->expires_after(std::chrono::seconds(120));
      http::write(*stream, req, ec);
      http::response<http::string_body> res;
      if (!ec) http::read(*stream, buffer, res, ec);
      if (ec) {
        stream.reset();
        if (attempt == 0 && (ec == http::error::end_of_stream || ec == net::error::connection_reset ||
                             ec == net::error::broken_pipe || ec == net::error::eof)) {
          continue;  // the server closed an idle connection: once more on a new one
        }
        Fail(std::string(http::to_string(method)) + " " + target + ": " + ec.message());
      }
      if (!res.keep_alive()) stream.reset();
      reached = true;
      json answer;
      try {
        answer = ir::ParseJson(res.body());
      } catch (const ir::JsonTextError&) {
        Fail(std::string(http::to_string(method)) + " " + target + ": HTTP " + std::to_string(res.result_int()) +
             " with a body that is not JSON");
      }
      int status = res.result_int();
      if (status == 404 && !not_found_is_error) {
        not_found = answer.is_object() ? answer.value("error", std::string()) : std::string();
        return std::nullopt;
      }
      if (status / 100 != 2) {
        std::string why = answer.is_object() ? answer.value("error", std::string("?")) : std::string("?");
        // The server's message says what the route needs; this says how a
        // tunedb command gives it.
        if (status == 401) why += " (give tunedb the server's token with --token-file FILE)";
        Fail(std::string(http::to_string(method)) + " " + target + ": HTTP " + std::to_string(status) + ": " + why);
      }
      return answer;
    }
    Fail("unreachable");
  }
};

RemoteDatabase::RemoteDatabase(const std::string& url, std::string token) : impl_(std::make_unique<Impl>()) {
  impl_->url = url;
  impl_->token = std::move(token);
  Authority authority = ParseAuthority(url);
  if (!authority.error.empty()) throw db::DatabaseError(url + ": " + authority.error);
  impl_->host = authority.host;
  impl_->host_header = authority.host_header;
  impl_->port = authority.port;
  json health = impl_->Call(http::verb::get, "/v1/health");  // fail now, not in the middle of a session
  impl_->max_body_bytes = health.value("max_body_bytes", impl_->max_body_bytes);
  impl_->max_records_per_post = health.value("max_records_per_post", impl_->max_records_per_post);
  const std::string writes = health.value("writes", std::string()), given = health.value("token", std::string());
  if (writes == "read-only") {
    impl_->write_refusal = url + ": the server serves its database read-only (tunedb serve --read-only)";
  } else if (writes == "token" && given == "none") {
    impl_->write_refusal = url + ": the server's write routes need its token: give it with --token-file FILE";
  } else if (writes == "token" && given == "wrong") {
    impl_->write_refusal = url + ": the server refuses this token: give the server's token with --token-file FILE";
  }
}

const std::string& RemoteDatabase::WriteRefusal() const { return impl_->write_refusal; }

void RemoteDatabase::SetReconnectWait(double secs) { impl_->reconnect_wait_s = secs; }

RemoteDatabase::~RemoteDatabase() = default;

std::int64_t RemoteDatabase::CommitWorkload(const db::WorkloadInput& w) {
  if (w.kind != "tunedb") throw db::DatabaseError(impl_->url + ": only tunedb workloads can be committed remotely");
  json body = {{"program", ir::ParseJson(w.program)}, {"name", w.name}};
  json answer = impl_->Call(http::verb::post, "/v1/workloads", &body);
  if (answer.at("hash").get<std::string>() != w.hash) {
    throw db::DatabaseError(impl_->url + ": the server hashes workload " + w.name + " as " +
                            answer.at("hash").get<std::string>() + ", this build as " + w.hash +
                            " (different tunedb versions?)");
  }
  return answer.at("id").get<std::int64_t>();
}

std::int64_t RemoteDatabase::CommitRecords(const std::vector<db::TuningRecord>& records) {
  // Requests of as many records as fit the server's limits. A request's
  // body is {"records":[r1,r2,...]}, put together from the records' own
  // text: its size is known before it is sent.
  static const std::string kHead = R"({"records":[)", kTail = "]}";
  std::int64_t added = 0;
  std::string body = kHead;
  std::size_t in_body = 0;
  auto send = [&] {
    if (in_body == 0) return;
    body += kTail;
    added += impl_->CallWithText(http::verb::post, "/v1/records", body).at("added").get<std::int64_t>();
    body = kHead;
    in_body = 0;
  };
  for (const db::TuningRecord& r : records) {
    std::string text = RecordToJson(r).dump();
    std::size_t bytes = text.size() + 1;  // and a comma
    if (kHead.size() + bytes + kTail.size() > impl_->max_body_bytes) {
      throw db::DatabaseError(impl_->url + ": a record of workload " + r.workload_hash + " takes " +
                              std::to_string(bytes) + " bytes, more than the server takes in one request (" +
                              std::to_string(impl_->max_body_bytes) + ")");
    }
    if (body.size() + bytes + kTail.size() > impl_->max_body_bytes || in_body >= impl_->max_records_per_post) send();
    if (in_body > 0) body += ',';
    body += text;
    ++in_body;
  }
  send();
  return added;
}

std::vector<db::TuningRecord> RemoteDatabase::TopK(const std::string& hash, const std::string& target, int k) {
  // A workload the server does not know has no records (as in a file).
  // The server gives at most kMaxBestRecords at once: the best of them.
  k = std::clamp(k, 1, kMaxBestRecords);
  std::optional<json> answer = impl_->CallOrNotFound(
      http::verb::get, "/v1/workloads/" + Escape(hash) + "/best?nearest=0&k=" + std::to_string(k) + "&target=" +
                           Escape(target));
  std::vector<db::TuningRecord> out;
  if (!answer) return out;
  for (const json& r : answer->at("records")) out.push_back(RecordFrom(r));
  return out;
}

std::vector<db::TuningRecord> RemoteDatabase::Records(const db::RecordQuery& q) {
  std::string target = "/v1/records?limit=" + std::to_string(std::min<std::int64_t>(q.limit, 1000)) +
                       "&after=" + std::to_string(q.after_id);
  if (q.workload_hash) target += "&workload=" + Escape(*q.workload_hash);
  if (q.target) target += "&target=" + Escape(*q.target);
  if (q.status) target += "&status=" + std::string(db::StatusName(*q.status));
  if (q.created_within) {
    // Exactly the times asked for: a copy's commit time matches to the bit.
    target += "&created_from=" + Escape(ShortestText(q.created_within->first)) +
              "&created_to=" + Escape(ShortestText(q.created_within->second));
  }
  // The answer must outlive the loop: a range-for over a member of a
  // temporary would dangle.
  json answer = impl_->Call(http::verb::get, target);
  std::vector<db::TuningRecord> out;
  for (const json& r : answer.at("records")) out.push_back(RecordFrom(r));
  return out;
}

std::optional<db::Workload> RemoteDatabase::FindWorkload(const std::string& hash) {
  std::optional<json> found = impl_->CallOrNotFound(http::verb::get, "/v1/workloads/" + Escape(hash));
  if (!found) return std::nullopt;
  const json& answer = *found;
  db::Workload w;
  w.id = answer.at("id").get<std::int64_t>();
  w.input.hash = hash;
  w.input.name = answer.at("name").get<std::string>();
  w.input.kind = answer.at("kind").get<std::string>();
  if (w.input.kind == "tunedb") {
    w.input.program = answer.at("program").dump();
    w.input.structure = ir::CanonicalEncoding(ir::ProgramFromJson(w.input.program));
  } else {
    w.input.program = answer.at("program").get<std::string>();
    // The one opaque kind there is: its structure is its module.
    if (w.input.kind == "tvm") w.input.structure = db::TvmWorkloadInput(hash, w.input.program).structure;
  }
  return w;
}

std::vector<db::WorkloadStats> RemoteDatabase::Workloads() {
  std::vector<db::WorkloadStats> out;
  std::string after = "0";
  for (;;) {
    json answer = impl_->Call(http::verb::get, "/v1/workloads?limit=1000&after=" + after);
    for (const json& j : answer.at("workloads")) {
      db::WorkloadStats s;
      s.workload.id = j.at("id").get<std::int64_t>();
      s.workload.input.hash = j.at("hash").get<std::string>();
      s.workload.input.name = j.at("name").get<std::string>();
      s.workload.input.kind = j.at("kind").get<std::string>();
      s.records = j.at("records").get<std::int64_t>();
      s.ok_records = j.at("ok_records").get<std::int64_t>();
      for (const json& b : j.at("best")) s.best.push_back({b.at("target").get<std::string>(), b.at("median_secs").get<double>()});
      out.push_back(std::move(s));
    }
    if (answer.at("next_after").is_null()) return out;
    after = std::to_string(answer.at("next_after").get<std::int64_t>());
  }
}

std::int64_t RemoteDatabase::Size() { return impl_->Call(http::verb::get, "/v1/stats").at("records").get<std::int64_t>(); }

std::vector<std::string> RemoteDatabase::Targets(const std::string& hash) {
  std::optional<json> found = impl_->CallOrNotFound(http::verb::get, "/v1/workloads/" + Escape(hash));
  if (!found) return {};
  return found->at("targets").get<std::vector<std::string>>();
}

std::int64_t RemoteDatabase::StartSession(const db::Session& s) {
  json body = {{"command", s.command}, {"host", s.host},     {"target", s.target}, {"strategy", s.strategy},
               {"seed", s.seed},       {"trials", s.trials}, {"started", s.started}, {"owner", s.owner}};
  return impl_->Call(http::verb::post, "/v1/sessions", &body).at("id").get<std::int64_t>();
}

void RemoteDatabase::EndSession(std::int64_t id, double ended) {
  json body = {{"ended", ended}};
  impl_->Call(http::verb::post, "/v1/sessions/" + std::to_string(id) + "/end", &body);
}

bool RemoteDatabase::ClaimSession(std::int64_t id, const std::string& expected, const std::string& owner) {
  json body = {{"expected", expected}, {"owner", owner}};
  // A server older than session owners has no claim route and answers 404:
  // nothing is claimed, so the tuner starts a session of its own instead of
  // failing (and does not resume one through that server).
  std::optional<json> answer =
      impl_->CallOrNotFound(http::verb::post, "/v1/sessions/" + std::to_string(id) + "/claim", &body);
  return answer && answer->at("claimed").get<bool>();
}

bool RemoteDatabase::AddTimings(std::int64_t record_id, const std::vector<double>& run_secs) {
  // A record keeps its newest kMaxTimings, which is also what the route
  // takes at once: newer timings than those would push every earlier one
  // out, so the newest kMaxTimings alone leave the record as all of them
  // would. Every timing is checked first, as a file's database does.
  json body = {{"run_secs", db::WithLaterTimings(record_id, {}, run_secs)}};
  const std::string route = "/v1/records/" + std::to_string(record_id) + "/timings";
  std::optional<json> answer = impl_->CallOrNotFound(http::verb::post, route, &body);
  // Every tunedb server answers a path it does not know with "no route":
  // this one is older than the route, and a tuner says its later timings
  // were not stored rather than losing them without a word.
  if (!answer && impl_->not_found.rfind("no route ", 0) == 0) {
    throw db::UnsupportedError(impl_->url + " is a tunedb server older than later timings (it has no route POST " +
                               route + "); records keep their first timings");
  }
  return answer.has_value();
}

std::vector<db::Session> RemoteDatabase::Sessions() {
  const double asked = db::NowSeconds();
  json answer = impl_->Call(http::verb::get, "/v1/sessions");
  // The server stamps a session's signs of life by its clock, and a tuner
  // judges a quiet session by its own (db::SessionMayBeRunning), so
  // last_active is read in this process's clock. Clocks within a minute of
  // each other are taken to agree, so that the time read is the one
  // stored; an answer without "now" (an older server) is taken as it is.
  double skew = 0;
  if (answer.contains("now") && answer["now"].is_number()) {
    skew = (asked + db::NowSeconds()) / 2 - answer["now"].get<double>();
    if (std::abs(skew) < kClocksAgreeSeconds) skew = 0;
  }
  auto in_our_clock = [skew](double t) { return t == 0 ? 0 : t + skew; };  // 0: not set
  std::vector<db::Session> out;
  for (const json& j : answer.at("sessions")) {
    db::Session s;
    s.id = j.at("id").get<std::int64_t>();
    s.command = j.at("command").get<std::string>();
    s.host = j.at("host").get<std::string>();
    s.target = j.at("target").get<std::string>();
    s.strategy = j.at("strategy").get<std::string>();
    s.seed = j.at("seed").get<std::uint64_t>();
    s.trials = j.at("trials").get<std::int64_t>();
    s.started = j.at("started").get<double>();
    s.ended = j.at("ended").get<double>();
    s.owner = j.value("owner", std::string());  // a server before owners has none
    s.last_active = in_our_clock(j.value("last_active", 0.0));  // nor one before signs of life (not known)
    out.push_back(std::move(s));
  }
  return out;
}

std::int64_t RemoteDatabase::SaveModel(const db::StoredModel& m) {
  json body = {{"blob", m.blob},
               {"feature_version", m.feature_version},
               {"objective", m.objective},
               {"training_rows", m.training_rows},
               {"metrics", m.metrics}};
  return impl_->Call(http::verb::post, "/v1/models", &body).at("id").get<std::int64_t>();
}

namespace {
db::StoredModel ModelFrom(const json& j) {
  db::StoredModel m;
  m.id = j.at("id").get<std::int64_t>();
  m.feature_version = j.at("feature_version").get<int>();
  m.objective = j.at("objective").get<std::string>();
  m.training_rows = j.at("training_rows").get<std::int64_t>();
  m.metrics = j.at("metrics").get<std::string>();
  m.created = j.at("created").get<double>();
  if (j.contains("blob")) m.blob = j.at("blob").get<std::string>();
  return m;
}
}  // namespace

std::vector<db::StoredModel> RemoteDatabase::Models() {
  json answer = impl_->Call(http::verb::get, "/v1/models");
  std::vector<db::StoredModel> out;
  for (const json& j : answer.at("models")) out.push_back(ModelFrom(j));
  return out;
}

std::optional<db::StoredModel> RemoteDatabase::LoadModel(std::int64_t id) {
  std::optional<json> found = impl_->CallOrNotFound(http::verb::get, "/v1/models/" + std::to_string(id));
  if (!found) return std::nullopt;
  return ModelFrom(*found);
}

}  // namespace tunedb::api
