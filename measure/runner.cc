#include "measure/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "ir/json.h"

extern char** environ;

namespace tunedb::measure {

std::string_view StatusName(MeasureStatus status) {
  switch (status) {
    case MeasureStatus::kOk: return "ok";
    case MeasureStatus::kBuildError: return "build_error";
    case MeasureStatus::kRunError: return "run_error";
    case MeasureStatus::kTimeout: return "timeout";
    case MeasureStatus::kWrongResult: return "wrong_result";
  }
  return "?";
}

double MeasureResult::MedianSecs() const {
  if (run_secs.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> s = run_secs;
  std::sort(s.begin(), s.end());
  std::size_t n = s.size();
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string DefaultWorkerPath() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "tunedb-worker").string();
}

// "10 s", "0.5 s": a timeout in an error message.
std::string SecondsText(double secs) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", secs);
  return text;
}

}  // namespace

std::string RunTimeoutError(double run_timeout_s) { return "running took longer than " + SecondsText(run_timeout_s); }

namespace {

// The outcome of waiting for a worker's reply.
struct Reply {
  enum Kind { kOk, kDied, kTimedOut } kind = kOk;
  json message;
  std::string why;  // for kDied / kTimedOut
};

// One worker process and the pipes to it.
class WorkerProcess {
 public:
  // `shared_fd` (or -1) is passed on to the process under the same number.
  WorkerProcess(const std::string& path, const json& init, int shared_fd)
      : path_(path), init_(init), shared_fd_(shared_fd) {
    Start();
  }
  ~WorkerProcess() { Stop(); }

  // The reason a worker failed to start or initialize, if it did.
  const std::string& init_error() const { return init_error_; }
  const std::string& reference_check() const { return reference_check_; }
  // Bumped each time the process is replaced: kernels built before are gone.
  int incarnation() const { return incarnation_; }

  void Send(const json& request) {
    std::string text = request.dump() + "\n";
    const char* p = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      ssize_t n = ::write(to_worker_, p, left);
      if (n <= 0) return;  // the read side will report the death
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }

  // Waits for one reply line until `deadline`.
  Reply Receive(Clock::time_point deadline) {
    while (true) {
      auto newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        try {
          return {Reply::kOk, json::parse(line), ""};
        } catch (const std::exception& e) {
          return Died("the worker sent an unreadable reply");
        }
      }
      auto now = Clock::now();
      if (now >= deadline) return {Reply::kTimedOut, {}, ""};
      int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
      pollfd p{from_worker_, POLLIN, 0};
      int r = ::poll(&p, 1, ms);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) continue;
      char chunk[65536];
      ssize_t n = ::read(from_worker_, chunk, sizeof chunk);
      if (n > 0) {
        buffer_.append(chunk, static_cast<std::size_t>(n));
      } else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        return Died("");
      }
    }
  }

  // Kills and restarts the process.
  void Restart() {
    Stop();
    Start();
  }

  int pending_id = -1;  // the candidate whose request is outstanding

 private:
  Reply Died(const std::string& extra) {
    int status = 0;
    std::string why = "the worker process exited";
    if (pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_) {
      if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        why = "the worker process was killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
      } else if (WIFEXITED(status)) {
        why = "the worker process exited with code " + std::to_string(WEXITSTATUS(status));
      }
      pid_ = -1;
    }
    if (!extra.empty()) why += ": " + extra;
    return {Reply::kDied, {}, why};
  }

  void Start() {
    ++incarnation_;
    buffer_.clear();
    int in_pipe[2], out_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
      throw std::runtime_error("cannot create pipes for a worker process");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    // dup2 onto itself clears close-on-exec in the child only.
    if (shared_fd_ >= 0) posix_spawn_file_actions_adddup2(&actions, shared_fd_, shared_fd_);
    // A process group of its own: Ctrl-C in the terminal interrupts the
    // tuner, which finishes and commits the candidates in flight; the
    // workers must not die under it. They exit when their pipe closes.
    // Until the child has its own group, a Ctrl-C (or a kill of the
    // tuner's group) reaches it too; the signal waits, blocked, across
    // exec, and the worker drops it (worker_main.cc). Otherwise it killed
    // the worker as it started, and the tuner failed where it should have
    // stopped cleanly.
    posix_spawnattr_t attrs;
    posix_spawnattr_init(&attrs);
    posix_spawnattr_setflags(&attrs, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attrs, 0);
    sigset_t meant_for_the_tuner;
    sigemptyset(&meant_for_the_tuner);
    sigaddset(&meant_for_the_tuner, SIGINT);
    sigaddset(&meant_for_the_tuner, SIGTERM);
    posix_spawnattr_setsigmask(&attrs, &meant_for_the_tuner);
    char* argv[] = {const_cast<char*>(path_.c_str()), nullptr};
    int rc = ::posix_spawn(&pid_, path_.c_str(), &actions, &attrs, argv, environ);
    posix_spawnattr_destroy(&attrs);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    to_worker_ = in_pipe[1];
    from_worker_ = out_pipe[0];
    if (rc != 0) {
      pid_ = -1;
      init_error_ = "cannot start the worker " + path_ + ": " + std::strerror(rc);
      return;
    }
    Send(init_);
    Reply r = Receive(Clock::now() + std::chrono::seconds(300));
    if (r.kind != Reply::kOk) {
      // Starting, the worker compiles and runs the unscheduled program for
      // the reference: a program that traps on its inputs dies here.
      init_error_ = "computing the reference (the unscheduled program, compiled) failed: " +
                    (r.kind == Reply::kTimedOut ? std::string("no answer in 300 s") : r.why);
    } else if (!r.message.value("ok", false)) {
      init_error_ = r.message.value("error", std::string("unknown error"));
    } else {
      init_error_.clear();
      reference_check_ = r.message.value("reference_check", std::string());
    }
  }

  void Stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (to_worker_ >= 0) ::close(to_worker_);
    if (from_worker_ >= 0) ::close(from_worker_);
    to_worker_ = from_worker_ = -1;
  }

  std::string path_;
  json init_;
  int shared_fd_ = -1;
  pid_t pid_ = -1;
  int to_worker_ = -1;
  int from_worker_ = -1;
  std::string buffer_;
  std::string init_error_;
  std::string reference_check_;
  int incarnation_ = 0;
};

}  // namespace

