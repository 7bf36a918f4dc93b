#include "db/sqlite_database.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

namespace tunedb::db {
namespace {

// A write refused because the file (or its directory, where the WAL and
// shared-memory files live) is read-only.
// How long a statement waits for another connection's lock.
constexpr std::chrono::milliseconds kBusyTimeout(10000);

constexpr const char* kReadOnlyHint =
    " (tunedb writes to this database: check the permissions of the file and its directory)";
// A read refused: a WAL database's reader writes its -shm file.
constexpr const char* kReadOnlyReadHint =
    " (reading this database needs its -shm file beside it, or a directory where SQLite may create it)";

// The "file:" URI of a path, for SQLite's URI parameters: the characters
// that URIs give a meaning escaped, and a relative path kept relative.
std::string FileUri(const std::string& path) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      uri += buf;
    } else {
      uri += c;
    }
  }
  return uri;
}

// ---- RAII over SQLite handles ---------------------------------------------------

class Statement {
 public:
  Statement(sqlite3* db, const char* sql, const std::string& path) : db_(db), path_(path) {
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
      throw DatabaseError(path + ": cannot prepare statement: " + sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    return *this;
  }
  Statement& Bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& Bind(int i, double v) {
    if (std::isfinite(v)) sqlite3_bind_double(stmt_, i, v); else sqlite3_bind_null(stmt_, i);
    return *this;
  }
  Statement& Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& BindBlob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // True while there is a row.
  bool Step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    std::string msg = sqlite3_errmsg(db_);
    sqlite3_reset(stmt_);
    // Extended codes are on: SQLITE_BUSY_SNAPSHOT and the like are busy too.
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) throw BusyError(msg);
    if ((rc & 0xff) == SQLITE_READONLY) msg += kReadOnlyHint;
    throw DatabaseError(path_ + ": " + msg);
  }
  void Run() {
    while (Step()) {
    }
  }
  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const {
    return sqlite3_column_type(stmt_, col) == SQLITE_NULL ? std::numeric_limits<double>::infinity()
                                                          : sqlite3_column_double(stmt_, col);
  }
  std::string Text(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    return p ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
  }

  struct BusyError : std::runtime_error {
    using std::runtime_error::runtime_error;
  };

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string path_;
};

struct Connection {
  sqlite3* db = nullptr;
  ~Connection() { sqlite3_close_v2(db); }
};

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE IF NOT EXISTS workloads(
  id INTEGER PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  structure BLOB NOT NULL,
  program TEXT NOT NULL,
  created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(
  id INTEGER PRIMARY KEY,
  command TEXT, host TEXT, target TEXT, strategy TEXT,
  seed INTEGER, trials INTEGER,
  started REAL NOT NULL, ended REAL);
-- Targets by id: index entries stay small (an integer, not the target text).
CREATE TABLE IF NOT EXISTS targets(
  id INTEGER PRIMARY KEY,
  target TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS records(
  id INTEGER PRIMARY KEY,
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  target_id INTEGER NOT NULL REFERENCES targets(id),
  trace TEXT NOT NULL,
  run_secs TEXT NOT NULL,
  median REAL,
  status TEXT NOT NULL,
  error TEXT NOT NULL,
  session_id INTEGER,
  created REAL NOT NULL,
  hardware TEXT NOT NULL,
  target_json TEXT NOT NULL,
  args_info TEXT NOT NULL,
  dedupe BLOB NOT NULL,
  -- Per workload, so that a batch of one workload's records dirties few
  -- index pages (a global random key would dirty one page per record).
  UNIQUE(workload_id, dedupe));
CREATE INDEX IF NOT EXISTS records_best ON records(workload_id, target_id, median) WHERE status = 'ok';
CREATE INDEX IF NOT EXISTS records_by_workload ON records(workload_id, id);
CREATE TABLE IF NOT EXISTS models(
  id INTEGER PRIMARY KEY,
  feature_version INTEGER NOT NULL,
  objective TEXT NOT NULL,
  blob BLOB NOT NULL,
  training_rows INTEGER NOT NULL,
  metrics TEXT NOT NULL,
  created REAL NOT NULL);
)sql";

// [a, b, ...] with each number in its shortest round-trip form.
std::string RunSecsJson(const std::vector<double>& secs) {
  std::string out = "[";
  char buf[32];
  for (std::size_t i = 0; i < secs.size(); ++i) {
    if (i) out += ", ";
    if (!std::isfinite(secs[i])) {
      out += "null";
      continue;
    }
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, secs[i]);
    out.append(buf, end);
  }
  return out + "]";
}

std::vector<double> ParseRunSecs(const std::string& text) {
  std::vector<double> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_array()) {
    for (const auto& x : j) out.push_back(x.is_number() ? x.get<double>() : std::numeric_limits<double>::infinity());
  }
  return out;
}

