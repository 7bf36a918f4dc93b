#include "measure/worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/flops.h"
#include "ir/interpreter.h"
#include "ir/json.h"
#include "measure/jit.h"
#include "measure/lower.h"
#include "measure/reference.h"
#include "measure/runtime.h"

namespace tunedb::measure {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A verification run this long is timing enough for a candidate cut as
// hopeless (see Worker::Run). Measured: first runs of 0.14-1.7 s kernels
// were 0-7% slower than the runs after them.
constexpr double kLongRunSecs = 0.1;

// Runs shorter than this are never cut as hopeless. Three back-to-back
// runs of a few microseconds fit in one stall of a vCPU: matmul 128's 13 us
// kernels, on two threads, ran 290-350 us a run for seconds at a time in
// session 35's warm sessions (and 13 us before and after), and up to half
// of a chunk was kept 24x too slow. A run this long shrugs off such a
// stall; a shorter candidate costs little more fully timed (its first
// repeat, after which the call's own cut drops a slow one, runner.h).
constexpr double kShortestCutRunSecs = 1e-3;

class Worker {
 public:
  // `out` carries the replies, and the progress marks of a long run request.
  explicit Worker(std::FILE* out) : out_(out) {}

  json Handle(const json& request) {
    std::string op = request.value("op", "");
    // After running kernels, the pool's threads must not spin on while the
    // runner moves on to a kernel in another worker (see runtime.h).
    if (op == "init") return Parked(Init(request));
    if (op == "build") return Build(request);
    if (op == "run") return Parked(Run(request));
    if (op == "release") {
      Release(request.at("id").get<std::int64_t>());
      return {{"ok", true}};
    }
    return {{"ok", false}, {"error", "unknown request '" + op + "'"}};
  }

 private:
  static json Parked(json reply) {
    ParkParallelThreads();
    return reply;
  }

  json Init(const json& r) {
    workload_ = ir::ProgramFromJson(r.at("workload").dump());
    Target target;
    target.cpu = r.at("cpu").get<std::string>();
    target.features = r.at("features").get<std::string>();
    target.num_cores = r.at("num_cores").get<int>();
    rtol_ = r.at("rtol").get<double>();
    atol_ = r.at("atol").get<double>();
    jit_ = std::make_unique<Jit>(target);
    args_ = ir::MakeArguments(workload_, r.at("seed").get<std::uint64_t>());
    outputs_ = ir::OutputParams(workload_);
    // The interpreter's check runs first: it names the block and expression
    // of an error in the program itself (an integer division by zero on
    // these inputs), which the compiled reference would die of (SIGFPE).
    std::string check = "skipped";
    std::vector<ir::NDArray> expected;
    if (r.value("check_reference", false)) {
      // The interpreter's work is its FLOPs, or its block instances where it
      // computes less than one per element: a transpose counts no FLOPs, and
      // went unbounded until an int32 matmul of 1024 took 90 s here (when
      // integers counted no FLOPs).
      std::int64_t work = std::max(ir::CountFlops(workload_), ir::CountBlockInstances(workload_));
      std::int64_t max_work = r.at("max_check_ops").get<std::int64_t>();
      if (work <= max_work) {
        expected = ir::MakeArguments(workload_, r.at("seed").get<std::uint64_t>());
        ir::Interpret(workload_, expected);
        check = "interpreter";
      } else {
        check = "skipped: " + std::to_string(work) + " operations > " + std::to_string(max_work);
      }
    }
    // The reference: the unscheduled program through the same code
    // generator, its independent outer loops on all cores (reference.h).
    // It runs for seconds on a large workload, so the first worker leaves
    // its outputs in the runner's file for the others (and for any worker
    // started again after a crash) to read.
    std::string file = r.value("reference_file", std::string());
    if (!ReadReference(file)) {
      Kernel reference = jit_->Compile(Lower(ReferenceProgram(workload_)));
      Execute(reference.fn);
      jit_->Release(reference);
      for (int i : outputs_) reference_.push_back(args_[i]);
      WriteReference(file);
    }
    if (!expected.empty()) {
      for (std::size_t k = 0; k < outputs_.size(); ++k) {
        std::string why;
        if (!ir::AllClose(reference_[k], expected[outputs_[k]], rtol_, atol_, &why)) {
          return {{"ok", false},
                  {"error", "the compiled reference disagrees with the interpreter on output " +
                                workload_.params[outputs_[k]]->name + ": " + why}};
        }
      }
    }
    return {{"ok", true}, {"reference_check", check}};
  }

