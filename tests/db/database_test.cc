// The Database contract, run against SQLite and the in-memory oracle.
#include "db/database.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "db/memory_database.h"
#include "db/sqlite_database.h"

namespace tunedb::db {
namespace {

WorkloadInput W(const std::string& hash, const std::string& structure = "") {
  return {hash, "w" + hash, "tunedb", structure.empty() ? "structure-" + hash : structure, "{\"program\": " + hash + "}"};
}

TuningRecord R(const std::string& hash, const std::string& target, std::vector<double> secs,
               RecordStatus status = RecordStatus::kOk, const std::string& trace = "[[],[]]") {
  TuningRecord r;
  r.workload_hash = hash;
  r.target = target;
  r.trace = trace;
  r.run_secs = std::move(secs);
  r.status = status;
  r.hardware = "test cpu; 2 cores";
  return r;
}

template <typename T>
class DatabaseContract : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (std::is_same_v<T, SqliteDatabase>) {
      path_ = ::testing::TempDir() + "/contract_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".sqlite";
      std::filesystem::remove(path_);
      db_ = std::make_unique<SqliteDatabase>(path_);
    } else {
      db_ = std::make_unique<MemoryDatabase>();
    }
  }
  void TearDown() override {
    db_.reset();
    if (!path_.empty()) {
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
    }
  }
  std::unique_ptr<Database> db_;
  std::string path_;
};

using Implementations = ::testing::Types<SqliteDatabase, MemoryDatabase>;
TYPED_TEST_SUITE(DatabaseContract, Implementations);

TYPED_TEST(DatabaseContract, CommitWorkloadIsIdempotentAndDetectsCollisions) {
  Database& db = *this->db_;
  std::int64_t a = db.CommitWorkload(W("1"));
  EXPECT_EQ(db.CommitWorkload(W("1")), a);
  EXPECT_NE(db.CommitWorkload(W("2")), a);
  EXPECT_THROW(db.CommitWorkload(W("1", "another structure")), DatabaseError);
  ASSERT_TRUE(db.FindWorkload("1"));
  EXPECT_EQ(db.FindWorkload("1")->input.program, "{\"program\": 1}");
  EXPECT_FALSE(db.FindWorkload("3"));
}

TYPED_TEST(DatabaseContract, TopKIsValidRecordsFastestFirstPerTarget) {
  Database& db = *this->db_;
  db.CommitWorkload(W("1"));
  db.CommitRecords({R("1", "t", {3.0, 3.0, 3.0}, RecordStatus::kOk, "a"), R("1", "t", {1.0, 9.0, 1.5}, RecordStatus::kOk, "b"),
                    R("1", "t", {}, RecordStatus::kBuildError, "c"), R("1", "t", {0.1}, RecordStatus::kWrongResult, "d"),
                    R("1", "other", {0.5}, RecordStatus::kOk, "e"), R("1", "t", {2.0}, RecordStatus::kOk, "f")});
  std::vector<TuningRecord> top = db.TopK("1", "t", 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].trace, "b");  // median 1.5
  EXPECT_EQ(top[1].trace, "f");
  EXPECT_EQ(db.TopK("1", "t", 10).size(), 3u);  // failures are never best
  EXPECT_EQ(db.TopK("1", "nowhere", 10).size(), 0u);
  EXPECT_EQ(db.Size(), 6);
  EXPECT_EQ(db.Targets("1"), (std::vector<std::string>{"other", "t"}));
}

