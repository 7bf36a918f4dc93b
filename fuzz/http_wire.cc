// Fuzz target: bytes sent to `tunedb serve` over a connection, as any
// client on the network could send them.
//
// http_routes fuzzes what the routes do with a request Beast has parsed;
// this target fuzzes everything before that and around it: the server's
// session (server.cc) reads the bytes with Beast's parser under its limits
// (body, headers), answers what does not parse, splits pipelined requests,
// honours keep-alive and Connection: close, and writes the answers back. A
// real server runs in this process on 127.0.0.1 over a real SQLite file
// (a workload and two records). Each input is written on a new connection,
// whose sending side is then shut, and everything the server sends is read
// until it closes.
//
// Promise: the server sends back whole HTTP/1.1 answers and nothing else,
// then closes; a client that sent bytes gets at least one answer, and a
// final one after "100 Continue"; every answer is one the API documents
// (docs/API.md), an error as JSON with "error" in it, and never a 500 (the
// file is whole) or a 503 (one connection at a time); and the server goes
// on answering: a new connection's GET /v1/health is answered 200.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "api/server/server.h"
#include "db/sqlite_database.h"
#include "fuzz/fresh_folder.h"
#include "fuzz/fuzz_check.h"
#include "ir/json.h"
#include "ir/structural.h"
#include "ir/workloads.h"

namespace {

using namespace tunedb;
namespace fs = std::filesystem;
namespace http = boost::beast::http;

constexpr const char* kToken = "tok";
// Small, so that inputs of libFuzzer's few kilobytes reach the 413.
constexpr std::size_t kBodyLimit = 1024;
// An answer later than this is a hang: a request to this small database is
// answered in milliseconds.
constexpr int kReplySeconds = 10;

// What the server serves: the workload matmul 12 x 10 x 8 and two records
// of it, one ok and one failed.
void WriteSeed(const fs::path& path) {
  db::SqliteDatabase d(path.string());
  const std::string spec = "matmul:M=12,N=10,K=8";
  ir::Workload w = ir::LoadWorkload(spec);
  const std::string hash = ir::WorkloadHash(w.func);
  d.CommitWorkload({hash, spec, "tunedb", ir::CanonicalEncoding(w.func), ir::ProgramToJson(w.func)});
  db::TuningRecord ok;
  ok.workload_hash = hash;
  ok.target = "llvm -mcpu=znver4 -num-cores=2";
  ok.trace = R"([[["GetBlock", [], ["C", "main"], ["b0"]]], []])";
  ok.run_secs = {0.0004, 0.00041};
  db::TuningRecord failed = ok;
  failed.run_secs.clear();
  failed.status = db::RecordStatus::kBuildError;
  failed.error = "no";
  d.CommitRecords({ok, failed});
}

// The server, started once per process in a folder of its own. Built after
// the folder's cleanup, so destroyed (stopped) before the folder goes.
api::Server& TheServer() {
  static const fuzz::RemovedAtExit folder = [] {
    const fs::path dir = fuzz::FreshFolder("wire");
    WriteSeed(dir / "served.sqlite");
    return fuzz::RemovedAtExit{dir};
  }();
  static api::Server server{[] {
    api::ServerOptions o;
    o.db_path = (folder.dir / "served.sqlite").string();
    o.port = 0;
    o.io_threads = 1;
    o.worker_threads = 1;
    o.token = kToken;
    o.body_limit = kBodyLimit;
    o.read_timeout_s = kReplySeconds;
    return o;
  }()};
  static const bool started = (server.Start(), true);
  (void)started;
  return server;
}

// Sends `bytes` on a new connection to the server, shuts the sending side,
// and returns everything the server sent until it closed.
std::string Exchange(int port, std::string_view bytes) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(kReplySeconds);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // A failed connect is retried until the deadline. One run saw a connect
  // fail after 268,596 inputs, and that input passed alone; the error was
  // not recorded. libFuzzer's timer signal interrupts a blocking connect
  // (EINTR), and a thousand connections a second can leave the client
  // short of ports for a moment: neither is the server's fault.
  int fd = -1;
  for (;;) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) break;
    const int error = errno;
    if (fd >= 0) close(fd);
    if (Clock::now() >= deadline) {
      fuzz::Finding("the server accepted no connection for " + std::to_string(kReplySeconds) +
                    " s: " + std::strerror(error));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The server may answer and close before it has read all of a long input
  // (a malformed start, a body over the limit): a failed send is no finding.
  // The socket buffers on loopback hold far more than an input.
  for (std::size_t sent = 0; sent < bytes.size();) {
    ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  // The deadline is kept by poll: libFuzzer's timer signal interrupts a
  // blocking call, and with a socket timeout that call would fail.
  std::string reply;
  char chunk[16384];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd readable{fd, POLLIN, 0};
    const int ready = left > 0 ? poll(&readable, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      close(fd);
      fuzz::Finding("the server neither answered nor closed the connection within " + std::to_string(kReplySeconds) +
                    " s; it had sent " + std::to_string(reply.size()) + " bytes");
    }
    ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    // A reset after an early answer (unread input) ends the exchange too.
    if (n == 0 || (n < 0 && errno == ECONNRESET)) break;
    if (n < 0) {
      const int error = errno;
      close(fd);
      fuzz::Finding(std::string("recv() failed: ") + std::strerror(error));
    }
    reply.append(chunk, static_cast<std::size_t>(n));
  }
  close(fd);
  return reply;
}

