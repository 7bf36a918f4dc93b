// `tunedb db ...` (import-tvm, export-tvm, merge, stats, records, sessions, check)
// and `tunedb best`: the tuning database from the command line.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/cli/commands.h"
#include "api/remote/remote_database.h"
#include "costmodel/model.h"
#include "db/sqlite_database.h"
#include "db/tvm_interop.h"
#include "ir/json.h"
#include "ir/json_text.h"
#include "ir/schedule/schedule.h"
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
  std::string token_file;
  std::int64_t session = 0;
};

// A mistyped path would otherwise become an empty database file.
void RequireDatabaseFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw UsageError("no database file " + path + " (check the path; tunedb tune creates one)");
  }
}

// For the commands that work on the file itself: a server's URL gets what
// to do instead, rather than "no database file http://...".
void RequireNotAServer(const std::string& location, const std::string& instead) {
  if (api::IsRemoteDatabase(location)) throw UsageError(location + " is a server: " + instead);
}

// `db merge OTHER --db DEST`. A server as DEST stores what is merged
// through its write routes (POST /v1/workloads and /v1/records).
// Runs `write` on the database file at `path`. When it fails and the file
// did not exist before, the (empty) database it created goes too; an
// existing one keeps what it had, since each write is one transaction.
template <typename Write>
void WriteRemovingANewFileOnFailure(const std::string& path, Write&& write) {
  const bool created = !std::filesystem::exists(path);
  try {
    write();
  } catch (...) {
    if (created) {
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    }
    throw;
  }
}

void MergeInto(const DbOptions& o) {
  std::unique_ptr<db::Database> from = OpenExistingDatabase(o.other);
  db::MergeCounts added;
  std::int64_t size = 0;
  if (api::IsRemoteDatabase(o.db)) {
    // Checked before anything is written: a server rebuilds a workload from
    // its tunedb program, which a TVM workload does not have.
    for (const db::WorkloadStats& w : from->Workloads()) {
      if (w.workload.input.kind != "tunedb") {
        throw UsageError(o.other + " holds workload " + w.workload.input.hash +
                         ", imported from TVM, and a server stores only tunedb workloads: merge into a file instead");
      }
    }
    api::RemoteDatabase into(o.db, ReadTokenFile(o.token_file));
    added = db::Merge(into, *from);
    size = into.Size();
  } else {
    WriteRemovingANewFileOnFailure(o.db, [&] {
      db::SqliteDatabase into(o.db);
      into.Transaction([&] { added = db::Merge(into, *from); });
      size = into.Size();
    });
  }
  fmt::print("merged {} new records from {} into {} ({} records now)\n", added.records, o.other, o.db, size);
  if (added.records_with_later_timings > 0) {
    fmt::print("{} records already in {} took the timings {} added to them later\n", added.records_with_later_timings,
               o.db, o.other);
  }
}

// The workload hash named by --workload (spec or file) or --hash.
std::string HashOf(const DbOptions& o) {
  if (!o.hash.empty()) return o.hash;
  if (o.workload.empty()) throw UsageError("give --workload SPEC (or --hash H for an imported TVM workload)");
  return ir::WorkloadHash(ir::LoadWorkload(o.workload).func);
}

void Stats(const DbOptions& o) {
  std::unique_ptr<db::Database> opened = OpenExistingDatabase(o.db);
  db::Database& d = *opened;
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
  if (o.limit < 0) throw UsageError("--limit must be 0 or more, not " + std::to_string(o.limit));
  std::unique_ptr<db::Database> opened = OpenExistingDatabase(o.db);
  db::Database& d = *opened;
  db::RecordQuery q;
  q.workload_hash = HashOf(o);
  if (!o.target.empty()) q.target = db::CanonicalTarget(o.target);
  q.limit = o.limit;
  std::vector<db::TuningRecord> records = d.Records(q);
  fmt::print("{:>8}  {:<12} {:>12}  {:<36} {}\n", "id", "status", "median", "target", "error");
  for (const db::TuningRecord& r : records) {
    fmt::print("{:>8}  {:<12} {:>12}  {:<36} {}\n", r.id, db::StatusName(r.status), DurationText(r.Median()), r.target,
               r.error.substr(0, 60));
  }
  if (records.empty()) {
    // Tell an empty selection from a workload the database never saw
    // (a spec with other parameters, a mistyped hash).
    if (d.FindWorkload(*q.workload_hash)) {
      fmt::print("(no records)\n");
    } else {
      fmt::print("(no records: the database has no workload {})\n", *q.workload_hash);
    }
  }
}

