// The tuning database: workloads, measured tuning records, tuning sessions
// and stored cost models.
//
// The database stores what it is given: the workload hash, a structure key
// (the exact canonical encoding, so that a hash collision between different
// workloads is detected instead of merging them), the program as JSON text,
// and traces as JSON text. It depends on nothing else of ours.
//
// Two implementations share the contract (and one test suite):
// SqliteDatabase (sqlite_database.h), the real one, and MemoryDatabase
// (memory_database.h), a plain in-memory oracle.
//
// Failures throw DatabaseError with a message naming the file and what went
// wrong. Thread-safety: one Database object per thread; several processes
// may share one SQLite file.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tunedb::db {

class DatabaseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An operation this database cannot do, with nothing changed: a server
// older than the operation's route.
class UnsupportedError : public DatabaseError {
 public:
  using DatabaseError::DatabaseError;
};

// The statuses of measure/runner.h, as stored.
enum class RecordStatus { kOk, kBuildError, kRunError, kTimeout, kWrongResult };
std::string_view StatusName(RecordStatus s);
// Throws DatabaseError for an unknown name.
RecordStatus ParseStatus(std::string_view name);

struct WorkloadInput {
  std::string hash;       // decimal workload hash (or TVM's shash for kind "tvm")
  std::string name;       // e.g. "matmul:M=512,N=512,K=512"
  std::string kind = "tunedb";  // "tunedb", or "tvm" for imported TVM workloads (opaque)
  std::string structure;  // exact structural key; equal hashes with different keys are a collision
  std::string program;    // program JSON (tunedb) or TVM's workload blob, verbatim
};

struct Workload {
  std::int64_t id = 0;
  WorkloadInput input;
};

// The commit time of a record whose time is not known: one imported from
// TVM's files, which keep none (a tunedb record exported to them included).
inline constexpr double kUnknownCommitTime = 1;

struct TuningRecord {
  std::int64_t id = 0;           // set by the database
  std::string workload_hash;
  std::string target;            // "llvm -mcpu=znver4 -num-cores=2"
  std::string trace;             // trace JSON, TVM's layout
  std::vector<double> run_secs;  // one per repeat; empty for failures
  RecordStatus status = RecordStatus::kOk;
  std::string error;
  std::int64_t session_id = 0;   // 0: none
  double created = 0;            // unix seconds; 0: now; kUnknownCommitTime: not known
  std::string hardware;          // "CPU model; N cores"
  std::string target_json;       // TVM's target JSON for imported records, verbatim
  std::string args_info;         // TVM's args_info JSON, verbatim

  // Median of run_secs; +infinity for a failure or no timing.
  double Median() const;
};

// Why a valid (ok) record, as read back, cannot be served: its trace is not
// valid JSON, or its run_secs did not read back as seconds. Empty when it
// can. SQLite keeps no checksums, so a damaged row reads back changed.
std::string ServingProblem(const TuningRecord& record);

struct RecordQuery {
  std::optional<std::string> workload_hash;
  std::optional<std::string> target;
  std::optional<RecordStatus> status;
  std::int64_t after_id = 0;  // paging: records with id > after_id
  std::int64_t limit = 100;
  // Only records committed (TuningRecord::created) within [from, to], when
  // set: a copy of a record keeps its commit time, so this is where its
  // copies are (db::CommitCopies).
  std::optional<std::pair<double, double>> created_within;
};

struct WorkloadStats {
  Workload workload;
  std::int64_t records = 0;
  std::int64_t ok_records = 0;
  // Best median per target, ascending by target name.
  std::vector<std::pair<std::string, double>> best;
};

