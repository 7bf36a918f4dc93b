// SQLite-specific behavior: several processes, crashes, schema versions.
#include "db/sqlite_database.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tests/db/damage.h"

namespace tunedb::db {
namespace {

std::string FreshPath(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid()) + ".sqlite";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

WorkloadInput W(const std::string& hash) { return {hash, "w", "tunedb", "s" + hash, "{}"}; }

TuningRecord R(const std::string& trace, double secs) {
  TuningRecord r;
  r.workload_hash = "1";
  r.target = "llvm";
  r.trace = trace;
  r.run_secs = {secs};
  return r;
}

TEST(SqliteDatabaseTest, SeveralWriterProcessesLoseNothing) {
  std::string path = FreshPath("writers");
  SqliteDatabase(path).CommitWorkload(W("1"));
  constexpr int kWriters = 4, kBatches = 25, kPerBatch = 8;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    if (pid == 0) {
      try {
        SqliteDatabase db(path);
        for (int b = 0; b < kBatches; ++b) {
          std::vector<TuningRecord> batch;
          for (int i = 0; i < kPerBatch; ++i) {
            batch.push_back(R("w" + std::to_string(w) + "b" + std::to_string(b) + "i" + std::to_string(i), 1.0 + i));
          }
          db.CommitRecords(batch);
        }
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed (database locked?)";
  }
  SqliteDatabase db(path);
  EXPECT_EQ(db.Size(), kWriters * kBatches * kPerBatch);
  EXPECT_EQ(db.IntegrityCheck(), "ok");
}

// Two tunes started together on a new database file: the first open to
// switch the file to WAL needs it to itself, and SQLite does not wait on the
// busy handler for that. Here another connection holds a write transaction
// on a new file (in its first journal mode, as a second tune would be at
// that moment) for 200 ms; the open used to fail at once with "database is
// locked", and now waits for it.
TEST(SqliteDatabaseTest, AnOpenWaitsWhileAnotherConnectionCreatesTheFile) {
  std::string path = FreshPath("created_at_once");
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE; CREATE TABLE elsewhere(x)", nullptr, nullptr, nullptr), SQLITE_OK);
  std::thread committer([other] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  });
  std::string error;
  try {
    SqliteDatabase db(path);
    db.CommitWorkload(W("1"));
    db.CommitRecords({R("t", 1.0)});
    EXPECT_EQ(db.Size(), 1);
  } catch (const std::exception& e) {
    error = e.what();
  }
  committer.join();
  sqlite3_close(other);
  EXPECT_EQ(error, "");
  sqlite3* check = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &check), SQLITE_OK);
  char** rows = nullptr;
  int n_rows = 0, n_cols = 0;
  ASSERT_EQ(sqlite3_get_table(check, "PRAGMA journal_mode", &rows, &n_rows, &n_cols, nullptr), SQLITE_OK);
  ASSERT_EQ(n_rows, 1);
  EXPECT_STREQ(rows[1], "wal");
  sqlite3_free_table(rows);
  sqlite3_close(check);
}

// Processes that open one new file at the same moment (two tunes started
// together) each find it empty, and each runs the schema's migrations. A
// migration must look at the version again inside its transaction: one
// that set version 1 after another process had already reached version 2
// sent that process's next step into "duplicate column name: owner".
TEST(SqliteDatabaseTest, ProcessesCreatingOneFileAtOnceAllOpenIt) {
  constexpr int kRounds = 30, kProcesses = 4;
  int failed_rounds = 0;
  std::string first_error;
  for (int round = 0; round < kRounds; ++round) {
    std::string path = FreshPath("created_together_" + std::to_string(round));
    int go[2], errors[2];
    ASSERT_EQ(::pipe(go), 0);
    ASSERT_EQ(::pipe(errors), 0);
    std::vector<pid_t> children;
    for (int p = 0; p < kProcesses; ++p) {
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(go[1]);
        char byte;
        (void)!::read(go[0], &byte, 1);  // returns when the parent closes its end: all start together
        try {
          SqliteDatabase db(path);
          db.CommitWorkload(W("1"));
        } catch (const std::exception& e) {
          std::string message = std::string(e.what()) + "\n";
          (void)!::write(errors[1], message.data(), message.size());
          ::_exit(1);
        }
        ::_exit(0);
      }
      children.push_back(pid);
    }
    ::close(go[0]);
    ::close(errors[1]);
    ::close(go[1]);
    bool round_failed = false;
    for (pid_t pid : children) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      round_failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    char buffer[512];
    ssize_t n = ::read(errors[0], buffer, sizeof buffer);
    ::close(errors[0]);
    if (round_failed) {
      ++failed_rounds;
      if (first_error.empty() && n > 0) first_error.assign(buffer, static_cast<std::size_t>(n));
      continue;
    }
    SqliteDatabase db(path);
    EXPECT_EQ(db.Workloads().size(), 1u);
  }
  EXPECT_EQ(failed_rounds, 0) << "first error: " << first_error;
}