// The reference outputs, shared with the workers: an anonymous in-memory
// file (memfd), which workers reach as /proc/self/fd/N. It has no name on
// disk, so it goes with the last process that holds it, even when the tuner
// is killed with SIGKILL (a named temporary file was left behind then).
struct ReferenceFile {
  int fd = -1;
  ReferenceFile() {
    fd = ::memfd_create("tunedb-reference", MFD_CLOEXEC);
    if (fd < 0) throw std::runtime_error(std::string("cannot create the reference outputs' file: ") + std::strerror(errno));
  }
  ~ReferenceFile() { ::close(fd); }
  std::string PathInWorker() const { return "/proc/self/fd/" + std::to_string(fd); }
  ReferenceFile(const ReferenceFile&) = delete;
  ReferenceFile& operator=(const ReferenceFile&) = delete;
};

struct Runner::Impl {
  // The reference outputs, computed by the first worker and read by the
  // others. Declared first, closed last: after the workers have quit.
  ReferenceFile reference_file;
  MeasureConfig config;
  ir::PrimFunc workload;
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::string reference_check;
  PhaseSecs phase_secs;

  json InitMessage(bool check_reference) const {
    return {{"op", "init"},
            {"workload", json::parse(ir::ProgramToJson(workload))},
            {"cpu", config.target.cpu},
            {"features", config.target.features},
            {"num_cores", config.target.num_cores},
            {"seed", config.input_seed},
            {"rtol", config.rtol},
            {"atol", config.atol},
            {"check_reference", check_reference},
            {"reference_file", reference_file.PathInWorker()},
            {"max_check_ops", config.interpreter_check_max_ops}};
  }

  // The last Measure call's candidates. Their kernels stay built in the
  // workers until the next call, so that MeasureAgain times them without
  // building them again: the tuner's second look at a new best used to be
  // a second compile.
  struct Call {
    std::vector<json> programs;
    std::vector<int> worker_of;  // the worker that built it, -1 before that
    std::vector<int> built_in;   // incarnation of that worker holding its kernel, -1: none
    std::vector<int> number_of;  // runs per repeat, found by its first timing
  } call;

  bool Holds(std::size_t i) const {
    return call.built_in[i] >= 0 && call.built_in[i] == workers[static_cast<std::size_t>(call.worker_of[i])]->incarnation();
  }

  json BuildRequest(std::size_t i) const {
    json r = {{"op", "build"}, {"id", i}, {"program", call.programs[i]}};
    if (config.fault.kind != FaultInjection::kNone && config.fault.candidate == static_cast<int>(i)) {
      r["fault"] = config.fault.kind == FaultInjection::kCrash  ? "crash"
                   : config.fault.kind == FaultInjection::kHang ? "hang"
                                                                : "endless_build";
    }
    return r;
  }

