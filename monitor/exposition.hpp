// SPDX-License-Identifier: MIT
// The monitor's outputs: Prometheus' text exposition format (served at /metrics, and the
// node_exporter textfile collector's files), the JSON report for scripts, a text summary for
// people, and an SVG of achieved against intended VL shares over the history window.
#pragma once

#include <string>

#include "common/json.hpp"
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

}  // namespace ibqos::monitor
