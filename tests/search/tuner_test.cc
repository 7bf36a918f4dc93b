// The tuning loop end to end: real SQLite file, real JIT, real workers.
#include "search/tuner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "db/sqlite_database.h"
#include "ir/json.h"
#include "ir/schedule/schedule.h"
#include "ir/structural.h"
#include "ir/workloads.h"
#include "search/space.h"

namespace tunedb::search {
namespace {

std::string FreshDb(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

TuneOptions SmallTune(const std::string& workload, int trials) {
  TuneOptions o;
  o.workloads = {workload};
  o.trials = trials;
  o.batch = 8;
  o.chunk = 8;
  o.seed = 3;
  o.evolutionary.population = 48;
  o.evolutionary.init_min_unmeasured = 16;
  o.evolutionary.generations = 2;
  o.measure.worker_path = TUNEDB_WORKER;
  o.measure.workers = 2;
  o.measure.repeat = 2;
  o.measure.min_repeat_ms = 1;
  o.model_min_samples = 16;
  o.command = "test " + workload + " " + std::to_string(trials);
  return o;
}

std::vector<db::TuningRecord> AllRecords(db::Database& database) {
  db::RecordQuery q;
  q.limit = 100000;
  return database.Records(q);
}

// Programs measured, by structural hash: never the same one twice.
void ExpectNoProgramMeasuredTwice(db::Database& database, const std::string& spec) {
  ir::Workload w = ir::BuildWorkload(spec);
  std::set<std::uint64_t> seen;
  for (const db::TuningRecord& r : AllRecords(database)) {
    if (r.workload_hash != ir::WorkloadHash(w.func)) continue;
    ir::Schedule sch = ir::ReplayTrace(w.func, ir::Trace::FromJsonText(r.trace), 0);
    EXPECT_TRUE(seen.insert(ir::StructuralHash(sch.func())).second) << "measured twice: " << r.trace;
  }
}

// The records of the unscheduled program (an empty trace): the baseline.
std::vector<db::TuningRecord> BaselineRecords(db::Database& database) {
  std::vector<db::TuningRecord> out;
  for (const db::TuningRecord& r : AllRecords(database)) {
    if (ir::Trace::FromJsonText(r.trace).insts.empty()) out.push_back(r);
  }
  return out;
}

TEST(Tuner, TunesASmallMatmulIntoARealDatabaseAndResumesWithoutRemeasuring) {
  std::string path = FreshDb("tuner_matmul.sqlite");
  const std::string spec = "matmul:M=64,N=64,K=64";
  double baseline_secs = 0;
  {
    db::SqliteDatabase database(path);
    TuneReport r = Tune(database, SmallTune(spec, 24));
    ASSERT_EQ(r.tasks.size(), 1u);
    const TaskStatus& t = r.tasks[0];
    EXPECT_FALSE(r.interrupted);
    EXPECT_EQ(t.trials, 24);
    EXPECT_EQ(database.Size(), 25) << "24 trials and the unscheduled program's timing";
    EXPECT_LT(t.failures, 24);
    ASSERT_GT(t.baseline_secs, 0);
    EXPECT_FALSE(t.baseline_stored);
    EXPECT_LT(t.best_secs, t.baseline_secs) << "the best schedule is not faster than the unscheduled program";
    std::vector<db::TuningRecord> baseline = BaselineRecords(database);
    ASSERT_EQ(baseline.size(), 1u);
    EXPECT_EQ(baseline[0].status, db::RecordStatus::kOk);
    EXPECT_EQ(baseline[0].Median(), t.baseline_secs);
    EXPECT_EQ(baseline[0].session_id, 0) << "not one of the session's trials";
    baseline_secs = t.baseline_secs;
    std::vector<db::TuningRecord> best = database.TopK(t.hash, TuneOptions{}.measure.target.ToString(), 1);
    ASSERT_EQ(best.size(), 1u);
    EXPECT_FALSE(database.Models().empty()) << "the cost model is stored back";
    // Contenders for the best were timed twice (2 + 2 repeats), the best
    // record always among them; the others were not. Those 4x slower than
    // the best so far have one timing (the worker's slow cutoff); those 3x
    // slower than the chunk's fastest first timing get a short second look
    // (measure/runner.h) and keep two timings, or, if the look brings them
    // back within reach, three, and five if that makes them contenders.
    // At the end, the four best were timed together (3 passes of 2
    // repeats), and while an unchecked record leads, a round more times
    // the four best again, up to three rounds: 4 to 12 records
    // (TheFinalCheckTakesTheBestFromARecordThatWasAFluke). CI saw 8.
    // After the third round an unchecked record may still lead, if the
    // round's timings moved the checked ones behind it: a CI run at
    // a44fd53 ended with a record of two timings as the best.
    EXPECT_TRUE(best[0].run_secs.size() >= 4u || r.final_check_rounds == 3)
        << best[0].run_secs.size() << " timings, " << r.final_check_rounds << " rounds of the final check";
    int confirmed = 0, checked = 0;
    for (const db::TuningRecord& rec : AllRecords(database)) {
      if (rec.status != db::RecordStatus::kOk) continue;
      EXPECT_GE(rec.run_secs.size(), 1u);
      checked += rec.run_secs.size() > 5u;
      confirmed += rec.run_secs.size() >= 4u;
    }
    EXPECT_GE(checked, 4);
    EXPECT_LE(checked, 12);
    EXPECT_GE(confirmed, 1);
    EXPECT_LT(confirmed, 24);
    // Where the time went: every phase took some, and together they
    // cover no more than the session's wall time.
    for (double secs : {r.times.warm_start, r.times.search, r.times.build, r.times.run, r.times.commit,
                        r.times.model, r.times.baseline}) {
      EXPECT_GT(secs, 0);
    }
    EXPECT_LE(r.times.Sum(), r.wall_secs);
    EXPECT_NE(TimesText(r.times, r.wall_secs).find("runs "), std::string::npos);
  }
  {
    // A new session on the same database: warm start, nothing re-measured.
    db::SqliteDatabase database(path);
    TuneOptions o = SmallTune(spec, 16);
    o.seed = 4;
    TuneReport r = Tune(database, o);
    EXPECT_EQ(r.tasks[0].history, 25);
    EXPECT_EQ(database.Size(), 41);
    // The unscheduled program's timing is the stored one, not timed again.
    EXPECT_TRUE(r.tasks[0].baseline_stored);
    EXPECT_EQ(r.tasks[0].baseline_secs, baseline_secs);
    EXPECT_EQ(BaselineRecords(database).size(), 1u);
    EXPECT_EQ(database.Sessions().size(), 2u);
    ExpectNoProgramMeasuredTwice(database, spec);
  }
}

// An unscheduled program that outlasts --timeout (matmul 2048 runs 47 s
// here) has a stored timeout record: its time is known to be over the
// timeout, and later sessions under the same --timeout do not spend it
// again; one under another --timeout times the program again. It used to
// be left out silently, the report naming no reason, and tried again by
// every session.
TEST(Tuner, AnUnscheduledProgramThatTimesOutIsStoredAndNotTimedAgain) {
  std::string path = FreshDb("tuner_baseline_timeout.sqlite");
  db::SqliteDatabase database(path);
  const std::string spec = "matmul:M=32,N=32,K=32";
  TuneOptions o = SmallTune(spec, 8);
  o.final_check = 0;
  o.measure.run_timeout_s = 0.3;
  o.measure.fault = {measure::FaultInjection::kHang, 0};  // each Measure call's first program hangs
  TuneReport r = Tune(database, o);
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_EQ(r.tasks[0].baseline_secs, 0);
  EXPECT_EQ(r.tasks[0].baseline_error, "running took longer than 0.3 s");
  EXPECT_EQ(r.tasks[0].baseline_over_secs, 0.3);
  EXPECT_FALSE(r.tasks[0].baseline_stored);
  std::vector<db::TuningRecord> baseline = BaselineRecords(database);
  ASSERT_EQ(baseline.size(), 1u);
  EXPECT_EQ(baseline[0].status, db::RecordStatus::kTimeout);
  EXPECT_EQ(baseline[0].session_id, 0);

  o.measure.fault = {};
  o.seed = 4;
  o.command += " again";
  r = Tune(database, o);
  EXPECT_TRUE(r.tasks[0].baseline_stored);
  EXPECT_EQ(r.tasks[0].baseline_over_secs, 0.3);
  EXPECT_LT(r.times.baseline, 0.1) << "timed again under the same --timeout";
  EXPECT_EQ(BaselineRecords(database).size(), 1u);

  o.measure.run_timeout_s = 5;
  o.seed = 5;
  o.command += " with a longer timeout";
  r = Tune(database, o);
  EXPECT_GT(r.tasks[0].baseline_secs, 0);
  EXPECT_EQ(r.tasks[0].baseline_over_secs, 0);
  EXPECT_EQ(BaselineRecords(database).size(), 2u);
}

// A session that loads the stored model and measures too little to retrain
// it stores nothing back: it stored a copy that claimed to be trained on
// none of its records, and every later session refused that newest model
// and started from the heuristic.
TEST(Tuner, ASessionThatDidNotRetrainTheModelLeavesTheStoredOne) {
  std::string path = FreshDb("tuner_model_kept.sqlite");
  db::SqliteDatabase database(path);
  TuneOptions trains = SmallTune("matmul:M=64,N=64,K=64", 24);
  trains.measure_baseline = false;
  Tune(database, trains);
  ASSERT_EQ(database.Models().size(), 1u);
  for (const char* spec : {"matmul:M=16,N=16,K=16", "matmul:M=32,N=32,K=32"}) {
    TuneOptions small = SmallTune(spec, 4);
    small.measure_baseline = false;
    TuneReport r = Tune(database, small);
    EXPECT_EQ(r.model, "XGBoost, loaded (4 samples here; it retrains from 16)") << spec;
    EXPECT_EQ(database.Models().size(), 1u) << spec;
  }
}

TEST(Tuner, InterruptedSessionResumesWithTheTrialsItHasLeft) {
  std::string path = FreshDb("tuner_resume.sqlite");
  const std::string spec = "matmul:M=16,N=32,K=16";
  TuneOptions o = SmallTune(spec, 24);
  {
    db::SqliteDatabase database(path);
    std::atomic<bool> stop{false};
    // What Ctrl-C does: the flag is set while a chunk is being measured.
    TuneReport r = Tune(
        database, o, [&](const TuneEvent& e, const std::vector<TaskStatus>&) {
          if (e.kind == TuneEvent::kMeasured) stop = true;
        },
        &stop);
    EXPECT_TRUE(r.interrupted);
    EXPECT_EQ(database.Size(), 8) << "the chunk in flight is committed";
    ASSERT_EQ(database.Sessions().size(), 1u);
    EXPECT_EQ(database.Sessions()[0].ended, 0) << "an interrupted session stays open";
  }
  {
    db::SqliteDatabase database(path);
    TuneReport r = Tune(database, o);
    EXPECT_TRUE(r.resumed);
    EXPECT_FALSE(r.interrupted);
    EXPECT_EQ(r.tasks[0].trials, 24);
    EXPECT_EQ(database.Size(), 25) << "24 trials and, once the session ended, the unscheduled program's timing";
    ASSERT_EQ(database.Sessions().size(), 1u);
    EXPECT_GT(database.Sessions()[0].ended, 0);
    ExpectNoProgramMeasuredTwice(database, spec);
  }
}

// A session owner on this host whose process has ended: a child, waited for.
std::string EndedProcess() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  std::string me = db::ThisProcess();
  std::string host = me.substr(0, me.find('/'));
  return host + "/" + std::to_string(child) + "/1/" + me.substr(me.rfind('/') + 1);
}

TEST(Tuner, ASessionStillRunningIsLeftToItAndOneLeftBehindIsResumed) {
  std::string path = FreshDb("tuner_owners.sqlite");
  const std::string spec = "matmul:M=16,N=16,K=8";
  TuneOptions o = SmallTune(spec, 8);
  db::SqliteDatabase database(path);
  // The same command, running in another tuner (here: this process).
  db::Session running;
  running.command = o.command;
  running.target = o.measure.target.ToString();
  running.owner = db::ThisProcess();
  std::int64_t running_id = database.StartSession(running);
  std::string setup_note;
  TuneReport r = Tune(database, o, [&](const TuneEvent& e, const std::vector<TaskStatus>&) {
    if (e.kind == TuneEvent::kSetup) setup_note = e.message;
  });
  EXPECT_FALSE(r.resumed) << "a session that is still running was taken over";
  EXPECT_NE(r.session_id, running_id);
  EXPECT_NE(setup_note.find("session " + std::to_string(running_id) + " of the same command is still running"),
            std::string::npos)
      << setup_note;
  std::vector<db::Session> sessions = database.Sessions();
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].ended, 0);
  EXPECT_EQ(sessions[0].owner, db::ThisProcess());
  EXPECT_GT(sessions[1].ended, 0);

