#include "api/server/dashboard.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "ir/flops.h"
#include "ir/json.h"
#include "ir/schedule/trace.h"

namespace tunedb::api {

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

namespace {

constexpr int kMaxWorkloads = 50;
constexpr int kMaxCurveRecords = 5000;

// Best rate so far (GFLOP/s, or GB/s for a program without FLOPs) against
// the records of one target, in commit order.
std::string CurveSvg(const std::vector<double>& best, const char* unit) {
  const int w = 360, h = 120;
  double top = 1;
  for (double g : best) top = std::max(top, g);
  std::string points;
  for (std::size_t i = 0; i < best.size(); ++i) {
    double x = best.size() > 1 ? w * static_cast<double>(i) / static_cast<double>(best.size() - 1) : 0;
    points += fmt::format("{:.1f},{:.1f} ", x, h - h * best[i] / (top * 1.1));
  }
  return fmt::format(
      "<svg class=\"curve\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">"
      "<rect width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>"
      "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"{}\"/>"
      "<text x=\"4\" y=\"12\" font-size=\"10\">{:.1f} {}</text>"
      "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{} records</text></svg>",
      w, h, w, h, w, h, points, top, unit, w - 4, h - 4, best.size());
}

}  // namespace

std::string RenderDashboard(db::Database& database) {
  std::vector<db::WorkloadStats> workloads = database.Workloads();
  std::int64_t records = database.Size();
  std::string html = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tunedb</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; } td, th { border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: left; }
pre { background: #f4f4f4; padding: 8px; font-size: 12px; overflow-x: auto; }
section { margin-top: 2em; }
</style></head><body>
<h1>tunedb</h1>
)";
  html += fmt::format("<p id=\"summary\">{} workloads, {} records</p>\n<p id=\"live\">loading...</p>\n",
                      workloads.size(), records);
  html += "<table id=\"workloads\"><tr><th>workload</th><th>hash</th><th>records</th><th>best (target: time, GFLOP/s or GB/s)</th></tr>\n";
  std::string sections;
  int shown = 0;
  for (const db::WorkloadStats& s : workloads) {
    if (shown++ >= kMaxWorkloads) break;
    const db::WorkloadInput& in = s.workload.input;
    // Rated in GFLOP/s, or in GB/s of its parameters when the program
    // counts no FLOPs (a transpose); not at all when tunedb cannot read it.
    std::int64_t flops = -1, param_bytes = -1;
    if (in.kind == "tunedb") {
      try {
        ir::PrimFunc func = ir::ProgramFromJson(in.program);
        flops = ir::CountFlops(func);
        param_bytes = ir::ParamBytes(func);
      } catch (const std::exception&) {
      }
    }
    const bool rated = flops > 0 || param_bytes > 0;
    const char* unit = ir::RateOf(flops, param_bytes, 0).unit;
    std::string best;
    for (const auto& [target, secs] : s.best) {
      best += fmt::format("{}: {}", HtmlEscape(target), ir::DurationText(secs));
      if (rated) best += fmt::format(", {:.1f} {}", ir::RateOf(flops, param_bytes, secs).value, unit);
      best += "<br>";
    }
    // Every string from the database is escaped, the hash too: a file
    // written elsewhere (a TVM import, a damaged row) can hold any text.
    const std::string hash = HtmlEscape(in.hash);
    html += fmt::format("<tr><td><a href=\"#w{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>\n", hash,
                        HtmlEscape(in.name), hash, s.records, best);
    if (s.best.empty()) continue;
    // The curve and best trace of the target with the fastest record.
    auto fastest = std::min_element(s.best.begin(), s.best.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
    db::RecordQuery q;
    q.workload_hash = in.hash;
    q.target = fastest->first;
    q.limit = kMaxCurveRecords;
    std::vector<double> curve;
    double top = 0;
    for (const db::TuningRecord& r : database.Records(q)) {
      if (rated) top = std::max(top, ir::RateOf(flops, param_bytes, r.Median()).value);
      curve.push_back(top);
    }
    std::string script;
    std::vector<db::TuningRecord> top1 = database.TopK(in.hash, fastest->first, 1);
    if (!top1.empty()) {
      try {
        script = ir::Trace::FromJsonText(top1[0].trace).Simplified(false).AsScript();
      } catch (const std::exception&) {
        script = top1[0].trace;
      }
    }
    sections += fmt::format("<section id=\"w{}\"><h2>{}</h2><p>target {}</p>{}<pre class=\"trace\">{}</pre></section>\n",
                            hash, HtmlEscape(in.name), HtmlEscape(fastest->first),
                            rated ? CurveSvg(curve, unit) : std::string(), HtmlEscape(script));
  }
  html += "</table>\n" + sections;
  html += R"(<script>
fetch('/v1/workloads?limit=1000').then(r => r.json()).then(j => {
  const n = j.workloads.reduce((a, w) => a + w.records, 0);
  document.getElementById('live').textContent = 'live: ' + j.workloads.length + ' workloads, ' + n + ' records';
}).catch(e => { document.getElementById('live').textContent = 'live: ' + e; });
</script>
</body></html>
)";
  return html;
}

}  // namespace tunedb::api