// A record timed again: the later timings join its own, its median and so
// its rank follow all of them, and it stays the same measurement for
// duplicates (committing it as first measured again adds nothing).
TYPED_TEST(DatabaseContract, LaterTimingsJoinARecordAndMoveItsRank) {
  Database& db = *this->db_;
  db.CommitWorkload(W("1"));
  db.CommitRecords({R("1", "t", {1.0}, RecordStatus::kOk, "lucky"), R("1", "t", {2.0, 2.2}, RecordStatus::kOk, "steady"),
                    R("1", "t", {}, RecordStatus::kRunError, "failed")});
  std::vector<TuningRecord> top = db.TopK("1", "t", 2);
  ASSERT_EQ(top[0].trace, "lucky");
  std::int64_t lucky = top[0].id, steady = top[1].id;
  EXPECT_TRUE(db.AddTimings(lucky, {3.0, 3.1}));
  EXPECT_TRUE(db.AddTimings(steady, {2.1}));
  top = db.TopK("1", "t", 2);
  EXPECT_EQ(top[0].trace, "steady");  // median of 2.0, 2.1, 2.2
  EXPECT_EQ(top[0].run_secs, (std::vector<double>{2.0, 2.2, 2.1}));
  EXPECT_EQ(top[1].run_secs, (std::vector<double>{1.0, 3.0, 3.1}));
  EXPECT_DOUBLE_EQ(top[1].Median(), 3.0);

  EXPECT_EQ(db.CommitRecords({R("1", "t", {1.0}, RecordStatus::kOk, "lucky")}), 0);
  EXPECT_FALSE(db.AddTimings(top[1].id + 100, {1.0})) << "timings added to a record that does not exist";
  RecordQuery failures;
  failures.status = RecordStatus::kRunError;
  EXPECT_FALSE(db.AddTimings(db.Records(failures).at(0).id, {1.0})) << "a failed record was given timings";
  EXPECT_THROW(db.AddTimings(lucky, {-1.0}), DatabaseError);
  EXPECT_THROW(db.AddTimings(lucky, {std::nan("")}), DatabaseError);

  // The newest kMaxTimings are kept.
  EXPECT_TRUE(db.AddTimings(steady, std::vector<double>(Database::kMaxTimings, 5.0)));
  TuningRecord kept = db.TopK("1", "t", 2)[1];
  EXPECT_EQ(kept.run_secs, std::vector<double>(Database::kMaxTimings, 5.0));
}

TYPED_TEST(DatabaseContract, RecordsFilterAndPage) {
  Database& db = *this->db_;
  db.CommitWorkload(W("1"));
  db.CommitWorkload(W("2"));
  std::vector<TuningRecord> batch;
  for (int i = 0; i < 25; ++i) {
    batch.push_back(R(i % 2 ? "1" : "2", "t", {static_cast<double>(i)}, i % 5 == 0 ? RecordStatus::kTimeout : RecordStatus::kOk,
                      "trace" + std::to_string(i)));
  }
  EXPECT_EQ(db.CommitRecords(batch), 25);
  RecordQuery q;
  q.workload_hash = "1";
  q.limit = 5;
  std::vector<std::string> seen;
  while (true) {
    std::vector<TuningRecord> page = db.Records(q);
    if (page.empty()) break;
    for (const auto& r : page) seen.push_back(r.trace);
    q.after_id = page.back().id;
  }
  EXPECT_EQ(seen.size(), 12u);
  RecordQuery failures;
  failures.status = RecordStatus::kTimeout;
  EXPECT_EQ(db.Records(failures).size(), 5u);
}

// Records committed within a span of time, as copies of a batch are looked
// for (CommitCopies): both ends count, other workloads' are left out, and
// they page in id order though they were committed out of time order.
TYPED_TEST(DatabaseContract, RecordsCommittedWithinASpanOfTime) {
  Database& db = *this->db_;
  db.CommitWorkload(W("1"));
  db.CommitWorkload(W("2"));
  std::vector<TuningRecord> batch;
  for (double created : {500.0, 100.0, 200.0, 300.0, 200.0, 250.5}) {
    batch.push_back(R("1", "t", {created}, RecordStatus::kOk, "trace" + std::to_string(batch.size())));
    batch.back().created = created;
  }
  batch.push_back(R("2", "t", {1.0}));
  batch.back().created = 250;
  ASSERT_EQ(db.CommitRecords(batch), 7);
  RecordQuery q;
  q.workload_hash = "1";
  q.created_within = std::make_pair(200.0, 300.0);
  q.limit = 2;
  std::vector<double> seen;
  std::int64_t last_id = 0;
  while (true) {
    std::vector<TuningRecord> page = db.Records(q);
    if (page.empty()) break;
    for (const TuningRecord& r : page) {
      EXPECT_GT(r.id, last_id);
      last_id = r.id;
      seen.push_back(r.created);
    }
    q.after_id = page.back().id;
  }
  EXPECT_EQ(seen, (std::vector<double>{200.0, 300.0, 200.0, 250.5}));
  q = RecordQuery{};  // every workload's
  q.created_within = std::make_pair(250.0, 250.5);
  EXPECT_EQ(db.Records(q).size(), 2u);
}

