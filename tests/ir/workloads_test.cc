#include "ir/workloads.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/flops.h"
#include "ir/json.h"
#include "ir/structural.h"

namespace tunedb::ir {
namespace {

TEST(WorkloadsTest, EveryBuiltinBuildsWithItsDefaults) {
  for (const WorkloadDef& def : BuiltinWorkloads()) {
    Workload w = BuildWorkload(def.name);
    EXPECT_EQ(w.name, def.name);
    EXPECT_FALSE(w.func.params.empty()) << def.name;
    EXPECT_GE(CollectBlocks(w.func).size(), 2u) << def.name;
  }
}

TEST(WorkloadsTest, SpecIsCanonicalizedWithDefaults) {
  EXPECT_EQ(BuildWorkload("matmul").spec, "matmul:M=512,N=512,K=512");
  EXPECT_EQ(BuildWorkload("matmul:K=64").spec, "matmul:M=512,N=512,K=64");
  EXPECT_EQ(BuildWorkload("matmul:K=64,M=2").func.params[0]->shape, (std::vector<std::int64_t>{2, 64}));
  // The same workload spelled two ways has one hash.
  EXPECT_EQ(WorkloadHash(BuildWorkload("matmul:M=512").func), WorkloadHash(BuildWorkload("matmul").func));
}

TEST(WorkloadsTest, ConvShapesFollowStrideAndPadding) {
  Workload w = BuildWorkload("conv2d_nhwc:H=9,W=9,CI=2,CO=3,KH=3,KW=3,stride=2,pad=1");
  EXPECT_EQ(w.func.params.back()->shape, (std::vector<std::int64_t>{1, 5, 5, 3}));
  Workload unpadded = BuildWorkload("conv2d_nhwc:H=8,W=8,CI=2,CO=3,pad=0");
  EXPECT_EQ(unpadded.func.params.back()->shape, (std::vector<std::int64_t>{1, 6, 6, 3}));
  EXPECT_THROW(BuildWorkload("conv2d_nhwc:H=2,W=2,KH=5,pad=0"), IrError);
}

void ExpectError(const std::string& spec, const std::string& message) {
  try {
    BuildWorkload(spec);
    FAIL() << "expected an error for " << spec;
  } catch (const IrError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(WorkloadsTest, BadSpecsNameTheProblem) {
  ExpectError("matmull", "unknown workload 'matmull' (built-in workloads: matmul, batch_matmul, "
                         "dense, dense_bias_relu, conv2d_nhwc, depthwise_conv2d_nhwc, softmax, reduce_sum, "
                         "as NAME:P=V,... e.g. matmul:M=128,N=128,K=128; or give the path of a workload file)");
  // TVM-style call syntax is a common first guess; the message shows the real one.
  ExpectError("matmul(M=4)", "unknown workload 'matmul(M=4)' (built-in workloads: matmul, batch_matmul, "
                             "dense, dense_bias_relu, conv2d_nhwc, depthwise_conv2d_nhwc, softmax, reduce_sum, "
                             "as NAME:P=V,... e.g. matmul:M=128,N=128,K=128; or give the path of a workload file)");
  ExpectError("matmul:Q=4", "workload matmul has no parameter 'Q' (parameters: M, N, K)");
  ExpectError("matmul:M=abc", "workload matmul parameter M: 'abc' is not a positive integer");
  ExpectError("matmul:M", "workload matmul: expected NAME=VALUE, got 'M'");
  ExpectError("matmul:M=0", "workload matmul parameter M must be at least 1");
  ExpectError("matmul:M=", "workload matmul parameter M: missing value");
  ExpectError("matmul:M=512,N=512,M=256", "workload matmul: parameter M is given twice");
  // Accepted, it would be stored as another name of the same workload.
  ExpectError("matmul:M=4,", "workload matmul: expected NAME=VALUE after the last ',' of 'matmul:M=4,'");
  ExpectError("matmul:M=4,,K=2", "workload matmul: expected NAME=VALUE, got ''");
}

// A path that is no workload file is named as a path: the list of built-in
// workloads, which "unknown workload" gives, does not help there.
TEST(WorkloadsTest, APathThatIsNoWorkloadFileIsNamedAsOne) {
  auto error = [](const std::string& spec) {
    try {
      LoadWorkload(spec);
    } catch (const IrError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::string dir = ::testing::TempDir();
  EXPECT_EQ(error(dir), dir + " is a directory, not a workload file");
  EXPECT_EQ(error("/dev/null"), "/dev/null is not a regular file, not a workload file");
  EXPECT_EQ(error(dir + "/no_such.tw"), "no workload file " + dir + "/no_such.tw (no such file)");
  EXPECT_EQ(error("no_such.tw#C"), "no workload file no_such.tw (no such file)");
  EXPECT_EQ(error("no_such.json"), "no workload file no_such.json (no such file)");
  EXPECT_EQ(error("matmull").rfind("unknown workload 'matmull' (built-in workloads: ", 0), 0u);
}

TEST(WorkloadsTest, LoadWorkloadReadsFiles) {
  std::string path = ::testing::TempDir() + "/tiny.tw";
  {
    std::ofstream out(path);
    out << "input A: f32[4, 4]\nB[i, j] = A[j, i]\n";
  }
  Workload w = LoadWorkload(path);
  EXPECT_EQ(w.name, "tiny");
  EXPECT_EQ(w.spec, path);
  EXPECT_EQ(w.func.params.size(), 2u);
  std::remove(path.c_str());
  EXPECT_THROW(LoadWorkload(path), IrError);  // no file: read as a spec, which is unknown
}

// A program in tunedb's JSON form is a workload too (a compiler's export,
// or `tunedb show --json` of an unscheduled workload), with the hash the
// same program has from its spec; a scheduled program is refused.
TEST(WorkloadsTest, LoadWorkloadReadsAJsonProgram) {
  const Workload matmul = BuildWorkload("matmul:M=8,N=16,K=4");
  const std::string path = ::testing::TempDir() + "/program.json";
  std::ofstream(path) << ProgramToJson(matmul.func, 2);
  std::vector<Workload> loaded = LoadWorkloads(path);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].name, "program");
  EXPECT_EQ(WorkloadHash(loaded[0].func), WorkloadHash(matmul.func));
  std::ofstream(path) << "{\"workload\": \"matmul\", \"program\": " << ProgramToJson(matmul.func) << "}";
  EXPECT_EQ(WorkloadHash(LoadWorkload(path).func), WorkloadHash(matmul.func));
  auto expect_error = [&](const std::string& text, const std::string& message) {
    std::ofstream(path) << text;
    try {
      LoadWorkload(path);
      FAIL() << text;
    } catch (const IrError& e) {
      EXPECT_EQ(std::string(e.what()), path + ": " + message);
    }
  };
  expect_error("{\"program\": {}, \"trace\": []}",
               "this is a scheduled program (tunedb show --json with a schedule); a workload is the program before "
               "scheduling");
  expect_error("  { \"buffers\": [",
               "starts with '{' but is not valid JSON: [json.exception.parse_error.101] parse error at line 1, column "
               "17: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal");
  // Printed again, a document this deep overflowed the stack.
  expect_error("{\"program\": " + std::string(100000, '[') + std::string(100000, ']') + "}",
               "starts with '{' but is not valid JSON: arrays and objects nest deeper than 1024 levels");
  std::remove(path.c_str());
}

// The workload files shipped under bench/ are the inputs of figures in
// bench/RESULTS.md: each must load, and the FLOP counts state what they
// compute (2 m n k for the products; per element, the counter's own
// convention for the others).
TEST(WorkloadsTest, EveryShippedWorkloadFileLoads) {
  const std::map<std::string, std::int64_t> expected_flops = {
      {"attention_scores", 2LL * 12 * 128 * 128 * 64},
      {"column_max", 4096LL * 512},
      {"column_sum", 2048LL * 2048},
      {"conv2d_nchw", 2LL * 64 * 56 * 56 * 64 * 3 * 3},
      {"conv1x1_nchw", 2LL * 512 * 14 * 14 * 256 + 512 * 14 * 14},  // and the bias
      {"depthwise_nchw", 2LL * 512 * 14 * 14 * 3 * 3},
      {"dense_gelu", 2LL * 128 * 3072 * 768 + 128 * 3072 * 14},
      {"layer_norm", 2949120},
      {"matmul_tn", 2LL * 512 * 512 * 512},
      {"nchw_to_nhwc", 0},
      {"transpose", 0},
      {"transpose_add", 2048LL * 2048},
      {"reverse_rows", 0},
      {"concat_rows", 0},  // its select picks a value, computing none
      {"gelu", 9437184},
      {"log1p", 3145728},
      // One max or add per window element; the average's scale one more.
      {"max_pool_nchw", 64LL * 56 * 56 * 2 * 2},
      {"avg_pool_nchw", 64LL * 56 * 56 * (2 * 2 + 1)},
      {"upsample_nchw", 0},
      {"pixel_shuffle", 0},
      {"reflect_pad", 0},  // its selects pick indices, not values
      // The multiply and the add of every term, masked or not (a select
      // counts its larger side).
      {"trmm", 2LL * 512 * 512 * 512},
      {"causal_attention_pv", 2LL * 8 * 256 * 256 * 64},
      {"syrk", 2LL * 512 * 512 * 256},
      // The max, the subtraction and exp, the sum's add and the division, of
      // every element.
      {"causal_softmax", 5LL * 8 * 256 * 256},
      // The scores' and the product's multiply and add of every term; the
      // max, the subtraction, multiply and exp, the sum's add of every
      // score; a division per output.
      {"causal_attention", 2 * 2LL * 8 * 256 * 256 * 64 + 5LL * 8 * 256 * 256 + 8 * 256 * 64},
      // Two products; GELU's nine operations on each hidden element.
      {"transformer_ffn", 2 * 2LL * 128 * 1024 * 256 + 9LL * 128 * 1024},
      // Two convolutions' multiply-adds; the ReLU's max, on the side of a
      // select over every padded element; the residual add.
      {"resnet_block", 2 * 2LL * 28 * 28 * 64 * 9 * 64 + 30LL * 30 * 64 + 28LL * 28 * 64},
      // Two products; the bias add and the max, then the bias add.
      {"two_dense_layers", 2LL * 128 * 256 * 784 + 2LL * 128 * 256 + 2LL * 128 * 128 * 256 + 128 * 128},
      // Two products of 256 x 512 x 16 multiply-adds each.
      {"low_rank_product", 2 * 2LL * 256 * 512 * 16},
      {"conv_transpose", 2LL * 32 * 56 * 56 * 64 * 4 * 4},
      // Two multiplies and an add or a subtraction on the side that runs.
      {"rope", 32LL * 128 * 128 * 3},
      // A multiply and an add per element into the sum; a multiply, a
      // division, an add and a reciprocal square root per output.
      {"channel_rms_norm", 3LL * 37 * 29 * 29 * (2 + 4)},
  };
  std::map<std::string, std::int64_t> found;
  for (const char* dir : {"/bench/workloads", "/bench/schedules"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::string(TUNEDB_SOURCE_DIR) + dir)) {
      if (entry.path().extension() != ".tw") continue;
      Workload w = LoadWorkload(entry.path().string());
      EXPECT_FALSE(CollectBlocks(w.func).empty()) << w.name;
      found[w.name] = CountFlops(w.func);
    }
  }
  EXPECT_EQ(found, expected_flops);
}

}  // namespace
}  // namespace tunedb::ir