  // Its process is gone (killed, say): the next run of the command resumes it.
  ASSERT_TRUE(database.ClaimSession(running_id, db::ThisProcess(), EndedProcess()));
  r = Tune(database, o);
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(r.session_id, running_id);
  EXPECT_EQ(r.tasks[0].trials, 8);
  sessions = database.Sessions();
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_GT(sessions[0].ended, 0);
  EXPECT_EQ(sessions[0].owner, db::ThisProcess());
  ExpectNoProgramMeasuredTwice(database, spec);
}

// A session of the same command whose owner is on another host cannot be
// looked at: it is left to its owner while it shows signs of life, and
// resumed once it has been quiet for longer than the lease.
TEST(Tuner, ASessionOfAnotherHostIsResumedOnceItHasBeenQuietForTheLease) {
  const std::string spec = "matmul:M=16,N=16,K=8";
  TuneOptions o = SmallTune(spec, 8);
  o.measure_baseline = false;
  const std::string elsewhere = "another-host/4242/1/some-boot/4026531836";
  for (bool quiet : {false, true}) {
    db::SqliteDatabase database(FreshDb(quiet ? "tuner_quiet.sqlite" : "tuner_active.sqlite"));
    db::Session remote;
    remote.command = o.command;
    remote.target = o.measure.target.ToString();
    remote.owner = elsewhere;
    // Its start is its last sign of life.
    remote.started = db::NowSeconds() - (quiet ? db::kSessionLeaseSeconds + 60 : 60);
    std::int64_t id = database.StartSession(remote);
    TuneReport r = Tune(database, o);
    EXPECT_EQ(r.resumed, quiet);
    EXPECT_EQ(r.session_id == id, quiet);
    std::vector<db::Session> sessions = database.Sessions();
    ASSERT_EQ(sessions.size(), quiet ? 1u : 2u);
    EXPECT_EQ(sessions[0].owner, quiet ? db::ThisProcess() : elsewhere);
    EXPECT_EQ(sessions[0].ended != 0, quiet);
  }
}