// Where a session's owner runs, seen from here: "" (this host), " on
// HOST", or " in another container" of this host.
std::string OwnerPlace(const db::OwnerParts& owner) {
  std::optional<db::OwnerParts> me = db::ParseOwner(db::ThisProcess());
  if (!me || owner.host != me->host) return " on " + owner.host;
  return db::OwnerIsVisibleHere(owner) ? "" : " in another container";
}

// How long a session has gone without a sign of life, e.g. "2.5 h".
std::string QuietFor(const db::Session& s, double now) {
  double minutes = (now - s.last_active) / 60;
  return minutes < 120 ? fmt::format("{:.0f} min", minutes) : fmt::format("{:.1f} h", minutes / 60);
}

// What a session is doing, as far as this host can tell from its owner
// (host/pid/start/boot/pidns, db::ThisProcess()) and, for an owner it
// cannot look at, from its last sign of life.
std::string SessionState(const db::Session& s) {
  // Not a duration: a resumed session's span holds the time it was left.
  if (s.ended != 0) return "ended " + UtcTimeText(s.ended);
  if (!db::OwnerMayBeRunning(s.owner)) return "open: the same command resumes it";
  db::OwnerParts owner = *db::ParseOwner(s.owner);  // a running owner reads
  double now = db::NowSeconds();
  if (!db::SessionMayBeRunning(s, now)) {
    return "open: pid " + owner.pid + OwnerPlace(owner) + " quiet for " + QuietFor(s, now) +
           "; the same command resumes it";
  }
  return "running (pid " + owner.pid + OwnerPlace(owner) + ")";
}

// `db release ID`. A tuner resumes a session left open only when it can
// see that the session's process is gone, which it cannot for a process of
// another host or container: such a session stays "running" after a crash
// until it has been quiet for db::kSessionLeaseSeconds. The user, who
// knows it is gone, hands it back here sooner; one whose process runs
// where this command can see it is refused.
void Release(const DbOptions& o) {
  std::unique_ptr<db::Database> opened =
      OpenExistingDatabase(o.db, db::SqliteDatabase::OpenMode::kReadWrite, ReadTokenFile(o.token_file));
  std::optional<db::Session> found;
  for (db::Session& s : opened->Sessions()) {
    if (s.id == o.session) found = std::move(s);
  }
  const std::string name = "session " + std::to_string(o.session);
  if (!found) throw UsageError(o.db + " has no " + name + " (tunedb db sessions lists them)");
  if (found->ended != 0) throw UsageError(name + " ended at " + UtcTimeText(found->ended) + ": nothing to release");
  if (!db::OwnerMayBeRunning(found->owner)) {
    fmt::print("{} is open already: the same command resumes it\n", name);
    return;
  }
  db::OwnerParts owner = *db::ParseOwner(found->owner);
  double now = db::NowSeconds();
  if (!db::SessionMayBeRunning(*found, now)) {
    fmt::print("{} is open already: pid {}{} has been quiet for {}, and the same command resumes it\n", name, owner.pid,
               OwnerPlace(owner), QuietFor(*found, now));
    return;
  }
  if (db::OwnerIsVisibleHere(owner)) {
    throw UsageError(name + " is running here (pid " + owner.pid +
                     "): stop that tuner instead (Ctrl-C ends it and leaves the session open)");
  }
  if (!opened->ClaimSession(found->id, found->owner, "")) {
    // The owner changed since it was read, or a server older than owners
    // (which answers every claim "not claimed").
    throw UsageError(name + " was not released: its owner changed meanwhile (look again with tunedb db sessions)" +
                     (api::IsRemoteDatabase(o.db) ? ", or the server is older than session owners" : ""));
  }
  fmt::print("released {} of pid {}{}: the same command resumes it\n", name, owner.pid, OwnerPlace(owner));
}

