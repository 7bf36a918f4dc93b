#include "db/tvm_interop.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/db/damage.h"

namespace tunedb::db {
namespace {

namespace fs = std::filesystem;

std::string Dir(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string FreshDb(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid()) + ".sqlite";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  return path;
}

// Lines as TVM writes them: a pre-0.24 workload (base64 module text) and a
// 0.24 one (JSON module object, GetSBlock traces).
const char* kWorkloads =
    "[\"1043231297183837446\", \"eJztWk1v2zAM/SuFzzskk+Tb+Q==\"]\n"
    "[\"9182736450\", {\"root\": 1, \"nodes\": [{\"type_key\": \"IRModule\"}], \"attrs\": {\"tvm_version\": \"0.24.0\"}}]\n";
const char* kRecords =
    "[0, [[[[\"GetBlock\", [], [\"C\", \"main\"], [\"b0\"]], [\"GetLoops\", [\"b0\"], [], [\"l1\", \"l2\", \"l3\"]]], []], "
    "[0.00123, 0.00121, 0.00125], {\"kind\": \"llvm\", \"tag\": \"\", \"keys\": [\"cpu\"], \"mcpu\": \"znver4\", "
    "\"num-cores\": 2}, [[\"TENSOR\", \"float32\", [128, 128]]]]]\n"
    "[0, [[[[\"GetBlock\", [], [\"C\", \"main\"], [\"b0\"]]], []], [1e+10], {\"kind\": \"llvm\", \"mcpu\": \"znver4\", "
    "\"num-cores\": 2}, []]]\n"
    "[1, [[[[\"GetSBlock\", [], [\"C\", \"main\"], [\"b0\"]], [\"SamplePerfectTile\", [\"l1\"], [4, 64], [\"v2\", \"v3\", "
    "\"v4\", \"v5\"]]], [[1, [2, 4, 4, 4]]]], [0.5], \"llvm -mcpu=znver4 -num-cores=2\", []]]\n";

void Write(const std::string& dir, const std::string& workloads, const std::string& records) {
  std::ofstream(fs::path(dir) / "database_workload.json") << workloads;
  std::ofstream(fs::path(dir) / "database_tuning_record.json") << records;
}

std::vector<nlohmann::json> Lines(const fs::path& file) {
  std::ifstream in(file);
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

TEST(TvmInteropTest, ImportThenExportReproducesTheRecords) {
  std::string in = Dir("tvm_in"), out = Dir("tvm_out");
  Write(in, kWorkloads, kRecords);
  SqliteDatabase db(FreshDb("tvm_roundtrip"));
  TvmImportStats stats = ImportTvm(db, in);
  EXPECT_EQ(stats.workloads, 2);
  EXPECT_EQ(stats.records, 3);
  // Stored as tunedb sees them: target strings, failures as run_error.
  std::vector<TuningRecord> top = db.TopK("1043231297183837446", "llvm -mcpu=znver4 -num-cores=2", 5);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_DOUBLE_EQ(top[0].Median(), 0.00123);
  RecordQuery failed;
  failed.status = RecordStatus::kRunError;
  EXPECT_EQ(db.Records(failed).size(), 1u);
  // Importing again adds nothing.
  EXPECT_EQ(ImportTvm(db, in).records, 0);
  ExportTvm(db, out);
  EXPECT_EQ(Lines(fs::path(out) / "database_workload.json"), Lines(fs::path(in) / "database_workload.json"));
  EXPECT_EQ(Lines(fs::path(out) / "database_tuning_record.json"), Lines(fs::path(in) / "database_tuning_record.json"));
}

// An exported record that was timed again where it came from is the same
// measurement when the later export is imported: the timings join the copy
// imported before, as a merge joins them, rather than a second record.
TEST(TvmInteropTest, AnExportImportedAgainAfterLaterTimingsJoinsTheFirstCopy) {
  std::string in = Dir("tvm_in_later"), first = Dir("tvm_first"), later = Dir("tvm_later");
  Write(in, kWorkloads, kRecords);
  SqliteDatabase origin(FreshDb("tvm_origin"));
  ImportTvm(origin, in);
  ExportTvm(origin, first);
  const std::string target = "llvm -mcpu=znver4 -num-cores=2";
  ASSERT_TRUE(origin.AddTimings(origin.TopK("1043231297183837446", target, 1)[0].id, {0.00119}));
  ExportTvm(origin, later);
  TvmImportStats back = ImportTvm(origin, later);
  EXPECT_EQ(back.records, 0);
  EXPECT_EQ(back.with_later_timings, 0);

  SqliteDatabase copy(FreshDb("tvm_copy"));
  EXPECT_EQ(ImportTvm(copy, first).records, 3);
  TvmImportStats again = ImportTvm(copy, later);
  EXPECT_EQ(again.records, 0);
  EXPECT_EQ(again.duplicates, 3);
  EXPECT_EQ(again.with_later_timings, 1);
  EXPECT_EQ(copy.Size(), 3);
  EXPECT_EQ(copy.TopK("1043231297183837446", target, 1)[0].run_secs.size(), 4u);
}

TEST(TvmInteropTest, AnExportThatCannotBeWrittenSaysWhere) {
  std::string in = Dir("tvm_in_full"), out = Dir("tvm_out_full");
  Write(in, kWorkloads, kRecords);
  SqliteDatabase db(FreshDb("tvm_full"));
  ImportTvm(db, in);
  auto expect_error = [&](const std::string& dir, const std::string& error) {
    try {
      ExportTvm(db, dir);
      ADD_FAILURE() << "expected an error for " << dir;
    } catch (const DatabaseError& e) {
      EXPECT_EQ(std::string(e.what()), error);
    }
  };
  // A file where the directory should be.
  std::string file = (fs::path(in) / "database_workload.json").string();
  expect_error(file, "cannot export to " + file + ": it is not a directory");
  // A full disk: the record file is /dev/full, where every write fails.
  fs::create_symlink("/dev/full", fs::path(out) / "database_tuning_record.json");
  expect_error(out, "writing " + (fs::path(out) / "database_tuning_record.json").string() +
                        " failed (is the disk full?)");
}

TEST(TvmInteropTest, AnExportLeavesOutDamagedRowsAndNamesThem) {
  std::string in = Dir("tvm_in_damaged"), out = Dir("tvm_out_damaged");
  Write(in, kWorkloads, kRecords);
  std::string path = FreshDb("tvm_damaged");
  {
    SqliteDatabase db(path);
    ImportTvm(db, in);
  }
  // Record 1's trace no longer JSON; the second workload's module a JSON
  // string holding a byte that is not UTF-8, which no JSON text can hold.
  testing::Damage(path, "UPDATE records SET trace = '[[[\"GetBlock\"' WHERE id = 1");
  testing::Damage(path, "UPDATE workloads SET program = CAST(X'22FC22' AS TEXT) WHERE hash = '9182736450'");
  SqliteDatabase db(path);
  TvmExportStats stats = ExportTvm(db, out);
  EXPECT_EQ(stats.workloads, 1);
  EXPECT_EQ(stats.records, 1);
  EXPECT_EQ(stats.left_out, (std::vector<std::string>{"record 1: its trace is not valid JSON",
                                                      "workload 2 and its records: its hash or program is not "
                                                      "UTF-8 text"}));
  // What was written is every other row, each line JSON TVM can read.
  std::vector<nlohmann::json> records = Lines(fs::path(out) / "database_tuning_record.json");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], Lines(fs::path(in) / "database_tuning_record.json")[1]);
  EXPECT_EQ(Lines(fs::path(out) / "database_workload.json").size(), 1u);
}

void ExpectImportError(const std::string& workloads, const std::string& records, const std::string& suffix) {
  std::string dir = Dir("tvm_bad");
  Write(dir, workloads, records);
  SqliteDatabase db(FreshDb("tvm_bad"));
  try {
    ImportTvm(db, dir);
    FAIL() << "expected an error";
  } catch (const DatabaseError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.substr(msg.size() - std::min(msg.size(), suffix.size())), suffix) << msg;
  }
  EXPECT_EQ(db.Size(), 0);             // nothing committed
  EXPECT_TRUE(db.Workloads().empty());
}