TYPED_TEST(DatabaseContract, DuplicatesAreSkippedAndUnknownWorkloadsRefused) {
  Database& db = *this->db_;
  db.CommitWorkload(W("1"));
  EXPECT_EQ(db.CommitRecords({R("1", "t", {1.0})}), 1);
  EXPECT_EQ(db.CommitRecords({R("1", "t", {1.0}), R("1", "t", {2.0})}), 1);
  EXPECT_THROW(db.CommitRecords({R("1", "t", {5.0}), R("9", "t", {1.0})}), DatabaseError);
  EXPECT_EQ(db.Size(), 2);  // the failed batch added nothing
}

TYPED_TEST(DatabaseContract, StringsThatLookLikeSqlAreStoredVerbatim) {
  Database& db = *this->db_;
  std::string evil = "'); DROP TABLE records; -- \"\\ \xe2\x9c\x93";
  WorkloadInput w = W("1");
  w.name = evil;
  db.CommitWorkload(w);
  TuningRecord r = R("1", evil, {1.0}, RecordStatus::kOk, evil);
  r.error = evil;
  db.CommitRecords({r});
  std::vector<TuningRecord> top = db.TopK("1", evil, 1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].trace, evil);
  EXPECT_EQ(db.FindWorkload("1")->input.name, evil);
  EXPECT_EQ(db.Size(), 1);
}

TYPED_TEST(DatabaseContract, WorkloadStats) {
  Database& db = *this->db_;
  db.CommitWorkload(W("1"));
  db.CommitRecords({R("1", "a", {2.0}), R("1", "a", {1.0}), R("1", "b", {3.0}), R("1", "a", {}, RecordStatus::kRunError)});
  std::vector<WorkloadStats> stats = db.Workloads();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].records, 4);
  EXPECT_EQ(stats[0].ok_records, 3);
  ASSERT_EQ(stats[0].best.size(), 2u);
  EXPECT_EQ(stats[0].best[0], std::make_pair(std::string("a"), 1.0));
}

TYPED_TEST(DatabaseContract, SessionsAndModels) {
  Database& db = *this->db_;
  Session s;
  s.command = "tunedb tune";
  s.seed = 7;
  std::int64_t id = db.StartSession(s);
  db.EndSession(id, 123.0);
  ASSERT_EQ(db.Sessions().size(), 1u);
  EXPECT_EQ(db.Sessions()[0].ended, 123.0);
  StoredModel m;
  m.feature_version = 3;
  m.blob = std::string("\0binary\xff", 8);
  m.objective = "rank";
  std::int64_t first = db.SaveModel(m);
  m.blob = "second";
  std::int64_t second = db.SaveModel(m);
  EXPECT_EQ(db.LoadModel(0)->id, second);
  EXPECT_EQ(db.LoadModel(first)->blob, std::string("\0binary\xff", 8));
  EXPECT_EQ(db.Models().size(), 2u);
  EXPECT_TRUE(db.Models()[0].blob.empty());
}

// Taking over a session is a compare-and-set on its owner.
TYPED_TEST(DatabaseContract, ASessionIsClaimedOnlyFromTheOwnerItHas) {
  Database& db = *this->db_;
  Session s;
  s.command = "tunedb tune";
  s.owner = "a";
  std::int64_t id = db.StartSession(s);
  ASSERT_EQ(db.Sessions().size(), 1u);
  EXPECT_EQ(db.Sessions()[0].owner, "a");
  EXPECT_FALSE(db.ClaimSession(id, "b", "c")) << "claimed from an owner it does not have";
  EXPECT_EQ(db.Sessions()[0].owner, "a");
  EXPECT_TRUE(db.ClaimSession(id, "a", "c"));
  EXPECT_FALSE(db.ClaimSession(id, "a", "d")) << "two claims from the same owner both succeeded";
  EXPECT_TRUE(db.ClaimSession(id, "c", ""));  // released
  EXPECT_EQ(db.Sessions()[0].owner, "");
  EXPECT_TRUE(db.ClaimSession(id, "", "d"));
  db.EndSession(id, 5.0);
  EXPECT_FALSE(db.ClaimSession(id, "d", "e")) << "an ended session was claimed";
  EXPECT_EQ(db.Sessions()[0].owner, "d");
  EXPECT_FALSE(db.ClaimSession(id + 100, "", "e")) << "a session that does not exist was claimed";
  Session unowned;
  unowned.command = "tunedb tune";
  std::int64_t second = db.StartSession(unowned);
  EXPECT_EQ(db.Sessions()[1].owner, "");
  EXPECT_TRUE(db.ClaimSession(second, "", "f"));
}