void Sessions(const DbOptions& o) {
  if (o.limit < 0) throw UsageError("--limit must be 0 or more, not " + std::to_string(o.limit));
  std::unique_ptr<db::Database> opened = OpenExistingDatabase(o.db);
  std::vector<db::Session> sessions = opened->Sessions();
  if (sessions.empty()) {
    fmt::print("no tuning sessions in {}\n", o.db);
    return;
  }
  fmt::print("{:>5}  {:<19}  {:>6}  {:<36}  {}\n", "id", "started (UTC)", "budget", "state", "command");
  std::int64_t shown = 0;
  for (auto s = sessions.rbegin(); s != sessions.rend() && shown < o.limit; ++s, ++shown) {
    fmt::print("{:>5}  {:<19}  {:>6}  {:<36}  {}\n", s->id, UtcTimeText(s->started), s->trials, SessionState(*s),
               s->command.empty() ? "-" : s->command);  // e2e's sessions are no command's to resume
  }
  if (shown < static_cast<std::int64_t>(sessions.size())) {
    fmt::print("({} older sessions not shown; --limit shows more)\n", sessions.size() - static_cast<std::size_t>(shown));
  }
}

void Best(const DbOptions& o) {
  if (o.format != "script" && o.format != "json") {
    throw UsageError("--format must be script or json, not '" + o.format + "'");
  }
  std::unique_ptr<db::Database> opened = OpenExistingDatabase(o.db);
  db::Database& d = *opened;
  std::string hash = HashOf(o);
  std::string target = db::CanonicalTarget(o.target.empty() ? measure::Target::Host().ToString() : o.target);
  // The program the record's trace must replay onto: the one named, or
  // the stored one (none for an imported TVM workload, which is opaque).
  std::optional<ir::PrimFunc> program;
  if (!o.workload.empty()) {
    program = ir::LoadWorkload(o.workload).func;
  } else if (std::optional<db::Workload> w = d.FindWorkload(hash); w && w->input.kind == "tunedb") {
    try {
      program = ir::ProgramFromJson(w->input.program);
    } catch (const ir::IrError& e) {
      throw UsageError("the stored program of workload " + hash + " is damaged: " + e.what() +
                       " (give it with --workload)");
    }
  }
  // A TVM record given as JSON is served as TVM wrote it, whether or not
  // tunedb's reader knows all of its instructions.
  TraceUse use = o.format == "json" && !program ? TraceUse::kAsJson : TraceUse::kReplayed;
  std::optional<db::TuningRecord> best = BestUsableRecord(d, hash, target, program, use);
  if (!best) {
    std::string targets;
    for (const std::string& t : d.Targets(hash)) targets += (targets.empty() ? "" : ", ") + t;
    std::string named = o.workload.empty() ? "workload " + hash : o.workload + " (workload " + hash + ")";
    throw UsageError("no valid record for " + named + " on target '" + target + "'" +
                     (targets.empty() ? std::string(" (the database has no record of this workload)")
                                      : " (targets with records: " + targets + ")"));
  }
  const db::TuningRecord& r = *best;
  if (o.format == "json") {
    nlohmann::json out = {{"workload_hash", hash}, {"target", r.target}, {"run_secs", r.run_secs},
                          {"median_secs", r.Median()}, {"trace", ir::ParseJson(r.trace)}};
    fmt::print("{}\n", out.dump(2));
    return;
  }
  // Without the lookups nothing uses (a postprocessor looks up every block's
  // loops, and uses few): the same program, as `tune` prints it. The JSON
  // above is the stored trace as it is.
  const ir::Trace stored = ir::Trace::FromJsonText(r.trace);
  const std::string script = stored.Simplified(false).AsScript();
  const char* none = stored.insts.empty()
                         ? "# no instructions: the unscheduled program is the fastest measured\n"
                         : "# no instruction that changes the program: "
                           "the unscheduled program is the fastest measured\n";
  fmt::print("# workload {} on {}: median {}\n{}", hash, r.target, DurationText(r.Median()),
             script.empty() ? none : script);
}

// What `db check` found wrong with one stored row. Reported in order: the
// file, then workloads, then records, then cost models, each by id.
struct Problem {
  enum Kind { kFile, kWorkload, kRecord, kModel } kind;
  std::int64_t id;
  std::string where;  // "record 34 (matmul:M=64,N=64,K=64, llvm -mcpu=znver4 -num-cores=2)"
  std::string what;
  bool operator<(const Problem& o) const { return std::tie(kind, id) < std::tie(o.kind, o.id); }
};