  // True when `file` holds exactly the outputs' bytes (it is empty until the
  // first worker has written it).
  bool ReadReference(const std::string& file) {
    if (file.empty()) return false;
    std::size_t expected = 0;
    for (int i : outputs_) expected += args_[i].bytes();
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    if (!in || static_cast<std::size_t>(in.tellg()) != expected || expected == 0) return false;
    in.seekg(0);
    std::vector<ir::NDArray> outputs;
    for (int i : outputs_) {
      outputs.emplace_back(args_[i].dtype(), args_[i].shape());
      in.read(static_cast<char*>(outputs.back().data()), static_cast<std::streamsize>(outputs.back().bytes()));
    }
    if (!in) return false;
    reference_ = std::move(outputs);
    return true;
  }

  // Written in place: workers start one after another, so nobody reads it
  // while it is written, and a write cut short leaves it shorter than the
  // outputs, which ReadReference refuses.
  void WriteReference(const std::string& file) {
    if (file.empty()) return;
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    for (const ir::NDArray& a : reference_) {
      out.write(static_cast<const char*>(a.data()), static_cast<std::streamsize>(a.bytes()));
    }
    // On failure the other workers compute the reference themselves.
  }

  json Build(const json& r) {
    std::int64_t id = r.at("id").get<std::int64_t>();
    json reply = {{"id", id}};
    try {
      ir::PrimFunc candidate = ir::ProgramFromJson(r.at("program").dump());
      if (candidate.params.size() != workload_.params.size()) {
        throw BuildError("the candidate has " + std::to_string(candidate.params.size()) +
                         " parameters, the workload " + std::to_string(workload_.params.size()));
      }
      for (std::size_t i = 0; i < candidate.params.size(); ++i) {
        if (candidate.params[i]->shape != workload_.params[i]->shape ||
            candidate.params[i]->dtype != workload_.params[i]->dtype) {
          throw BuildError("parameter " + std::to_string(i) + " of the candidate differs from the workload's");
        }
      }
      CompileOptions options;
      std::string fault = r.value("fault", "");
      options.fault_crash = fault == "crash";
      options.fault_hang = fault == "hang";
      if (fault == "endless_build") {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // until the runner gives up on it
      }
      Kernel k = jit_->Compile(Lower(candidate), options);
      Release(id);  // a kernel an interrupted call kept under this id
      kernels_[id] = k;
      reply["status"] = "ok";
      reply["compile_secs"] = k.compile_secs;
    } catch (const std::exception& e) {
      reply["status"] = "build_error";
      reply["error"] = e.what();
    }
    return reply;
  }

  json Run(const json& r) {
    std::int64_t id = r.at("id").get<std::int64_t>();
    json reply = {{"id", id}};
    auto it = kernels_.find(id);
    if (it == kernels_.end()) {
      reply["status"] = "run_error";
      reply["error"] = "no kernel " + std::to_string(id) + " was built in this worker";
      return reply;
    }
    KernelFn fn = it->second.fn;
    // "keep": the kernel stays built for a later run request (the runner
    // spreads a candidate's repeats over the batch); otherwise this is its
    // last run. "verify": false on those later runs, which were checked.
    bool keep = r.value("keep", false);
    bool verify = r.value("verify", true);
    progress_secs_ = r.value("progress_secs", 0.0);
    last_mark_ = Clock::now();
    // Correctness first: outputs start poisoned (NaN, or a sentinel in an
    // integer output) so an element never written shows up as a mismatch.
    // Unverified runs still run once untimed, so that no timing starts
    // from the previous kernel's cache contents.
    if (verify) {
      for (int i : outputs_) args_[i].Poison();
    }
    auto check_start = std::chrono::steady_clock::now();
    Execute(fn);
    double check_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
    MarkProgress();
    for (std::size_t k = 0; verify && k < outputs_.size(); ++k) {
      std::string why;
      if (!ir::AllClose(args_[outputs_[k]], reference_[k], rtol_, atol_, &why)) {
        reply["status"] = "wrong_result";
        reply["error"] = "output " + workload_.params[outputs_[k]]->name + ": " + why;
        Release(id);
        return reply;
      }
    }
    // A candidate far slower than the best known is not worth its repeats:
    // its fastest of up to three more runs is its one timing. Not a short
    // verification run alone: a first run pays for page faults in fresh
    // code and for waking the parked thread pool, and a single run on this
    // shared VM is easily disturbed; one run cut 20 us kernels as 0.4-2 ms
    // ones. A long one is enough: those costs are a few percent of it, and
    // each further run of a candidate that slow costs as much again. Never
    // one shorter than kShortestCutRunSecs.
    double slow_cutoff = r.value("slow_cutoff_secs", 0.0);
    if (verify && slow_cutoff > 0 && check_secs > slow_cutoff) {
      double warm_secs = check_secs;
      for (int attempt = 0; attempt < 3 && warm_secs > slow_cutoff && check_secs < kLongRunSecs; ++attempt) {
        warm_secs = std::min(warm_secs, TimeRuns(fn, 1));
      }
      if (warm_secs > slow_cutoff && warm_secs >= kShortestCutRunSecs) {
        Release(id);
        reply["status"] = "ok";
        reply["run_secs"] = json::array({warm_secs});
        reply["number"] = 1;
        reply["cut"] = true;
        return reply;
      }
    }
    int repeat = r.at("repeat").get<int>();
    int number = r.at("number").get<int>();
    double min_repeat_ms = r.at("min_repeat_ms").get<double>();
    bool flush = r.at("flush_cache").get<bool>();
    json run_secs = json::array();
    if (number <= 0) {
      // Grow the number of runs per repeat until a repeat is long enough,
      // aiming at once for 1.2 x min_repeat_ms from a warm run (the
      // verification run paid for page faults and for waking the threads).
      // The last, long enough, timing is a repeat like any other, and is
      // kept as the first one (not under flush_cache, which flushes before
      // each repeat): discarding it cost up to a third of tuning's run time.
      number = 1;
      double secs = TimeRuns(fn, number);
      while (secs * 1000 < min_repeat_ms && number < (1 << 24)) {
        double scale = secs > 0 ? std::clamp(1.2 * min_repeat_ms / (secs * 1000), 1.1, 1000.0) : 1000.0;
        number = static_cast<int>(std::min<double>(std::ceil(number * scale), 1 << 24));
        secs = TimeRuns(fn, number);
      }
      if (!flush && repeat > 0) {
        run_secs.push_back(secs / number);
        --repeat;
      }
    }
    for (int rep = 0; rep < repeat; ++rep) {
      if (flush) FlushCaches();
      run_secs.push_back(TimeRuns(fn, number) / number);
    }
    if (!keep) Release(id);
    reply["status"] = "ok";
    reply["run_secs"] = run_secs;
    reply["number"] = number;
    return reply;
  }

