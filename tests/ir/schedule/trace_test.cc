#include "ir/schedule/trace.h"

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/schedule/schedule.h"
#include "ir/schedule/script.h"
#include "ir/workloads.h"
#include "tests/ir/schedule/random_scheduler.h"
#include "tests/ir/schedule/schedule_test_util.h"

namespace tunedb::ir {
namespace {

// A stochastic tiled matmul with every kind of recorded value.
Schedule Tiled(const PrimFunc& f, std::uint64_t seed) {
  Schedule sch(f, seed);
  BlockRV c = sch.GetBlock("C");
  auto loops = sch.GetLoops(c);
  auto ti = sch.SamplePerfectTile(loops[0], 2, 8);
  auto tj = sch.SamplePerfectTile(loops[1], 2, 8);
  auto i = sch.Split(loops[0], {ti[0], ti[1]});
  auto j = sch.Split(loops[1], {tj[0], tj[1]});
  sch.Reorder({i[0], j[0], loops[2], i[1], j[1]});
  BlockRV cw = sch.CacheWrite(c, 0, "local");
  sch.ReverseComputeAt(cw, j[0], true);
  ExprRV unroll = sch.SampleCategorical({0, 16, 64}, {0.3, 0.3, 0.4});
  BlockRV root = sch.GetBlock("root");
  sch.Annotate(root, "meta_schedule.unroll_explicit", unroll);
  sch.Annotate(c, "meta_schedule.tiling_structure", std::string("SSRSRS"));
  sch.EnterPostproc();
  sch.Unannotate(root, "meta_schedule.unroll_explicit");
  LoopRV fused = sch.Fuse({i[0], j[0]});
  sch.Parallel(fused);
  sch.Annotate(fused, "pragma_auto_unroll_max_step", unroll);
  sch.DecomposeReduction(c, loops[2]);
  return sch;
}

PrimFunc Mm() { return BuildWorkload("matmul:M=16,N=16,K=8").func; }

TEST(TraceTest, JsonLayoutIsTvms) {
  Schedule sch = Tiled(Mm(), 1);
  nlohmann::json j = sch.trace().ToJson();
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0][0], nlohmann::json::parse(R"(["GetBlock", [], ["C", "main"], ["b0"]])"));
  EXPECT_EQ(j[0][1], nlohmann::json::parse(R"(["GetLoops", ["b0"], [], ["l1", "l2", "l3"]])"));
  EXPECT_EQ(j[0][2][0], "SamplePerfectTile");
  EXPECT_EQ(j[0][2][1], nlohmann::json::parse(R"(["l1"])"));
  EXPECT_EQ(j[0][2][2], nlohmann::json::parse("[2, 8]"));
  EXPECT_EQ(j[0][4], nlohmann::json::parse(R"(["Split", ["l1", "v4", "v5"], [1, 0], ["l8", "l9"]])"));
  // Strings among inputs are quoted inside the JSON string, as TVM writes them.
  bool found = false;
  for (const auto& inst : j[0]) {
    if (inst[0] == "Annotate" && inst[2][0] == "meta_schedule.tiling_structure") {
      EXPECT_EQ(inst[1][1], "\"SSRSRS\"");
      found = true;
    }
  }
  EXPECT_TRUE(found);
  // Decisions: [index, decision] for each sampling instruction.
  EXPECT_EQ(j[1].size(), 3u);
  EXPECT_EQ(j[1][0][0], 2);
}

TEST(TraceTest, JsonRoundTripAndReplay) {
  PrimFunc f = Mm();
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    Schedule sch = Tiled(f, seed);
    std::string text = sch.trace().ToJson().dump();
    Trace parsed = Trace::FromJsonText(text);
    EXPECT_EQ(parsed.ToJson().dump(), text);
    // Replay with another seed: decisions, not the seed, decide.
    Schedule replay = ReplayTrace(f, parsed, seed + 77);
    EXPECT_EQ(PrintProgram(replay.func()), PrintProgram(sch.func()));
    EXPECT_EQ(replay.trace().ToJson().dump(), text);
    EXPECT_SAME_RESULT(f, replay);
  }
}