// What makes two records the same measurement: a 128-bit key (FNV-1a 64
// with two seeds) over workload, target, trace, run_secs and status.
std::string DedupeKey(const TuningRecord& r, const std::string& run_secs_json) {
  std::uint64_t h[2] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
  auto mix = [&](std::string_view part) {
    for (unsigned char c : part) {
      h[0] = (h[0] ^ c) * 0x100000001b3ULL;
      h[1] = (h[1] ^ c) * 0x100000001b3ULL;
    }
    h[0] = (h[0] ^ 0x1f) * 0x100000001b3ULL;  // separator
    h[1] = (h[1] ^ 0x1f) * 0x100000001b3ULL;
  };
  mix(r.workload_hash);
  mix(r.target);
  mix(r.trace);
  mix(run_secs_json);
  mix(StatusName(r.status));
  return std::string(reinterpret_cast<const char*>(h), sizeof h);
}

}  // namespace

struct SqliteDatabase::Impl {
  std::string path;
  Connection conn;
  int transaction_depth = 0;
  int version = 0;  // the file's schema version, once opened
  // A reader's canonical names that stand for several stored targets
  // (ReadTargetsCanonically), with those targets' ids.
  std::map<std::string, std::vector<std::int64_t>> spellings;
  std::unique_ptr<Statement> find_workload, insert_workload, insert_record, top_k, begin, commit, rollback, count,
      insert_session, end_session, insert_model, find_target, insert_target, top_k_of_target_id,
      mark_session_active;  // null before schema version 3

  std::int64_t TargetId(const std::string& target) {
    Statement& find = find_target->Reset().Bind(1, target);
    if (find.Step()) {
      std::int64_t id = find.Int(0);
      find.Reset();
      return id;
    }
    find.Reset();
    insert_target->Reset().Bind(1, target).Run();
    return sqlite3_last_insert_rowid(conn.db);
  }

  struct MisnamedTarget {
    std::int64_t id;
    std::string stored, canonical;
  };

  // Each target stored under a name other than its CanonicalTarget. Almost
  // every file has none.
  std::vector<MisnamedTarget> MisnamedTargets() {
    std::vector<MisnamedTarget> out;
    Statement all(conn.db, "SELECT id, target FROM main.targets", path);
    while (all.Step()) {
      std::string canonical = CanonicalTarget(all.Text(1));
      if (canonical != all.Text(1)) out.push_back({all.Int(0), all.Text(1), std::move(canonical)});
    }
    return out;
  }

  // Records an older server stored under another spelling of a target
  // (TVM's "-keys=cpu", options in another order) join the one name that
  // lookups use now (CanonicalTarget): the target is renamed, or its records
  // move to the row of that name where there is one. Read first outside a
  // write: almost every file has nothing to change.
  void NameTargetsCanonically() {
    if (MisnamedTargets().empty()) return;
    Write([&] {
      for (const MisnamedTarget& target : MisnamedTargets()) {
        RekeyRecords(target);
        std::optional<std::int64_t> named;
        {
          Statement find(conn.db, "SELECT id FROM targets WHERE target = ?1", path);
          if (find.Bind(1, target.canonical).Step()) named = find.Int(0);
        }
        if (!named) {
          Statement rename(conn.db, "UPDATE targets SET target = ?1 WHERE id = ?2", path);
          rename.Bind(1, target.canonical).Bind(2, target.id).Run();
          continue;
        }
        Statement move(conn.db, "UPDATE records SET target_id = ?1 WHERE target_id = ?2", path);
        move.Bind(1, *named).Bind(2, target.id).Run();
        Statement drop(conn.db, "DELETE FROM targets WHERE id = ?1", path);
        drop.Bind(1, target.id).Run();
      }
    });
  }

  // A record's dedupe key covers its target's name, so a renamed target's
  // records get the key they would have been committed with under the new
  // name: a client that posts its records again in the old spelling (the
  // server now stores them under the new one) adds none twice. A record
  // whose key is not the one its stored fields give was timed again since
  // (AddTimings keeps the key it was committed with): its first timings may
  // be gone, and so it keeps the key it has. Where the new key is already
  // another record's (the same measurement stored under both spellings),
  // the record keeps its own too.
  void RekeyRecords(const MisnamedTarget& target) {
    std::vector<std::pair<std::int64_t, std::string>> rekeyed;
    {
      Statement each(conn.db,
                     "SELECT r.id, w.hash, r.trace, r.run_secs, r.status, r.dedupe FROM records r "
                     "JOIN workloads w ON w.id = r.workload_id WHERE r.target_id = ?1",
                     path);
      each.Bind(1, target.id);
      while (each.Step()) {
        TuningRecord r;
        r.workload_hash = each.Text(1);
        r.trace = each.Text(2);
        const std::string run_secs = each.Text(3);
        try {
          r.status = ParseStatus(each.Text(4));
        } catch (const DatabaseError&) {
          continue;  // damaged (db check names it): its key cannot be what this gives
        }
        r.target = target.stored;
        if (DedupeKey(r, run_secs) != each.Text(5)) continue;
        r.target = target.canonical;
        rekeyed.emplace_back(each.Int(0), DedupeKey(r, run_secs));
      }
    }
    Statement set(conn.db, "UPDATE OR IGNORE records SET dedupe = ?2 WHERE id = ?1", path);
    for (const auto& [id, key] : rekeyed) set.Reset().Bind(1, id).BindBlob(2, key).Run();
  }

