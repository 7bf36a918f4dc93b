// `tunedb e2e mlp`: the MLC lecture's end-to-end case. A two-layer MLP
// (dense_bias_relu, then dense) from the workload library runs with its
// unscheduled kernels; its layers get their best schedules from the
// database (tuned now when the database has none); the model runs again with
// the tuned kernels, its output is checked against the first run, and both
// end-to-end times are printed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/core.h>

#include "api/cli/commands.h"
#include "api/remote/remote_database.h"
#include "db/sqlite_database.h"
#include "ir/flops.h"
#include "ir/ndarray.h"
#include "ir/structural.h"
#include "ir/workloads.h"
#include "measure/jit.h"
#include "measure/lower.h"
#include "search/tuner.h"

namespace tunedb::cli {
namespace {

struct E2eOptions {
  std::string model = "mlp";
  std::string db = "tunedb.sqlite";
  int trials = 64;
  int batch_size = 128, in = 784, hidden = 128, out = 10;
  int repeat = 5;
  std::string token_file;
};

// The MLP's tensors; kernels read and write them in place.
struct MlpTensors {
  ir::NDArray x, w1, b1, h, w2, y;
};

struct MlpKernels {
  measure::Kernel layer1, layer2;
};

void RunMlp(const MlpKernels& k, MlpTensors& t) {
  void* args1[] = {t.x.data(), t.w1.data(), t.b1.data(), t.h.data()};
  k.layer1.fn(args1);
  void* args2[] = {t.h.data(), t.w2.data(), t.y.data()};
  k.layer2.fn(args2);
}

// Median seconds of one model run: `repeat` repeats of at least 100 ms.
double TimeMlp(const MlpKernels& k, MlpTensors& t, int repeat) {
  using Clock = std::chrono::steady_clock;
  RunMlp(k, t);  // warm-up
  auto start = Clock::now();
  RunMlp(k, t);
  double once = std::chrono::duration<double>(Clock::now() - start).count();
  int number = std::max(1, static_cast<int>(0.1 / std::max(once, 1e-9)));
  std::vector<double> secs;
  for (int r = 0; r < repeat; ++r) {
    start = Clock::now();
    for (int i = 0; i < number; ++i) RunMlp(k, t);
    secs.push_back(std::chrono::duration<double>(Clock::now() - start).count() / number);
  }
  std::sort(secs.begin(), secs.end());
  return secs[secs.size() / 2];
}

void RunE2e(const E2eOptions& o) {
  if (o.model != "mlp") throw UsageError("unknown model '" + o.model + "' (available: mlp)");
  if (o.batch_size < 1 || o.in < 1 || o.hidden < 1 || o.out < 1) throw UsageError("layer sizes must be at least 1");
  if (o.trials < 1) throw UsageError("--trials must be at least 1");
  if (o.repeat < 1) throw UsageError("--repeat must be at least 1");
  std::vector<ir::Workload> layers = {
      ir::BuildWorkload(fmt::format("dense_bias_relu:B={},IN={},OUT={}", o.batch_size, o.in, o.hidden)),
      ir::BuildWorkload(fmt::format("dense:B={},IN={},OUT={}", o.batch_size, o.hidden, o.out)),
  };
  measure::Target target = measure::Target::Host();
  std::string target_name = target.ToString();
  fmt::print("MLP {} -> {} (relu) -> {}, batch {}; target \"{}\"\n", o.in, o.hidden, o.out, o.batch_size,
             target_name);
  for (const ir::Workload& l : layers) fmt::print("  layer {} (hash {})\n", l.spec, ir::WorkloadHash(l.func));

  const ir::DataType f32 = ir::DataType::kFloat32;
  MlpTensors t;
  t.x = ir::NDArray::Random(f32, {o.batch_size, o.in}, 1);
  t.w1 = ir::NDArray::Random(f32, {o.hidden, o.in}, 2);
  t.b1 = ir::NDArray::Random(f32, {o.hidden}, 3);
  t.w2 = ir::NDArray::Random(f32, {o.out, o.hidden}, 4);
  t.h = ir::NDArray(f32, {o.batch_size, o.hidden});
  t.y = ir::NDArray(f32, {o.batch_size, o.out});

  measure::Jit jit(target);
  MlpKernels plain{jit.Compile(measure::Lower(layers[0].func)), jit.Compile(measure::Lower(layers[1].func))};
  RunMlp(plain, t);
  ir::NDArray expected = t.y;
  double plain_secs = TimeMlp(plain, t, o.repeat);

  // The best schedule of each layer: from the database, or tuned now.
  // A file, or a tunedb server (as a compiler would ask one).
  std::unique_ptr<db::Database> opened =
      api::OpenDatabase(o.db, ReadTokenFile(o.token_file));
  db::Database& database = *opened;
  std::vector<std::optional<db::TuningRecord>> best;
  std::vector<std::string> missing;
  for (const ir::Workload& l : layers) {
    best.push_back(BestUsableRecord(database, ir::WorkloadHash(l.func), target_name, l.func));
    if (!best.back()) missing.push_back(l.spec);
  }
  if (!missing.empty()) {
    fmt::print("tuning {} layer(s) without a stored schedule ({} trials into {})...\n", missing.size(), o.trials, o.db);
    search::TuneOptions tune;
    tune.workloads = missing;
    tune.trials = o.trials;
    tune.measure.target = target;
    tune.measure_baseline = false;
    search::TuneReport report;
    {
      InterruptHandler interrupt;
      auto progress = [](const search::TuneEvent& e, const std::vector<search::TaskStatus>&) {
        if (e.kind == search::TuneEvent::kBatchDone) {
          fmt::print("  {}/{} trials, {:.1f} s\n", e.trials_done, e.trials_total, e.elapsed_secs);
          std::fflush(stdout);
        }
      };
      report = search::Tune(database, tune, progress, interrupt.flag());
    }
    if (report.interrupted) {
      int done = 0;
      for (const search::TaskStatus& task : report.tasks) done += task.trials;
      fmt::print("interrupted after {} of {} trials (committed to {}): the layers run with what was measured\n", done,
                 o.trials, o.db);
    }
  }
  std::vector<measure::Kernel> tuned;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const ir::Workload& l = layers[i];
    if (!best[i]) best[i] = BestUsableRecord(database, ir::WorkloadHash(l.func), target_name, l.func);
    if (!best[i]) {
      // As a compiler does without a tuning record: the default (here the
      // unscheduled) kernel, said out loud. A budget smaller than the
      // layers leaves a layer untried, and every candidate can fail.
      tuned.push_back(jit.Compile(measure::Lower(l.func)));
      fmt::print("  {}: no valid schedule in the database after {} trial{}; it runs unscheduled\n", l.spec, o.trials,
                 o.trials == 1 ? "" : "s");
      continue;
    }
    ir::Schedule sch = ir::ReplayTrace(l.func, ir::Trace::FromJsonText(best[i]->trace), 0);
    tuned.push_back(jit.Compile(measure::Lower(sch.func())));
    fmt::print("  {}: best record {}, {:.2f} GFLOP/s\n", l.spec, best[i]->id,
               static_cast<double>(ir::CountFlops(l.func)) / best[i]->Median() / 1e9);
  }
  MlpKernels fast{tuned[0], tuned[1]};
  t.y.Fill(std::nan(""));
  RunMlp(fast, t);
  std::string why;
  if (!ir::AllClose(t.y, expected, 1e-3, 1e-3, &why)) {
    throw std::runtime_error("the tuned model's output differs from the unscheduled model's: " + why);
  }
  double fast_secs = TimeMlp(fast, t, o.repeat);
  fmt::print("outputs: identical within 1e-3 ({} values)\n", expected.size());
  // In microseconds below 0.1 ms, where a small model's "0.000 ms" hid it.
  fmt::print("end to end, unscheduled kernels: {}\n", DurationText(plain_secs));
  fmt::print("end to end, tuned kernels:       {} ({})\n", DurationText(fast_secs), SpeedupText(plain_secs, fast_secs));
  for (const measure::Kernel& k : {plain.layer1, plain.layer2, fast.layer1, fast.layer2}) jit.Release(k);
}

}  // namespace

void AddE2eCommand(CLI::App& app) {
  auto o = std::make_shared<E2eOptions>();
  CLI::App* cmd = app.add_subcommand("e2e", "Run a small model end to end with unscheduled and with tuned kernels");
  cmd->add_option("model", o->model, "The model: mlp")->capture_default_str();
  cmd->add_option("--db", o->db, "The SQLite database file, or a tunedb server's URL (http://HOST:PORT)")
      ->capture_default_str();
  cmd->add_option("--token-file", o->token_file, "Bearer token for a server's write routes (to tune into it)");
  cmd->add_option("--trials", o->trials, "Trials for layers the database has no schedule for")->capture_default_str();
  cmd->add_option("--batch-size", o->batch_size, "Rows of the input")->capture_default_str();
  cmd->add_option("--in", o->in, "Input features")->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "Hidden features (layer 1's outputs)")->capture_default_str();
  cmd->add_option("--out", o->out, "Output features")->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "Timed repeats (the median is reported)")->capture_default_str();
  cmd->callback([o] { RunE2e(*o); });
}

}  // namespace tunedb::cli