// The workload rows of tunedb programs: each program must parse, and hash
// and encode to what is stored beside it (else its records are filed under
// another program). Returns the programs that do, by hash.
std::map<std::string, ir::PrimFunc> CheckWorkloads(db::SqliteDatabase& d, std::vector<Problem>& problems,
                                                   std::map<std::string, db::WorkloadInput>& inputs) {
  std::map<std::string, ir::PrimFunc> programs;
  for (const db::WorkloadStats& w : d.Workloads()) {
    const db::WorkloadInput& in = w.workload.input;
    inputs.emplace(in.hash, in);
    if (in.kind != "tunedb") continue;  // an imported TVM workload is kept verbatim, opaque to us
    auto damaged = [&](const std::string& what) {
      problems.push_back({Problem::kWorkload, w.workload.id, "workload " + in.hash + " (" + in.name + ")", what});
    };
    try {
      ir::PrimFunc f = ir::ProgramFromJson(in.program);
      if (std::string hash = ir::WorkloadHash(f); hash != in.hash) {
        damaged("its program hashes to " + hash + ", not to its stored hash");
      } else if (ir::CanonicalEncoding(f) != in.structure) {
        damaged("its structure key is not its program's");
      } else {
        programs.emplace(in.hash, std::move(f));
      }
    } catch (const ir::IrError& e) {
      damaged(e.what());
    }
  }
  return programs;
}

// `db check`: SQLite's own check of the file, then every row as tunedb reads
// it: the records' statuses and timings, the workloads' programs, every
// record's trace replayed onto its workload's program, and every stored
// cost model against its checksum. Reports each damaged row by id; exit
// code 1 when there is one. Changes nothing.
void Check(const DbOptions& o) {
  // The file's own checks need the file.
  RequireNotAServer(o.db, "db check reads the database file itself; run it where the server's file is, with --db FILE");
  RequireDatabaseFile(o.db);
  db::SqliteDatabase d(o.db, db::SqliteDatabase::OpenMode::kReadOnly);
  std::vector<Problem> problems;
  std::string integrity = d.IntegrityCheck();
  fmt::print("database: {}\nfile:     {}\n", o.db, integrity == "ok" ? "ok (SQLite integrity_check)" : "damaged");
  if (integrity != "ok") problems.push_back({Problem::kFile, 0, "file", integrity});
  std::set<std::int64_t> unreadable;
  for (const db::SqliteDatabase::DamagedRecord& r : d.DamagedRecords()) {
    problems.push_back({Problem::kRecord, r.id, "record " + std::to_string(r.id), r.what});
    unreadable.insert(r.id);
  }
  std::map<std::string, db::WorkloadInput> workloads;
  std::map<std::string, ir::PrimFunc> programs = CheckWorkloads(d, problems, workloads);
  std::int64_t checked = 0;
  // By status, so that a record whose status is damaged (reported above)
  // is never read as a whole.
  for (db::RecordStatus status : {db::RecordStatus::kOk, db::RecordStatus::kBuildError, db::RecordStatus::kRunError,
                                  db::RecordStatus::kTimeout, db::RecordStatus::kWrongResult}) {
    db::RecordQuery q;
    q.status = status;
    q.limit = 1000;
    for (std::vector<db::TuningRecord> page; !(page = d.Records(q)).empty(); q.after_id = page.back().id) {
      for (const db::TuningRecord& r : page) {
        ++checked;
        if (unreadable.count(r.id)) continue;
        auto w = workloads.find(r.workload_hash);
        if (w == workloads.end()) continue;  // records are read joined to their workload
        std::string where = "record " + std::to_string(r.id) + " (" + w->second.name + ", " + r.target + ")";
        if (w->second.kind != "tunedb") {
          // An imported TVM record keeps TVM's trace verbatim, which may use
          // instructions tunedb does not know: it need only be JSON.
          if (!nlohmann::json::accept(r.trace)) {
            problems.push_back({Problem::kRecord, r.id, where, "its trace is not valid JSON"});
          }
          continue;
        }
        try {
          ir::Trace trace = ir::Trace::FromJsonText(r.trace);
          auto program = programs.find(r.workload_hash);
          if (program != programs.end()) ir::ReplayTrace(program->second, trace, 0);
        } catch (const ir::IrError& e) {
          problems.push_back({Problem::kRecord, r.id, where, e.what()});
        }
      }
    }
  }
  // Stored cost models: a damaged blob loaded without a word into XGBoost,
  // which then read outside its trees; each now carries a checksum.
  std::int64_t models = 0;
  std::vector<std::string> unused_models;
  for (const db::StoredModel& listed : d.Models()) {
    ++models;
    std::optional<db::StoredModel> stored = d.LoadModel(listed.id);
    if (!stored) continue;
    try {
      costmodel::CostModel::Load(stored->blob);
    } catch (const costmodel::DamagedModelError& e) {
      problems.push_back({Problem::kModel, listed.id, "model " + std::to_string(listed.id), e.what()});
    } catch (const costmodel::CostModelError& e) {
      // Another feature version, or saved before models had checksums: not
      // damage, so not a problem, but a model no tuner will start from.
      unused_models.push_back(fmt::format("  model {}: {}", listed.id, e.what()));
    }
  }
  fmt::print("checked:  {} workloads, {} of {} records{}\n", workloads.size(), checked, d.Size(),
             models == 0 ? "" : fmt::format(", {} models", models));
  if (!unused_models.empty()) {
    fmt::print("{} model(s) not used by this tunedb (the next tunedb train or tune stores one that is):\n",
               unused_models.size());
    for (const std::string& line : unused_models) fmt::print("{}\n", line);
  }
  if (problems.empty()) {
    fmt::print("no problems found\n");
    return;
  }
  std::stable_sort(problems.begin(), problems.end());
  fmt::print("{} problem(s):\n", problems.size());
  for (const Problem& p : problems) fmt::print("  {}: {}\n", p.where, p.what);
  throw ProblemsReported();
}

}  // namespace