  void Execute(KernelFn fn) {
    std::vector<void*> pointers;
    for (ir::NDArray& a : args_) pointers.push_back(a.data());
    fn(pointers.data());
  }

  double TimeRuns(KernelFn fn, int number) {
    std::vector<void*> pointers;
    for (ir::NDArray& a : args_) pointers.push_back(a.data());
    auto start = Clock::now();
    for (int i = 0; i < number; ++i) fn(pointers.data());
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    MarkProgress();
    return secs;
  }

  // The runner's timeout is for one run, not for a whole request: a
  // request is a verification run and then up to `repeat` timings, and the
  // unscheduled 1024 matmul (7 s a run) timed out at 10 s that way. So a
  // request that has lasted progress_secs since its last mark says it is
  // still going, and the runner waits for another run_timeout_s. Marks are
  // rare (at most one a second under the default 10 s timeout) so that the
  // runner, which wakes up to read them, does not take a core from a kernel
  // being timed.
  void MarkProgress() {
    if (progress_secs_ <= 0) return;
    auto now = Clock::now();
    if (std::chrono::duration<double>(now - last_mark_).count() < progress_secs_) return;
    static const char kMark[] = "{\"progress\":true}\n";
    std::fwrite(kMark, 1, sizeof kMark - 1, out_);
    std::fflush(out_);
    last_mark_ = now;
  }

  void FlushCaches() {
    // Touch more memory than any last-level cache holds.
    if (flush_buffer_.empty()) flush_buffer_.assign(std::size_t{64} << 20, 1);
    volatile char sink = 0;
    for (std::size_t i = 0; i < flush_buffer_.size(); i += 64) {
      flush_buffer_[i] += 1;
      sink = sink + flush_buffer_[i];
    }
  }

  void Release(std::int64_t id) {
    auto it = kernels_.find(id);
    if (it == kernels_.end()) return;
    jit_->Release(it->second);
    kernels_.erase(it);
  }

  ir::PrimFunc workload_;
  std::unique_ptr<Jit> jit_;
  std::vector<ir::NDArray> args_;
  std::vector<int> outputs_;
  std::vector<ir::NDArray> reference_;
  std::map<std::int64_t, Kernel> kernels_;
  std::vector<char> flush_buffer_;
  double rtol_ = 1e-3, atol_ = 1e-3;
  std::FILE* out_;
  double progress_secs_ = 0;
  Clock::time_point last_mark_;
};

}  // namespace

int RunWorker(std::FILE* in, std::FILE* out) {
  Worker worker(out);
  std::string line;
  int c;
  while (true) {
    line.clear();
    while ((c = std::fgetc(in)) != EOF && c != '\n') line.push_back(static_cast<char>(c));
    if (line.empty() && c == EOF) return 0;
    if (line.empty()) continue;
    json reply;
    try {
      json request = json::parse(line);
      if (request.value("op", "") == "quit") return 0;
      reply = worker.Handle(request);
    } catch (const std::exception& e) {
      reply = {{"ok", false}, {"status", "run_error"}, {"error", std::string("worker: ") + e.what()}};
    }
    std::string text = reply.dump() + "\n";
    std::fwrite(text.data(), 1, text.size(), out);
    std::fflush(out);
  }
}

}  // namespace tunedb::measure
