// SPDX-License-Identifier: MIT
// The monitor's outputs: Prometheus' text exposition format (served at /metrics, and the
// node_exporter textfile collector's files), the JSON report for scripts, a text summary for
// people, and an SVG of achieved against intended VL shares over the history window. Each is
// written in a file of its own (prometheus.cpp, report_json.cpp, report_text.cpp,
// shares_svg.cpp) from the metric table of monitor/metrics.hpp.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <utility>

#include "common/json.hpp"
#include "monitor/metrics_server.hpp"
#include "monitor/monitor.hpp"

namespace ibqos::monitor {

// The last report as Prometheus text exposition format 0.0.4 (no timestamps: the textfile
// collector refuses them). Metric names, units and labels follow Prometheus' conventions.
std::string prometheusText(const Monitor& monitor);

// The last report as one JSON object (`ibqos monitor --once --json`, /report.json).
Json reportJson(const Monitor& monitor);

// The last report for people: how the scrape went, congested ports and their VL shares, the
// findings.
std::string reportText(const Monitor& monitor);

// Achieved (solid) against intended (dashed) share of each VL over the history window, one
// panel for each of the `panels` ports that fell furthest below their intent.
std::string sharesSvg(const Monitor& monitor, size_t panels = 12);

// The pages a scrape renders, each once, for the server and the files (null: not asked).
struct ScrapePages {
    std::shared_ptr<const std::string> metrics, report, svg;
};
// The server's paths of those pages, in that order, with their content types.
inline constexpr std::array<std::pair<const char*, const char*>, 3> ServedPages = {{
    {"/metrics", "text/plain; version=0.0.4; charset=utf-8"},
    {"/report.json", "application/json"},
    {"/shares.svg", "image/svg+xml"},
}};
ScrapePages renderPages(const Monitor& monitor, bool metrics, bool report, bool svg);
// Declares the pages on a server (before it answers).
void addPages(MetricsServer& server);
// Serves the rendered pages from now on.
void servePages(MetricsServer& server, const ScrapePages& pages);

}  // namespace ibqos::monitor
