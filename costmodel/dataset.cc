#include "costmodel/dataset.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "ir/json.h"
#include "ir/schedule/schedule.h"
#include "ir/structural.h"
#include "measure/lower.h"

namespace tunedb::costmodel {

std::vector<FeatureRow> CandidateFeatures(const ir::PrimFunc& scheduled) {
  return ExtractFeatures(measure::Lower(scheduled));
}

std::vector<FeatureRow> CandidateFeatures(const ir::PrimFunc& workload, const ir::Trace& trace) {
  return CandidateFeatures(ir::ReplayTrace(workload, trace, 0).func());
}

namespace {

// Helper threads that live as long as the process. Lowering allocates and
// frees thousands of small nodes per candidate, and a new thread's
// allocator cache (tcmalloc's per-thread free lists) takes on the order of
// a thousand candidates to grow to that rhythm: threads started afresh for
// every batch of 512 spent most of their short lives cold, and two of them
// gave ~1.3x one thread where warm ones give ~1.6-1.9x (bench/RESULTS.md).
class HelperThreads {
 public:
  static HelperThreads& Instance() {
    static HelperThreads pool;
    return pool;
  }

  // Runs `work` on the calling thread and on `helpers` helper threads at
  // once; returns when every copy has returned. One job at a time.
  void Run(int helpers, const std::function<void()>& work) {
    std::lock_guard<std::mutex> one_job(job_mutex_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (static_cast<int>(threads_.size()) < helpers) {
        int index = static_cast<int>(threads_.size());
        threads_.emplace_back([this, index] { Serve(index); });
      }
      work_ = &work;
      wanted_ = helpers;
      running_ = helpers;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return running_ == 0; });
    work_ = nullptr;
  }

  ~HelperThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void Serve(int index) {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (index >= wanted_) continue;
      const std::function<void()>* work = work_;
      lock.unlock();
      (*work)();
      lock.lock();
      if (--running_ == 0) done_.notify_one();
    }
  }

  std::mutex job_mutex_;  // serializes Run calls
  std::mutex mutex_;      // guards everything below
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void()>* work_ = nullptr;
  int wanted_ = 0, running_ = 0;
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
};

}  // namespace

std::vector<std::vector<FeatureRow>> FeaturizeBatch(const std::vector<ir::PrimFunc>& programs, int threads) {
  std::vector<std::vector<FeatureRow>> out(programs.size());
  int n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n = std::min<int>(n, static_cast<int>(programs.size()));
  if (n <= 1) {
    for (std::size_t i = 0; i < programs.size(); ++i) out[i] = CandidateFeatures(programs[i]);
    return out;
  }
  // Candidates are handed out in small chunks, so a core the VM slows down
  // takes fewer of them. Programs share immutable expressions; each thread
  // lowers its own copies.
  constexpr std::size_t kChunk = 8;
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  std::function<void()> work = [&] {
    try {
      for (;;) {
        std::size_t begin = next.fetch_add(kChunk);
        if (begin >= programs.size()) return;
        for (std::size_t i = begin; i < std::min(programs.size(), begin + kChunk); ++i) {
          out[i] = CandidateFeatures(programs[i]);
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = programs.size();  // the others stop at their next chunk
    }
  };
  HelperThreads::Instance().Run(n - 1, work);
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

DistinctCode MergeSameCode(const std::vector<std::uint64_t>& code_hashes, const std::vector<double>& median_secs,
                           const std::vector<int>& groups) {
  std::map<std::pair<int, std::uint64_t>, std::size_t> slot;  // (group, code) -> index into out
  std::vector<std::vector<double>> copies;
  DistinctCode out;
  for (std::size_t i = 0; i < code_hashes.size(); ++i) {
    auto [it, fresh] = slot.emplace(std::make_pair(groups[i], code_hashes[i]), out.kept.size());
    if (fresh) {
      out.kept.push_back(i);
      copies.emplace_back();
    }
    copies[it->second].push_back(median_secs[i]);
  }
  for (std::vector<double>& times : copies) {
    // Of an even count, the faster of the two middle times (no average: a
    // failure's +infinity would swallow it).
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>((times.size() - 1) / 2), times.end());
    out.median_secs.push_back(times[(times.size() - 1) / 2]);
  }
  return out;
}

Dataset LoadDataset(db::Database& database, std::optional<double> committed_after) {
  Dataset data;
  std::map<std::string, int> group_ids;
  std::vector<Sample> samples;  // every record that rebuilds, before merging
  std::vector<std::uint64_t> code_hashes;
  std::vector<double> medians;
  std::vector<int> groups;
  for (const db::WorkloadStats& w : database.Workloads()) {
    if (w.workload.input.kind != "tunedb") {
      data.skipped += static_cast<std::size_t>(w.records);
      continue;
    }
    ir::PrimFunc func;
    try {
      func = ir::ProgramFromJson(db::WholeInput(database, w).program);
    } catch (const std::exception&) {
      data.skipped += static_cast<std::size_t>(w.records);
      continue;
    }
    db::RecordQuery q;
    q.workload_hash = w.workload.input.hash;
    q.limit = 2000;
    if (committed_after) {
      // Finite: the bound travels in a server's query string too.
      q.created_within = {std::nextafter(*committed_after, std::numeric_limits<double>::max()),
                          std::numeric_limits<double>::max()};
    }
    while (true) {
      std::vector<db::TuningRecord> page = database.Records(q);
      if (page.empty()) break;
      q.after_id = page.back().id;
      for (const db::TuningRecord& r : page) {
        Sample s;
        try {
          ir::PrimFunc lowered = measure::Lower(ir::ReplayTrace(func, ir::Trace::FromJsonText(r.trace), 0).func());
          s.rows = ExtractFeatures(lowered);
          code_hashes.push_back(ir::StructuralHash(lowered));
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
        samples.push_back(std::move(s));
      }
    }
  }
  DistinctCode distinct = MergeSameCode(code_hashes, medians, groups);
  data.merged = samples.size() - distinct.kept.size();
  std::vector<int> kept_groups;
  for (std::size_t i : distinct.kept) {
    kept_groups.push_back(samples[i].group);
    data.samples.push_back(std::move(samples[i]));
  }
  std::vector<double> labels = NormalizedThroughput(distinct.median_secs, kept_groups);
  for (std::size_t i = 0; i < data.samples.size(); ++i) data.samples[i].label = labels[i];
  return data;
}

}  // namespace tunedb::costmodel
