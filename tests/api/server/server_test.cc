// The REST server over real HTTP: a real Server on an ephemeral loopback
// port, a real SQLite file, a small Beast client.
#include "api/server/server.h"

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "api/remote/remote_database.h"
#include "api/server/http.h"
#include "api/server/routes.h"
#include "costmodel/dataset.h"
#include "costmodel/model.h"
#include "db/sqlite_database.h"
#include "db/tvm_interop.h"
#include "ir/json.h"
#include "ir/schedule/trace.h"
#include "ir/structural.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"
#include "measure/target.h"
#include "search/space.h"
#include "search/tuner.h"
#include "tests/db/damage.h"

namespace tunedb::api {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using nlohmann::json;

const char* kTarget = "llvm -mcpu=znver4 -num-cores=2";

struct Reply {
  int status = 0;
  std::string body;
  http::response<http::string_body> raw;
  json Json() const { return json::parse(body); }
};

Reply Call(int port, http::verb method, const std::string& target, const std::string& body = "",
           const std::string& token = "") {
  net::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  http::request<http::string_body> req(method, target, 11);
  req.set(http::field::host, "127.0.0.1");
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  http::write(socket, req);
  beast::flat_buffer buffer;
  Reply r;
  http::read(socket, buffer, r.raw);
  r.status = r.raw.result_int();
  r.body = r.raw.body();
  return r;
}

// Raw bytes in, then the sending side shut unless the client is to stall;
// whatever comes back out (until the server closes).
enum class AfterSending { kShut, kStall };
std::string RawExchange(int port, const std::string& bytes, AfterSending then = AfterSending::kShut) {
  net::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  net::write(socket, net::buffer(bytes));
  beast::error_code ec;
  // A server that has answered and closed already (over its connection cap)
  // leaves nothing to shut.
  if (then == AfterSending::kShut) socket.shutdown(tcp::socket::shutdown_send, ec);
  std::string out;
  char buf[4096];
  for (;;) {
    std::size_t n = socket.read_some(net::buffer(buf), ec);
    if (ec) break;
    out.append(buf, n);
  }
  return out;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/server_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".sqlite";
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
    db::SqliteDatabase database(path_);
    workload_ = ir::BuildWorkload("matmul:M=32,N=32,K=32");
    hash_ = ir::WorkloadHash(workload_.func);
    database.CommitWorkload({hash_, workload_.spec, "tunedb", ir::CanonicalEncoding(workload_.func),
                             ir::ProgramToJson(workload_.func)});
    // Real design-space traces with made-up timings: the server serves what
    // the database holds, it measures nothing.
    std::vector<ir::Trace> spaces = search::DefaultDesignSpace(workload_.func, search::SpaceOptions{});
    std::vector<db::TuningRecord> records;
    for (int i = 0; i < 12; ++i) {
      auto c = search::Realize(workload_.func, search::WithoutDecisions(spaces[static_cast<std::size_t>(i) % spaces.size()]),
                               static_cast<std::uint64_t>(i));
      ASSERT_TRUE(c);
      db::TuningRecord r;
      r.workload_hash = hash_;
      r.target = kTarget;
      r.trace = c->trace.ToJson().dump();
      r.run_secs = {1e-6 * (i + 1), 1.1e-6 * (i + 1)};
      records.push_back(r);
      traces_.push_back(r.trace);
    }
    database.CommitRecords(records);
  }

  void StartServer(std::string token = "", std::size_t body_limit = 8 << 20, double read_timeout_s = 30,
                   int max_connections = 1024, bool read_only = false) {
    ServerOptions o;
    o.db_path = path_;
    o.port = 0;
    o.token = std::move(token);
    o.body_limit = body_limit;
    o.read_timeout_s = read_timeout_s;
    o.max_connections = max_connections;
    o.read_only = read_only;
    o.access_log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mutex_);
      log_.push_back(line);
    };
    server_ = std::make_unique<Server>(o);
    server_->Start();
    port_ = server_->port();
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  std::string path_, hash_;
  ir::Workload workload_;
  std::vector<std::string> traces_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::mutex log_mutex_;
  std::vector<std::string> log_;
};

