// End-to-end tests of the `tunedb` executable: run it as a user would and
// check its output and exit code.
#include <signal.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/cli/commands.h"

#include "ir/structural.h"
#include "ir/workloads.h"
#include "search/space.h"

namespace {

struct Result {
  int exit_code;
  std::string out;  // stdout and stderr together
};

Result RunTunedb(const std::string& args) {
  std::string command = std::string(TUNEDB_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Runs `command OPTIONS rest` for each (OPTIONS, ERROR) and expects it
// refused with exit code 2 and the one line "tunedb: error: ERROR".
void ExpectOneLineRefusals(const std::string& command, const std::string& rest,
                           const std::vector<std::pair<std::string, std::string>>& refusals) {
  for (const auto& [options, error] : refusals) {
    Result r = RunTunedb(command + " " + options + " " + rest);
    EXPECT_EQ(r.exit_code, 2) << options;
    EXPECT_EQ(r.out, "tunedb: error: " + error + "\n") << options;
  }
}

// Runs SQL on a database file behind tunedb's back, as outside damage
// would; returns the first column of the last row, if any.
std::string Sql(const std::string& path, const std::string& sql) {
  sqlite3* raw = nullptr;
  std::string last;
  EXPECT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  auto keep = [](void* out, int, char** values, char**) {
    *static_cast<std::string*>(out) = values[0] ? values[0] : "";
    return 0;
  };
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), keep, &last, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(raw);
  return last;
}

TEST(CliTest, ShowPrintsProgramHashAndFlops) {
  Result r = RunTunedb("show --workload matmul:M=64,N=64,K=64");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("# workload: matmul:M=64,N=64,K=64\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# flops:    524288\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with T.block(\"C\"):"), std::string::npos) << r.out;
}

TEST(CliTest, ShowJsonIsParseable) {
  Result r = RunTunedb("show --workload reduce_sum:M=4,N=4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["workload"], "reduce_sum:M=4,N=4");
  EXPECT_EQ(j["flops"], 16);
  EXPECT_EQ(j["program"]["format"], "tunedb.program/1");
  EXPECT_EQ(j["hash"].get<std::string>().find_first_not_of("0123456789"), std::string::npos);
  EXPECT_EQ(j["parts"], nlohmann::json::array()) << "one stage, one part";
  EXPECT_EQ(j["split_by_default"], false);
}

TEST(CliTest, ShowReadsAWorkloadFile) {
  std::string path = ::testing::TempDir() + "/cli_test_workload.tw";
  std::ofstream(path) << "input X: f32[8, 16]\nY[i] = sum(k in 16) X[i, k] * X[i, k]\n";
  Result r = RunTunedb("show --workload " + path);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("with T.block(\"Y\"):"), std::string::npos) << r.out;
}

// A directory given for a file was read as an empty file: an empty
// schedule, an empty design space, or "the token file is empty".
TEST(CliTest, ADirectoryGivenForAFileIsNamed) {
  const std::string dir = ::testing::TempDir();
  Result r = RunTunedb("show -w matmul:M=8,N=8,K=8 --schedule " + dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: cannot read " + dir + ": it is a directory\n");
  r = RunTunedb("show -w matmul:M=8,N=8,K=8 --schedule " + dir + "/no_such_schedule.py");
  EXPECT_EQ(r.out, "tunedb: error: cannot read " + dir + "/no_such_schedule.py: No such file or directory\n");
  r = RunTunedb("tune -w matmul:M=8,N=8,K=8 --space " + dir + " --db " + dir + "/cli_space_dir.sqlite");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: cannot read the design-space script " + dir + ": it is a directory\n");
  r = RunTunedb("tune -w matmul:M=8,N=8,K=8 --token-file " + dir + " --db http://127.0.0.1:1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: cannot read " + dir + ": it is a directory\n");
}

// A mistyped command was answered "A subcommand is required".
TEST(CliTest, AMistypedCommandIsNamedWithTheCommandsThere) {
  Result r = RunTunedb("tun --workload matmul");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out,
            "tunedb: error: 'tun' is not a command of tunedb (commands: workloads, show, space, run, db, best, train, "
            "model, tune, e2e, serve)\n");
  r = RunTunedb("db stat");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out,
            "tunedb: error: 'stat' is not a command of tunedb db (commands: import-tvm, export-tvm, merge, stats, "
            "records, sessions, release, check)\n");
  r = RunTunedb("e2e nosuch");  // a command's own argument is the command's to judge
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: unknown model 'nosuch' (available: mlp)\n");
}

TEST(CliTest, BadInputIsOneLineAndExitCode2) {
  Result r = RunTunedb("show --workload nosuch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("tunedb: error: unknown workload 'nosuch'", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;

  std::string path = ::testing::TempDir() + "/cli_test_bad.tw";
  std::ofstream(path) << "input X: f32[8]\nY[i] = X[i] +\n";
  r = RunTunedb("show --workload " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(path + ":2:14: expected an expression, found end of line"), std::string::npos) << r.out;

  r = RunTunedb("show --no-such-flag");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  r = RunTunedb("");
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

TEST(CliTest, WorkloadsListsTheLibrary) {
  Result r = RunTunedb("workloads");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* name : {"matmul", "batch_matmul", "dense_bias_relu", "conv2d_nhwc",
                           "depthwise_conv2d_nhwc", "softmax", "reduce_sum"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + name + "\n"), std::string::npos) << name;
  }
}

TEST(CliTest, HelpWorksForTheProgramAndEachCommand) {
  Result r = RunTunedb("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("show"), std::string::npos);
  r = RunTunedb("show --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--workload"), std::string::npos);
}

}  // namespace

namespace {

TEST(CliTest, ShowAppliesAScheduleScriptAndReplaysItsTrace) {
  std::string script = ::testing::TempDir() + "/cli_test_schedule.py";
  std::ofstream(script) << "b0 = sch.get_block(\"C\")\n"
                           "i, j, k = sch.get_loops(b0)\n"
                           "j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))\n"
                           "sch.reorder(i, j0, k, j1)\n"
                           "sch.decompose_reduction(b0, j0)\n";
  Result r = RunTunedb("show --workload matmul:M=64,N=64,K=64 --schedule " + script + " --seed 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("trace"));
  std::string trace_path = ::testing::TempDir() + "/cli_test_trace.json";
  std::ofstream(trace_path) << j["trace"].dump();
  Result replay = RunTunedb("show --workload matmul:M=64,N=64,K=64 --trace " + trace_path + " --json");
  ASSERT_EQ(replay.exit_code, 0) << replay.out;
  EXPECT_EQ(nlohmann::json::parse(replay.out)["program"], j["program"]);

  Result text = RunTunedb("show --workload matmul:M=64,N=64,K=64 --schedule " + script);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("with T.block(\"C_init\"):"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("# trace:\nb0 = sch.get_block(name=\"C\", func_name=\"main\")"), std::string::npos) << text.out;
}

// `space`: the designs `tune` would search, each a trace with the space's
// own decisions that `show --schedule` replays; with --programs, each
// design's program. A global average pool's second design sums its rows of
// 7 in the lanes of one vector.
TEST(CliTest, SpacePrintsTheDesignsTuneSearches) {
  const std::string pool = ::testing::TempDir() + "/cli_test_pool.tw";
  std::ofstream(pool) << "input X: f32[64, 7, 7]\nS[c] = sum(h in 7, w in 7) X[c, h, w]\nA[c] = S[c] / 49.0\n"
                         "output A\n";
  Result r = RunTunedb("space --workload " + pool + " --target \"llvm -mcpu=znver4 -num-cores=2\" --lowered");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("# space:    default, 2 designs\n"), std::string::npos) << r.out;
  std::size_t second = r.out.find("\n## design 2 of 2\n");
  ASSERT_NE(second, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decision=[1, 7]", second), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# its program, lowered:", second), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("T.vectorized(7)", second), std::string::npos) << r.out;

  // As many designs as the tuner's space for the same target, each a
  // script that replays.
  const std::string spec = "matmul:M=16,N=24,K=8";
  const char* target = "llvm -mcpu=znver4 -num-cores=2";
  r = RunTunedb("space --workload " + spec + " --target \"" + target + "\"");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::size_t designs = tunedb::search::DefaultDesignSpace(tunedb::ir::BuildWorkload(spec).func,
                                                           tunedb::search::SpaceOptionsFor(2, 512))
                            .size();
  ASSERT_GT(designs, 1u);
  EXPECT_NE(r.out.find("default, " + std::to_string(designs) + " designs\n"), std::string::npos) << r.out;
  for (std::size_t d = 1; d <= designs; ++d) {
    std::string header = "\n## design " + std::to_string(d) + " of " + std::to_string(designs) + "\n";
    std::size_t at = r.out.find(header);
    ASSERT_NE(at, std::string::npos) << header << r.out;
    std::size_t end = r.out.find("\n## design ", at + 1);
    std::string script = r.out.substr(at + header.size(), end == std::string::npos ? std::string::npos
                                                                                      : end + 1 - at - header.size());
    std::string path = ::testing::TempDir() + "/cli_test_design.py";
    std::ofstream(path) << script;
    Result replay = RunTunedb("show --workload " + spec + " --schedule " + path);
    EXPECT_EQ(replay.exit_code, 0) << script << replay.out;
  }
  EXPECT_EQ(r.out.find("# its program"), std::string::npos) << "programs only when asked";

  r = RunTunedb("space --workload nosuch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("tunedb: error: unknown workload 'nosuch'", 0), 0u) << r.out;
  r = RunTunedb("space --workload " + spec + " --space " + ::testing::TempDir() + "/cli_test_no_such_space.py");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("cli_test_no_such_space.py"), std::string::npos) << r.out;
  r = RunTunedb("space --workload " + spec + " --target \"cuda -arch=sm_80\"");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "tunedb: error: target 'cuda -arch=sm_80': must start with 'llvm' (e.g. llvm -mcpu=znver4 "
                   "-num-cores=2)\n");
}