TEST(SqliteDatabaseTest, KilledWriterLosesOnlyItsOpenTransaction) {
  std::string path = FreshPath("killed");
  SqliteDatabase(path).CommitWorkload(W("1"));
  int acks[2];
  ASSERT_EQ(::pipe(acks), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(acks[0]);
    SqliteDatabase db(path);
    for (int i = 0;; ++i) {
      db.CommitRecords({R("trace" + std::to_string(i), 1.0)});
      // Acknowledge only after the commit returned.
      if (::write(acks[1], &i, sizeof i) != sizeof i) ::_exit(2);
    }
  }
  ::close(acks[1]);
  int last = -1, value = 0;
  while (last < 200 && ::read(acks[0], &value, sizeof value) == sizeof value) last = value;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  while (::read(acks[0], &value, sizeof value) == sizeof value) last = value;
  ::close(acks[0]);
  SqliteDatabase db(path);
  EXPECT_EQ(db.IntegrityCheck(), "ok");
  RecordQuery q;
  q.limit = 1000000;
  std::set<std::string> traces;
  for (const TuningRecord& r : db.Records(q)) traces.insert(r.trace);
  for (int i = 0; i <= last; ++i) EXPECT_TRUE(traces.count("trace" + std::to_string(i))) << "lost acknowledged record " << i;
}

using testing::Damage;

TEST(SqliteDatabaseTest, DamagedRecordsAreFoundAndNamed) {
  std::string path = FreshPath("damaged");
  {
    SqliteDatabase db(path);
    db.CommitWorkload(W("1"));
    TuningRecord failed = R("t5", 0);
    failed.run_secs.clear();
    failed.status = RecordStatus::kBuildError;
    db.CommitRecords({R("t1", 1.0), R("t2", 2.0), R("t3", 3.0), R("t4", 4.0), failed});
    EXPECT_TRUE(db.DamagedRecords().empty());
  }
  // SQLite stores no checksums: a changed byte reads back as a new value,
  // and its own check still passes.
  Damage(path, "UPDATE records SET status = 'oj' WHERE id = 2");
  Damage(path, "UPDATE records SET run_secs = '[3.0e-3, x]' WHERE id = 3");
  Damage(path, "UPDATE records SET median = 1e-300 WHERE id = 4");
  Damage(path, "PRAGMA foreign_keys = OFF; UPDATE records SET workload_id = 77 WHERE id = 5");
  SqliteDatabase db(path);
  EXPECT_EQ(db.IntegrityCheck(), "ok");
  std::vector<SqliteDatabase::DamagedRecord> damaged = db.DamagedRecords();
  ASSERT_EQ(damaged.size(), 4u);
  EXPECT_EQ(damaged[0].id, 2);
  EXPECT_EQ(damaged[0].what, "unknown record status 'oj' (expected ok, build_error, run_error, timeout or wrong_result)");
  EXPECT_EQ(damaged[1].id, 3);
  EXPECT_EQ(damaged[1].what, "run_secs is not a list of positive seconds: '[3.0e-3, x]'");
  EXPECT_EQ(damaged[2].id, 4);
  EXPECT_EQ(damaged[2].what, "its median column is 1e-300 s where its run_secs' median is 4 s");
  EXPECT_EQ(damaged[3].id, 5);
  EXPECT_EQ(damaged[3].what, "its workload row is missing");
  // Reading the damaged status names the file and the record.
  RecordQuery all;
  try {
    db.Records(all);
    ADD_FAILURE() << "a record with an unknown status was read";
  } catch (const DatabaseError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": record 2: unknown record status 'oj' (expected ok, build_error, "
                                            "run_error, timeout or wrong_result)");
  }
}