std::optional<db::TuningRecord> BestUsableRecord(db::Database& d, const std::string& hash, const std::string& target,
                                                 const std::optional<ir::PrimFunc>& program, TraceUse use) {
  for (const db::TuningRecord& r : d.TopK(hash, target, 16)) {
    std::string damage;
    if (use == TraceUse::kReplayed) {
      try {  // the reader's message says where a trace is damaged
        ir::Trace trace = ir::Trace::FromJsonText(r.trace);
        if (program) ir::ReplayTrace(*program, trace, 0);
      } catch (const ir::IrError& e) {
        damage = e.what();
      }
    }
    if (damage.empty()) damage = db::ServingProblem(r);
    if (damage.empty()) return r;
    fmt::print(stderr, "tunedb: warning: record {} skipped: {} (`tunedb db check` lists every damaged row)\n", r.id,
               damage);
  }
  return std::nullopt;
}

std::string UtcTimeText(double unix_seconds) {
  // Years 1970-9999: what the format prints in 19 characters.
  if (!(unix_seconds >= 0 && unix_seconds < 253402300800.0)) return "?";
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm parts{};
  if (!gmtime_r(&t, &parts)) return "?";
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &parts);
  return text;
}

std::unique_ptr<db::Database> OpenExistingDatabase(const std::string& location, db::SqliteDatabase::OpenMode mode,
                                                   const std::string& token) {
  if (api::IsRemoteDatabase(location)) return api::OpenDatabase(location, token);
  RequireDatabaseFile(location);
  return std::make_unique<db::SqliteDatabase>(location, mode);
}

std::optional<db::WorkloadInput> TunedbProgramInTvmFile(const std::string& hash, const std::string& module) {
  nlohmann::json j = nlohmann::json::parse(module, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>().rfind("tunedb.program/", 0) != 0) {
    return std::nullopt;  // TVM's module (base64 text or an IRModule object): opaque
  }
  ir::PrimFunc f;
  try {
    f = ir::ProgramFromJson(module);
  } catch (const ir::IrError& e) {
    throw std::runtime_error(std::string("a tunedb program that does not read back: ") + e.what());
  }
  std::string own_hash = ir::WorkloadHash(f);
  if (own_hash != hash) {
    throw std::runtime_error("a tunedb program whose workload hash is " + own_hash + ", not " + hash);
  }
  // Named as the server names a program that comes without a name: TVM's
  // file keeps none. A database that has the workload keeps its own name.
  return db::WorkloadInput{hash, "custom:" + hash, "tunedb", ir::CanonicalEncoding(f), ir::ProgramToJson(f)};
}

