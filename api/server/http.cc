#include "api/server/http.h"

#include <nlohmann/json.hpp>

namespace tunedb::api {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;  // "%" or "%4" at the end
      int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

ParsedTarget ParseTarget(std::string_view target) {
  ParsedTarget out;
  std::size_t q = target.find('?');
  auto path = PercentDecode(target.substr(0, q), false);
  if (!path) {
    out.error = "malformed URL escape in " + std::string(target);
    return out;
  }
  out.path = *path;
  if (q != std::string_view::npos) {
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
      std::size_t amp = rest.find('&');
      std::string_view pair = rest.substr(0, amp);
      rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
      if (pair.empty()) continue;
      std::size_t eq = pair.find('=');
      auto key = PercentDecode(pair.substr(0, eq), true);
      auto value = PercentDecode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), true);
      if (!key || !value) {
        out.error = "malformed URL escape in " + std::string(target);
        return out;
      }
      if (!out.query.emplace(*key, *value).second) {
        out.error = "query parameter " + *key + " is given more than once";
        return out;
      }
    }
  }
  return out;
}

std::string JsonText(const nlohmann::json& body) {
  return body.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

HttpResponse JsonError(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.body = JsonText(nlohmann::json{{"error", message}});
  return r;
}

}  // namespace tunedb::api
