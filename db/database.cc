#include "db/database.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

namespace tunedb::db {

std::string_view StatusName(RecordStatus s) {
  switch (s) {
    case RecordStatus::kOk: return "ok";
    case RecordStatus::kBuildError: return "build_error";
    case RecordStatus::kRunError: return "run_error";
    case RecordStatus::kTimeout: return "timeout";
    case RecordStatus::kWrongResult: return "wrong_result";
  }
  return "?";
}

RecordStatus ParseStatus(std::string_view name) {
  for (RecordStatus s : {RecordStatus::kOk, RecordStatus::kBuildError, RecordStatus::kRunError, RecordStatus::kTimeout,
                         RecordStatus::kWrongResult}) {
    if (StatusName(s) == name) return s;
  }
  throw DatabaseError("unknown record status '" + std::string(name) +
                      "' (expected ok, build_error, run_error, timeout or wrong_result)");
}

double TuningRecord::Median() const {
  if (status != RecordStatus::kOk || run_secs.empty()) return std::numeric_limits<double>::infinity();
  std::vector<double> s = run_secs;
  std::sort(s.begin(), s.end());
  std::size_t n = s.size();
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

std::vector<double> WithLaterTimings(std::int64_t record_id, std::vector<double> earlier,
                                     const std::vector<double>& secs) {
  for (double s : secs) {
    if (!(s > 0) || !std::isfinite(s)) {
      throw DatabaseError("record " + std::to_string(record_id) + ": a timing must be positive seconds, not " +
                          std::to_string(s));
    }
  }
  earlier.insert(earlier.end(), secs.begin(), secs.end());
  if (earlier.size() > Database::kMaxTimings) {
    earlier.erase(earlier.begin(), earlier.end() - static_cast<std::ptrdiff_t>(Database::kMaxTimings));
  }
  return earlier;
}

std::string CanonicalTarget(const std::string& target) {
  std::istringstream in(target);
  std::vector<std::string> words;
  for (std::string w; in >> w;) {
    // TVM's "-num-cores 2" is "-num-cores=2".
    const bool a_value = !words.empty() && w[0] != '-' && words.back()[0] == '-' && words.back().find('=') == std::string::npos;
    if (a_value) {
      words.back() += "=" + w;
    } else {
      words.push_back(w);
    }
  }
  auto joined = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
    return out;
  };
  if (words.empty() || words[0] != "llvm") return joined(words);
  // Options by name ("mcpu"), each with its whole word ("-mcpu=znver4").
  std::map<std::string, std::string> options;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.size() < 2 || w[0] != '-') return joined(words);
    std::size_t eq = w.find('=');
    std::string name = w.substr(1, eq == std::string::npos ? std::string::npos : eq - 1);
    std::string word = w;
    if (name == "num-cores" && eq != std::string::npos) {
      // "-num-cores=02" is the target tunedb parses as 2.
      std::string value = w.substr(eq + 1);
      if (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos) {
        value.erase(0, std::min(value.find_first_not_of('0'), value.size() - 1));
        word = "-num-cores=" + value;
      }
    }
    if (name == "keys" && word == "-keys=cpu") continue;
    if (!options.emplace(name, word).second) return joined(words);
  }
  std::vector<std::string> out = {"llvm"};
  for (const char* first : {"mcpu", "mattr", "num-cores"}) {
    if (auto it = options.find(first); it != options.end()) {
      out.push_back(it->second);
      options.erase(it);
    }
  }
  for (const auto& [name, word] : options) out.push_back(word);
  return joined(out);
}

std::string ServingProblem(const TuningRecord& record) {
  if (!nlohmann::json::accept(record.trace)) return "its trace is not valid JSON";
  if (!std::isfinite(record.Median())) return "its run_secs do not read as seconds";
  return "";
}

WorkloadInput WholeInput(Database& db, const WorkloadStats& listed) {
  if (!listed.workload.input.program.empty()) return listed.workload.input;
  std::optional<Workload> whole = db.FindWorkload(listed.workload.input.hash);
  return whole ? whole->input : listed.workload.input;
}

namespace {

// The ok records of one workload in a database, by what identifies a
// measurement across databases once later timings have changed its
// run_secs (and with them the dedupe key): target, program, commit time
// (where both copies know it).
// Only ids and timings are kept (traces run to kilobytes; the program is
// kept as a hash, which the commit time and a shared timing back up).
class MeasuredCopies {
 public:
  struct Copy {
    std::int64_t id;
    double created;
    std::vector<double> run_secs;
  };

  // Those committed within `created_within`, when given, and those whose
  // commit time is not known, which match any (Find).
  MeasuredCopies(Database& db, const std::string& workload_hash,
                 std::optional<std::pair<double, double>> created_within) {
    Read(db, workload_hash, created_within);
    bool unknown_read = !created_within || created_within->first <= kUnknownCommitTime;
    if (!unknown_read) Read(db, workload_hash, std::pair(kUnknownCommitTime, kUnknownCommitTime));
  }