// A session's last sign of life: its start, each batch of records that
// names it, a tuner taking it over. Records of another session, or of
// none, leave it as it was.
TYPED_TEST(DatabaseContract, ASessionIsMarkedActiveByItsRecordsAndByATakeover) {
  Database& db = *this->db_;
  db.CommitWorkload(W("1"));
  Session s;
  s.command = "tunedb tune";
  s.owner = "a";
  s.started = 1000.0;
  std::int64_t id = db.StartSession(s);
  std::int64_t other = db.StartSession(s);
  EXPECT_EQ(db.Sessions()[0].last_active, 1000.0);
  TuningRecord r = R("1", "llvm", {1.0});
  r.session_id = other;
  db.CommitRecords({r});
  TuningRecord none = R("1", "llvm", {2.0});
  db.CommitRecords({none});
  EXPECT_EQ(db.Sessions()[0].last_active, 1000.0) << "records of another session or of none marked it";
  double before = NowSeconds();
  EXPECT_GE(db.Sessions()[1].last_active, before - 60);
  TuningRecord mine = R("1", "llvm", {3.0});
  mine.session_id = id;
  db.CommitRecords({mine});
  EXPECT_GE(db.Sessions()[0].last_active, before);
  EXPECT_LT(db.Sessions()[1].last_active, before + 60);
  ASSERT_TRUE(db.ClaimSession(other, "a", "b"));
  EXPECT_GE(db.Sessions()[1].last_active, before);
}

// A tuner killed from a shell lingers as a zombie until the shell collects
// it; its sessions are left behind from the moment it ended.
TEST(SessionOwnerTest, AProcessThatEndedCountsAsEndedBeforeItsParentCollectsIt) {
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    close(gate[1]);
    (void)!read(gate[0], &c, 1);  // until the parent closes its end
    _exit(0);
  }
  close(gate[0]);
  const std::string owner = ProcessOwner(child);
  EXPECT_TRUE(OwnerMayBeRunning(owner)) << owner;
  close(gate[1]);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);  // ended, not collected
  EXPECT_FALSE(OwnerMayBeRunning(owner)) << owner << " is a zombie";
  EXPECT_TRUE(std::filesystem::exists("/proc/" + std::to_string(child))) << "the zombie was collected early";
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(OwnerMayBeRunning(owner));
}