TEST(SqliteDatabaseTest, NewerSchemaIsRefusedClearly) {
  std::string path = FreshPath("newer");
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  }
  try {
    SqliteDatabase db(path);
    FAIL();
  } catch (const DatabaseError& e) {
    EXPECT_EQ(std::string(e.what()), "database " + path +
                                         " was written by a newer tunedb (schema version 99; this build understands up "
                                         "to " + std::to_string(SqliteDatabase::kSchemaVersion) + ")");
  }
}

// A file of an older schema version, made by dropping the columns later
// versions added: sessions' owners (version 2) and last signs of life (3).
void MakeVersion(const std::string& path, int version) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  std::string sql = "ALTER TABLE sessions DROP COLUMN last_active; ";
  if (version < 2) sql += "ALTER TABLE sessions DROP COLUMN owner; ";
  sql += "PRAGMA user_version = " + std::to_string(version);
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_close(raw);
}

int UserVersion(const std::string& path) {
  sqlite3* raw = nullptr;
  if (sqlite3_open(path.c_str(), &raw) != SQLITE_OK) return -1;
  sqlite3_stmt* st = nullptr;
  int version = -1;
  if (sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    version = sqlite3_column_int(st, 0);
  }
  sqlite3_finalize(st);
  sqlite3_close(raw);
  return version;
}

TEST(SqliteDatabaseTest, AVersion1FileIsReadAsItIsAndUpgradedByAWriter) {
  std::string path = FreshPath("version1");
  {
    SqliteDatabase db(path);
    db.CommitWorkload(W("1"));
    db.CommitRecords({R("t1", 2.0)});
    Session s;
    s.command = "tunedb tune --workload 1";
    s.owner = "gone/1/1/1";
    db.StartSession(s);
  }
  MakeVersion(path, 1);
  {
    // A reader cannot add the column, and reads the sessions without owners.
    SqliteDatabase reader(path, SqliteDatabase::OpenMode::kReadOnly);
    EXPECT_EQ(reader.Size(), 1);
    ASSERT_EQ(reader.Sessions().size(), 1u);
    EXPECT_EQ(reader.Sessions()[0].command, "tunedb tune --workload 1");
    EXPECT_EQ(reader.Sessions()[0].owner, "");
  }
  SqliteDatabase db(path);
  EXPECT_EQ(db.Size(), 1);
  ASSERT_EQ(db.Sessions().size(), 1u);
  EXPECT_EQ(db.Sessions()[0].owner, "") << "a session from before owners has none";
  EXPECT_TRUE(db.ClaimSession(db.Sessions()[0].id, "", "me/2/2/2"));
  EXPECT_EQ(db.Sessions()[0].owner, "me/2/2/2");
  EXPECT_EQ(UserVersion(path), SqliteDatabase::kSchemaVersion);
}

// A file from before sessions kept their last sign of life: a reader reads
// it as not known (such a session counts as running, as before); a writer
// adds the column, and the session's next batch of records fills it.
TEST(SqliteDatabaseTest, AVersion2FileHasSessionsWhoseLastSignOfLifeIsNotKnown) {
  std::string path = FreshPath("version2");
  std::int64_t id = 0;
  {
    SqliteDatabase db(path);
    db.CommitWorkload(W("1"));
    Session s;
    s.command = "tunedb tune --workload 1";
    s.owner = "elsewhere/1/1/1";
    id = db.StartSession(s);
  }
  MakeVersion(path, 2);
  {
    SqliteDatabase reader(path, SqliteDatabase::OpenMode::kReadOnly);
    ASSERT_EQ(reader.Sessions().size(), 1u);
    EXPECT_EQ(reader.Sessions()[0].owner, "elsewhere/1/1/1");
    EXPECT_EQ(reader.Sessions()[0].last_active, 0.0);
    EXPECT_TRUE(SessionMayBeRunning(reader.Sessions()[0], NowSeconds() + 1e6));
  }
  SqliteDatabase db(path);
  EXPECT_EQ(UserVersion(path), SqliteDatabase::kSchemaVersion);
  EXPECT_EQ(db.Sessions()[0].last_active, 0.0);
  TuningRecord r = R("t1", 2.0);
  r.session_id = id;
  double before = NowSeconds();
  db.CommitRecords({r});
  EXPECT_GE(db.Sessions()[0].last_active, before);
}

