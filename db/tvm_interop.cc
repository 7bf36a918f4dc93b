#include "db/tvm_interop.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

namespace tunedb::db {
namespace {

using nlohmann::json;

constexpr const char* kWorkloadFile = "database_workload.json";
constexpr const char* kRecordFile = "database_tuning_record.json";

[[noreturn]] void Fail(const std::string& file, int line, const std::string& what) {
  throw DatabaseError(file + ":" + std::to_string(line) + ": " + what);
}

// TVM's files and the records' JSON columns are parsed here and printed
// again, and nlohmann::json prints (and copies) recursively: a text nested
// deeper than kMaxNesting arrays and objects counts as not JSON, so that a
// crafted file cannot overflow the stack. ir/json_text.h bounds the rest of
// tunedb's JSON alike; db depends on nothing of ours.
constexpr int kMaxNesting = 1024;
json ParseOrDiscarded(const std::string& text, bool* nested_too_deep = nullptr) {
  bool too_deep = false;
  auto within = [&too_deep](int depth, json::parse_event_t event, json&) {
    bool opens = event == json::parse_event_t::array_start || event == json::parse_event_t::object_start;
    too_deep = too_deep || (opens && depth >= kMaxNesting);
    return !too_deep;
  };
  json j = json::parse(text, within, /*allow_exceptions=*/false);
  if (nested_too_deep) *nested_too_deep = too_deep;
  return too_deep ? json(json::value_t::discarded) : j;
}

// A line of TVM's files as JSON; DatabaseError naming the file and line
// when it is not JSON tunedb reads.
json ParseLine(const std::string& line, const std::string& file, int n) {
  bool too_deep = false;
  json j = ParseOrDiscarded(line, &too_deep);
  if (too_deep) Fail(file, n, "arrays and objects nest deeper than " + std::to_string(kMaxNesting) + " levels");
  if (j.is_discarded()) Fail(file, n, "not valid JSON");
  return j;
}

// A line of an export file, or nullopt when a stored string is not UTF-8,
// which JSON cannot hold (SQLite hands back the bytes of a damaged row).
std::optional<std::string> JsonLine(const json& line) {
  try {
    return line.dump();
  } catch (const json::type_error&) {
    return std::nullopt;
  }
}

// Why a record cannot be exported as TVM's JSON, or empty: one of its JSON
// columns did not read back as JSON. The parsed columns go to `columns`.
std::string ExportProblem(const TuningRecord& r, std::array<json, 3>& columns) {
  columns[0] = ParseOrDiscarded(r.trace);
  if (columns[0].is_discarded()) return "its trace is not valid JSON";
  columns[1] = r.target_json.empty() ? json(r.target) : ParseOrDiscarded(r.target_json);
  if (columns[1].is_discarded()) return "its TVM target is not valid JSON";
  columns[2] = r.args_info.empty() ? json::array() : ParseOrDiscarded(r.args_info);
  if (columns[2].is_discarded()) return "its args_info is not valid JSON";
  return "";
}

}  // namespace

WorkloadInput TvmWorkloadInput(const std::string& hash, const std::string& module) {
  return {hash, "tvm:" + hash, "tvm", "tvm:" + module, module};
}

std::string TargetStringFromTvm(const std::string& target_json) {
  json t = ParseOrDiscarded(target_json);
  if (t.is_string()) return CanonicalTarget(t.get<std::string>());
  if (!t.is_object()) return target_json;
  if (t.contains("kind") && !t["kind"].is_string()) return target_json;  // not a target this can spell
  std::string s = t.value("kind", std::string("llvm"));
  if (t.contains("mcpu") && t["mcpu"].is_string()) s += " -mcpu=" + t["mcpu"].get<std::string>();
  if (t.contains("num-cores") && t["num-cores"].is_number_integer()) {
    s += " -num-cores=" + std::to_string(t["num-cores"].get<std::int64_t>());
  }
  return s;
}

TvmImportStats ImportTvm(SqliteDatabase& db, const std::string& dir, const ProgramReader& read_program) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw DatabaseError("cannot import from " + dir + ": " +
                        (fs::exists(dir, ec) ? "it is not a directory" : "no such directory"));
  }
  fs::path wpath = fs::path(dir) / kWorkloadFile, rpath = fs::path(dir) / kRecordFile;
  std::ifstream wf(wpath), rf(rpath);
  if (!wf) throw DatabaseError("cannot read " + wpath.string());
  if (!rf) throw DatabaseError("cannot read " + rpath.string());
  TvmImportStats stats;
  db.Transaction([&] {
    // Workloads, by line index.
    std::vector<std::string> hashes;
    std::string line;
    int n = 0;
    while (std::getline(wf, line)) {
      ++n;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      json j = ParseLine(line, wpath.string(), n);
      if (!j.is_array() || j.size() != 2 || !(j[0].is_string() || j[0].is_number_integer())) {
        Fail(wpath.string(), n, "expected [shash, module]");
      }
      std::string hash = j[0].is_string() ? j[0].get<std::string>() : std::to_string(j[0].get<std::int64_t>());
      // TVM writes its structural hash in decimal. Anything else would end
      // up in URLs (/v1/workloads/{hash}) and pages the server builds.
      if (hash.empty() || hash.size() > 20 || hash.find_first_not_of("0123456789") != std::string::npos) {
        Fail(wpath.string(), n, "workload hash '" + hash.substr(0, 40) + "' is not a decimal number (TVM's structural hash)");
      }
      std::string module = j[1].dump();
      WorkloadInput w = TvmWorkloadInput(hash, module);
      try {
        if (read_program) {
          if (std::optional<WorkloadInput> own = read_program(hash, module)) w = std::move(*own);
        }
        db.CommitWorkload(w);
      } catch (const std::exception& e) {
        Fail(wpath.string(), n, e.what());
      }
      hashes.push_back(hash);
      ++stats.workloads;
    }
    n = 0;
    std::vector<TuningRecord> records;
    while (std::getline(rf, line)) {
      ++n;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      json j = ParseLine(line, rpath.string(), n);
      if (!j.is_array() || j.size() != 2 || !j[0].is_number_integer() || !j[1].is_array() || j[1].size() != 4) {
        Fail(rpath.string(), n, "expected [workload_index, [trace, run_secs, target, args_info]]");
      }
      std::int64_t index = j[0].get<std::int64_t>();
      if (index < 0 || index >= static_cast<std::int64_t>(hashes.size())) {
        Fail(rpath.string(), n, "workload index " + std::to_string(index) + " is not a line of " + kWorkloadFile);
      }
      const json& rec = j[1];
      if (!rec[0].is_array() || rec[0].empty() || !rec[0][0].is_array()) {
        Fail(rpath.string(), n, "the trace must be [[instructions...], [decisions...]]");
      }
      TuningRecord r;
      r.workload_hash = hashes[static_cast<std::size_t>(index)];
      r.trace = rec[0].dump();
      // No timing at all (null, or TVM's empty list) is a failed measurement.
      bool failed = rec[1].is_null() || (rec[1].is_array() && rec[1].empty());
      if (!rec[1].is_null()) {
        if (!rec[1].is_array()) Fail(rpath.string(), n, "run_secs must be a list of numbers or null");
        for (const json& x : rec[1]) {
          if (!x.is_number()) Fail(rpath.string(), n, "run_secs must be a list of numbers or null");
          // TVM marks a failure with 1e10 s; a time of zero or less is no
          // measurement at all, and would sort first as the best.
          if (!(x.get<double>() > 0)) Fail(rpath.string(), n, "run_secs must be positive, got " + x.dump());
          r.run_secs.push_back(x.get<double>());
          failed |= x.get<double>() >= 1e9;
        }
      }
      if (!rec[2].is_object() && !rec[2].is_string()) Fail(rpath.string(), n, "the target must be an object or a string");
      // The fields the target string is made of: one of another type would
      // be left out of it, and the record filed under another target.
      for (const char* key : {"kind", "mcpu"}) {
        if (rec[2].is_object() && rec[2].contains(key) && !rec[2][key].is_string()) {
          Fail(rpath.string(), n,
               std::string("the target's \"") + key + "\" must be a string, not " + rec[2][key].dump());
        }
      }
      if (rec[2].is_object() && rec[2].contains("num-cores") && !rec[2]["num-cores"].is_number_integer()) {
        Fail(rpath.string(), n,
             "the target's \"num-cores\" must be a whole number, not " + rec[2]["num-cores"].dump());
      }
      r.target_json = rec[2].dump();
      r.target = TargetStringFromTvm(r.target_json);
      r.args_info = rec[3].dump();
      r.status = failed ? RecordStatus::kRunError : RecordStatus::kOk;
      if (failed) r.error = "failed in TVM (imported)";
      r.created = kUnknownCommitTime;  // TVM keeps none
      records.push_back(std::move(r));
    }
    // As copies: a tunedb record exported and imported back (its commit
    // time lost on the way) that was timed again since is the same
    // measurement, and gets the timings it lacks rather than a second row.
    std::int64_t given = static_cast<std::int64_t>(records.size());
    MergeCounts counts = CommitCopies(db, std::move(records));
    stats.records = counts.records;
    stats.duplicates = given - counts.records;
    stats.with_later_timings = counts.records_with_later_timings;
  });
  return stats;
}