TEST(TvmInteropTest, MalformedFilesStopTheImportWithFileAndLine) {
  ExpectImportError(kWorkloads, std::string(kRecords) + "[0, [[[]], [1.0]]\n",
                    "database_tuning_record.json:4: not valid JSON");
  ExpectImportError(kWorkloads, std::string(kRecords) + "[7, [[[], []], [1.0], {}, []]]\n",
                    "database_tuning_record.json:4: workload index 7 is not a line of database_workload.json");
  ExpectImportError(std::string(kWorkloads) + "{\"not\": \"an array\"}\n", kRecords,
                    "database_workload.json:3: expected [shash, module]");
  ExpectImportError(std::string(kWorkloads) + "[\"<img src=x>\", \"eJzz\"]\n", kRecords,
                    "database_workload.json:3: workload hash '<img src=x>' is not a decimal number (TVM's structural hash)");
  // Printed again, a line this deep overflowed the stack.
  ExpectImportError(kWorkloads,
                    std::string(kRecords) + "[0, [" + std::string(100000, '[') + std::string(100000, ']') +
                        ", [1.0], {}, []]]\n",
                    "database_tuning_record.json:4: arrays and objects nest deeper than 1024 levels");
  // Truncated in the middle of a line.
  std::string records = kRecords;
  ExpectImportError(kWorkloads, records.substr(0, records.size() - 40), "database_tuning_record.json:3: not valid JSON");
  ExpectImportError(kWorkloads, "[0, [[[], []], \"fast\", {}, []]]\n",
                    "database_tuning_record.json:1: run_secs must be a list of numbers or null");
  // A time of zero or less is no measurement, and would sort first as the best.
  ExpectImportError(kWorkloads, "[0, [[[], []], [0.001, -1], {}, []]]\n",
                    "database_tuning_record.json:1: run_secs must be positive, got -1");
  // The target's fields of another type (found by fuzz/tvm_import.cc: a
  // kind that was a list threw json's type_error out of the import).
  ExpectImportError(kWorkloads, "[0, [[[], []], [0.001], {\"kind\": [\"cpu\"]}, []]]\n",
                    "database_tuning_record.json:1: the target's \"kind\" must be a string, not [\"cpu\"]");
  ExpectImportError(kWorkloads, "[0, [[[], []], [0.001], {\"kind\": \"llvm\", \"mcpu\": 4}, []]]\n",
                    "database_tuning_record.json:1: the target's \"mcpu\" must be a string, not 4");
  ExpectImportError(kWorkloads, "[0, [[[], []], [0.001], {\"kind\": \"llvm\", \"num-cores\": \"2\"}, []]]\n",
                    "database_tuning_record.json:1: the target's \"num-cores\" must be a whole number, not \"2\"");
}