TEST(SqliteDatabaseTest, NotADatabaseIsAClearError) {
  std::string path = FreshPath("garbage");
  std::ofstream(path) << std::string(4096, 'x');
  try {
    SqliteDatabase db(path);
    FAIL();
  } catch (const DatabaseError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("file is not a database"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(is it an SQLite database?)"), std::string::npos) << e.what();
  }
  try {
    SqliteDatabase db(path, SqliteDatabase::OpenMode::kReadOnly);
    FAIL();
  } catch (const DatabaseError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": file is not a database (is it an SQLite database?)");
  }
}

// Read-only: everything reads, nothing is written (not even the journal
// mode, which lives in the file), and a write says why it failed.
TEST(SqliteDatabaseTest, ReadOnlyReadsAndRefusesWrites) {
  std::string path = FreshPath("read_only");
  {
    SqliteDatabase db(path);
    db.CommitWorkload(W("1"));
    db.CommitRecords({R("t1", 2.0), R("t2", 1.0)});
  }
  std::filesystem::file_time_type written = std::filesystem::last_write_time(path);
  SqliteDatabase db(path, SqliteDatabase::OpenMode::kReadOnly);
  EXPECT_EQ(db.Size(), 2);
  ASSERT_EQ(db.TopK("1", "llvm", 1).size(), 1u);
  EXPECT_EQ(db.TopK("1", "llvm", 1)[0].trace, "t2");
  try {
    db.CommitRecords({R("t3", 3.0)});
    FAIL() << "a read-only database took a write";
  } catch (const DatabaseError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": attempt to write a readonly database (tunedb writes to this database: "
                                            "check the permissions of the file and its directory)");
  }
  EXPECT_EQ(db.Size(), 2);
  EXPECT_EQ(std::filesystem::last_write_time(path), written);

  std::string empty = FreshPath("read_only_empty");
  std::ofstream(empty).close();
  try {
    SqliteDatabase none(empty, SqliteDatabase::OpenMode::kReadOnly);
    FAIL();
  } catch (const DatabaseError& e) {
    EXPECT_EQ(std::string(e.what()), "database " + empty + " has schema version 0 (it holds no tunedb database)");
  }
  std::string missing = FreshPath("read_only_missing");
  EXPECT_THROW(SqliteDatabase(missing, SqliteDatabase::OpenMode::kReadOnly), DatabaseError);
  EXPECT_FALSE(std::filesystem::exists(missing)) << "a read-only open created the file";
}

// Inspecting a database (tunedb best, db stats, ...) leaves nothing beside
// it: no empty -wal and -shm files, and the file itself unchanged. A
// read-only file is still read (without that cleanup).
TEST(SqliteDatabaseTest, ReadOnlyOpensLeaveNoFilesBehind) {
  std::string path = FreshPath("read_only_clean");
  {
    SqliteDatabase db(path);
    db.CommitWorkload(W("1"));
    db.CommitRecords({R("t1", 2.0)});
  }
  ASSERT_FALSE(std::filesystem::exists(path + "-wal"));
  std::filesystem::file_time_type written = std::filesystem::last_write_time(path);
  {
    SqliteDatabase db(path, SqliteDatabase::OpenMode::kReadOnly);
    EXPECT_EQ(db.Size(), 1);
    EXPECT_THROW(db.CommitRecords({R("t2", 1.0)}), DatabaseError);
  }
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
  EXPECT_EQ(std::filesystem::last_write_time(path), written);

  // Two readers at once, and a writer beside them: each sees the others' data.
  {
    SqliteDatabase writer(path);
    SqliteDatabase reader1(path, SqliteDatabase::OpenMode::kReadOnly);
    writer.CommitRecords({R("t3", 3.0)});
    SqliteDatabase reader2(path, SqliteDatabase::OpenMode::kReadOnly);
    EXPECT_EQ(reader1.Size(), 2);
    EXPECT_EQ(reader2.Size(), 2);
  }
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

// Runs `body` where file permissions bind: in this process, or, for root
// (whom they do not bind), in a child process of user nobody. Returns
// body's result, or -1 when the child could not become nobody.
int RunUnprivileged(const std::function<int()>& body) {
  if (::geteuid() != 0) return body();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(255);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) != 255 ? WEXITSTATUS(status) : -1;
}