TEST(TraceTest, ReplayIsDeterministic) {
  PrimFunc f = Mm();
  Trace t = Tiled(f, 5).trace();
  EXPECT_EQ(PrintProgram(ReplayTrace(f, t, 1).func()), PrintProgram(ReplayTrace(f, t, 2).func()));
}

TEST(TraceTest, ChangedDecisionReplays) {
  PrimFunc f = Mm();
  Trace t = Tiled(f, 1).trace();
  std::vector<std::size_t> sampling = t.SamplingInstructions();
  ASSERT_EQ(sampling.size(), 3u);
  t.decisions[sampling[0]] = nlohmann::json({4, 4});
  t.decisions[sampling[2]] = 2;
  Schedule sch = ReplayTrace(f, t, 0);
  EXPECT_NE(PrintProgram(sch.func()).find("for i_0_j_0_fused in T.parallel"), std::string::npos);
  EXPECT_NE(PrintProgram(sch.func()).find("\"pragma_auto_unroll_max_step\": 64"), std::string::npos)
      << PrintProgram(sch.func());
  EXPECT_EQ(sch.trace().decisions.at(sampling[0]), nlohmann::json({4, 4}));
  EXPECT_SAME_RESULT(f, sch);
  // A tile decision that no longer divides is repaired, not refused.
  t.decisions[sampling[0]] = nlohmann::json({3, 5});
  Schedule repaired = ReplayTrace(f, t, 0);
  EXPECT_EQ(repaired.trace().decisions.at(sampling[0]), nlohmann::json({1, 16}));
  EXPECT_SAME_RESULT(f, repaired);
}

TEST(TraceTest, TracesTransferToOtherShapes) {
  // The same computation at another shape: replay repairs the tiles.
  Trace t = Tiled(Mm(), 3).trace();
  PrimFunc other = BuildWorkload("matmul:M=24,N=12,K=8").func;
  Schedule sch = ReplayTrace(other, t, 0);
  EXPECT_SAME_RESULT(other, sch);
}

// Two schedules of different blocks, made apart, replay as one: how the
// best schedules of a program's parts are composed onto the whole.
TEST(TraceTest, ConcatenatedTracesReplayOneAfterAnother) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=8,IN=6,OUT=8").func;
  auto split_first_loop = [&](Schedule& sch, const std::string& block) {
    auto loops = sch.GetLoops(sch.GetBlock(block));
    auto tiles = sch.SamplePerfectTile(loops[0], 2, 8);
    sch.Split(loops[0], {tiles[0], tiles[1]});
  };
  Schedule a(f, 1), b(f, 2), both(f, 0);
  split_first_loop(a, "T_matmul_NT");
  split_first_loop(b, "T_relu");
  split_first_loop(both, "T_matmul_NT");
  split_first_loop(both, "T_relu");
  Trace joined = ConcatTraces({a.trace(), b.trace()});
  ASSERT_EQ(joined.insts.size(), a.trace().insts.size() + b.trace().insts.size());
  // Each keeps its own decisions.
  std::vector<std::size_t> sampling = joined.SamplingInstructions();
  ASSERT_EQ(sampling.size(), 2u);
  EXPECT_EQ(joined.decisions.at(sampling[0]), a.trace().decisions.begin()->second);
  EXPECT_EQ(joined.decisions.at(sampling[1]), b.trace().decisions.begin()->second);
  // The same instructions made in one schedule, with a's and b's draws.
  Trace expected = both.trace();
  expected.decisions[expected.SamplingInstructions()[0]] = a.trace().decisions.begin()->second;
  expected.decisions[expected.SamplingInstructions()[1]] = b.trace().decisions.begin()->second;
  Schedule replayed = ReplayTrace(f, joined, 9);
  EXPECT_EQ(PrintProgram(replayed.func()), PrintProgram(ReplayTrace(f, expected, 9).func()));
  EXPECT_EQ(replayed.trace().ToJson(), ReplayTrace(f, expected, 9).trace().ToJson());
  EXPECT_SAME_RESULT(f, replayed);
}