struct Session {
  std::int64_t id = 0;
  std::string command, host, target, strategy;
  std::uint64_t seed = 0;
  std::int64_t trials = 0;
  double started = 0, ended = 0;  // 0: not ended
  // The process that runs the session (ThisProcess()), so that a second
  // tuner can tell a session someone is running from one left behind.
  // Empty: no one (released at an interruption, or written before owners).
  std::string owner;
  // When the session last showed it was alive: its start, a batch of
  // records committed in it, or a tuner taking it over (unix seconds, by
  // the database's clock; read through a server, by the reader's). 0: not
  // known (written before, or read from a server older than, the
  // database kept it).
  double last_active = 0;
};

struct StoredModel {
  std::int64_t id = 0;
  int feature_version = 0;
  std::string objective;
  std::string blob;     // the model's own serialization
  std::int64_t training_rows = 0;
  std::string metrics;  // JSON text
  double created = 0;
};

class Database {
 public:
  virtual ~Database() = default;

  // Idempotent: returns the id of the workload with this hash, adding it if
  // new. Throws DatabaseError on a hash collision (same hash, different
  // structure).
  virtual std::int64_t CommitWorkload(const WorkloadInput& workload) = 0;
  // All in one transaction; every record's workload must be committed.
  // Exact duplicates (same workload, target, trace, run_secs, status) are
  // skipped. Returns how many were added. Each session the records name is
  // marked active now (Session::last_active).
  virtual std::int64_t CommitRecords(const std::vector<TuningRecord>& records) = 0;
  // The k best valid (ok) records of a workload on a target, fastest first
  // (equal times in the order they were added).
  virtual std::vector<TuningRecord> TopK(const std::string& workload_hash, const std::string& target, int k) = 0;
  virtual std::vector<TuningRecord> Records(const RecordQuery& query) = 0;
  // The whole workload: its input with program and structure.
  virtual std::optional<Workload> FindWorkload(const std::string& hash) = 0;
  // Every workload with its counts and bests. The inputs may leave program
  // and structure empty (a server's listing does): FindWorkload has them.
  virtual std::vector<WorkloadStats> Workloads() = 0;
  // Number of tuning records.
  virtual std::int64_t Size() = 0;
  // Distinct targets that have records for a workload.
  virtual std::vector<std::string> Targets(const std::string& workload_hash) = 0;

  virtual std::int64_t StartSession(const Session& session) = 0;
  virtual void EndSession(std::int64_t id, double ended) = 0;
  virtual std::vector<Session> Sessions() = 0;
  // Gives an open session to `owner` if its owner is still `expected` (an
  // empty string matches a session without one): a compare-and-set, so of
  // two tuners taking over one session only one succeeds. False when the
  // owner changed, the session ended, or there is no such session.
  virtual bool ClaimSession(std::int64_t id, const std::string& expected, const std::string& owner) = 0;
  // Later timings of a valid record (its kernel timed again beside its
  // rivals, tuner.h): they join its run_secs, of which it keeps the newest
  // kMaxTimings, and its median, by which it ranks, is taken over all it
  // keeps. For duplicates it stays the measurement first committed.
  // False when there is no such ok record; throws DatabaseError for a
  // timing that is not positive seconds, UnsupportedError for a server
  // older than later timings.
  virtual bool AddTimings(std::int64_t record_id, const std::vector<double>& run_secs) = 0;
  static constexpr std::size_t kMaxTimings = 64;

  virtual std::int64_t SaveModel(const StoredModel& model) = 0;
  virtual std::vector<StoredModel> Models() = 0;  // newest first, blobs left empty
  virtual std::optional<StoredModel> LoadModel(std::int64_t id) = 0;  // 0: the newest

  // Runs fn so that no other writer comes between its reads and writes,
  // and an exception from it undoes them, where the database can (a SQLite
  // transaction; nested calls join the outer one). The default runs fn as
  // it is: a server offers no transaction across requests.
  virtual void Transaction(const std::function<void()>& fn) { fn(); }
};

// A listed workload's whole input: the listing's own when it holds the
// program, else FindWorkload's (a server's listing leaves programs out).
WorkloadInput WholeInput(Database& db, const WorkloadStats& listed);

