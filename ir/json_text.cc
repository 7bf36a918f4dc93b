#include "ir/json_text.h"

namespace tunedb::ir {
namespace {

// nlohmann::json's parser with a callback is as free of recursion as the
// plain one. The callback sees how many arrays and objects enclose each
// element: from one that would open a level past the bound on, it drops
// everything, and the caller refuses the whole text.
nlohmann::json ParseWithin(std::string_view text, bool allow_exceptions, bool* too_deep) {
  using Event = nlohmann::json::parse_event_t;
  *too_deep = false;
  auto within = [too_deep](int depth, Event event, nlohmann::json&) {
    if ((event == Event::array_start || event == Event::object_start) && depth >= kMaxJsonNesting) *too_deep = true;
    return !*too_deep;
  };
  return nlohmann::json::parse(text, within, allow_exceptions);
}

}  // namespace

nlohmann::json ParseJson(std::string_view text) {
  bool too_deep = false;
  nlohmann::json j;
  try {
    j = ParseWithin(text, /*allow_exceptions=*/true, &too_deep);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number past a double's range
    if (!too_deep) throw JsonTextError(e.what());
  }
  if (too_deep) {
    throw JsonTextError("arrays and objects nest deeper than " + std::to_string(kMaxJsonNesting) + " levels");
  }
  return j;
}

nlohmann::json ParseJsonOrDiscarded(std::string_view text) {
  bool too_deep = false;
  nlohmann::json j = ParseWithin(text, /*allow_exceptions=*/false, &too_deep);
  return too_deep ? nlohmann::json(nlohmann::json::value_t::discarded) : j;
}

}  // namespace tunedb::ir