// Beside a running session of the same command, a second session samples
// other programs: with the seed's own stream, and the space's own designs
// first, its first batch would be the very programs the running one is
// measuring. A lone session keeps its seed's programs.
TEST(Tuner, ASessionBesideARunningOneOfTheSameCommandSamplesOtherPrograms) {
  const std::string spec = "matmul:M=64,N=64,K=64";
  TuneOptions o = SmallTune(spec, 8);
  o.measure_baseline = false;
  ir::Workload w = ir::BuildWorkload(spec);
  auto programs_in = [&](db::Database& d) {
    std::set<std::uint64_t> programs;
    for (const db::TuningRecord& r : AllRecords(d)) {
      programs.insert(ir::StructuralHash(ir::ReplayTrace(w.func, ir::Trace::FromJsonText(r.trace), 0).func()));
    }
    return programs;
  };
  db::SqliteDatabase alone(FreshDb("tuner_alone.sqlite")), alone_again(FreshDb("tuner_alone_again.sqlite"));
  Tune(alone, o);
  Tune(alone_again, o);
  ASSERT_EQ(programs_in(alone).size(), 8u);
  ASSERT_EQ(programs_in(alone), programs_in(alone_again)) << "a lone session's programs follow its seed";

  db::SqliteDatabase beside(FreshDb("tuner_beside.sqlite"));
  db::Session running;
  running.command = o.command;
  running.target = o.measure.target.ToString();
  running.owner = db::ThisProcess();
  beside.StartSession(running);
  std::string setup_note;
  Tune(beside, o, [&](const TuneEvent& e, const std::vector<TaskStatus>&) {
    if (e.kind == TuneEvent::kSetup) setup_note = e.message;
  });
  EXPECT_NE(setup_note.find("sampling other programs"), std::string::npos) << setup_note;
  std::set<std::uint64_t> first = programs_in(alone), second = programs_in(beside);
  ASSERT_EQ(second.size(), 8u);
  std::size_t shared = 0;
  for (std::uint64_t p : second) shared += first.count(p);
  EXPECT_LE(shared, 2u) << "the session beside the running one measured its programs again";
}

