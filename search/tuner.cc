#include "search/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "costmodel/dataset.h"
#include "ir/flops.h"
#include "ir/json.h"
#include "ir/structural.h"
#include "ir/text_file.h"
#include "ir/workloads.h"
#include "search/confirm.h"

namespace tunedb::search {

double TaskStatus::GFlops() const {
  return std::isfinite(best_secs) && best_secs > 0 ? static_cast<double>(flops) / best_secs / 1e9 : 0.0;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A result's median time, +inf for a failure (it ranks behind every kernel).
double MedianOrInf(const measure::MeasureResult& r) {
  return r.status == measure::MeasureStatus::kOk ? r.MedianSecs() : kInf;
}

// "matmul:M=512,N=512,K=512" -> "matmul": workloads of one computation at
// other shapes share schedules worth transferring.
std::string ComputationOf(const std::string& name) { return name.substr(0, name.find(':')); }

std::string ReadFile(const std::string& path) {
  std::string text, why;
  if (!ir::ReadWholeFile(path, &text, &why)) {
    throw std::invalid_argument("cannot read the design-space script " + path + ": " + why);
  }
  return text;
}

// Split::kAuto splits only where the composition is used: the default
// space (a script names one program's blocks) and the evolutionary search.
Split SplitFor(const TuneOptions& o) {
  if (o.split == Split::kAuto && (o.space != "default" || o.strategy != "evolutionary")) return Split::kOff;
  return o.split;
}

// Why a session split a workload it was not told to.
std::string SplitNote(const ir::Workload& whole, std::size_t parts) {
  std::string names;
  for (const std::string& n : ComputeBoundParts(whole)) names += (names.empty() ? "" : ", ") + n;
  return whole.spec + ": " + std::to_string(parts) + " parts, compute-bound " + names +
         "; its parts are tuned first (--no-split tunes it whole)\n";
}

struct Task {
  ir::Workload workload;
  std::string hash;
  std::unordered_set<std::uint64_t> measured;
  SearchContext context;
  std::unique_ptr<SearchStrategy> strategy;
  std::unique_ptr<measure::Runner> runner;
  // Its program's parts (ir/parts.h), whose best schedules composed seed
  // its search; none for a program of one group.
  std::vector<ir::Workload> parts;
  // Split (TuneOptions::split): tuned only once its parts have had their share.
  bool after_parts = false;
  std::unordered_map<std::int64_t, std::optional<ir::Trace>> designs;  // record id -> design
  std::int64_t read_up_to = 0;  // the id of the newest of its records this tuner has read
  TaskProgress progress;
};

db::TuningRecord ToRecord(const Task& task, const Candidate& c, const measure::MeasureResult& r,
                          const std::string& target, std::int64_t session, const std::string& hardware) {
  db::TuningRecord rec;
  rec.workload_hash = task.hash;
  rec.target = target;
  rec.trace = c.trace.ToJson().dump();
  rec.status = static_cast<db::RecordStatus>(static_cast<int>(r.status));
  if (r.status == measure::MeasureStatus::kOk) rec.run_secs = r.run_secs;
  rec.error = r.error;
  rec.session_id = session;
  rec.hardware = hardware;
  return rec;
}

// Adds the wall time of its scope to a SessionTimes field.
class Stopwatch {
 public:
  explicit Stopwatch(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~Stopwatch() { Stop(); }
  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
  bool stopped_ = false;
};

class Tuner {
 public:
  Tuner(db::Database& database, const TuneOptions& options, const TuneObserver& observer,
        const std::atomic<bool>* stop)
      : db_(database), o_(options), observer_(observer), stop_(stop), target_(options.measure.target.ToString()),
        hardware_(db::HardwareFingerprint()), owner_(db::ThisProcess()), model_(ModelOptions(options)),
        start_(std::chrono::steady_clock::now()) {}

  TuneReport Run() {
    CheckTuneOptions(o_);
    TaskSchedulerKind scheduler = ParseTaskScheduler(o_.task_scheduler);
    FindSessionToResume();
    std::string notes;
    Stopwatch warm_start(times_.warm_start);
    std::string model_note = LoadModel();
    // A workload file with several outputs is one task per output. A
    // workload given twice (matmul:M=64 and matmul:N=512,M=64 are the same
    // program) is one task: two would split its budget and race for the
    // same database entries.
    // A workload split into its parts (TuneOptions::split) comes after them.
    std::vector<ir::Workload> workloads;
    std::vector<bool> after_parts;
    std::map<std::string, std::string> spec_of_hash;
    auto add = [&](ir::Workload w, const std::string& given, bool whole_after_parts) {
      auto [it, fresh] = spec_of_hash.emplace(ir::WorkloadHash(w.func), given);
      if (!fresh) {
        notes += given + " is the same workload as " + it->second + "; it is tuned once\n";
        return;
      }
      workloads.push_back(std::move(w));
      after_parts.push_back(whole_after_parts);
    };
    for (const std::string& spec : o_.workloads) {
      std::vector<ir::Workload> loaded = ir::LoadWorkloads(spec);
      for (ir::Workload& w : loaded) {
        // The user's own words, unless a file gave several outputs.
        std::string given = loaded.size() == 1 ? spec : w.spec;
        std::vector<ir::Workload> parts = PartsToTuneFirst(w, SplitFor(o_));
        if (!parts.empty() && o_.split == Split::kAuto) notes += SplitNote(w, parts.size());
        for (ir::Workload& part : parts) add(part, part.spec, false);
        add(std::move(w), given, !parts.empty());
      }
    }
    for (std::size_t i = 0; i < workloads.size(); ++i) SetUpTask(i, std::move(workloads[i]), after_parts[i]);
    warm_start.Stop();
    if (report_.session_id == 0) {
      db::Session s;
      s.command = o_.command;
      s.host = hardware_;
      s.target = target_;
      s.strategy = o_.strategy;
      s.seed = o_.seed;
      s.trials = o_.trials;
      s.owner = owner_;
      report_.session_id = db_.StartSession(s);
    }
    notes += LookForSiblings();
    for (std::size_t i = 0; i < tasks_.size(); ++i) MakeStrategy(i);
    Emit({TuneEvent::kSetup, -1, spent_, o_.trials, Elapsed(), notes + model_note});

    // When a workload is split, the parts (and the workloads without
    // parts) spend the first part of the budget; then only the workloads
    // after their parts are tuned, from their parts' best schedules
    // composed.
    const bool split = std::any_of(tasks_.begin(), tasks_.end(), [](const auto& t) { return t->after_parts; });
    bool parts_phase = split;
    const int parts_budget = o_.trials - o_.trials / 4;
    int phase_start = spent_;  // trials spent when this phase began
    int last = -1;
    while (spent_ < o_.trials && !Stopped()) {
      std::vector<TaskProgress> progress;
      for (const auto& t : tasks_) {
        progress.push_back(t->progress);
        if (split && t->after_parts == parts_phase) progress.back().done = true;  // not in this phase
      }
      const int budget = parts_phase ? parts_budget : o_.trials;
      int next = spent_ < budget ? NextTask(scheduler, progress, last) : -1;
      if (next < 0 && parts_phase) {
        parts_phase = false;
        phase_start = spent_;
        Emit({TuneEvent::kNote, -1, spent_, o_.trials, Elapsed(), StartWholes()});
        continue;
      }
      if (next < 0) break;
      last = next;
      // Until every workload has had a batch, the budget left is shared
      // among those still waiting, so a small budget reaches all of them.
      // Of several, each warm-up batch takes at most an equal share of
      // half the phase's budget: the rest is the scheduler's to give where
      // time drops most (a split attention's scores, not its row sums).
      int waiting = 0, in_phase = 0;
      for (std::size_t i = 0; i < tasks_.size(); ++i) {
        in_phase += !progress[i].done;
        waiting += !progress[i].done && tasks_[i]->progress.best_after_batch.empty();
      }
      int share = waiting > 0 ? std::max(1, (budget - spent_) / waiting) : budget - spent_;
      if (waiting > 0 && in_phase > 1) share = std::min(share, std::max(1, (budget - phase_start) / (2 * in_phase)));
      TuneBatch(static_cast<std::size_t>(next), std::min({o_.batch, share, budget - spent_}));
    }
    report_.interrupted = Stopped() && spent_ < o_.trials;
    if (!report_.interrupted) {
      db_.EndSession(report_.session_id, db::NowSeconds());
      if (o_.measure_baseline) {
        Stopwatch baseline(times_.baseline);
        MeasureBaselines();
      }
      TimeTheBestTogether();
    }
    if (model_.trained_here()) {
      Stopwatch model(times_.model);
      nlohmann::json metrics = {{"session", report_.session_id}, {"samples", model_.samples()}, {"source", "tune"}};
      model_.SaveToDatabase(db_, metrics.dump());
    }
    // Left for the same command to resume, even in this process. Last, so
    // that the session is not resumed before its model is stored.
    if (report_.interrupted) db_.ClaimSession(report_.session_id, owner_, "");
    report_.tasks = status_;
    report_.wall_secs = Elapsed();
    for (const auto& t : tasks_) {
      if (!t->runner) continue;
      times_.build += t->runner->phase_secs().build;
      times_.run += t->runner->phase_secs().run;
    }
    report_.times = times_;
    report_.model = model_.Describe();
    return report_;
  }

 private:
  static costmodel::TuningCostModel::Options ModelOptions(const TuneOptions& o) {
    costmodel::TuningCostModel::Options m;
    m.train.seed = o.seed;
    m.train.max_rounds = 100;
    // One thread: a session's model trains in about 0.1 s either way, but
    // beside another busy process XGBoost's OpenMP team spins for cores it
    // does not get, and two sessions at once spent 0.5-2.6 s each in it
    // (bench/RESULTS.md, session 49).
    m.train.threads = 1;
    m.min_samples = static_cast<std::size_t>(std::max(1, o.model_min_samples));
    return m;
  }

  bool Stopped() const { return stop_ && stop_->load(); }
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void Emit(const TuneEvent& e) {
    if (observer_) observer_(e, status_);
  }

  // The newest open session of the same command and target whose process
  // is gone (interrupted, killed, or written before sessions had owners;
  // one on another host or in another container once it has been quiet
  // for db::kSessionLeaseSeconds) is taken over; one whose process still
  // runs is left to it, so the same command run twice at once runs two
  // sessions, not one with two budgets.
  // Taking over is a compare-and-set on the owner: of two tuners that find
  // the same session left behind, one resumes it and the other starts anew.
  void FindSessionToResume() {
    if (o_.command.empty()) return;
    std::vector<db::Session> sessions = db_.Sessions();
    const double now = db::NowSeconds();
    for (auto s = sessions.rbegin(); s != sessions.rend(); ++s) {
      if (s->command != o_.command || s->ended != 0 || s->target != target_) continue;
      if (!db::SessionMayBeRunning(*s, now) && db_.ClaimSession(s->id, s->owner, owner_)) {
        report_.session_id = s->id;
        break;
      }
    }
    report_.resumed = report_.session_id != 0;
  }

  // Sessions of the same command still running that started before this
  // one (by id, which the database hands out in order, so that of two
  // commands started at the same moment exactly one sees the other).
  // Counted once this session has its id; returns a note for the user.
  std::string LookForSiblings() {
    if (o_.command.empty()) return "";
    std::vector<std::int64_t> earlier;
    const double now = db::NowSeconds();
    for (const db::Session& s : db_.Sessions()) {
      if (s.command != o_.command || s.ended != 0 || s.target != target_) continue;
      if (s.id < report_.session_id && db::SessionMayBeRunning(s, now)) earlier.push_back(s.id);
    }
    siblings_ = earlier.size();
    if (earlier.empty()) return "";
    return "session " + std::to_string(earlier.back()) +
           " of the same command is still running; this one runs a session of its own, sampling other programs\n";
  }

  std::string LoadModel() {
    try {
      if (model_.LoadFromDatabase(db_)) {
        return "cost model: stored model " + std::to_string(model_.loaded_id()) + ", trained on " +
               std::to_string(model_.loaded_rows()) + " records (the most of the stored models)";
      }
      return "cost model: none stored yet";
    } catch (const costmodel::CostModelError& e) {
      return std::string("cost model: stored model not used (") + e.what() + ")";
    }
  }

  void SetUpTask(std::size_t index, ir::Workload workload, bool after_parts) {
    auto task = std::make_unique<Task>();
    task->workload = std::move(workload);
    task->parts = ir::WorkloadParts(task->workload);
    task->after_parts = after_parts;
    const ir::PrimFunc& func = task->workload.func;
    task->hash = ir::WorkloadHash(func);
    db_.CommitWorkload({task->hash, task->workload.spec, "tunedb", ir::CanonicalEncoding(func),
                        ir::ProgramToJson(func)});
    SpaceOptions space = SpaceOptionsFor(o_.measure.target.num_cores, o_.measure.target.VectorBits());
    SearchContext& ctx = task->context;
    ctx.workload = &task->workload.func;
    ctx.spaces = o_.space == "default" ? DefaultDesignSpace(func, space)
                                       : ScriptDesignSpace(func, ReadFile(o_.space), o_.space);
    ctx.max_jobs = std::int64_t{space.cores} * space.max_jobs_per_core;
    ctx.measured = &task->measured;
    ctx.model = &model_;
    Task* raw = task.get();
    ctx.elite = [this, raw](int k) { return Elite(*raw, k); };

    TaskStatus status;
    status.name = task->workload.spec;
    status.hash = task->hash;
    status.flops = ir::CountFlops(func);
    status.param_bytes = ir::ParamBytes(func);
    status.best_secs = kInf;
    LoadHistory(*task, status, static_cast<int>(index));
    if (o_.transfer) SeedFromOthers(*task, status);
    status_.push_back(status);
    tasks_.push_back(std::move(task));
  }

  void MakeStrategy(std::size_t index) {
    Task& task = *tasks_[index];
    std::uint64_t seed = o_.seed * 1000003 + index;
    // Beside running sessions of the same command, the same seed would
    // spend this session's first batch on exactly the programs they are
    // measuring (the catch-up read helps only from the second batch on).
    // The stream is moved by how many run, so that the n-th such session
    // is still reproducible; a lone session keeps the seed's own stream.
    if (siblings_ > 0) seed ^= (siblings_ * 0x9E3779B97F4A7C15ull) | 1;
    task.context.designs_measured_elsewhere = siblings_ > 0;
    task.strategy = o_.strategy == "random" ? MakeRandomSearch(seed) : MakeEvolutionarySearch(o_.evolutionary, seed);
  }

  // Every record of this workload and target: never measured again, the
  // cost model's history, and the session's spent trials when resuming.
  void LoadHistory(Task& task, TaskStatus& status, int group) { ReadRecords(task, status, group, /*first=*/true); }

  // Before each batch, what other tuners committed since (the same command
  // run twice at once, or several machines tuning into one server): their
  // programs are not measured again here, the model learns from their
  // times, and a faster one is the task's best.
  void CatchUp(Task& task, TaskStatus& status, int group) { ReadRecords(task, status, group, /*first=*/false); }

  void ReadRecords(Task& task, TaskStatus& status, int group, bool first) {
    db::RecordQuery q;
    q.workload_hash = task.hash;
    q.target = target_;
    q.after_id = task.read_up_to;
    q.limit = 1000;
    std::vector<ir::PrimFunc> programs;
    std::vector<double> medians;
    for (;;) {
      std::vector<db::TuningRecord> page = db_.Records(q);
      if (page.empty()) break;
      q.after_id = task.read_up_to = page.back().id;
      for (const db::TuningRecord& r : page) {
        bool ours = report_.session_id != 0 && r.session_id == report_.session_id;
        if (ours && !first) continue;  // measured by this tuner, known already
        ++status.history;
        if (ours) {
          ++spent_;
          ++status.trials;
          status.failures += r.status != db::RecordStatus::kOk;
        }
        try {
          ir::Trace trace = ir::Trace::FromJsonText(r.trace);
          ir::Schedule sch = ir::ReplayTrace(task.workload.func, trace, 0);
          task.measured.insert(ir::StructuralHash(sch.func()));
          programs.push_back(sch.func());
          medians.push_back(r.Median());
          // The unscheduled program, timed at the end of an earlier session
          // (the newest such record wins).
          if (trace.insts.empty() && r.status == db::RecordStatus::kOk) {
            status.baseline_secs = r.Median();
            status.baseline_stored = true;
          } else if (trace.insts.empty() && status.baseline_secs == 0) {
            NoteBaselineFailure(status, r);
            status.baseline_stored = true;
          }
        } catch (const ir::IrError&) {
          // A trace that does not replay (damaged, or beyond what this
          // version reads): kept, but neither learnt from nor the best.
          continue;
        }
        if (r.status == db::RecordStatus::kOk && r.Median() < status.best_secs) {
          status.best_secs = r.Median();
          status.best_trace = r.trace;
        }
      }
    }
    if (!programs.empty()) {
      try {
        model_.Update(costmodel::FeaturizeBatch(programs), medians, group);
      } catch (const costmodel::CostModelError&) {
        // Too little to learn from: the model keeps what it had.
      }
    }
  }

  std::vector<ir::Trace> Elite(Task& task, int k) {
    std::vector<ir::Trace> out;
    for (const db::TuningRecord& r : db_.TopK(task.hash, target_, k)) {
      auto it = task.designs.find(r.id);
      if (it == task.designs.end()) {
        std::optional<ir::Trace> design;
        try {
          design = DesignOf(task.workload.func, ir::Trace::FromJsonText(r.trace));
        } catch (const ir::IrError&) {
        }
        it = task.designs.emplace(r.id, std::move(design)).first;
      }
      if (it->second) out.push_back(*it->second);
    }
    return out;
  }

  // Designs from other workloads' records: the parts' best schedules
  // composed, measured first, and the best of other shapes.
  //
  // Up to half the whole's share of the budget (trials / 4) goes to the
  // compositions, at least 4: in 21 of 24 split sessions of session 82,
  // the whole's best was one of the four measured first, 11 times the
  // third or fourth, while its later trials beat them three times, by
  // less than 1% (bench/RESULTS.md).
  void SeedFromOthers(Task& task, TaskStatus& status) {
    std::vector<ir::Trace> composed = Composed(task);
    std::vector<ir::Trace> transfer = Transfer(task);
    status.transferred = static_cast<int>(transfer.size());
    status.composed = static_cast<int>(composed.size());
    const std::size_t first = std::max(4, o_.trials / 8);
    task.context.measure_first.assign(composed.begin(), composed.begin() + std::min(composed.size(), first));
    task.context.transfer = std::move(composed);
    task.context.transfer.insert(task.context.transfer.end(), transfer.begin(), transfer.end());
  }

  // Split workloads: the parts have had their share; the workloads after them are
  // seeded with the parts' best schedules composed. Returns a note.
  std::string StartWholes() {
    std::string note;
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      Task& task = *tasks_[i];
      if (!task.after_parts) continue;
      if (o_.transfer) SeedFromOthers(task, status_[i]);
      note += task.workload.spec + ": its " + std::to_string(task.parts.size()) + " parts tuned; " +
              std::to_string(status_[i].composed) + " compositions of their best schedules seed it\n";
    }
    return note;
  }

  // The best schedules of the program's parts (ir/parts.h) applied one
  // after another to the whole: first each part's best, then for each part
  // its second and third best with the others' best. The root annotations
  // (parallel and vector limits, unroll step) are the last part's. Those
  // that do not replay on the whole (a part's schedule that needs what
  // another part's schedule changed) are dropped.
  std::vector<ir::Trace> Composed(const Task& task) {
    if (task.parts.empty()) return {};
    constexpr int kPerPart = 3;
    std::vector<std::vector<ir::Trace>> best;  // per part, best first
    for (const ir::Workload& part : task.parts) {
      best.emplace_back();
      for (const db::TuningRecord& r : db_.TopK(ir::WorkloadHash(part.func), target_, kPerPart)) {
        try {
          if (auto d = DesignOf(part.func, ir::Trace::FromJsonText(r.trace))) best.back().push_back(*d);
        } catch (const ir::IrError&) {
        }
      }
      if (best.back().empty()) return {};
    }
    std::vector<std::vector<std::size_t>> choices{std::vector<std::size_t>(best.size(), 0)};
    for (std::size_t p = 0; p < best.size(); ++p) {
      for (std::size_t k = 1; k < best[p].size(); ++k) {
        choices.push_back(choices[0]);
        choices.back()[p] = k;
      }
    }
    std::vector<ir::Trace> out;
    for (const std::vector<std::size_t>& choice : choices) {
      std::vector<ir::Trace> traces;
      for (std::size_t p = 0; p < best.size(); ++p) traces.push_back(best[p][choice[p]]);
      ir::Trace whole = ir::ConcatTraces(traces);
      try {
        ir::ReplayTrace(task.workload.func, whole, 0);
      } catch (const ir::IrError&) {
        continue;
      }
      out.push_back(std::move(whole));
    }
    return out;
  }

  // The best traces of the same computation at other shapes, replayed onto
  // this workload (tile decisions are repaired to fit the new extents).
  std::vector<ir::Trace> Transfer(const Task& task) {
    std::vector<ir::Trace> out;
    std::string computation = ComputationOf(task.workload.spec);
    for (const db::WorkloadStats& w : db_.Workloads()) {
      const db::WorkloadInput& in = w.workload.input;
      if (in.hash == task.hash || in.kind != "tunedb" || ComputationOf(in.name) != computation) continue;
      for (const db::TuningRecord& r : db_.TopK(in.hash, target_, 4)) {
        try {
          if (auto d = DesignOf(task.workload.func, ir::Trace::FromJsonText(r.trace))) out.push_back(*d);
        } catch (const ir::IrError&) {
        }
      }
      if (out.size() >= 32) break;
    }
    return out;
  }

  // n of the strategy's neighbours of the elite as it now stands go next,
  // ahead of the batch's rest, whose tail they push out of the batch.
  void NeighboursNext(Task& task, std::vector<Candidate>& batch, std::size_t next, int n) {
    if (n <= 0) return;
    std::unordered_set<std::uint64_t> rest;
    for (std::size_t i = next; i < batch.size(); ++i) rest.insert(batch[i].program_hash);
    Stopwatch search(times_.search);
    std::vector<Candidate> neighbours = task.strategy->Neighbours(task.context, n, rest);
    batch.insert(batch.begin() + static_cast<std::ptrdiff_t>(next), std::make_move_iterator(neighbours.begin()),
                 std::make_move_iterator(neighbours.end()));
  }

  void TuneBatch(std::size_t t, int n) {
    Task& task = *tasks_[t];
    TaskStatus& status = status_[t];
    CatchUp(task, status, static_cast<int>(t));
    // The first batch of a task: its workers start (and build and check the
    // reference) while the search runs.
    std::future<std::unique_ptr<measure::Runner>> starting;
    if (!task.runner) {
      starting = std::async(std::launch::async, [&task, this] {
        return std::make_unique<measure::Runner>(task.workload.func, o_.measure);
      });
    }
    std::vector<Candidate> batch;
    {
      Stopwatch search(times_.search);
      batch = task.strategy->NextBatch(task.context, n);
    }
    if (starting.valid()) {
      Stopwatch workers(times_.workers);
      task.runner = starting.get();
    }
    if (batch.empty()) {
      status.done = task.progress.done = true;
      return;
    }
    std::vector<ir::PrimFunc> measured_programs;
    std::vector<double> medians;
    const std::size_t batch_size = batch.size();
    const int share = static_cast<int>(o_.evolutionary.neighbour_share * o_.chunk + 0.5);
    // A warm session's first chunk is all neighbours of the stored elite:
    // one mutation from the best programs known is where a better one most
    // likely is, while a model-ranked pick is a guess over the whole space.
    // The batch holds a neighbour_share of them already; with batches of 64
    // that was the whole first chunk, in rounds of 16 it is 4 of 16, and
    // warm sessions reached the cold best less often (bench/RESULTS.md,
    // session 18).
    if (status.trials == 0 && status.history > 0) {
      int in_batch = static_cast<int>(o_.evolutionary.neighbour_share * static_cast<double>(batch_size) + 0.5);
      NeighboursNext(task, batch, 0, static_cast<int>(std::min<std::size_t>(batch_size, o_.chunk)) - in_batch);
    }
    for (std::size_t begin = 0; begin < batch_size && !Stopped(); begin += static_cast<std::size_t>(o_.chunk)) {
      // Before a later chunk: the chunks before may have found a new best.
      if (begin > 0) NeighboursNext(task, batch, begin, share);
      std::size_t end = std::min(batch_size, begin + static_cast<std::size_t>(o_.chunk));
      std::vector<ir::PrimFunc> programs;
      for (std::size_t i = begin; i < end; ++i) programs.push_back(batch[i].program);
      // Candidates 4x slower than the best so far (and a millisecond or more
      // a run, measure/runner.h) are timed by the fastest of a few warm
      // runs: they cannot win (a shared VM's slow phases moved one kernel's
      // timing by up to 2x, bench/RESULTS.md, session 25), and at matmul
      // 1024 one of them can cost more run time than the rest of the chunk.
      // Those 3x slower than the chunk's fastest first timing, taken within
      // the same second or so, get one short second look, and keep those
      // two timings if it is slow too. A near tie needs every repeat; a
      // candidate that far behind is no contender, and a timing or two rank
      // it for the cost model as well.
      constexpr double kHopeless = 4;
      constexpr double kBehindTheChunk = 3;
      double cutoff = std::isfinite(status.best_secs) ? kHopeless * status.best_secs : 0;
      std::vector<measure::MeasureResult> results = task.runner->Measure(programs, cutoff, kBehindTheChunk);
      ConfirmContenders(task, status.best_secs, results);
      std::vector<db::TuningRecord> records;
      for (std::size_t i = begin; i < end; ++i) {
        const measure::MeasureResult& r = results[i - begin];
        records.push_back(ToRecord(task, batch[i], r, target_, report_.session_id, hardware_));
        task.measured.insert(batch[i].program_hash);
        double median = MedianOrInf(r);
        measured_programs.push_back(batch[i].program);
        medians.push_back(median);
        ++status.trials;
        ++spent_;
        if (r.status != measure::MeasureStatus::kOk) ++status.failures;
        if (median < status.best_secs) {
          status.best_secs = median;
          status.best_trace = records.back().trace;
        }
      }
      {
        Stopwatch commit(times_.commit);
        db_.CommitRecords(records);
      }
      Emit({TuneEvent::kMeasured, static_cast<int>(t), spent_, o_.trials, Elapsed(), ""});
    }
    try {
      Stopwatch model(times_.model);
      model_.Update(costmodel::FeaturizeBatch(measured_programs), medians, static_cast<int>(t));
    } catch (const costmodel::CostModelError&) {
    }
    task.progress.best_after_batch.push_back(status.best_secs);
    task.progress.trials = status.trials;
    Emit({TuneEvent::kBatchDone, static_cast<int>(t), spent_, o_.trials, Elapsed(), model_.Describe()});
  }

  // Times again the candidates that could be the task's new best (see
  // search/confirm.h), confirm_best at a time, adding the new repeats to
  // theirs, until the chunk's fastest is a confirmed one: a lucky first
  // timing that the second look undoes can leave another, unconfirmed,
  // candidate in front. A failure on the second look is kept as the
  // candidate's result (a kernel that failed once is not one to serve).
  void ConfirmContenders(Task& task, double best, std::vector<measure::MeasureResult>& results) {
    if (o_.confirm_best <= 0) return;
    std::vector<bool> confirmed(results.size(), false);
    while (!Stopped()) {
      std::vector<double> medians;
      for (const measure::MeasureResult& r : results) medians.push_back(MedianOrInf(r));
      std::vector<std::size_t> contenders = NextContenders(medians, confirmed, best, o_.confirm_margin, o_.confirm_best);
      if (contenders.empty()) return;
      // The chunk's kernels are still built in the workers.
      std::vector<measure::MeasureResult> second = task.runner->MeasureAgain(contenders);
      for (std::size_t k = 0; k < contenders.size(); ++k) {
        measure::MeasureResult& first = results[contenders[k]];
        confirmed[contenders[k]] = true;
        if (second[k].status != measure::MeasureStatus::kOk) {
          first = second[k];
        } else {
          first.run_secs.insert(first.run_secs.end(), second[k].run_secs.begin(), second[k].run_secs.end());
        }
      }
    }
  }

  // TuneOptions::final_check. A round times the database's best distinct
  // programs together; when the best after it is one that was not timed
  // (the round ran in a slow moment and the checked records fell behind an
  // unchecked one), a next round takes it in, up to three rounds. A record
  // this build cannot replay is left as it is, and so is one measured on
  // other hardware (a merged database, a shared server): its timings are
  // that machine's, and this one's would not belong with them.
  void TimeTheBestTogether() {
    if (o_.final_check < 2) return;
    constexpr int kMaxRounds = 3;
    for (std::size_t t = 0; t < tasks_.size(); ++t) {
      Task& task = *tasks_[t];
      if (!task.runner) continue;  // measured nothing in this session: no workers to time with
      std::set<std::int64_t> checked;
      std::optional<std::int64_t> unscheduled_id;  // the unscheduled program's record, if it was timed
      for (int round = 0; round < kMaxRounds && !Stopped(); ++round) {
        std::optional<db::TuningRecord> top = ServedBest(task);
        if (!top || (round > 0 && (checked.count(top->id) || top->hardware != hardware_))) break;
        std::vector<ir::PrimFunc> kernels;
        std::vector<std::int64_t> ids;
        std::set<std::string> traces;
        for (const db::TuningRecord& r : db_.TopK(task.hash, target_, 2 * o_.final_check)) {
          if (static_cast<int>(kernels.size()) == o_.final_check) break;
          if (!db::ServingProblem(r).empty()) continue;   // damaged: never served (db check names it)
          if (r.hardware != hardware_) continue;
          if (!traces.insert(r.trace).second) continue;  // one program timed in two sessions
          if (std::optional<ir::PrimFunc> kernel = Replayed(task, r.trace)) {
            kernels.push_back(std::move(*kernel));
            ids.push_back(r.id);
            if (IsUnscheduled(r.trace)) unscheduled_id = r.id;
          }
        }
        if (kernels.size() < 2) break;
        std::vector<measure::MeasureResult> results = task.runner->Measure(kernels);
        std::vector<std::size_t> all(kernels.size());
        std::iota(all.begin(), all.end(), std::size_t{0});
        for (int pass = 1; pass < o_.final_check_passes && !Stopped(); ++pass) {
          std::vector<measure::MeasureResult> more = task.runner->MeasureAgain(all);
          for (std::size_t k = 0; k < all.size(); ++k) {
            if (more[k].status != measure::MeasureStatus::kOk) results[k] = more[k];
            if (results[k].status != measure::MeasureStatus::kOk) continue;
            results[k].run_secs.insert(results[k].run_secs.end(), more[k].run_secs.begin(), more[k].run_secs.end());
          }
        }
        try {
          for (std::size_t k = 0; k < ids.size(); ++k) {
            checked.insert(ids[k]);
            // A kernel that fails now keeps its record as it was: one bad
            // run is no verdict on a kernel that passed its check before.
            if (results[k].status == measure::MeasureStatus::kOk) db_.AddTimings(ids[k], results[k].run_secs);
          }
        } catch (const db::UnsupportedError& e) {
          report_.final_check_note = std::string("the final check's timings were not stored: ") + e.what();
          return;  // the same for every workload
        }
        ++report_.final_check_rounds;
      }
      if (std::optional<db::TuningRecord> best = ServedBest(task)) {
        status_[t].best_secs = best->Median();
        status_[t].best_trace = best->trace;
      }
      // The report sets the best against the unscheduled program, so both
      // are quoted as stored after the check: with the unscheduled
      // program's timing from before it, a best that the check had put
      // ahead of it read "1.0x slower" (matmul 1 x 1 x 1).
      if (unscheduled_id) {
        db::RecordQuery q;
        q.workload_hash = task.hash;
        q.after_id = *unscheduled_id - 1;
        q.limit = 1;
        std::vector<db::TuningRecord> found = db_.Records(q);
        if (!found.empty() && found[0].id == *unscheduled_id) status_[t].baseline_secs = found[0].Median();
      }
    }
  }

  static bool IsUnscheduled(const std::string& trace) {
    try {
      return ir::Trace::FromJsonText(trace).insts.empty();
    } catch (const std::exception&) {
      return false;
    }
  }

  // The database's best record of a task that can be served (the server
  // and `tunedb best` skip damaged ones too) and that this build replays
  // onto the task's program, as the history it learns from: the report
  // prints it as a script, which a trace of a newer tunedb cannot give.
  std::optional<db::TuningRecord> ServedBest(const Task& task) {
    for (db::TuningRecord& r : db_.TopK(task.hash, target_, 16)) {
      if (db::ServingProblem(r).empty() && Replayed(task, r.trace)) return std::move(r);
    }
    return std::nullopt;
  }

  // A stored trace replayed onto the task's program; nullopt for one this
  // build cannot read or apply (damaged, or a newer tunedb's).
  static std::optional<ir::PrimFunc> Replayed(const Task& task, const std::string& trace) {
    try {
      return ir::ReplayTrace(task.workload.func, ir::Trace::FromJsonText(trace), 0).func();
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  // A failed record of the unscheduled program: a timeout under this
  // session's --timeout (measure::RunTimeoutError) bounds its time from
  // below; one under another --timeout is timed again.
  void NoteBaselineFailure(TaskStatus& status, const db::TuningRecord& r) const {
    status.baseline_error = r.error;
    const bool this_timeout = r.status == db::RecordStatus::kTimeout &&
                              r.error == measure::RunTimeoutError(o_.measure.run_timeout_s);
    status.baseline_over_secs = this_timeout ? o_.measure.run_timeout_s : 0;
  }

  void MeasureBaselines() {
    // Timed like the candidates (runs per repeat grown to min_repeat_ms), but
    // one repeat: the unscheduled program of a large workload takes seconds.
    // One worker, and no second check of the reference against the
    // interpreter: the task's runner made it, and at matmul 128 it took
    // 1.2 s of the baseline's 1.4 s.
    measure::MeasureConfig config = o_.measure;
    config.repeat = 1;
    config.workers = 1;
    config.interpreter_check_max_ops = -1;
    for (std::size_t t = 0; t < tasks_.size(); ++t) {
      if (Stopped()) return;
      // Stored as a record of the empty trace, in no session (a session's
      // records are its trials), so that later sessions reuse it: the
      // unscheduled 1024 matmul took 10.2 s of a 12.6 s session's time.
      // Not after a timeout under this session's --timeout either: the run
      // would time out again, and that cost --timeout seconds each session.
      if (status_[t].baseline_secs > 0 || status_[t].baseline_over_secs > 0) continue;
      measure::Runner runner(tasks_[t]->workload.func, config);
      std::vector<measure::MeasureResult> r = runner.Measure({tasks_[t]->workload.func});
      Candidate unscheduled;
      unscheduled.program = tasks_[t]->workload.func;
      db::TuningRecord record = ToRecord(*tasks_[t], unscheduled, r[0], target_, /*session=*/0, hardware_);
      db_.CommitRecords({record});
      status_[t].baseline_stored = false;
      if (r[0].status != measure::MeasureStatus::kOk) {
        NoteBaselineFailure(status_[t], record);
        continue;
      }
      status_[t].baseline_secs = r[0].MedianSecs();
      // Faster than every schedule measured (a tiny workload, where a
      // parallel loop's start costs more than the work): the database's
      // best is now the unscheduled program, and the report says so, as
      // `tunedb best` and the server will.
      if (status_[t].baseline_secs < status_[t].best_secs) {
        status_[t].best_secs = status_[t].baseline_secs;
        status_[t].best_trace = record.trace;
      }
    }
  }

  db::Database& db_;
  const TuneOptions& o_;
  const TuneObserver& observer_;
  const std::atomic<bool>* stop_;
  std::string target_, hardware_, owner_;
  costmodel::TuningCostModel model_;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::unique_ptr<Task>> tasks_;
  std::vector<TaskStatus> status_;
  TuneReport report_;
  std::uint64_t siblings_ = 0;  // running sessions of the same command beside this one
  SessionTimes times_;  // build and run are the runners' own, added at the end
  int spent_ = 0;
};

}  // namespace

std::string TimesText(const SessionTimes& t, double wall_secs) {
  std::string out;
  for (auto [name, secs] : {std::pair{"warm start", t.warm_start}, {"search", t.search}, {"workers", t.workers},
                            {"build", t.build}, {"runs", t.run}, {"commit", t.commit}, {"model", t.model},
                            {"baseline", t.baseline}, {"other", std::max(0.0, wall_secs - t.Sum())}}) {
    if (secs < 0.05) continue;
    if (!out.empty()) out += ", ";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s %.1f s", name, secs);
    out += buf;
  }
  return out;
}

void CheckTuneOptions(const TuneOptions& o) {
  if (o.workloads.empty()) throw std::invalid_argument("no workload to tune");
  if (o.trials < 1) throw std::invalid_argument("--trials must be at least 1");
  if (o.batch < 1) throw std::invalid_argument("--batch must be at least 1");
  // Each member is a schedule replayed every generation: a million would
  // take minutes per round and gigabytes before the first measurement.
  constexpr int kMaxPopulation = 65536;
  if (o.evolutionary.population < 1 || o.evolutionary.population > kMaxPopulation) {
    throw std::invalid_argument("--population must be between 1 and " + std::to_string(kMaxPopulation));
  }
  if (o.model_min_samples < 1) throw std::invalid_argument("--model-min-samples must be at least 1");
  // Each is compiled and timed again at the end: a session's worth of them
  // is no longer a check.
  constexpr int kMaxFinalCheck = 64;
  if (o.final_check < 0 || o.final_check > kMaxFinalCheck) {
    throw std::invalid_argument("--final-check must be between 0 and " + std::to_string(kMaxFinalCheck));
  }
  if (o.strategy != "evolutionary" && o.strategy != "random") {
    throw std::invalid_argument("unknown strategy '" + o.strategy + "' (choose evolutionary or random)");
  }
  ParseTaskScheduler(o.task_scheduler);
  // A space script is written for one program's blocks, and only the
  // evolutionary search starts from the parts' schedules composed.
  if (o.split == Split::kOn && o.space != "default") {
    throw std::invalid_argument("--split tunes each part in the default space; a --space script is for one program");
  }
  if (o.split == Split::kOn && o.strategy == "random") {
    throw std::invalid_argument("--split composes the parts' schedules for the evolutionary search; random search "
                                "would not use them");
  }
  std::string script = o.space == "default" ? "" : ReadFile(o.space);
  for (const std::string& spec : o.workloads) {
    for (const ir::Workload& w : ir::LoadWorkloads(spec)) {
      if (o.space != "default") ScriptDesignSpace(w.func, script, o.space);
    }
  }
}

TuneReport Tune(db::Database& database, const TuneOptions& options, const TuneObserver& observer,
                const std::atomic<bool>* stop) {
  return Tuner(database, options, observer, stop).Run();
}

}  // namespace tunedb::search