TEST(SessionOwnerTest, ARunningProcessIsToldFromOneThatEnded) {
  std::string me = ThisProcess();
  EXPECT_TRUE(OwnerMayBeRunning(me)) << me;
  // The same host and boot, a pid that has ended: a child, waited for.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  std::optional<OwnerParts> parts = ParseOwner(me);
  ASSERT_TRUE(parts.has_value()) << me;
  const std::string pid = std::to_string(getpid());
  EXPECT_EQ(parts->pid, pid);
  ASSERT_FALSE(parts->pid_namespace.empty()) << me;
  EXPECT_EQ(parts->host + "/" + pid + "/" + parts->start + "/" + parts->boot + "/" + parts->pid_namespace, me);
  EXPECT_TRUE(OwnerIsVisibleHere(*parts));
  const std::string ns = "/" + parts->pid_namespace;
  EXPECT_FALSE(OwnerMayBeRunning(parts->host + "/" + std::to_string(child) + "/1/" + parts->boot + ns));
  // This pid with another start time: the pid was reused.
  EXPECT_FALSE(OwnerMayBeRunning(parts->host + "/" + pid + "/1/" + parts->boot + ns));
  // This process, but before a reboot.
  EXPECT_FALSE(OwnerMayBeRunning(parts->host + "/" + pid + "/" + parts->start + "/another-boot" + ns));
  // An owner written before pid namespaces is looked at here.
  EXPECT_FALSE(OwnerMayBeRunning(parts->host + "/" + std::to_string(child) + "/1/" + parts->boot));
  EXPECT_TRUE(OwnerMayBeRunning(parts->host + "/" + pid + "/" + parts->start + "/" + parts->boot));
  const std::string host = parts->host;
  // Another host cannot be looked at, so its sessions are left alone; nor
  // can another container of this host (same name and boot, its own pids),
  // where the child's pid may well be a running tuner.
  EXPECT_TRUE(OwnerMayBeRunning("another." + host + "/1/1/x"));
  const std::string in_a_container = parts->host + "/" + std::to_string(child) + "/1/" + parts->boot + "/1";
  EXPECT_FALSE(OwnerIsVisibleHere(*ParseOwner(in_a_container)));
  EXPECT_TRUE(OwnerMayBeRunning(in_a_container));
  // A session of an owner that cannot be looked at counts as left behind
  // once it has been quiet for longer than the lease; one of this process
  // runs however long it has been quiet, and one of an ended process is
  // left behind however recently it was active.
  Session remote;
  remote.owner = "another." + host + "/1/1/x";
  const double now = 1e9;
  remote.last_active = now - kSessionLeaseSeconds + 10;
  EXPECT_TRUE(SessionMayBeRunning(remote, now));
  remote.last_active = now - kSessionLeaseSeconds - 10;
  EXPECT_FALSE(SessionMayBeRunning(remote, now));
  remote.last_active = 0;  // not known: an older file or server
  EXPECT_TRUE(SessionMayBeRunning(remote, now));
  remote.owner = in_a_container;
  remote.last_active = now - kSessionLeaseSeconds - 10;
  EXPECT_FALSE(SessionMayBeRunning(remote, now));
  Session mine;
  mine.owner = me;
  mine.last_active = 1;
  EXPECT_TRUE(SessionMayBeRunning(mine, now));
  mine.owner = parts->host + "/" + std::to_string(child) + "/1/" + parts->boot + ns;
  mine.last_active = now;
  EXPECT_FALSE(SessionMayBeRunning(mine, now));
  for (const char* unreadable : {"", "x", "a/b", "h/12/", "h/pid/1/b", "/1/1/b", "h/1/1/b/n/extra"}) {
    EXPECT_FALSE(ParseOwner(unreadable).has_value()) << unreadable;
    EXPECT_FALSE(OwnerMayBeRunning(unreadable)) << unreadable;
  }
}

TEST(CanonicalTargetTest, OneTargetSpelledTwoWaysHasOneName) {
  const std::string ours = "llvm -mcpu=znver4 -num-cores=2";
  EXPECT_EQ(CanonicalTarget(ours), ours);
  EXPECT_EQ(CanonicalTarget("llvm -num-cores=2 -mcpu=znver4"), ours);
  EXPECT_EQ(CanonicalTarget("  llvm   -mcpu=znver4\t-num-cores=02 "), ours);
  EXPECT_EQ(CanonicalTarget("llvm -keys=cpu -mcpu=znver4 -num-cores=2"), ours) << "TVM's str(target)";
  EXPECT_EQ(CanonicalTarget("llvm -mcpu znver4 -num-cores 2"), ours) << "TVM reads -key value too";
  EXPECT_EQ(CanonicalTarget("llvm -num-cores=4 -mattr=+avx2,-avx512f -mcpu=znver4"),
            "llvm -mcpu=znver4 -mattr=+avx2,-avx512f -num-cores=4");
  // Options tunedb does not print keep their place in the name, after its own.
  EXPECT_EQ(CanonicalTarget("llvm -model=xeon -mtriple=x86_64-linux-gnu -num-cores=2 -mcpu=znver4"),
            "llvm -mcpu=znver4 -num-cores=2 -model=xeon -mtriple=x86_64-linux-gnu");
  EXPECT_EQ(CanonicalTarget("llvm -keys=arm_cpu,cpu -mcpu=cortex-a72"), "llvm -mcpu=cortex-a72 -keys=arm_cpu,cpu");
  EXPECT_EQ(CanonicalTarget("llvm -num-cores=0"), "llvm -num-cores=0");
  // Not this function's to read: only the spaces change.
  EXPECT_EQ(CanonicalTarget("llvm -num-cores=2 -mcpu=znver4 -mcpu=znver3"), "llvm -num-cores=2 -mcpu=znver4 -mcpu=znver3");
  EXPECT_EQ(CanonicalTarget("cuda  -arch=sm_86"), "cuda -arch=sm_86");
  EXPECT_EQ(CanonicalTarget("llvm znver4"), "llvm znver4");
  EXPECT_EQ(CanonicalTarget(""), "");
}

