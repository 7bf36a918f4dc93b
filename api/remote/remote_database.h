// A tuning database on a tunedb server: the db::Database interface over the
// REST API, so that `tunedb tune --db http://HOST:PORT` tunes into a shared
// database from any machine (warm start, commits and models go through the
// server).
//
// Each call is one HTTP request on a kept-alive connection (reconnected
// when the server closed it), except CommitRecords, which splits a large
// batch into requests within the limits the server's health route gives:
// each request is committed on its own, so a failure part way leaves the
// requests before it stored (committing the batch again adds only the
// rest: the server skips duplicates). A server that goes away after its
// first answer is waited for (SetReconnectWait). Failures - the server
// unreachable, an error answer - throw db::DatabaseError naming the URL and
// the server's message.
//
// Thread-safety: one RemoteDatabase per thread, as for every Database.
#pragma once

#include <memory>
#include <string>

#include "db/database.h"

namespace tunedb::api {

class RemoteDatabase : public db::Database {
 public:
  // url: "http://host:port"; token: for the write routes (may be empty).
  RemoteDatabase(const std::string& url, std::string token);
  ~RemoteDatabase() override;

  std::int64_t CommitWorkload(const db::WorkloadInput& workload) override;
  std::int64_t CommitRecords(const std::vector<db::TuningRecord>& records) override;
  std::vector<db::TuningRecord> TopK(const std::string& workload_hash, const std::string& target, int k) override;
  std::vector<db::TuningRecord> Records(const db::RecordQuery& query) override;
  std::optional<db::Workload> FindWorkload(const std::string& hash) override;
  std::vector<db::WorkloadStats> Workloads() override;
  std::int64_t Size() override;
  std::vector<std::string> Targets(const std::string& workload_hash) override;

  std::int64_t StartSession(const db::Session& session) override;
  void EndSession(std::int64_t id, double ended) override;
  std::vector<db::Session> Sessions() override;
  bool ClaimSession(std::int64_t id, const std::string& expected, const std::string& owner) override;
  bool AddTimings(std::int64_t record_id, const std::vector<double>& run_secs) override;

  std::int64_t SaveModel(const db::StoredModel& model) override;
  std::vector<db::StoredModel> Models() override;
  std::optional<db::StoredModel> LoadModel(std::int64_t id) override;

  // Why the server would refuse this client's writes, "" when it would
  // take them (or cannot say: an older server): it serves read-only, or
  // needs a token that was not given or is wrong. Known from the moment
  // of connecting, for commands with long work before their first write.
  const std::string& WriteRefusal() const;

  // How long a call waits for a server that refuses connections after it
  // has answered once (a restart), retrying with growing pauses, before it
  // fails. Before the first answer a refused connection fails at once.
  static constexpr double kReconnectWaitSecs = 60;
  void SetReconnectWait(double secs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// True for "http://..." database locations.
bool IsRemoteDatabase(const std::string& location);

// A database by location: a server URL or an SQLite file.
std::unique_ptr<db::Database> OpenDatabase(const std::string& location, const std::string& token = "");

}  // namespace tunedb::api