TEST(TraceTest, ScriptRoundTrip) {
  PrimFunc f = Mm();
  Schedule sch = Tiled(f, 2);
  std::string script = sch.trace().AsScript();
  EXPECT_NE(script.find("v4, v5 = sch.sample_perfect_tile(loop=l1, n=2, max_innermost_factor=8, decision=["),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("sch.annotate(block_or_loop=b0, ann_key=\"meta_schedule.tiling_structure\", ann_val=\"SSRSRS\")"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("sch.enter_postproc()"), std::string::npos);
  Schedule again(f, 99);
  RunScheduleScript(again, script);
  EXPECT_EQ(again.trace().ToJson(), sch.trace().ToJson());
  EXPECT_EQ(PrintProgram(again.func()), PrintProgram(sch.func()));
}

// A list of one is printed as TVM prints it, "b2, = ...", and read back
// as the block in it: "b2 = ..." named the list, and the next primitive
// given b2 refused it ("a list is not allowed here"), so the script that
// `tunedb best` printed for a dense schedule did not run.
TEST(TraceTest, AListOfOneRoundTripsThroughTheScript) {
  PrimFunc f = BuildWorkload("dense_bias_relu:B=4,IN=8,OUT=4").func;
  Schedule sch(f, 0);
  BlockRV add = sch.GetBlock("T_add");
  std::vector<BlockRV> consumers = sch.GetConsumers(add);
  ASSERT_EQ(consumers.size(), 1u);
  sch.ReverseComputeInline(consumers[0]);
  std::string script = sch.trace().AsScript();
  EXPECT_NE(script.find("b1, = sch.get_consumers(block=b0)\nsch.reverse_compute_inline(block=b1)\n"), std::string::npos)
      << script;
  Schedule again(f, 0);
  RunScheduleScript(again, script);
  EXPECT_EQ(again.trace().ToJson(), sch.trace().ToJson());
  EXPECT_EQ(PrintProgram(again.func()), PrintProgram(sch.func()));
  EXPECT_SAME_RESULT(f, again);
}

TEST(TraceTest, SimplifiedDropsDeadLookupsAndPostproc) {
  PrimFunc f = Mm();
  Schedule sch(f, 0);
  sch.GetBlock("C");                           // unused lookup
  BlockRV c = sch.GetBlock("C");
  auto loops = sch.GetLoops(c);
  sch.SampleCategorical({1, 2}, {0.5, 0.5});  // unused sample
  sch.Split(loops[0], {std::int64_t{4}, std::int64_t{4}});
  sch.EnterPostproc();
  sch.Parallel(loops[1]);
  Trace full = sch.trace().Simplified(false);
  EXPECT_EQ(full.insts.size(), 5u);  // GetBlock, GetLoops, Split, EnterPostproc, Parallel
  EXPECT_TRUE(full.decisions.empty());
  Trace design = sch.trace().Simplified(true);
  ASSERT_EQ(design.insts.size(), 3u);
  EXPECT_EQ(design.insts.back().kind, "Split");
  EXPECT_EQ(PrintProgram(ReplayTrace(f, full, 0).func()), PrintProgram(sch.func()));
}

TEST(TraceTest, ReadsTvmSpellings) {
  // TVM >= 0.24 writes GetSBlock; older Split attrs have one element; None as
  // "None"; booleans as integers.
  const char* json = R"([[["GetSBlock", [], ["C", "main"], ["b0"]],
      ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
      ["Split", ["l2", "None", 4], [1], ["l4", "l5"]],
      ["Reorder", ["l1", "l4", "l3", "l5"], [], []],
      ["DecomposeReduction", ["b0", "l4"], [], ["b6"]]], []])";
  Trace t = Trace::FromJsonText(json);
  EXPECT_EQ(t.insts[0].kind, "GetBlock");
  PrimFunc f = Mm();
  Schedule sch = ReplayTrace(f, t, 0);
  EXPECT_SAME_RESULT(f, sch);
  EXPECT_EQ(sch.trace().AsScript(),
            "b0 = sch.get_block(name=\"C\", func_name=\"main\")\n"
            "l1, l2, l3 = sch.get_loops(block=b0)\n"
            "l4, l5 = sch.split(loop=l2, factors=[None, 4], preserve_unit_iters=True, disable_predication=False)\n"
            "sch.reorder(l1, l4, l3, l5)\n"
            "b6 = sch.decompose_reduction(block=b0, loop=l4)\n");
}