TEST_F(ServerTest, HealthAndAccessLog) {
  StartServer();
  Reply r = Call(port_, http::verb::get, "/v1/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Json()["status"], "ok");
  EXPECT_EQ(r.Json()["max_body_bytes"], 8 << 20);
  EXPECT_EQ(r.Json()["max_records_per_post"], kMaxRecordsPerPost);
  EXPECT_EQ(r.Json()["writes"], "open");
  EXPECT_FALSE(r.Json().contains("token"));
  server_->Stop();
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_NE(log_[0].find("GET /v1/health 200"), std::string::npos) << log_[0];
}

// Health tells a client whether its writes would be taken, before it does
// work that ends in one (training a model to store).
TEST_F(ServerTest, HealthSaysWhetherThisCallersWritesWouldBeTaken) {
  StartServer("s3cret");
  auto health = [&](const std::string& token) { return Call(port_, http::verb::get, "/v1/health", "", token).Json(); };
  EXPECT_EQ(health("")["writes"], "token");
  EXPECT_EQ(health("")["token"], "none");
  EXPECT_EQ(health("guess")["token"], "wrong");
  EXPECT_EQ(health("s3cret")["token"], "accepted");
  server_->Stop();
  StartServer("s3cret", 8 << 20, 30, 1024, /*read_only=*/true);
  EXPECT_EQ(health("s3cret")["writes"], "read-only");
  EXPECT_FALSE(health("s3cret").contains("token"));
}

TEST_F(ServerTest, WorkloadsAndOneWorkload) {
  StartServer();
  json list = Call(port_, http::verb::get, "/v1/workloads").Json();
  ASSERT_EQ(list["workloads"].size(), 1u);
  EXPECT_EQ(list["workloads"][0]["hash"], hash_);
  EXPECT_EQ(list["workloads"][0]["records"], 12);
  EXPECT_EQ(list["workloads"][0]["best"][0]["target"], kTarget);
  EXPECT_TRUE(list["next_after"].is_null());
  json one = Call(port_, http::verb::get, "/v1/workloads/" + hash_).Json();
  EXPECT_EQ(one["name"], "matmul:M=32,N=32,K=32");
  EXPECT_EQ(one["flops"], 2 * 32 * 32 * 32);
  EXPECT_NE(one["printed"].get<std::string>().find("T.block(\"C\")"), std::string::npos);
  EXPECT_EQ(one["program"]["format"], "tunedb.program/1");
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/workloads/123").status, 404);
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/workloads?limit=0").status, 400);
}

TEST_F(ServerTest, BestForTheExactTargetAndTheNearestOne) {
  StartServer();
  std::string base = "/v1/workloads/" + hash_ + "/best?target=llvm%20-mcpu%3Dznver4%20-num-cores%3D2";
  json best = Call(port_, http::verb::get, base + "&k=3").Json();
  EXPECT_TRUE(best["exact"].get<bool>());
  ASSERT_EQ(best["records"].size(), 3u);
  EXPECT_NEAR(best["records"][0]["median_secs"].get<double>(), 1.05e-6, 1e-12);  // median of 1.0 and 1.1 us
  EXPECT_NEAR(best["records"][0]["gflops"].get<double>(), 65536 / 1.05e-6 / 1e9, 1e-6);
  EXPECT_NE(best["records"][0]["script"].get<std::string>().find("sch.split("), std::string::npos);
  EXPECT_TRUE(best["records"][0]["trace"].is_array());
  // Another core count: nothing exact, the znver4 records offered, flagged.
  json near = Call(port_, http::verb::get, "/v1/workloads/" + hash_ + "/best?target=llvm+-mcpu%3Dznver4+-num-cores%3D8").Json();
  EXPECT_FALSE(near["exact"].get<bool>());
  EXPECT_EQ(near["nearest_target"], kTarget);
  EXPECT_EQ(near["records"].size(), 1u);
  // nearest=0 asks for the exact target only; nearest takes 0 or 1.
  std::string other_cores = "/v1/workloads/" + hash_ + "/best?target=llvm+-mcpu%3Dznver4+-num-cores%3D8";
  Reply exact_only = Call(port_, http::verb::get, other_cores + "&nearest=0");
  EXPECT_EQ(exact_only.status, 200);
  EXPECT_TRUE(exact_only.Json()["records"].is_array() && exact_only.Json()["records"].empty()) << exact_only.body;
  Reply nearest_two = Call(port_, http::verb::get, other_cores + "&nearest=2");
  EXPECT_EQ(nearest_two.status, 400);
  EXPECT_EQ(nearest_two.Json()["error"], "query parameter nearest must be an integer in [0, 1], got '2'");
  Reply two_targets = Call(port_, http::verb::get, base + "&target=other");
  EXPECT_EQ(two_targets.status, 400);
  EXPECT_EQ(two_targets.Json()["error"], "query parameter target is given more than once");
  Reply no_target = Call(port_, http::verb::get, "/v1/workloads/" + hash_ + "/best");
  EXPECT_EQ(no_target.status, 400);
  EXPECT_NE(no_target.Json()["error"].get<std::string>().find("target"), std::string::npos);
}

// A compiler asks with its own spelling of a target (TVM's str(target)
// adds "-keys=cpu" and orders options its way), and a client may post
// records so: both meet the records the tuner stored as
// measure::Target::ToString prints them.
TEST_F(ServerTest, ATargetHasOneNameHoweverItIsSpelled) {
  StartServer();
  const std::string tvm = "llvm%20-keys%3Dcpu%20-num-cores%3D2%20-mcpu%3Dznver4";
  json best = Call(port_, http::verb::get, "/v1/workloads/" + hash_ + "/best?nearest=0&target=" + tvm).Json();
  EXPECT_TRUE(best["exact"].get<bool>());
  EXPECT_EQ(best["target"], kTarget);
  EXPECT_EQ(best["records"].size(), 1u);
  json query = {{"spec", workload_.spec}, {"target", "llvm  -num-cores=2 -mcpu=znver4"}};
  EXPECT_TRUE(Call(port_, http::verb::post, "/v1/query", query.dump()).Json()["exact"].get<bool>());

  json record = {{"workload_hash", hash_}, {"target", "llvm -keys=cpu -num-cores=2 -mcpu=znver4"},
                 {"trace", json::parse(traces_[0])}, {"run_secs", {0.5e-6}}};
  Reply added = Call(port_, http::verb::post, "/v1/records", json{{"records", {record}}}.dump());
  ASSERT_EQ(added.status, 201) << added.body;
  json listed = Call(port_, http::verb::get, "/v1/records?limit=100&target=" + tvm).Json();
  ASSERT_EQ(listed["records"].size(), 13u);
  EXPECT_EQ(listed["records"][12]["target"], kTarget);
  db::SqliteDatabase check(path_);
  EXPECT_EQ(check.Targets(hash_), std::vector<std::string>{kTarget});
  // What the tuner stores is the name already.
  for (const char* t : {"llvm -num-cores=2 -mcpu=znver4", "llvm -mcpu=znver4 -mattr=+avx2,-avx512f -num-cores=1"}) {
    std::string printed = measure::Target::Parse(t).ToString();
    EXPECT_EQ(db::CanonicalTarget(printed), printed);
  }
}

TEST_F(ServerTest, QueryByWorkloadSpecOrText) {
  StartServer();
  json q = Call(port_, http::verb::post, "/v1/query",
                json{{"spec", "matmul:M=32,N=32,K=32"}, {"target", kTarget}, {"k", 2}}.dump())
               .Json();
  EXPECT_EQ(q["workload_hash"], hash_);
  EXPECT_TRUE(q["known"].get<bool>());
  EXPECT_EQ(q["records"].size(), 2u);
  json text = Call(port_, http::verb::post, "/v1/query",
                   json{{"text", "input A: f32[4, 4]\ninput B: f32[4, 4]\nC[i, j] = sum(k in 4) A[i, k] * B[k, j]\n"},
                        {"target", kTarget}}
                       .dump())
                  .Json();
  EXPECT_FALSE(text["known"].get<bool>());
  Reply bad = Call(port_, http::verb::post, "/v1/query", json{{"text", "C[i] = nonsense("}, {"target", kTarget}}.dump());
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.Json()["error"].get<std::string>().find("bad workload"), std::string::npos) << bad.body;
  // Fields of the wrong JSON type are the client's error, not the end of
  // the server (a string k once escaped every handler and aborted it).
  for (const json& k : {json("3"), json(1e20), json(2.5)}) {
    Reply r = Call(port_, http::verb::post, "/v1/query", json{{"spec", "matmul:M=32,N=32,K=32"}, {"target", kTarget}, {"k", k}}.dump());
    EXPECT_EQ(r.status, 400) << k;
    EXPECT_EQ(r.Json()["error"], "k must be an integer in [1, 1000]") << k;
  }
  Reply name = Call(port_, http::verb::post, "/v1/query", json{{"text", "input A: f32[4]\nB[i] = A[i]\n"}, {"name", 5}, {"target", kTarget}}.dump());
  EXPECT_EQ(name.status, 400) << name.body;
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/health").status, 200);
}

// SQLite keeps no checksums, so a damaged row reads back. A compiler asking
// for the best gets the best record it can use, and the ids of those skipped.
TEST_F(ServerTest, BestSkipsADamagedRecordAndSaysSo) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
  // Record 1 is the fastest (1.05 us).
  ASSERT_EQ(sqlite3_exec(raw, "UPDATE records SET trace = substr(trace, 1, 20) WHERE id = 1", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  StartServer();
  json best = Call(port_, http::verb::get, "/v1/workloads/" + hash_ + "/best?target=llvm%20-mcpu%3Dznver4%20-num-cores%3D2&k=2").Json();
  ASSERT_EQ(best["records"].size(), 2u) << best;
  EXPECT_EQ(best["records"][0]["id"], 2);
  EXPECT_EQ(best["records"][1]["id"], 3);
  EXPECT_EQ(best["skipped"], json::parse(R"([{"id": 1, "error": "its trace is not valid JSON"}])"));
}

TEST_F(ServerTest, RecordsWithFiltersAndPaging) {
  StartServer();
  json page = Call(port_, http::verb::get, "/v1/records?workload=" + hash_ + "&limit=5").Json();
  ASSERT_EQ(page["records"].size(), 5u);
  std::int64_t after = page["next_after"].get<std::int64_t>();
  json rest = Call(port_, http::verb::get, "/v1/records?workload=" + hash_ + "&limit=100&after=" + std::to_string(after)).Json();
  EXPECT_EQ(rest["records"].size(), 7u);
  EXPECT_TRUE(rest["next_after"].is_null());
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/records?status=ok&target=nope").Json()["records"].size(), 0u);
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/records?status=great").status, 400);
}

// Records committed within a span of time, through the server as from the
// file: the span's ends reach the server to the bit (a copy's commit time
// is matched exactly), and a span given by halves, or not as seconds, is
// refused and named.
TEST_F(ServerTest, RecordsCommittedWithinASpanOfTime) {
  StartServer();
  db::SqliteDatabase local(path_);
  RemoteDatabase remote("http://127.0.0.1:" + std::to_string(port_), "");
  db::RecordQuery q;
  q.workload_hash = hash_;
  const double created = local.Records(q).at(0).created;
  ASSERT_GT(created, 0);
  for (auto span :
       {std::make_pair(created, created), std::make_pair(0.0, 1.0), std::make_pair(created - 1, created + 1)}) {
    q.created_within = span;
    std::vector<db::TuningRecord> here = local.Records(q), there = remote.Records(q);
    ASSERT_EQ(there.size(), here.size()) << std::fixed << span.first << " " << span.second;
    for (std::size_t i = 0; i < here.size(); ++i) EXPECT_EQ(there[i].id, here[i].id);
  }
  EXPECT_FALSE(local.Records(q).empty());
  for (const char* bad :
       {"created_from=1", "created_to=1", "created_from=x&created_to=2", "created_from=1&created_to=-2"}) {
    Reply r = Call(port_, http::verb::get, "/v1/records?" + std::string(bad));
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find("created_"), std::string::npos) << r.body;
  }
}

// Records read from one server and posted to another, as a client copies
// them by hand: posting the same ones again adds nothing, and a record
// timed again at the source since gives its copy here the later timings
// rather than becoming a second record.
TEST_F(ServerTest, RecordsCopiedByHandJoinTheirCopies) {
  StartServer("tok");
  json records = Call(port_, http::verb::get, "/v1/records?workload=" + hash_ + "&limit=100").Json()["records"];
  ASSERT_EQ(records.size(), 12u);
  json again = Call(port_, http::verb::post, "/v1/records", json{{"records", records}}.dump(), "tok").Json();
  EXPECT_EQ(again["added"], 0) << again;
  EXPECT_EQ(again["records_with_later_timings"], 0) << again;

  records[0]["run_secs"].push_back(0.5e-6);  // the source's final check timed it again
  json later = Call(port_, http::verb::post, "/v1/records", json{{"records", records}}.dump(), "tok").Json();
  EXPECT_EQ(later["added"], 0) << later;
  EXPECT_EQ(later["records_with_later_timings"], 1) << later;
  db::SqliteDatabase check(path_);
  EXPECT_EQ(check.Size(), 12);
  db::RecordQuery q;
  q.workload_hash = hash_;
  q.limit = 1;
  EXPECT_EQ(check.Records(q).at(0).run_secs, (std::vector<double>{1e-6, 1.1e-6, 0.5e-6}));

  // Without its commit time a record is a new measurement, as a tuner's are.
  records[0].erase("created");
  EXPECT_EQ(Call(port_, http::verb::post, "/v1/records", json{{"records", {records[0]}}}.dump(), "tok").Json()["added"],
            1);
}

