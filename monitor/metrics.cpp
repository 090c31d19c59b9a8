// SPDX-License-Identifier: MIT
// The monitor's metric table, and which VLs and SLs of a port its outputs show.
#include "monitor/metrics.hpp"

#include <algorithm>

namespace ibqos::monitor {

using ib::perf::Attribute;
using ib::perf::PortCounter;

namespace {
constexpr MetricType Counter = MetricType::Counter;
constexpr MetricType Gauge = MetricType::Gauge;
}  // namespace

const char* metricTypeName(MetricType type) {
    return type == MetricType::Counter ? "counter" : "gauge";
}

const std::array<PortCounterMetric, ib::perf::PortCounterCount> PortCounterMetrics = {{
    {{"ibqos_port_transmit_bytes_total", Counter,
      "Bytes the port transmitted (PortXmitData, 4-byte words x 4), counted since the collector "
      "started."},
     PortCounter::XmitData,
     "transmit_bytes"},
    {{"ibqos_port_receive_bytes_total", Counter,
      "Bytes the port received (PortRcvData x 4), counted since the collector started."},
     PortCounter::RcvData,
     "receive_bytes"},
    {{"ibqos_port_transmit_packets_total", Counter,
      "Packets the port transmitted, counted since the collector started."},
     PortCounter::XmitPkts,
     "transmit_packets"},
    {{"ibqos_port_receive_packets_total", Counter,
      "Packets the port received, counted since the collector started."},
     PortCounter::RcvPkts,
     "receive_packets"},
    {{"ibqos_port_transmit_wait_ticks_total", Counter,
      "Device ticks the port had data to send and could not (PortXmitWait), counted since the "
      "collector started."},
     PortCounter::XmitWait,
     "transmit_wait_ticks"},
}};

const std::array<LaneCounterMetric, 3> VlCounterMetrics = {{
    {{"ibqos_port_vl_receive_bytes_total", Counter,
      "Bytes the port received on the VL (PortVLOpData x 4), counted since the collector "
      "started."},
     Attribute::PortVlOpData,
     &PortReport::vlRcvBytes,
     &Totals::vlRcvBytes,
     "receive_bytes",
     true},
    {{"ibqos_port_vl_receive_packets_total", Counter,
      "Packets the port received on the VL (PortVLOpPackets), counted since the collector "
      "started."},
     Attribute::PortVlOpPackets,
     &PortReport::vlRcvPackets,
     &Totals::vlRcvPackets,
     "receive_packets",
     false},
    {{"ibqos_port_vl_transmit_wait_ticks_total", Counter,
      "Device ticks the VL had data to send on the port and could not (PortVLXmitWaitCounters), "
      "counted since the collector started."},
     Attribute::PortVlXmitWaitCounters,
     &PortReport::vlXmitWait,
     &Totals::vlXmitWait,
     "transmit_wait_ticks",
     false},
}};

const std::array<LaneCounterMetric, 2> SlCounterMetrics = {{
    {{"ibqos_port_sl_transmit_bytes_total", Counter,
      "Bytes the port transmitted on the SL (PortXmitDataSL x 4), counted since the collector "
      "started; level names the SL's qos-levels."},
     Attribute::PortXmitDataSl,
     &PortReport::slXmitBytes,
     &Totals::slXmitBytes,
     "transmit_bytes",
     true},
    {{"ibqos_port_sl_receive_bytes_total", Counter,
      "Bytes the port received on the SL (PortRcvDataSL x 4), counted since the collector "
      "started; level names the SL's qos-levels."},
     Attribute::PortRcvDataSl,
     &PortReport::slRcvBytes,
     &Totals::slRcvBytes,
     "receive_bytes",
     true},
}};

const ShareMetric AchievedShare = {
    {"ibqos_port_vl_share_ratio", Gauge,
     "The VL's share of what the output port's link carried in the last interval (from the link "
     "peer's PortVLOpData)."},
    &VlShare::achieved,
    "achieved_share",
    "stroke-width=\"2\""};
const ShareMetric IntendedShare = {
    {"ibqos_port_vl_intended_share_ratio", Gauge,
     "The share the port's VL arbitration intends for the VL among the VLs that carried traffic, "
     "while the port was congested."},
    &VlShare::intended,
    "intended_share",
    "stroke-dasharray=\"5,3\""};

const std::array<ScrapeMetric, 3> CollectorMetrics = {{
    {{"ibqos_monitor_scrapes_total", Counter, "Scrapes since the collector started."},
     [](const Report& r) { return static_cast<double>(r.stats.scrape); }},
    {{"ibqos_monitor_mads_total", Counter,
      "Performance Management MADs sent since the collector started (retries included)."},
     [](const Report& r) { return static_cast<double>(r.madsTotal); }},
    {{"ibqos_monitor_mad_timeouts_total", Counter,
      "MADs that got no answer since the collector started."},
     [](const Report& r) { return static_cast<double>(r.timeoutsTotal); }},
}};

const std::array<ScrapeMetric, 2> ScrapeTimeMetrics = {{
    {{"ibqos_monitor_scrape_duration_seconds", Gauge, "How long the last scrape took."},
     [](const Report& r) { return r.stats.seconds; }},
    {{"ibqos_monitor_scrape_timestamp_seconds", Gauge, "When the last scrape ended (Unix time)."},
     [](const Report& r) { return r.unixTime; }},
}};

const MetricDescription PortInfoMetric = {
    "ibqos_port_info", Gauge,
    "A port the collector reads: its node type, LID, link peer and the policy's port groups that "
    "hold it (always 1)."};
const MetricDescription PortCongestedMetric = {
    "ibqos_port_congested", Gauge, "1 when the port's PortXmitWait rose during the last interval."};
const MetricDescription CounterSaturatedMetric = {
    "ibqos_port_counter_saturated", Gauge,
    "A counter that stopped at its maximum in the last scrape (its delta is not reported)."};
const MetricDescription VlInfoMetric = {
    "ibqos_port_vl_info", Gauge,
    "An output port's VL: the SLs its SL2VL tables send on it and their qos-levels (always 1)."};
const MetricDescription SlLevelInfoMetric = {"ibqos_sl_level_info", Gauge,
                                             "A qos-level of the policy and its SL (always 1)."};
const MetricDescription FindingMetric = {
    "ibqos_finding", Gauge,
    "Something the last scrape found (kind: vl-below-share, sl-without-level, pma-unanswered, "
    "tables-differ, counter-saturated); always 1."};
const MetricDescription PmaUpMetric = {
    "ibqos_monitor_pma_up", Gauge,
    "1 when the node's PMA answered in the last scrape that asked it, else 0."};
const MetricDescription AttributeSupportedMetric = {
    "ibqos_monitor_attribute_supported", Gauge,
    "Whether a device kind's PMA answers an attribute (learnt once per kind: 1 or 0)."};
const MetricDescription ScrapeMadsMetric = {"ibqos_monitor_scrape_mads", Gauge,
                                            "MADs the last scrape sent, by attribute."};
const MetricDescription ScrapePortsMetric = {
    "ibqos_monitor_scrape_ports", Gauge,
    "Ports the last scrape planned to read, and read (PortCounters answered)."};
const MetricDescription BudgetReachedMetric = {
    "ibqos_monitor_scrape_budget_reached", Gauge,
    "1 when the last scrape stopped at the MAD budget (the next goes on from there)."};

// A VL no level can reach and nothing used stays out of the series (a fabric has many ports);
// the SLs a VL carries are those of the port's own SL2VL tables or its link peer's.
bool shownVl(const Monitor& m, const PortReport& p, unsigned vl) {
    const Fabric& fabric = m.fabric();
    if (vl >= std::max(1u, dataVls(fabric.ports[p.port].operVls))) return false;
    if (p.totals.vlRcvBytes[vl] > 0 || p.totals.vlRcvPackets[vl] > 0 ||
        p.totals.vlXmitWait[vl] > 0 || (vl < ib::DataVlCount && p.vls[vl].achieved > 0))
        return true;
    uint16_t levelled = 0;
    for (unsigned sl = 0; sl < ib::SlCount; ++sl)
        if (!m.intent().levelsOfSl(sl).empty()) levelled |= static_cast<uint16_t>(1u << sl);
    uint32_t peer = fabric.ports[p.port].peer;
    uint16_t sls = m.intent().port(p.port).slsOfVl[vl];
    if (peer != NoPort) sls |= m.intent().port(peer).slsOfVl[vl];
    return (sls & levelled) != 0;
}

bool shownSl(const Monitor& m, const PortReport& p, unsigned sl) {
    return !m.intent().levelsOfSl(sl).empty() || p.totals.slXmitBytes[sl] > 0 ||
           p.totals.slRcvBytes[sl] > 0;
}

bool attributeRead(const Monitor& m, uint32_t port, Attribute a) {
    const PortSamples* s = m.collector().samples(port);
    return s && (*s)[a].current.valid;
}

std::vector<std::string> groupNames(const Monitor& m, uint32_t port) {
    std::vector<std::string> names;
    for (uint32_t g : m.intent().port(port).groups)
        names.push_back(m.compiled().policy().groups[g].name);
    return names;
}

std::vector<std::string> levelsOfVl(const Monitor& m, const PortIntent& intent, unsigned vl) {
    std::vector<std::string> levels;
    for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
        if (!(intent.slsOfVl[vl] & (1u << sl))) continue;
        for (const std::string& name : m.intent().levelsOfSl(sl))
            if (std::find(levels.begin(), levels.end(), name) == levels.end())
                levels.push_back(name);
    }
    return levels;
}

const char* nodeTypeLabel(NodeType type) {
    return type == NodeType::Switch ? "switch" : type == NodeType::Router ? "router" : "ca";
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
    std::string out;
    for (const std::string& s : items) out += (out.empty() ? "" : separator) + s;
    return out;
}

std::string slList(uint16_t mask) {
    std::string out;
    for (unsigned sl = 0; sl < ib::SlCount; ++sl)
        if (mask & (1u << sl)) out += (out.empty() ? "" : ",") + std::to_string(sl);
    return out;
}

}  // namespace ibqos::monitor
