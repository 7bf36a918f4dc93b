// `tunedb serve`: the REST server (api/server/server.h) on a database file.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include <fmt/core.h>

#include "api/cli/commands.h"
#include "api/server/server.h"
#include "db/database.h"

namespace tunedb::cli {
namespace {

struct ServeOptions {
  std::string db = "tunedb.sqlite";
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 2;
  std::string token_file;
  std::size_t body_limit = 8 << 20;
  bool quiet = false;
  bool read_only = false;
};

void RunServe(const ServeOptions& o) {
  if (o.port < 0 || o.port > 65535) throw UsageError("--port must be in [0, 65535]");
  // Each thread is twice over (an I/O thread and a worker with its own
  // SQLite connection): 100000 once started without complaint and never
  // stopped.
  if (o.threads < 1 || o.threads > 256) throw UsageError("--threads must be between 1 and 256");
  // Below a few KiB no request carrying a record fits: every write would
  // answer 413.
  if (o.body_limit < 4096) throw UsageError("--body-limit must be at least 4096 bytes");
  api::ServerOptions s;
  s.db_path = o.db;
  s.host = o.host;
  s.port = o.port;
  s.io_threads = o.threads;
  s.worker_threads = o.threads;
  s.body_limit = o.body_limit;
  s.read_only = o.read_only;
  s.token = ReadTokenFile(o.token_file);
  static std::mutex log_mutex;
  if (!o.quiet) {
    s.access_log = [](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mutex);
      std::fprintf(stderr, "%s\n", line.c_str());
    };
  }
  std::optional<api::Server> server;
  try {
    server.emplace(s);
  } catch (const db::DatabaseError& e) {
    // A database this process may not write (a read-only mount, another
    // user's file) can still be served for reading. Where it may write,
    // the file itself is the problem, and the hint would mislead.
    std::filesystem::path dir = std::filesystem::path(o.db).parent_path();
    bool writable = access(o.db.c_str(), W_OK) == 0 && access(dir.empty() ? "." : dir.c_str(), W_OK) == 0;
    if (o.read_only || writable) throw;
    throw db::DatabaseError(std::string(e.what()) + "; to serve it without writing to it, add --read-only");
  }
  // The first line says where it listens (--port 0 picks a free port).
  fmt::print("tunedb serve: listening on {} (database {}, {} threads, writes {})\n", server->url(), o.db, o.threads,
             o.read_only ? "refused: read-only" : s.token.empty() ? "open" : "need the token");
  std::fflush(stdout);
  server->Run();
  fmt::print("tunedb serve: stopped\n");
}

}  // namespace

void AddServeCommand(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve the database over HTTP (REST API and dashboard)");
  cmd->add_option("--db", o->db, "The SQLite database file")->capture_default_str();
  cmd->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o->port, "Port (0: any free port, printed at start)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "I/O threads, and as many database worker threads")->capture_default_str();
  cmd->add_option("--token-file", o->token_file, "Write routes need Authorization: Bearer <the file's token>");
  cmd->add_option("--body-limit", o->body_limit, "Largest request body in bytes")->capture_default_str();
  cmd->add_flag("--quiet", o->quiet, "No access log");
  cmd->add_flag("--read-only", o->read_only,
                "Open the database read-only (it may be on a read-only mount); write routes answer 403");
  cmd->callback([o] { RunServe(*o); });
}

}  // namespace tunedb::cli
