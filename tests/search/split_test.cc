#include "search/split.h"

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/workloads.h"

namespace tunedb::search {
namespace {

ir::Workload FromText(const std::string& name, const std::string& text) {
  std::string file = ::testing::TempDir() + "/" + name + ".tw";
  std::ofstream(file) << text;
  return ir::LoadWorkload(file);
}

std::vector<std::string> Stages(const std::vector<ir::Workload>& parts) {
  std::vector<std::string> names;
  for (const ir::Workload& p : parts) names.push_back(p.spec.substr(p.spec.rfind('@') + 1));
  return names;
}

// bench/RESULTS.md session 81's causal attention: its two products are
// compute-bound (32 FLOPs per byte each), the masked exp and the row sums
// are not (0.75 and 0.25).
TEST(SplitTest, AnAttentionsTwoProductsAreComputeBoundSoItIsSplit) {
  ir::Workload attention = FromText("split_attention",
      "input Q: f32[8, 256, 64]\ninput K: f32[8, 256, 64]\ninput V: f32[8, 256, 64]\n"
      "S[h, i, j in 256] = sum(d in 64) j <= i ? Q[h, i, d] * K[h, j, d] : 0.0\n"
      "M[h, i] = max(j in 256) j <= i ? S[h, i, j] : -1e30\n"
      "E[h, i, j] = j <= i ? exp((S[h, i, j] - M[h, i]) * 0.125) : 0.0\n"
      "Z[h, i] = sum(j in 256) E[h, i, j]\n"
      "O[h, i, d] = sum(j in 256) j <= i ? E[h, i, j] * V[h, j, d] : 0.0\n"
      "Y[h, i, d] = O[h, i, d] / Z[h, i]\n");
  EXPECT_EQ(ComputeBoundParts(attention), (std::vector<std::string>{"S", "O+Y"}));
  EXPECT_EQ(Stages(PartsToTuneFirst(attention, Split::kAuto)), (std::vector<std::string>{"S", "M+E", "Z", "O+Y"}));
  EXPECT_TRUE(PartsToTuneFirst(attention, Split::kOff).empty());
}

// A softmax's parts are memory-bound: its best kernel fuses them, so it is
// split only when asked.
TEST(SplitTest, ASoftmaxIsSplitOnlyWhenAsked) {
  ir::Workload softmax = ir::LoadWorkload("softmax:M=128,N=1024");
  ASSERT_EQ(ir::WorkloadParts(softmax).size(), 2u);
  EXPECT_TRUE(ComputeBoundParts(softmax).empty());
  EXPECT_TRUE(PartsToTuneFirst(softmax, Split::kAuto).empty());
  EXPECT_EQ(PartsToTuneFirst(softmax, Split::kOn).size(), 2u);
}

// One compute-bound part is not enough: a product and its row norm are one
// heavy part and a light one, better fused than split.
TEST(SplitTest, OneComputeBoundPartIsNotSplit) {
  ir::Workload product_then_norm = FromText("split_one_heavy",
      "input X: f32[64, 64]\ninput A: f32[64, 64]\n"
      "T[i, j] = sum(k in 64) X[i, k] * A[k, j]\n"
      "N[i] = sum(j in 64) T[i, j] * T[i, j]\n"
      "Y[i, j] = T[i, j] / N[i]\n");
  EXPECT_EQ(ComputeBoundParts(product_then_norm), (std::vector<std::string>{"T"}));
  EXPECT_TRUE(PartsToTuneFirst(product_then_norm, Split::kAuto).empty());

  // A second product that does under a tenth of the work (8.6%) does not
  // count, though it does 10 FLOPs per byte.
  ir::Workload small_second = FromText("split_small_second",
      "input X: f32[256, 256]\ninput A: f32[256, 256]\ninput B: f32[256, 24]\n"
      "T[i, j] = sum(k in 256) X[i, k] * A[k, j]\n"
      "Y[i, j] = sum(k in 256) T[i, k] * B[k, j]\n");
  EXPECT_EQ(ComputeBoundParts(small_second), (std::vector<std::string>{"T"}));

  ir::Workload matmul = ir::LoadWorkload("matmul:M=256,N=256,K=256");
  EXPECT_TRUE(ComputeBoundParts(matmul).empty()) << "one part: nothing to split";
  EXPECT_TRUE(PartsToTuneFirst(matmul, Split::kOn).empty());
}

// A low-rank chain, (X A^T) B^T: two products whose reductions are short.
// At rank 8 each does 3.8 FLOPs per byte and the chain is split; at rank 4,
// 1.95, no more than a softmax's stages, and it is not (search/split.h).
TEST(SplitTest, ALowRankChainIsSplitFromRankEight) {
  auto low_rank = [](int rank) {
    std::string r = std::to_string(rank);
    return FromText("split_rank_" + r,
        "input X: f32[256, 512]\ninput A: f32[" + r + ", 512]\ninput B: f32[512, " + r + "]\n"
        "T[i, j] = sum(k in 512) X[i, k] * A[j, k]\n"
        "Y[i, j] = sum(k in " + r + ") T[i, k] * B[j, k]\n");
  };
  EXPECT_EQ(ComputeBoundParts(low_rank(8)), (std::vector<std::string>{"T", "Y"}));
  EXPECT_EQ(PartsToTuneFirst(low_rank(8), Split::kAuto).size(), 2u);
  EXPECT_TRUE(ComputeBoundParts(low_rank(4)).empty());
  EXPECT_TRUE(PartsToTuneFirst(low_rank(4), Split::kAuto).empty());
}

}  // namespace
}  // namespace tunedb::search