TEST_F(ServerTest, WritesNeedTheTokenAndValidInput) {
  StartServer("s3cret");
  std::string workload = json{{"spec", "matmul:M=16,N=16,K=16"}}.dump();
  Reply none = Call(port_, http::verb::post, "/v1/workloads", workload);
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(Call(port_, http::verb::post, "/v1/workloads", workload, "wrong").status, 401);
  Reply ok = Call(port_, http::verb::post, "/v1/workloads", workload, "s3cret");
  ASSERT_EQ(ok.status, 201) << ok.body;
  std::string hash = ok.Json()["hash"];
  // Reads stay open.
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/workloads/" + hash).status, 200);

  json record = {{"workload_hash", hash_}, {"target", kTarget}, {"trace", json::parse(traces_[0])},
                 {"run_secs", {0.5e-6}}, {"status", "ok"}};
  Reply added = Call(port_, http::verb::post, "/v1/records", json{{"records", {record}}}.dump(), "s3cret");
  ASSERT_EQ(added.status, 201) << added.body;
  EXPECT_EQ(added.Json()["added"], 1);
  json best = Call(port_, http::verb::get, "/v1/workloads/" + hash_ + "/best?target=" + std::string("llvm%20-mcpu%3Dznver4%20-num-cores%3D2")).Json();
  EXPECT_NEAR(best["records"][0]["median_secs"].get<double>(), 0.5e-6, 1e-12);

  json bad_trace = record;
  bad_trace["trace"] = json::array({1, 2});
  Reply r = Call(port_, http::verb::post, "/v1/records", json{{"records", {record, bad_trace}}}.dump(), "s3cret");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.Json()["error"].get<std::string>().find("records[1].trace"), std::string::npos) << r.body;
  Reply malformed = Call(port_, http::verb::post, "/v1/records", "{\"records\": [", "s3cret");
  EXPECT_EQ(malformed.status, 400);
  EXPECT_NE(malformed.Json()["error"].get<std::string>().find("malformed JSON"), std::string::npos);
  // Nothing of the refused batches was stored.
  db::SqliteDatabase check(path_);
  EXPECT_EQ(check.Size(), 13);
  EXPECT_EQ(check.IntegrityCheck(), "ok");
}

// Trains a cost model on the database's records and stores it, as
// `tunedb train` does.
void StoreTrainedModel(const std::string& path, int rounds, std::int64_t training_rows) {
  db::SqliteDatabase database(path);
  costmodel::Dataset data = costmodel::LoadDataset(database);
  costmodel::CostModel model;
  costmodel::TrainOptions options;
  options.max_rounds = rounds;
  model.Train(data.samples, options);
  database.SaveModel({0, costmodel::kFeatureVersion, "rank", model.Save(), training_rows, "{}", 0});
}

TEST_F(ServerTest, PredictUsesTheModelSessionsStartFromOrTheOneNamed) {
  StartServer();
  json request = {{"workload", hash_}, {"traces", {json::parse(traces_[0]), json::parse(traces_[1])}}};
  Reply none = Call(port_, http::verb::post, "/v1/predict", request.dump());
  EXPECT_EQ(none.status, 409);
  Reply no_newest = Call(port_, http::verb::get, "/v1/models/0");
  EXPECT_EQ(no_newest.status, 404);
  EXPECT_EQ(no_newest.Json()["error"], "the database has no cost model yet (run tunedb train or tunedb tune)");
  // A real model trained on the records.
  StoreTrainedModel(path_, /*rounds=*/5, /*training_rows=*/12);
  Reply r = Call(port_, http::verb::post, "/v1/predict", request.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["scores"].size(), 2u);
  EXPECT_EQ(r.Json()["training_rows"], 12);
  const std::int64_t first_id = r.Json()["model_id"].get<std::int64_t>();
  // A newer model, said to be trained on one record: with none trained on
  // the 16 records a session starts from, the newest is used by default,
  // and a request can pin the first one and get its scores again.
  StoreTrainedModel(path_, /*rounds=*/2, /*training_rows=*/1);
  json newest = Call(port_, http::verb::post, "/v1/predict", request.dump()).Json();
  EXPECT_GT(newest["model_id"].get<std::int64_t>(), first_id);
  EXPECT_EQ(newest["training_rows"], 1);
  json pinned_request = request;
  pinned_request["model"] = first_id;
  Reply pinned = Call(port_, http::verb::post, "/v1/predict", pinned_request.dump());
  ASSERT_EQ(pinned.status, 200) << pinned.body;
  EXPECT_EQ(pinned.Json()["model_id"], first_id);
  EXPECT_EQ(pinned.Json()["scores"], r.Json()["scores"]);
  // Once one was trained on enough, the default is the one trained on the
  // most, as a tuning session's, not the newest.
  StoreTrainedModel(path_, /*rounds=*/5, /*training_rows=*/40);
  const std::int64_t broad_id = Call(port_, http::verb::post, "/v1/predict", request.dump()).Json()["model_id"];
  StoreTrainedModel(path_, /*rounds=*/2, /*training_rows=*/20);
  json broad = Call(port_, http::verb::post, "/v1/predict", request.dump()).Json();
  EXPECT_EQ(broad["model_id"], broad_id);
  EXPECT_EQ(broad["training_rows"], 40);
  pinned_request["model"] = 999;
  Reply unknown = Call(port_, http::verb::post, "/v1/predict", pinned_request.dump());
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.Json()["error"], "no model with id 999");
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/models/999").Json()["error"], "no model with id 999");
  pinned_request["model"] = "first";
  Reply not_an_id = Call(port_, http::verb::post, "/v1/predict", pinned_request.dump());
  EXPECT_EQ(not_an_id.status, 400);
  EXPECT_NE(not_an_id.Json()["error"].get<std::string>().find("model must be"), std::string::npos) << not_an_id.body;
  json bogus_trace = json::array({json::array({json::array({"Nope", json::array(), json::array(), json::array()})}),
                                   json::array()});
  json bad = {{"workload", hash_}, {"traces", json::array({bogus_trace})}};
  Reply refused = Call(port_, http::verb::post, "/v1/predict", bad.dump());
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.Json()["error"].get<std::string>().find("traces[0]"), std::string::npos) << refused.body;
}

// A model row whose id a damage set to 0, the id the route's cache starts
// from: the route once took it for cached and predicted with no model.
TEST_F(ServerTest, PredictLoadsAModelWhoseIdIsZero) {
  StoreTrainedModel(path_, /*rounds=*/3, /*training_rows=*/12);
  db::testing::Damage(path_, "UPDATE models SET id = 0");
  StartServer();
  json request = {{"workload", hash_}, {"traces", {json::parse(traces_[0])}}};
  Reply r = Call(port_, http::verb::post, "/v1/predict", request.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["model_id"], 0);
  EXPECT_EQ(r.Json()["scores"].size(), 1u);
}

// A stored program that no longer reads was damaged in the server's file:
// the routes that read it answer 500 and name the workload, never blaming
// the request with a 400.
TEST_F(ServerTest, ADamagedStoredProgramIsTheServersFault) {
  StoreTrainedModel(path_, /*rounds=*/3, /*training_rows=*/12);
  db::testing::Damage(path_, "UPDATE workloads SET program = substr(program, 1, 40)");
  StartServer();
  json request = {{"workload", hash_}, {"traces", {json::parse(traces_[0])}}};
  for (Reply r : {Call(port_, http::verb::post, "/v1/predict", request.dump()),
                  Call(port_, http::verb::get, "/v1/workloads/" + hash_)}) {
    EXPECT_EQ(r.status, 500) << r.body;
    const std::string error = r.Json()["error"].get<std::string>();
    EXPECT_NE(error.find("workload " + hash_ + ": its stored program is damaged"), std::string::npos) << error;
  }
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/health").status, 200);
}

