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

// Splits "path?a=1&b=x%20y" into a decoded path and query map. nullopt on a
// malformed escape.
std::optional<std::pair<std::string, std::map<std::string, std::string>>> ParseTarget(std::string_view target);

// {"error": message} with the status.
HttpResponse JsonError(int status, const std::string& message);

}  // namespace tunedb::api