  void RecordBuild(std::size_t i, WorkerProcess& w, const Reply& r, MeasureResult& result) {
    call.built_in[i] = -1;
    if (r.kind == Reply::kTimedOut) {
      result.status = MeasureStatus::kTimeout;
      result.error = "building took longer than " + SecondsText(config.build_timeout_s);
      w.Restart();
    } else if (r.kind == Reply::kDied) {
      result.status = MeasureStatus::kBuildError;
      result.error = r.why + " while building";
      w.Restart();
    } else if (r.message.value("status", "") != "ok") {
      result.status = MeasureStatus::kBuildError;
      result.error = r.message.value("error", std::string("unknown build error"));
    } else {
      result.compile_secs = r.message.value("compile_secs", 0.0);
      call.built_in[i] = w.incarnation();
    }
  }

  // The worker frees candidate i's kernel, if it still holds it.
  void Release(std::size_t i) {
    if (!Holds(i)) return;
    call.built_in[i] = -1;
    WorkerProcess& w = *workers[static_cast<std::size_t>(call.worker_of[i])];
    w.Send({{"op", "release"}, {"id", i}});
    if (w.Receive(Clock::now() + std::chrono::seconds(10)).kind != Reply::kOk) w.Restart();
  }

  // Phase 1: builds, in parallel across workers, each to the first worker
  // free.
  void BuildAll(std::vector<MeasureResult>& results) {
    std::size_t next = 0;
    std::vector<Clock::time_point> deadlines(workers.size());
    auto submit = [&](std::size_t k) {
      if (next >= results.size()) return;
      call.worker_of[next] = static_cast<int>(k);
      workers[k]->pending_id = static_cast<int>(next);
      workers[k]->Send(BuildRequest(next));
      deadlines[k] = Clock::now() + Seconds(config.build_timeout_s);
      ++next;
    };
    for (std::size_t k = 0; k < workers.size(); ++k) submit(k);
    while (true) {
      bool any = false;
      for (std::size_t k = 0; k < workers.size(); ++k) {
        WorkerProcess& w = *workers[k];
        if (w.pending_id < 0) continue;
        any = true;
        // A short wait per worker keeps all of them moving.
        Reply r = w.Receive(std::min(deadlines[k], Clock::now() + std::chrono::milliseconds(5)));
        if (r.kind == Reply::kTimedOut && Clock::now() < deadlines[k]) continue;
        std::size_t i = static_cast<std::size_t>(w.pending_id);
        w.pending_id = -1;
        RecordBuild(i, w, r, results[i]);
        submit(k);
      }
      if (!any) break;
    }
  }

  // Phase 2: the runs of candidates `which`, one at a time, into
  // results[i]. With spread repeats, a candidate's repeats are spread over
  // the whole call: pass 0 times every candidate's first repeat (verifying
  // it first unless `verified`, and finding `number`), each later pass
  // times one more repeat of every candidate still standing. On a shared
  // host the machine's speed drifts over seconds; spread repeats give every
  // candidate the same mixture of its states, where back-to-back repeats
  // compare one candidate's fast second with another's slow one.
  // A kernel no longer held (its worker was replaced) is built and
  // verified again first.
  void RunPasses(const std::vector<std::size_t>& which, std::vector<MeasureResult>& results, bool verified,
                 double slow_cutoff_secs, double slow_factor) {
    const MeasureConfig& c = config;
    const int passes = c.spread_repeats && which.size() > 1 ? std::max(1, c.repeat) : 1;
    std::vector<bool> standing(results.size(), false);  // verified and timed so far, or not yet run
    for (std::size_t i : which) standing[i] = true;
    for (int pass = 0; pass < passes; ++pass) {
      for (std::size_t i : which) {
        if (!standing[i]) continue;
        bool verify = pass == 0 && !verified;
        standing[i] = TimeOnce(i, verify, passes > 1 ? 1 : c.repeat, call.number_of[i],
                               pass == 0 ? slow_cutoff_secs : 0.0, results[i]);
      }
      if (pass == 0 && pass + 1 < passes && slow_factor > 0) CutSlowAfterFirstPass(which, results, slow_factor, standing);
    }
  }