// An empty list of times is no measurement: imported as a failure, like
// null and 1e10. It used to be stored as an ok record without a timing,
// which `tunedb db check` then reported as damage.
TEST(TvmInteropTest, AnEmptyListOfTimesIsAFailedMeasurement) {
  std::string dir = Dir("tvm_empty_times");
  Write(dir, kWorkloads,
        "[0, [[[[\"GetBlock\", [], [\"C\", \"main\"], [\"b0\"]]], []], [], \"llvm -mcpu=znver4 -num-cores=2\", []]]\n");
  SqliteDatabase db(FreshDb("tvm_empty_times"));
  EXPECT_EQ(ImportTvm(db, dir).records, 1);
  RecordQuery failed;
  failed.status = RecordStatus::kRunError;
  ASSERT_EQ(db.Records(failed).size(), 1u);
  EXPECT_EQ(db.Records(failed)[0].error, "failed in TVM (imported)");
  EXPECT_TRUE(db.TopK("1043231297183837446", "llvm -mcpu=znver4 -num-cores=2", 5).empty());
}

TEST(TvmInteropTest, MissingFiles) {
  SqliteDatabase db(FreshDb("tvm_missing"));
  auto error = [&](const std::string& dir) {
    try {
      ImportTvm(db, dir);
    } catch (const DatabaseError& e) {
      return std::string(e.what());
    }
    return std::string("imported");
  };
  EXPECT_EQ(error("/nonexistent"), "cannot import from /nonexistent: no such directory");
  // A file given for the directory was read as DIR/database_workload.json.
  std::string file = ::testing::TempDir() + "/tvm_not_a_dir.json";
  std::ofstream(file) << "{}\n";
  EXPECT_EQ(error(file), "cannot import from " + file + ": it is not a directory");
  EXPECT_EQ(error(::testing::TempDir()).rfind("cannot read ", 0), 0u);
}

TEST(TvmInteropTest, TargetStrings) {
  EXPECT_EQ(TargetStringFromTvm("{\"kind\": \"llvm\", \"mcpu\": \"znver4\", \"num-cores\": 2}"),
            "llvm -mcpu=znver4 -num-cores=2");
  EXPECT_EQ(TargetStringFromTvm("\"llvm -mcpu=skylake\""), "llvm -mcpu=skylake");
  EXPECT_EQ(TargetStringFromTvm("{\"kind\": [\"cpu\"]}"), "{\"kind\": [\"cpu\"]}");
}

}  // namespace
}  // namespace tunedb::db
