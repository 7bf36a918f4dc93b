// Fuzz target: TVM MetaSchedule's JSON database files, as `tunedb db
// import-tvm DIR` reads them (db/tvm_interop.h).
//
// The input is both files: database_workload.json, a line "---", then
// database_tuning_record.json. They are written to a folder of the
// process's own and imported into an SQLite database in memory that
// already holds a workload and a record, reading tunedb's own programs in
// the workload file as the command does (cli::TunedbProgramInTvmFile).
//
// Promise: the import succeeds, or fails with a DatabaseError naming the
// file and line, and then nothing of it is stored (one transaction).
// Importing the same files again adds nothing.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "api/cli/commands.h"
#include "db/sqlite_database.h"
#include "db/tvm_interop.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace tunedb;

const std::filesystem::path& Folder() {
  static const std::filesystem::path folder = [] {
    std::filesystem::path p =
        std::filesystem::temp_directory_path() / ("tunedb_fuzz_tvm_" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p;
  }();
  return folder;
}

struct Counts {
  std::int64_t records, workloads;
  bool operator==(const Counts&) const = default;
};

Counts CountsOf(db::Database& database) {
  return {database.Size(), static_cast<std::int64_t>(database.Workloads().size())};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::size_t split = input.find("\n---\n");
  const std::string_view workloads = input.substr(0, split);
  const std::string_view records = split == std::string_view::npos ? std::string_view() : input.substr(split + 5);
  std::ofstream(Folder() / "database_workload.json", std::ios::binary | std::ios::trunc) << workloads;
  std::ofstream(Folder() / "database_tuning_record.json", std::ios::binary | std::ios::trunc) << records;

  db::SqliteDatabase database(":memory:");
  db::WorkloadInput w = db::TvmWorkloadInput("12345", "\"eJzLSM3JyQcABiwCFQ==\"");
  database.CommitWorkload(w);
  db::TuningRecord r;
  r.workload_hash = w.hash;
  r.target = "llvm -mcpu=znver4 -num-cores=2";
  r.trace = R"([[["GetBlock", [], ["C", "main"], ["b0"]]], []])";
  r.run_secs = {0.001};
  database.CommitRecords({r});
  const Counts before = CountsOf(database);

  try {
    db::ImportTvm(database, Folder().string(), cli::TunedbProgramInTvmFile);
  } catch (const db::DatabaseError& e) {
    const std::string what = e.what();
    if (what.find("database_workload.json:") == std::string::npos &&
        what.find("database_tuning_record.json:") == std::string::npos) {
      fuzz::Finding("an import error that names no file and line: " + what);
    }
    if (CountsOf(database) != before) fuzz::Finding("a failed import stored part of the files: " + what);
    return 0;
  } catch (const std::exception& e) {
    fuzz::Finding(std::string("not a DatabaseError: ") + e.what());
  }
  const Counts imported = CountsOf(database);
  try {
    db::TvmImportStats again = db::ImportTvm(database, Folder().string(), cli::TunedbProgramInTvmFile);
    if (again.records != 0 || CountsOf(database) != imported) {
      fuzz::Finding("importing the same files again added records");
    }
  } catch (const std::exception& e) {
    fuzz::Finding(std::string("files imported once fail the second time: ") + e.what());
  }
  return 0;
}
