// Parsing JSON text that comes from outside the process: a file, a request
// body, a database row, a server's answer.
//
// nlohmann::json parses and destroys a document without recursion, but
// copies, compares and prints it recursively, a stack frame per level: a
// program of 100,000 nested expression arrays, read and printed again,
// overflowed the stack of `tunedb show` and of the server it was posted
// to. tunedb's own documents nest a few levels, a program a few hundred at
// most (kMaxExprDepth levels of expression, ir/expr.h), so a text nested
// deeper than kMaxJsonNesting is refused before it is parsed.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tunedb::ir {

inline constexpr int kMaxJsonNesting = 1024;

// A text that is not JSON, or not JSON tunedb reads (nested too deep). The
// message is nlohmann::json's, or says how deep the text nests.
class JsonTextError : public std::runtime_error {
 public:
  explicit JsonTextError(const std::string& message) : std::runtime_error(message) {}
};

// Whether `text` nests arrays and objects deeper than kMaxJsonNesting, in
// one pass without recursion and without parsing it: for text another
// parser reads (XGBoost's model JSON).
bool JsonNestsTooDeep(std::string_view text);

// The text parsed; JsonTextError when it is not valid JSON or nests arrays
// and objects deeper than kMaxJsonNesting.
nlohmann::json ParseJson(std::string_view text);

// The same, with a discarded value (is_discarded()) for what ParseJson
// refuses: nlohmann::json::parse(text, nullptr, false) with the bound.
nlohmann::json ParseJsonOrDiscarded(std::string_view text);

}  // namespace tunedb::ir
