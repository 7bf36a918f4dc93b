#include "ir/json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/structural.h"
#include "ir/workloads.h"

namespace tunedb::ir {
namespace {

TEST(JsonTest, EveryWorkloadRoundTripsExactly) {
  for (const WorkloadDef& def : BuiltinWorkloads()) {
    PrimFunc f = BuildWorkload(def.name).func;
    std::string text = ProgramToJson(f);
    PrimFunc g = ProgramFromJson(text);
    EXPECT_TRUE(StructuralEqual(f, g)) << def.name;
    EXPECT_EQ(ProgramToJson(g), text) << def.name;        // names and all
    EXPECT_EQ(PrintProgram(g), PrintProgram(f)) << def.name;
  }
}

TEST(JsonTest, PrettyAndCompactFormsParseAlike) {
  PrimFunc f = BuildWorkload("softmax:M=2,N=3").func;
  EXPECT_EQ(ProgramToJson(ProgramFromJson(ProgramToJson(f, 2))), ProgramToJson(f));
}

TEST(JsonTest, InfinityAndOddFloatsSurvive) {
  PrimFunc f = BuildWorkload("softmax:M=2,N=3").func;  // max-reduction init is -inf
  std::string text = ProgramToJson(f);
  EXPECT_NE(text.find("\"-inf\""), std::string::npos);
  EXPECT_TRUE(StructuralEqual(ProgramFromJson(text), f));
}

TEST(JsonTest, VariablesKeepTheirIdentity) {
  PrimFunc f = ProgramFromJson(ProgramToJson(BuildWorkload("matmul:M=2,N=2,K=2").func));
  const BlockNode* c = CollectBlocks(f)[1];
  const auto* loop_i = static_cast<const ForNode*>(f.root().body.get());
  EXPECT_EQ(c->bindings[0], loop_i->loop_var);  // the same node, not an equal copy
}

void ExpectError(const std::string& text, const std::string& message) {
  try {
    ProgramFromJson(text);
    FAIL() << "expected an error";
  } catch (const IrError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(JsonTest, ErrorsNameThePath) {
  nlohmann::json j = nlohmann::json::parse(ProgramToJson(BuildWorkload("matmul:M=2,N=2,K=2").func));
  ExpectError("{", std::string("program JSON is not valid JSON: ") +
                       "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error while "
                       "parsing object key - unexpected end of input; expected string literal");
  ExpectError(R"({"format": 1e999})", "program JSON is not valid JSON: [json.exception.out_of_range.406] number "
                                      "overflow parsing '1e999'");

  nlohmann::json bad = j;
  bad["body"]["body"]["type"] = "loop";
  ExpectError(bad.dump(), "program JSON at body.body.type: unknown statement type 'loop'");

  bad = j;
  bad["body"]["body"]["extent"] = 0;
  ExpectError(bad.dump(), "program JSON at body.body.extent: loop extent must be at least 1");

  bad = j;
  bad["params"][0] = 99;
  ExpectError(bad.dump(), "program JSON at params[0]: buffer index 99 is out of range");

  bad = j;
  bad["buffers"][0]["dtype"] = "float16";
  ExpectError(bad.dump(), "program JSON at buffers[0].dtype: unknown data type 'float16' (expected "
                          "float32, float64, int32, int64 or bool)");

  bad = j;
  bad["body"]["body"]["body"]["body"]["body"]["body"]["value"] = {"add", {"var", 0}, {"float", "float32", 1.0}};
  ExpectError(bad.dump(), "program JSON at body.body.body.body.body.body.value: add: operand types differ "
                          "(int32 and float32)");

  // tunedb writes a float32 constant's exact value; one float32 cannot hold
  // would become infinity or 0.
  for (double v : {1e39, -1e39, 1e-50}) {
    bad = j;
    bad["body"]["body"]["body"]["body"]["body"]["body"]["value"] = {"float", "float32", v};
    ExpectError(bad.dump(), "program JSON at body.body.body.body.body.body.value[2]: number " +
                                nlohmann::json(v).dump() + " is out of range for float32");
  }

  bad = j;
  bad.erase("vars");
  ExpectError(bad.dump(), "program JSON: missing field 'vars'");

  bad = j;
  bad["body"]["body"]["body"]["body"]["body"]["iter_vars"][2]["extent"] = 0;
  ExpectError(bad.dump(), "program JSON at body.body.body.body.body.iter_vars[2].extent: iteration extent must be "
                          "at least 1");

  // Sizes that would overflow int64 byte and FLOP counts (ir/limits.h).
  bad = j;
  bad["buffers"][0]["shape"] = {1 << 30, 1 << 30};
  ExpectError(bad.dump(), "program JSON: buffer 'A' of shape [1073741824, 1073741824] float32 is larger than "
                          "tunedb's limit of 2^48 bytes (256 TiB)");

  bad = j;
  bad["body"]["body"]["body"]["body"]["body"]["iter_vars"][2]["extent"] = std::int64_t{1} << 62;
  ExpectError(bad.dump(), "program JSON: block 'C' iterates more than tunedb's limit of 2^48 times");

  // An expression nested past kMaxExprDepth, which every pass would recurse
  // through, is refused where the level too many starts.
  bad = j;
  nlohmann::json value = {"float", "float32", 1.0};
  for (int level = 1; level <= kMaxExprDepth; ++level) value = {"add", value, {"float", "float32", 1.0}};
  bad["body"]["body"]["body"]["body"]["body"]["body"]["value"] = value;
  ExpectError(bad.dump(), "program JSON at body.body.body.body.body.body.value: an expression nested deeper than "
                          "256 levels");

  bad = j;
  bad["format"] = "tunedb.program/9";
  ExpectError(bad.dump(), "program JSON at format: unsupported format \"tunedb.program/9\" (this build reads "
                          "tunedb.program/1)");
}

}  // namespace
}  // namespace tunedb::ir