  // A reader cannot rename what NameTargetsCanonically renames, but it
  // should answer as if a writer had: `tunedb best --target`, a read-only
  // server and `db check` look records up by the canonical name. So this
  // connection reads a targets table of the same name in its own TEMP
  // schema (which SQLite searches before the file's, and which a read-only
  // connection may write): every stored target under its canonical name.
  // Every query below then sees one name per target, with no change to
  // its text. Only files that hold a misnamed target get it.
  void ReadTargetsCanonically(bool query_only) {
    std::vector<std::pair<std::int64_t, std::string>> named;  // every target, by its canonical name
    bool misnamed = false;
    {
      Statement each(conn.db, "SELECT id, target FROM main.targets", path);
      while (each.Step()) {
        named.emplace_back(each.Int(0), CanonicalTarget(each.Text(1)));
        misnamed = misnamed || named.back().second != each.Text(1);
      }
    }
    if (!misnamed) return;
    // query_only refuses every statement that writes, TEMP ones included.
    if (query_only) Exec("PRAGMA query_only=OFF");
    Exec("CREATE TEMP TABLE targets (id INTEGER PRIMARY KEY, target TEXT NOT NULL)");
    Exec("CREATE INDEX temp.targets_by_name ON targets(target)");
    {
      Statement add(conn.db, "INSERT INTO temp.targets(id, target) VALUES (?1, ?2)", path);
      for (const auto& [id, name] : named) {
        add.Reset().Bind(1, id).Bind(2, name).Run();
        spellings[name].push_back(id);
      }
    }
    std::erase_if(spellings, [](const auto& name_ids) { return name_ids.second.size() < 2; });
    if (query_only) Exec("PRAGMA query_only=ON");
  }

  void Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(conn.db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      throw DatabaseError(path + ": " + msg);
    }
  }

  // The journal mode is stored in the file, and switching it to WAL needs
  // the file to itself; SQLite does not call the busy handler for that, so
  // two tunes creating one database at once had one of them fail at once
  // with "database is locked". The mode is read first (every open after the
  // first finds WAL and takes no lock), and the switch is retried for as
  // long as any other statement would wait.
  void EnableWal() {
    // The mode the statement answers, or "" where the file is busy.
    auto mode = [&](const char* sql) {
      std::string result;
      char* err = nullptr;
      auto first_value = [](void* out, int n, char** values, char**) {
        if (n > 0 && values[0]) *static_cast<std::string*>(out) = values[0];
        return 0;
      };
      int rc = sqlite3_exec(conn.db, sql, first_value, &result, &err);
      std::string msg = err ? err : sqlite3_errmsg(conn.db);
      sqlite3_free(err);
      if (rc == SQLITE_OK) return result;
      if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) return std::string();
      throw DatabaseError(path + ": " + msg);
    };
    if (mode("PRAGMA journal_mode") == "wal") return;
    auto deadline = std::chrono::steady_clock::now() + kBusyTimeout;
    std::chrono::milliseconds backoff(1);
    // Where WAL cannot work (no shared memory), SQLite keeps the old mode
    // without an error, as it did before this retry.
    while (mode("PRAGMA journal_mode=WAL").empty()) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw DatabaseError(path + ": cannot switch the database to WAL mode: another connection holds it");
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
    }
  }

  int UserVersion() {
    Statement s(conn.db, "PRAGMA user_version", path);
    s.Step();
    return static_cast<int>(s.Int(0));
  }

  // A write transaction, retried while another process holds the write lock.
  void Write(const std::function<void()>& fn) {
    if (transaction_depth > 0) {
      fn();
      return;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    std::chrono::milliseconds backoff(1);
    while (true) {
      try {
        begin->Reset().Run();
      } catch (const Statement::BusyError&) {
        if (std::chrono::steady_clock::now() > deadline) throw DatabaseError(path + ": database is busy for 5 minutes");
        std::this_thread::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
        continue;
      }
      ++transaction_depth;
      try {
        fn();
        commit->Reset().Run();
        --transaction_depth;
        return;
      } catch (...) {
        --transaction_depth;
        try {
          rollback->Reset().Run();
        } catch (...) {
        }
        throw;
      }
    }
  }

  TuningRecord RecordFrom(const Statement& s) {
    // Column order of kRecordColumns.
    TuningRecord r;
    r.id = s.Int(0);
    r.workload_hash = s.Text(1);
    r.target = s.Text(2);
    r.trace = s.Text(3);
    r.run_secs = ParseRunSecs(s.Text(4));
    try {
      r.status = ParseStatus(s.Text(5));
    } catch (const DatabaseError& e) {
      throw DatabaseError(path + ": record " + std::to_string(r.id) + ": " + e.what());
    }
    r.error = s.Text(6);
    r.session_id = s.Int(7);
    r.created = s.Double(8);
    r.hardware = s.Text(9);
    r.target_json = s.Text(10);
    r.args_info = s.Text(11);
    return r;
  }
};

