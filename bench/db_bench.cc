// Database benchmark: tunedb's SQLite database against a baseline that
// works as TVM's JSONDatabase does (JSON-lines files fully parsed at open,
// one globally sorted set of all records scanned for each top-k query), on
// the same data in the same run.
//
// Usage: db_bench [--records 1000000] [--workloads 1000] [--queries 10000] [--dir DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/sqlite_database.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A realistic small trace: the MLC lecture's schedule, as TVM's JSON.
const char* kTrace =
    R"([[["GetBlock",[],["C","main"],["b0"]],["GetLoops",["b0"],[],["l1","l2","l3"]],["SamplePerfectTile",["l2"],[2,16],["v4","v5"]],["Split",["l2","v4","v5"],[1,0],["l6","l7"]],["Reorder",["l1","l6","l3","l7"],[],[]],["DecomposeReduction",["b0","l6"],[],["b8"]]],[[2,[32,4]]]])";

struct Rec {
  int workload;
  double mean;
  std::string line;
};

// TVM's JSONDatabase, reduced to what the comparison needs.
class JsonLinesBaseline {
 public:
  explicit JsonLinesBaseline(std::string path) : path_(std::move(path)) {}

  void Commit(const std::vector<Rec>& batch) {
    std::ofstream out(path_, std::ios::app);
    for (const Rec& r : batch) {
      out << r.line << "\n";
      sorted_.insert(r);
    }
  }
  // Open: read and parse every line, rebuild the sorted set.
  void Open() {
    sorted_.clear();
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      nlohmann::json j = nlohmann::json::parse(line);
      double sum = 0;
      for (const auto& s : j[1][1]) sum += s.get<double>();
      sorted_.insert({j[0].get<int>(), sum / static_cast<double>(j[1][1].size()), line});
    }
  }
  std::vector<const Rec*> TopK(int workload, int k) const {
    std::vector<const Rec*> out;
    for (const Rec& r : sorted_) {
      if (r.workload != workload) continue;
      out.push_back(&r);
      if (static_cast<int>(out.size()) >= k) break;
    }
    return out;
  }
  std::size_t size() const { return sorted_.size(); }

 private:
  struct ByMean {
    bool operator()(const Rec& a, const Rec& b) const { return a.mean < b.mean; }
  };
  std::string path_;
  std::multiset<Rec, ByMean> sorted_;
};

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t records = 1000000;
  int workloads = 1000, queries = 10000;
  std::string dir = "/tmp/tunedb_db_bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--records") records = std::stoll(argv[i + 1]);
    if (a == "--workloads") workloads = std::stoi(argv[i + 1]);
    if (a == "--queries") queries = std::stoi(argv[i + 1]);
    if (a == "--dir") dir = argv[i + 1];
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string sqlite_path = dir + "/tunedb.sqlite", jsonl_path = dir + "/database_tuning_record.json";
  std::printf("records %lld, workloads %d, trace %zu bytes, top-k queries %d (k = 5)\n\n",
              static_cast<long long>(records), workloads, std::string(kTrace).size(), queries);

  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> secs(1e-5, 1e-2);
  const std::string target = "llvm -mcpu=znver4 -num-cores=2";

  tunedb::db::SqliteDatabase db(sqlite_path);
  for (int w = 0; w < workloads; ++w) {
    db.CommitWorkload({std::to_string(w), "bench", "tunedb", "s" + std::to_string(w), "{}"});
  }
  JsonLinesBaseline baseline(jsonl_path);

  // Insert the same records into both, in batches as tuning commits them:
  // one round of 64 measured candidates of one workload, workloads taking
  // turns. (A second run below mixes workloads within batches.)
  double tunedb_insert = 0, baseline_insert = 0;
  const std::int64_t batch = 64;
  for (std::int64_t start = 0; start < records; start += batch) {
    std::vector<tunedb::db::TuningRecord> rs;
    std::vector<Rec> bs;
    int batch_workload = static_cast<int>(rng() % static_cast<std::uint64_t>(workloads));
    for (std::int64_t i = start; i < std::min(records, start + batch); ++i) {
      tunedb::db::TuningRecord r;
      int w = batch_workload;
      r.workload_hash = std::to_string(w);
      r.target = target;
      r.trace = kTrace;
      r.run_secs = {secs(rng), secs(rng), secs(rng)};
      r.created = static_cast<double>(i);
      double mean = (r.run_secs[0] + r.run_secs[1] + r.run_secs[2]) / 3;
      nlohmann::json line = nlohmann::json::array(
          {w, nlohmann::json::array({nlohmann::json::parse(kTrace), r.run_secs,
                                     {{"kind", "llvm"}, {"mcpu", "znver4"}, {"num-cores", 2}}, nlohmann::json::array()})});
      bs.push_back({w, mean, line.dump()});
      rs.push_back(std::move(r));
    }
    auto t = Clock::now();
    db.CommitRecords(rs);
    tunedb_insert += Since(t);
    t = Clock::now();
    baseline.Commit(bs);
    baseline_insert += Since(t);
  }

  // Top-k latency over random workloads.
  std::vector<double> t_lat, b_lat;
  for (int q = 0; q < queries; ++q) {
    int w = static_cast<int>(rng() % static_cast<std::uint64_t>(workloads));
    auto t = Clock::now();
    auto top = db.TopK(std::to_string(w), target, 5);
    t_lat.push_back(Since(t));
    t = Clock::now();
    auto btop = baseline.TopK(w, 5);
    b_lat.push_back(Since(t));
    if (top.size() != btop.size()) std::fprintf(stderr, "top-k sizes differ for workload %d\n", w);
  }

  // Open time: a fresh process would do exactly this.
  auto t = Clock::now();
  { tunedb::db::SqliteDatabase reopened(sqlite_path); }
  double tunedb_open = Since(t);
  t = Clock::now();
  JsonLinesBaseline reopened(jsonl_path);
  reopened.Open();
  double baseline_open = Since(t);

  // Mixed batches: 1000 records of random workloads each, into a fresh file.
  double mixed_insert = 0;
  std::int64_t mixed_records = std::min<std::int64_t>(records, 200000);
  {
    std::string mixed_path = dir + "/mixed.sqlite";
    tunedb::db::SqliteDatabase mixed(mixed_path);
    for (int w = 0; w < workloads; ++w) {
      mixed.CommitWorkload({std::to_string(w), "bench", "tunedb", "s" + std::to_string(w), "{}"});
    }
    for (std::int64_t start = 0; start < mixed_records; start += 1000) {
      std::vector<tunedb::db::TuningRecord> rs;
      for (std::int64_t i = start; i < std::min(mixed_records, start + 1000); ++i) {
        tunedb::db::TuningRecord r;
        r.workload_hash = std::to_string(rng() % static_cast<std::uint64_t>(workloads));
        r.target = target;
        r.trace = kTrace;
        r.run_secs = {secs(rng), secs(rng), secs(rng)};
        rs.push_back(std::move(r));
      }
      auto t0 = Clock::now();
      mixed.CommitRecords(rs);
      mixed_insert += Since(t0);
    }
  }

  auto rate = [&](double s) { return static_cast<double>(records) / s; };
  std::printf("| measure | tunedb (SQLite) | TVM-style JSON lines | target |\n| --- | --- | --- | --- |\n");
  std::printf("| commit, records/s (batches of 64, one workload each) | %.0f | %.0f | >= 50000 |\n", rate(tunedb_insert),
              rate(baseline_insert));
  std::printf("| commit, records/s (batches of 1000, mixed workloads; first %lld records) | %.0f | | |\n",
              static_cast<long long>(mixed_records), static_cast<double>(mixed_records) / mixed_insert);
  std::printf("| top-5 p50 | %.3f ms | %.3f ms | |\n", Percentile(t_lat, 0.5) * 1e3, Percentile(b_lat, 0.5) * 1e3);
  std::printf("| top-5 p99 | %.3f ms | %.3f ms | <= 1 ms |\n", Percentile(t_lat, 0.99) * 1e3, Percentile(b_lat, 0.99) * 1e3);
  std::printf("| open | %.1f ms | %.1f ms | <= 50 ms |\n", tunedb_open * 1e3, baseline_open * 1e3);
  std::printf("| file size | %.0f MB | %.0f MB | |\n",
              static_cast<double>(std::filesystem::file_size(sqlite_path) +
                                  (std::filesystem::exists(sqlite_path + "-wal") ? std::filesystem::file_size(sqlite_path + "-wal") : 0)) / 1e6,
              static_cast<double>(std::filesystem::file_size(jsonl_path)) / 1e6);
  std::filesystem::remove_all(dir);
  return 0;
}
