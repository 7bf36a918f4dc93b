// Fuzz target: a database file damaged behind tunedb's back, then used by
// tunedb's commands.
//
// SQLite keeps no checksums (docs/ARCHITECTURE.md, "Damaged rows"): a
// changed byte inside a page reads back as another value, and a changed
// page header as a file SQLite calls malformed. The input damages a copy of
// a database that tuning sessions could have written (WriteSeed): it sets
// cells of any table to values of any type (a NULL, an integer, a real, a
// text, a blob), sets the schema version, and overwrites bytes of the file.
// Then the commands a user runs on a database run on it, in this process
// as `tunedb` runs them: db check, stats, records, sessions, best (as a
// script and as JSON), model list and eval, db export-tvm, db merge out of
// it and into it; and the REST API's routes that read, and /v1/predict,
// which loads the stored model.
//
// Promise: each command ends with its answer or with one of the errors
// main() reports as a one-line message of ours (a usage, database, IR or
// cost-model error, or the list of problems db check prints), never with
// another exception (a library's message, naming neither the file nor the
// row), a crash or a sanitizer report. Each route answers with a JSON
// body, an error with "error" in it.
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "api/cli/commands.h"
#include "api/server/routes.h"
#include "costmodel/model.h"
#include "db/database.h"
#include "db/sqlite_database.h"
#include "db/tvm_interop.h"
#include "fuzz/fresh_folder.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/scheduled_by_input.h"
#include "ir/error.h"
#include "ir/json.h"
#include "ir/schedule/schedule.h"
#include "ir/structural.h"
#include "ir/workloads.h"

namespace {

using namespace tunedb;
namespace fs = std::filesystem;

constexpr const char* kTarget = "llvm -mcpu=znver4 -num-cores=2";
constexpr const char* kMatmul = "matmul:M=12,N=10,K=8";
constexpr const char* kDense = "dense_bias_relu:B=4,IN=8,OUT=6";
constexpr const char* kTvmHash = "9182736450";

std::string Joined(const std::vector<std::string>& words) {
  std::string out = "tunedb";
  for (const std::string& w : words) out += " " + w;
  return out;
}

// Runs one command line of `tunedb` in this process, with its output to
// /dev/null. The errors main() turns into its one-line messages end it
// quietly; any other exception is a finding.
void RunCommand(const std::vector<std::string>& words) {
  CLI::App app;
  cli::AddDbCommands(app);
  cli::AddModelCommands(app);
  std::vector<std::string> args = words;
  args.insert(args.begin(), "tunedb");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  std::FILE* null = std::fopen("/dev/null", "w");
  dup2(fileno(null), STDOUT_FILENO);
  std::fclose(null);
  auto restore = [&] {
    std::fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
  };
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const cli::ProblemsReported&) {
  } catch (const cli::UsageError&) {
  } catch (const db::DatabaseError&) {
  } catch (const ir::IrError&) {
  } catch (const costmodel::CostModelError&) {
  } catch (const std::exception& e) {
    restore();
    fuzz::Finding(Joined(words) + ": not an error of ours: " + e.what());
  }
  restore();
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out.flush()) fuzz::Finding("cannot write " + path.string());
}

// Removes a database file with its WAL and shared-memory files.
void RemoveDatabase(const fs::path& path) {
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix, ignored);
}

// Schedules of matmul's block C (a split of one loop, and a reorder), as
// the traces a tuner stores.
std::vector<std::string> MatmulTraces(const ir::PrimFunc& matmul) {
  std::vector<std::string> traces;
  for (std::int64_t factor : {1, 2, 3, 4, 6}) {
    ir::Schedule sch(matmul, 0);
    ir::BlockRV block = sch.GetBlock("C");
    if (factor > 1) {
      std::vector<ir::LoopRV> loops = sch.GetLoops(block);
      std::vector<ir::LoopRV> parts = sch.Split(loops[0], {std::monostate{}, ir::SplitFactor(factor)});
      sch.Reorder({parts[0], loops[1], parts[1]});
    }
    traces.push_back(sch.trace().ToJson().dump());
  }
  return traces;
}

std::int64_t CommitProgram(db::Database& d, const std::string& spec) {
  ir::Workload w = ir::LoadWorkload(spec);
  return d.CommitWorkload({ir::WorkloadHash(w.func), spec, "tunedb", ir::CanonicalEncoding(w.func),
                           ir::ProgramToJson(w.func)});
}