#define TUNEDB_RECORD_COLUMNS                                                                              \
  "r.id, w.hash, t.target, r.trace, r.run_secs, r.status, r.error, COALESCE(r.session_id, 0), r.created, " \
  "r.hardware, r.target_json, r.args_info"
#define TUNEDB_RECORD_JOIN " FROM records r JOIN workloads w ON w.id = r.workload_id JOIN targets t ON t.id = r.target_id"

SqliteDatabase::SqliteDatabase(const std::string& path, OpenMode mode) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  const bool read_only = mode == OpenMode::kReadOnly;
  // A read-only SQLite connection cannot remove the WAL and shared-memory
  // files when it closes, so every inspection of a database would leave
  // two empty files beside it. Where the file and its directory may be
  // written, a read-only open is a read-write connection that refuses
  // writes (query_only), and cleans up after itself as a writer does. (If
  // it is the last connection and a crashed writer left committed pages
  // in the WAL, closing moves them into the file: the content is the same.)
  const bool query_only = read_only && access(path.c_str(), W_OK) == 0 &&
                          access(std::filesystem::absolute(path).parent_path().c_str(), W_OK) == 0;
  int flags = (query_only  ? SQLITE_OPEN_READWRITE
               : read_only ? SQLITE_OPEN_READONLY
                           : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
              SQLITE_OPEN_NOMUTEX;
  auto open = [&](const std::string& name, int open_flags) {
    sqlite3_close_v2(impl_->conn.db);
    impl_->conn.db = nullptr;
    if (sqlite3_open_v2(name.c_str(), &impl_->conn.db, open_flags, nullptr) != SQLITE_OK) {
      std::string msg = impl_->conn.db ? sqlite3_errmsg(impl_->conn.db) : "out of memory";
      throw DatabaseError("cannot open database " + path + ": " + msg);
    }
    sqlite3_busy_timeout(impl_->conn.db, static_cast<int>(kBusyTimeout.count()));
    sqlite3_extended_result_codes(impl_->conn.db, 1);
  };
  auto configure = [&] {
    // The journal mode is stored in the file: setting it is a write.
    if (!read_only) {
      impl_->EnableWal();
      impl_->Exec("PRAGMA synchronous=NORMAL");
      impl_->Exec("PRAGMA wal_autocheckpoint=32768");  // checkpoint every 128 MiB of WAL
    }
    if (query_only) impl_->Exec("PRAGMA query_only=ON");
    impl_->Exec("PRAGMA cache_size=-65536");  // 64 MiB of page cache
    impl_->Exec("PRAGMA mmap_size=1073741824");  // read pages in place, no copies
    impl_->Exec("PRAGMA foreign_keys=ON");
    impl_->UserVersion();  // the first read of the file
  };
  open(path, flags);
  try {
    try {
      configure();
    } catch (const DatabaseError&) {
      // A reader of a WAL database needs its shared-memory file, which
      // SQLite cannot create in a read-only directory (a read-only mount).
      // With no WAL file there, or an empty one, no writer has pages
      // outside the main file: the file is read as immutable.
      int code = sqlite3_errcode(impl_->conn.db) & 0xff;
      std::error_code no_wal;
      std::uintmax_t wal_bytes = std::filesystem::file_size(path + "-wal", no_wal);
      if (!read_only || query_only || (code != SQLITE_READONLY && code != SQLITE_CANTOPEN) ||
          (!no_wal && wal_bytes > 0)) {
        throw;
      }
      open(FileUri(path) + "?immutable=1", SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX);
      configure();
    }
  } catch (const DatabaseError& e) {
    int code = sqlite3_errcode(impl_->conn.db) & 0xff;
    if (code == SQLITE_NOTADB) throw DatabaseError(std::string(e.what()) + " (is it an SQLite database?)");
    if (code == SQLITE_READONLY || (read_only && code == SQLITE_CANTOPEN)) {
      throw DatabaseError(std::string(e.what()) + (read_only ? kReadOnlyReadHint : kReadOnlyHint));
    }
    throw;
  }
  int version = impl_->UserVersion();
  if (version > kSchemaVersion) {
    throw DatabaseError("database " + path + " was written by a newer tunedb (schema version " +
                        std::to_string(version) + "; this build understands up to " + std::to_string(kSchemaVersion) +
                        ")");
  }
  // A reader cannot migrate the file, so it reads what each version holds
  // (version 1 has no session owners).
  if (read_only && version < 1) {
    throw DatabaseError("database " + path + " has schema version 0 (it holds no tunedb database)");
  }
  impl_->begin = std::make_unique<Statement>(impl_->conn.db, "BEGIN IMMEDIATE", path);
  impl_->commit = std::make_unique<Statement>(impl_->conn.db, "COMMIT", path);
  impl_->rollback = std::make_unique<Statement>(impl_->conn.db, "ROLLBACK", path);
  // Each migration looks at the version again inside its transaction:
  // processes that open a new file together all read version 0, and one
  // that set version 1 after another had reached 2 undid that step.
  auto migrate = [&](int to, const char* sql) {
    impl_->Write([&] {
      if (impl_->UserVersion() >= to) return;
      impl_->Exec(sql);
      impl_->Exec(("PRAGMA user_version = " + std::to_string(to)).c_str());
    });
    version = to;
  };
  // Migration 0 -> 1: the first schema.
  if (version < 1) migrate(1, kSchemaV1);
  // Migration 1 -> 2: sessions name the process that runs them.
  if (version < 2 && !read_only) migrate(2, "ALTER TABLE sessions ADD COLUMN owner TEXT");
  // Migration 2 -> 3: sessions keep their last sign of life, so that one
  // whose owner is on another host can be seen to be left behind.
  if (version < 3 && !read_only) migrate(3, "ALTER TABLE sessions ADD COLUMN last_active REAL");
  impl_->version = version;
  if (read_only) {
    impl_->ReadTargetsCanonically(query_only);
  } else {
    impl_->NameTargetsCanonically();
  }
  sqlite3* db = impl_->conn.db;
  impl_->find_workload = std::make_unique<Statement>(
      db, "SELECT id, hash, name, kind, structure, program FROM workloads WHERE hash = ?1", path);
  impl_->insert_workload = std::make_unique<Statement>(
      db, "INSERT INTO workloads(hash, name, kind, structure, program, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", path);
  impl_->insert_record = std::make_unique<Statement>(
      db,
      "INSERT OR IGNORE INTO records(workload_id, target_id, trace, run_secs, median, status, error, session_id, created, "
      "hardware, target_json, args_info, dedupe) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
      path);
  impl_->top_k = std::make_unique<Statement>(
      db,
      "SELECT " TUNEDB_RECORD_COLUMNS TUNEDB_RECORD_JOIN
      " WHERE w.hash = ?1 AND t.target = ?2 AND r.status = 'ok' ORDER BY r.median, r.id LIMIT ?3",
      path);
  impl_->count = std::make_unique<Statement>(db, "SELECT COUNT(*) FROM records", path);
  impl_->find_target = std::make_unique<Statement>(db, "SELECT id FROM targets WHERE target = ?1", path);
  impl_->insert_target = std::make_unique<Statement>(db, "INSERT INTO main.targets(target) VALUES (?1)", path);
  impl_->insert_session = std::make_unique<Statement>(
      db,
      version >= 3   ? "INSERT INTO sessions(command, host, target, strategy, seed, trials, started, owner, "
                       "last_active) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULLIF(?8, ''), ?7)"
      : version >= 2 ? "INSERT INTO sessions(command, host, target, strategy, seed, trials, started, owner) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULLIF(?8, ''))"
                     : "INSERT INTO sessions(command, host, target, strategy, seed, trials, started) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
      path);
  if (version >= 3) {
    impl_->mark_session_active = std::make_unique<Statement>(
        db, "UPDATE sessions SET last_active = MAX(COALESCE(last_active, 0), ?2) WHERE id = ?1", path);
  }
  impl_->end_session = std::make_unique<Statement>(db, "UPDATE sessions SET ended = ?2 WHERE id = ?1", path);
  impl_->insert_model = std::make_unique<Statement>(
      db,
      "INSERT INTO models(feature_version, objective, blob, training_rows, metrics, created) VALUES (?1, ?2, ?3, ?4, "
      "?5, ?6)",
      path);
}

