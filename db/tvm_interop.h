// TVM MetaSchedule's JSON database files: import and export.
//
// database_workload.json: one line per workload, [shash, module]; the module
// (base64 text before TVM 0.24, a JSON object from 0.24 on) is kept verbatim
// and opaque, under TVM's hash, as a workload of kind "tvm" (but see
// ProgramReader for tunedb's own programs).
// database_tuning_record.json: one line per record,
// [workload_index, [trace, run_secs, target, args_info]]; trace, target and
// args_info are kept verbatim (a trace of either generation, GetBlock or
// GetSBlock, replays in tunedb), the target is also stored as tunedb's
// target string, and run_secs of 1e9 s or more (TVM's mark of a failed run)
// make a run_error record.
//
// An import is one transaction: a malformed line stops it with file:line
// and the reason, and nothing is committed. Importing the same files twice
// adds nothing the second time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "db/sqlite_database.h"

namespace tunedb::db {

struct TvmImportStats {
  std::int64_t workloads = 0;
  std::int64_t records = 0;      // added
  std::int64_t duplicates = 0;   // already present
  // Of the duplicates, those whose copy here lacked timings the files hold
  // (a tunedb record exported, then timed again where it was imported).
  std::int64_t with_later_timings = 0;
};

// Reads a module that is one of tunedb's own programs. TVM's workload file
// has no place for a tunedb workload but the module, so export-tvm writes
// its program JSON there; an import given this reader stores such a line
// as that tunedb workload again, and a round trip files the records under
// the workload they were measured for (kept opaque, they were a "tvm"
// workload whose hash collided with the tunedb one). Returns nullopt for
// any other module, which is kept as TVM's; throws std::exception with the
// reason for a tunedb program that does not read back or hash to `hash`.
using ProgramReader =
    std::function<std::optional<WorkloadInput>(const std::string& hash, const std::string& module)>;

TvmImportStats ImportTvm(SqliteDatabase& db, const std::string& dir, const ProgramReader& read_program = {});

struct TvmExportStats {
  std::int64_t workloads = 0;
  std::int64_t records = 0;
  // What was not written, and why: a damaged row ("record 12: its trace
  // is not valid JSON"), in the order met.
  std::vector<std::string> left_out;
};

// Writes both files into `dir` (created if needed): TVM workloads with their
// original module text, tunedb's with their program JSON. A row that cannot
// be written as it was stored (a JSON column that does not read back as
// JSON, a text that is not UTF-8: a damaged row) is left out and listed,
// so that every line written is one TVM can read.
TvmExportStats ExportTvm(Database& db, const std::string& dir);

// How a TVM workload is stored: kind "tvm" under TVM's hash, its module
// (JSON text: TVM's base64 string or object) verbatim as the program, and
// the module again as its structure, which tunedb cannot read but must
// compare (the same hash with another module is a collision).
WorkloadInput TvmWorkloadInput(const std::string& hash, const std::string& module);

// "llvm -mcpu=znver4 -num-cores=2" from a TVM target JSON object (or the
// string itself when the target is a string); the JSON text as it is when
// it is neither, or its kind is not a string.
std::string TargetStringFromTvm(const std::string& target_json);

}  // namespace tunedb::db
