// The server's view of HTTP, independent of Beast: a parsed request, a
// response, and the small parsing helpers the routes need (Boost 1.74 has
// no Boost.URL). Routes are pure functions from HttpRequest to HttpResponse,
// testable without sockets.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tunedb::api {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string, percent-decoded
  std::map<std::string, std::string> query;
  std::string authorization;  // the Authorization header, verbatim
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Allow, ...)
};

// Percent-decoding ('+' is a space in query strings only). nullopt on a
// malformed escape.
std::optional<std::string> PercentDecode(std::string_view s, bool plus_is_space);

// A request target split into a decoded path and query map, or why it
// cannot be (a malformed escape, a parameter given twice: which of two
// targets a client meant is not the server's guess to make).
struct ParsedTarget {
  std::string path;
  std::map<std::string, std::string> query;
  std::string error;  // empty when the target is well formed
};
ParsedTarget ParseTarget(std::string_view target);

// The text of a response body. Bytes that are not UTF-8 become U+FFFD
// rather than an exception: an error message quotes the client's path or
// query, and a damaged database can hold any bytes, and either once threw
// out of the handler and took the server down.
std::string JsonText(const nlohmann::json& body);

// {"error": message} with the status.
HttpResponse JsonError(int status, const std::string& message);

}  // namespace tunedb::api