  // The copy of `r` here: same key, the same commit time unless one of
  // them is not known, and at least one timing in common (two measurements
  // of one program in one commit share no timing).
  Copy* Find(const TuningRecord& r) {
    auto it = copies_.find(KeyOf(r));
    if (it == copies_.end()) return nullptr;
    for (Copy& copy : it->second) {
      if (copy.created != r.created && copy.created != kUnknownCommitTime && r.created != kUnknownCommitTime) {
        continue;
      }
      for (double s : r.run_secs) {
        if (std::find(copy.run_secs.begin(), copy.run_secs.end(), s) != copy.run_secs.end()) return &copy;
      }
    }
    return nullptr;
  }

 private:
  void Read(Database& db, const std::string& workload_hash, std::optional<std::pair<double, double>> created_within) {
    RecordQuery q;
    q.workload_hash = workload_hash;
    q.status = RecordStatus::kOk;
    q.created_within = created_within;
    q.limit = 5000;
    while (true) {
      std::vector<TuningRecord> page = db.Records(q);
      if (page.empty()) break;
      q.after_id = page.back().id;
      for (TuningRecord& r : page) copies_[KeyOf(r)].push_back({r.id, r.created, std::move(r.run_secs)});
    }
  }

  using CopyKey = std::tuple<std::string, std::size_t>;
  static CopyKey KeyOf(const TuningRecord& r) { return {r.target, std::hash<std::string>{}(r.trace)}; }
  std::map<CopyKey, std::vector<Copy>> copies_;
};

// The timings of `theirs` that `ours` lacks, counted with multiplicity: a
// merge in either direction, repeated, adds each timing once.
std::vector<double> TimingsMissing(const std::vector<double>& ours, const std::vector<double>& theirs) {
  std::multiset<double> have(ours.begin(), ours.end());
  std::vector<double> missing;
  for (double s : theirs) {
    auto it = have.find(s);
    if (it != have.end()) {
      have.erase(it);
    } else {
      missing.push_back(s);
    }
  }
  return missing;
}

// Commits records copied from another database, looking for their copies
// in `into` among the records of the same workload: for one batch
// (CommitCopies), among those committed within the batch's span of commit
// times; for a merge, which commits every record of a workload page by
// page, among all of them, read once.
class CopyCommitter {
 public:
  enum Scope { kWithinTheBatch, kWholeWorkloads };
  CopyCommitter(Database& into, Scope scope) : into_(into), scope_(scope) {}

  void Commit(std::vector<TuningRecord> records, MergeCounts& counts) {
    if (scope_ == kWithinTheBatch) {
      copies_.clear();
      spans_.clear();
      for (const TuningRecord& r : records) {
        if (!Copied(r)) continue;
        auto it = spans_.try_emplace(r.workload_hash, r.created, r.created).first;
        it->second = {std::min(it->second.first, r.created), std::max(it->second.second, r.created)};
      }
    }
    std::vector<TuningRecord> fresh;
    for (TuningRecord& r : records) {
      if (MeasuredCopies::Copy* copy = Copied(r) ? CopiesOf(r).Find(r) : nullptr) {
        std::vector<double> missing = TimingsMissing(copy->run_secs, r.run_secs);
        if (!missing.empty() && into_.AddTimings(copy->id, missing)) {
          copy->run_secs = WithLaterTimings(copy->id, copy->run_secs, missing);
          ++counts.records_with_later_timings;
        }
        continue;
      }
      fresh.push_back(std::move(r));
    }
    counts.records += into_.CommitRecords(fresh);
  }

 private:
  // An ok record with its commit time: a measurement that may be here.
  static bool Copied(const TuningRecord& r) { return r.status == RecordStatus::kOk && r.created > 0; }

  MeasuredCopies& CopiesOf(const TuningRecord& r) {
    auto it = copies_.find(r.workload_hash);
    if (it == copies_.end()) {
      std::optional<std::pair<double, double>> within;
      // A record whose commit time is not known may be a copy of any: then
      // all of the workload's records are looked among.
      if (scope_ == kWithinTheBatch && spans_.at(r.workload_hash).first != kUnknownCommitTime) {
        within = spans_.at(r.workload_hash);
      }
      it = copies_.emplace(r.workload_hash, MeasuredCopies(into_, r.workload_hash, within)).first;
    }
    return it->second;
  }

  Database& into_;
  const Scope scope_;
  std::map<std::string, MeasuredCopies> copies_;
  std::map<std::string, std::pair<double, double>> spans_;  // kWithinTheBatch: commit times by workload
};

}  // namespace

