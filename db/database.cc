#include "db/database.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <fstream>
#include <limits>
#include <thread>

#include <nlohmann/json.hpp>

namespace tunedb::db {

std::string_view StatusName(RecordStatus s) {
  switch (s) {
    case RecordStatus::kOk: return "ok";
    case RecordStatus::kBuildError: return "build_error";
    case RecordStatus::kRunError: return "run_error";
    case RecordStatus::kTimeout: return "timeout";
    case RecordStatus::kWrongResult: return "wrong_result";
  }
  return "?";
}

RecordStatus ParseStatus(std::string_view name) {
  for (RecordStatus s : {RecordStatus::kOk, RecordStatus::kBuildError, RecordStatus::kRunError, RecordStatus::kTimeout,
                         RecordStatus::kWrongResult}) {
    if (StatusName(s) == name) return s;
  }
  throw DatabaseError("unknown record status '" + std::string(name) +
                      "' (expected ok, build_error, run_error, timeout or wrong_result)");
}

double TuningRecord::Median() const {
  if (status != RecordStatus::kOk || run_secs.empty()) return std::numeric_limits<double>::infinity();
  std::vector<double> s = run_secs;
  std::sort(s.begin(), s.end());
  std::size_t n = s.size();
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

std::string ServingProblem(const TuningRecord& record) {
  if (!nlohmann::json::accept(record.trace)) return "its trace is not valid JSON";
  if (!std::isfinite(record.Median())) return "its run_secs do not read as seconds";
  return "";
}

WorkloadInput WholeInput(Database& db, const WorkloadStats& listed) {
  if (!listed.workload.input.program.empty()) return listed.workload.input;
  std::optional<Workload> whole = db.FindWorkload(listed.workload.input.hash);
  return whole ? whole->input : listed.workload.input;
}

std::int64_t Merge(Database& into, Database& from) {
  std::int64_t added = 0;
  for (const WorkloadStats& w : from.Workloads()) {
    into.CommitWorkload(WholeInput(from, w));
    RecordQuery q;
    q.workload_hash = w.workload.input.hash;
    q.limit = 5000;
    while (true) {
      std::vector<TuningRecord> page = from.Records(q);
      if (page.empty()) break;
      q.after_id = page.back().id;
      for (TuningRecord& r : page) {
        // Named by its id where it is, not by its place in a batch here.
        if (r.status == RecordStatus::kOk && r.run_secs.empty()) {
          throw DatabaseError("record " + std::to_string(r.id) +
                              " of the database merged from: status ok without a timing (tunedb db check lists "
                              "every such record)");
        }
        r.session_id = 0;  // sessions are per database
      }
      added += into.CommitRecords(page);
    }
  }
  return added;
}

std::string HardwareFingerprint() {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return model + "; " + std::to_string(std::thread::hardware_concurrency()) + " cores";
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace tunedb::db
