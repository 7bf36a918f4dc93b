// Cost-model benchmark: data made by tunedb itself (samples of the default
// design space of built-in workloads - or, with --data random, random
// primitive sequences - measured by the real Runner), then
//  - features + prediction throughput (candidates/s), from scheduled
//    programs to scores;
//  - training time against dataset size;
//  - held-out ranking quality on (a) records of workloads seen in training
//    and (b) workloads left out entirely.
//
// Usage: costmodel_bench [--per-workload 150] [--seed 0] [--data space|random] [--patience 20]
//                        [--shapes small|tuning]
//                        [--save-data FILE | --load-data FILE... [--noise]] [--min-repeat-ms 5]
// --shapes picks the workloads: small (the default; microsecond kernels,
// quick to measure) or tuning (the shapes tune_bench tunes: millisecond
// kernels, whose timings agree better between two measurements on a
// shared VM, softmax apart; bench/RESULTS.md, session 9).
// --save-data keeps the measured programs and times (JSON lines) so that
// --load-data can compare feature or model changes on the same data without
// measuring again. --load-data may be given several times: each file is a
// run, whose records are labelled and ranked within that run only. Samples
// that lower to the same code become one record, with the median of their
// times (costmodel::MergeSameCode). --noise measures (the first 100)
// programs of each seen workload of the first loaded file twice more with
// each way of repeating (back to back, spread over the call) and prints how
// often two measurements order a pair alike: the ceiling that label noise
// puts on pairwise accuracy.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "costmodel/dataset.h"
#include "costmodel/features.h"
#include "costmodel/metrics.h"
#include "costmodel/model.h"
#include "ir/json.h"
#include "ir/structural.h"
#include "ir/schedule/schedule.h"
#include "ir/workloads.h"
#include "measure/lower.h"
#include "measure/runner.h"
#include "search/space.h"
#include "tests/ir/schedule/random_scheduler.h"

#include <nlohmann/json.hpp>

