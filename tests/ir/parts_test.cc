#include "ir/parts.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/ndarray.h"
#include "ir/workload_lang.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

// A causal attention in six stages, small: scores, masked row maximum, exp,
// row sums, the product with V, the division.
constexpr const char* kAttention =
    "input Q: f32[2, 8, 4]\n"
    "input K: f32[2, 8, 4]\n"
    "input V: f32[2, 8, 4]\n"
    "S[h, i, j in 8] = sum(d in 4) j <= i ? Q[h, i, d] * K[h, j, d] : 0.0\n"
    "M[h, i] = max(j in 8) j <= i ? S[h, i, j] : -1e30\n"
    "E[h, i, j] = j <= i ? exp((S[h, i, j] - M[h, i]) * 0.5) : 0.0\n"
    "Z[h, i] = sum(j in 8) E[h, i, j]\n"
    "O[h, i, d] = sum(j in 8) j <= i ? E[h, i, j] * V[h, j, d] : 0.0\n"
    "Y[h, i, d] = O[h, i, d] / Z[h, i]\n"
    "output Y\n";

std::vector<std::string> ParamNames(const PrimFunc& f) {
  std::vector<std::string> names;
  for (const Buffer& b : f.params) names.push_back(b->name);
  return names;
}

using Groups = std::vector<std::vector<std::string>>;

TEST(PartsTest, StagesGroupAroundTheirReductions) {
  EXPECT_EQ(StageGroups(ParseWorkloadText(kAttention)), (Groups{{"S"}, {"M", "E"}, {"Z"}, {"O", "Y"}}));
  // Epilogues join the product; a padding (a prologue) joins its reader.
  EXPECT_EQ(StageGroups(BuildWorkload("dense_bias_relu:B=4,IN=8,OUT=4").func).size(), 1u);
  EXPECT_EQ(StageGroups(BuildWorkload("conv2d_nhwc:H=6,W=6,CI=2,CO=2").func).size(), 1u);
  // An elementwise stage of inputs only, read twice, is a group of its own.
  EXPECT_EQ(StageGroups(ParseWorkloadText("input X: f32[4, 4]\n"
                                          "A[i, j] = X[i, j] * 2.0\n"
                                          "R[i] = sum(j in 4) A[i, j]\n"
                                          "C[j] = sum(i in 4) A[i, j]\n"
                                          "output R, C\n")),
            (Groups{{"A"}, {"R"}, {"C"}}));
}

TEST(PartsTest, APartReadsWhatOtherStagesComputeAndReturnsWhatTheyRead) {
  PrimFunc whole = ParseWorkloadText(kAttention);
  PrimFunc me = PartOf(whole, {"M", "E"});
  EXPECT_EQ(ParamNames(me), (std::vector<std::string>{"S", "E"}));  // M stays inside
  ASSERT_EQ(me.root().alloc_buffers.size(), 1u);
  EXPECT_EQ(me.root().alloc_buffers[0]->name, "M");
  // The whole's inputs first, then other stages' results in program order.
  EXPECT_EQ(ParamNames(PartOf(whole, {"O", "Y"})), (std::vector<std::string>{"V", "E", "Z", "Y"}));
  EXPECT_EQ(ParamNames(PartOf(whole, {"S"})), (std::vector<std::string>{"Q", "K", "S"}));
  try {
    PartOf(whole, {"M", "X"});
    FAIL() << "a stage the program does not have";
  } catch (const IrError& e) {
    EXPECT_STREQ(e.what(), "the program has no stage 'X' (stages: S, M, E, Z, O, Y)");
  }
}

// The parts run one after another, each on what the ones before it
// computed, give what the whole program gives.
TEST(PartsTest, ThePartsInTurnComputeWhatTheWholeDoes) {
  PrimFunc whole = ParseWorkloadText(kAttention);
  std::vector<NDArray> args = MakeArguments(whole, 7);
  std::map<std::string, NDArray> values;
  for (std::size_t i = 0; i < whole.params.size(); ++i) values[whole.params[i]->name] = args[i];
  Interpret(whole, args);
  for (const std::vector<std::string>& group : StageGroups(whole)) {
    PrimFunc part = PartOf(whole, group);
    std::vector<NDArray> part_args;
    std::vector<int> outputs = OutputParams(part);
    for (std::size_t i = 0; i < part.params.size(); ++i) {
      bool output = std::find(outputs.begin(), outputs.end(), static_cast<int>(i)) != outputs.end();
      part_args.push_back(output ? NDArray(part.params[i]->dtype, part.params[i]->shape)
                                 : values.at(part.params[i]->name));
    }
    Interpret(part, part_args);
    for (int o : outputs) values[part.params[static_cast<std::size_t>(o)]->name] = part_args[static_cast<std::size_t>(o)];
  }
  const NDArray& expected = args.back();
  const NDArray& actual = values.at("Y");
  ASSERT_EQ(actual.size(), expected.size());
  for (std::int64_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual.GetFloat(i), expected.GetFloat(i), 1e-6 * (1 + std::abs(expected.GetFloat(i)))) << i;
  }
}

TEST(PartsTest, APartIsAWorkloadNamedByItsStages) {
  std::string file = ::testing::TempDir() + "/parts_attention.tw";
  std::ofstream(file) << kAttention;
  std::vector<Workload> parts = WorkloadParts(LoadWorkload(file));
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[1].spec, file + "@M+E");
  EXPECT_EQ(parts[1].name, "parts_attention@M+E");
  // The spec loads the same program again, as `tunedb show` or a resumed
  // session would.
  Workload again = LoadWorkload(parts[1].spec);
  EXPECT_EQ(ParamNames(again.func), (std::vector<std::string>{"S", "E"}));
  EXPECT_TRUE(WorkloadParts(again).empty()) << "one group: no parts";
  EXPECT_TRUE(WorkloadParts(BuildWorkload("matmul:M=4,N=4,K=4")).empty());
  try {
    LoadWorkload(file + "@M+Q");
    FAIL() << "Q is an input, not a stage";
  } catch (const IrError& e) {
    EXPECT_EQ(std::string(e.what()), file + "@M+Q: the program has no stage 'Q' (stages: S, M, E, Z, O, Y)");
  }
  for (const char* empty : {"@", "@S++E", "@S+"}) {
    try {
      LoadWorkload(file + empty);
      FAIL() << empty;
    } catch (const IrError& e) {
      EXPECT_EQ(std::string(e.what()),
                file + empty + ": a part is its stages' names joined by '+' (SPEC@A+B); one is empty");
    }
  }
}

}  // namespace
}  // namespace tunedb::ir