TvmExportStats ExportTvm(Database& db, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) {
    throw DatabaseError("cannot export to " + dir + ": " +
                        (fs::exists(dir) ? "it is not a directory" : "cannot create it: " + ec.message()));
  }
  fs::path wpath = fs::path(dir) / kWorkloadFile, rpath = fs::path(dir) / kRecordFile;
  std::ofstream wf(wpath), rf(rpath);
  if (!wf) throw DatabaseError("cannot write " + wpath.string());
  if (!rf) throw DatabaseError("cannot write " + rpath.string());
  TvmExportStats stats;
  std::int64_t index = 0;
  for (const WorkloadStats& w : db.Workloads()) {
    const WorkloadInput in = WholeInput(db, w);
    json module = ParseOrDiscarded(in.program);
    if (module.is_discarded()) module = in.program;
    std::optional<std::string> workload_line = JsonLine(json::array({in.hash, module}));
    if (!workload_line) {
      // The records' lines would name this workload by its index.
      stats.left_out.push_back("workload " + std::to_string(w.workload.id) +
                               " and its records: its hash or program is not UTF-8 text");
      continue;
    }
    wf << *workload_line << "\n";
    ++stats.workloads;
    RecordQuery q;
    q.workload_hash = in.hash;
    q.limit = 5000;
    while (true) {
      std::vector<TuningRecord> page = db.Records(q);
      if (page.empty()) break;
      q.after_id = page.back().id;
      for (const TuningRecord& r : page) {
        std::array<json, 3> columns;  // trace, target, args_info
        std::string problem = ExportProblem(r, columns);
        json run_secs = r.run_secs.empty() ? json(nullptr) : json(r.run_secs);
        std::optional<std::string> line;
        if (problem.empty()) {
          line = JsonLine(json::array({index, json::array({columns[0], run_secs, columns[1], columns[2]})}));
          if (!line) problem = "a text of it is not UTF-8";
        }
        if (!problem.empty()) {
          stats.left_out.push_back("record " + std::to_string(r.id) + ": " + problem);
          continue;
        }
        rf << *line << "\n";
        ++stats.records;
      }
    }
    ++index;
  }
  // A full disk shows only here: without the check the export would
  // report every record written.
  auto finish = [](std::ofstream& file, const fs::path& path) {
    file.close();
    if (!file) throw DatabaseError("writing " + path.string() + " failed (is the disk full?)");
  };
  finish(wf, wpath);
  finish(rf, rpath);
  return stats;
}

}  // namespace tunedb::db
