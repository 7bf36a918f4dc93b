// A plain in-memory Database: the oracle the SQLite implementation is
// tested against (differential tests run one contract suite on both).
#pragma once

#include <map>

#include "db/database.h"

namespace tunedb::db {

class MemoryDatabase : public Database {
 public:
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

 private:
  std::vector<Workload> workloads_;
  std::vector<TuningRecord> records_;
  // Each record's timings as first committed: its identity for duplicates.
  std::vector<std::vector<double>> first_run_secs_;
  std::vector<Session> sessions_;
  std::vector<StoredModel> models_;
};

}  // namespace tunedb::db