TEST(DifferentialTest, RandomOperationsAgree) {
  std::string path = ::testing::TempDir() + "/differential.sqlite";
  std::filesystem::remove(path);
  SqliteDatabase sqlite(path);
  MemoryDatabase memory;
  std::mt19937 rng(11);
  for (Database* db : {static_cast<Database*>(&sqlite), static_cast<Database*>(&memory)}) {
    for (int w = 0; w < 5; ++w) db->CommitWorkload(W(std::to_string(w)));
  }
  for (int round = 0; round < 40; ++round) {
    std::vector<TuningRecord> batch;
    int n = 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) {
      RecordStatus st = rng() % 4 == 0 ? RecordStatus::kRunError : RecordStatus::kOk;
      std::vector<double> secs;
      if (st == RecordStatus::kOk) {
        for (int k = 0; k < 3; ++k) secs.push_back(static_cast<double>(rng() % 1000) / 1000.0);
      }
      batch.push_back(R(std::to_string(rng() % 5), rng() % 2 ? "x" : "y", secs, st, "t" + std::to_string(rng() % 50)));
    }
    EXPECT_EQ(sqlite.CommitRecords(batch), memory.CommitRecords(batch));
  }
  EXPECT_EQ(sqlite.Size(), memory.Size());
  for (int w = 0; w < 5; ++w) {
    for (const char* t : {"x", "y"}) {
      auto a = sqlite.TopK(std::to_string(w), t, 7), b = memory.TopK(std::to_string(w), t, 7);
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].Median(), b[i].Median());
    }
  }
}

TEST(MergeTest, MergeSkipsDuplicates) {
  MemoryDatabase a, b;
  a.CommitWorkload(W("1"));
  a.CommitRecords({R("1", "t", {1.0}), R("1", "t", {2.0})});
  b.CommitWorkload(W("1"));
  b.CommitWorkload(W("2"));
  b.CommitRecords({R("1", "t", {2.0}), R("2", "t", {3.0})});
  EXPECT_EQ(Merge(a, b).records, 1);
  EXPECT_EQ(a.Size(), 3);
  EXPECT_EQ(Merge(a, b).records, 0);
}

// The timings of one record, whatever their order.
std::multiset<double> TimingsOf(Database& db, const std::string& trace) {
  std::multiset<double> out;
  int found = 0;
  for (const TuningRecord& r : db.TopK("1", "t", 100)) {
    if (r.trace != trace) continue;
    ++found;
    out.insert(r.run_secs.begin(), r.run_secs.end());
  }
  EXPECT_EQ(found, 1) << "records of " << trace;
  return out;
}