// What tuning sessions could have left: two workloads of ours with ok and
// failed records on two targets, an imported TVM workload and record, an
// ended and an open session, and a cost model trained on the records.
void WriteSeed(const fs::path& path) {
  {
    db::SqliteDatabase d(path.string());
    CommitProgram(d, kMatmul);
    CommitProgram(d, kDense);
    d.CommitWorkload(db::TvmWorkloadInput(kTvmHash, R"({"nodes": [{"type_key": "IRModule"}]})"));
    db::Session session;
    session.command = std::string("tunedb tune --workload ") + kMatmul;
    session.host = "fuzz";
    session.target = kTarget;
    session.strategy = "evolutionary";
    session.seed = 3;
    session.trials = 8;
    session.started = 1700000000;
    const std::int64_t ended = d.StartSession(session);
    d.EndSession(ended, 1700000060);
    session.owner = "elsewhere/4242/1/boot/pidns";
    const std::int64_t open = d.StartSession(session);

    const std::string matmul = ir::WorkloadHash(ir::LoadWorkload(kMatmul).func);
    const std::string dense = ir::WorkloadHash(ir::LoadWorkload(kDense).func);
    std::vector<db::TuningRecord> records;
    auto add = [&](const std::string& hash, const std::string& trace, std::vector<double> secs, std::int64_t s) {
      db::TuningRecord r;
      r.workload_hash = hash;
      r.target = kTarget;
      r.trace = trace;
      r.run_secs = std::move(secs);
      r.session_id = s;
      r.created = 1700000001 + static_cast<double>(records.size());
      r.hardware = "AMD EPYC; 2 cores";
      records.push_back(r);
      return &records.back();
    };
    const std::vector<std::string> traces = MatmulTraces(ir::LoadWorkload(kMatmul).func);
    for (std::size_t i = 0; i < traces.size(); ++i) {
      add(matmul, traces[i], {1e-6 * (10 - i), 1.1e-6 * (10 - i)}, i < 3 ? ended : open);
    }
    add(matmul, traces[1], {}, ended)->status = db::RecordStatus::kBuildError;
    records.back().error = "no";
    add(matmul, traces[2], {3e-6}, open)->target = "llvm -mcpu=skylake-avx512 -num-cores=4";
    add(dense, R"([[["GetBlock", [], ["T_relu", "main"], ["b0"]]], []])", {2e-6, 2.5e-6}, 0);
    add(kTvmHash, R"([[["GetSBlock", [], ["C", "main"], ["b0"]]], []])", {5e-6}, 0)->target_json =
        R"({"kind": "llvm", "mcpu": "znver4", "num-cores": 2})";
    records.back().args_info = R"([["TENSOR", "float32", [128, 128]]])";
    d.CommitRecords(records);
  }
  RunCommand({"train", "--db", path.string(), "--rounds", "4"});
  db::SqliteDatabase check(path.string(), db::SqliteDatabase::OpenMode::kReadOnly);
  if (check.Models().empty()) fuzz::Finding("the seed database has no model: tunedb train failed on it");
}

struct Place {
  fs::path dir, seed, damaged, merged, exported;
  std::string seed_bytes;
};

// A folder of this process's own, removed at exit; in /dev/shm where there
// is one, since every input writes a database file or two.
const Place& ThePlace() {
  static const Place place = [] {
    Place p;
    p.dir = fuzz::FreshFolder("db");
    p.seed = p.dir / "seed.sqlite";
    p.damaged = p.dir / "damaged.sqlite";
    p.merged = p.dir / "merged.sqlite";
    p.exported = p.dir / "exported";
    WriteSeed(p.seed);
    p.seed_bytes = ReadBytes(p.seed);
    return p;
  }();
  // Built after `place`, so destroyed before it (an atexit handler
  // registered while `place` was being built would run after that).
  static const fuzz::RemovedAtExit cleanup{place.dir};
  return place;
}

class Sql {
 public:
  explicit Sql(const fs::path& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      fuzz::Finding("cannot open the copy of the seed database: " + std::string(sqlite3_errmsg(db_)));
    }
  }
  ~Sql() { sqlite3_close_v2(db_); }
  sqlite3* get() { return db_; }

  // The first column of each row of `query`'s answer, as text.
  std::vector<std::string> Column(const std::string& query) {
    std::vector<std::string> out;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, query.c_str(), -1, &stmt, nullptr) != SQLITE_OK) return out;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, 0);
      out.push_back(text ? reinterpret_cast<const char*>(text) : "");
    }
    sqlite3_finalize(stmt);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// Sets one cell, chosen by the input, to a value of a type it chooses, or
