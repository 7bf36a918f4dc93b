#include "db/memory_database.h"

#include <algorithm>
#include <set>

namespace tunedb::db {
namespace {

bool SameMeasurement(const TuningRecord& a, const std::vector<double>& a_first_run_secs, const TuningRecord& b) {
  return a.workload_hash == b.workload_hash && a.target == b.target && a.trace == b.trace &&
         a_first_run_secs == b.run_secs && a.status == b.status;
}

}  // namespace

std::int64_t MemoryDatabase::CommitWorkload(const WorkloadInput& w) {
  for (const Workload& existing : workloads_) {
    if (existing.input.hash != w.hash) continue;
    if (existing.input.structure != w.structure) {
      throw DatabaseError("workload hash collision: " + w.hash + " is already stored for a structurally different " +
                          "workload (memory)");
    }
    return existing.id;
  }
  workloads_.push_back({static_cast<std::int64_t>(workloads_.size()) + 1, w});
  return workloads_.back().id;
}

std::int64_t MemoryDatabase::CommitRecords(const std::vector<TuningRecord>& records) {
  for (const TuningRecord& r : records) {
    if (!FindWorkload(r.workload_hash)) {
      throw DatabaseError("record for unknown workload " + r.workload_hash + " (commit the workload first)");
    }
  }
  std::int64_t added = 0;
  for (TuningRecord r : records) {
    bool duplicate = false;
    for (std::size_t i = 0; i < records_.size() && !duplicate; ++i) {
      duplicate = SameMeasurement(records_[i], first_run_secs_[i], r);
    }
    if (duplicate) continue;
    r.id = static_cast<std::int64_t>(records_.size()) + 1;
    if (r.created == 0) r.created = NowSeconds();
    records_.push_back(r);
    first_run_secs_.push_back(r.run_secs);
    ++added;
  }
  double now = NowSeconds();
  for (Session& s : sessions_) {
    auto named = [&](const TuningRecord& r) { return r.session_id == s.id; };
    if (std::any_of(records.begin(), records.end(), named)) s.last_active = std::max(s.last_active, now);
  }
  return added;
}

std::vector<TuningRecord> MemoryDatabase::TopK(const std::string& hash, const std::string& target, int k) {
  std::vector<TuningRecord> ok;
  for (const TuningRecord& r : records_) {
    if (r.workload_hash == hash && r.target == target && r.status == RecordStatus::kOk) ok.push_back(r);
  }
  std::stable_sort(ok.begin(), ok.end(), [](const TuningRecord& a, const TuningRecord& b) { return a.Median() < b.Median(); });
  if (static_cast<int>(ok.size()) > k) ok.resize(static_cast<std::size_t>(std::max(k, 0)));
  return ok;
}

std::vector<TuningRecord> MemoryDatabase::Records(const RecordQuery& q) {
  std::vector<TuningRecord> out;
  for (const TuningRecord& r : records_) {
    if (r.id <= q.after_id) continue;
    if (q.workload_hash && r.workload_hash != *q.workload_hash) continue;
    if (q.target && r.target != *q.target) continue;
    if (q.status && r.status != *q.status) continue;
    if (q.created_within && (r.created < q.created_within->first || r.created > q.created_within->second)) continue;
    if (static_cast<std::int64_t>(out.size()) >= q.limit) break;
    out.push_back(r);
  }
  return out;
}

std::optional<Workload> MemoryDatabase::FindWorkload(const std::string& hash) {
  for (const Workload& w : workloads_) {
    if (w.input.hash == hash) return w;
  }
  return std::nullopt;
}

std::vector<WorkloadStats> MemoryDatabase::Workloads() {
  std::vector<WorkloadStats> out;
  for (const Workload& w : workloads_) {
    WorkloadStats s;
    s.workload = w;
    std::map<std::string, double> best;
    for (const TuningRecord& r : records_) {
      if (r.workload_hash != w.input.hash) continue;
      ++s.records;
      if (r.status != RecordStatus::kOk) continue;
      ++s.ok_records;
      auto it = best.find(r.target);
      if (it == best.end() || r.Median() < it->second) best[r.target] = r.Median();
    }
    s.best.assign(best.begin(), best.end());
    out.push_back(std::move(s));
  }
  return out;
}

std::int64_t MemoryDatabase::Size() { return static_cast<std::int64_t>(records_.size()); }

std::vector<std::string> MemoryDatabase::Targets(const std::string& hash) {
  std::set<std::string> targets;
  for (const TuningRecord& r : records_) {
    if (r.workload_hash == hash) targets.insert(r.target);
  }
  return {targets.begin(), targets.end()};
}

std::int64_t MemoryDatabase::StartSession(const Session& session) {
  Session s = session;
  s.id = static_cast<std::int64_t>(sessions_.size()) + 1;
  if (s.started == 0) s.started = NowSeconds();
  s.last_active = s.started;
  sessions_.push_back(s);
  return s.id;
}

void MemoryDatabase::EndSession(std::int64_t id, double ended) {
  for (Session& s : sessions_) {
    if (s.id == id) s.ended = ended;
  }
}

std::vector<Session> MemoryDatabase::Sessions() { return sessions_; }

bool MemoryDatabase::ClaimSession(std::int64_t id, const std::string& expected, const std::string& owner) {
  for (Session& s : sessions_) {
    if (s.id != id || s.ended != 0 || s.owner != expected) continue;
    s.owner = owner;
    s.last_active = NowSeconds();
    return true;
  }
  return false;
}

bool MemoryDatabase::AddTimings(std::int64_t record_id, const std::vector<double>& run_secs) {
  for (TuningRecord& r : records_) {
    if (r.id != record_id || r.status != RecordStatus::kOk) continue;
    r.run_secs = WithLaterTimings(record_id, r.run_secs, run_secs);
    return true;
  }
  return false;
}

std::int64_t MemoryDatabase::SaveModel(const StoredModel& model) {
  StoredModel m = model;
  m.id = static_cast<std::int64_t>(models_.size()) + 1;
  if (m.created == 0) m.created = NowSeconds();
  models_.push_back(m);
  return m.id;
}

std::vector<StoredModel> MemoryDatabase::Models() {
  std::vector<StoredModel> out(models_.rbegin(), models_.rend());
  for (StoredModel& m : out) m.blob.clear();
  return out;
}

std::optional<StoredModel> MemoryDatabase::LoadModel(std::int64_t id) {
  if (models_.empty()) return std::nullopt;
  if (id == 0) return models_.back();
  for (const StoredModel& m : models_) {
    if (m.id == id) return m;
  }
  return std::nullopt;
}

}  // namespace tunedb::db