// A record copied by a merge and timed again afterwards (the final check
// of a session, Database::AddTimings) is still one measurement: a later
// merge carries the new timings over instead of copying it a second time,
// in both directions, and merging again changes nothing.
TEST(MergeTest, LaterTimingsOfARecordAlreadyMergedJoinItsCopy) {
  const std::string dir = ::testing::TempDir();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(dir + "/merge_b.sqlite" + suffix);
  MemoryDatabase a;
  SqliteDatabase b(dir + "/merge_b.sqlite");
  a.CommitWorkload(W("1"));
  a.CommitRecords({R("1", "t", {1.0, 1.2}, RecordStatus::kOk, "[[\"p\"],[]]"),
                   R("1", "t", {3.0}, RecordStatus::kOk, "[[\"q\"],[]]"),
                   R("1", "t", {}, RecordStatus::kRunError, "[[\"r\"],[]]")});
  EXPECT_EQ(Merge(b, a).records, 3);

  const std::int64_t p_in_a = a.TopK("1", "t", 1)[0].id;
  ASSERT_TRUE(a.AddTimings(p_in_a, {0.9, 0.8}));
  MergeCounts again = Merge(b, a);
  EXPECT_EQ(again.records, 0);
  EXPECT_EQ(again.records_with_later_timings, 1);
  EXPECT_EQ(b.Size(), 3);
  EXPECT_EQ(TimingsOf(b, "[[\"p\"],[]]"), (std::multiset<double>{0.8, 0.9, 1.0, 1.2}));
  EXPECT_EQ(b.TopK("1", "t", 1)[0].Median(), a.TopK("1", "t", 1)[0].Median());

  // Timed again on each side: each merge brings over what the other lacks.
  const std::int64_t p_in_b = b.TopK("1", "t", 1)[0].id;
  ASSERT_TRUE(b.AddTimings(p_in_b, {2.0}));
  ASSERT_TRUE(a.AddTimings(p_in_a, {0.7}));
  EXPECT_EQ(Merge(b, a).records_with_later_timings, 1);
  EXPECT_EQ(Merge(a, b).records_with_later_timings, 1);
  const std::multiset<double> all{0.7, 0.8, 0.9, 1.0, 1.2, 2.0};
  EXPECT_EQ(TimingsOf(a, "[[\"p\"],[]]"), all);
  EXPECT_EQ(TimingsOf(b, "[[\"p\"],[]]"), all);
  EXPECT_EQ(TimingsOf(b, "[[\"q\"],[]]"), (std::multiset<double>{3.0}));

  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(Merge(b, a).records + Merge(b, a).records_with_later_timings, 0);
    EXPECT_EQ(Merge(a, b).records + Merge(a, b).records_with_later_timings, 0);
  }
  EXPECT_EQ(a.Size(), 3);
  EXPECT_EQ(b.Size(), 3);

  // The same program measured anew (another commit, other timings) is
  // another record, as before.
  MemoryDatabase c;
  c.CommitWorkload(W("1"));
  c.CommitRecords({R("1", "t", {1.1}, RecordStatus::kOk, "[[\"p\"],[]]")});
  EXPECT_EQ(Merge(b, c).records, 1);
  EXPECT_EQ(b.Size(), 4);
}

// Records copied by hand (a client reading one server and posting what it
// read to another) are told from their copies as a merge tells them: the
// later timings of a measurement join its copy, and posting the same
// records twice adds nothing. A record without a commit time is a new
// measurement. The whole batch is one transaction.
TEST(MergeTest, CopiesCommittedByHandJoinTheirCopiesAsAMergeDoes) {
  const std::string path = ::testing::TempDir() + "/commit_copies.sqlite";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  MemoryDatabase from;
  SqliteDatabase into(path);
  from.CommitWorkload(W("1"));
  into.CommitWorkload(W("1"));
  const std::string p = "[[\"p\"],[]]";
  from.CommitRecords({R("1", "t", {1.0, 1.2}, RecordStatus::kOk, p),
                      R("1", "t", {3.0}, RecordStatus::kOk, "[[\"q\"],[]]"),
                      R("1", "t", {}, RecordStatus::kRunError, "[[\"r\"],[]]")});
  RecordQuery all;
  all.workload_hash = "1";
  std::vector<TuningRecord> copied = from.Records(all);
  ASSERT_EQ(copied.size(), 3u);
  EXPECT_GT(copied[0].created, 0);
  MergeCounts first = CommitCopies(into, copied);
  EXPECT_EQ(first.records, 3);
  EXPECT_EQ(first.records_with_later_timings, 0);

  ASSERT_TRUE(from.AddTimings(from.TopK("1", "t", 1)[0].id, {0.9}));
  copied = from.Records(all);
  MergeCounts again = CommitCopies(into, copied);
  EXPECT_EQ(again.records, 0);
  EXPECT_EQ(again.records_with_later_timings, 1);
  EXPECT_EQ(into.Size(), 3);
  EXPECT_EQ(TimingsOf(into, p), (std::multiset<double>{0.9, 1.0, 1.2}));
  MergeCounts twice = CommitCopies(into, copied);
  EXPECT_EQ(twice.records + twice.records_with_later_timings, 0);

  // A batch that fails undoes the timings it had added before the failure.
  ASSERT_TRUE(from.AddTimings(from.TopK("1", "t", 1)[0].id, {0.7}));
  copied = from.Records(all);
  copied.push_back(R("9", "t", {1.0}));  // no such workload
  EXPECT_THROW(CommitCopies(into, copied), DatabaseError);
  EXPECT_EQ(TimingsOf(into, p), (std::multiset<double>{0.9, 1.0, 1.2}));

  // The same program measured anew, with no commit time: another record.
  EXPECT_EQ(CommitCopies(into, {R("1", "t", {1.0}, RecordStatus::kOk, p)}).records, 1);
  EXPECT_EQ(into.Size(), 4);
}