// writes a few bytes over the value it holds (damage that keeps most of a
// JSON text, so that the readers' checks past the JSON parser are
// reached). A value SQLite refuses (a NOT NULL column, a duplicate in a
// UNIQUE one) leaves the cell as it was: SQLite stops that damage itself.
void SetCell(Sql& sql, fuzz::InputBytes& bytes) {
  static const char* kTables[] = {"workloads", "sessions", "targets", "records", "models"};
  const std::string table = kTables[bytes() % std::size(kTables)];
  std::vector<std::string> columns = sql.Column("SELECT name FROM pragma_table_info('" + table + "')");
  std::vector<std::string> rows = sql.Column("SELECT rowid FROM " + table + " ORDER BY rowid");
  const std::uint8_t column_byte = bytes(), row_byte = bytes(), kind = bytes() % 7;
  if (columns.empty() || rows.empty()) return;
  const std::string column = "\"" + columns[column_byte % columns.size()] + "\"";
  const std::string where = " WHERE rowid = " + rows[row_byte % rows.size()];
  auto next_bytes = [&](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(bytes()));
    return s;
  };
  std::string held;  // kind 6: the value held, as SQLite hands out its bytes
  bool held_is_blob = false;
  if (kind == 6) {
    sqlite3_stmt* read = nullptr;
    const std::string select = "SELECT " + column + " FROM " + table + where;
    if (sqlite3_prepare_v2(sql.get(), select.c_str(), -1, &read, nullptr) == SQLITE_OK &&
        sqlite3_step(read) == SQLITE_ROW) {
      held_is_blob = sqlite3_column_type(read, 0) == SQLITE_BLOB;
      const void* data = sqlite3_column_blob(read, 0);
      held.assign(static_cast<const char*>(data ? data : ""), static_cast<std::size_t>(sqlite3_column_bytes(read, 0)));
    }
    sqlite3_finalize(read);
    if (held.empty()) return;
    std::size_t at = bytes();
    at = (at << 8 | bytes()) % held.size();
    const std::string with = next_bytes(bytes() % 4 + 1);
    held.replace(at, std::min(with.size(), held.size() - at), with);
  }
  const std::string update = "UPDATE " + table + " SET " + column + " = ?1" + where;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(sql.get(), update.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    fuzz::Finding("cannot prepare " + update + ": " + sqlite3_errmsg(sql.get()));
  }
  switch (kind) {
    case 6:
      if (held_is_blob) {
        sqlite3_bind_blob(stmt, 1, held.data(), static_cast<int>(held.size()), SQLITE_TRANSIENT);
      } else {
        sqlite3_bind_text(stmt, 1, held.data(), static_cast<int>(held.size()), SQLITE_TRANSIENT);
      }
      break;
    case 0: sqlite3_bind_null(stmt, 1); break;
    case 1: sqlite3_bind_int64(stmt, 1, static_cast<std::int8_t>(bytes())); break;
    case 2: {
      std::int64_t v;
      std::string raw = next_bytes(8);
      std::memcpy(&v, raw.data(), 8);
      sqlite3_bind_int64(stmt, 1, v);
      break;
    }
    case 3: {
      double v;
      std::string raw = next_bytes(8);
      std::memcpy(&v, raw.data(), 8);
      sqlite3_bind_double(stmt, 1, v);
      break;
    }
    default: {
      std::string value = next_bytes(bytes() % 48);
      if (kind == 4) {
        sqlite3_bind_text(stmt, 1, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
      } else {
        sqlite3_bind_blob(stmt, 1, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
      }
    }
  }
  sqlite3_step(stmt);
  sqlite3_finalize(stmt);
}

// Damages the copy at `path` as the input says: edits of cells and of the
// schema version through SQLite first, then bytes of the file itself.
void Damage(const fs::path& path, const std::uint8_t* data, std::size_t size) {
  fuzz::InputBytes bytes(data, size);
  struct Overwrite {
    std::uint32_t offset = 0;
    std::string with;
  };
  std::vector<Overwrite> overwrites;
  {
    Sql sql(path);
    constexpr int kMaxEdits = 12;
    for (int edit = 0; edit < kMaxEdits && !bytes.used_up(); ++edit) {
      switch (bytes() % 4) {
        case 0:
        case 1: SetCell(sql, bytes); break;
        case 2: {
          const std::string version = std::to_string(static_cast<std::int8_t>(bytes()));
          sqlite3_exec(sql.get(), ("PRAGMA user_version = " + version).c_str(), nullptr, nullptr, nullptr);
          break;
        }
        default: {
          Overwrite o;
          for (int shift : {0, 8, 16}) o.offset |= static_cast<std::uint32_t>(bytes()) << shift;
          for (int n = bytes() % 8 + 1; n > 0; --n) o.with.push_back(static_cast<char>(bytes()));
          overwrites.push_back(o);
        }
      }
    }
  }  // closing the last connection checkpoints the WAL into the file
  if (overwrites.empty()) return;
  std::string file = ReadBytes(path);
  if (file.empty()) return;
  for (const Overwrite& o : overwrites) {
    for (std::size_t i = 0; i < o.with.size(); ++i) file[(o.offset + i) % file.size()] = o.with[i];
  }
  WriteBytes(path, file);
}

// The REST API's routes on the damaged file: every answer is JSON, an
// error one with "error".
void AskTheRoutes(const fs::path& path, const std::string& matmul_hash) {
  std::unique_ptr<db::SqliteDatabase> d;
  try {
    d = std::make_unique<db::SqliteDatabase>(path.string(), db::SqliteDatabase::OpenMode::kReadOnly);
  } catch (const db::DatabaseError&) {
    return;  // `tunedb serve` stops there with the message
  }
  api::Routes routes("tok", /*read_only=*/true, /*body_limit=*/1 << 20);
  const std::vector<api::HttpRequest> requests = {
      {"GET", "/v1/workloads", {}, "", ""},
      {"GET", "/v1/workloads/" + matmul_hash, {}, "", ""},
      {"GET", "/v1/workloads/" + matmul_hash + "/best", {{"target", kTarget}, {"k", "4"}}, "", ""},
      {"GET", "/v1/records", {{"workload", matmul_hash}}, "", ""},
      {"GET", "/v1/stats", {}, "", ""},
      {"GET", "/v1/sessions", {}, "", ""},
      {"GET", "/v1/models", {}, "", ""},
      {"POST", "/v1/query", {}, "", nlohmann::json{{"spec", kMatmul}, {"target", kTarget}}.dump()},
      {"POST", "/v1/predict", {}, "",
       nlohmann::json{{"workload", matmul_hash}, {"traces", {nlohmann::json::parse(R"([[], []])")}}}.dump()},
  };
  for (const api::HttpRequest& request : requests) {
    api::HttpResponse res = routes.Handle(request, *d);
    const std::string what = request.method + " " + request.path;
    if (res.content_type != "application/json") continue;
    nlohmann::json body = nlohmann::json::parse(res.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) fuzz::Finding(what + ": the answer is not JSON: " + res.body);
    if (res.status >= 400 && (!body.is_object() || !body.contains("error"))) {
      fuzz::Finding(what + ": an error answer without \"error\": " + res.body);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Place& place = ThePlace();
  static const std::string matmul_hash = ir::WorkloadHash(ir::LoadWorkload(kMatmul).func);
  RemoveDatabase(place.damaged);
  RemoveDatabase(place.merged);
  std::error_code ignored;
  fs::remove_all(place.exported, ignored);
  WriteBytes(place.damaged, place.seed_bytes);
  Damage(place.damaged, data, size);

  const std::string damaged = place.damaged.string();
  RunCommand({"db", "check", "--db", damaged});
  RunCommand({"db", "stats", "--db", damaged});
  RunCommand({"db", "records", "--db", damaged, "--workload", kMatmul});
  RunCommand({"db", "sessions", "--db", damaged});
  RunCommand({"best", "--db", damaged, "--workload", kMatmul, "--target", kTarget});
  RunCommand({"best", "--db", damaged, "--hash", matmul_hash, "--target", kTarget, "--format", "json"});
  RunCommand({"best", "--db", damaged, "--hash", kTvmHash, "--target", kTarget, "--format", "json"});
  RunCommand({"model", "list", "--db", damaged});
  RunCommand({"model", "eval", "--db", damaged});
  RunCommand({"db", "export-tvm", "--db", damaged, place.exported.string()});
  AskTheRoutes(place.damaged, matmul_hash);
  RunCommand({"db", "merge", "--db", place.merged.string(), damaged});
  RunCommand({"db", "merge", "--db", damaged, place.seed.string()});
  return 0;
}
