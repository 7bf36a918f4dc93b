// The HTML dashboard served at GET /: workloads, best speeds, a tuning
// curve per workload (best GFLOP/s against the records in commit order, an
// inline SVG) and the best trace script. Rendered on the server from the
// database; a small script then asks /v1/workloads for the totals, so a
// browser test sees both the server's HTML and the client's fetch work.
#pragma once

#include <string>

#include "db/database.h"

namespace tunedb::api {

std::string RenderDashboard(db::Database& database);

// Escapes &, <, >, " and ' for HTML text and attributes.
std::string HtmlEscape(const std::string& text);

}  // namespace tunedb::api