TEST_F(ServerTest, MetricsAndDashboard) {
  {
    // A hash and a name no tunedb writer makes, as outside damage would
    // leave them: the page shows them as text, never as markup.
    db::SqliteDatabase database(path_);
    database.CommitWorkload(db::TvmWorkloadInput("<b>9</b>", "\"<i>module</i>\""));
  }
  StartServer();
  Call(port_, http::verb::get, "/v1/health");
  Call(port_, http::verb::get, "/v1/nope");
  Reply metrics = Call(port_, http::verb::get, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("tunedb_requests_total{route=\"/v1/health\",status=\"200\"} 1"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("tunedb_requests_total{route=\"unknown\",status=\"404\"} 1"), std::string::npos);
  EXPECT_NE(metrics.body.find("tunedb_request_seconds_bucket{le=\"+Inf\"} 2"), std::string::npos);
  EXPECT_NE(metrics.body.find("tunedb_records 12"), std::string::npos);
  Reply page = Call(port_, http::verb::get, "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(std::string(page.raw[http::field::content_type]).find("text/html"), std::string::npos);
  EXPECT_NE(page.body.find("matmul:M=32,N=32,K=32"), std::string::npos);
  EXPECT_NE(page.body.find("<svg"), std::string::npos);
  EXPECT_NE(page.body.find("sch.split("), std::string::npos);
  // A time of microseconds in microseconds, not as "0.0011 ms".
  EXPECT_NE(page.body.find(std::string(kTarget) + ": 1.05 us, "), std::string::npos) << page.body;
  EXPECT_EQ(page.body.find("<b>"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("<td>&lt;b&gt;9&lt;/b&gt;</td>"), std::string::npos) << page.body;
}

// A transpose counts no FLOPs: its records are rated in GB/s of its
// parameters (two 64 x 64 float buffers, 32768 bytes), in the API and on
// the dashboard, rather than "0 GFLOP/s" or nothing.
TEST_F(ServerTest, AProgramWithoutFlopsIsRatedInGigabytesPerSecond) {
  std::string transpose_hash;
  {
    db::SqliteDatabase database(path_);
    ir::PrimFunc transpose = ir::ParseWorkloadText("input X: f32[64, 64]\nY[i, j] = X[j, i]\n", "<test>");
    transpose_hash = ir::WorkloadHash(transpose);
    database.CommitWorkload({transpose_hash, "transpose64", "tunedb", ir::CanonicalEncoding(transpose),
                             ir::ProgramToJson(transpose)});
    db::TuningRecord r;
    r.workload_hash = transpose_hash;
    r.target = kTarget;
    r.trace = ir::Trace().ToJson().dump();  // the unscheduled program
    r.run_secs = {2e-6, 2e-6};
    database.CommitRecords({r});
  }
  StartServer();
  json best = Call(port_, http::verb::get, "/v1/workloads/" + transpose_hash + "/best?target=" +
                                               "llvm%20-mcpu%3Dznver4%20-num-cores%3D2").Json();
  ASSERT_EQ(best["records"].size(), 1u);
  EXPECT_TRUE(best["records"][0]["gflops"].is_null());
  EXPECT_NEAR(best["records"][0]["gbytes_per_sec"].get<double>(), 32768 / 2e-6 / 1e9, 1e-9);
  json one = Call(port_, http::verb::get, "/v1/workloads/" + transpose_hash).Json();
  EXPECT_EQ(one["flops"], 0);
  EXPECT_EQ(one["param_bytes"], 32768);
  // A matmul's records carry both rates.
  json records = Call(port_, http::verb::get, "/v1/records?workload=" + hash_ + "&limit=1").Json();
  ASSERT_EQ(records["records"].size(), 1u);
  EXPECT_GT(records["records"][0]["gflops"].get<double>(), 0);
  EXPECT_GT(records["records"][0]["gbytes_per_sec"].get<double>(), 0);
  Reply page = Call(port_, http::verb::get, "/");
  EXPECT_NE(page.body.find("16.4 GB/s"), std::string::npos) << page.body;
}

// `tunedb serve --read-only`: a database this process may not write (a
// shipped tuning log on a read-only mount) is served for reading; every
// write route answers 403 saying why, even with the token, and nothing is
// written.
TEST_F(ServerTest, AReadOnlyServerServesReadsAndRefusesWrites) {
  StartServer("secret", 8 << 20, 30, 1024, /*read_only=*/true);
  json best = Call(port_, http::verb::get, "/v1/workloads/" + hash_ + "/best?target=llvm%20-mcpu%3Dznver4%20-num-cores%3D2").Json();
  EXPECT_EQ(best["records"].size(), 1u);
  json q = Call(port_, http::verb::post, "/v1/query",
                json{{"spec", "matmul:M=32,N=32,K=32"}, {"target", kTarget}}.dump()).Json();
  EXPECT_TRUE(q["known"].get<bool>());
  for (const char* route : {"/v1/workloads", "/v1/records", "/v1/sessions", "/v1/models"}) {
    Reply r = Call(port_, http::verb::post, route, "{}", "secret");
    EXPECT_EQ(r.status, 403) << route;
    EXPECT_NE(r.Json()["error"].get<std::string>().find("read-only"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Call(port_, http::verb::post, "/v1/sessions/1/end", "{}", "secret").status, 403);
  EXPECT_EQ(Call(port_, http::verb::post, "/v1/sessions/1/claim", "{}", "secret").status, 403);
  server_->Stop();
  server_.reset();
  db::SqliteDatabase database(path_, db::SqliteDatabase::OpenMode::kReadOnly);
  EXPECT_EQ(database.Size(), 12);
  EXPECT_TRUE(database.Sessions().empty());
}

TEST_F(ServerTest, UnknownRoutesWrongMethodsAndBadRequests) {
  StartServer("", 1024);
  EXPECT_EQ(Call(port_, http::verb::get, "/v2/anything").status, 404);
  Reply wrong = Call(port_, http::verb::delete_, "/v1/workloads");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(std::string(wrong.raw[http::field::allow]), "GET, POST");
  EXPECT_EQ(Call(port_, http::verb::post, "/v1/query", std::string(2000, 'x')).status, 413);
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/records?workload=%zz").status, 400);
  std::string garbage = RawExchange(port_, "THIS IS NOT HTTP\r\n\r\n");
  EXPECT_NE(garbage.find("400"), std::string::npos) << garbage;
  // Headers past 16 KiB: 431, and the connection is closed.
  std::string long_headers = RawExchange(port_, "GET /v1/health HTTP/1.1\r\nX-Long: " + std::string(17 * 1024, 'x') +
                                                    "\r\n\r\nGET /v1/health HTTP/1.1\r\n\r\n");
  EXPECT_EQ(long_headers.rfind("HTTP/1.1 431 Request Header Fields Too Large\r\n", 0), 0u) << long_headers;
  EXPECT_NE(long_headers.find("{\"error\":\"the headers exceed 16 KiB\"}"), std::string::npos) << long_headers;
  EXPECT_EQ(long_headers.find("HTTP/1.1", 1), std::string::npos) << long_headers;
  // A truncated request (the client goes away mid-header) costs nothing.
  {
    net::io_context ioc;
    tcp::socket s(ioc);
    s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)));
    net::write(s, net::buffer(std::string("GET /v1/health HTTP/1.1\r\nHost: x\r\n")));
  }
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/health").status, 200);
}

// Empty lines before a request line are ignored (RFC 9112, 2.2): a client
// that ends a body with a CRLF its Content-Length leaves out gets its next
// request answered, where Beast's parser alone answered 400 "bad method"
// and closed the connection.
TEST_F(ServerTest, BlankLinesBeforeARequestAreIgnored) {
  StartServer();
  const std::string query = R"({"spec": "matmul:M=8,N=8,K=8", "target": "llvm -mcpu=znver4 -num-cores=2"})";
  std::string both = RawExchange(port_, "POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                            std::to_string(query.size()) + "\r\n\r\n" + query +
                                            "\r\n\r\nGET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(both.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << both;
  const std::size_t second = both.find("HTTP/1.1", 1);
  ASSERT_NE(second, std::string::npos) << both;
  EXPECT_EQ(both.compare(second, 17, "HTTP/1.1 200 OK\r\n"), 0) << both;
  EXPECT_NE(both.find("\"status\":\"ok\""), std::string::npos) << both;
  // Blank lines alone are no request: the connection just ends.
  EXPECT_EQ(RawExchange(port_, "\r\n\n\r\n"), "");
  // A request line that is bad past its first byte is still refused.
  std::string bad = RawExchange(port_, "\r\nG(T /v1/health HTTP/1.1\r\n\r\n");
  EXPECT_EQ(bad.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << bad;
  // A header cut short after a line and a blank line is answered, not
  // taken for blank lines before a request (the parser consumes a header
  // line by line; found by fuzz/http_wire).
  std::string cut = RawExchange(port_, "GET /v1/health HTTP/1.1\r\nHost: a\r\n\n");
  EXPECT_EQ(cut.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << cut;
  // The rest of a bad body is never read as a request of its own, though
  // it starts with a blank line.
  std::string chunked = RawExchange(port_, "POST /v1/query HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                           "\r\nGET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(chunked.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << chunked;
  EXPECT_EQ(chunked.find("HTTP/1.1", 1), std::string::npos) << chunked;
}

// RFC 9112 (3.2): an HTTP/1.1 request without a Host header, or with two,
// is answered 400 and the connection closes; HTTP/1.0 needs none.
TEST_F(ServerTest, AnHttp11RequestNeedsExactlyOneHost) {
  StartServer();
  for (const std::string hosts : {"", "Host: a\r\nHost: b\r\n"}) {
    std::string answer = RawExchange(port_, "GET /v1/health HTTP/1.1\r\n" + hosts + "\r\nGET /v1/health HTTP/1.1\r\n"
                                            "Host: a\r\n\r\n");
    EXPECT_EQ(answer.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << answer;
    std::string has = hosts.empty() ? "none" : "2";
    EXPECT_NE(answer.find("\"an HTTP/1.1 request needs exactly one Host header; this one has " + has + "\""),
              std::string::npos)
        << answer;
    EXPECT_EQ(answer.find("\nHTTP/1.1"), std::string::npos) << answer;  // no second answer
  }
  std::string old = RawExchange(port_, "GET /v1/health HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << old;
}

// One request nested deep enough crashed the whole server with a stack
// overflow: a workload text of 100,000 nested negations, and a body of
// 100,000 nested arrays (parsed fine, then printed recursively). Both are
// refused as the request's fault, and the server goes on.
TEST_F(ServerTest, ARequestNestedTooDeepIsRefusedAndTheServerGoesOn) {
  StartServer();
  json text = {{"text", "input A: f32[4]\nB[i] = " + std::string(100000, '-') + "A[i]\n"}, {"target", kTarget}};
  Reply deep_text = Call(port_, http::verb::post, "/v1/query", text.dump());
  EXPECT_EQ(deep_text.status, 400);
  EXPECT_EQ(deep_text.Json()["error"], "bad workload: <request>:2:208: the expression is nested deeper than 200 "
                                       "levels; compute a part of it as a stage of its own");
  std::string arrays = std::string(100000, '[') + std::string(100000, ']');
  Reply deep_body = Call(port_, http::verb::post, "/v1/query", "{\"program\": " + arrays + "}");
  EXPECT_EQ(deep_body.status, 400);
  EXPECT_EQ(deep_body.Json()["error"], "malformed JSON body: arrays and objects nest deeper than 1024 levels");
  // A trace given as a string is JSON of its own.
  json record = {{"workload_hash", hash_}, {"target", kTarget}, {"trace", arrays}, {"run_secs", {1e-3}}};
  Reply deep_trace = Call(port_, http::verb::post, "/v1/records", json{{"records", {record}}}.dump());
  EXPECT_EQ(deep_trace.status, 400);
  EXPECT_EQ(deep_trace.Json()["error"], "records[0].trace: arrays and objects nest deeper than 1024 levels");
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/health").status, 200);
}

// A misspelt filter once was ignored, and the answer (every record) looked
// like the filtered one.
TEST_F(ServerTest, AnUnknownQueryParameterIsNamed) {
  StartServer();
  Reply misspelt = Call(port_, http::verb::get, "/v1/records?workload_hash=" + hash_);
  EXPECT_EQ(misspelt.status, 400);
  EXPECT_EQ(misspelt.Json()["error"],
            "unknown query parameter workload_hash on GET /v1/records (it takes: workload, target, status, limit, after, "
            "created_from, created_to)");
  Reply none = Call(port_, http::verb::get, "/v1/health?verbose=1");
  EXPECT_EQ(none.status, 400);
  EXPECT_EQ(none.Json()["error"], "unknown query parameter verbose on GET /v1/health (it takes: none)");
  Reply best = Call(port_, http::verb::get, "/v1/workloads/" + hash_ + "/best?target=llvm%20-mcpu%3Dznver4&top=3");
  EXPECT_EQ(best.status, 400);
  EXPECT_NE(best.Json()["error"].get<std::string>().find("(it takes: target, k, nearest)"), std::string::npos);
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/records?workload=" + hash_ + "&limit=2&after=0").status, 200);
}

// Error messages quote the path and the query; bytes there that are not
// UTF-8 once made the error's JSON throw outside every handler, and one
// request took the server down.
TEST_F(ServerTest, BytesThatAreNotUtf8InThePathOrQueryGetAnAnswer) {
  StartServer("", 1024);
  std::string unknown = RawExchange(port_, "GET /v1/work\x97loads HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(unknown.find("404 Not Found"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("/v1/work\xEF\xBF\xBDloads"), std::string::npos) << unknown;  // U+FFFD
  std::string bad_limit = RawExchange(port_, "GET /v1/records?limit=%97 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(bad_limit.find("400 Bad Request"), std::string::npos) << bad_limit;
  std::string bad_name = RawExchange(port_, "GET /v1/records?%97=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(bad_name.find("unknown query parameter \xEF\xBF\xBD on GET /v1/records"), std::string::npos) << bad_name;
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/health").status, 200);
}

// A stored string that is not UTF-8 (a damaged file) was answered as "400
// bad request body"; the record is listed, the bad byte replaced.
TEST_F(ServerTest, AStoredStringThatIsNotUtf8IsServedReplaced) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "UPDATE records SET error = CAST(x'6f6f9720' AS TEXT) WHERE id = 1", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  StartServer();
  Reply records = Call(port_, http::verb::get, "/v1/records");
  ASSERT_EQ(records.status, 200) << records.body;
  EXPECT_EQ(records.Json()["records"][0]["error"], "oo\xEF\xBF\xBD ");
}

// A client that sends "Expect: 100-continue" (curl, for bodies over 1 MiB)
// waits for "100 Continue" before its body; it once waited a second for
// nothing. A body over the limit is refused on the header alone.
TEST_F(ServerTest, AClientThatExpectsToContinueIsToldTo) {
  StartServer("", 1024, /*read_timeout_s=*/3);
  const std::string body = R"({"spec": "matmul:M=8,N=8,K=8", "target": "llvm -mcpu=znver4 -num-cores=2"})";
  net::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)));
  net::write(socket, net::buffer("POST /v1/query HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " +
                                 std::to_string(body.size()) + "\r\n\r\n"));
  std::string interim;
  const auto start = std::chrono::steady_clock::now();
  const std::size_t end = net::read_until(socket, net::dynamic_buffer(interim), "\r\n\r\n");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_EQ(interim.substr(0, end), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_EQ(interim.size(), end);
  beast::flat_buffer buffer;
  net::write(socket, net::buffer(body));
  http::response<http::string_body> answer;
  http::read(socket, buffer, answer);
  EXPECT_EQ(answer.result_int(), 200) << answer.body();
  EXPECT_NE(answer.body().find("\"workload_hash\""), std::string::npos) << answer.body();

  // Over the limit (1 KiB here): 413 at once, the body never sent.
  std::string refused = RawExchange(port_, "POST /v1/query HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                                           "Content-Length: 5000\r\n\r\n", AfterSending::kStall);
  EXPECT_EQ(refused.rfind("HTTP/1.1 413 Payload Too Large\r\n", 0), 0u) << refused;
  // HTTP/1.0 has no interim answers: the body is read as it comes.
  std::string old = RawExchange(port_, "POST /v1/query HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: " +
                                           std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(old.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << old;
}

TEST_F(ServerTest, StalledClientsAreCutAtTheReadDeadline) {
  StartServer("", 8 << 20, /*read_timeout_s=*/0.3);
  // A client that sends half a header and waits is closed at the deadline.
  auto start = std::chrono::steady_clock::now();
  std::string answer = RawExchange(port_, "GET /v1/health HTTP/1.1\r\nHost: x\r\n", AfterSending::kStall);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(answer, "");
  EXPECT_GT(secs, 0.2);
  EXPECT_LT(secs, 5.0);
  EXPECT_EQ(Call(port_, http::verb::get, "/v1/health").status, 200);
}

TEST_F(ServerTest, TheConnectionCapRefusesClientsBeyondIt) {
  // The read deadline is long so that the two idle connections stay open
  // however slowly this test runs (a 0.3 s deadline cut them under a loaded
  // CI machine before the third client arrived).
  StartServer("", 8 << 20, /*read_timeout_s=*/30, /*max_connections=*/2);
  net::io_context ioc;
  tcp::socket a(ioc), b(ioc);
  tcp::endpoint at(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_));
  a.connect(at);
  b.connect(at);
  // connect() returns once the kernel has queued the connection; the server
  // counts it only when its accept loop runs, so ask until it has (or 5 s).
  std::string third;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    third = RawExchange(port_, "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n");
    if (third.find("503") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_NE(third.find("503"), std::string::npos) << third;
  a.close();
  b.close();
  // Closed connections free their places.
  int status = 0;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    status = Call(port_, http::verb::get, "/v1/health").status;
    if (status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(status, 200);
}

TEST_F(ServerTest, KeepAliveAndManyConcurrentClients) {
  StartServer();
  {
    // Two requests on one connection.
    net::io_context ioc;
    tcp::socket socket(ioc);
    socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)));
    beast::flat_buffer buffer;
    for (int i = 0; i < 2; ++i) {
      http::request<http::string_body> req(http::verb::get, "/v1/health", 11);
      req.set(http::field::host, "x");
      http::write(socket, req);
      http::response<http::string_body> res;
      http::read(socket, buffer, res);
      EXPECT_EQ(res.result_int(), 200);
      EXPECT_TRUE(res.keep_alive());
    }
  }
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        Reply r = Call(port_, http::verb::get, "/v1/workloads/" + hash_ + "/best?target=llvm%20-mcpu%3Dznver4%20-num-cores%3D2");
        ok += r.status == 200;
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(ok.load(), 200);
}

TEST_F(ServerTest, StopDuringLoadAnswersWhatItAccepted) {
  StartServer();
  std::atomic<bool> done{false};
  std::atomic<int> answered{0}, refused{0}, bad{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      while (!done) {
        try {
          Reply r = Call(port_, http::verb::get, "/v1/records?limit=50");
          (r.status == 200 ? answered : bad)++;
        } catch (const std::exception&) {
          refused++;  // connection refused or closed once the server stopped
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  server_->Stop();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  done = true;
  for (auto& c : clients) c.join();
  EXPECT_GT(answered.load(), 0);
  EXPECT_EQ(bad.load(), 0) << "every accepted request got a full answer";
  EXPECT_LT(secs, 5.0);
  db::SqliteDatabase check(path_);
  EXPECT_EQ(check.IntegrityCheck(), "ok");
}

// `tunedb tune --db http://...`: the tuning loop against a server instead of
// a file; records, session and model land in the server's database.
// A small tuning session of matmul 16x32x16, as the command "remote test".
search::TuneOptions SmallRemoteTune(int trials) {
  search::TuneOptions o;
  o.workloads = {"matmul:M=16,N=32,K=16"};
  o.trials = trials;
  o.batch = 8;
  o.chunk = 8;
  o.model_min_samples = 8;
  o.evolutionary.population = 32;
  o.evolutionary.generations = 2;
  o.measure.worker_path = TUNEDB_WORKER;
  o.measure.repeat = 2;
  o.measure.min_repeat_ms = 1;
  o.measure_baseline = false;
  o.command = "remote test";
  return o;
}

TEST_F(ServerTest, TuneThroughTheServer) {
  StartServer("tok");
  std::string url = "http://127.0.0.1:" + std::to_string(port_);
  EXPECT_THROW(RemoteDatabase(url, "wrong").StartSession(db::Session{}), db::DatabaseError);
  search::TuneOptions o = SmallRemoteTune(16);
  {
    RemoteDatabase remote(url, "tok");
    search::TuneReport r = search::Tune(remote, o);
    EXPECT_EQ(r.tasks[0].trials, 16);
  }
  db::SqliteDatabase local(path_);
  std::string hash = ir::WorkloadHash(ir::BuildWorkload("matmul:M=16,N=32,K=16").func);
  db::RecordQuery q;
  q.workload_hash = hash;
  q.limit = 100;
  EXPECT_EQ(local.Records(q).size(), 16u);
  ASSERT_EQ(local.Sessions().size(), 1u);
  EXPECT_GT(local.Sessions()[0].ended, 0);
  EXPECT_EQ(local.Sessions()[0].owner, db::ThisProcess());
  EXPECT_EQ(local.Records(q)[0].session_id, local.Sessions()[0].id);
  // Its records, posted through the server, were its signs of life, which
  // the server's session listing carries.
  EXPECT_GT(local.Sessions()[0].last_active, local.Sessions()[0].started);
  EXPECT_EQ(RemoteDatabase(url, "tok").Sessions()[0].last_active, local.Sessions()[0].last_active);
  json listed = Call(port_, http::verb::get, "/v1/sessions").Json();
  EXPECT_EQ(listed["sessions"][0]["last_active"], local.Sessions()[0].last_active);
  EXPECT_NEAR(listed["now"].get<double>(), db::NowSeconds(), 60) << listed;
  EXPECT_FALSE(local.Models().empty());
  // A second session through the server starts from what the first stored,
  // with the default population, whose warm start asks for its best 102.
  RemoteDatabase remote(url, "tok");
  o.seed = 9;
  o.trials = 8;
  o.evolutionary.population = search::EvolutionaryOptions{}.population;
  search::TuneReport again = search::Tune(remote, o);
  EXPECT_EQ(again.tasks[0].history, 16);
  EXPECT_EQ(remote.Size(), 12 + 24);
  EXPECT_EQ(remote.Targets(hash).size(), 1u);
  EXPECT_TRUE(remote.FindWorkload(hash).has_value());
  EXPECT_FALSE(remote.FindWorkload("1").has_value());
  EXPECT_TRUE(remote.LoadModel(0).has_value());
  // As a file does: every ok record for a large k, none for a workload it
  // does not know.
  std::string target = remote.Targets(hash)[0];
  std::size_t ok = 0;
  for (const db::TuningRecord& r : local.Records(q)) ok += r.status == db::RecordStatus::kOk;
  EXPECT_EQ(remote.TopK(hash, target, 5000).size(), local.TopK(hash, target, 5000).size());
  EXPECT_GE(remote.TopK(hash, target, 5000).size(), ok);
  EXPECT_TRUE(remote.TopK("1", target, 10).empty());
}

// --host takes a name as well as an address (it used to refuse localhost
// with "Invalid argument"), and the URL the server gives, and a client
// takes, writes an IPv6 address in brackets (the server printed
// http://::1:PORT, and a client given http://[::1]:PORT could not resolve
// "[::1]").
TEST_F(ServerTest, ListensOnANameOrAnIPv6AddressAndGivesItsUrl) {
  ServerOptions o;
  o.db_path = path_;
  o.port = 0;
  o.host = "localhost";
  {
    Server by_name(o);
    by_name.Start();
    EXPECT_EQ(by_name.url(), "http://127.0.0.1:" + std::to_string(by_name.port()));
    EXPECT_EQ(RemoteDatabase("http://localhost:" + std::to_string(by_name.port()), "").Size(), 12);
    by_name.Stop();
  }
  for (const char* bad : {"http://[::1", "http://[::1]8080", "http://:8080"}) {
    try {
      RemoteDatabase remote(bad, "");
      ADD_FAILURE() << bad << " was taken";
    } catch (const db::DatabaseError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string(bad) + ": ", 0), 0u) << e.what();
    }
  }
  o.host = "::1";
  std::unique_ptr<Server> v6;
  try {
    v6 = std::make_unique<Server>(o);
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << "no IPv6 loopback on this machine: " << e.what();
  }
  v6->Start();
  EXPECT_EQ(v6->url(), "http://[::1]:" + std::to_string(v6->port()));
  EXPECT_EQ(RemoteDatabase(v6->url(), "").Size(), 12);
  v6->Stop();
}

// A batch larger than the server takes in one request goes in several,
// each within the limit its health route gives; each record keeps the time
// it was measured. A record larger than the limit is a clear error.
TEST_F(ServerTest, ARemoteCommitIsSplitWithinTheServersLimit) {
  const std::size_t limit = 16 << 10;
  StartServer("", limit);
  RemoteDatabase remote("http://127.0.0.1:" + std::to_string(port_), "");
  std::vector<db::TuningRecord> records;
  std::size_t bytes = 0;
  for (int i = 0; i < 60; ++i) {
    db::TuningRecord r;
    r.workload_hash = hash_;
    r.target = "llvm -mcpu=other -num-cores=2";
    r.trace = traces_[static_cast<std::size_t>(i) % traces_.size()];
    r.run_secs = {1e-3 + 1e-6 * i};
    r.created = 1.7e9 + i;
    bytes += r.trace.size();
    records.push_back(r);
  }
  ASSERT_GT(bytes, 2 * limit) << "the batch must need several requests";
  EXPECT_EQ(remote.CommitRecords(records), 60);
  EXPECT_EQ(remote.CommitRecords(records), 0) << "duplicates are skipped, request by request";
  int posts = 0;
  {
    std::lock_guard<std::mutex> lock(log_mutex_);
    for (const std::string& line : log_) {
      if (line.find("POST /v1/records 201") != std::string::npos) ++posts;
      EXPECT_EQ(line.find(" 413 "), std::string::npos) << line;
    }
  }
  EXPECT_GE(posts, 2 * 3) << "two batches of more than twice the limit each";
  db::SqliteDatabase local(path_);
  db::RecordQuery q;
  q.workload_hash = hash_;
  q.target = "llvm -mcpu=other -num-cores=2";
  q.limit = 1000;
  std::vector<db::TuningRecord> stored = local.Records(q);
  ASSERT_EQ(stored.size(), 60u);
  for (std::size_t i = 0; i < stored.size(); ++i) EXPECT_EQ(stored[i].created, 1.7e9 + static_cast<double>(i));

  db::TuningRecord huge = records[0];
  huge.error = std::string(limit, 'x');
  huge.status = db::RecordStatus::kRunError;
  try {
    remote.CommitRecords({huge});
    FAIL() << "a record beyond the limit was sent";
  } catch (const db::DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("more than the server takes in one request (16384)"), std::string::npos)
        << e.what();
  }
}

// The server's answers to a refused remote call reach the user: a 401
// says how a tunedb command gives the token, a 404 keeps the server's
// reason.
TEST_F(ServerTest, RemoteErrorsSayWhatTheServerSaid) {
  StartServer("tok");
  std::string url = "http://127.0.0.1:" + std::to_string(port_);
  auto message_of = [](const std::function<void()>& call) {
    try {
      call();
    } catch (const db::DatabaseError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  RemoteDatabase without_token(url, "");
  std::string m = message_of([&] { without_token.StartSession(db::Session{}); });
  EXPECT_NE(m.find("POST /v1/sessions: HTTP 401: this route needs Authorization: Bearer <token>"), std::string::npos)
      << m;
  EXPECT_NE(m.find("--token-file"), std::string::npos) << m;
  RemoteDatabase with_token(url, "tok");
  m = message_of([&] { with_token.EndSession(-5, 0); });
  EXPECT_NE(m.find("POST /v1/sessions/-5/end: HTTP 404: no such id: -5"), std::string::npos) << m;
}

// A tuner takes over a session left behind with a compare-and-set on its
// owner; through a server, the same call is a write route.
TEST_F(ServerTest, ASessionIsClaimedThroughTheServerOnlyFromItsOwner) {
  StartServer("tok");
  std::string url = "http://127.0.0.1:" + std::to_string(port_);
  RemoteDatabase remote(url, "tok");
  db::Session s;
  s.command = "tunedb tune --workload x";
  s.owner = "host/1/2/boot";
  std::int64_t id = remote.StartSession(s);
  ASSERT_EQ(remote.Sessions().size(), 1u);
  EXPECT_EQ(remote.Sessions()[0].owner, "host/1/2/boot");
  EXPECT_FALSE(remote.ClaimSession(id, "someone/else", "me"));
  EXPECT_TRUE(remote.ClaimSession(id, "host/1/2/boot", "me"));
  EXPECT_FALSE(remote.ClaimSession(id + 1, "", "me"));
  EXPECT_EQ(db::SqliteDatabase(path_).Sessions()[0].owner, "me");

  std::string path = "/v1/sessions/" + std::to_string(id) + "/claim";
  EXPECT_EQ(Call(port_, http::verb::post, path, R"({"expected": "me", "owner": ""})").status, 401);
  Reply missing = Call(port_, http::verb::post, path, R"({"expected": "me"})", "tok");
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.Json()["error"], "owner (a session owner, \"\" for none) is required as a string") << missing.body;
  EXPECT_EQ(Call(port_, http::verb::post, path, R"({"expected": 1, "owner": ""})", "tok").status, 400);
  EXPECT_EQ(Call(port_, http::verb::get, path).status, 405);
  json released = Call(port_, http::verb::post, path, R"({"expected": "me", "owner": ""})", "tok").Json();
  EXPECT_EQ(released["claimed"], true);
  EXPECT_EQ(remote.Sessions()[0].owner, "");
}

// Later timings of a record through the server: a write route, checked
// before they reach the database.
TEST_F(ServerTest, LaterTimingsOfARecordGoThroughTheServer) {
  StartServer("tok");
  std::string url = "http://127.0.0.1:" + std::to_string(port_);
  RemoteDatabase remote(url, "tok");
  std::vector<db::TuningRecord> top = remote.TopK(hash_, kTarget, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_TRUE(remote.AddTimings(top[0].id, {2e-5, 2.1e-5, 2.2e-5}));  // slower than all the others
  std::vector<db::TuningRecord> after = db::SqliteDatabase(path_).TopK(hash_, kTarget, 12);
  EXPECT_EQ(after.back().id, top[0].id) << "the record timed slower since is still ranked first";
  EXPECT_EQ(after.back().run_secs.size(), 5u);
  // The best route rendered that record before (remote.TopK above); it
  // serves it with its timings as they are now.
  std::vector<db::TuningRecord> served = remote.TopK(hash_, kTarget, 12);
  ASSERT_EQ(served.size(), 12u);
  EXPECT_EQ(served.back().id, top[0].id);
  EXPECT_EQ(served.back().run_secs, after.back().run_secs);
  EXPECT_FALSE(remote.AddTimings(999999, {1e-6}));

  // More timings than a record keeps (a final check at --repeat 25 takes
  // 75): the record keeps the newest 64, as a file would, though the route
  // takes at most 64 at once.
  std::vector<double> many;
  for (int i = 1; i <= 100; ++i) many.push_back(i * 1e-6);
  EXPECT_TRUE(remote.AddTimings(top[1].id, many));
  for (const db::TuningRecord& r : db::SqliteDatabase(path_).TopK(hash_, kTarget, 12)) {
    if (r.id == top[1].id) {
      EXPECT_EQ(r.run_secs, std::vector<double>(many.end() - 64, many.end()));
    }
  }

  std::string path = "/v1/records/" + std::to_string(top[1].id) + "/timings";
  EXPECT_EQ(Call(port_, http::verb::post, path, R"({"run_secs": [1e-6]})").status, 401);
  for (const char* bad : {R"({})", R"({"run_secs": []})", R"({"run_secs": [0]})", R"({"run_secs": ["1"]})",
                          R"({"run_secs": 1e-6})"}) {
    Reply r = Call(port_, http::verb::post, path, bad, "tok");
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find("run_secs (1 to 64 timings, positive seconds) is required"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Call(port_, http::verb::post, "/v1/records/x/timings", R"({"run_secs": [1e-6]})", "tok").status, 404);
  EXPECT_EQ(Call(port_, http::verb::get, path).status, 405);
  EXPECT_EQ(Call(port_, http::verb::post, path, R"({"run_secs": [1e-6]})", "tok").status, 200);
}

// The real server behind a proxy on 127.0.0.1, standing in for a server
// that differs from this one (an older version, another host's clock): it
// may answer a request itself, and may rewrite the answers it passes on.
class Proxy {
 public:
  using Request = http::request<http::string_body>;
  using Response = http::response<http::string_body>;
  struct Rules {
    std::function<bool(const Request&, Response&)> answer;   // true: answered here, not passed on
    std::function<void(const Request&, Response&)> rewrite;  // an answer passed back
  };

  Proxy(int upstream, Rules rules)
      : acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)),
        upstream_(upstream),
        rules_(std::move(rules)) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { Serve(); });
  }
  ~Proxy() {
    stopping_ = true;
    net::io_context ioc;
    tcp::socket wake(ioc);  // the blocking accept returns for a connection
    beast::error_code ignored;
    wake.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)), ignored);
    thread_.join();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void Serve() {
    while (!stopping_) {
      tcp::socket client(ioc_);
      beast::error_code ec;
      acceptor_.accept(client, ec);
      if (ec || stopping_) return;
      beast::flat_buffer buffer;
      for (;;) {  // the remote database keeps its connection alive
        Request req;
        http::read(client, buffer, req, ec);
        if (ec) break;
        Response res;
        if (!rules_.answer || !rules_.answer(req, res)) {
          tcp::socket server(ioc_);
          server.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(upstream_)));
          http::write(server, req);
          beast::flat_buffer server_buffer;
          http::read(server, server_buffer, res);
          if (rules_.rewrite) rules_.rewrite(req, res);
        }
        http::write(client, res, ec);
        if (ec) break;
      }
    }
  }

  net::io_context ioc_;
  tcp::acceptor acceptor_;
  int upstream_, port_ = 0;
  Rules rules_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// A server from before session owners and later timings: it answers the
// claim and timings routes as such a server did (404, "no route").
class OlderServer {
 public:
  explicit OlderServer(int upstream)
      : proxy_(upstream, {[this](const auto& req, auto& res) { return Refuse(req, res); }, {}}) {}
  std::string Url() const { return proxy_.Url(); }
  int claims_refused() const { return claims_refused_; }
  int timings_refused() const { return timings_refused_; }

 private:
  bool Refuse(const Proxy::Request& req, Proxy::Response& res) {
    std::string target(req.target());
    auto ends_with = [&](const std::string& suffix) {
      return target.size() > suffix.size() && target.compare(target.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (!ends_with("/claim") && !ends_with("/timings")) return false;
    ++(ends_with("/claim") ? claims_refused_ : timings_refused_);
    res.result(http::status::not_found);
    res.set(http::field::content_type, "application/json");
    res.body() = json{{"error", "no route " + target}}.dump();
    res.prepare_payload();
    return true;
  }

  std::atomic<int> claims_refused_{0}, timings_refused_{0};
  Proxy proxy_;  // last: its thread uses the counters
};

// A new tuner and an older server: a session left open there cannot be
// claimed, so the tuner runs a session of its own instead of failing, and
// an interrupted one ends without error though its release is refused too.
// The final check's timings cannot be stored there: the report says so.
TEST_F(ServerTest, ATunerThroughAnOlderServerRunsASessionOfItsOwn) {
  StartServer("tok");
  OlderServer old_server(port_);
  search::TuneOptions o = SmallRemoteTune(8);
  db::Session left;  // as an older server holds it: no owner
  left.command = o.command;
  left.target = o.measure.target.ToString();
  RemoteDatabase remote(old_server.Url(), "tok");
  std::int64_t left_id = remote.StartSession(left);

  search::TuneReport r = search::Tune(remote, o);
  EXPECT_FALSE(r.resumed);
  EXPECT_NE(r.session_id, left_id);
  EXPECT_EQ(r.tasks[0].trials, 8);
  EXPECT_GE(old_server.claims_refused(), 1);
  EXPECT_EQ(old_server.timings_refused(), 1);  // the first refusal ends the check
  EXPECT_NE(r.final_check_note.find("the final check's timings were not stored: " + old_server.Url() +
                                    " is a tunedb server older than later timings (it has no route POST "
                                    "/v1/records/"),
            std::string::npos)
      << r.final_check_note;
  std::vector<db::Session> sessions = db::SqliteDatabase(path_).Sessions();
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].ended, 0);
  EXPECT_GT(sessions[1].ended, 0);

  // Stopped before its first batch: its release is refused as well, and the
  // run still ends and reports.
  std::atomic<bool> stop{true};
  int refused_before = old_server.claims_refused();
  search::TuneReport stopped = search::Tune(remote, o, {}, &stop);
  EXPECT_TRUE(stopped.interrupted);
  EXPECT_GT(old_server.claims_refused(), refused_before);
}

// A server whose clock runs two hours behind the tuner's: the proxy moves
// every time in its sessions answers back by two hours, as that server
// would have stamped them. The tuner reads a session's last sign of life
// in its own clock, so it neither takes over a session active a moment
// ago nor waits three hours for one left two hours ago.
TEST_F(ServerTest, ATunerJudgesASessionByItsOwnClockThroughAServerWithAnother) {
  StartServer("tok");
  constexpr double kBehind = 7200;
  Proxy behind(port_, {{}, [](const Proxy::Request& req, Proxy::Response& res) {
                         if (req.method() != http::verb::get || req.target() != "/v1/sessions") return;
                         json answer = json::parse(res.body());
                         answer["now"] = answer["now"].get<double>() - kBehind;
                         for (json& s : answer["sessions"]) {
                           for (const char* time : {"started", "ended", "last_active"}) {
                             if (s[time].get<double>() != 0) s[time] = s[time].get<double>() - kBehind;
                           }
                         }
                         res.body() = answer.dump();
                         res.prepare_payload();
                       }});
  search::TuneOptions o = SmallRemoteTune(8);
  db::Session running;  // on another host, whose process cannot be looked at
  running.command = o.command;
  running.target = o.measure.target.ToString();
  running.owner = "build-box-7/4242/1/another-boot/1";
  RemoteDatabase remote(behind.Url(), "tok");
  const std::int64_t running_id = remote.StartSession(running);
  const double now = db::NowSeconds();
  db::Session seen = remote.Sessions().at(0);
  EXPECT_NEAR(seen.last_active, now, 60);
  EXPECT_NEAR(seen.started, now - kBehind, 60) << "only the sign of life is read in this clock";
  EXPECT_TRUE(db::SessionMayBeRunning(seen, now));
  search::TuneReport r = search::Tune(remote, o);
  EXPECT_FALSE(r.resumed);
  EXPECT_NE(r.session_id, running_id);

  // Left two hours ago by the server's clock: taken over.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
  const std::string quiet =
      "UPDATE sessions SET last_active = last_active - 7200 WHERE id = " + std::to_string(running_id);
  ASSERT_EQ(sqlite3_exec(raw, quiet.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  EXPECT_NEAR(remote.Sessions().at(0).last_active, now - kBehind, 60);
  r = search::Tune(remote, o);
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(r.session_id, running_id);

  // Clocks that agree within a minute read the time stored as it is.
  db::Session direct = RemoteDatabase("http://127.0.0.1:" + std::to_string(port_), "tok").Sessions().at(0);
  EXPECT_EQ(direct.last_active, db::SqliteDatabase(path_).Sessions().at(0).last_active);
}

// A server that restarts (an upgrade) while tuners use it: a call waits
// for it to listen again instead of failing, which ended every tuner with
// "cannot connect: Connection refused" and lost its chunk in flight. One
// that does not come back fails after the wait, saying so.
TEST_F(ServerTest, ARemoteDatabaseWaitsForAServerThatRestarts) {
  ServerOptions o;
  o.db_path = path_;
  o.port = 0;
  auto first = std::make_unique<Server>(o);
  first->Start();
  o.port = first->port();
  RemoteDatabase remote(first->url(), "");
  ASSERT_EQ(remote.Size(), 12);
  first->Stop();
  first.reset();
  std::promise<void> answered;
  std::thread restart([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    Server second(o);
    second.Start();
    answered.get_future().wait();
    second.Stop();
  });
  EXPECT_EQ(remote.Size(), 12);
  answered.set_value();
  restart.join();
  remote.SetReconnectWait(0.3);
  try {
    remote.Size();
    ADD_FAILURE() << "a stopped server answered";
  } catch (const db::DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot connect: Connection refused (waited 0.3 s for the server to come back)"),
              std::string::npos)
        << e.what();
  }
}

TEST(RemoteDatabaseTest, UnreachableServerIsAClearError) {
  try {
    RemoteDatabase remote("http://127.0.0.1:1", "");
    FAIL() << "connected to port 1?";
  } catch (const db::DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find("http://127.0.0.1:1: cannot connect"), std::string::npos) << e.what();
  }
}

TEST(HttpParsing, TargetsAndEscapes) {
  ParsedTarget t = ParseTarget("/v1/records?workload=12&target=llvm+-mcpu%3Dx&flag");
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.path, "/v1/records");
  EXPECT_EQ(t.query.at("workload"), "12");
  EXPECT_EQ(t.query.at("target"), "llvm -mcpu=x");
  EXPECT_EQ(t.query.at("flag"), "");
  EXPECT_EQ(ParseTarget("/a?b=%4").error, "malformed URL escape in /a?b=%4");
  EXPECT_EQ(ParseTarget("/a%zz").error, "malformed URL escape in /a%zz");
  // Two values of one parameter (the second spelled with an escape) are
  // refused rather than one of them taken.
  EXPECT_EQ(ParseTarget("/v1/records?target=a&target=b").error, "query parameter target is given more than once");
  EXPECT_EQ(ParseTarget("/v1/records?k=1&%6b=2").error, "query parameter k is given more than once");
  EXPECT_EQ(*PercentDecode("a+b%20c", false), "a+b c");
}

}  // namespace
}  // namespace tunedb::api