MergeCounts Merge(Database& into, Database& from) {
  MergeCounts counts;
  for (const WorkloadStats& w : from.Workloads()) {
    into.CommitWorkload(WholeInput(from, w));
    CopyCommitter committer(into, CopyCommitter::kWholeWorkloads);
    RecordQuery q;
    q.workload_hash = w.workload.input.hash;
    q.limit = 5000;
    while (true) {
      std::vector<TuningRecord> page = from.Records(q);
      if (page.empty()) break;
      q.after_id = page.back().id;
      for (TuningRecord& r : page) {
        // Named by its id where it is, not by its place in a batch here.
        if (r.status == RecordStatus::kOk && r.run_secs.empty()) {
          throw DatabaseError("record " + std::to_string(r.id) +
                              " of the database merged from: status ok without a timing (tunedb db check lists "
                              "every such record)");
        }
        r.session_id = 0;  // sessions are per database
      }
      committer.Commit(std::move(page), counts);
    }
  }
  return counts;
}

MergeCounts CommitCopies(Database& into, std::vector<TuningRecord> records) {
  MergeCounts counts;
  into.Transaction([&] { CopyCommitter(into, CopyCommitter::kWithinTheBatch).Commit(std::move(records), counts); });
  return counts;
}

std::string HardwareFingerprint() {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return model + "; " + std::to_string(std::thread::hardware_concurrency()) + " cores";
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Field 22 of /proc/PID/stat, the process's start in clock ticks since
// boot; empty if there is no such process, or if it has ended and only
// waits for its parent to collect it (state Z or X, field 3): a tuner
// killed from a shell stays a zombie until the shell gets to it. The
// fields are counted after the command name's closing parenthesis, since
// the name may hold spaces.
std::string ProcessStart(const std::string& pid) {
  std::string stat = FirstLine("/proc/" + pid + "/stat");
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3 && (field == "Z" || field == "X")) return "";
    if (i == 22) return field;
  }
  return "";
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

// The pid namespace's inode, from the link "pid:[4026531836]"; empty if
// it cannot be read.
std::string PidNamespace() {
  std::error_code ec;
  std::string link = std::filesystem::read_symlink("/proc/self/ns/pid", ec).string();
  std::size_t open = link.find('['), close = link.rfind(']');
  if (ec || open == std::string::npos || close == std::string::npos || close <= open + 1) return "";
  return link.substr(open + 1, close - open - 1);
}

std::string ThisBoot() { return FirstLine("/proc/sys/kernel/random/boot_id"); }

}  // namespace

std::string ProcessOwner(int pid) {
  std::string id = std::to_string(pid);
  return HostName() + "/" + id + "/" + ProcessStart(id) + "/" + ThisBoot() + "/" + PidNamespace();
}

std::string ThisProcess() { return ProcessOwner(getpid()); }

std::optional<OwnerParts> ParseOwner(const std::string& owner) {
  // host/pid/start/boot[/pidns]: a host name has no '/'.
  std::vector<std::string> parts;
  std::size_t from = 0;
  while (true) {
    std::size_t slash = owner.find('/', from);
    parts.push_back(owner.substr(from, slash == std::string::npos ? std::string::npos : slash - from));
    if (slash == std::string::npos) break;
    from = slash + 1;
  }
  if (parts.size() != 4 && parts.size() != 5) return std::nullopt;
  OwnerParts p{parts[0], parts[1], parts[2], parts[3], parts.size() == 5 ? parts[4] : ""};
  if (p.host.empty() || p.pid.empty() || p.pid.find_first_not_of("0123456789") != std::string::npos ||
      p.start.empty()) {
    return std::nullopt;
  }
  return p;
}

bool OwnerIsVisibleHere(const OwnerParts& owner) {
  if (owner.host != HostName() || owner.boot != ThisBoot()) return false;
  const std::string here = PidNamespace();
  return owner.pid_namespace.empty() || here.empty() || owner.pid_namespace == here;
}

bool OwnerMayBeRunning(const std::string& owner) {
  std::optional<OwnerParts> p = ParseOwner(owner);
  if (!p) return false;
  if (p->host != HostName()) return true;
  if (p->boot != ThisBoot()) return false;  // this host started again since
  if (!OwnerIsVisibleHere(*p)) return true;  // another container's pids
  return ProcessStart(p->pid) == p->start;
}

bool SessionMayBeRunning(const Session& session, double now) {
  if (!OwnerMayBeRunning(session.owner)) return false;
  std::optional<OwnerParts> p = ParseOwner(session.owner);
  // Its process, seen running here, is all the sign of life it needs.
  if (p->host == HostName() && p->boot == ThisBoot() && OwnerIsVisibleHere(*p)) return true;
  return session.last_active == 0 || now - session.last_active <= kSessionLeaseSeconds;
}

}  // namespace tunedb::db