// --lowered: what code generation compiles. A convolution with its padding
// inlined checks the border on every read; the rows inside the border get
// a copy of the loop nest without the check (per step of the kernel row).
TEST(CliTest, ShowLoweredPrintsTheFlatProgramWithItsChecksVersioned) {
  Result r = RunTunedb("show --workload matmul:M=8,N=8,K=8 --lowered");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("C[i * 8 + j] = C[i * 8 + j] + A[i * 8 + k] * B[k * 8 + j]"), std::string::npos) << r.out;
  std::string script = ::testing::TempDir() + "/cli_test_inline_padding.py";
  std::ofstream(script) << "sch.compute_inline(sch.get_block(\"PaddedInput\"))\n";
  r = RunTunedb("show --workload conv2d_nhwc:N=1,H=6,W=6,CI=2,CO=4,KH=3,KW=3,stride=1,pad=1 --schedule " + script +
                " --lowered");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("if yy + ry - 1 >= 0 and yy + ry - 7 < 0:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("else:"), std::string::npos) << r.out;
}

TEST(CliTest, ScheduleErrorsAreOneLineWithTheLine) {
  std::string script = ::testing::TempDir() + "/cli_test_bad_schedule.py";
  std::ofstream(script) << "b0 = sch.get_block(\"C\")\ni, j, k = sch.get_loops(b0)\nsch.parallel(k)\n";
  Result r = RunTunedb("show --workload matmul:M=8,N=8,K=8 --schedule " + script);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: " + script +
                       ":3: parallel: loop k drives the reduction variable v_k of block 'C'; only loops over spatial "
                       "variables can run in parallel or as vectors\n");
  std::string trace = ::testing::TempDir() + "/cli_test_bad_trace.json";
  std::ofstream(trace) << "[[[\"Frobnicate\", [], [], []]], []]";
  r = RunTunedb("show --workload matmul:M=8,N=8,K=8 --trace " + trace);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: " + trace + ": trace JSON: instruction 0: unknown instruction kind 'Frobnicate'\n");
  // A number past a double's range is bad JSON too, not a stray library error.
  std::ofstream(trace) << "[[[\"GetBlock\", [], [\"C\", \"main\"], [\"b0\"]]], 1e999]";
  r = RunTunedb("show --workload matmul:M=8,N=8,K=8 --trace " + trace);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: " + trace +
                       ": trace JSON is not valid JSON: [json.exception.out_of_range.406] number overflow parsing "
                       "'1e999'\n");
  r = RunTunedb("show --workload matmul --schedule /nonexistent.py");
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace

namespace {

TEST(CliTest, RunMeasuresAndVerifies) {
  std::string ll = ::testing::TempDir() + "/cli_test_kernel.ll";
  Result r = RunTunedb("run --workload matmul:M=32,N=32,K=32 --repeat 3 --min-repeat-ms 1 --emit-llvm " + ll);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("status:    ok\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reference: checked against the interpreter\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GFLOPS:"), std::string::npos) << r.out;
  std::ifstream in(ll);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("define void @tunedb_kernel("), std::string::npos);
  // A write that fails (here every write to /dev/full) is an error, not a
  // path printed as if the file held the IR.
  ExpectOneLineRefusals("run --workload matmul:M=8,N=8,K=8", "",
                        {{"--emit-llvm /dev/full", "writing /dev/full failed (is the disk full?)"}});
}

// A kernel of well under 0.1 ms is timed in microseconds, not as "0.0000 ms".
TEST(CliTest, RunPrintsAFastKernelInNanosecondsOrMicroseconds) {
  Result r = RunTunedb("run --workload reduce_sum:M=2,N=16 --repeat 3 --min-repeat-ms 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("median: +[1-9][0-9]*\\.[0-9]+ (ns|us) \\(3 repeats, "))) << r.out;
  EXPECT_EQ(r.out.find("0.0000 ms"), std::string::npos) << r.out;
}

// A program with no FLOPs to count (a transpose) is rated by the bytes of
// its inputs and outputs, where "0.00 GFLOP/s" would tell nothing.
TEST(CliTest, AProgramWithoutFlopsIsRatedInGigabytesPerSecond) {
  std::string path = ::testing::TempDir() + "/cli_test_transpose.tw";
  std::ofstream(path) << "input X: f32[64, 48]\nY[i, j] = X[j, i]\n";
  Result r = RunTunedb("run --workload " + path + " --repeat 3 --min-repeat-ms 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("GB/s:      "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("GFLOPS:"), std::string::npos) << r.out;
  std::string db = ::testing::TempDir() + "/cli_test_transpose.sqlite";
  std::filesystem::remove(db);
  r = RunTunedb("tune --workload " + path + " --trials 2 --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // (The unscheduled program, timed at the end, may be the best of so few.)
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nbest: +[^\n]* GB/s of inputs and outputs\n"))) << r.out;
  EXPECT_EQ(r.out.find("GFLOP/s"), std::string::npos) << r.out;
  std::filesystem::remove(db);
  std::filesystem::remove(path);
}

TEST(CliTest, RunWithAScheduleAndBadTargets) {
  std::string script = ::testing::TempDir() + "/cli_test_run_schedule.py";
  std::ofstream(script) << "b0 = sch.get_block(\"C\")\ni, j, k = sch.get_loops(b0)\nsch.parallel(i)\nsch.vectorize(j)\n";
  Result r = RunTunedb("run --workload matmul:M=16,N=16,K=16 --repeat 2 --min-repeat-ms 1 --schedule " + script);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = RunTunedb("run --workload matmul:M=16,N=16,K=16 --target \"cuda -arch=sm_80\"");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: target 'cuda -arch=sm_80': must start with 'llvm' (e.g. llvm -mcpu=znver4 -num-cores=2)\n");
  // inf: the worker read a repeat's length as JSON null, and an infinite
  // timeout timed out at once.
  for (const char* bad : {"--number -1", "--min-repeat-ms -5", "--timeout 0", "--min-repeat-ms inf", "--timeout inf",
                          "--timeout nan", "--timeout 1e12"}) {
    r = RunTunedb(std::string("run --workload matmul:M=16,N=16,K=16 ") + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
  // An unknown CPU once reached LLVM, which aborted the worker.
  r = RunTunedb("run --workload matmul:M=16,N=16,K=16 --target \"llvm -mcpu=bogus\"");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("tunedb: error: target 'llvm -mcpu=bogus': LLVM does not know the CPU 'bogus'", 0), 0u) << r.out;
  // A program too large to count in int64 is refused by name, not given a negative FLOP count.
  r = RunTunedb("show --workload matmul:M=3000000000,N=3000000000,K=3000000000");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("buffer 'A' of shape [3000000000, 3000000000] float32 is larger than"), std::string::npos)
      << r.out;
}

}  // namespace

namespace {

TEST(CliTest, DatabaseCommands) {
  std::string dir = ::testing::TempDir() + "/cli_tvm_" + std::to_string(::getpid());
  std::string db = dir + "/t.sqlite", other = dir + "/other.sqlite", out = dir + "/export";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  std::ofstream(dir + "/database_workload.json") << "[\"77\", \"eJzz\"]\n";
  std::ofstream(dir + "/database_tuning_record.json")
      << "[0, [[[[\"GetBlock\", [], [\"C\", \"main\"], [\"b0\"]]], []], [0.002, 0.001, 0.003], "
         "{\"kind\": \"llvm\", \"mcpu\": \"x\", \"num-cores\": 2}, []]]\n";
  Result r = RunTunedb("db import-tvm " + dir + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "imported 1 workloads and 1 records (0 duplicates skipped) into " + db + "\n");
  r = RunTunedb("best --hash 77 --target \"llvm -mcpu=x -num-cores=2\" --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Its one instruction, a lookup, leaves the program as it is.
  EXPECT_EQ(r.out, "# workload 77 on llvm -mcpu=x -num-cores=2: median 2.0000 ms\n"
                   "# no instruction that changes the program: the unscheduled program is the fastest measured\n");
  // A format it cannot print is refused whether or not there is a record.
  r = RunTunedb("best --hash 77 --format xml --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: --format must be script or json, not 'xml'\n");
  r = RunTunedb("db stats --db " + db);
  EXPECT_NE(r.out.find("records:   1\n"), std::string::npos) << r.out;
  r = RunTunedb("db records --hash 77 --db " + db);
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
  // No record of a stored workload on a target, against a workload the
  // database never saw (a mistyped hash).
  r = RunTunedb("db records --hash 77 --target other --db " + db);
  EXPECT_NE(r.out.find("\n(no records)\n"), std::string::npos) << r.out;
  r = RunTunedb("db records --hash 78 --db " + db);
  EXPECT_NE(r.out.find("\n(no records: the database has no workload 78)\n"), std::string::npos) << r.out;
  ExpectOneLineRefusals("db records --hash 77", "--db " + db, {{"--limit -1", "--limit must be 0 or more, not -1"}});
  for (std::string command : {"db records", "best"}) {
    r = RunTunedb(command + " --hash 77 --workload matmul --db " + db);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.out.find("--workload excludes --hash"), std::string::npos) << r.out;
  }
  r = RunTunedb("db export-tvm " + out + " --db " + db);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = RunTunedb("db import-tvm " + out + " --db " + other);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = RunTunedb("db merge " + other + " --db " + db);
  EXPECT_EQ(r.out, "merged 0 new records from " + other + " into " + db + " (1 records now)\n");
  r = RunTunedb("best --hash 77 --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("(targets with records: llvm -mcpu=x -num-cores=2)"), std::string::npos) << r.out;
  // A workload given by name is named back, with its hash.
  r = RunTunedb("best -w matmul:M=8,N=8,K=8 --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("tunedb: error: no valid record for matmul:M=8,N=8,K=8 (workload ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("(the database has no record of this workload)"), std::string::npos) << r.out;
  std::ofstream(dir + "/database_tuning_record.json", std::ios::app) << "[0, [oops\n";
  r = RunTunedb("db import-tvm " + dir + " --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: " + dir + "/database_tuning_record.json:2: not valid JSON\n");
  // Into a new file, a failed import leaves no empty database behind; into
  // an existing one, it leaves what was there.
  const std::string fresh = dir + "/fresh.sqlite";
  r = RunTunedb("db import-tvm " + dir + " --db " + fresh);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(fresh));
  EXPECT_EQ(RunTunedb("db import-tvm " + dir + "/none --db " + fresh).exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(fresh));
  EXPECT_NE(RunTunedb("db stats --db " + db).out.find("records:   1\n"), std::string::npos);

  // An imported TVM trace is kept verbatim: instructions tunedb does not
  // know are no damage.
  Sql(db, "UPDATE records SET trace = '[[[\"TVMOnly\", [], [], []]], []]'");
  r = RunTunedb("db check --db " + db);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("checked:  1 workloads, 1 of 1 records\nno problems found\n"), std::string::npos) << r.out;
  r = RunTunedb("best --hash 77 --target \"llvm -mcpu=x -num-cores=2\" --format json --db " + db);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"TVMOnly\""), std::string::npos) << r.out;

  // Commands that only read a database refuse a path with no file, rather
  // than create an empty database there and report nothing.
  std::string missing = ::testing::TempDir() + "/cli_test_no_such.sqlite";
  std::filesystem::remove(missing);
  for (const std::string& command : {"db stats --db " + missing, "db merge " + missing + " --db " + db,
                                     "train --db " + missing, "model list --db " + missing}) {
    r = RunTunedb(command);
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.out, "tunedb: error: no database file " + missing + " (check the path; tunedb tune creates one)\n")
        << command;
    EXPECT_FALSE(std::filesystem::exists(missing)) << command;
  }
}

}  // namespace