SqliteDatabase::~SqliteDatabase() = default;

const std::string& SqliteDatabase::path() const { return impl_->path; }

void SqliteDatabase::Transaction(const std::function<void()>& fn) { impl_->Write(fn); }

std::int64_t SqliteDatabase::CommitWorkload(const WorkloadInput& w) {
  std::int64_t id = 0;
  impl_->Write([&] {
    Statement& find = impl_->find_workload->Reset().Bind(1, w.hash);
    if (find.Step()) {
      id = find.Int(0);
      std::string structure = find.Text(4);
      find.Reset();
      if (structure != w.structure) {
        throw DatabaseError("workload hash collision: " + w.hash + " is already stored for a structurally different " +
                            "workload (" + impl_->path + "), or that workload's row is damaged");
      }
      return;
    }
    find.Reset();
    impl_->insert_workload->Reset()
        .Bind(1, w.hash)
        .Bind(2, w.name)
        .Bind(3, w.kind)
        .BindBlob(4, w.structure)
        .Bind(5, w.program)
        .Bind(6, NowSeconds())
        .Run();
    id = sqlite3_last_insert_rowid(impl_->conn.db);
  });
  return id;
}

std::int64_t SqliteDatabase::CommitRecords(const std::vector<TuningRecord>& records) {
  std::int64_t added = 0;
  double now = NowSeconds();
  impl_->Write([&] {
    std::map<std::string, std::int64_t> ids;
    std::map<std::string, std::int64_t> target_ids;
    std::set<std::int64_t> sessions;  // named by the batch: marked active
    for (std::size_t i = 0; i < records.size(); ++i) {
      const TuningRecord& r = records[i];
      // What db check calls damage is never written: an ok record without
      // a time has no median to rank by.
      if (r.status == RecordStatus::kOk && r.run_secs.empty()) {
        throw DatabaseError("record " + std::to_string(i) + " of the batch: status ok without a timing");
      }
      auto t = target_ids.find(r.target);
      if (t == target_ids.end()) t = target_ids.emplace(r.target, impl_->TargetId(r.target)).first;
      auto it = ids.find(r.workload_hash);
      if (it == ids.end()) {
        Statement& find = impl_->find_workload->Reset().Bind(1, r.workload_hash);
        if (!find.Step()) {
          find.Reset();
          throw DatabaseError("record for unknown workload " + r.workload_hash + " (commit the workload first)");
        }
        it = ids.emplace(r.workload_hash, find.Int(0)).first;
        find.Reset();
      }
      std::string run_secs = RunSecsJson(r.run_secs);
      impl_->insert_record->Reset()
          .Bind(1, it->second)
          .Bind(2, t->second)
          .Bind(3, r.trace)
          .Bind(4, run_secs)
          .Bind(5, r.Median())
          .Bind(6, std::string(StatusName(r.status)))
          .Bind(7, r.error)
          .Bind(9, r.created != 0 ? r.created : now)
          .Bind(10, r.hardware)
          .Bind(11, r.target_json)
          .Bind(12, r.args_info)
          .BindBlob(13, DedupeKey(r, run_secs));
      if (r.session_id != 0) impl_->insert_record->Bind(8, r.session_id);
      impl_->insert_record->Run();
      added += sqlite3_changes(impl_->conn.db);
      if (r.session_id != 0) sessions.insert(r.session_id);
    }
    if (impl_->mark_session_active) {
      for (std::int64_t id : sessions) impl_->mark_session_active->Reset().Bind(1, id).Bind(2, now).Run();
    }
  });
  return added;
}