// A new database file holding `spec`'s workload and one record planted
// in it, as an earlier session, another machine or a newer tunedb would
// have stored it.
std::unique_ptr<db::SqliteDatabase> DatabaseWithARecord(const std::string& name, const std::string& spec,
                                                        const TuneOptions& o, const std::string& trace,
                                                        std::vector<double> run_secs, const std::string& hardware) {
  ir::Workload w = ir::BuildWorkload(spec);
  auto database = std::make_unique<db::SqliteDatabase>(FreshDb(name));
  database->CommitWorkload(
      {ir::WorkloadHash(w.func), spec, "tunedb", ir::CanonicalEncoding(w.func), ir::ProgramToJson(w.func)});
  db::TuningRecord planted;
  planted.workload_hash = ir::WorkloadHash(w.func);
  planted.target = o.measure.target.ToString();
  planted.trace = trace;
  planted.run_secs = std::move(run_secs);
  planted.hardware = hardware;
  database->CommitRecords({planted});
  return database;
}

// A record whose stored timing was a fluke (here: the unscheduled program
// recorded at a nanosecond) is the database's best until the session's
// final check times it beside the best kernels: its later timings join its
// record, it falls behind them, and the session reports and the database
// serves a kernel that was fastest side by side. Without the check it
// stays the best.
TEST(Tuner, TheFinalCheckTakesTheBestFromARecordThatWasAFluke) {
  const std::string spec = "matmul:M=64,N=64,K=64";
  ir::Workload w = ir::BuildWorkload(spec);
  const std::string unscheduled = ir::Schedule(w.func, 0).trace().ToJson().dump();
  // Measured here, as if by an earlier session.
  auto database_with_a_fluke = [&](const std::string& name, const TuneOptions& o) {
    return DatabaseWithARecord(name, spec, o, unscheduled, {1e-9}, db::HardwareFingerprint());
  };
  TuneOptions o = SmallTune(spec, 8);
  o.measure_baseline = false;
  o.final_check = 0;
  auto without = database_with_a_fluke("tuner_fluke_kept.sqlite", o);
  TuneReport kept = Tune(*without, o);
  EXPECT_EQ(kept.final_check_rounds, 0);
  EXPECT_EQ(kept.tasks[0].best_trace, unscheduled);

  o.final_check = 4;
  auto with = database_with_a_fluke("tuner_fluke_checked.sqlite", o);
  TuneReport checked = Tune(*with, o);
  EXPECT_GE(checked.final_check_rounds, 1);
  EXPECT_NE(checked.tasks[0].best_trace, unscheduled);
  std::vector<db::TuningRecord> top = with->TopK(ir::WorkloadHash(w.func), o.measure.target.ToString(), 100);
  ASSERT_EQ(top.size(), 9u);
  EXPECT_EQ(top[0].trace, checked.tasks[0].best_trace);
  EXPECT_DOUBLE_EQ(top[0].Median(), checked.tasks[0].best_secs);
  const db::TuningRecord& fluke = *std::find_if(top.begin(), top.end(), [&](const db::TuningRecord& r) { return r.trace == unscheduled; });
  EXPECT_GT(fluke.run_secs.size(), 1u) << "the fluke was not timed again";
  EXPECT_GT(fluke.Median(), 1e-6);
  // The report quotes the unscheduled program as the check left it, not at
  // the 1 ns it was stored with.
  EXPECT_DOUBLE_EQ(checked.tasks[0].baseline_secs, fluke.Median());
  // The kernels timed together have their first timings and the check's.
  int timed_again = 0;
  for (const db::TuningRecord& r : top) timed_again += r.run_secs.size() >= 1 + 3u * o.measure.repeat;
  EXPECT_GE(timed_again, 4);
}

