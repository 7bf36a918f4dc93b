#include "ir/schedule/script.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"
#include "tests/ir/schedule/schedule_test_util.h"

namespace tunedb::ir {
namespace {

PrimFunc Mm() { return BuildWorkload("matmul:M=32,N=32,K=32").func; }

TEST(ScriptTest, TheLecturesStochasticSchedule) {
  const char* script = R"(
def stochastic_schedule_mm(sch: tvm.tir.Schedule):
    b0 = sch.get_block("C")
    i, j, k = sch.get_loops(b0)
    j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(b0, j0)
    return sch
)";
  PrimFunc f = Mm();
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    Schedule sch(f, seed);
    RunScheduleScript(sch, script, "mm.py");
    EXPECT_SAME_RESULT(f, sch);
    EXPECT_LE(sch.trace().decisions.begin()->second[1].get<int>(), 16);
  }
}

TEST(ScriptTest, PythonFeatures) {
  // Star unpacking, spreading, indexing, keyword and positional arguments,
  // comments, continuation lines inside parentheses.
  const char* script = R"(
b = sch.get_block(name="C", func_name="main")   # a comment
*outer, k = sch.get_loops(b)
parts = sch.split(outer[0],
                  factors=[None, 8])
sch.reorder(*parts, outer[-1], k)
v = sch.sample_categorical(candidates=[0, 16], probs=[0.5, 0.5], decision=1)
sch.annotate(parts[0], "pragma_auto_unroll_max_step", v)
sch.vectorize(loop=outer[1])
)";
  PrimFunc f = Mm();
  Schedule sch(f, 0);
  RunScheduleScript(sch, script);
  std::string text = PrintProgram(sch.func());
  EXPECT_NE(text.find("for i_0 in T.serial(4, annotations={\"pragma_auto_unroll_max_step\": 16}):"), std::string::npos)
      << text;
  EXPECT_NE(text.find("for j in T.vectorized(32):"), std::string::npos) << text;
  EXPECT_SAME_RESULT(f, sch);
}

// A file saved by Windows Notepad starts with a UTF-8 byte-order mark,
// which Python skips; it was "unexpected character" at 1:1.
TEST(ScriptTest, AByteOrderMarkIsSkipped) {
  PrimFunc f = Mm();
  Schedule sch(f, 0);
  RunScheduleScript(sch, "\xEF\xBB\xBF" "b = sch.get_block(\"C\")\ni, j, k = sch.get_loops(b)\nsch.vectorize(j)\n");
  EXPECT_NE(PrintProgram(sch.func()).find("T.vectorized(32)"), std::string::npos);
  EXPECT_SAME_RESULT(f, sch);
}