std::vector<TuningRecord> SqliteDatabase::TopK(const std::string& workload_hash, const std::string& target, int k) {
  std::vector<TuningRecord> out;
  auto spelt = impl_->spellings.find(target);
  if (spelt == impl_->spellings.end()) {
    Statement& s = impl_->top_k->Reset().Bind(1, workload_hash).Bind(2, target).Bind(3, static_cast<std::int64_t>(k));
    while (s.Step()) out.push_back(impl_->RecordFrom(s));
    return out;
  }
  // One name read for several stored targets: the index orders each
  // target's records by median, not their union (asked by name, SQLite
  // sorted every record of the workload: 11 ms a query at 20,000), so the
  // k best of each are merged.
  if (!impl_->top_k_of_target_id) {
    impl_->top_k_of_target_id = std::make_unique<Statement>(
        impl_->conn.db,
        "SELECT " TUNEDB_RECORD_COLUMNS TUNEDB_RECORD_JOIN
        " WHERE w.hash = ?1 AND r.target_id = ?2 AND r.status = 'ok' ORDER BY r.median, r.id LIMIT ?3",
        impl_->path);
  }
  for (std::int64_t id : spelt->second) {
    Statement& s = impl_->top_k_of_target_id->Reset().Bind(1, workload_hash).Bind(2, id);
    s.Bind(3, static_cast<std::int64_t>(k));
    while (s.Step()) out.push_back(impl_->RecordFrom(s));
  }
  std::sort(out.begin(), out.end(), [](const TuningRecord& a, const TuningRecord& b) {
    return std::pair(a.Median(), a.id) < std::pair(b.Median(), b.id);
  });
  if (out.size() > static_cast<std::size_t>(k)) out.resize(static_cast<std::size_t>(k));
  return out;
}

std::vector<TuningRecord> SqliteDatabase::Records(const RecordQuery& q) {
  std::string sql = "SELECT " TUNEDB_RECORD_COLUMNS TUNEDB_RECORD_JOIN " WHERE r.id > ?1";
  if (q.workload_hash) sql += " AND w.hash = ?2";
  if (q.target) sql += " AND t.target = ?3";
  if (q.status) sql += " AND r.status = ?4";
  // No index on the commit time: SQLite tests it on the workload's rows as
  // it walks them, which costs little beside building the records (50,000
  // rows of 3.3 KB traces: 0.07 s; bench/RESULTS.md, session 55), and an
  // index cost every commit 6-21% (db_bench).
  if (q.created_within) sql += " AND r.created BETWEEN ?6 AND ?7";
  sql += " ORDER BY r.id LIMIT ?5";
  Statement s(impl_->conn.db, sql.c_str(), impl_->path);
  s.Bind(1, q.after_id);
  if (q.workload_hash) s.Bind(2, *q.workload_hash);
  if (q.target) s.Bind(3, *q.target);
  if (q.status) s.Bind(4, std::string(StatusName(*q.status)));
  s.Bind(5, q.limit);
  if (q.created_within) s.Bind(6, q.created_within->first).Bind(7, q.created_within->second);
  std::vector<TuningRecord> out;
  while (s.Step()) out.push_back(impl_->RecordFrom(s));
  return out;
}

std::optional<Workload> SqliteDatabase::FindWorkload(const std::string& hash) {
  Statement& s = impl_->find_workload->Reset().Bind(1, hash);
  if (!s.Step()) return std::nullopt;
  Workload w;
  w.id = s.Int(0);
  w.input = {s.Text(1), s.Text(2), s.Text(3), s.Text(4), s.Text(5)};
  s.Reset();
  return w;
}