void ExpectJsonError(const std::string& json, const std::string& message) {
  try {
    Trace::FromJsonText(json);
    FAIL() << "expected an error for " << json;
  } catch (const ScheduleError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(TraceTest, MalformedJsonIsRefusedClearly) {
  ExpectJsonError("{}", "trace JSON: expected [[instructions...], [[index, decision]...]]");
  ExpectJsonError(R"([[["Frobnicate", [], [], []]], []])", "trace JSON: instruction 0: unknown instruction kind 'Frobnicate'");
  ExpectJsonError(R"([[["GetLoops", ["b9"], [], ["l0"]]], []])",
                  "trace JSON: instruction 0 (GetLoops): input 'b9' is not a random variable defined by an earlier "
                  "instruction");
  ExpectJsonError(R"([[["GetBlock", [], ["C", "main"], ["x0"]]], []])",
                  "trace JSON: instruction 0 (GetBlock): output 'x0' does not start with b, l or v");
  ExpectJsonError(R"([[["GetBlock", [], ["C", "main"], ["b0"]]], [[0, 3]]])",
                  "trace JSON: decision for instruction 0 (GetBlock), which does not sample");
  ExpectJsonError(R"([[["GetBlock", [], ["C"]]], []])", "trace JSON: instruction 0: expected [kind, inputs, attrs, outputs]");
  ExpectJsonError("[[", std::string("trace JSON is not valid JSON: [json.exception.parse_error.101] parse error at line 1, "
                                    "column 3: syntax error while parsing value - unexpected end of input; expected '[', "
                                    "'{', or a literal"));
  // Copied and printed again, a document this deep overflowed the stack.
  ExpectJsonError("[[], " + std::string(100000, '[') + std::string(100000, ']') + "]",
                  "trace JSON is not valid JSON: arrays and objects nest deeper than 1024 levels");
  // A number past a double's range (found by fuzz/trace_json.cc).
  ExpectJsonError("[[], 1e999]", "trace JSON is not valid JSON: [json.exception.out_of_range.406] number overflow "
                                 "parsing '1e999'");
}

TEST(TraceTest, ReplayOnTheWrongProgramNamesTheInstruction) {
  Trace t = Tiled(Mm(), 1).trace();
  try {
    ReplayTrace(BuildWorkload("softmax:M=4,N=8").func, t, 0);
    FAIL();
  } catch (const ScheduleError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("trace instruction 0 (GetBlock): get_block: no block named 'C'", 0), 0u)
        << e.what();
  }
}

// ReplayTrace does not undo a failed primitive while it replays (the
// schedule is thrown away); the schedule it returns does again: random
// primitives on it that fail leave its program as it was. (Without the
// undo, 28 of these failures changed the program, such as a split that
// would visit a reduction twice, refused after it was made.)
TEST(TraceTest, TheReplayedScheduleUndoesAFailedPrimitive) {
  int failed = 0;
  for (const char* spec : {"matmul:M=16,N=16,K=8", "softmax:M=4,N=8", "dense_bias_relu:B=4,IN=8,OUT=4",
                           "conv2d_nhwc:N=1,H=6,W=6,CI=4,CO=4,KH=3,KW=3,stride=1,pad=1", "reduce_sum:M=2,N=64"}) {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      Schedule sch = ReplayTrace(BuildWorkload(spec).func, Trace{}, 0);
      testing::RandomScheduler random(sch, seed);
      for (int step = 0; step < 60; ++step) {
        const std::string before = PrintProgram(sch.func());
        try {
          random.Step();
        } catch (const ScheduleError& e) {
          ++failed;
          ASSERT_EQ(PrintProgram(sch.func()), before) << spec << ", seed " << seed << ": " << e.what();
        }
      }
    }
  }
  EXPECT_GE(failed, 100);
}

}  // namespace
}  // namespace tunedb::ir