  // One run request for candidate i (rebuilt and verified first if its
  // kernel is gone): its timings are added to `res`. Returns whether the
  // candidate stands for more (ok, and not cut by the worker).
  bool TimeOnce(std::size_t i, bool verify, int repeat, int number, double slow_cutoff_secs, MeasureResult& res) {
    const MeasureConfig& c = config;
    WorkerProcess& w = *workers[static_cast<std::size_t>(call.worker_of[i])];
    if (!Holds(i)) {
      w.Send(BuildRequest(i));
      RecordBuild(i, w, w.Receive(Clock::now() + Seconds(c.build_timeout_s)), res);
      if (!Holds(i)) return false;
      verify = true;
    }
    // The kernel stays built after its last run, for MeasureAgain.
    w.Send({{"op", "run"},
            {"id", i},
            {"repeat", repeat},
            {"number", number},
            {"min_repeat_ms", c.min_repeat_ms},
            {"flush_cache", c.flush_cache},
            {"slow_cutoff_secs", slow_cutoff_secs},
            {"verify", verify},
            {"keep", true},
            {"progress_secs", std::min(1.0, c.run_timeout_s / 4)}});
    // The timeout is for one run: a progress mark (see worker.cc) starts it
    // again.
    Reply r = w.Receive(Clock::now() + Seconds(c.run_timeout_s));
    while (r.kind == Reply::kOk && r.message.value("progress", false)) {
      r = w.Receive(Clock::now() + Seconds(c.run_timeout_s));
    }
    bool stands = false;
    if (r.kind == Reply::kTimedOut) {
      res.status = MeasureStatus::kTimeout;
      res.error = RunTimeoutError(c.run_timeout_s);
      res.run_secs.clear();
      w.Restart();
    } else if (r.kind == Reply::kDied) {
      res.status = MeasureStatus::kRunError;
      res.error = r.why + " while running";
      res.run_secs.clear();
      w.Restart();
    } else {
      std::string status = r.message.value("status", "run_error");
      res.status = status == "ok"             ? MeasureStatus::kOk
                   : status == "wrong_result" ? MeasureStatus::kWrongResult
                                              : MeasureStatus::kRunError;
      res.error = r.message.value("error", std::string());
      bool cut = r.message.value("cut", false);
      // The worker frees a kernel that computed wrong or was cut.
      if (res.status != MeasureStatus::kOk || cut) call.built_in[i] = -1;
      if (res.status == MeasureStatus::kOk) {
        for (double secs : r.message.at("run_secs").get<std::vector<double>>()) res.run_secs.push_back(secs);
        if (number <= 0) call.number_of[i] = r.message.value("number", c.number);
        stands = !cut;
      } else {
        res.run_secs.clear();
      }
    }
    if (!w.init_error().empty()) throw std::runtime_error("a replaced worker failed to start: " + w.init_error());
    return stands;
  }

  // After the first pass: candidates more than slow_factor times slower
  // than the call's fastest stop standing (see Runner::Measure), after a
  // second, short look: a stall of the machine that covered a candidate's
  // first repeat (a 14 us kernel kept at 453 us, session 35) does not
  // cover both. A tenth of its first repeat's runs, after an untimed run.
  void CutSlowAfterFirstPass(const std::vector<std::size_t>& which, std::vector<MeasureResult>& results,
                             double slow_factor, std::vector<bool>& standing) {
    auto fastest_of = [&](const MeasureResult& r) { return *std::min_element(r.run_secs.begin(), r.run_secs.end()); };
    double fastest = std::numeric_limits<double>::infinity();
    for (std::size_t i : which) {
      const MeasureResult& r = results[i];
      if (r.status == MeasureStatus::kOk && !r.run_secs.empty()) fastest = std::min(fastest, fastest_of(r));
    }
    for (std::size_t i : which) {
      if (!standing[i] || results[i].run_secs.empty() || fastest_of(results[i]) <= slow_factor * fastest) continue;
      standing[i] = TimeOnce(i, false, 1, std::max(1, call.number_of[i] / 10), 0.0, results[i]);
      if (!standing[i] || results[i].status != MeasureStatus::kOk || fastest_of(results[i]) <= slow_factor * fastest) {
        continue;
      }
      standing[i] = false;
      Release(i);  // it is not needed for the later passes, nor again
    }
  }

  static Clock::duration Seconds(double secs) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(secs));
  }
};

std::string MeasureConfigProblem(const MeasureConfig& c) {
  constexpr double kDay = 86400;
  if (c.repeat < 1) return "--repeat must be at least 1";
  if (c.number < 0) return "--number must be 0 (grow it) or more";
  if (!(c.min_repeat_ms >= 0 && std::isfinite(c.min_repeat_ms))) {
    return "--min-repeat-ms must be a finite number of milliseconds, 0 or more";
  }
  if (!(c.run_timeout_s > 0 && c.run_timeout_s <= kDay)) {
    return "--timeout must be more than 0 and at most 86400 seconds";
  }
  if (!(c.build_timeout_s > 0 && c.build_timeout_s <= kDay)) {
    return "the build timeout must be more than 0 and at most 86400 seconds";
  }
  // A timed repeat lasts at least min_repeat_ms (its growth aims a little
  // past it) and must end within the timeout, or it counts as hung: every
  // candidate would time out.
  if (c.number == 0 && c.min_repeat_ms > c.run_timeout_s * 1000 / 2) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%g", c.min_repeat_ms);
    return std::string("--min-repeat-ms ") + ms + " is more than half of --timeout (" + SecondsText(c.run_timeout_s) +
           "): every timed repeat would count as hung";
  }
  return "";
}

