// `tunedb train` and `tunedb model list|eval`: the cost model, offline.
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "api/cli/commands.h"
#include "api/remote/remote_database.h"
#include "costmodel/dataset.h"
#include "costmodel/metrics.h"
#include "costmodel/model.h"
#include "costmodel/tuning_model.h"
#include "db/sqlite_database.h"

namespace tunedb::cli {
namespace {

struct ModelOptions {
  std::string db = "tunedb.sqlite";
  double holdout = 0.2;
  std::string objective = "rank";
  std::uint64_t seed = 0;
  std::string out;
  int rounds = 200;
  std::int64_t model = 0;
  std::string token_file;
};

using Metrics = costmodel::RankingMetrics;

// With no held-out record there is nothing to score: zeros would read
// as a model that ranks nothing right.
nlohmann::json MetricsJson(const Metrics& m) {
  if (m.samples == 0) return {{"samples", 0}};
  nlohmann::json pairwise = m.pairs > 0 ? nlohmann::json(m.pairwise) : nlohmann::json(nullptr);
  return {{"pairwise_accuracy", pairwise}, {"top1", m.top1}, {"top5", m.top5}, {"apeak32", m.apeak32},
          {"samples", m.samples}};
}

// `scored` names the records the metrics are over: "held-out records" only
// where the model cannot have trained on them.
void PrintMetrics(const Metrics& m, const std::string& scored = "held-out records") {
  std::string label = fmt::format("{:<20}", scored + ":");
  if (m.samples == 0) {
    fmt::print("{}0 (no ranking metrics: every record trained the model)\n", label);
    return;
  }
  // Without two scored records of one workload that differ in time there
  // is no pair to order, and 0.5 would read as a coin toss.
  std::string pairwise =
      m.pairs > 0 ? fmt::format("{:.3f}", m.pairwise)
                  : fmt::format("- (no two {} of one workload differ in time)", scored);
  fmt::print("{}{}\npairwise accuracy:  {}\ntop-1 score:        {:.3f}\ntop-5 score:        {:.3f}\n"
             "a-peak@32:          {:.3f}\n",
             label, m.samples, pairwise, m.top1, m.top5, m.apeak32);
}

costmodel::Dataset Load(db::Database& d, const std::string& path) {
  costmodel::Dataset data = costmodel::LoadDataset(d);
  if (data.samples.empty()) {
    throw UsageError("no tunedb records to learn from in " + path + " (tune a workload first" +
                     (data.skipped ? "; " + std::to_string(data.skipped) + " records could not be rebuilt)" : ")"));
  }
  return data;
}

void Train(const ModelOptions& o) {
  if (!(o.holdout >= 0 && o.holdout < 1)) throw UsageError("--holdout must be in [0, 1)");
  if (o.rounds < 1) throw UsageError("--rounds must be at least 1");
  // Refused before training and before anything is stored: a model
  // stored under an error message reads as a failed command that did work.
  if (!o.out.empty()) {
    std::filesystem::path dir = std::filesystem::path(o.out).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir)) {
      throw UsageError("--out " + o.out + ": no directory " + dir.string());
    }
  }
  costmodel::TrainOptions train_options;
  if (o.objective == "rank") {
    train_options.objective = costmodel::Objective::kRank;
  } else if (o.objective == "weighted-mse") {
    train_options.objective = costmodel::Objective::kWeightedMse;
  } else {
    throw UsageError("--objective must be rank or weighted-mse");
  }
  train_options.seed = o.seed;
  train_options.max_rounds = o.rounds;
  std::unique_ptr<db::Database> opened = OpenExistingDatabase(
      o.db, db::SqliteDatabase::OpenMode::kReadWrite, ReadTokenFile(o.token_file));
  db::Database& d = *opened;
  // The model is stored at the end: a server that will refuse it says so
  // before the training, which can take minutes.
  if (auto* remote = dynamic_cast<api::RemoteDatabase*>(&d); remote && !remote->WriteRefusal().empty()) {
    throw UsageError(remote->WriteRefusal());
  }
  costmodel::Dataset data = Load(d, o.db);
  // Held-out records: a random fraction of every group.
  std::mt19937_64 rng(o.seed);
  std::vector<costmodel::Sample> train, test;
  for (auto& s : data.samples) (std::uniform_real_distribution<double>(0, 1)(rng) < o.holdout ? test : train).push_back(s);
  if (train.empty()) throw UsageError("every record was held out; lower --holdout");
  costmodel::CostModel trained;
  costmodel::TrainReport report = trained.Train(train, train_options);
  Metrics m = costmodel::Evaluate(trained, test);
  fmt::print("database:           {}\nrecords used:       {} ({} skipped, {} merged into one of the same code)\n"
             "groups:             {}\ntrained on:         {} "
             "records ({} of them first held out to choose the rounds), {} rounds\nobjective:          {}\n",
             o.db, data.samples.size(), data.skipped, data.merged, data.group_names.size(), report.train_samples,
             report.holdout_samples, report.rounds, o.objective);
  PrintMetrics(m);
  db::StoredModel stored;
  stored.feature_version = costmodel::kFeatureVersion;
  stored.objective = o.objective;
  stored.blob = trained.Save();
  stored.training_rows = static_cast<std::int64_t>(train.size());
  nlohmann::json metrics = MetricsJson(m);
  metrics["rounds"] = report.rounds;
  stored.metrics = metrics.dump();
  if (!o.out.empty()) {
    std::ofstream out(o.out, std::ios::binary);
    if (!(out << stored.blob) || !out.flush()) throw UsageError("cannot write " + o.out);
    fmt::print("written to {}\n", o.out);
  }
  std::int64_t id = d.SaveModel(stored);
  fmt::print("stored as model {} in {}\n", id, o.db);
  const int tune_needs = costmodel::kSessionMinSamples;
  if (stored.training_rows < tune_needs) {
    fmt::print(
        "note: a tune session starts from a stored model trained on at least {} records (--model-min-samples)\n",
        tune_needs);
  } else if (std::int64_t first = costmodel::ModelASessionStartsFrom(d.Models(), tune_needs); first != id) {
    fmt::print("note: tune sessions start from model {}, trained on more records (tunedb model list)\n", first);
  }
}