void AddDbCommands(CLI::App& app) {
  auto o = std::make_shared<DbOptions>();
  CLI::App* dbcmd = app.add_subcommand("db", "Inspect and exchange the tuning database");
  dbcmd->require_subcommand(1);
  auto add_db = [&](CLI::App* c) {
    c->add_option("--db", o->db, "The SQLite database file")->capture_default_str();
  };
  auto add_readable_db = [&](CLI::App* c) {
    c->add_option("--db", o->db, "The SQLite database file, or a tunedb server's URL (http://HOST:PORT)")
        ->capture_default_str();
  };
  CLI::App* imp = dbcmd->add_subcommand("import-tvm", "Import TVM MetaSchedule JSON database files from DIR");
  add_db(imp);
  imp->add_option("dir", o->dir, "Directory with database_workload.json and database_tuning_record.json")->required();
  imp->callback([o] {
    RequireNotAServer(o->db, "db import-tvm imports into a file; import into one, then db merge it into the server");
    db::TvmImportStats s;
    WriteRemovingANewFileOnFailure(o->db, [&] {
      db::SqliteDatabase d(o->db);
      s = db::ImportTvm(d, o->dir, TunedbProgramInTvmFile);
    });
    fmt::print("imported {} workloads and {} records ({} duplicates skipped) into {}\n", s.workloads, s.records,
               s.duplicates, o->db);
    if (s.with_later_timings > 0) {
      fmt::print("{} records already in {} took the timings the files added to them\n", s.with_later_timings, o->db);
    }
  });
  CLI::App* exp = dbcmd->add_subcommand("export-tvm", "Export the database in TVM MetaSchedule's JSON layout into DIR");
  add_readable_db(exp);
  exp->add_option("dir", o->dir, "Output directory")->required();
  exp->callback([o] {
    db::TvmExportStats s = db::ExportTvm(*OpenExistingDatabase(o->db), o->dir);
    fmt::print("exported {} workloads and {} records to {}\n", s.workloads, s.records, o->dir);
    if (!s.left_out.empty()) {
      // The files hold everything else; exit code 1 tells a script that
      // they are not the whole database.
      fmt::print("left out {} damaged row(s) (tunedb db check --db FILE lists every damaged row):\n",
                 s.left_out.size());
      for (const std::string& what : s.left_out) fmt::print("  {}\n", what);
      throw ProblemsReported();
    }
  });
  CLI::App* merge = dbcmd->add_subcommand("merge", "Merge another database into this one (duplicates skipped)");
  merge->add_option("--db", o->db, "The database to merge into: a file, or a tunedb server's URL")->capture_default_str();
  merge->add_option("--token-file", o->token_file, "Bearer token for a server's write routes (to merge into it)");
  merge->add_option("other", o->other, "The database to merge from: a file, or a tunedb server's URL")->required();
  merge->callback([o] { MergeInto(*o); });
  CLI::App* stats = dbcmd->add_subcommand("stats", "Workloads, record counts and best times");
  add_readable_db(stats);
  stats->callback([o] { Stats(*o); });
  CLI::App* records = dbcmd->add_subcommand("records", "The records of a workload");
  add_readable_db(records);
  records->add_option("-w,--workload", o->workload, "Workload spec or file");
  records->add_option("--hash", o->hash, "Workload hash (for imported TVM workloads)")->excludes("--workload");
  records->add_option("--target", o->target, "Only records of this target");
  records->add_option("--limit", o->limit, "At most this many")->capture_default_str();
  records->callback([o] { Records(*o); });
  CLI::App* sessions = dbcmd->add_subcommand("sessions", "Tuning sessions, newest first: running, open or ended");
  add_readable_db(sessions);
  sessions->add_option("--limit", o->limit, "At most this many")->capture_default_str();
  sessions->callback([o] { Sessions(*o); });
  CLI::App* release = dbcmd->add_subcommand(
      "release", "Hand back an open session of a tuner on another host or container that is gone, to be resumed");
  add_readable_db(release);
  release->add_option("--token-file", o->token_file, "Bearer token for a server's write routes");
  release->add_option("session", o->session, "The session's id (tunedb db sessions)")->required();
  release->callback([o] { Release(*o); });
  CLI::App* check = dbcmd->add_subcommand(
      "check", "Check every row: the file, records' statuses and timings, programs, traces (exit 1 on damage)");
  add_db(check);
  check->callback([o] { Check(*o); });

  CLI::App* best = app.add_subcommand("best", "The best schedule of a workload from the database");
  add_readable_db(best);
  best->add_option("-w,--workload", o->workload, "Workload spec or file");
  best->add_option("--hash", o->hash, "Workload hash (for imported TVM workloads)")->excludes("--workload");
  best->add_option("--target", o->target, "Target string (default: this machine's)");
  best->add_option("--format", o->format, "script or json")->capture_default_str();
  best->callback([o] { Best(*o); });
}

}  // namespace tunedb::cli