Runner::Runner(const ir::PrimFunc& workload, MeasureConfig config) : impl_(std::make_unique<Impl>()) {
  if (std::string problem = MeasureConfigProblem(config); !problem.empty()) throw std::invalid_argument(problem);
  impl_->config = std::move(config);
  impl_->workload = workload;
  MeasureConfig& c = impl_->config;
  // A worker that dies leaves a broken pipe: writing to it must not kill us.
  ::signal(SIGPIPE, SIG_IGN);
  if (c.worker_path.empty()) c.worker_path = DefaultWorkerPath();
  if (::access(c.worker_path.c_str(), X_OK) != 0) {
    throw std::runtime_error("the measuring worker " + c.worker_path + " is missing or not executable");
  }
  int n = c.workers > 0 ? c.workers : std::max(1, c.target.num_cores);
  for (int i = 0; i < n; ++i) {
    // The first worker computes the reference (and checks it against the
    // interpreter); the others read its outputs from reference_file.
    impl_->workers.push_back(std::make_unique<WorkerProcess>(c.worker_path, impl_->InitMessage(i == 0), impl_->reference_file.fd));
    if (!impl_->workers.back()->init_error().empty()) {
      throw std::runtime_error(impl_->workers.back()->init_error());
    }
    if (i == 0) impl_->reference_check = impl_->workers.back()->reference_check();
  }
}

Runner::~Runner() {
  for (auto& w : impl_->workers) w->Send({{"op", "quit"}});
}

const MeasureConfig& Runner::config() const { return impl_->config; }
const std::string& Runner::reference_check() const { return impl_->reference_check; }
const PhaseSecs& Runner::phase_secs() const { return impl_->phase_secs; }

std::vector<MeasureResult> Runner::Measure(const std::vector<ir::PrimFunc>& candidates, double slow_cutoff_secs,
                                           double slow_factor) {
  Impl& m = *impl_;
  for (std::size_t i = 0; i < m.call.programs.size(); ++i) m.Release(i);
  const std::size_t n = candidates.size();
  m.call.programs.clear();
  for (const ir::PrimFunc& candidate : candidates) m.call.programs.push_back(json::parse(ir::ProgramToJson(candidate)));
  m.call.worker_of.assign(n, -1);
  m.call.built_in.assign(n, -1);
  m.call.number_of.assign(n, m.config.number);
  std::vector<MeasureResult> results(n);

  auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const Clock::time_point build_start = Clock::now();
  m.BuildAll(results);
  m.phase_secs.build += seconds_since(build_start);

  // Every candidate that built, whether its worker still holds the kernel
  // or not: a worker replaced after a later build timed out lost the
  // kernels it held, and RunPasses builds those again. (Left out, they were
  // reported "ok" with no timing.)
  std::vector<std::size_t> built;
  for (std::size_t i = 0; i < n; ++i) {
    if (results[i].status == MeasureStatus::kOk) built.push_back(i);
  }
  const Clock::time_point run_start = Clock::now();
  m.RunPasses(built, results, /*verified=*/false, slow_cutoff_secs, slow_factor);
  m.phase_secs.run += seconds_since(run_start);
  return results;
}

std::vector<MeasureResult> Runner::MeasureAgain(const std::vector<std::size_t>& indices) {
  Impl& m = *impl_;
  std::vector<MeasureResult> results(m.call.programs.size());
  for (std::size_t i : indices) {
    if (i >= results.size()) {
      throw std::out_of_range("MeasureAgain: candidate " + std::to_string(i) + " of a call that measured " +
                              std::to_string(results.size()));
    }
  }
  const Clock::time_point run_start = Clock::now();
  m.RunPasses(indices, results, /*verified=*/true, 0, 0);
  m.phase_secs.run += std::chrono::duration<double>(Clock::now() - run_start).count();
  std::vector<MeasureResult> out;
  for (std::size_t i : indices) out.push_back(results[i]);
  return out;
}

}  // namespace tunedb::measure
