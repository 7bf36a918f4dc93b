// Mutated inputs: what users hand tunedb as text (workload files, traces in
// JSON, schedule scripts) is parsed or run, or refused with the module's
// own error naming where, never with another exception or a crash; and a
// mutated trace or script that still runs computes what the unscheduled
// program computes. Inputs are mutated at random from valid ones (bytes
// cut, inserted and changed; JSON values swapped, dropped and retyped),
// with fixed seeds.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ir/schedule/schedule.h"
#include "ir/schedule/script.h"
#include "ir/schedule/trace.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"
#include "tests/ir/schedule/random_scheduler.h"
#include "tests/ir/schedule/schedule_test_util.h"

namespace tunedb::ir {
namespace {

const char* kWorkloadSources[] = {
    "# a linear layer with ReLU\n"
    "input X: f32[16, 32]\ninput W: f32[8, 32]\n"
    "Y[i, j] = sum(k in 32) X[i, k] * W[j, k]\nZ[i, j] = max(Y[i, j], 0.0)\noutput Z\n",
    "input A: f32[8, 24]\nM[i] = max(k in 24) A[i, k]\nE[i, j] = exp(A[i, j] - M[i])\n"
    "S[i] = sum(k in 24) E[i, k]\nO[i, j] = E[i, j] / S[i]\noutput O\n",
    "input A: f32[1, 6, 6, 3]\n"
    "P[n, h, w, c] = select(h >= 1 && h < 5 && w >= 1 && w < 5, A[n, h - 1, w - 1, c], 0.0)\n"
    "Q[n, h, w, c] = P[n, h, w, c] > 0.5 ? sqrt(P[n, h, w, c]) : f32(i32(P[n, h, w, c]) % 3)\noutput Q\n",
};

const std::string kPieces[] = {"[", "]", "(", ")", ",", ":", "=", "+", "-", "*", "/", "%", "?", "&&", "||", "!",
                               "<", ">=", "#", "\n", "sum", "max(", "in", "input", "output", "f32", "i64", "bool",
                               "exp", "select(", "0", "-1", "0.5", "1e40", "99999999999999999999", "i", "k",
                               "\"", "\\", std::string("\0", 1), "\xc3\xa9"};

std::string Mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits; ++e) {
    if (s.empty()) {
      s = kPieces[pick(std::size(kPieces))];
      continue;
    }
    std::size_t at = pick(s.size());
    switch (pick(4)) {
      case 0: s.erase(at, 1 + pick(6)); break;
      case 1: s.insert(at, kPieces[pick(std::size(kPieces))]); break;
      case 2: s[at] = static_cast<char>(32 + pick(95)); break;
      default: s.resize(at); break;
    }
  }
  return s;
}

TEST(MutatedInput, WorkloadTextParsesOrNamesWhereItIsWrong) {
  std::mt19937_64 rng(7);
  int parsed = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = Mutate(kWorkloadSources[i % std::size(kWorkloadSources)], rng);
    try {
      ParseWorkloadText(text, "case.tw");
      ++parsed;
    } catch (const WorkloadParseError& e) {
      ++refused;
      ASSERT_EQ(std::string(e.what()).rfind("case.tw:", 0), 0u) << e.what();
    } catch (const std::exception& e) {
      FAIL() << "not a WorkloadParseError: " << e.what() << "\nfor:\n" << text;
    }
  }
  // Both outcomes occur, or the mutations test nothing.
  EXPECT_GT(parsed, 30);
  EXPECT_GT(refused, 1000);
}

// Traces of random schedules of small workloads, as JSON.
std::vector<std::pair<std::string, nlohmann::json>> RandomTraces() {
  const char* workloads[] = {"matmul:M=12,N=10,K=8", "dense_bias_relu:B=6,IN=10,OUT=4",
                             "conv2d_nhwc:N=1,H=6,W=5,CI=3,CO=4,KH=3,KW=3,stride=1,pad=1", "softmax:M=4,N=12"};
  std::vector<std::pair<std::string, nlohmann::json>> traces;
  for (const char* spec : workloads) {
    PrimFunc f = BuildWorkload(spec).func;
    for (std::uint64_t seed = 0; seed < 6; ++seed) {
      Schedule sch(f, seed);
      testing::RandomScheduler random(sch, seed);
      random.Steps(10);
      traces.push_back({spec, sch.trace().ToJson()});
    }
  }
  return traces;
}

constexpr std::int64_t kMaxInterpretedBytes = std::int64_t{1} << 26;

// Every array inside `j` (the trace's instruction lists, inputs, attributes
// and decisions), for picking one to mutate.
void Arrays(nlohmann::json& j, std::vector<nlohmann::json*>& out) {
  if (!j.is_array()) return;
  if (!j.empty()) out.push_back(&j);
  for (nlohmann::json& e : j) Arrays(e, out);
}