std::vector<WorkloadStats> SqliteDatabase::Workloads() {
  std::vector<WorkloadStats> out;
  Statement s(impl_->conn.db,
              "SELECT w.id, w.hash, w.name, w.kind, w.structure, w.program, "
              "(SELECT COUNT(*) FROM records r WHERE r.workload_id = w.id), "
              "(SELECT COUNT(*) FROM records r WHERE r.workload_id = w.id AND r.status = 'ok') "
              "FROM workloads w ORDER BY w.id",
              impl_->path);
  while (s.Step()) {
    WorkloadStats st;
    st.workload.id = s.Int(0);
    st.workload.input = {s.Text(1), s.Text(2), s.Text(3), s.Text(4), s.Text(5)};
    st.records = s.Int(6);
    st.ok_records = s.Int(7);
    out.push_back(std::move(st));
  }
  Statement best(impl_->conn.db,
                 "SELECT t.target, MIN(r.median) FROM records r JOIN targets t ON t.id = r.target_id "
                 "WHERE r.workload_id = ?1 AND r.status = 'ok' GROUP BY t.target ORDER BY t.target",
                 impl_->path);
  for (WorkloadStats& st : out) {
    best.Reset().Bind(1, st.workload.id);
    while (best.Step()) st.best.emplace_back(best.Text(0), best.Double(1));
  }
  return out;
}

std::int64_t SqliteDatabase::Size() {
  Statement& s = impl_->count->Reset();
  s.Step();
  std::int64_t n = s.Int(0);
  s.Reset();
  return n;
}

std::vector<std::string> SqliteDatabase::Targets(const std::string& workload_hash) {
  Statement s(impl_->conn.db,
              "SELECT DISTINCT t.target" TUNEDB_RECORD_JOIN " WHERE w.hash = ?1 ORDER BY t.target",
              impl_->path);
  s.Bind(1, workload_hash);
  std::vector<std::string> out;
  while (s.Step()) out.push_back(s.Text(0));
  return out;
}

std::int64_t SqliteDatabase::StartSession(const Session& session) {
  std::int64_t id = 0;
  impl_->Write([&] {
    impl_->insert_session->Reset()
        .Bind(1, session.command)
        .Bind(2, session.host)
        .Bind(3, session.target)
        .Bind(4, session.strategy)
        .Bind(5, static_cast<std::int64_t>(session.seed))
        .Bind(6, session.trials)
        .Bind(7, session.started != 0 ? session.started : NowSeconds());
    if (impl_->version >= 2) impl_->insert_session->Bind(8, session.owner);
    impl_->insert_session->Run();
    id = sqlite3_last_insert_rowid(impl_->conn.db);
  });
  return id;
}

void SqliteDatabase::EndSession(std::int64_t id, double ended) {
  impl_->Write([&] { impl_->end_session->Reset().Bind(1, id).Bind(2, ended).Run(); });
}

std::vector<Session> SqliteDatabase::Sessions() {
  // A reader of an older file reads the columns it has, and what a session
  // from before each added one has: no owner, no sign of life known.
  std::string sql = std::string("SELECT id, command, host, target, strategy, seed, trials, started, ") +
                    "COALESCE(ended, 0), " + (impl_->version >= 2 ? "COALESCE(owner, '')" : "''") + ", " +
                    (impl_->version >= 3 ? "COALESCE(last_active, 0)" : "0") + " FROM sessions ORDER BY id";
  Statement s(impl_->conn.db, sql.c_str(), impl_->path);
  std::vector<Session> out;
  while (s.Step()) {
    Session x;
    x.id = s.Int(0);
    x.command = s.Text(1);
    x.host = s.Text(2);
    x.target = s.Text(3);
    x.strategy = s.Text(4);
    x.seed = static_cast<std::uint64_t>(s.Int(5));
    x.trials = s.Int(6);
    x.started = s.Double(7);
    x.ended = s.Double(8);
    x.owner = s.Text(9);
    x.last_active = s.Double(10);
    out.push_back(x);
  }
  return out;
}

bool SqliteDatabase::ClaimSession(std::int64_t id, const std::string& expected, const std::string& owner) {
  bool claimed = false;
  impl_->Write([&] {
    // A tuner taking the session over is alive now: a sign of life.
    Statement s(impl_->conn.db,
                impl_->version >= 3 ? "UPDATE sessions SET owner = NULLIF(?3, ''), last_active = ?4 WHERE id = ?1 AND "
                                      "ended IS NULL AND COALESCE(owner, '') = ?2"
                                    : "UPDATE sessions SET owner = NULLIF(?3, '') WHERE id = ?1 AND ended IS NULL AND "
                                      "COALESCE(owner, '') = ?2",
                impl_->path);
    s.Bind(1, id).Bind(2, expected).Bind(3, owner);
    if (impl_->version >= 3) s.Bind(4, NowSeconds());
    s.Run();
    claimed = sqlite3_changes(impl_->conn.db) == 1;
  });
  return claimed;
}