// A record measured on other hardware (a merged database, a shared
// server) under the same target string keeps its timings: the final check
// times this machine's records only, and adds this machine's timings to
// those alone.
TEST(Tuner, TheFinalCheckLeavesRecordsOfOtherHardwareAsTheyAre) {
  const std::string spec = "matmul:M=32,N=32,K=32";
  ir::Workload w = ir::BuildWorkload(spec);
  const std::string unscheduled = ir::Schedule(w.func, 0).trace().ToJson().dump();
  TuneOptions o = SmallTune(spec, 8);
  o.measure_baseline = false;
  const std::vector<double> elsewhere_secs = {1e-9, 2e-9};
  const std::string elsewhere = "Another CPU; 2 cores";
  auto owned = DatabaseWithARecord("tuner_other_hardware.sqlite", spec, o, unscheduled, elsewhere_secs, elsewhere);
  db::SqliteDatabase& database = *owned;

  TuneReport r = Tune(database, o);
  EXPECT_GE(r.final_check_rounds, 1);
  int timed_again = 0;
  for (const db::TuningRecord& rec : database.TopK(ir::WorkloadHash(w.func), o.measure.target.ToString(), 100)) {
    if (rec.hardware == elsewhere) {
      EXPECT_EQ(rec.run_secs, elsewhere_secs) << "another machine's record took this machine's timings";
    } else {
      EXPECT_EQ(rec.hardware, db::HardwareFingerprint());
      timed_again += rec.run_secs.size() >= 1 + 3u * o.measure.repeat;
    }
  }
  EXPECT_GE(timed_again, 2);
  // It is still the database's best (nothing here can speak for that
  // machine's timings), and the report says so.
  EXPECT_EQ(r.tasks[0].best_trace, unscheduled);
}

// A record whose trace this build cannot replay (written by a newer
// tunedb, or damaged inside valid JSON) is not timed by the final check,
// nor reported as the session's best after it: `tunedb tune` prints the
// best as a script, and reading this one would fail the command at its
// very end, after every trial was spent.
TEST(Tuner, TheBestAfterTheFinalCheckIsOneThisBuildCanReplay) {
  const std::string spec = "matmul:M=32,N=32,K=32";
  ir::Workload w = ir::BuildWorkload(spec);
  TuneOptions o = SmallTune(spec, 8);
  o.measure_baseline = false;
  const std::string newer = R"([[["AnInstructionOfANewerTunedb", [], [], []]], []])";
  auto owned = DatabaseWithARecord("tuner_unreadable_best.sqlite", spec, o, newer, {1e-9}, db::HardwareFingerprint());
  db::SqliteDatabase& database = *owned;
  // Valid JSON and a time: only replaying it fails.
  ASSERT_EQ(db::ServingProblem(database.TopK(ir::WorkloadHash(w.func), o.measure.target.ToString(), 1)[0]), "");

  TuneReport r = Tune(database, o);
  EXPECT_GE(r.final_check_rounds, 1);
  ASSERT_FALSE(r.tasks[0].best_trace.empty());
  EXPECT_NE(r.tasks[0].best_trace, newer);
  EXPECT_NO_THROW(ir::ReplayTrace(w.func, ir::Trace::FromJsonText(r.tasks[0].best_trace), 0));
  EXPECT_GT(r.tasks[0].best_secs, 1e-8);
}

