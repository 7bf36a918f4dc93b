// A real tuning database for cost-model tests: random schedules of small
// workloads, measured by the real Runner, committed to a real SQLite file.
#pragma once

#include <filesystem>
#include <string>

#include "db/sqlite_database.h"
#include "ir/json.h"
#include "ir/structural.h"
#include "ir/workloads.h"
#include "measure/runner.h"
#include "tests/ir/schedule/random_scheduler.h"

namespace tunedb::costmodel::testing {

inline db::WorkloadInput AsWorkloadInput(const ir::Workload& w) {
  return {ir::WorkloadHash(w.func), w.spec, "tunedb", ir::CanonicalEncoding(w.func), ir::ProgramToJson(w.func)};
}

// Measures `per_workload` random schedules of each spec into `path`.
inline void BuildMeasuredDatabase(const std::string& path, const std::vector<std::string>& specs, int per_workload) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  db::SqliteDatabase database(path);
  measure::MeasureConfig config;
  config.worker_path = TUNEDB_WORKER;
  config.repeat = 2;
  config.min_repeat_ms = 2;
  config.workers = 2;
  for (const std::string& spec : specs) {
    ir::Workload w = ir::BuildWorkload(spec);
    database.CommitWorkload(AsWorkloadInput(w));
    std::vector<ir::PrimFunc> programs;
    std::vector<std::string> traces;
    for (int seed = 0; seed < per_workload; ++seed) {
      ir::Schedule sch(w.func, static_cast<std::uint64_t>(seed));
      ir::testing::RandomScheduler random(sch, static_cast<std::uint64_t>(seed));
      random.Steps(6);
      programs.push_back(sch.func());
      traces.push_back(sch.trace().ToJson().dump());
    }
    measure::Runner runner(w.func, config);
    std::vector<measure::MeasureResult> results = runner.Measure(programs);
    std::vector<db::TuningRecord> records;
    for (std::size_t i = 0; i < results.size(); ++i) {
      db::TuningRecord r;
      r.workload_hash = ir::WorkloadHash(w.func);
      r.target = config.target.ToString();
      r.trace = traces[i];
      r.run_secs = results[i].run_secs;
      r.status = static_cast<db::RecordStatus>(static_cast<int>(results[i].status));
      r.error = results[i].error;
      records.push_back(r);
    }
    database.CommitRecords(records);
  }
}

}  // namespace tunedb::costmodel::testing