void List(const ModelOptions& o) {
  std::unique_ptr<db::Database> opened = OpenExistingDatabase(o.db);
  db::Database& d = *opened;
  std::vector<db::StoredModel> models = d.Models();
  if (models.empty()) {
    fmt::print("no stored models in {} (run tunedb train)\n", o.db);
    return;
  }
  const std::int64_t first = costmodel::ModelASessionStartsFrom(models, costmodel::kSessionMinSamples);
  fmt::print("{:>5}  {:<20} {:>8} {:<13} {:>9}  {}\n", "id", "created", "features", "objective", "trained on", "metrics");
  for (const db::StoredModel& m : models) {
    fmt::print("{:>5}  {:<20} {:>8} {:<13} {:>9}  {}\n", (m.id == first ? "* " : "") + std::to_string(m.id),
               UtcTimeText(m.created), m.feature_version, m.objective, m.training_rows, m.metrics);
  }
  if (first != 0) fmt::print("* the model tune sessions start from: trained on the most records, the newest of equals\n");
}

void Eval(const ModelOptions& o) {
  std::unique_ptr<db::Database> opened = OpenExistingDatabase(o.db);
  db::Database& d = *opened;
  // By default the model tune sessions start from (the newest when none
  // qualifies), the one `model list` marks.
  std::int64_t id = o.model;
  if (id == 0) id = costmodel::ModelASessionStartsFrom(d.Models(), costmodel::kSessionMinSamples);
  std::optional<db::StoredModel> stored = d.LoadModel(id);
  if (!stored) throw UsageError(o.model ? "no model " + std::to_string(o.model) + " in " + o.db : "no stored models in " + o.db);
  costmodel::CostModel model;
  try {
    model = costmodel::CostModel::Load(stored->blob);
  } catch (const costmodel::CostModelError& e) {
    throw UsageError("model " + std::to_string(stored->id) + " in " + o.db + ": " + e.what());
  }
  costmodel::Dataset data = Load(d, o.db);
  // Over every record, the model is scored partly on what it learnt from;
  // the records committed after it was stored are a held-out set for it.
  fmt::print("model {} ({}, trained on {} records) on all {} records of {}:\n", stored->id, stored->objective,
             stored->training_rows, data.samples.size(), o.db);
  PrintMetrics(costmodel::Evaluate(model, data.samples), "records scored");
  costmodel::Dataset since = costmodel::LoadDataset(d, stored->created);
  fmt::print("on the {} records committed since it was stored, which it cannot have trained on:\n",
             since.samples.size());
  if (since.samples.empty()) {
    fmt::print("held-out records:   0 (none yet)\n");
    return;
  }
  PrintMetrics(costmodel::Evaluate(model, since.samples));
}

}  // namespace

void AddModelCommands(CLI::App& app) {
  auto o = std::make_shared<ModelOptions>();
  CLI::App* train = app.add_subcommand("train", "Train the cost model on every record of the database");
  const char* db_help = "The SQLite database file, or a tunedb server's URL (http://HOST:PORT)";
  train->add_option("--db", o->db, db_help)->capture_default_str();
  train->add_option("--token-file", o->token_file, "Bearer token for a server's write routes (to store the model)");
  train->add_option("--holdout", o->holdout, "Fraction of records held out for the metrics")->capture_default_str();
  train->add_option("--objective", o->objective, "rank or weighted-mse")->capture_default_str();
  AddSeedOption(train, &o->seed, "Seed of the split and of XGBoost");
  train->add_option("--rounds", o->rounds, "At most this many boosting rounds (early stopping may stop sooner)")
      ->capture_default_str();
  train->add_option("--out", o->out, "Also write the model to this file");
  train->callback([o] { Train(*o); });

  CLI::App* model = app.add_subcommand("model", "Stored cost models");
  model->require_subcommand(1);
  CLI::App* list = model->add_subcommand("list", "The database's stored models, newest first");
  list->add_option("--db", o->db, db_help)->capture_default_str();
  list->callback([o] { List(*o); });
  CLI::App* eval = model->add_subcommand("eval", "Ranking metrics of a stored model on the database's records");
  eval->add_option("--db", o->db, db_help)->capture_default_str();
  eval->add_option("--model", o->model, "Model id (default: the one tune sessions start from, * in model list)");
  eval->callback([o] { Eval(*o); });
}

}  // namespace tunedb::cli