bool SqliteDatabase::AddTimings(std::int64_t record_id, const std::vector<double>& run_secs) {
  bool found = false;
  impl_->Write([&] {
    // Read and written in one transaction: another tuner adding timings to
    // the same record meanwhile waits, and neither's are lost.
    Statement get(impl_->conn.db, "SELECT run_secs FROM records WHERE id = ?1 AND status = 'ok'", impl_->path);
    get.Bind(1, record_id);
    if (!get.Step()) return;
    TuningRecord r;
    r.run_secs = WithLaterTimings(record_id, ParseRunSecs(get.Text(0)), run_secs);
    Statement set(impl_->conn.db, "UPDATE records SET run_secs = ?2, median = ?3 WHERE id = ?1", impl_->path);
    set.Bind(1, record_id).Bind(2, RunSecsJson(r.run_secs)).Bind(3, r.Median()).Run();
    found = true;
  });
  return found;
}

std::int64_t SqliteDatabase::SaveModel(const StoredModel& m) {
  std::int64_t id = 0;
  impl_->Write([&] {
    impl_->insert_model->Reset()
        .Bind(1, static_cast<std::int64_t>(m.feature_version))
        .Bind(2, m.objective)
        .BindBlob(3, m.blob)
        .Bind(4, m.training_rows)
        .Bind(5, m.metrics)
        .Bind(6, m.created != 0 ? m.created : NowSeconds())
        .Run();
    id = sqlite3_last_insert_rowid(impl_->conn.db);
  });
  return id;
}

namespace {

// A model's row without its blob: id, feature_version, objective,
// training_rows, metrics, created (the columns of Models and LoadModel).
StoredModel ModelFrom(Statement& s) {
  StoredModel m;
  m.id = s.Int(0);
  m.feature_version = static_cast<int>(s.Int(1));
  m.objective = s.Text(2);
  m.training_rows = s.Int(3);
  m.metrics = s.Text(4);
  m.created = s.Double(5);
  return m;
}

}  // namespace

std::vector<StoredModel> SqliteDatabase::Models() {
  Statement s(impl_->conn.db,
              "SELECT id, feature_version, objective, training_rows, metrics, created FROM models ORDER BY id DESC",
              impl_->path);
  std::vector<StoredModel> out;
  while (s.Step()) out.push_back(ModelFrom(s));
  return out;
}

std::optional<StoredModel> SqliteDatabase::LoadModel(std::int64_t id) {
  std::string sql =
      "SELECT id, feature_version, objective, training_rows, metrics, created, blob FROM models " +
      std::string(id == 0 ? "ORDER BY id DESC LIMIT 1" : "WHERE id = ?1");
  Statement s(impl_->conn.db, sql.c_str(), impl_->path);
  if (id != 0) s.Bind(1, id);
  if (!s.Step()) return std::nullopt;
  StoredModel m = ModelFrom(s);
  m.blob = s.Text(6);
  return m;
}

std::string SqliteDatabase::IntegrityCheck() {
  Statement s(impl_->conn.db, "PRAGMA integrity_check", impl_->path);
  std::string out;
  while (s.Step()) out += (out.empty() ? "" : "\n") + s.Text(0);
  return out;
}

std::vector<SqliteDatabase::DamagedRecord> SqliteDatabase::DamagedRecords() {
  std::vector<DamagedRecord> out;
  Statement s(impl_->conn.db,
              "SELECT r.id, r.status, r.run_secs, r.median, w.id IS NULL, t.id IS NULL FROM records r "
              "LEFT JOIN workloads w ON w.id = r.workload_id LEFT JOIN targets t ON t.id = r.target_id ORDER BY r.id",
              impl_->path);
  while (s.Step()) {
    TuningRecord r;
    r.id = s.Int(0);
    std::string status = s.Text(1), run_secs = s.Text(2);
    auto damaged = [&](const std::string& what) { out.push_back({r.id, what}); };
    if (s.Int(4)) damaged("its workload row is missing");
    if (s.Int(5)) damaged("its target row is missing");
    try {
      r.status = ParseStatus(status);
    } catch (const DatabaseError& e) {
      damaged(e.what());
      continue;
    }
    nlohmann::json secs = nlohmann::json::parse(run_secs, nullptr, false);
    auto seconds = [](const nlohmann::json& x) {
      return x.is_number() && x.get<double>() > 0 && std::isfinite(x.get<double>());
    };
    if (!secs.is_array() || !std::all_of(secs.begin(), secs.end(), seconds)) {
      damaged("run_secs is not a list of positive seconds: '" + run_secs.substr(0, 60) + "'");
      continue;
    }
    r.run_secs = secs.get<std::vector<double>>();
    if (r.status == RecordStatus::kOk && r.run_secs.empty()) damaged("status ok without a timing");
    double median = r.Median(), stored = s.Double(3);
    bool same = std::isinf(median) ? std::isinf(stored) : std::abs(stored - median) <= 1e-12 * median;
    if (!same) {
      char text[96];
      std::snprintf(text, sizeof text, "its median column is %.9g s where its run_secs' median is %.9g s", stored, median);
      damaged(text);
    }
  }
  return out;
}

}  // namespace tunedb::db
