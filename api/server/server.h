// The HTTP server behind `tunedb serve`: Boost.Beast on Asio, HTTP/1.1 with
// keep-alive.
//
// Threads: `io_threads` run the sockets (accept, read, write) and never
// touch the database; requests are handed to `worker_threads`, each with its
// own SQLite connection, and the response is posted back to the
// connection's strand. So a slow query or an XGBoost prediction delays its
// own response only.
//
// Limits: request bodies up to body_limit (413 beyond), headers up to 16
// KiB, a read deadline per request (the connection is closed when a client
// stalls), at most max_connections open connections (503 and close
// beyond). A malformed request gets 400 and the connection is closed;
// empty lines before a request line are skipped (RFC 9112, 2.2).
// "Expect: 100-continue" is answered before the body is read.
//
// Stop() (or SIGTERM/SIGINT under Run) stops accepting, lets requests in
// flight finish and be answered, closes idle connections, and returns.
//
// Observability: one access-log line per request to `access_log` (method,
// path, status, bytes, milliseconds), and /metrics in Prometheus text
// format: requests by route and status, a latency histogram, the database's
// record and workload counts.
//
// Thread-safety: Start/Stop from one controlling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tunedb::api {

struct ServerOptions {
  std::string db_path;
  std::string host = "127.0.0.1";  // an address, or a name (localhost) taken as its first address
  int port = 8080;            // 0: an ephemeral port (see Server::port())
  int io_threads = 2;
  int worker_threads = 2;
  std::string token;          // bearer token for write routes; empty: open
  bool read_only = false;     // open the database read-only; write routes answer 403
  std::size_t body_limit = 8 << 20;
  double read_timeout_s = 30;
  int max_connections = 1024;
  std::function<void(const std::string&)> access_log;  // null: no log
};

class Server {
 public:
  // Opens the database (throws db::DatabaseError) and binds (throws
  // std::runtime_error naming the address).
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void Start();          // returns once listening
  int port() const;      // the bound port
  std::string url() const;  // http://ADDRESS:PORT, an IPv6 address in brackets
  void Stop();           // graceful: see the file comment
  // Start, then block until SIGTERM or SIGINT, then Stop.
  void Run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunedb::api
