// SPDX-License-Identifier: MIT
// The monitor's metrics described once (name, help, type, JSON key, how to read the value), and
// what a port's report shows of its VLs and SLs: the Prometheus, JSON, text and SVG writers
// read both.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ib/perf_mgt.hpp"
#include "ib/qos.hpp"
#include "monitor/monitor.hpp"

namespace ibqos::monitor {

enum class MetricType : uint8_t { Counter, Gauge };
// "counter" or "gauge", as Prometheus' TYPE line writes it.
const char* metricTypeName(MetricType type);

// What every metric has: its Prometheus family, type and help.
struct MetricDescription {
    const char* name;
    MetricType type;
    const char* help;
};

// A counter of the whole port from PortCounters: its total since the collector started
// (Prometheus) and its rate and state in the last interval (JSON, under `json` in "totals" and
// "states", `json`_per_second in "rates").
struct PortCounterMetric {
    MetricDescription metric;
    ib::perf::PortCounter which;
    const char* json;
};
// In ib::perf::PortCounter order.
extern const std::array<PortCounterMetric, ib::perf::PortCounterCount> PortCounterMetrics;

static_assert(ib::SlCount == ib::VlCount, "a lane counter holds a VL's or an SL's value alike");
using LaneDeltas = std::array<Delta, ib::VlCount>;
using LaneTotals = std::array<double, ib::VlCount>;

// A counter a port keeps for each VL or SL, read by `attribute` (shown where the port's PMA
// answered it): its total (Prometheus; JSON `json`_total where `jsonTotal`) and its rate in the
// last interval (JSON `json`_per_second).
struct LaneCounterMetric {
    MetricDescription metric;
    ib::perf::Attribute attribute;
    LaneDeltas PortReport::*delta;
    LaneTotals Totals::*total;
    const char* json;
    bool jsonTotal;
};
extern const std::array<LaneCounterMetric, 3> VlCounterMetrics;
extern const std::array<LaneCounterMetric, 2> SlCounterMetrics;

// A VL's share of what an output port's link carried: achieved, and intended by its VL
// arbitration. Prometheus, the JSON report (`json`) and the SVG's lines (drawn with
// `svgStroke`) show both.
struct ShareMetric {
    MetricDescription metric;
    double VlShare::*value;
    const char* json;
    const char* svgStroke;
};
extern const ShareMetric AchievedShare, IntendedShare;

// A number of the collector or of the last scrape, with no label.
struct ScrapeMetric {
    MetricDescription metric;
    double (*value)(const Report& report);
};
// Those Prometheus shows after the per-attribute MAD counts, and those after it.
extern const std::array<ScrapeMetric, 3> CollectorMetrics;
extern const std::array<ScrapeMetric, 2> ScrapeTimeMetrics;

// The metrics written with labels only (their value is 1, a state or a count).
extern const MetricDescription PortInfoMetric, PortCongestedMetric, CounterSaturatedMetric,
    VlInfoMetric, SlLevelInfoMetric, FindingMetric, PmaUpMetric, AttributeSupportedMetric,
    ScrapeMadsMetric, ScrapePortsMetric, BudgetReachedMetric;

// ---- What a port's report shows ----------------------------------------------------------------

// The VLs a port's counters are shown for: those of its data VLs in operation that carry an SL
// some qos-level uses, or that carried traffic.
bool shownVl(const Monitor& monitor, const PortReport& port, unsigned vl);
// An SL is shown where the policy gives it a level or where it carried traffic.
bool shownSl(const Monitor& monitor, const PortReport& port, unsigned sl);
// Whether the port's PMA answered the attribute in the last scrape.
bool attributeRead(const Monitor& monitor, uint32_t port, ib::perf::Attribute attribute);
// The names of the policy's port groups that hold the port.
std::vector<std::string> groupNames(const Monitor& monitor, uint32_t port);
// The qos-levels of the SLs an output port's SL2VL tables send on a VL, each once.
std::vector<std::string> levelsOfVl(const Monitor& monitor, const PortIntent& intent, unsigned vl);

const char* nodeTypeLabel(NodeType type);
std::string joined(const std::vector<std::string>& items, const char* separator = ",");
// "1,3,5": the SLs of a mask.
std::string slList(uint16_t mask);

}  // namespace ibqos::monitor