// A record that went through TVM's files comes back without its commit
// time (kUnknownCommitTime). It is still told from its copy, by program,
// target and a timing in common, in both directions: a tunedb export
// imported back into the database it came from added every record that had
// been timed again since as a second one.
TEST(MergeTest, ACopyWhoseCommitTimeIsNotKnownJoinsItsOriginal) {
  const std::string path = ::testing::TempDir() + "/unknown_time.sqlite";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  SqliteDatabase original(path);
  original.CommitWorkload(W("1"));
  const std::string p = "[[\"p\"],[]]";
  original.CommitRecords({R("1", "t", {1.0, 1.2}, RecordStatus::kOk, p)});
  ASSERT_TRUE(original.AddTimings(original.TopK("1", "t", 1)[0].id, {0.9}));

  auto through_tvm = [&](std::vector<double> secs) {
    TuningRecord r = R("1", "t", std::move(secs), RecordStatus::kOk, p);
    r.created = kUnknownCommitTime;
    return r;
  };
  MergeCounts same = CommitCopies(original, {through_tvm({1.0, 1.2, 0.9})});
  EXPECT_EQ(same.records + same.records_with_later_timings, 0);
  MergeCounts later = CommitCopies(original, {through_tvm({1.0, 1.2, 0.9, 0.8})});
  EXPECT_EQ(later.records, 0);
  EXPECT_EQ(later.records_with_later_timings, 1);
  EXPECT_EQ(TimingsOf(original, p), (std::multiset<double>{0.8, 0.9, 1.0, 1.2}));
  // No timing in common: another measurement of the program.
  EXPECT_EQ(CommitCopies(original, {through_tvm({2.0})}).records, 1);
  EXPECT_EQ(original.Size(), 2);

  // The other way: the imported copy is in `into`, the original merged in.
  MemoryDatabase imported;
  imported.CommitWorkload(W("1"));
  imported.CommitRecords({through_tvm({1.0, 1.2})});
  MergeCounts merged = Merge(imported, original);
  EXPECT_EQ(merged.records, 1) << "the measurement with no timing in common";
  EXPECT_EQ(merged.records_with_later_timings, 1);
  EXPECT_EQ(imported.Size(), 2);
  // And a batch posted with commit times finds the copy whose time is not
  // known, outside the batch's span of times.
  MemoryDatabase posted_into;
  posted_into.CommitWorkload(W("1"));
  posted_into.CommitRecords({through_tvm({1.0, 1.2})});
  RecordQuery all;
  all.workload_hash = "1";
  std::vector<TuningRecord> batch = original.Records(all);
  ASSERT_EQ(batch.size(), 2u);
  ASSERT_GT(batch[0].created, kUnknownCommitTime);
  batch.pop_back();  // the record of {2.0} came through TVM too
  MergeCounts posted = CommitCopies(posted_into, batch);
  EXPECT_EQ(posted.records, 0);
  EXPECT_EQ(posted.records_with_later_timings, 1);
  EXPECT_EQ(posted_into.Size(), 1);
}

}  // namespace
}  // namespace tunedb::db