// A database on a read-only mount (here: a read-only directory and file):
// SQLite cannot create the shared-memory file a reader of a WAL database
// needs, so the file is read as immutable. Writes are refused, and a WAL
// file with pages in it (which only SQLite's shared memory could make
// sense of) is a clear error rather than a read that misses them.
TEST(SqliteDatabaseTest, ADatabaseInAReadOnlyDirectoryIsRead) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / ("read_only_dir_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string path = (dir / "tuning?#%.sqlite").string();  // URI characters in the name
  {
    SqliteDatabase db(path);
    db.CommitWorkload(W("1"));
    db.CommitRecords({R("t1", 2.0), R("t2", 1.0)});
    TuningRecord misnamed = R("t0", 0.5);  // as an older server stored TVM's spelling
    misnamed.target = "llvm -keys=cpu";
    db.CommitRecords({misnamed});
  }
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  int read = RunUnprivileged([&] {
    try {
      SqliteDatabase db(path, SqliteDatabase::OpenMode::kReadOnly);
      // The record stored under another spelling is found by the one name.
      std::vector<TuningRecord> best = db.TopK("1", "llvm", 3);
      if (db.Size() != 3 || best.size() != 3 || best[0].trace != "t0" || best[0].target != "llvm") return 1;
      try {
        db.CommitRecords({R("t3", 3.0)});
        return 2;
      } catch (const DatabaseError&) {
      }
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 3;
    }
  });
  if (read == -1) {
    fs::permissions(dir, fs::perms::owner_all);
    fs::remove_all(dir);
    GTEST_SKIP() << "root here cannot become user nobody, for whom permissions bind";
  }
  EXPECT_EQ(read, 0) << "1: wrong contents, 2: a write was taken, 3: the open failed";
  EXPECT_FALSE(fs::exists(path + "-shm"));

  fs::permissions(dir, fs::perms::owner_all);
  std::ofstream(path + "-wal") << std::string(4096, 'x');
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  int refused = RunUnprivileged([&] {
    try {
      SqliteDatabase db(path, SqliteDatabase::OpenMode::kReadOnly);
      return 1;
    } catch (const DatabaseError& e) {
      return std::string(e.what()).find("needs its -shm file") != std::string::npos ? 0 : 2;
    }
  });
  EXPECT_EQ(refused, 0) << "1: read past a WAL file with pages, 2: an unclear error";
  fs::permissions(dir, fs::perms::owner_all);
  fs::remove_all(dir);
}

TEST(SqliteDatabaseTest, ReopenKeepsEverything) {
  std::string path = FreshPath("reopen");
  {
    SqliteDatabase db(path);
    db.CommitWorkload(W("1"));
    db.CommitRecords({R("a", 2.0), R("b", 1.0)});
  }
  SqliteDatabase db(path);
  EXPECT_EQ(db.Size(), 2);
  EXPECT_EQ(db.TopK("1", "llvm", 1)[0].trace, "b");
}