struct MergeCounts {
  std::int64_t records = 0;                     // added to `into`
  std::int64_t records_with_later_timings = 0;  // already there, given timings they lacked
};

// Copies every workload and record of `from` into `into` (duplicates
// skipped). A record both hold, copied by an earlier merge and timed again
// on either side since (Database::AddTimings), is one measurement: the
// timings `into`'s copy lacks are added to it. Such a pair is told by its
// program, target and commit time, and a timing in common; a commit time
// that is not known (kUnknownCommitTime: a copy that went through TVM's
// files) matches any, the timing in common still telling the pair.
MergeCounts Merge(Database& into, Database& from);

// Commits records copied from another database, in one transaction (see
// Database::Transaction): an ok record that gives its commit time
// (`created`) and whose measurement `into` holds already, as Merge tells
// it, adds the timings its copy lacks rather than a second record. Other
// records are committed as CommitRecords commits them. The records'
// workloads must be in `into`.
MergeCounts CommitCopies(Database& into, std::vector<TuningRecord> records);

// `secs` after `earlier`, the newest Database::kMaxTimings of them; throws
// DatabaseError naming `record_id` for a timing that is not positive seconds.
std::vector<double> WithLaterTimings(std::int64_t record_id, std::vector<double> earlier,
                                     const std::vector<double>& secs);

// The name under which records of a target are stored and looked up: an
// llvm target string with -mcpu, -mattr and -num-cores first, in that
// order (as measure::Target prints its targets), any other options after
// them by name, one space apart ("-key value" read as "-key=value", as TVM
// reads it), and TVM's default "-keys=cpu" left out
// (TVM prints it, so a compiler's str(target) and a tuner's string of one
// target meet). A string that is not an llvm target, or gives an option
// twice, keeps its words as they are, one space apart: what it means is not
// this function's to guess.
std::string CanonicalTarget(const std::string& target);

// The hardware fingerprint of this machine: "CPU model; N cores".
std::string HardwareFingerprint();

double NowSeconds();

// This process as a session owner: "host/pid/start/boot/pidns", with the
// pid's start time (clock ticks since boot), the boot's id, which a later
// process given the same pid does not share, and the pid namespace the pid
// is counted in (containers on one host share its boot, and with the
// host's network, its name too, but not its pids).
std::string ThisProcess();

// The same for process `pid` of this pid namespace; its start is empty if
// there is no such process or it has ended.
std::string ProcessOwner(int pid);

// A session owner's parts; nullopt for an empty or unreadable owner.
// Owners written before pid namespaces have four parts, and pid_namespace
// empty.
struct OwnerParts {
  std::string host, pid, start, boot, pid_namespace;
};
std::optional<OwnerParts> ParseOwner(const std::string& owner);

// Whether this process can look at the owner's process: same host, boot
// and pid namespace (an owner from before pid namespaces counts as in this
// one).
bool OwnerIsVisibleHere(const OwnerParts& owner);

// Whether a session's owner may still be running: false for an empty or
// unreadable owner, and for one visible here whose boot has passed or whose
// process has ended; true for a live process and for any owner this
// process cannot look at (another host, another container): `tunedb db
// release` hands such a session back once its owner is known to be gone.
bool OwnerMayBeRunning(const std::string& owner);

// How long a session whose owner this process cannot look at may go
// without a sign of life (Session::last_active) before it counts as left
// behind. A tuner commits a chunk of records every few seconds to minutes;
// the slowest chunk the default limits allow (16 candidates, each built in
// up to 60 s and run four times in up to 10 s) takes about 25 minutes.
constexpr double kSessionLeaseSeconds = 3600;

// Whether an open session may still be running, at unix time `now`: as
// OwnerMayBeRunning, except that a session whose owner cannot be looked at
// and which has been quiet for longer than kSessionLeaseSeconds counts as
// left behind (one whose last sign of life is not known counts as running).
bool SessionMayBeRunning(const Session& session, double now);

}  // namespace tunedb::db
