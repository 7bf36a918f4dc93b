// `tunedb db ...` (import-tvm, export-tvm, merge, stats, records) and
// `tunedb best`: the tuning database from the command line.
#include <cmath>
#include <ctime>
#include <filesystem>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/cli/commands.h"
#include "db/sqlite_database.h"
#include "db/tvm_interop.h"
#include "ir/schedule/trace.h"
#include "ir/structural.h"
#include "ir/workloads.h"
#include "measure/target.h"

namespace tunedb::cli {
namespace {

struct DbOptions {
  std::string db = "tunedb.sqlite";
  std::string dir;
  std::string other;
  std::string workload;
  std::string hash;
  std::string target;
  std::string format = "script";
  std::int64_t limit = 20;
};

// The workload hash named by --workload (spec or file) or --hash.
std::string HashOf(const DbOptions& o) {
  if (!o.hash.empty()) return o.hash;
  if (o.workload.empty()) throw UsageError("give --workload SPEC (or --hash H for an imported TVM workload)");
  return ir::WorkloadHash(ir::LoadWorkload(o.workload).func);
}

void Stats(const DbOptions& o) {
  db::SqliteDatabase d = OpenExistingDatabase(o.db);
  std::vector<db::WorkloadStats> workloads = d.Workloads();
  fmt::print("database: {}\nworkloads: {}\nrecords:   {}\nsessions:  {}\nmodels:    {}\n\n", o.db, workloads.size(),
             d.Size(), d.Sessions().size(), d.Models().size());
  if (workloads.empty()) return;
  fmt::print("{:<22} {:<36} {:>8} {:>8}  {}\n", "hash", "workload", "records", "ok", "best per target");
  for (const db::WorkloadStats& w : workloads) {
    std::string best;
    for (const auto& [target, secs] : w.best) best += (best.empty() ? "" : "; ") + target + ": " + DurationText(secs);
    std::string name = w.workload.input.name.size() > 36 ? w.workload.input.name.substr(0, 33) + "..." : w.workload.input.name;
    fmt::print("{:<22} {:<36} {:>8} {:>8}  {}\n", w.workload.input.hash, name, w.records, w.ok_records, best);
  }
}

void Records(const DbOptions& o) {
  db::SqliteDatabase d = OpenExistingDatabase(o.db);
  db::RecordQuery q;
  q.workload_hash = HashOf(o);
  if (!o.target.empty()) q.target = o.target;
  q.limit = o.limit;
  std::vector<db::TuningRecord> records = d.Records(q);
  fmt::print("{:>8}  {:<12} {:>12}  {:<36} {}\n", "id", "status", "median", "target", "error");
  for (const db::TuningRecord& r : records) {
    fmt::print("{:>8}  {:<12} {:>12}  {:<36} {}\n", r.id, db::StatusName(r.status), DurationText(r.Median()), r.target,
               r.error.substr(0, 60));
  }
  if (records.empty()) fmt::print("(no records)\n");
}

void Best(const DbOptions& o) {
  db::SqliteDatabase d = OpenExistingDatabase(o.db);
  std::string hash = HashOf(o);
  std::string target = o.target.empty() ? measure::Target::Host().ToString() : o.target;
  std::vector<db::TuningRecord> top = d.TopK(hash, target, 1);
  if (top.empty()) {
    std::string targets;
    for (const std::string& t : d.Targets(hash)) targets += (targets.empty() ? "" : ", ") + t;
    throw UsageError("no valid record for workload " + hash + " on target '" + target + "'" +
                     (targets.empty() ? std::string(" (the database has no record of this workload)")
                                      : " (targets with records: " + targets + ")"));
  }
  const db::TuningRecord& r = top[0];
  if (o.format == "json") {
    nlohmann::json out = {{"workload_hash", hash}, {"target", r.target}, {"run_secs", r.run_secs},
                          {"median_secs", r.Median()}, {"trace", nlohmann::json::parse(r.trace)}};
    fmt::print("{}\n", out.dump(2));
    return;
  }
  if (o.format != "script") throw UsageError("--format must be script or json");
  fmt::print("# workload {} on {}: median {}\n{}", hash, r.target, DurationText(r.Median()),
             ir::Trace::FromJsonText(r.trace).AsScript());
}

}  // namespace

std::string DurationText(double secs) {
  if (!std::isfinite(secs)) return "-";
  if (secs < 1e-4) return fmt::format("{:.2f} us", secs * 1e6);
  return fmt::format("{:.4f} ms", secs * 1e3);
}

db::SqliteDatabase OpenExistingDatabase(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw UsageError("no database file " + path + " (check the path; tunedb tune creates one)");
  }
  return db::SqliteDatabase(path);
}