namespace {

using Clock = std::chrono::steady_clock;
using namespace tunedb;

// Minimum length of one timed repeat (--min-repeat-ms). Longer repeats give
// less noisy labels; `tunedb tune` uses 20.
int g_min_repeat_ms = 5;

// How every label of this benchmark is measured.
measure::MeasureConfig LabelConfig() {
  measure::MeasureConfig config;
  config.worker_path = TUNEDB_WORKER;
  config.repeat = 3;
  config.min_repeat_ms = g_min_repeat_ms;
  return config;
}

// The workloads of each --shapes: seen ones are split into training and
// held-out records, unseen ones are only evaluated.
struct WorkloadSet {
  std::vector<std::string> seen, unseen;
};
const std::map<std::string, WorkloadSet> kWorkloadSets = {
    {"small",
     {{"matmul:M=128,N=128,K=128", "dense_bias_relu:B=64,IN=128,OUT=64",
       "conv2d_nhwc:N=1,H=14,W=14,CI=16,CO=16,KH=3,KW=3,stride=1,pad=1", "softmax:M=64,N=256"},
      {"batch_matmul:B=4,M=64,N=64,K=64", "depthwise_conv2d_nhwc:N=1,H=28,W=28,C=32,KH=3,KW=3,stride=1,pad=1"}}},
    // tune_bench's matmul 512, dense layer and ResNet conv2d, and a softmax
    // 16 times the small one (tune_bench tunes none).
    {"tuning",
     {{"matmul:M=512,N=512,K=512", "dense_bias_relu:B=128,IN=784,OUT=128",
       "conv2d_nhwc:N=1,H=56,W=56,CI=64,CO=64,KH=3,KW=3,stride=1,pad=1", "softmax:M=256,N=1024"},
      {"batch_matmul:B=8,M=128,N=128,K=128", "depthwise_conv2d_nhwc:N=1,H=56,W=56,C=64,KH=3,KW=3,stride=1,pad=1"}}},
};

struct Measured {
  std::vector<ir::PrimFunc> programs;
  std::vector<double> medians;
};

// n candidates of a workload: samples of the default design space (what
// the tuner's model ranks), or random sequences of 10 primitives.
Measured MeasureRandomSchedules(const std::string& spec, int n, std::uint64_t seed, bool design_space) {
  ir::Workload w = ir::BuildWorkload(spec);
  measure::MeasureConfig config = LabelConfig();
  Measured m;
  if (design_space) {
    search::SpaceOptions options;
    options.cores = config.target.num_cores;
    std::vector<ir::Trace> spaces = search::DefaultDesignSpace(w.func, options);
    std::mt19937_64 rng(seed);
    for (int attempt = 0; static_cast<int>(m.programs.size()) < n && attempt < 20 * n; ++attempt) {
      auto c = search::Realize(w.func, search::WithoutDecisions(spaces[rng() % spaces.size()]), rng());
      if (c) m.programs.push_back(c->program);
    }
    measure::Runner runner(w.func, config);
    for (const measure::MeasureResult& r : runner.Measure(m.programs)) m.medians.push_back(r.MedianSecs());
    return m;
  }
  for (int i = 0; i < n; ++i) {
    ir::Schedule sch(w.func, seed * 100000 + static_cast<std::uint64_t>(i));
    ir::testing::RandomScheduler random(sch, seed * 100000 + static_cast<std::uint64_t>(i));
    for (int step = 0; step < 10; ++step) {
      try {
        random.Step();
      } catch (const ir::ScheduleError&) {
      }
    }
    m.programs.push_back(sch.func());
  }
  measure::Runner runner(w.func, config);
  for (const measure::MeasureResult& r : runner.Measure(m.programs)) m.medians.push_back(r.MedianSecs());
  return m;
}

// Pairwise agreement between two measurements of the same programs (the
// first kNoisePrograms of the workload), with the repeats of each
// candidate back to back and spread over the call (MeasureConfig::
// spread_repeats), measured alternately: back-to-back, spread, back-to-
// back, spread.
constexpr std::size_t kNoisePrograms = 100;

void PrintNoiseCeiling(const std::string& spec, const Measured& m) {
  ir::Workload w = ir::BuildWorkload(spec);
  std::vector<ir::PrimFunc> programs(m.programs.begin(),
                                     m.programs.begin() + static_cast<std::ptrdiff_t>(std::min(kNoisePrograms, m.programs.size())));
  auto measure = [&](bool spread) {
    measure::MeasureConfig config = LabelConfig();
    config.spread_repeats = spread;
    measure::Runner runner(w.func, config);
    std::vector<double> medians;
    for (const measure::MeasureResult& r : runner.Measure(programs)) medians.push_back(r.MedianSecs());
    return medians;
  };
  std::vector<double> a1 = measure(false), b1 = measure(true), a2 = measure(false), b2 = measure(true);
  std::vector<int> groups(programs.size(), 0);
  auto agreement = [&](const std::vector<double>& x, const std::vector<double>& y) {
    return costmodel::PairwiseAccuracy(costmodel::NormalizedThroughput(x, groups),
                                       costmodel::NormalizedThroughput(y, groups), groups);
  };
  std::printf("| %s | %zu | %.3f | %.3f |\n", spec.c_str(), programs.size(), agreement(a1, a2), agreement(b1, b2));
  std::fflush(stdout);
}

void Print(const char* what, const costmodel::RankingMetrics& m) {
  std::printf("| %s | %zu | %.3f | %.3f | %.3f | %.3f |\n", what, m.samples, m.pairwise, m.top1, m.top5, m.apeak32);
}

}  // namespace