// Another tuner's records, committed while this session runs (two
// identical commands at once, or machines tuning into one server), are
// read before each batch: their programs are not measured again here, and
// the unscheduled program's stored timing is not taken again.
TEST(Tuner, RecordsAnotherTunerCommitsMidSessionAreNotMeasuredAgain) {
  const std::string spec = "matmul:M=16,N=32,K=16";
  ir::Workload w = ir::BuildWorkload(spec);
  auto program_of = [&](const db::TuningRecord& r) {
    return ir::StructuralHash(ir::ReplayTrace(w.func, ir::Trace::FromJsonText(r.trace), 0).func());
  };
  // The other tuner's work, with the same seed, so that its candidates are
  // the ones this session would pick.
  std::string other_path = FreshDb("tuner_catch_up_other.sqlite");
  db::SqliteDatabase other(other_path);
  TuneOptions o = SmallTune(spec, 32);
  Tune(other, o);
  std::set<std::uint64_t> others_programs;
  for (const db::TuningRecord& r : AllRecords(other)) others_programs.insert(program_of(r));
  ASSERT_EQ(others_programs.size(), 33u);

  db::SqliteDatabase database(FreshDb("tuner_catch_up.sqlite"));
  std::int64_t merged_up_to = 0;
  TuneReport r = Tune(database, o, [&](const TuneEvent& e, const std::vector<TaskStatus>&) {
    if (e.kind != TuneEvent::kMeasured || merged_up_to != 0) return;
    db::Merge(database, other);  // as if committed by another process just now
    for (const db::TuningRecord& rec : AllRecords(database)) merged_up_to = std::max(merged_up_to, rec.id);
  });
  ASSERT_GT(merged_up_to, 0);
  EXPECT_EQ(r.tasks[0].trials, 32);
  EXPECT_EQ(r.tasks[0].history, 33) << "the other tuner's 32 trials and its unscheduled program";
  EXPECT_TRUE(r.tasks[0].baseline_stored);
  int measured_after = 0;
  for (const db::TuningRecord& rec : AllRecords(database)) {
    if (rec.id <= merged_up_to) continue;
    ++measured_after;
    EXPECT_EQ(others_programs.count(program_of(rec)), 0u) << "record " << rec.id << " measured a program again after the other tuner had";
  }
  EXPECT_EQ(measured_after, 32 - 8) << "every batch after the first, and no second baseline";
}

TEST(Tuner, SeveralWorkloadsShareTheBudgetAndOtherShapesTransfer) {
  std::string path = FreshDb("tuner_tasks.sqlite");
  db::SqliteDatabase database(path);
  TuneOptions o = SmallTune("matmul:M=16,N=16,K=16", 16);
  o.workloads.push_back("dense_bias_relu:B=8,IN=16,OUT=8");
  o.measure_baseline = false;
  std::vector<std::pair<int, int>> batches;  // (task, trials done after it)
  TuneReport r = Tune(database, o, [&](const TuneEvent& e, const std::vector<TaskStatus>&) {
    if (e.kind == TuneEvent::kBatchDone) batches.emplace_back(e.task, e.trials_done);
  });
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].trials + r.tasks[1].trials, 16);
  // Each warm-up batch is a quarter of the budget (half of it over the two
  // tasks); the scheduler gives the other half.
  ASSERT_GE(batches.size(), 3u);
  EXPECT_EQ(batches[0], std::make_pair(0, 4));
  EXPECT_EQ(batches[1], std::make_pair(1, 8));

  // A budget below one batch still reaches every workload.
  std::string small_path = FreshDb("tuner_small_budget.sqlite");
  db::SqliteDatabase small(small_path);
  TuneOptions tiny = o;
  tiny.trials = 6;
  tiny.batch = 64;
  TuneReport split = Tune(small, tiny);
  EXPECT_GT(split.tasks[0].trials, 0);
  EXPECT_GT(split.tasks[1].trials, 0);
  EXPECT_EQ(split.tasks[0].trials + split.tasks[1].trials, 6);

  TuneOptions other = SmallTune("matmul:M=32,N=16,K=16", 8);
  other.measure_baseline = false;
  TuneReport t = Tune(database, other);
  EXPECT_GT(t.tasks[0].transferred, 0) << "matmul 16x16x16's best traces replay onto 32x16x16";
}

// How many decisions (and parallel limits) two designs of the same
// variant differ in; -1 for designs of different variants.
int DecisionsApart(const ir::Trace& a, const ir::Trace& b) {
  if (VariantOf(a) != VariantOf(b) || a.insts.size() != b.insts.size()) return -1;
  int apart = 0;
  for (std::size_t i = 0; i < a.insts.size(); ++i) {
    auto da = a.decisions.find(i), db = b.decisions.find(i);
    bool same = (da == a.decisions.end()) == (db == b.decisions.end()) &&
                (da == a.decisions.end() || da->second == db->second);
    if (a.insts[i].kind == "Annotate") same = same && a.insts[i].inputs == b.insts[i].inputs;
    apart += !same;
  }
  return apart;
}