TEST(MutatedInput, ATraceReplaysToTheSameResultOrIsRefusedByInstruction) {
  std::mt19937_64 rng(11);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const nlohmann::json values[] = {0, -1, 1, 2, 3, 5, 1LL << 40, -(1LL << 62), 1.5, "x", "l3", "b1", "v4",
                                   nullptr, true, nlohmann::json::array(), nlohmann::json::array({0, 0}),
                                   nlohmann::json::object()};
  std::vector<std::pair<std::string, nlohmann::json>> traces = RandomTraces();
  int replayed = 0, refused = 0;
  for (int i = 0; i < 1500; ++i) {
    const auto& [spec, original] = traces[pick(traces.size())];
    nlohmann::json j = original;
    int edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < edits; ++e) {
      std::vector<nlohmann::json*> arrays;
      Arrays(j, arrays);
      if (arrays.empty()) break;
      nlohmann::json& a = *arrays[pick(arrays.size())];
      std::size_t at = pick(a.size());
      switch (pick(4)) {
        case 0: a[at] = values[pick(std::size(values))]; break;
        case 1: a.erase(at); break;
        case 2: a.insert(a.begin() + static_cast<std::ptrdiff_t>(at), values[pick(std::size(values))]); break;
        default: std::swap(a[at], a[a.size() - 1]); break;
      }
    }
    std::string text = j.dump();
    if (pick(10) == 0) text.resize(pick(text.size()));
    PrimFunc f = BuildWorkload(spec).func;
    try {
      Schedule sch = ReplayTrace(f, Trace::FromJsonText(text), 0);
      ++replayed;
      // A padding far past the shape makes a valid program too large to
      // run (within limits.h, but terabytes).
      if (testing::LargestBufferBytes(sch.func()) > kMaxInterpretedBytes) continue;
      std::string why = testing::SameResult(f, sch.func());
      ASSERT_EQ(why, "") << spec << "\n" << text;
    } catch (const ScheduleError& e) {
      ++refused;
      // "trace JSON: ..." or "trace instruction 12 (Split): ...".
      ASSERT_EQ(std::string(e.what()).rfind("trace", 0), 0u) << e.what();
    } catch (const std::exception& e) {
      FAIL() << "not a ScheduleError: " << e.what() << "\nfor " << spec << ":\n" << text;
    }
  }
  EXPECT_GT(replayed, 100);
  EXPECT_GT(refused, 300);
}

// Schedule scripts (docs/SCHEDULES.md): one stochastic, one fixed.
const char* kScripts[] = {
    "def stochastic_schedule_mm(sch: tvm.tir.Schedule):\n"
    "    b0 = sch.get_block(\"C\")\n"
    "    i, j, k = sch.get_loops(b0)\n"
    "    j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))\n"
    "    sch.reorder(i, j0, k, j1)\n"
    "    sch.decompose_reduction(b0, j0)\n"
    "    return sch\n",
    "b0 = sch.get_block(name=\"C\", func_name=\"main\")\n"
    "l1, l2, l3 = sch.get_loops(block=b0)\n"
    "l4, l5 = sch.split(loop=l1, factors=[None, 4], preserve_unit_iters=True)\n"
    "l6, l7 = sch.split(loop=l2, factors=[2, 6])\n"
    "sch.reorder(l4, l6, l3, l5, l7)\n"
    "b8 = sch.cache_write(block=b0, write_buffer_index=0, storage_scope=\"local\")\n"
    "sch.reverse_compute_at(block=b8, loop=l6, preserve_unit_loops=True)\n"
    "ls = sch.get_loops(b0)\n"
    "sch.parallel(ls[0])\n"
    "sch.vectorize(l7)\n"
    "sch.annotate(block_or_loop=l3, ann_key=\"pragma_auto_unroll_max_step\", ann_val=16)\n",
};

TEST(MutatedInput, AScheduleScriptRunsToTheSameResultOrNamesItsLine) {
  std::mt19937_64 rng(13);
  PrimFunc f = BuildWorkload("matmul:M=10,N=12,K=8").func;
  int ran = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string script = Mutate(kScripts[i % std::size(kScripts)], rng);
    Schedule sch(f, static_cast<std::uint64_t>(i));
    try {
      RunScheduleScript(sch, script, "s.py");
      ++ran;
      ASSERT_EQ(testing::SameResult(f, sch.func()), "") << script;
    } catch (const ScheduleError& e) {
      ++refused;
      ASSERT_EQ(std::string(e.what()).rfind("s.py:", 0), 0u) << e.what();
    } catch (const std::exception& e) {
      FAIL() << "not a ScheduleError: " << e.what() << "\nfor:\n" << script;
    }
  }
  EXPECT_GT(ran, 50);
  EXPECT_GT(refused, 1000);
}

}  // namespace
}  // namespace tunedb::ir