void ExpectScriptError(const std::string& script, const std::string& message) {
  Schedule sch(Mm(), 0);
  std::string before = PrintProgram(sch.func());
  try {
    RunScheduleScript(sch, script, "s.py");
    FAIL() << "expected an error for:\n" << script;
  } catch (const ScheduleError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(ScriptTest, ErrorsNameTheLine) {
  ExpectScriptError("b0 = sch.get_block(\"C\")\nsch.frob(b0)\n", "s.py:2: unknown schedule method 'frob'");
  ExpectScriptError("b0 = sch.get_block(\"X\")\n", "s.py:1: get_block: no block named 'X' (blocks: root, C)");
  ExpectScriptError("b0 = sch.get_block(\"C\")\ni, j = sch.get_loops(b0)\n",
                    "s.py:2: the call returned 3 values for 2 names");
  ExpectScriptError("b0 = sch.get_block(\"C\")\nsch.split(l9, factors=[2, 16])\n", "s.py:2: 'l9' is not defined");
  ExpectScriptError("b0 = sch.get_block(\"C\")\ni, j, k = sch.get_loops(b0)\nsch.split(i, factors=[3, 3])\n",
                    "s.py:3: split: loop i: the factors multiply to 9, less than the loop extent 32");
  ExpectScriptError("b0 = sch.get_block(\"C\")\nsch.split(loop=b0)\n", "s.py:2: split: missing argument 'factors'");
  ExpectScriptError("b0 = sch.get_block(\"C\")\nl = sch.get_loops(b0)\nsch.parallel(l[99999999999999999999])\n",
                    "s.py:3: bad number '99999999999999999999'");
  ExpectScriptError("b0 = sch.get_block(\"C\", colour=3)\n", "s.py:1: get_block: unexpected argument 'colour'");
  ExpectScriptError("b0 = sch.get_block(\"C\"\n", "s.py:1: expected ')' to close the arguments of get_block, found end of line");
  ExpectScriptError("b0 = sch.get_block('C)\n", "s.py:1: unterminated string");
  // Read (and freed) recursively, 100,000 nested brackets overflowed the stack.
  ExpectScriptError("b0 = sch.get_block(\"C\")\nx = " + std::string(100000, '[') + std::string(100000, ']') + "\n",
                    "s.py:2: brackets nested deeper than 64 levels");
  ExpectScriptError("x = [[[1]]]\ny = " + std::string(65, '(') + "1" + std::string(65, ')') + "\n",
                    "s.py:2: brackets nested deeper than 64 levels");
  // The trace is stored as JSON: an annotation key in Latin-1 would have
  // made it unwritable (found by fuzz/schedule_script.cc).
  ExpectScriptError("b0 = sch.get_block(\"C\")\nsch.annotate(b0, ann_key=\"caf\xe9\", ann_val=1)\n",
                    "s.py:2: a string that is not UTF-8 text");
  ExpectScriptError("b0 = tvm.get_block(\"C\")\n", "s.py:1: calls must be on 'sch' (sch.get_block), not on 'tvm'");
  ExpectScriptError("b0 = sch.get_block(\"C\")\ni, j, k = sch.get_loops(b0)\nsch.parallel(k)\n",
                    "s.py:3: parallel: loop k drives the reduction variable v_k of block 'C'; only loops over spatial "
                    "variables can run in parallel or as vectors");
}

// The schedules shipped under bench/schedules, which the README and
// bench/RESULTS.md point users to, still apply and still compute what
// their workloads compute (at small shapes, for the interpreter). A script
// added there needs a workload here.
TEST(ScriptTest, TheBenchSchedulesComputeWhatTheirWorkloadsDo) {
  const std::map<std::string, std::string> workload_of = {
      {"dense_dot.py", "dense_bias_relu:B=16,IN=64,OUT=16"},
      {"dense_packed.py", "dense_bias_relu:B=16,IN=64,OUT=16"},
      {"elementwise_y.py", "input X: f32[8, 64]\nY[i, j] = 0.5 * X[i, j] * (1 + tanh(X[i, j]))"},
      {"matmul_kblocked.py", "matmul:M=64,N=128,K=64"},
      {"matmul_lecture.py", "matmul:M=32,N=32,K=32"},
      {"matmul_tuned.py", "matmul:M=64,N=128,K=32"},
      {"softmax_fused.py", "softmax:M=8,N=64"},
  };
  int scripts = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TUNEDB_SOURCE_DIR) + "/bench/schedules")) {
    if (entry.path().extension() != ".py") continue;
    std::string name = entry.path().filename().string();
    auto it = workload_of.find(name);
    if (it == workload_of.end()) {
      ADD_FAILURE() << "bench/schedules/" << name << " has no workload in this test";
      continue;
    }
    // A built-in spec, or a program in the workload language.
    PrimFunc f = it->second.rfind("input ", 0) == 0 ? ParseWorkloadText(it->second, name)
                                                     : BuildWorkload(it->second).func;
    std::ostringstream text;
    text << std::ifstream(entry.path()).rdbuf();
    Schedule sch(f, 0);
    RunScheduleScript(sch, text.str(), name);
    SCOPED_TRACE(name);
    EXPECT_SAME_RESULT(f, sch);
    ++scripts;
  }
  EXPECT_EQ(scripts, static_cast<int>(workload_of.size()));
}

}  // namespace
}  // namespace tunedb::ir
