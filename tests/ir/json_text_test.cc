#include "ir/json_text.h"

#include <gtest/gtest.h>

#include <string>

namespace tunedb::ir {
namespace {

std::string Nested(int levels, char open, char close) {
  return std::string(static_cast<std::size_t>(levels), open) + std::string(static_cast<std::size_t>(levels), close);
}

std::string NestedObjects(int levels) {
  std::string text;
  for (int k = 0; k < levels; ++k) text += "{\"a\": ";
  return text + "1" + std::string(static_cast<std::size_t>(levels), '}');
}

// Copied or printed, a document of a million nested arrays overflowed the
// stack; up to kMaxJsonNesting levels it reads as it always did.
TEST(JsonTextTest, NestingPastTheLimitIsRefused) {
  for (const std::string& text : {Nested(kMaxJsonNesting, '[', ']'), NestedObjects(kMaxJsonNesting)}) {
    nlohmann::json j = ParseJson(text);
    EXPECT_EQ(j.dump(), nlohmann::json::parse(text).dump());
    EXPECT_FALSE(ParseJsonOrDiscarded(text).is_discarded());
  }
  for (const std::string& text : {Nested(kMaxJsonNesting + 1, '[', ']'), NestedObjects(kMaxJsonNesting + 1),
                                  Nested(1000000, '[', ']'), "[1, " + NestedObjects(5000) + "]"}) {
    try {
      ParseJson(text);
      FAIL() << text.substr(0, 40);
    } catch (const JsonTextError& e) {
      EXPECT_STREQ(e.what(), "arrays and objects nest deeper than 1024 levels");
    }
    EXPECT_TRUE(ParseJsonOrDiscarded(text).is_discarded());
  }
  // Brackets inside strings are text.
  std::string in_string = "[\"" + Nested(5000, '[', ']') + "\"]";
  EXPECT_EQ(ParseJson(in_string)[0].get<std::string>().size(), 10000u);
}

TEST(JsonTextTest, NotJsonIsRefusedWithTheParsersMessage) {
  try {
    ParseJson("[1, 2");
    FAIL();
  } catch (const JsonTextError& e) {
    EXPECT_STREQ(e.what(), "[json.exception.parse_error.101] parse error at line 1, column 6: syntax error while "
                           "parsing array - unexpected end of input; expected ']'");
  }
  EXPECT_TRUE(ParseJsonOrDiscarded("[1, 2").is_discarded());
  EXPECT_EQ(ParseJsonOrDiscarded("{\"a\": [1, {}]}").dump(), "{\"a\":[1,{}]}");
}

}  // namespace
}  // namespace tunedb::ir