// Reads `reply` as HTTP/1.1 answers, checking each; returns how many.
int CheckAnswers(std::string_view reply) {
  static const std::set<unsigned> kStatuses = {200, 201, 400, 401, 403, 404, 405, 409, 413, 431};
  int answers = 0;
  bool interim = false;  // the last answer was "100 Continue"
  while (!reply.empty()) {
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    parser.body_limit(std::uint64_t{1} << 30);
    boost::beast::error_code ec;
    std::size_t used = parser.put(boost::asio::buffer(reply.data(), reply.size()), ec);
    if (!ec && !parser.is_done()) parser.put_eof(ec);
    const std::string where = "answer " + std::to_string(answers + 1);
    if (ec || !parser.is_done()) {
      fuzz::Finding(where + " is not a whole HTTP answer (" + (ec ? ec.message() : "incomplete") + "): " +
                    std::string(reply.substr(0, 200)));
    }
    reply.remove_prefix(used);
    ++answers;
    const http::response<http::string_body>& res = parser.get();
    // To a request that expects it, before its body is read.
    interim = res.result_int() == 100;
    if (interim) continue;
    if (!kStatuses.count(res.result_int())) {
      fuzz::Finding(where + ": status " + std::to_string(res.result_int()) + ": " + res.body());
    }
    if (res[http::field::content_type] == "application/json") {
      nlohmann::json body = nlohmann::json::parse(res.body(), nullptr, /*allow_exceptions=*/false);
      if (body.is_discarded()) fuzz::Finding(where + ": the body is not JSON: " + res.body());
      if (res.result_int() >= 400 && (!body.is_object() || !body.contains("error") || !body["error"].is_string())) {
        fuzz::Finding(where + ": an error answer without \"error\": " + res.body());
      }
    } else if (res.result_int() >= 400) {
      fuzz::Finding(where + ": an error answer that is not JSON: " + std::string(res[http::field::content_type]));
    }
  }
  if (interim) fuzz::Finding("the last answer was 100 Continue, and no answer followed it");
  return answers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  api::Server& server = TheServer();
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const int answers = CheckAnswers(Exchange(server.port(), bytes));
  // Blank lines before a request line are allowed and skipped (RFC 9112,
  // 2.2), so a client that sent only those sent no request.
  if (answers == 0 && bytes.find_first_not_of("\r\n") != std::string_view::npos) {
    fuzz::Finding("the server closed the connection without an answer");
  }
  const std::string health = Exchange(server.port(), "GET /v1/health HTTP/1.1\r\nHost: fuzz\r\n\r\n");
  if (health.rfind("HTTP/1.1 200 ", 0) != 0) {
    fuzz::Finding("after the input, GET /v1/health was answered: " + health.substr(0, 200));
  }
  return 0;
}