int main(int argc, char** argv) {
  int per_workload = 150;
  std::uint64_t seed = 0;
  bool design_space = true;
  int patience = costmodel::TrainOptions{}.early_stopping_rounds;
  std::string save_path, shapes = "small";
  std::vector<std::string> load_paths;  // --load-data, repeatable: one run per file
  bool noise = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--noise") {
      noise = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      std::printf("usage: costmodel_bench [--per-workload 150] [--seed 0] [--data space|random] [--patience 20]\n"
                  "                       [--shapes small|tuning]\n"
                  "                       [--save-data FILE | --load-data FILE... [--noise]] [--min-repeat-ms 5]\n");
      return 0;
    }
    static const std::set<std::string> with_value = {"--save-data", "--load-data", "--per-workload", "--seed",
                                                     "--data", "--patience", "--min-repeat-ms", "--shapes"};
    if (!with_value.count(a)) {
      std::fprintf(stderr, "unknown option %s (see --help)\n", a.c_str());
      return 2;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--save-data") save_path = argv[i + 1];
    if (a == "--load-data") load_paths.push_back(argv[i + 1]);
    if (a == "--per-workload") per_workload = std::stoi(argv[i + 1]);
    if (a == "--seed") seed = std::stoull(argv[i + 1]);
    if (a == "--data") design_space = std::string(argv[i + 1]) != "random";
    if (a == "--patience") patience = std::stoi(argv[i + 1]);
    if (a == "--min-repeat-ms") g_min_repeat_ms = std::stoi(argv[i + 1]);
    if (a == "--shapes") shapes = argv[i + 1];
    ++i;
  }
  auto workloads = kWorkloadSets.find(shapes);
  if (workloads == kWorkloadSets.end()) {
    std::fprintf(stderr, "--shapes %s: expected small or tuning\n", shapes.c_str());
    return 2;
  }
  const std::vector<std::string>& seen = workloads->second.seen;
  const std::vector<std::string>& unseen = workloads->second.unseen;
  if (!save_path.empty() && !load_paths.empty()) {
    std::fprintf(stderr, "--save-data and --load-data do not go together\n");
    return 2;
  }
  if (load_paths.empty()) {
    std::printf("data: %d %s per workload, measured by the Runner (%zu seen workloads, %zu unseen)\n\n", per_workload,
                design_space ? "samples of the default design space" : "random 10-primitive schedules", seen.size(),
                unseen.size());
  } else {
    std::string files;
    for (const std::string& path : load_paths) files += (files.empty() ? "" : ", ") + path;
    std::printf("data: loaded from %s (%zu seen workloads, %zu unseen)\n\n", files.c_str(), seen.size(), unseen.size());
  }
  // The measurements, one map per run: each loaded file, or this process's
  // measuring. The VM's speed drifts between runs half an hour apart, so a
  // record is labelled and ranked only against its own run's records of
  // its workload (each (run, workload) is a group).
  std::vector<std::map<std::string, Measured>> runs;
  for (const std::string& path : load_paths) {
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 1;
    }
    std::map<std::string, Measured>& loaded = runs.emplace_back();
    int line_number = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_number;
      try {
        auto j = nlohmann::json::parse(line);
        Measured& m = loaded[j.at("spec").get<std::string>()];
        m.programs.push_back(ir::ProgramFromJson(j.at("program").get<std::string>()));
        m.medians.push_back(j.at("median").is_number() ? j.at("median").get<double>()
                                                       : std::numeric_limits<double>::infinity());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s:%d: not a saved measurement: %s\n", path.c_str(), line_number, e.what());
        return 1;
      }
    }
    for (const auto* set : {&seen, &unseen}) {
      for (const std::string& spec : *set) {
        if (loaded[spec].programs.empty()) {
          std::fprintf(stderr, "%s has no records of %s (saved with another --shapes?)\n", path.c_str(), spec.c_str());
          return 1;
        }
      }
    }
  }
  if (noise && !runs.empty()) {
    std::printf("| workload | programs | agreement of two measurements, repeats back to back | spread |\n"
                "| --- | --- | --- | --- |\n");
    for (const std::string& spec : seen) PrintNoiseCeiling(spec, runs.front()[spec]);
    std::printf("\n");
  }
  double measure_secs = 0;
  if (runs.empty()) {
    std::map<std::string, Measured>& measured = runs.emplace_back();
    std::ofstream save;
    if (!save_path.empty()) save.open(save_path);
    std::uint64_t index = 0;
    for (const auto* set : {&seen, &unseen}) {
      for (const std::string& spec : *set) {
        auto t0 = Clock::now();
        Measured& m = measured[spec] = MeasureRandomSchedules(spec, per_workload, seed + index++, design_space);
        measure_secs += std::chrono::duration<double>(Clock::now() - t0).count();
        for (std::size_t i = 0; save && i < m.programs.size(); ++i) {
          nlohmann::json j = {{"spec", spec}, {"program", ir::ProgramToJson(m.programs[i])}};
          j["median"] = std::isfinite(m.medians[i]) ? nlohmann::json(m.medians[i]) : nlohmann::json(nullptr);
          save << j.dump() << "\n";
        }
      }
    }
  }

  // Featurize and label. Candidates that lower to the same code are one
  // record (costmodel::MergeSameCode): softmax's samples, for one, lower
  // to a few dozen programs, and copies of one program on both sides of the
  // split would score the model on inputs it was trained on.
  std::vector<costmodel::Sample> train, seen_test, unseen_test;
  std::vector<ir::PrimFunc> all_programs;  // every sample, copies included: the search featurizes them all
  std::vector<std::string> group_specs;    // group id -> workload
  std::map<std::string, std::pair<std::size_t, std::size_t>> distinct_of;  // workload -> (records, samples)
  std::mt19937_64 rng(seed);
  for (std::map<std::string, Measured>& run : runs) {
    for (const auto* set : {&seen, &unseen}) {
      for (const std::string& spec : *set) {
        const Measured& m = run[spec];
        int group = static_cast<int>(group_specs.size());
        group_specs.push_back(spec);
        std::vector<ir::PrimFunc> lowered;  // lowered once: for the code hash and the features
        std::vector<std::uint64_t> code;
        for (const ir::PrimFunc& p : m.programs) {
          all_programs.push_back(p);
          code.push_back(ir::StructuralHash(lowered.emplace_back(measure::Lower(p))));
        }
        std::vector<int> groups(m.medians.size(), group);
        costmodel::DistinctCode distinct = costmodel::MergeSameCode(code, m.medians, groups);
        groups.resize(distinct.kept.size());
        std::vector<double> labels = costmodel::NormalizedThroughput(distinct.median_secs, groups);
        distinct_of[spec].first += distinct.kept.size();
        distinct_of[spec].second += m.programs.size();
        for (std::size_t k = 0; k < distinct.kept.size(); ++k) {
          costmodel::Sample s{costmodel::ExtractFeatures(lowered[distinct.kept[k]]), labels[k], group};
          if (set == &unseen) {
            unseen_test.push_back(std::move(s));
          } else if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.2) {
            seen_test.push_back(std::move(s));
          } else {
            train.push_back(std::move(s));
          }
        }
      }
    }
  }
  std::printf("measuring took %.0f s\n\n", measure_secs);

  // Training time against dataset size.
  // Training time and held-out accuracy against dataset size (prefixes of
  // the shuffled training set, so each holds every seen workload).
  std::shuffle(train.begin(), train.end(), rng);
  std::printf("| training samples | rank: seconds | rounds | pairwise (seen) | weighted-mse: seconds | rounds | pairwise (seen) |\n"
              "| --- | --- | --- | --- | --- | --- | --- |\n");
  costmodel::CostModel rank_model, mse_model;
  for (std::size_t n : {train.size() / 4, train.size() / 2, train.size()}) {
    std::vector<costmodel::Sample> part(train.begin(), train.begin() + static_cast<std::ptrdiff_t>(n));
    costmodel::TrainOptions o;
    o.seed = seed;
    o.early_stopping_rounds = patience;
    auto t0 = Clock::now();
    costmodel::CostModel rm;
    costmodel::TrainReport rr = rm.Train(part, o);
    double rs = std::chrono::duration<double>(Clock::now() - t0).count();
    o.objective = costmodel::Objective::kWeightedMse;
    t0 = Clock::now();
    costmodel::CostModel mm;
    costmodel::TrainReport mr = mm.Train(part, o);
    double ms = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("| %zu | %.2f | %d | %.3f | %.2f | %d | %.3f |\n", n, rs, rr.rounds, costmodel::Evaluate(rm, seen_test).pairwise,
                ms, mr.rounds, costmodel::Evaluate(mm, seen_test).pairwise);
    if (n == train.size()) {
      rank_model = std::move(rm);
      mse_model = std::move(mm);
    }
  }

  // Ranking quality.
  std::printf("\n| objective / records | records | pairwise accuracy | top-1 | top-5 | a-peak@32 |\n| --- | --- | --- | --- | --- | --- |\n");
  Print("rank / seen workloads (held-out records)", costmodel::Evaluate(rank_model, seen_test));
  Print("rank / unseen workloads", costmodel::Evaluate(rank_model, unseen_test));
  Print("weighted-mse / seen workloads (held-out records)", costmodel::Evaluate(mse_model, seen_test));
  Print("weighted-mse / unseen workloads", costmodel::Evaluate(mse_model, unseen_test));
  // The tuner's heuristic (before it has data to train on), for comparison.
  auto heuristic = [](const std::vector<costmodel::Sample>& samples) {
    std::vector<double> scores;
    for (const costmodel::Sample& s : samples) scores.push_back(costmodel::HeuristicScore(s.rows));
    return costmodel::EvaluateScores(scores, samples);
  };
  Print("heuristic / seen workloads (held-out records)", heuristic(seen_test));
  Print("heuristic / unseen workloads", heuristic(unseen_test));

  // Per seen workload, with how many distinct lowered programs (records)
  // its samples gave, over all runs.
  std::printf("\n| seen workload | held-out records | rank: pairwise | heuristic: pairwise | records (distinct programs) / samples |\n"
              "| --- | --- | --- | --- | --- |\n");
  for (const std::string& spec : seen) {
    std::vector<costmodel::Sample> held;
    for (const costmodel::Sample& s : seen_test) {
      if (group_specs[static_cast<std::size_t>(s.group)] == spec) held.push_back(s);
    }
    std::printf("| %s | %zu | %.3f | %.3f | %zu / %zu |\n", spec.c_str(), held.size(),
                costmodel::Evaluate(rank_model, held).pairwise, heuristic(held).pairwise, distinct_of[spec].first,
                distinct_of[spec].second);
  }

  // Features + prediction throughput, from scheduled programs to scores, in
  // batches of 512 (features on both cores). Three passes: the VM's speed
  // drifts, so each pass is printed with the median.
  std::vector<double> rates;
  for (int pass = 0; pass < 3; ++pass) {
    auto t0 = Clock::now();
    std::size_t done = 0;
    double predict_secs = 0;
    for (std::size_t start = 0; start < all_programs.size(); start += 512) {
      std::vector<ir::PrimFunc> batch(all_programs.begin() + static_cast<std::ptrdiff_t>(start),
                                      all_programs.begin() + static_cast<std::ptrdiff_t>(std::min(all_programs.size(), start + 512)));
      auto features = costmodel::FeaturizeBatch(batch);
      auto p0 = Clock::now();
      done += rank_model.Predict(features).size();
      predict_secs += std::chrono::duration<double>(Clock::now() - p0).count();
    }
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    rates.push_back(static_cast<double>(done) / secs);
    std::printf("%sfeatures + prediction, pass %d: %zu candidates in %.3f s (prediction %.3f s) = %.0f candidates/s\n",
                pass == 0 ? "\n" : "", pass + 1, done, secs, predict_secs, rates.back());
  }
  std::sort(rates.begin(), rates.end());
  std::printf("features + prediction: median of 3 passes %.0f candidates/s (target >= 20000)\n", rates[1]);
  // Where the time goes, on one thread: lowering, then feature extraction.
  std::vector<ir::PrimFunc> lowered;
  auto t1 = Clock::now();
  for (const ir::PrimFunc& p : all_programs) lowered.push_back(measure::Lower(p));
  double lower_secs = std::chrono::duration<double>(Clock::now() - t1).count();
  t1 = Clock::now();
  std::size_t rows = 0;
  for (const ir::PrimFunc& p : lowered) rows += costmodel::ExtractFeatures(p).size();
  double feature_secs = std::chrono::duration<double>(Clock::now() - t1).count();
  std::printf("\none thread: lowering %.1f us, feature extraction %.1f us per candidate (%zu rows)\n",
              lower_secs / static_cast<double>(all_programs.size()) * 1e6,
              feature_secs / static_cast<double>(all_programs.size()) * 1e6, rows);
  return 0;
}
