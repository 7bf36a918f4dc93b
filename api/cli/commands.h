// The subcommands of the `tunedb` executable. Each Add*Command registers a
// subcommand with its options and the callback that runs it. Callbacks
// throw on failure; main() turns exceptions into one-line messages and exit
// codes (2 for bad input, 1 for other failures).
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "db/sqlite_database.h"
#include "ir/flops.h"
#include "ir/stmt.h"
#include "measure/target.h"

namespace tunedb::cli {

// Bad input from the user (spec, file, option value): exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A result that was printed and is a failure (a measured candidate that did
// not come out ok, a database check that found damage): the exit code is 1.
class ProblemsReported : public std::exception {};

void AddWorkloadsCommand(CLI::App& app);
void AddShowCommand(CLI::App& app);
void AddSpaceCommand(CLI::App& app);
void AddRunCommand(CLI::App& app);
void AddDbCommands(CLI::App& app);     // `db ...` and `best`
void AddModelCommands(CLI::App& app);  // `train` and `model ...`
void AddTuneCommand(CLI::App& app);
void AddE2eCommand(CLI::App& app);    // `e2e mlp`
void AddServeCommand(CLI::App& app);

// Adds `--seed` (a whole number from 0 up) to a command. CLI11 reads "-1"
// into an unsigned integer as 2^64 - 1, which would silently be some other
// seed to a user who meant "random"; it is refused instead. (Defined in
// program_source.cc.)
CLI::Option* AddSeedOption(CLI::App* cmd, std::uint64_t* seed, const std::string& description);

// While it lives, SIGINT (Ctrl-C) and SIGTERM (as `timeout`, `kill` and job
// schedulers send it) set flag() instead of ending the process, so that a
// command that tunes stops cleanly after the chunk in flight. A signal a
// second or more after the first ends the process at once; one sooner is
// the same request delivered twice (`timeout` sends it to the tuner and to
// its process group). After a request, the handler outlives the object,
// so that the request's second delivery cannot end a process that is
// finishing; without one, the previous handlers come back. One at a time.
// (Defined in interrupt.cc.)
class InterruptHandler {
 public:
  InterruptHandler();
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;
  const std::atomic<bool>* flag() const;

 private:
  struct sigaction previous_int_ {}, previous_term_ {};
};

// db::ProgramReader for `db import-tvm`: a module that is a tunedb program
// (what `db export-tvm` writes for a tunedb workload) as that workload;
// nullopt for TVM's own modules. (Defined in db_command.cc.)
std::optional<db::WorkloadInput> TunedbProgramInTvmFile(const std::string& hash, const std::string& module);

// "2.5x faster" or "1.3x slower": how a new time compares with a reference
// time. A tiny budget on a tiny workload can leave the tuned program the
// slower one, and "0.3x faster" would misread. (Defined in tune_command.cc.)
std::string SpeedupText(double reference_secs, double new_secs);

// "352.98 GFLOP/s", or, for a program that counts no FLOPs (a transpose),
// the GB/s of its parameters each moved once, where "0.00 GFLOP/s" would
// tell nothing. (Defined in tune_command.cc.)
std::string RateText(std::int64_t flops, std::int64_t param_bytes, double secs);

// (ir/flops.h: durations as every tool quotes them.)
using ir::DurationText;

// "2026-12-04 13:21:44" (UTC) for a time in Unix seconds; "?" for one that
// is no date (a damaged row, or what another client wrote). (Defined in
// db_command.cc.)
std::string UtcTimeText(double unix_seconds);

// The database of a command that reads one (db stats, records, best,
// export-tvm, merge's source, train, model): a tunedb server's, when the
// location is its URL (http://HOST:PORT; token: for its write routes), or
// a file that must already exist, since a mistyped path would otherwise
// create an empty file and report "no records" (UsageError naming the
// path). A file opens read-only unless asked (train stores its model), so
// that a database on a read-only file can be inspected. (Defined in
// db_command.cc.)
std::unique_ptr<db::Database> OpenExistingDatabase(
    const std::string& location, db::SqliteDatabase::OpenMode mode = db::SqliteDatabase::OpenMode::kReadOnly,
    const std::string& token = "");

// What makes a stored trace usable: tunedb reads it (and replays it onto
// the program, when one is given), or, for an imported TVM trace served as
// it is, it is JSON.
enum class TraceUse { kReplayed, kAsJson };

// The fastest valid record of a workload on a target whose trace is usable
// and whose timings read back. SQLite keeps no checksums, so a damaged row
// reads back; the best of the rest is served rather than none, each skipped
// record named in a warning on stderr. nullopt when none of the 16 fastest
// can be used. (Defined in db_command.cc.)
std::optional<db::TuningRecord> BestUsableRecord(db::Database& database, const std::string& hash,
                                                 const std::string& target,
                                                 const std::optional<ir::PrimFunc>& program,
                                                 TraceUse use = TraceUse::kReplayed);

// A --target option's target: the host when it is empty; UsageError naming
// what is wrong with a target string LLVM cannot compile for. (Defined in
// program_source.cc.)
measure::Target TargetOption(const std::string& text);

// Reads a whole text file; UsageError when it cannot.
std::string ReadTextFile(const std::string& path);
// A bearer token from a file (--token-file), without trailing whitespace;
// "" for an empty path (no --token-file given). UsageError when the file
// cannot be read or holds no token.
std::string ReadTokenFile(const std::string& path);

}  // namespace tunedb::cli
