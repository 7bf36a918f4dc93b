#include "ir/verify.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/json.h"
#include "ir/schedule/schedule.h"
#include "ir/schedule/script.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

using nlohmann::json;

// matmul 2x2x2 as JSON: buffers A, B, C (0-2); vars i, j, k (0-2) of the
// loops and v_i, v_j, v_k (3-5) of block C, the innermost statement.
json Matmul() { return json::parse(ProgramToJson(BuildWorkload("matmul:M=2,N=2,K=2").func)); }
json& BlockC(json& program) { return program["body"]["body"]["body"]["body"]["body"]; }

std::string ErrorOf(const json& program) {
  try {
    ProgramFromJson(program.dump());
  } catch (const IrError& e) {
    return e.what();
  }
  return "no error";
}

TEST(VerifyTest, EveryWorkloadAndScheduledProgramIsWellFormed) {
  for (const WorkloadDef& def : BuiltinWorkloads()) EXPECT_NO_THROW(VerifyProgram(BuildWorkload(def.name).func));
  Schedule sch(BuildWorkload("dense_bias_relu:B=8,IN=16,OUT=8").func, 0);
  RunScheduleScript(sch, R"(
b0 = sch.get_block("T_matmul_NT")
i, j, k = sch.get_loops(b0)
k0, k1 = sch.split(k, factors=[None, 4])
rf = sch.rfactor(k1, 2)
c = sch.cache_write(rf, 0, "local")
i, j, ka, kb = sch.get_loops(rf)
sch.reverse_compute_at(c, j)
sch.decompose_reduction(rf, ka)
)");
  EXPECT_NO_THROW(VerifyProgram(sch.func()));
}

TEST(VerifyTest, ABufferOutsideItsAllocationIsNamed) {
  json p = Matmul();
  p["buffers"].push_back({{"name", "T"}, {"dtype", "float32"}, {"shape", {2, 2}}});
  BlockC(p)["body"]["value"][1][1] = 3;  // loads T, which nothing allocates
  EXPECT_EQ(ErrorOf(p), "program JSON: block 'C': loads from buffer T, which is neither a parameter nor allocated by "
                        "an enclosing block");
}

TEST(VerifyTest, AVariableOutsideItsLoopOrBlockIsNamed) {
  json p = Matmul();
  BlockC(p)["bindings"][2] = {"var", 3};  // v_k bound to v_i, which is C's own
  EXPECT_EQ(ErrorOf(p), "program JSON: block 'C': the binding of v_k uses variable v_i, which no enclosing loop or "
                        "block binds");
  p = Matmul();
  p["body"]["body"]["var"] = 1;  // the outer loop binds j, and so does the next one
  EXPECT_EQ(ErrorOf(p), "program JSON: block 'root': a loop binds j, which an enclosing loop or block already binds");
}

TEST(VerifyTest, LoopAndIterationVariablesAreIntegers) {
  json p = Matmul();
  p["vars"][0]["dtype"] = "float32";
  EXPECT_EQ(ErrorOf(p), "program JSON: block 'root': loop variable i is float32, not an integer");
  p = Matmul();
  p["vars"].push_back({{"name", "w"}, {"dtype", "int64"}});
  BlockC(p)["iter_vars"][0]["var"] = 6;
  EXPECT_EQ(ErrorOf(p), "program JSON: block 'C': iteration variable w is int64 but its binding is int32");
  p = Matmul();
  BlockC(p)["predicate"] = {"int", "int32", 1};
  EXPECT_EQ(ErrorOf(p), "program JSON: block 'C': the predicate is not bool");
}

// A JSON program is held to the language's int32 rule (ir/limits.h), and
// an int32 variable counts at most 2^31 values.
TEST(VerifyTest, Int32ArithmeticStaysInsideInt32) {
  json p = Matmul();
  p["body"]["body"]["extent"] = 3000000000;
  EXPECT_EQ(ErrorOf(p), "program JSON: block 'root': loop variable i is int32 but counts 3000000000 values; make it "
                        "int64");
  p = Matmul();
  // C[v_i * 2000000000 * 2, v_j]: v_i is 0 or 1.
  BlockC(p)["body"]["indices"][0] = {"mul", {"mul", {"var", 3}, {"int", "int32", 2000000000}}, {"int", "int32", 2}};
  EXPECT_EQ(ErrorOf(p), "program JSON: block 'C': a store index has an int32 part that ranges over 0..4000000000, "
                        "outside int32; compute it in int64");
}

// Found by fuzz/program_json.cc: a range of int32 start and int64 extent
// was read, and then printing the program threw from its min + extent.
TEST(VerifyTest, ARegionHasARangePerDimensionOfOneIntegerType) {
  json p = Matmul();
  BlockC(p)["reads"][0]["ranges"][1][1] = {"int", "int64", 1};
  EXPECT_EQ(ErrorOf(p), "program JSON: block 'C': a region of A has a range whose start is int32 and whose extent is "
                        "int64; both must be one integer type");
  p = Matmul();
  BlockC(p)["writes"][0]["ranges"].erase(1);
  EXPECT_EQ(ErrorOf(p), "program JSON: block 'C': a region of C has 1 ranges for 2 dimensions");
}

}  // namespace
}  // namespace tunedb::ir
