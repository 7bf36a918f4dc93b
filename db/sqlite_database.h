// The tuning database in one SQLite file.
//
// - Schema versions through PRAGMA user_version; opening a file written by a
//   newer tunedb is refused with a clear error, an older one is migrated.
// - WAL journal, a busy timeout, and every write in a BEGIN IMMEDIATE
//   transaction retried while another process holds the lock, so several
//   tuners and a server share one file and no "database is locked" reaches
//   a user.
// - top_k reads a partial index on (workload, target, median) over ok
//   records: logarithmic in the number of records.
// - Statements are prepared once and owned by RAII wrappers; sqlite3.h stays
//   inside the .cc.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "db/database.h"

namespace tunedb::db {

class SqliteDatabase : public Database {
 public:
  static constexpr int kSchemaVersion = 3;

  // kReadOnly opens an existing file without changing what it holds, so
  // that a database on a read-only file or mount can be read; writes then
  // fail.
  // Where the file and its directory are writable it leaves no -wal and
  // -shm files behind; on a read-only directory it reads the file as
  // immutable (refused if a WAL file there holds pages).
  enum class OpenMode { kReadWrite, kReadOnly };

  // Opens the file (kReadWrite creates it if needed). Throws DatabaseError
  // naming the file.
  explicit SqliteDatabase(const std::string& path, OpenMode mode = OpenMode::kReadWrite);
  ~SqliteDatabase() override;

  std::int64_t CommitWorkload(const WorkloadInput& workload) override;
  std::int64_t CommitRecords(const std::vector<TuningRecord>& records) override;
  std::vector<TuningRecord> TopK(const std::string& workload_hash, const std::string& target, int k) override;
  std::vector<TuningRecord> Records(const RecordQuery& query) override;
  std::optional<Workload> FindWorkload(const std::string& hash) override;
  std::vector<WorkloadStats> Workloads() override;
  std::int64_t Size() override;
  std::vector<std::string> Targets(const std::string& workload_hash) override;
  std::int64_t StartSession(const Session& session) override;
  void EndSession(std::int64_t id, double ended) override;
  std::vector<Session> Sessions() override;
  bool ClaimSession(std::int64_t id, const std::string& expected, const std::string& owner) override;
  bool AddTimings(std::int64_t record_id, const std::vector<double>& run_secs) override;
  std::int64_t SaveModel(const StoredModel& model) override;
  std::vector<StoredModel> Models() override;
  std::optional<StoredModel> LoadModel(std::int64_t id) override;

  // Runs fn inside one BEGIN IMMEDIATE transaction (used by imports, which
  // must commit all or nothing). Nested calls join the outer transaction.
  void Transaction(const std::function<void()>& fn) override;

  // "ok" or SQLite's integrity_check report.
  std::string IntegrityCheck();

  // A record this layer cannot read back as it was written. SQLite keeps no
  // checksums of what it stores, so a flipped byte inside a page passes
  // IntegrityCheck and reads back as a different value.
  struct DamagedRecord {
    std::int64_t id = 0;
    std::string what;  // e.g. "its workload row is missing"
  };
  // Every record whose status is not a status name, whose run_secs is not a
  // list of positive finite seconds, whose median column is not the median
  // of its run_secs (TopK orders by that column), or whose workload or
  // target row is missing (the record would be invisible). Ascending by id.
  std::vector<DamagedRecord> DamagedRecords();

  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tunedb::db