namespace {

std::string TuneDb(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kSmallTune = " --population 32 --repeat 2 --min-repeat-ms 1 --seed 1";

// Starts `env tunedb args` in a process group of its own, as a shell starts
// a foreground job, its output going to `log`, and waits (a minute at most)
// until the log shows `progress`. Returns the process id.
pid_t StartTunedbUntil(const std::string& env, const std::string& args, const std::string& log,
                       const std::string& progress) {
  std::filesystem::remove(log);  // a previous run's log would be read as this one's progress
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    std::string command = env + " exec " + TUNEDB_BINARY + " " + args + " > " + log + " 2>&1";
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid < 0) return pid;
  setpgid(pid, pid);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (ReadAll(log).find(progress) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pid;
}

// A matmul small enough to run serially (search/postproc.cc), so that its
// schedules beat the unscheduled loop however busy the machine: a parallel
// one can lose to it under ctest -j2.
TEST(CliTune, PrintsTheTableAndTheBestSchedule) {
  std::string db = TuneDb("cli_tune.sqlite");
  Result r = RunTunedb("tune --workload matmul:M=16,N=32,K=32 --trials 8 --batch 8 --db " + db + kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Speed (GFLOPS)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matmul:M=16,N=32,K=32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8/8 trials"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best schedule:\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sch.split("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unscheduled:"), std::string::npos) << r.out;
  Result stats = RunTunedb("db stats --db " + db);
  // The 8 trials and the unscheduled program's timing.
  EXPECT_NE(stats.out.find("records:   9\n"), std::string::npos) << stats.out;
  // A second session reads the unscheduled program's timing back.
  r = RunTunedb("tune --workload matmul:M=16,N=32,K=32 --trials 8 --batch 8 --db " + db + kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("(unscheduled program timed in an earlier session)"), std::string::npos) << r.out;
  stats = RunTunedb("db stats --db " + db);
  EXPECT_NE(stats.out.find("records:   17\n"), std::string::npos) << stats.out;
  EXPECT_EQ(r.out.find("designs from other shapes"), std::string::npos) << r.out;
  // Another shape of the same computation starts from this one's best.
  r = RunTunedb("tune --workload matmul:M=24,N=32,K=32 --trials 4 --batch 4 --db " + db + kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("0 earlier records of these workloads on this target; 4 designs from other shapes\n"),
            std::string::npos)
      << r.out;
}

TEST(CliTune, ShowListsThePartsAndSplitTunesThemBeforeTheWhole) {
  std::string file = ::testing::TempDir() + "/cli_split.tw";
  std::ofstream(file) << "input X: f32[8, 16]\ninput W: f32[12, 16]\n"
                         "Z[i] = sum(k in 16) X[i, k]\n"
                         "O[i, j] = sum(k in 16) X[i, k] * W[j, k]\n"
                         "Y[i, j] = O[i, j] / (Z[i] + 8.0)\n";
  Result shown = RunTunedb("show --workload " + file);
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  // Its product is too small to be compute-bound (search/split.h).
  EXPECT_NE(shown.out.find("# parts:    " + file + "@Z " + file + "@O+Y (compute-bound: none; tune splits it only "
                           "with --split)\n"),
            std::string::npos)
      << shown.out;
  std::string db = TuneDb("cli_split.sqlite");
  Result r = RunTunedb("tune --workload " + file + " --split --trials 8 --batch 4 --no-baseline --db " + db + kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(file + ": its 2 parts tuned; "), std::string::npos) << r.out;
  for (const std::string& task : {file + "@Z", file + "@O+Y", file}) {
    EXPECT_NE(r.out.find("== " + task + " (hash "), std::string::npos) << task << "\n" << r.out;
  }
}

// Two products of 64 x 64 x 64, each compute-bound: tune splits the
// program unasked, says why, and --no-split tunes it whole.
TEST(CliTune, AProgramOfTwoProductsIsSplitUnlessToldNotTo) {
  std::string file = ::testing::TempDir() + "/cli_auto_split.tw";
  std::ofstream(file) << "input X: f32[64, 64]\ninput A: f32[64, 64]\ninput B: f32[64, 64]\n"
                         "T[i, j] = sum(k in 64) X[i, k] * A[k, j]\n"
                         "Y[i, j] = sum(k in 64) T[i, k] * B[k, j]\n";
  Result shown = RunTunedb("show --workload " + file);
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  EXPECT_NE(shown.out.find("# parts:    " + file + "@T " + file + "@Y (compute-bound: T, Y; tune splits it)\n"),
            std::string::npos)
      << shown.out;
  Result json = RunTunedb("show --workload " + file + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["parts"], nlohmann::json::array({file + "@T", file + "@Y"}));
  EXPECT_EQ(j["compute_bound_parts"], nlohmann::json::array({"T", "Y"}));
  EXPECT_EQ(j["split_by_default"], true);
  std::string db = TuneDb("cli_auto_split.sqlite");
  Result r = RunTunedb("tune --workload " + file + " --trials 8 --batch 4 --no-baseline --db " + db + kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(file + ": 2 parts, compute-bound T, Y; its parts are tuned first (--no-split tunes it whole)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("== " + file + "@Y (hash "), std::string::npos) << r.out;

  std::string whole_db = TuneDb("cli_no_split.sqlite");
  r = RunTunedb("tune --workload " + file + " --no-split --trials 4 --batch 4 --no-baseline --db " + whole_db +
                kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("parts are tuned first"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("== " + file + "@"), std::string::npos) << "no part is a task\n" << r.out;
  EXPECT_NE(r.out.find("== " + file + " (hash "), std::string::npos) << r.out;
}

TEST(CliTune, BadOptionsAreOneLineErrors) {
  std::string db = TuneDb("cli_tune_bad.sqlite");
  std::string space = ::testing::TempDir() + "/cli_tune_bad_space.py";
  std::ofstream(space) << "b = sch.get_block(\"C\")\nsch.nope(b)\n";
  // Options after the workload matmul:M=32 (or instead of it), and the one
  // line each is refused with.
  ExpectOneLineRefusals("tune --workload matmul:M=32", "--db " + db, {
      {"--strategy annealing", "unknown strategy 'annealing' (choose evolutionary or random)"},
      {"--confirm-best -1", "--confirm-best must be 0 or more"},
      {"--population 0", "--population must be between 1 and 65536"},
      {"--population 100000000", "--population must be between 1 and 65536"},
      {"--model-min-samples 0", "--model-min-samples must be at least 1"},
      {"--confirm-margin inf", "--confirm-margin must be a finite fraction, 0 or more"},
      // An infinite time reached the worker as JSON null.
      {"--min-repeat-ms inf", "--min-repeat-ms must be a finite number of milliseconds, 0 or more"},
      {"--min-repeat-ms -1", "--min-repeat-ms must be a finite number of milliseconds, 0 or more"},
      {"--min-repeat-ms 6000", "--min-repeat-ms 6000 is more than half of --timeout (10 s): every timed repeat would count as hung"},
      {"--timeout 0", "--timeout must be more than 0 and at most 86400 seconds"},
      {"--workload matmul:Q=3", "workload matmul has no parameter 'Q' (parameters: M, N, K)"},
      {"--space " + space, space + ":2: unknown schedule method 'nope'"},
      {"--split --space " + space, "--split tunes each part in the default space; a --space script is for one program"},
      {"--split --no-split", "--split and --no-split: choose one"},
      {"--split --strategy random",
       "--split composes the parts' schedules for the evolutionary search; random search would not use them"},
      {"--target \"cuda -arch=sm_80\"",
       "target 'cuda -arch=sm_80': must start with 'llvm' (e.g. llvm -mcpu=znver4 -num-cores=2)"},
  });
  Result r = RunTunedb("tune --workload matmul:M=32 --db http://127.0.0.1:1/");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: http://127.0.0.1:1/: cannot connect: Connection refused\n");
  // Read into an unsigned integer, -1 would be 2^64 - 1, not "random".
  // And one past 2^64 - 1 would be 2^64 - 1.
  for (std::string seed : {"-1", "18446744073709551616", "+3"}) {
    r = RunTunedb("tune --workload matmul:M=32 --seed " + seed + " --db " + db);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out.rfind("--seed: a seed is a whole number from 0 to 2^64 - 1, not " + seed + "\n", 0), 0u) << r.out;
  }
  EXPECT_EQ(RunTunedb("show --workload matmul:M=8,N=8,K=8 --seed 18446744073709551615").exit_code, 0);
  // Each was refused before the database was opened: a mistyped command
  // creates no file.
  EXPECT_FALSE(std::filesystem::exists(db));
}

// A design space with no choices runs out before the budget: the session
// says so, and when the unscheduled program is the best there is, that is
// what `tune` and `best` print instead of an empty script.
TEST(CliTune, ASpaceThatRunsOutSaysSoAndAnUnscheduledBestIsNamed) {
  std::string db = TuneDb("cli_tune_empty_space.sqlite");
  std::string space = ::testing::TempDir() + "/cli_empty_space.py";
  std::ofstream(space) << "# no instructions: the space is the program itself\n";
  const std::string spec = "matmul:M=16,N=16,K=16";
  Result r = RunTunedb("tune --workload " + spec + " --trials 4 --space " + space + " --db " + db + kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("its design space gave nothing new after 1 trial here\n"), std::string::npos) << r.out;
  // The unscheduled program's record made the fastest, whatever was timed
  // (the final check would time that made-up record again: it is off).
  Sql(db, "UPDATE records SET run_secs = '[1e-9]', median = 1e-9 WHERE trace = '[[],[]]'");
  r = RunTunedb("tune --workload " + spec + " --trials 4 --space " + space + " --db " + db + kSmallTune +
                " --final-check 0");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("its design space gave nothing new after 0 trials here and 2 before\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("best schedule:\nnone: the unscheduled program is the fastest measured\n"), std::string::npos)
      << r.out;
  r = RunTunedb("best --workload " + spec + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\n# no instructions: the unscheduled program is the fastest measured\n"), std::string::npos)
      << r.out;
}

// When the unscheduled program, timed at the end, beats every schedule of
// the session, the session reports it as the best, as `best` does: here
// every candidate starts a parallel loop for 64 multiply-adds.
// export-tvm writes a tunedb workload's program where TVM's module goes;
// import-tvm reads it back as that workload, not as an opaque TVM module
// under the same hash, which collided with the tunedb workload: a tune on
// the imported file stopped with "workload hash collision", and an import
// into the database it came from failed the same way.
TEST(CliTune, AnExportedWorkloadImportsAsItselfAndTunesOn) {
  std::string db = TuneDb("cli_tvm_round_trip.sqlite"), back = TuneDb("cli_tvm_round_trip_back.sqlite");
  std::string dir = ::testing::TempDir() + "/cli_tvm_round_trip";
  std::filesystem::remove_all(dir);
  const std::string spec = "matmul:M=8,N=8,K=8";
  const std::string hash = tunedb::ir::WorkloadHash(tunedb::ir::BuildWorkload(spec).func);
  ASSERT_EQ(RunTunedb("tune --workload " + spec + " --trials 4 --db " + db + kSmallTune).exit_code, 0);
  Result r = RunTunedb("db export-tvm " + dir + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunTunedb("db import-tvm " + dir + " --db " + back);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunTunedb("db stats --db " + back);
  EXPECT_NE(r.out.find(hash + "   custom:" + hash), std::string::npos) << r.out;
  r = RunTunedb("tune --workload " + spec + " --trials 2 --db " + back + kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("earlier records of these workloads"), std::string::npos) << r.out;
  // Back into the database it came from: nothing new, though the final
  // check had timed records again after they were first committed.
  r = RunTunedb("db import-tvm " + dir + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("imported 1 workloads and 0 records ("), std::string::npos) << r.out;
  // A tunedb program filed under another hash is refused where it is.
  std::string line = ReadAll(dir + "/database_workload.json");
  ASSERT_EQ(line.rfind("[\"" + hash + "\",", 0), 0u) << line;
  std::ofstream(dir + "/database_workload.json") << "[\"77\"," << line.substr(hash.size() + 4);
  r = RunTunedb("db import-tvm " + dir + " --db " + back);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: " + dir + "/database_workload.json:1: a tunedb program whose workload hash is " +
                       hash + ", not 77\n");
}

TEST(CliTune, AnUnscheduledProgramFasterThanEveryScheduleIsTheSessionsBest) {
  std::string db = TuneDb("cli_tune_unscheduled_best.sqlite");
  std::string space = ::testing::TempDir() + "/cli_parallel_space.py";
  std::ofstream(space) << "b0 = sch.get_block(\"C\")\nl1, l2, l3 = sch.get_loops(b0)\nsch.parallel(l1)\n";
  const std::string spec = "matmul:M=4,N=4,K=4";
  Result r = RunTunedb("tune --workload " + spec + " --trials 2 --space " + space + " --db " + db + kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("best schedule:\nnone: the unscheduled program is the fastest measured\nbest:        "),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("unscheduled: "), std::string::npos) << "no comparison of the program with itself:\n"
                                                               << r.out;
  r = RunTunedb("best --workload " + spec + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\n# no instructions: the unscheduled program is the fastest measured\n"), std::string::npos)
      << r.out;
}

struct InterruptedTune {
  std::string db, args, out;
};

// Who gets the signal: the whole process group, as a terminal sends
// Ctrl-C; the tuner alone; or the tuner and then its group, as coreutils
// `timeout` sends it.
enum class Delivery { kGroup, kTuner, kTunerThenGroup };

// Starts a tune of 48 trials in chunks of 16 into a new database, sends
// `sig` once the first chunk is in, and checks that the tuner ended cleanly
// and said how to resume.
void InterruptAfterTheFirstChunk(const std::string& name, int sig, Delivery delivery, InterruptedTune* run) {
  run->db = TuneDb(name + ".sqlite");
  std::string log = ::testing::TempDir() + "/" + name + ".log";
  run->args = "tune --workload matmul:M=32,N=32,K=32 --trials 48 --batch 16 --db " + run->db + kSmallTune;
  pid_t pid = StartTunedbUntil("", run->args, log, "16/48 trials");
  ASSERT_GT(pid, 0);
  ASSERT_NE(ReadAll(log).find("16/48 trials"), std::string::npos) << ReadAll(log);
  if (delivery != Delivery::kGroup) kill(pid, sig);
  // Back to back, the two would merge into one pending signal; `timeout`
  // makes a few system calls between them.
  if (delivery == Delivery::kTunerThenGroup) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (delivery != Delivery::kTuner) kill(-pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  run->out = ReadAll(log);
  ASSERT_TRUE(WIFEXITED(status)) << run->out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << run->out;
  EXPECT_NE(run->out.find("interrupted: "), std::string::npos) << run->out;
  EXPECT_NE(run->out.find("run the same command to resume"), std::string::npos) << run->out;
}

// Ctrl-C as a terminal sends it: SIGINT to the whole foreground process
// group. The tuner commits what it measured and says how to resume; the
// same command then finishes the session without re-measuring.
TEST(CliTune, CtrlCCommitsAndTheSameCommandResumes) {
  InterruptedTune run;
  ASSERT_NO_FATAL_FAILURE(InterruptAfterTheFirstChunk("cli_tune_interrupt", SIGINT, Delivery::kGroup, &run));
  Result again = RunTunedb(run.args);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("resuming a session with"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("48/48 trials"), std::string::npos) << again.out;
  Result stats = RunTunedb("db stats --db " + run.db);
  // 48 trials, and the unscheduled program's timing once the session ended.
  EXPECT_NE(stats.out.find("records:   49\n"), std::string::npos) << stats.out;
  EXPECT_NE(stats.out.find("sessions:  1\n"), std::string::npos) << stats.out;
}

// SIGTERM, as `timeout`, `kill` and job schedulers send it to the tuner
// alone, ends the session as Ctrl-C does: what was measured is committed
// and the cost model stored. It used to kill the process, leaving the
// model unsaved.
TEST(CliTune, SigtermEndsTheSessionCleanly) {
  InterruptedTune run;
  ASSERT_NO_FATAL_FAILURE(InterruptAfterTheFirstChunk("cli_tune_sigterm", SIGTERM, Delivery::kTuner, &run));
  Result stats = RunTunedb("db stats --db " + run.db);
  EXPECT_NE(stats.out.find("models:    1\n"), std::string::npos) << stats.out;
}

// `timeout -s INT` signals the tuner, then its process group: one request
// that arrives twice. The tuner took the second delivery for a second
// Ctrl-C and died at once, without its report and with the chunk in
// flight lost (every time with SIGINT; with timeout's SIGTERM when the two
// did not merge into one, one run in four here).
TEST(CliTune, OneSignalDeliveredTwiceAsTimeoutSendsItStopsCleanly) {
  InterruptedTune run;
  ASSERT_NO_FATAL_FAILURE(InterruptAfterTheFirstChunk("cli_tune_timeout", SIGINT, Delivery::kTunerThenGroup, &run));
  EXPECT_NE(run.out.find("best schedule:"), std::string::npos) << run.out;
}

// A second request, a second or more after the first, ends the process by
// the signal at once (a user who will not wait for the chunk in flight).
TEST(InterruptHandlerDeathTest, ASignalASecondAfterTheFirstEndsTheProcess) {
  EXPECT_EXIT(
      {
        tunedb::cli::InterruptHandler handler;
        raise(SIGINT);
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
        raise(SIGINT);
        std::_Exit(3);
      },
      ::testing::KilledBySignal(SIGINT), "");
  EXPECT_EXIT(
      {
        tunedb::cli::InterruptHandler handler;
        raise(SIGINT);
        raise(SIGTERM);
        std::_Exit(handler.flag()->load() ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "")
      << "a repeat within the second is the same request";
}

// The request's second delivery may come after the tuner has stopped and
// its handler is gone (in CliTune.OneSignalDeliveredTwiceAsTimeoutSendsItStopsCleanly
// it landed once while the report was printed, and the default action
// killed the tuner). A handler that saw no request gives the signals back.
TEST(InterruptHandlerDeathTest, AfterARequestTheHandlerOutlivesItsObject) {
  EXPECT_EXIT(
      {
        { tunedb::cli::InterruptHandler handler; raise(SIGINT); }
        raise(SIGINT);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        { tunedb::cli::InterruptHandler handler; }
        raise(SIGINT);
        std::_Exit(3);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

// A tuner killed outright (SIGKILL: no handler, no destructor) leaves no
// file behind in the temporary directory, and what it committed stays
// readable. Its reference outputs were once a named temporary file, which
// such a kill left in /tmp for good.
TEST(CliTune, SigkillLeavesNoTemporaryFile) {
  std::string db = TuneDb("cli_tune_killed.sqlite");
  std::string tmp = ::testing::TempDir() + "/cli_tune_killed_tmp";
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  std::string log = ::testing::TempDir() + "/cli_tune_killed.log";
  std::string args = "tune --workload matmul:M=32,N=32,K=32 --trials 48 --batch 16 --db " + db + kSmallTune;
  pid_t pid = StartTunedbUntil("TMPDIR=" + tmp, args, log, "16/48 trials");
  ASSERT_GT(pid, 0);
  ASSERT_NE(ReadAll(log).find("16/48 trials"), std::string::npos) << ReadAll(log);
  kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << ReadAll(log);
  // The workers, in process groups of their own, exit when their pipes close.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(tmp)) left.push_back(entry.path().string());
  EXPECT_TRUE(left.empty()) << left.size() << " file(s) left, the first: " << left.front();
  Result stats = RunTunedb("db stats --db " + db);
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  EXPECT_NE(stats.out.find("records:   "), std::string::npos) << stats.out;
  EXPECT_EQ(stats.out.find("records:   0\n"), std::string::npos) << stats.out;
  // The killed tuner still owns its session, but its process is gone: the
  // same command resumes the session.
  Result listed = RunTunedb("db sessions --db " + db);
  EXPECT_NE(listed.out.find("      48  open: the same command resumes it"), std::string::npos) << listed.out;
  Result again = RunTunedb(args);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("resuming a session with"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("48/48 trials"), std::string::npos) << again.out;
  stats = RunTunedb("db stats --db " + db);
  EXPECT_NE(stats.out.find("sessions:  1\n"), std::string::npos) << stats.out;
}

// A tuner killed in another container of this host (the same host name,
// with the host's network, and boot, but pids of its own): this host
// cannot tell whether it runs, so the same command leaves its session
// alone, until the user, who knows, releases it with `db release`, or it
// has been quiet for longer than the lease.
TEST(CliTune, ASessionOfAnotherContainerIsResumedOnceReleased) {
  std::string db = TuneDb("cli_tune_release.sqlite");
  std::string log = ::testing::TempDir() + "/cli_tune_release.log";
  std::string args = "tune --workload matmul:M=32,N=32,K=32 --trials 48 --batch 16 --db " + db + kSmallTune;
  pid_t pid = StartTunedbUntil("", args, log, "16/48 trials");
  ASSERT_GT(pid, 0);
  kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << ReadAll(log);
  // Its owner as a process of another pid namespace would have written it.
  std::string owner = Sql(db, "SELECT owner FROM sessions WHERE id = 1");
  ASSERT_EQ(std::count(owner.begin(), owner.end(), '/'), 4) << owner;
  owner = owner.substr(0, owner.rfind('/')) + "/1";
  Sql(db, "UPDATE sessions SET owner = '" + owner + "' WHERE id = 1");
  const std::string pid_text = std::to_string(pid);

  // Quiet for longer than the lease, it counts as left behind.
  Sql(db, "UPDATE sessions SET last_active = strftime('%s', 'now') - 7200 WHERE id = 1");
  Result quiet = RunTunedb("db sessions --db " + db);
  EXPECT_NE(quiet.out.find("open: pid " + pid_text + " in another container quiet for 2.0 h; the same command resumes it"),
            std::string::npos)
      << quiet.out;
  EXPECT_EQ(RunTunedb("db release 1 --db " + db).out,
            "session 1 is open already: pid " + pid_text +
                " in another container has been quiet for 2.0 h, and the same command resumes it\n");
  Sql(db, "UPDATE sessions SET last_active = strftime('%s', 'now') WHERE id = 1");

  Result listed = RunTunedb("db sessions --db " + db);
  EXPECT_NE(listed.out.find("running (pid " + pid_text + " in another container)"), std::string::npos) << listed.out;
  Result r = RunTunedb("db release 1 --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "released session 1 of pid " + pid_text +
                       " in another container: the same command resumes it\n");
  EXPECT_EQ(RunTunedb("db release 1 --db " + db).out, "session 1 is open already: the same command resumes it\n");
  Result again = RunTunedb(args);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("resuming a session with"), std::string::npos) << again.out;
  EXPECT_NE(RunTunedb("db stats --db " + db).out.find("sessions:  1\n"), std::string::npos);

  r = RunTunedb("db release 1 --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("tunedb: error: session 1 ended at 20", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(": nothing to release\n"), std::string::npos) << r.out;
  r = RunTunedb("db release 7 --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: " + db + " has no session 7 (tunedb db sessions lists them)\n");
}

// The same command run twice at once: the second leaves the first's
// session to it and runs its own, with its own budget. It used to take
// the running session over as if resuming it, so the two shared one
// budget and one session held both tuners' records.
TEST(CliTune, TheSameCommandTwiceAtOnceRunsTwoSessions) {
  std::string db = TuneDb("cli_tune_twice.sqlite");
  std::string log = ::testing::TempDir() + "/cli_tune_twice.log";
  std::string args = "tune --workload matmul:M=32,N=32,K=32 --trials 48 --batch 16 --db " + db + kSmallTune;
  pid_t first = StartTunedbUntil("", args, log, "16/48 trials");
  ASSERT_GT(first, 0);
  Result listed = RunTunedb("db sessions --db " + db);
  EXPECT_NE(listed.out.find("running (pid " + std::to_string(first) + ")"), std::string::npos) << listed.out;
  Result refused = RunTunedb("db release 1 --db " + db);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.out, "tunedb: error: session 1 is running here (pid " + std::to_string(first) +
                             "): stop that tuner instead (Ctrl-C ends it and leaves the session open)\n");
  Result second = RunTunedb(args);
  int status = 0;
  waitpid(first, &status, 0);
  std::string first_out = ReadAll(log);
  ASSERT_TRUE(WIFEXITED(status)) << first_out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << first_out;
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_EQ(second.out.find("resuming"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("session 1 of the same command is still running; this one runs a session of its own"),
            std::string::npos)
      << second.out;
  EXPECT_NE(second.out.find("48/48 trials"), std::string::npos) << second.out;
  EXPECT_NE(first_out.find("48/48 trials"), std::string::npos) << first_out;
  Result stats = RunTunedb("db stats --db " + db);
  EXPECT_NE(stats.out.find("sessions:  2\n"), std::string::npos) << stats.out;
  listed = RunTunedb("db sessions --db " + db + " --limit 1");
  ASSERT_EQ(listed.exit_code, 0) << listed.out;
  EXPECT_NE(listed.out.find("  ended 20"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("(1 older sessions not shown; --limit shows more)"), std::string::npos) << listed.out;
}

// The processes whose parent is `parent`, by name, read from /proc.
std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& name) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string stat = ReadAll(entry.path().string() + "/stat");
    // pid (comm) state ppid ...; comm may hold spaces, so read after the last ')'.
    std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && stat.find("(" + name + ")") != std::string::npos) {
      found.push_back(static_cast<pid_t>(std::stol(entry.path().filename().string())));
    }
  }
  return found;
}

// Gone, or a zombie that nobody reaps (init in a container may not).
bool ProcessEnded(pid_t pid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  std::size_t close = stat.rfind(')');
  return close == std::string::npos || stat.find(" Z ", close) == close + 1;
}

// A measuring worker outlives nothing: killed in the middle of a timing that
// would take hours, the tuner's worker ends too. It used to run on alone
// (for ten minutes, until killed by hand, under `timeout 20`).
TEST(CliRun, TheWorkerEndsWithTheProcessThatStartedIt) {
  std::string log = ::testing::TempDir() + "/cli_run_killed.log";
  pid_t pid = StartTunedbUntil("", "run --workload matmul:M=16,N=16,K=16 --repeat 100000000", log, "");
  ASSERT_GT(pid, 0);
  std::vector<pid_t> workers;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((workers = ChildrenNamed(pid, "tunedb-worker")).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(workers.size(), 1u) << ReadAll(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into its timing
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ProcessEnded(workers[0]) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  bool ended = ProcessEnded(workers[0]);
  if (!ended) kill(workers[0], SIGKILL);
  EXPECT_TRUE(ended) << "the worker ran on for 10 s after its tuner was killed";
}

// SQLite keeps no checksums, so a damaged row reads back. `db check` names
// it; the readers of the best record skip it, saying so; nothing stops.
TEST(CliDb, CheckNamesDamagedRowsAndReadersSkipThem) {
  std::string db = TuneDb("cli_damaged.sqlite");
  const std::string spec = "matmul:M=32,N=32,K=32";
  Result r = RunTunedb("tune --workload " + spec + " --trials 8 --batch 8 --db " + db + kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunTunedb("db check --db " + db);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // 8 trials and the unscheduled program's timing.
  EXPECT_NE(r.out.find("checked:  1 workloads, 9 of 9 records\nno problems found\n"), std::string::npos) << r.out;

  // The best scheduled record's trace cut short, and its time made
  // unbeatable, so that it stays the fastest record whatever a new session
  // measures. (The unscheduled program's empty trace, [[],[]], is shorter
  // than the cut; it can be the fastest of 8 trials on a busy machine, so
  // its time is made the slowest: the next best is then a schedule.)
  std::string id =
      Sql(db, "SELECT id FROM records WHERE status = 'ok' AND trace <> '[[],[]]' ORDER BY median LIMIT 1");
  std::string target = Sql(db, "SELECT target FROM targets");
  Sql(db, "UPDATE records SET trace = substr(trace, 1, 30), run_secs = '[1e-9]', median = 1e-9 WHERE id = " + id);
  Sql(db, "UPDATE records SET run_secs = '[1.0]', median = 1.0 WHERE trace = '[[],[]]'");
  r = RunTunedb("db check --db " + db);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("1 problem(s):\n  record " + id + " (" + spec + ", " + target +
                       "): trace JSON is not valid JSON"),
            std::string::npos)
      << r.out;
  r = RunTunedb("best --workload " + spec + " --db " + db);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("tunedb: warning: record " + id + " skipped: trace JSON is not valid JSON", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("sch.split("), std::string::npos) << r.out;
  // An export writes every other record, and names the one left out.
  const std::string exported = ::testing::TempDir() + "/cli_damaged_export_" + std::to_string(getpid());
  r = RunTunedb("db export-tvm " + exported + " --db " + db);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("exported 1 workloads and 8 records to " + exported + "\nleft out 1 damaged row(s)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  record " + id + ": its trace is not valid JSON\n"), std::string::npos) << r.out;
  // A new session neither learns from the record nor reports it as its
  // best (its best schedule is printed from the trace).
  r = RunTunedb("tune --workload " + spec + " --trials 10 --batch 8 --db " + db + kSmallTune);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("best schedule:\n"), std::string::npos) << r.out;

  // A workload row whose structure key no longer matches its program: its
  // records cannot be trusted to be this workload's, and tuning stops.
  Sql(db, "UPDATE workloads SET structure = x'00'");
  std::string hash = Sql(db, "SELECT hash FROM workloads");
  r = RunTunedb("db check --db " + db);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("2 problem(s):\n  workload " + hash + " (" + spec + "): its structure key is not its program's\n"),
            std::string::npos)
      << r.out;
  std::string records = Sql(db, "SELECT COUNT(*) FROM records");
  r = RunTunedb("tune --workload " + spec + " --trials 12 --db " + db + kSmallTune);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("or that workload's row is damaged"), std::string::npos) << r.out;
  EXPECT_EQ(Sql(db, "SELECT COUNT(*) FROM records"), records) << "nothing stored is lost";
}

}  // namespace

namespace {

// The lecture's end-to-end case: layers tuned into the database the first
// time, taken from it the second; the tuned model computes the same output.
TEST(CliE2e, MlpRunsWithTunedKernelsAndTheSameOutput) {
  std::string db = TuneDb("cli_e2e.sqlite");
  std::string args = "e2e mlp --batch-size 16 --in 32 --hidden 16 --out 8 --trials 8 --repeat 2 --db " + db;
  Result first = RunTunedb(args);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("tuning 2 layer(s)"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("outputs: identical"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("end to end, unscheduled kernels:"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("end to end, tuned kernels:"), std::string::npos) << first.out;
  EXPECT_TRUE(std::regex_search(first.out, std::regex("tuned kernels: +[1-9][0-9]*\\.[0-9]+ (ns|us) \\(")))
      << "a small model's time in nano- or microseconds:\n" << first.out;
  Result second = RunTunedb(args);
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_EQ(second.out.find("tuning"), std::string::npos) << "schedules come from the database:\n" << second.out;
  // One trial for two new layers leaves one untried: it runs unscheduled,
  // said so, where it once ended the run with "no valid schedule".
  Result scant = RunTunedb("e2e mlp --batch-size 16 --in 32 --hidden 8 --out 8 --trials 1 --repeat 2 --db " + db);
  ASSERT_EQ(scant.exit_code, 0) << scant.out;
  EXPECT_NE(scant.out.find(": no valid schedule in the database after 1 trial; it runs unscheduled\n"),
            std::string::npos)
      << scant.out;
  EXPECT_NE(scant.out.find("outputs: identical"), std::string::npos) << scant.out;
  EXPECT_EQ(RunTunedb("e2e resnet --db " + db).exit_code, 2);
  // --repeat 0 once timed nothing and read the median of no times (a crash).
  Result r = RunTunedb("e2e mlp --repeat 0 --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: --repeat must be at least 1\n");
  r = RunTunedb("e2e mlp --trials 0 --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: --trials must be at least 1\n") << "refused before any work is printed";
}

}  // namespace

namespace {

// `tunedb serve` on a file, on a free port, read-only unless told other
// flags: stops it (SIGTERM) when it goes out of scope, and says whether it
// then exited cleanly.
class ServedFile {
 public:
  ServedFile(const std::string& db, const std::string& log, const std::string& flags = "--read-only") : log_(log) {
    pid_ = StartTunedbUntil("", "serve " + flags + " --quiet --port 0 --db " + db, log, "listening on http://");
    std::string banner = ReadAll(log);
    std::size_t at = banner.find("http://");
    if (pid_ > 0 && at != std::string::npos) url_ = banner.substr(at, banner.find(' ', at) - at);
  }
  ~ServedFile() { Stop(); }
  const std::string& url() const { return url_; }  // empty: it did not start
  bool Stop() {
    if (pid_ <= 0) return stopped_cleanly_;
    kill(-pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
    stopped_cleanly_ = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return stopped_cleanly_;
  }
  std::string log() const { return ReadAll(log_); }

 private:
  std::string log_, url_;
  pid_t pid_ = 0;
  bool stopped_cleanly_ = false;
};

// A record damaged behind tunedb's back (status ok, no timing) stops a
// merge, named by its id in the database it comes from; a merge into a
// new file that fails leaves no file.
TEST(CliDb, AMergeStopsAtARecordWithoutATimingAndNamesIt) {
  std::string from = TuneDb("cli_merge_damaged_from.sqlite"), into = TuneDb("cli_merge_damaged_into.sqlite");
  ASSERT_EQ(RunTunedb("tune -w matmul:M=16,N=16,K=16 --trials 4 --no-baseline --db " + from + kSmallTune).exit_code, 0);
  Sql(from, "UPDATE records SET run_secs = '[]', median = NULL WHERE id = 3");
  Result r = RunTunedb("db merge " + from + " --db " + into);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: record 3 of the database merged from: status ok without a timing (tunedb db check "
                   "lists every such record)\n");
  EXPECT_FALSE(std::filesystem::exists(into));
}

// What `best --format json` prints is what `run --trace` and `show
// --trace` read: the best schedule goes from the database to a run.
TEST(CliTune, TheBestAsJsonReplaysWithRunAndShow) {
  const std::string db = TuneDb("cli_best_json_replay.sqlite");
  const std::string spec = "matmul:M=16,N=16,K=16";
  ASSERT_EQ(RunTunedb("tune -w " + spec + " --trials 4 --no-baseline --db " + db + kSmallTune).exit_code, 0);
  const std::string best = ::testing::TempDir() + "/cli_best.json";
  Result r = RunTunedb("best -w " + spec + " --format json --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ofstream(best) << r.out;
  r = RunTunedb("run -w " + spec + " --trace " + best + " --repeat 1 --min-repeat-ms 1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("status:    ok\n"), std::string::npos) << r.out;
  Result script = RunTunedb("best -w " + spec + " --db " + db);
  Result shown = RunTunedb("show -w " + spec + " --trace " + best);
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  // The same instructions as `best` prints (after its header line).
  EXPECT_NE(shown.out.find(script.out.substr(script.out.find('\n') + 1)), std::string::npos) << shown.out;
  std::ofstream(best) << "{\"median_secs\": 1}";
  r = RunTunedb("run -w " + spec + " --trace " + best);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: " + best +
                       ": a JSON object with no \"trace\" (give a trace, or the output of tunedb best --format json)\n");
}

// `best` prints the best schedule without the lookups nothing uses (the
// postprocessors look up every block's loops and use few of them), and
// that script schedules the workload as the stored trace does.
TEST(CliTune, TheBestScriptLeavesOutUnusedLookupsAndSchedulesAsTheStoredTrace) {
  const std::string db = TuneDb("cli_best_script.sqlite");
  const std::string spec = "matmul:M=16,N=16,K=16";
  ASSERT_EQ(RunTunedb("tune -w " + spec + " --trials 4 --no-baseline --db " + db + kSmallTune).exit_code, 0);
  Result json = RunTunedb("best -w " + spec + " --format json --db " + db);
  ASSERT_EQ(json.exit_code, 0) << json.out;
  Result script = RunTunedb("best -w " + spec + " --db " + db);
  ASSERT_EQ(script.exit_code, 0) << script.out;
  const std::string body = script.out.substr(script.out.find('\n') + 1);
  const std::size_t stored = nlohmann::json::parse(json.out)["trace"][0].size();
  EXPECT_LT(static_cast<std::size_t>(std::count(body.begin(), body.end(), '\n')), stored) << body;
  const std::string json_file = ::testing::TempDir() + "/cli_best_script.json";
  const std::string script_file = ::testing::TempDir() + "/cli_best_script.py";
  std::ofstream(json_file) << json.out;
  std::ofstream(script_file) << body;
  Result from_trace = RunTunedb("show -w " + spec + " --trace " + json_file);
  Result from_script = RunTunedb("show -w " + spec + " --schedule " + script_file);
  ASSERT_EQ(from_trace.exit_code, 0) << from_trace.out;
  ASSERT_EQ(from_script.exit_code, 0) << from_script.out;
  // The same program, and the same script shown under it.
  EXPECT_EQ(from_script.out, from_trace.out);
  EXPECT_NE(from_trace.out.find("\n# trace:\n" + body), std::string::npos) << from_trace.out;
}

// serve refuses what it cannot serve with before it opens anything:
// --threads 100000 started 200,000 threads and never stopped, and a body
// limit of 0 answered every write 413.
TEST(CliServe, RefusesOptionsItCannotServeWith) {
  const std::string db = TuneDb("cli_serve_options.sqlite");
  // An address it cannot bind: were a check gone, the command would fail
  // on the address rather than serve for ever.
  ExpectOneLineRefusals("serve --quiet --host 999.1.1.1", "--db " + db,
                        {{"--port 70000", "--port must be in [0, 65535]"},
                         {"--threads 0", "--threads must be between 1 and 256"},
                         {"--threads 100000", "--threads must be between 1 and 256"},
                         {"--body-limit 0", "--body-limit must be at least 4096 bytes"}});
  EXPECT_FALSE(std::filesystem::exists(db));
  // A file that is no database, where this process may write: no hint to
  // serve it read-only, which could not help.
  std::ofstream(db) << "not a database, and longer than SQLite's header of one hundred bytes, so that SQLite reads "
                       "it and finds no database";
  ExpectOneLineRefusals("serve --quiet --port 0", "--db " + db,
                        {{"", db + ": file is not a database (is it an SQLite database?)"}});
  std::filesystem::remove(db);
}

// train refuses what it cannot do before it trains or stores anything:
// --rounds 0 once reached XGBoost (an error with its stack trace), and an
// unwritable --out was found after the model was stored. With nothing
// held out, it prints and stores no metrics rather than zeros.
TEST(CliTrain, RefusesBadOptionsBeforeStoringAndScoresNothingWithoutAHoldout) {
  std::string db = TuneDb("cli_train_options.sqlite");
  ASSERT_EQ(RunTunedb("tune -w matmul:M=16,N=16,K=16 --trials 8 --no-baseline --db " + db + kSmallTune).exit_code, 0);
  const std::string missing_dir = ::testing::TempDir() + "/cli_train_no_such_dir";
  std::filesystem::remove_all(missing_dir);
  ExpectOneLineRefusals(
      "train", "--db " + db,
      {{"--rounds 0", "--rounds must be at least 1"},
       {"--holdout nan", "--holdout must be in [0, 1)"},
       {"--out " + missing_dir + "/m.json", "--out " + missing_dir + "/m.json: no directory " + missing_dir}});
  const std::int64_t models_before = std::stoll(Sql(db, "SELECT COUNT(*) FROM models"));
  const std::string out = ::testing::TempDir() + "/cli_train_model.json";
  std::filesystem::remove(out);
  Result r = RunTunedb("train --holdout 0 --out " + out + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("held-out records:   0 (no ranking metrics: every record trained the model)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("pairwise accuracy"), std::string::npos) << r.out;
  EXPECT_GT(std::filesystem::file_size(out), 0u);
  EXPECT_EQ(std::stoll(Sql(db, "SELECT COUNT(*) FROM models")), models_before + 1);
  EXPECT_EQ(Sql(db, "SELECT metrics FROM models ORDER BY id DESC LIMIT 1").find("pairwise"), std::string::npos);
}

// One held-out record has no other to be ordered against: the pairwise
// accuracy is none, where it was printed and stored as 0.5, a coin toss.
TEST(CliTrain, APairwiseAccuracyWithoutPairsIsNone) {
  std::string db = TuneDb("cli_train_no_pairs.sqlite");
  ASSERT_EQ(RunTunedb("tune -w matmul:M=8,N=8,K=8 --trials 1 --db " + db + kSmallTune).exit_code, 0);
  Result r = RunTunedb("train --db " + db);  // 2 records, the split holds one out
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("held-out records:   1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pairwise accuracy:  - (no two held-out records of one workload differ in time)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(Sql(db, "SELECT metrics FROM models ORDER BY id DESC LIMIT 1").find("\"pairwise_accuracy\":null"),
            std::string::npos);
}

// The commands that only read a database read a tunedb server's as they
// read a file (--db http://HOST:PORT): stats, records and best show the
// same, and export-tvm and merge copy everything, an imported TVM record's
// own target and arguments included. Here the server serves read-only.
TEST(CliDb, ReadingCommandsReadAServerAsTheyReadAFile) {
  std::string dir = ::testing::TempDir() + "/cli_remote_" + std::to_string(::getpid());
  std::string db = dir + "/served.sqlite", merged = dir + "/merged.sqlite", log = dir + "/serve.log";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir + "/tvm").c_str());
  std::ofstream(dir + "/tvm/database_workload.json") << "[\"77\", \"eJzz\"]\n";
  std::ofstream(dir + "/tvm/database_tuning_record.json")
      << "[0, [[[[\"GetBlock\", [], [\"C\", \"main\"], [\"b0\"]]], []], [0.002, 0.001, 0.003], "
         "{\"kind\": \"llvm\", \"mcpu\": \"x\", \"num-cores\": 2}, [[\"TENSOR\", [8, 8], \"float32\"]]]]\n";
  ASSERT_EQ(RunTunedb("db import-tvm " + dir + "/tvm --db " + db).exit_code, 0);
  ASSERT_EQ(RunTunedb("tune -w matmul:M=16,N=16,K=16 --trials 8 --no-baseline --db " + db + kSmallTune).exit_code, 0);
  Result trained = RunTunedb("train --db " + db);
  ASSERT_EQ(trained.exit_code, 0) << trained.out;
  // 8 records: the model is stored, and the user told a session will not use it.
  EXPECT_NE(trained.out.find("note: a tune session starts from a stored model trained on at least 16 records"),
            std::string::npos)
      << trained.out;

  ServedFile server(db, log);
  ASSERT_FALSE(server.url().empty()) << server.log();
  const std::string& url = server.url();

  for (const std::string& command : {std::string("db stats"), std::string("db records --hash 77"),
                                     std::string("db records -w matmul:M=16,N=16,K=16"),
                                     std::string("best --hash 77 --target \"llvm -mcpu=x -num-cores=2\""),
                                     std::string("best -w matmul:M=16,N=16,K=16 --format json"),
                                     std::string("model list"), std::string("model eval")}) {
    Result from_file = RunTunedb(command + " --db " + db);
    Result from_server = RunTunedb(command + " --db " + url);
    EXPECT_EQ(from_server.exit_code, 0) << command << "\n" << from_server.out;
    std::string file_out = from_file.out, server_out = from_server.out;
    for (std::size_t at = file_out.find(db); at != std::string::npos; at = file_out.find(db, at + url.size())) {
      file_out.replace(at, db.size(), url);  // where the output names its database
    }
    EXPECT_EQ(server_out, file_out) << command;
  }
  ASSERT_EQ(RunTunedb("db export-tvm " + dir + "/from_file --db " + db).exit_code, 0);
  Result exported = RunTunedb("db export-tvm " + dir + "/from_server --db " + url);
  ASSERT_EQ(exported.exit_code, 0) << exported.out;
  for (const char* file : {"/database_workload.json", "/database_tuning_record.json"}) {
    EXPECT_EQ(ReadAll(dir + "/from_server" + file), ReadAll(dir + "/from_file" + file)) << file;
  }
  // Training would store its model where the server refuses it: refused
  // before it trains (it once trained, then failed at the store).
  Result train = RunTunedb("train --db " + url);
  EXPECT_EQ(train.exit_code, 2) << train.out;
  EXPECT_EQ(train.out, "tunedb: error: " + url + ": the server serves its database read-only (tunedb serve --read-only)\n");
  Result merge = RunTunedb("db merge " + url + " --db " + merged);
  ASSERT_EQ(merge.exit_code, 0) << merge.out;
  EXPECT_EQ(RunTunedb("db merge " + db + " --db " + merged).out,
            "merged 0 new records from " + db + " into " + merged + " (9 records now)\n");
  EXPECT_EQ(RunTunedb("db check --db " + merged).exit_code, 0);
  ASSERT_EQ(RunTunedb("db export-tvm " + dir + "/from_merged --db " + merged).exit_code, 0);
  EXPECT_NE(ReadAll(dir + "/from_merged/database_tuning_record.json").find("[[\"TENSOR\",[8,8],\"float32\"]]"),
            std::string::npos);

  EXPECT_TRUE(server.Stop()) << server.log();
}

// `db merge FILE --db http://...` pushes a file's records to a server
// through its write routes (with the server's token), as a merge into a
// file would store them; what a server cannot store is refused before
// anything is written, and the commands that work on the file itself say
// so for a server's URL.
TEST(CliDb, MergesIntoAServer) {
  std::string dir = ::testing::TempDir() + "/cli_merge_remote_" + std::to_string(::getpid());
  std::string tuned = dir + "/tuned.sqlite", served = dir + "/served.sqlite", copy = dir + "/copy.sqlite";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir + "/tvm").c_str());
  std::ofstream(dir + "/token") << "s3cret\n";
  ASSERT_EQ(RunTunedb("tune -w matmul:M=16,N=16,K=16 --trials 8 --no-baseline --db " + tuned + kSmallTune).exit_code, 0);
  ServedFile server(served, dir + "/serve.log", "--token-file " + dir + "/token");
  ASSERT_FALSE(server.url().empty()) << server.log();
  const std::string& url = server.url();

  Result r = RunTunedb("db merge " + tuned + " --db " + url);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("HTTP 401"), std::string::npos) << r.out;
  // train, without the token and with a wrong one: refused before training.
  std::ofstream(dir + "/wrong") << "guess\n";
  ExpectOneLineRefusals("train --db " + url, "",
                        {{"", url + ": the server's write routes need its token: give it with --token-file FILE"},
                         {"--token-file " + dir + "/wrong",
                          url + ": the server refuses this token: give the server's token with --token-file FILE"}});
  r = RunTunedb("db merge " + tuned + " --db " + url + " --token-file " + dir + "/token");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "merged 8 new records from " + tuned + " into " + url + " (8 records now)\n");
  r = RunTunedb("db merge " + tuned + " --db " + url + " --token-file " + dir + "/token");
  EXPECT_EQ(r.out, "merged 0 new records from " + tuned + " into " + url + " (8 records now)\n");
  // The server holds what a file merged the same way holds.
  ASSERT_EQ(RunTunedb("db merge " + tuned + " --db " + copy).exit_code, 0);
  for (const std::string& command : {std::string("db records -w matmul:M=16,N=16,K=16 --limit 100"),
                                     std::string("best -w matmul:M=16,N=16,K=16 --format json")}) {
    Result from_copy = RunTunedb(command + " --db " + copy), from_server = RunTunedb(command + " --db " + url);
    EXPECT_EQ(from_server.exit_code, 0) << command << "\n" << from_server.out;
    EXPECT_EQ(from_server.out, from_copy.out) << command;
  }

  // A TVM workload has no program for the server to store: refused, and
  // nothing of that file is merged.
  std::ofstream(dir + "/tvm/database_workload.json") << "[\"77\", \"eJzz\"]\n";
  std::ofstream(dir + "/tvm/database_tuning_record.json")
      << "[0, [[[[\"GetBlock\", [], [\"C\", \"main\"], [\"b0\"]]], []], [0.002], "
         "{\"kind\": \"llvm\", \"mcpu\": \"x\", \"num-cores\": 2}, [[\"TENSOR\", [8, 8], \"float32\"]]]]\n";
  ASSERT_EQ(RunTunedb("db import-tvm " + dir + "/tvm --db " + copy).exit_code, 0);
  r = RunTunedb("db merge " + copy + " --db " + url + " --token-file " + dir + "/token");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: " + copy +
                       " holds workload 77, imported from TVM, and a server stores only tunedb workloads: merge into a "
                       "file instead\n");
  EXPECT_NE(RunTunedb("db stats --db " + url).out.find("records:   8\n"), std::string::npos);

  r = RunTunedb("db check --db " + url);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: " + url +
                       " is a server: db check reads the database file itself; run it where the server's file is, "
                       "with --db FILE\n");
  r = RunTunedb("db import-tvm " + dir + "/tvm --db " + url);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "tunedb: error: " + url +
                       " is a server: db import-tvm imports into a file; import into one, then db merge it into the "
                       "server\n");

  // A later session on the file times its best kernels again (its final
  // check). Merged again, those timings join the records the server and
  // the copy hold, rather than making second records of them. The check
  // takes all 16 records: of the default 4, all could be the second
  // session's, whose search starts from the first's best (so it failed
  // once, in CI on a loaded machine).
  ASSERT_EQ(RunTunedb("tune -w matmul:M=16,N=16,K=16 --trials 8 --no-baseline --population 32 --repeat 2 "
                      "--min-repeat-ms 1 --seed 2 --final-check 16 --db " + tuned)
                .exit_code,
            0);
  for (const std::string& into : {url, copy}) {
    r = RunTunedb("db merge " + tuned + " --db " + into + " --token-file " + dir + "/token");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(" records already in " + into + " took the timings " + tuned + " added to them later\n"),
              std::string::npos)
        << r.out;
  }
  Result listed = RunTunedb("db records -w matmul:M=16,N=16,K=16 --limit 100 --db " + tuned);
  EXPECT_EQ(RunTunedb("db records -w matmul:M=16,N=16,K=16 --limit 100 --db " + url).out, listed.out);
  // The copy numbers its records after the TVM one: all but the ids.
  auto without_ids = [](const std::string& listing) {
    std::istringstream lines(listing);
    std::string out, line;
    while (std::getline(lines, line)) {
      std::size_t id_end = line.find_first_not_of(' ');
      id_end = id_end == std::string::npos ? line.size() : line.find(' ', id_end);
      out += (id_end == std::string::npos ? "" : line.substr(id_end)) + "\n";
    }
    return out;
  };
  EXPECT_EQ(without_ids(RunTunedb("db records -w matmul:M=16,N=16,K=16 --limit 100 --db " + copy).out),
            without_ids(listed.out));

  EXPECT_TRUE(server.Stop()) << server.log();
  EXPECT_EQ(RunTunedb("db check --db " + served).exit_code, 0);
}

// Ctrl-C while e2e tunes its layers stops the tuning after the chunk in
// flight; the model then runs with the best schedules measured, and the
// outputs are still checked. It used to kill the command.
TEST(CliE2e, CtrlCStopsTheTuningAndTheModelRunsWithWhatWasMeasured) {
  std::string db = TuneDb("cli_e2e_interrupt.sqlite");
  std::string log = ::testing::TempDir() + "/cli_e2e_interrupt.log";
  pid_t pid = StartTunedbUntil(
      "", "e2e mlp --batch-size 16 --in 32 --hidden 16 --out 8 --trials 512 --repeat 2 --db " + db, log, "16/512 trials");
  ASSERT_GT(pid, 0);
  ASSERT_NE(ReadAll(log).find("16/512 trials"), std::string::npos) << ReadAll(log);
  kill(-pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  std::string out = ReadAll(log);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("interrupted after "), std::string::npos) << out;
  EXPECT_NE(out.find("outputs: identical"), std::string::npos) << out;
  EXPECT_NE(out.find("end to end, tuned kernels:"), std::string::npos) << out;
}

// e2e as a compiler would run it: the schedules of a small MLP tuned into
// a file, then served read-only and taken from the server.
TEST(CliE2e, TakesItsSchedulesFromAServer) {
  std::string db = TuneDb("cli_e2e_served.sqlite"), log = ::testing::TempDir() + "/cli_e2e_serve.log";
  std::string mlp = "e2e mlp --batch-size 16 --in 32 --hidden 16 --out 8 --repeat 2 ";
  ASSERT_EQ(RunTunedb(mlp + "--trials 8 --db " + db).exit_code, 0);
  ServedFile server(db, log);
  ASSERT_FALSE(server.url().empty()) << server.log();
  Result r = RunTunedb(mlp + "--db " + server.url());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("tuning"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outputs: identical"), std::string::npos) << r.out;
}

// `model eval` scores a model on every record, some of which trained it,
// and apart on the records committed after it was stored, the only ones it
// cannot have seen; it called all of them "held-out".
TEST(CliDb, ModelEvalScoresTheRecordsSinceTheModelApart) {
  std::string db = TuneDb("cli_model_eval.sqlite");
  const std::string tune = "tune --workload matmul:M=16,N=16,K=16 --trials 8 --batch 8 --db " + db;
  ASSERT_EQ(RunTunedb(tune + kSmallTune).exit_code, 0);
  Result r = RunTunedb("train --rounds 3 --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = Sql(db, "SELECT MAX(id) FROM models");
  r = RunTunedb("model eval --model " + id + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\nrecords scored:     9\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("held-out records:   9"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on the 0 records committed since it was stored, which it cannot have trained on:\n"
                       "held-out records:   0 (none yet)\n"),
            std::string::npos)
      << r.out;
  ASSERT_EQ(RunTunedb(tune + " --population 32 --repeat 2 --min-repeat-ms 1 --seed 2").exit_code, 0);
  r = RunTunedb("model eval --model " + id + " --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::smatch since;
  ASSERT_TRUE(std::regex_search(r.out, since, std::regex("on the (\\d+) records committed since it was stored[^\n]*\n"
                                                          "held-out records:   (\\d+)\n")))
      << r.out;
  EXPECT_GT(std::stoi(since[1]), 0);
  EXPECT_EQ(since[1], since[2]);
}

// A stored cost model is checked against the checksum saved with it: a
// changed byte of its XGBoost JSON once loaded without a word, and XGBoost
// then read outside the trees when it predicted.
TEST(CliDb, CheckNamesADamagedModel) {
  std::string db = TuneDb("cli_damaged_model.sqlite");
  Result r = RunTunedb("tune --workload matmul:M=16,N=16,K=16 --trials 8 --batch 8 --db " + db + kSmallTune);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = RunTunedb("train --rounds 3 --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = Sql(db, "SELECT MAX(id) FROM models");
  // db check on the file: its exit code, and a text its report holds.
  auto expect_check = [&](int exit_code, const std::string& text) {
    Result check = RunTunedb("db check --db " + db);
    EXPECT_EQ(check.exit_code, exit_code) << check.out;
    EXPECT_NE(check.out.find(text), std::string::npos) << check.out;
  };
  expect_check(0, " records, 1 models\nno problems found\n");
  Sql(db, "UPDATE models SET blob = replace(blob, '\"split_indices\":[', '\"split_indices\":[1,')");
  expect_check(1, "1 problem(s):\n  model " + id + ": the model is damaged: it does not match its checksum "
                  "(retrain it)\n");
  r = RunTunedb("model eval --db " + db);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("does not match its checksum"), std::string::npos) << r.out;
  // A model with no checksum (saved before models had one) is not damage,
  // but no tuner starts from it: check says so and still passes.
  Sql(db, "UPDATE models SET blob = replace(blob, '\"checksum\":', '\"was_checksum\":')");
  expect_check(0, " records, 1 models\n1 model(s) not used by this tunedb (the next tunedb train or tune stores "
                  "one that is):\n  model " + id + ": the model has no checksum");
  expect_check(0, "no problems found\n");
}

}  // namespace