// A warm session's first chunk is all neighbours of the stored elite: one
// mutation from one of the 8 fastest records, or the fastest one's
// decisions on another variant of the space.
TEST(Tuner, AWarmSessionStartsNextToTheStoredBest) {
  std::string path = FreshDb("tuner_warm.sqlite");
  const std::string spec = "matmul:M=32,N=32,K=32";
  ir::Workload w = ir::BuildWorkload(spec);
  db::SqliteDatabase database(path);
  TuneOptions cold = SmallTune(spec, 16);
  cold.measure_baseline = false;
  Tune(database, cold);
  std::vector<ir::Trace> elite;
  for (const db::TuningRecord& r : database.TopK(ir::WorkloadHash(w.func), cold.measure.target.ToString(), 8)) {
    elite.push_back(*DesignOf(w.func, ir::Trace::FromJsonText(r.trace)));
  }
  ASSERT_EQ(elite.size(), 8u);
  const int stored = database.Size();

  TuneOptions warm = SmallTune(spec, 8);
  warm.seed = 11;
  warm.command = "test warm";
  warm.measure_baseline = false;
  TuneReport r = Tune(database, warm);
  EXPECT_EQ(r.tasks[0].trials, 8);
  std::vector<db::TuningRecord> records = AllRecords(database);
  ASSERT_EQ(static_cast<int>(records.size()), stored + 8);
  for (std::size_t k = static_cast<std::size_t>(stored); k < records.size(); ++k) {
    ir::Trace design = *DesignOf(w.func, ir::Trace::FromJsonText(records[k].trace));
    bool neighbour = false;
    for (const ir::Trace& parent : elite) neighbour = neighbour || DecisionsApart(design, parent) == 1;
    if (VariantOf(design) != VariantOf(elite[0])) {  // a sibling: the fastest's decisions, where they fit
      ir::Trace sibling = WithDecisionsOf(design, elite[0]);
      bool fits = !sibling.decisions.empty();
      for (const auto& [index, decision] : sibling.decisions) fits = fits && design.decisions.at(index) == decision;
      neighbour = neighbour || fits;
    }
    EXPECT_TRUE(neighbour) << "not next to the stored best: " << records[k].trace;
  }
}

TEST(Tuner, AWorkloadFileWithSeveralOutputsIsOneTaskPerOutput) {
  std::string file = ::testing::TempDir() + "/two_outputs.tw";
  std::ofstream(file) << "input X: f32[16, 32]\ninput W: f32[8, 32]\n"
                         "Y[i, j] = sum(k in 32) X[i, k] * W[j, k]\n"
                         "S[i] = sum(k in 32) X[i, k]\n"
                         "output Y, S\n";
  std::string path = FreshDb("tuner_outputs.sqlite");
  db::SqliteDatabase database(path);
  TuneOptions o = SmallTune(file, 8);
  o.measure_baseline = false;
  TuneReport r = Tune(database, o);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].name, file + "#Y");
  EXPECT_EQ(r.tasks[1].name, file + "#S");
  EXPECT_EQ(r.tasks[0].trials + r.tasks[1].trials, 8);
  EXPECT_GT(r.tasks[0].trials, 0);
  EXPECT_GT(r.tasks[1].trials, 0);
  EXPECT_EQ(database.Workloads().size(), 2u);
  // One output alone is a workload of its own, addressable as FILE#OUTPUT.
  ir::Workload s = ir::LoadWorkload(file + "#S");
  EXPECT_EQ(s.func.params.size(), 3u);
  EXPECT_THROW(ir::LoadWorkload(file + "#Z"), ir::IrError);
}