void AddDbCommands(CLI::App& app) {
  auto o = std::make_shared<DbOptions>();
  CLI::App* dbcmd = app.add_subcommand("db", "Inspect and exchange the tuning database");
  dbcmd->require_subcommand(1);
  auto add_db = [&](CLI::App* c) {
    c->add_option("--db", o->db, "The SQLite database file")->capture_default_str();
  };
  CLI::App* imp = dbcmd->add_subcommand("import-tvm", "Import TVM MetaSchedule JSON database files from DIR");
  add_db(imp);
  imp->add_option("dir", o->dir, "Directory with database_workload.json and database_tuning_record.json")->required();
  imp->callback([o] {
    db::SqliteDatabase d(o->db);
    db::TvmImportStats s = db::ImportTvm(d, o->dir);
    fmt::print("imported {} workloads and {} records ({} duplicates skipped) into {}\n", s.workloads, s.records,
               s.duplicates, o->db);
  });
  CLI::App* exp = dbcmd->add_subcommand("export-tvm", "Export the database in TVM MetaSchedule's JSON layout into DIR");
  add_db(exp);
  exp->add_option("dir", o->dir, "Output directory")->required();
  exp->callback([o] {
    db::SqliteDatabase d = OpenExistingDatabase(o->db);
    db::TvmExportStats s = db::ExportTvm(d, o->dir);
    fmt::print("exported {} workloads and {} records to {}\n", s.workloads, s.records, o->dir);
  });
  CLI::App* merge = dbcmd->add_subcommand("merge", "Merge another database into this one (duplicates skipped)");
  add_db(merge);
  merge->add_option("other", o->other, "The database to merge from")->required();
  merge->callback([o] {
    db::SqliteDatabase from = OpenExistingDatabase(o->other);
    db::SqliteDatabase into(o->db);
    std::int64_t added = 0;
    into.Transaction([&] { added = db::Merge(into, from); });
    fmt::print("merged {} new records from {} into {} ({} records now)\n", added, o->other, o->db, into.Size());
  });
  CLI::App* stats = dbcmd->add_subcommand("stats", "Workloads, record counts and best times");
  add_db(stats);
  stats->callback([o] { Stats(*o); });
  CLI::App* records = dbcmd->add_subcommand("records", "The records of a workload");
  add_db(records);
  records->add_option("-w,--workload", o->workload, "Workload spec or file");
  records->add_option("--hash", o->hash, "Workload hash (for imported TVM workloads)");
  records->add_option("--target", o->target, "Only records of this target");
  records->add_option("--limit", o->limit, "At most this many")->capture_default_str();
  records->callback([o] { Records(*o); });

  CLI::App* best = app.add_subcommand("best", "The best schedule of a workload from the database");
  add_db(best);
  best->add_option("-w,--workload", o->workload, "Workload spec or file");
  best->add_option("--hash", o->hash, "Workload hash (for imported TVM workloads)");
  best->add_option("--target", o->target, "Target string (default: this machine's)");
  best->add_option("--format", o->format, "script or json")->capture_default_str();
  best->callback([o] { Best(*o); });
}

}  // namespace tunedb::cli
