#include "costmodel/dataset.h"

#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "ir/json.h"
#include "ir/schedule/schedule.h"
#include "measure/lower.h"

namespace tunedb::costmodel {

std::vector<FeatureRow> CandidateFeatures(const ir::PrimFunc& scheduled) {
  return ExtractFeatures(measure::Lower(scheduled));
}

std::vector<FeatureRow> CandidateFeatures(const ir::PrimFunc& workload, const ir::Trace& trace) {
  return CandidateFeatures(ir::ReplayTrace(workload, trace, 0).func());
}

std::vector<std::vector<FeatureRow>> FeaturizeBatch(const std::vector<ir::PrimFunc>& programs, int threads) {
  std::vector<std::vector<FeatureRow>> out(programs.size());
  int n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n = std::min<int>(n, static_cast<int>(programs.size()));
  if (n <= 1) {
    for (std::size_t i = 0; i < programs.size(); ++i) out[i] = CandidateFeatures(programs[i]);
    return out;
  }
  // Programs share immutable expressions; each thread lowers its own copies.
  std::vector<std::thread> pool;
  std::exception_ptr error;
  std::mutex error_mutex;
  for (int t = 0; t < n; ++t) {
    pool.emplace_back([&, t] {
      try {
        for (std::size_t i = static_cast<std::size_t>(t); i < programs.size(); i += static_cast<std::size_t>(n)) {
          out[i] = CandidateFeatures(programs[i]);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (std::thread& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  return out;
}

std::vector<double> NormalizedThroughput(const std::vector<double>& median_secs, const std::vector<int>& groups) {
  std::map<int, double> best;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (!std::isfinite(median_secs[i]) || median_secs[i] <= 0) continue;
    auto it = best.find(groups[i]);
    if (it == best.end() || median_secs[i] < it->second) best[groups[i]] = median_secs[i];
  }
  std::vector<double> labels(groups.size(), 0.0);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (std::isfinite(median_secs[i]) && median_secs[i] > 0) labels[i] = best[groups[i]] / median_secs[i];
  }
  return labels;
}

Dataset LoadDataset(db::Database& database) {
  Dataset data;
  std::map<std::string, int> group_ids;
  std::vector<double> medians;
  std::vector<int> groups;
  for (const db::WorkloadStats& w : database.Workloads()) {
    if (w.workload.input.kind != "tunedb") {
      data.skipped += static_cast<std::size_t>(w.records);
      continue;
    }
    ir::PrimFunc func;
    try {
      func = ir::ProgramFromJson(w.workload.input.program);
    } catch (const std::exception&) {
      data.skipped += static_cast<std::size_t>(w.records);
      continue;
    }
    db::RecordQuery q;
    q.workload_hash = w.workload.input.hash;
    q.limit = 2000;
    while (true) {
      std::vector<db::TuningRecord> page = database.Records(q);
      if (page.empty()) break;
      q.after_id = page.back().id;
      for (const db::TuningRecord& r : page) {
        Sample s;
        try {
          s.rows = CandidateFeatures(func, ir::Trace::FromJsonText(r.trace));
        } catch (const std::exception&) {
          ++data.skipped;
          continue;
        }
        std::string key = w.workload.input.hash + " @ " + r.target;
        auto [it, fresh] = group_ids.emplace(key, static_cast<int>(group_ids.size()));
        if (fresh) data.group_names.push_back(key);
        s.group = it->second;
        medians.push_back(r.Median());
        groups.push_back(s.group);
        data.samples.push_back(std::move(s));
      }
    }
  }
  std::vector<double> labels = NormalizedThroughput(medians, groups);
  for (std::size_t i = 0; i < data.samples.size(); ++i) data.samples[i].label = labels[i];
  return data;
}

}  // namespace tunedb::costmodel