// An older server stored records under the target string its client sent.
// Lookups now read every spelling as one name (CanonicalTarget), so the
// next writer to open the file brings those records under it.
TEST(SqliteDatabaseTest, RecordsStoredUnderAnotherSpellingOfATargetJoinItsName) {
  std::string path = FreshPath("spellings");
  const std::string name = "llvm -mcpu=znver4 -num-cores=2";
  auto at = [](const std::string& target, const std::string& trace, double secs) {
    TuningRecord r = R(trace, secs);
    r.target = target;
    return r;
  };
  {
    SqliteDatabase db(path);
    db.CommitWorkload(W("1"));
    db.CommitRecords({at(name, "a", 3.0), at("llvm -keys=cpu -mcpu=znver4 -num-cores=2", "b", 2.0),
                      at("llvm -num-cores=2 -mcpu=znver4", "c", 1.0), at("llvm -num-cores=4 -mcpu=znver4", "d", 4.0),
                      at("llvm  -num-cores=4  -mcpu=znver4", "e", 5.0),
                      // one measurement posted in two spellings: two records
                      at("llvm -num-cores=2 -mcpu=znver4", "a", 3.0),
                      // timed again since: its key is not what its timings give
                      at("llvm -keys=cpu -mcpu=znver4 -num-cores=2", "f", 6.0)});
    EXPECT_EQ(db.Targets("1").size(), 5u);
    std::vector<TuningRecord> f = db.TopK("1", "llvm -keys=cpu -mcpu=znver4 -num-cores=2", 2);
    ASSERT_EQ(f.size(), 2u);
    EXPECT_TRUE(db.AddTimings(f[1].id, {6.5}));
  }
  const std::vector<std::string> canonical = {name, "llvm -mcpu=znver4 -num-cores=4"};
  {
    // A reader answers by the canonical names too, without renaming.
    SqliteDatabase reader(path, SqliteDatabase::OpenMode::kReadOnly);
    EXPECT_EQ(reader.Targets("1"), canonical);
    // Three stored targets read as one, their best merged, fastest first.
    std::vector<TuningRecord> best = reader.TopK("1", name, 10);
    std::vector<std::string> traces;
    for (const TuningRecord& r : best) traces.push_back(r.trace);
    EXPECT_EQ(traces, (std::vector<std::string>{"c", "b", "a", "a", "f"}));
    EXPECT_LT(best[2].id, best[3].id) << "equal times in the order they were added";
    EXPECT_EQ(best[0].target, name);
    EXPECT_EQ(reader.TopK("1", name, 2).size(), 2u);
    RecordQuery four;
    four.target = "llvm -mcpu=znver4 -num-cores=4";
    EXPECT_EQ(reader.Records(four).size(), 2u);
    std::vector<WorkloadStats> listed = reader.Workloads();
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].best, (std::vector<std::pair<std::string, double>>{{name, 1.0}, {canonical[1], 4.0}}));
    EXPECT_EQ(reader.IntegrityCheck(), "ok");
  }
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* count = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT COUNT(*) FROM targets", -1, &count, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(count), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(count, 0), 5) << "a reader changes nothing in the file";
    sqlite3_finalize(count);
    sqlite3_close(raw);
  }
  SqliteDatabase db(path);
  EXPECT_EQ(db.Size(), 7);
  EXPECT_EQ(db.Targets("1"), canonical);
  std::vector<TuningRecord> best = db.TopK("1", name, 10);
  ASSERT_EQ(best.size(), 5u);
  EXPECT_EQ(best[0].trace, "c");
  EXPECT_EQ(best[0].target, name);
  EXPECT_EQ(db.TopK("1", "llvm -mcpu=znver4 -num-cores=4", 5).size(), 2u);
  // The same records posted again in their old spellings (which the server
  // stores under the canonical name) are duplicates, as before the renaming;
  // the record timed again since keeps the key it was committed with.
  EXPECT_EQ(db.CommitRecords({at(name, "a", 3.0), at(name, "b", 2.0), at(name, "c", 1.0), at(canonical[1], "d", 4.0),
                              at(canonical[1], "e", 5.0)}),
            0);
  EXPECT_EQ(db.CommitRecords({at(name, "f", 6.0)}), 1);
  EXPECT_EQ(db.IntegrityCheck(), "ok");
}

TEST(SqliteDatabaseTest, TransactionsCommitAllOrNothing) {
  std::string path = FreshPath("txn");
  SqliteDatabase db(path);
  db.CommitWorkload(W("1"));
  EXPECT_THROW(db.Transaction([&] {
    db.CommitRecords({R("a", 1.0)});
    throw DatabaseError("stop");
  }),
               DatabaseError);
  EXPECT_EQ(db.Size(), 0);
}

// What `db check` reports as damage is refused on the way in, and the
// batch it came in is not half stored.
TEST(SqliteDatabaseTest, AnOkRecordWithoutATimingIsRefused) {
  SqliteDatabase db(FreshPath("untimed"));
  db.CommitWorkload(W("1"));
  TuningRecord untimed = R("b", 1.0);
  untimed.run_secs.clear();
  try {
    db.CommitRecords({R("a", 1.0), untimed});
    FAIL() << "expected an error";
  } catch (const DatabaseError& e) {
    EXPECT_STREQ(e.what(), "record 1 of the batch: status ok without a timing");
  }
  EXPECT_EQ(db.Size(), 0);
  untimed.status = RecordStatus::kBuildError;  // a failure has no timing to give
  EXPECT_EQ(db.CommitRecords({untimed}), 1);
}

}  // namespace
}  // namespace tunedb::db