// --split: a causal attention's four parts are tuned first, then the
// whole, whose first candidates are its parts' best schedules composed.
TEST(Tuner, SplitTunesThePartsThenTheWholeFromTheirBestComposed) {
  std::string file = ::testing::TempDir() + "/split_attention.tw";
  std::ofstream(file) << "input Q: f32[2, 16, 8]\ninput K: f32[2, 16, 8]\ninput V: f32[2, 16, 8]\n"
                         "S[h, i, j in 16] = sum(d in 8) j <= i ? Q[h, i, d] * K[h, j, d] : 0.0\n"
                         "M[h, i] = max(j in 16) j <= i ? S[h, i, j] : -1e30\n"
                         "E[h, i, j] = j <= i ? exp((S[h, i, j] - M[h, i]) * 0.35) : 0.0\n"
                         "Z[h, i] = sum(j in 16) E[h, i, j]\n"
                         "O[h, i, d] = sum(j in 16) j <= i ? E[h, i, j] * V[h, j, d] : 0.0\n"
                         "Y[h, i, d] = O[h, i, d] / Z[h, i]\n";
  std::string path = FreshDb("tuner_split.sqlite");
  db::SqliteDatabase database(path);
  TuneOptions o = SmallTune(file, 24);
  o.split = Split::kOn;
  o.measure_baseline = false;
  o.final_check = 0;  // the parts' bests stay what they were when composed
  std::string note;
  TuneReport r = Tune(database, o, [&](const TuneEvent& e, const std::vector<TaskStatus>&) {
    if (e.kind == TuneEvent::kNote) note = e.message;
  });
  ASSERT_EQ(r.tasks.size(), 5u);
  std::vector<std::string> names;
  for (const TaskStatus& t : r.tasks) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{file + "@S", file + "@M+E", file + "@Z", file + "@O+Y", file}));
  int part_trials = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_GT(r.tasks[i].trials, 0) << names[i];
    part_trials += r.tasks[i].trials;
  }
  EXPECT_LE(part_trials, 18) << "three quarters of the budget";
  EXPECT_EQ(part_trials + r.tasks[4].trials, 24);
  EXPECT_GT(r.tasks[4].composed, 0);
  EXPECT_EQ(note.rfind(file + ": its 4 parts tuned; ", 0), 0u) << note;

  // The parts' best schedules, one after another, are a program the
  // whole's records hold.
  ir::Workload whole = ir::LoadWorkload(file);
  std::string target = o.measure.target.ToString();
  std::vector<ir::Trace> designs;
  for (const ir::Workload& part : ir::WorkloadParts(whole)) {
    std::vector<db::TuningRecord> best = database.TopK(ir::WorkloadHash(part.func), target, 1);
    ASSERT_EQ(best.size(), 1u) << part.spec;
    std::optional<ir::Trace> design = DesignOf(part.func, ir::Trace::FromJsonText(best[0].trace));
    ASSERT_TRUE(design) << part.spec;
    designs.push_back(*design);
  }
  std::optional<Candidate> composed = Realize(whole.func, ir::ConcatTraces(designs), 0);
  ASSERT_TRUE(composed);
  bool measured = false;
  db::RecordQuery q;
  q.workload_hash = ir::WorkloadHash(whole.func);
  for (const db::TuningRecord& rec : database.Records(q)) {
    ir::Schedule sch = ir::ReplayTrace(whole.func, ir::Trace::FromJsonText(rec.trace), 0);
    measured |= ir::StructuralHash(sch.func()) == composed->program_hash;
  }
  EXPECT_TRUE(measured) << "the composition of the parts' best was not measured";

  // A later session of the whole alone composes its parts' records too.
  TuneOptions alone = SmallTune(file, 2);
  alone.measure_baseline = false;
  TuneReport later = Tune(database, alone);
  ASSERT_EQ(later.tasks.size(), 1u);
  EXPECT_GT(later.tasks[0].composed, 0);
}

TEST(Tuner, TheSameWorkloadGivenTwiceIsOneTask) {
  std::string path = FreshDb("tuner_same_twice.sqlite");
  db::SqliteDatabase database(path);
  TuneOptions o = SmallTune("matmul:M=16,N=16,K=16", 8);
  o.workloads.push_back("matmul:K=16,N=16,M=16");  // the same program, spelled otherwise
  o.measure_baseline = false;
  std::string setup_message;
  TuneReport r = Tune(database, o, [&](const TuneEvent& e, const std::vector<TaskStatus>&) {
    if (e.kind == TuneEvent::kSetup) setup_message = e.message;
  });
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_EQ(r.tasks[0].trials, 8) << "the whole budget goes to the one task";
  EXPECT_EQ(setup_message.rfind("matmul:K=16,N=16,M=16 is the same workload as matmul:M=16,N=16,K=16; it is tuned "
                                "once\n",
                                0),
            0u)
      << setup_message;
}

TEST(Tuner, RandomStrategyAndBadSetupErrors) {
  std::string path = FreshDb("tuner_random.sqlite");
  db::SqliteDatabase database(path);
  TuneOptions o = SmallTune("reduce_sum:M=8,N=64", 8);
  o.strategy = "random";
  o.measure_baseline = false;
  TuneReport r = Tune(database, o);
  EXPECT_EQ(r.tasks[0].trials, 8);

  TuneOptions bad = o;
  bad.strategy = "annealing";
  EXPECT_THROW(Tune(database, bad), std::invalid_argument);
  bad = o;
  bad.workloads = {"matmul:M=0"};
  EXPECT_THROW(Tune(database, bad), ir::IrError);
  bad = o;
  bad.space = "/nonexistent/space.py";
  EXPECT_THROW(Tune(database, bad), std::invalid_argument);
  bad = o;
  bad.evolutionary.population = 0;
  EXPECT_THROW(Tune(database, bad), std::invalid_argument);
  EXPECT_EQ(database.Size(), 8) << "a refused setup writes nothing";
}

}  // namespace
}  // namespace tunedb::search
