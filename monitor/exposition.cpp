// SPDX-License-Identifier: MIT
// Prometheus text, JSON, text and SVG from a Monitor's last report.
#include "monitor/exposition.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "common/text.hpp"
#include "ib/qos.hpp"

namespace ibqos::monitor {

namespace perf = ib::perf;
using perf::Attribute;
using perf::PortCounter;

namespace {

const char* nodeTypeLabel(NodeType type) {
    return type == NodeType::Switch ? "switch" : type == NodeType::Router ? "router" : "ca";
}

std::string joined(const std::vector<std::string>& items, const char* separator = ",") {
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

std::vector<std::string> groupNames(const Monitor& m, uint32_t port) {
    std::vector<std::string> names;
    for (uint32_t g : m.intent().port(port).groups)
        names.push_back(m.compiled().policy().groups[g].name);
    return names;
}

// The VLs a port's counters are shown for: those of its data VLs in operation that carry an SL
// some qos-level uses, by its own SL2VL tables or its link peer's, or that carried traffic (in
// either direction). A VL no level can reach and nothing used stays out of the series (a fabric
// has many ports).
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

// An SL is shown where the policy gives it a level or where it carried traffic.
bool shownSl(const Monitor& m, const PortReport& p, unsigned sl) {
    return !m.intent().levelsOfSl(sl).empty() || p.totals.slXmitBytes[sl] > 0 ||
           p.totals.slRcvBytes[sl] > 0;
}

bool attributeRead(const Monitor& m, uint32_t port, Attribute a) {
    const PortSamples* s = m.collector().samples(port);
    return s && (*s)[a].current.valid;
}

// ---- Prometheus text exposition -------------------------------------------------------------

// A label value: valid UTF-8 (Prometheus refuses a whole scrape over one invalid byte), with
// the format's three escapes.
std::string escapeLabel(const std::string& value) {
    std::string out;
    for (char c : validUtf8(value)) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

std::string sampleValue(double v) {
    if (std::isnan(v)) return "NaN";
    char buf[40];
    if (v == std::trunc(v) && std::fabs(v) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.0f", v);
    } else {
        std::snprintf(buf, sizeof buf, "%.15g", v);
    }
    return buf;
}

// Label pairs as the format writes them (name="escaped value",...), rendered once and extended:
// a big fabric has millions of samples.
class Labels {
  public:
    Labels() = default;
    Labels(std::initializer_list<std::pair<const char*, std::string>> pairs) {
        for (const auto& [name, value] : pairs) add(name, value);
    }
    Labels& add(const char* name, const std::string& value) {
        if (!text_.empty()) text_ += ',';
        text_ += name;
        text_ += "=\"";
        text_ += escapeLabel(value);
        text_ += '"';
        return *this;
    }
    const std::string& text() const { return text_; }

  private:
    std::string text_;
};

Labels with(Labels labels, const char* name, const std::string& value) {
    labels.add(name, value);
    return labels;
}

// Metric families in the order they first appear, each family's samples together (the format
// requires it) after its HELP and TYPE lines. Names and help texts are string literals.
class Families {
  public:
    void add(const char* name, const char* type, const char* help, const Labels& labels,
             double value) {
        auto [it, fresh] = index_.emplace(std::string_view(name), families_.size());
        if (fresh) families_.push_back({name, type, help, {}});
        std::string& out = families_[it->second].samples;
        out += name;
        if (!labels.text().empty()) {
            out += '{';
            out += labels.text();
            out += '}';
        }
        out += ' ';
        out += sampleValue(value);
        out += '\n';
    }
    std::string text() const {
        std::string out;
        for (const Family& f : families_) {
            out += std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " " +
                   f.type + "\n";
            out += f.samples;
        }
        return out;
    }

  private:
    struct Family {
        const char *name, *type, *help;
        std::string samples;
    };
    std::vector<Family> families_;
    std::unordered_map<std::string_view, size_t> index_;
};

Labels portLabels(const Fabric& fabric, uint32_t port) {
    const FabricNode& node = fabric.nodeOf(port);
    return {{"node_guid", hex(node.guid, 16)},
            {"node_name", node.description},
            {"port", std::to_string(fabric.ports[port].number)}};
}

}  // namespace

std::string prometheusText(const Monitor& m) {
    const Report& r = m.last();
    const Fabric& fabric = m.fabric();
    Families out;
    const char* counter = "counter";
    const char* gauge = "gauge";

    struct PortMetric {
        PortCounter which;
        const char* name;
        const char* help;
    };
    static const PortMetric portMetrics[] = {
        {PortCounter::XmitData, "ibqos_port_transmit_bytes_total",
         "Bytes the port transmitted (PortXmitData, 4-byte words x 4), counted since the "
         "collector started."},
        {PortCounter::RcvData, "ibqos_port_receive_bytes_total",
         "Bytes the port received (PortRcvData x 4), counted since the collector started."},
        {PortCounter::XmitPkts, "ibqos_port_transmit_packets_total",
         "Packets the port transmitted, counted since the collector started."},
        {PortCounter::RcvPkts, "ibqos_port_receive_packets_total",
         "Packets the port received, counted since the collector started."},
        {PortCounter::XmitWait, "ibqos_port_transmit_wait_ticks_total",
         "Device ticks the port had data to send and could not (PortXmitWait), counted since "
         "the collector started."},
    };
    for (const PortReport& p : r.ports) {
        Labels labels = portLabels(fabric, p.port);
        const FabricPort& port = fabric.ports[p.port];
        Labels info = labels;
        info.add("node_type", nodeTypeLabel(fabric.nodeOf(p.port).type));
        info.add("lid", std::to_string(port.lid));
        info.add("groups", joined(groupNames(m, p.port)));
        if (port.peer != NoPort) {
            info.add("peer_node_guid", hex(fabric.nodeOf(port.peer).guid, 16));
            info.add("peer_port", std::to_string(fabric.ports[port.peer].number));
        }
        out.add("ibqos_port_info", gauge,
                "A port the collector reads: its node type, LID, link peer and the policy's port "
                "groups that hold it (always 1).",
                info, 1);
        if (attributeRead(m, p.port, Attribute::PortCounters)) {
            for (const PortMetric& metric : portMetrics)
                out.add(metric.name, counter, metric.help, labels,
                        p.totals.port[unsigned(metric.which)]);
            out.add("ibqos_port_congested", gauge,
                    "1 when the port's PortXmitWait rose during the last interval.", labels,
                    p.congested);
        }
        for (const std::string& c : p.saturated) {
            out.add("ibqos_port_counter_saturated", gauge,
                    "A counter that stopped at its maximum in the last scrape (its delta is not "
                    "reported).",
                    with(labels, "counter", c), 1);
        }
    }
    for (const PortReport& p : r.ports) {
        Labels labels = portLabels(fabric, p.port);
        const PortIntent& intent = m.intent().port(p.port);
        bool waits = attributeRead(m, p.port, Attribute::PortVlXmitWaitCounters);
        bool data = attributeRead(m, p.port, Attribute::PortVlOpData);
        bool packets = attributeRead(m, p.port, Attribute::PortVlOpPackets);
        for (unsigned vl = 0; vl < ib::VlCount; ++vl) {
            if (!shownVl(m, p, vl)) continue;
            Labels v = with(labels, "vl", std::to_string(vl));
            if (intent.hasTables) {
                std::vector<std::string> levels;
                for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
                    if (!(intent.slsOfVl[vl] & (1u << sl))) continue;
                    for (const std::string& name : m.intent().levelsOfSl(sl))
                        if (std::find(levels.begin(), levels.end(), name) == levels.end())
                            levels.push_back(name);
                }
                out.add("ibqos_port_vl_info", gauge,
                        "An output port's VL: the SLs its SL2VL tables send on it and their "
                        "qos-levels (always 1).",
                        with(with(v, "sls", slList(intent.slsOfVl[vl])), "levels", joined(levels)),
                        1);
            }
            if (data)
                out.add("ibqos_port_vl_receive_bytes_total", counter,
                        "Bytes the port received on the VL (PortVLOpData x 4), counted since the "
                        "collector started.",
                        v, p.totals.vlRcvBytes[vl]);
            if (packets)
                out.add("ibqos_port_vl_receive_packets_total", counter,
                        "Packets the port received on the VL (PortVLOpPackets), counted since "
                        "the collector started.",
                        v, p.totals.vlRcvPackets[vl]);
            if (waits)
                out.add("ibqos_port_vl_transmit_wait_ticks_total", counter,
                        "Device ticks the VL had data to send on the port and could not "
                        "(PortVLXmitWaitCounters), counted since the collector started.",
                        v, p.totals.vlXmitWait[vl]);
            if (p.hasVlMix && vl < ib::DataVlCount) {
                out.add("ibqos_port_vl_share_ratio", gauge,
                        "The VL's share of what the output port's link carried in the last "
                        "interval (from the link peer's PortVLOpData).",
                        v, p.vls[vl].achieved);
            }
            if (p.judged && vl < ib::DataVlCount && p.vls[vl].competing) {
                out.add("ibqos_port_vl_intended_share_ratio", gauge,
                        "The share the port's VL arbitration intends for the VL among the VLs "
                        "that carried traffic, while the port was congested.",
                        v, p.vls[vl].intended);
            }
        }
        bool slXmit = attributeRead(m, p.port, Attribute::PortXmitDataSl);
        bool slRcv = attributeRead(m, p.port, Attribute::PortRcvDataSl);
        for (unsigned sl = 0; sl < ib::SlCount && (slXmit || slRcv); ++sl) {
            if (!shownSl(m, p, sl)) continue;
            Labels s = with(with(labels, "sl", std::to_string(sl)), "level",
                            joined(m.intent().levelsOfSl(sl)));
            if (slXmit)
                out.add("ibqos_port_sl_transmit_bytes_total", counter,
                        "Bytes the port transmitted on the SL (PortXmitDataSL x 4), counted since "
                        "the collector started; level names the SL's qos-levels.",
                        s, p.totals.slXmitBytes[sl]);
            if (slRcv)
                out.add("ibqos_port_sl_receive_bytes_total", counter,
                        "Bytes the port received on the SL (PortRcvDataSL x 4), counted since the "
                        "collector started; level names the SL's qos-levels.",
                        s, p.totals.slRcvBytes[sl]);
        }
    }
    for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
        for (const std::string& level : m.intent().levelsOfSl(sl))
            out.add("ibqos_sl_level_info", gauge,
                    "A qos-level of the policy and its SL (always 1).",
                    {{"sl", std::to_string(sl)}, {"level", level}}, 1);
    }
    for (const Finding& f : r.findings) {
        Labels labels = {{"kind", findingKindName(f.kind)}};
        const FabricNode& node = fabric.nodes[f.node];
        labels.add("node_guid", hex(node.guid, 16));
        labels.add("node_name", node.description);
        if (f.port != UINT32_MAX) labels.add("port", std::to_string(fabric.ports[f.port].number));
        if (f.vl >= 0) labels.add("vl", std::to_string(f.vl));
        if (f.sl >= 0) labels.add("sl", std::to_string(f.sl));
        out.add("ibqos_finding", gauge,
                "Something the last scrape found (kind: vl-below-share, sl-without-level, "
                "pma-unanswered, tables-differ, counter-saturated); always 1.",
                labels, 1);
    }

    const std::vector<NodeTarget>& targets = m.collector().targets();
    for (size_t t = 0; t < targets.size(); ++t) {
        const FabricNode& node = fabric.nodes[targets[t].node];
        out.add("ibqos_monitor_pma_up", gauge,
                "1 when the node's PMA answered in the last scrape that asked it, else 0.",
                {{"node_guid", hex(node.guid, 16)}, {"node_name", node.description}},
                m.collector().status(t).answering);
    }
    for (const auto& [key, support] : m.collector().support()) {
        if (support != Support::Yes && support != Support::No) continue;
        const DeviceKind& kind = key.first;
        out.add("ibqos_monitor_attribute_supported", gauge,
                "Whether a device kind's PMA answers an attribute (learnt once per kind: 1 or 0).",
                {{"node_type", nodeTypeLabel(kind.type)},
                 {"vendor_id", hex(kind.vendorId)},
                 {"device_id", hex(kind.deviceId)},
                 {"revision", hex(kind.revision)},
                 {"attribute", perf::attributeName(key.second)}},
                support == Support::Yes);
    }
    const ScrapeStats& s = r.stats;
    out.add("ibqos_monitor_scrapes_total", counter, "Scrapes since the collector started.", {},
            static_cast<double>(s.scrape));
    out.add("ibqos_monitor_mads_total", counter,
            "Performance Management MADs sent since the collector started (retries included).", {},
            static_cast<double>(r.madsTotal));
    out.add("ibqos_monitor_mad_timeouts_total", counter,
            "MADs that got no answer since the collector started.", {},
            static_cast<double>(r.timeoutsTotal));
    for (const auto& [attribute, count] : s.sentByAttribute)
        out.add("ibqos_monitor_scrape_mads", gauge, "MADs the last scrape sent, by attribute.",
                {{"attribute", perf::attributeName(attribute)}}, static_cast<double>(count));
    out.add("ibqos_monitor_scrape_duration_seconds", gauge, "How long the last scrape took.", {},
            s.seconds);
    out.add("ibqos_monitor_scrape_timestamp_seconds", gauge,
            "When the last scrape ended (Unix time).", {}, r.unixTime);
    out.add("ibqos_monitor_scrape_ports", gauge,
            "Ports the last scrape planned to read, and read (PortCounters answered).",
            {{"state", "planned"}}, static_cast<double>(s.portsPlanned));
    out.add("ibqos_monitor_scrape_ports", gauge, "", {{"state", "read"}},
            static_cast<double>(s.portsRead));
    out.add("ibqos_monitor_scrape_budget_reached", gauge,
            "1 when the last scrape stopped at the MAD budget (the next goes on from there).", {},
            s.budgetReached);
    return out.text();
}

// ---- JSON ------------------------------------------------------------------------------------

namespace {

Json deltaJson(const Delta& d) {
    if (d.ok()) return jsonNumber(d.rate());
    return nullptr;
}

}  // namespace

Json reportJson(const Monitor& m) {
    const Report& r = m.last();
    const Fabric& fabric = m.fabric();
    const ScrapeStats& s = r.stats;
    Json byAttribute = Json::object();
    for (const auto& [attribute, count] : s.sentByAttribute)
        byAttribute[perf::attributeName(attribute)] = count;
    Json scrape = {{"number", s.scrape},
                   {"interval_seconds", jsonNumber(r.interval)},
                   {"duration_seconds", jsonNumber(s.seconds)},
                   {"mads", s.sent},
                   {"mads_by_attribute", std::move(byAttribute)},
                   {"answered", s.answered},
                   {"timeouts", s.timedOut},
                   {"errors", s.errors},
                   {"support_probes", s.probes},
                   {"max_in_flight", s.maxInFlight},
                   {"ports_planned", s.portsPlanned},
                   {"ports_read", s.portsRead},
                   {"budget_reached", s.budgetReached},
                   {"mads_total", r.madsTotal},
                   {"timeouts_total", r.timeoutsTotal}};

    Json ports = Json::array();
    for (const PortReport& p : r.ports) {
        const FabricPort& port = fabric.ports[p.port];
        const FabricNode& node = fabric.nodeOf(p.port);
        Json rates = Json::object();
        static const char* const names[] = {"transmit_bytes", "receive_bytes", "transmit_packets",
                                            "receive_packets", "transmit_wait_ticks"};
        Json totals = Json::object();
        Json states = Json::object();
        for (unsigned i = 0; i < perf::PortCounterCount; ++i) {
            rates[std::string(names[i]) + "_per_second"] = deltaJson(p.counters[i]);
            totals[names[i]] = jsonNumber(p.totals.port[i]);
            states[names[i]] = deltaStateName(p.counters[i].state);
        }
        const PortIntent& intent = m.intent().port(p.port);
        Json vls = Json::array();
        for (unsigned vl = 0; vl < ib::VlCount; ++vl) {
            if (!shownVl(m, p, vl)) continue;
            Json levels = Json::array();
            Json sls = Json::array();
            for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
                if (!(intent.slsOfVl[vl] & (1u << sl))) continue;
                sls.push_back(sl);
                for (const std::string& name : m.intent().levelsOfSl(sl))
                    if (std::find(levels.begin(), levels.end(), name) == levels.end())
                        levels.push_back(name);
            }
            bool shares = vl < ib::DataVlCount && p.hasVlMix;
            vls.push_back(
                {{"vl", vl},
                 {"sls", std::move(sls)},
                 {"levels", std::move(levels)},
                 {"receive_bytes_per_second", deltaJson(p.vlRcvBytes[vl])},
                 {"receive_packets_per_second", deltaJson(p.vlRcvPackets[vl])},
                 {"transmit_wait_ticks_per_second", deltaJson(p.vlXmitWait[vl])},
                 {"receive_bytes_total", jsonNumber(p.totals.vlRcvBytes[vl])},
                 {"achieved_share", shares ? jsonNumber(p.vls[vl].achieved) : Json(nullptr)},
                 {"competing", shares ? Json(p.vls[vl].competing) : Json(nullptr)},
                 {"intended_share", p.judged && vl < ib::DataVlCount
                                        ? jsonNumber(p.vls[vl].intended)
                                        : Json(nullptr)}});
        }
        Json sls = Json::array();
        for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
            if (!shownSl(m, p, sl)) continue;
            Json levels = Json::array();
            for (const std::string& name : m.intent().levelsOfSl(sl)) levels.push_back(name);
            sls.push_back({{"sl", sl},
                           {"levels", std::move(levels)},
                           {"transmit_bytes_per_second", deltaJson(p.slXmitBytes[sl])},
                           {"receive_bytes_per_second", deltaJson(p.slRcvBytes[sl])},
                           {"transmit_bytes_total", jsonNumber(p.totals.slXmitBytes[sl])},
                           {"receive_bytes_total", jsonNumber(p.totals.slRcvBytes[sl])}});
        }
        Json read = Json::array();
        for (Attribute a : PortAttributes)
            if (attributeRead(m, p.port, a)) read.push_back(perf::attributeName(a));
        ports.push_back({{"node_guid", hex(node.guid, 16)},
                         {"node_name", node.description},
                         {"port", port.number},
                         {"lid", port.lid},
                         {"name", fabric.portName(p.port)},
                         {"groups", groupNames(m, p.port)},
                         {"attributes", std::move(read)},
                         {"extended_counters", p.extended},
                         {"rates", std::move(rates)},
                         {"totals", std::move(totals)},
                         {"states", std::move(states)},
                         {"extended_xmit_wait", p.extendedXmitWait},
                         {"congested", p.congested},
                         {"judged", p.judged},
                         {"saturated", p.saturated},
                         {"vls", std::move(vls)},
                         {"sls", std::move(sls)}});
    }
    Json findings = Json::array();
    for (const Finding& f : r.findings) {
        const FabricNode& node = fabric.nodes[f.node];
        findings.push_back(
            {{"kind", findingKindName(f.kind)},
             {"node_guid", hex(node.guid, 16)},
             {"node_name", node.description},
             {"port", f.port == UINT32_MAX ? Json(nullptr) : Json(fabric.ports[f.port].number)},
             {"vl", f.vl >= 0 ? Json(f.vl) : Json(nullptr)},
             {"sl", f.sl >= 0 ? Json(f.sl) : Json(nullptr)},
             {"achieved_share",
              f.kind == Finding::Kind::VlBelowShare ? jsonNumber(f.achieved) : Json(nullptr)},
             {"intended_share",
              f.kind == Finding::Kind::VlBelowShare ? jsonNumber(f.intended) : Json(nullptr)},
             {"message", f.message}});
    }
    Json pmas = Json::array();
    const std::vector<NodeTarget>& targets = m.collector().targets();
    for (size_t t = 0; t < targets.size(); ++t) {
        const FabricNode& node = fabric.nodes[targets[t].node];
        const NodeStatus& status = m.collector().status(t);
        pmas.push_back(
            {{"node_guid", hex(node.guid, 16)},
             {"node_name", node.description},
             {"kind", describe(targets[t].kind)},
             {"answering", status.answering},
             {"capability_mask",
              status.capabilityKnown ? Json(hex(status.capabilityMask, 4)) : Json(nullptr)},
             {"problem", jsonName(status.problem)}});
    }
    Json support = Json::array();
    for (const auto& [key, value] : m.collector().support()) {
        if (value != Support::Yes && value != Support::No) continue;
        support.push_back({{"kind", describe(key.first)},
                           {"attribute", perf::attributeName(key.second)},
                           {"supported", value == Support::Yes}});
    }
    return {{"scrape", std::move(scrape)},
            {"ports", std::move(ports)},
            {"findings", std::move(findings)},
            {"pmas", std::move(pmas)},
            {"support", std::move(support)}};
}

// ---- text ------------------------------------------------------------------------------------

std::string reportText(const Monitor& m) {
    const Report& r = m.last();
    const ScrapeStats& s = r.stats;
    const Fabric& fabric = m.fabric();
    char line[256];
    std::string out;
    std::snprintf(line, sizeof line,
                  "scrape %llu: %zu MADs (%zu answered, %zu timeouts, %zu errors) in %.3f s, %zu "
                  "of %zu ports read%s\n",
                  static_cast<unsigned long long>(s.scrape), s.sent, s.answered, s.timedOut,
                  s.errors, s.seconds, s.portsRead, s.portsPlanned,
                  s.budgetReached ? " (MAD budget reached)" : "");
    out += line;
    // Only the ports that did something are listed; the count says so, so that a port left out
    // does not read as a port not read.
    std::string ports;
    size_t listed = 0;
    for (const PortReport& p : r.ports) {
        const Delta& xmit = p.counters[unsigned(PortCounter::XmitData)];
        const Delta& rcv = p.counters[unsigned(PortCounter::RcvData)];
        if (!p.congested && !p.hasVlMix && !(xmit.ok() && xmit.value > 0)) continue;
        ++listed;
        std::snprintf(line, sizeof line, "%-28s tx %s B/s  rx %s B/s%s\n",
                      fabric.portName(p.port).c_str(),
                      xmit.ok() ? decimal(xmit.rate()).c_str() : deltaStateName(xmit.state),
                      rcv.ok() ? decimal(rcv.rate()).c_str() : deltaStateName(rcv.state),
                      p.congested ? "  congested" : "");
        ports += line;
        if (!p.hasVlMix) continue;
        for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) {
            const VlShare& v = p.vls[vl];
            if (v.achieved <= 0 && !v.competing) continue;
            std::snprintf(
                line, sizeof line, "    VL %-2u %5.1f%% of the link%s\n", vl, v.achieved * 100,
                p.judged && v.competing ? (", intended " + decimal(v.intended * 100) + "%").c_str()
                                        : "");
            ports += line;
        }
    }
    std::snprintf(line, sizeof line,
                  "%zu of the %zu ports read transmitted, or were congested, in the interval%s\n",
                  listed, s.portsRead, listed ? ":" : "");
    out += line + ports;
    for (const Finding& f : r.findings)
        out += std::string(findingKindName(f.kind)) + ": " + f.message + "\n";
    return out;
}

// ---- SVG -------------------------------------------------------------------------------------

std::string sharesSvg(const Monitor& m, size_t panels) {
    // The ports that fell furthest below their intent within the window come first.
    std::vector<std::pair<double, uint32_t>> order;
    for (const auto& [port, points] : m.history()) {
        double worst = -1;
        for (const SharePoint& point : points)
            for (const VlShare& v : point.vls)
                if (v.competing) worst = std::max(worst, v.intended - v.achieved);
        order.emplace_back(-worst, port);
    }
    std::sort(order.begin(), order.end());
    if (order.size() > panels) order.resize(panels);

    static const char* colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
                                    "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
    const int width = 720, panelHeight = 170, left = 60, right = 150, top = 50;
    const int plotWidth = width - left - right, plotHeight = 110;
    int height = top + static_cast<int>(std::max<size_t>(order.size(), 1)) * panelHeight + 20;
    const double end = m.last().unixTime, start = end - m.options().window;
    std::string svg;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" "
                  "height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"22\" font-size=\"14\">"
                  "Achieved (solid) and intended (dashed) VL share of congested output ports, "
                  "last %.0f s</text>\n",
                  width, height, left, m.options().window);
    svg += buf;
    if (order.empty()) {
        std::snprintf(buf, sizeof buf,
                      "<text x=\"%d\" y=\"%d\">No output port was congested with a known VL mix "
                      "in the window.</text>\n",
                      left, top + 20);
        svg += buf;
    }
    auto x = [&](double t) {
        return left + plotWidth * std::clamp((t - start) / (end - start), 0.0, 1.0);
    };
    for (size_t i = 0; i < order.size(); ++i) {
        uint32_t port = order[i].second;
        const std::deque<SharePoint>& points = m.history().at(port);
        int y0 = top + static_cast<int>(i) * panelHeight;
        auto y = [&](double share) { return y0 + 20 + plotHeight * (1 - share); };
        std::snprintf(buf, sizeof buf,
                      "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n"
                      "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                      "stroke=\"#999\"/>\n",
                      left, y0 + 12, xmlText(m.fabric().portName(port)).c_str(), left, y0 + 20,
                      plotWidth, plotHeight);
        svg += buf;
        for (int pct = 0; pct <= 100; pct += 50) {
            std::snprintf(buf, sizeof buf,
                          "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d%%</text>\n", left - 4,
                          y(pct / 100.0) + 4, pct);
            svg += buf;
        }
        int legend = 0;
        for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) {
            bool used = false;
            for (const SharePoint& p : points) used = used || p.vls[vl].competing;
            if (!used) continue;
            std::string achieved, intended;
            for (const SharePoint& p : points) {
                std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x(p.unixTime), y(p.vls[vl].achieved));
                achieved += buf;
                std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x(p.unixTime), y(p.vls[vl].intended));
                intended += buf;
            }
            if (points.size() == 1) {  // one interval: a short mark of its own
                std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x(points.front().unixTime) - 8,
                              y(points.front().vls[vl].achieved));
                achieved = buf + achieved;
                std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x(points.front().unixTime) - 8,
                              y(points.front().vls[vl].intended));
                intended = buf + intended;
            }
            svg += "<polyline points=\"" + achieved + "\" fill=\"none\" stroke=\"" + colours[vl] +
                   "\" stroke-width=\"2\"/>\n<polyline points=\"" + intended +
                   "\" fill=\"none\" stroke=\"" + colours[vl] + "\" stroke-dasharray=\"5,3\"/>\n";
            const SharePoint& latest = points.back();
            std::snprintf(buf, sizeof buf,
                          "<text x=\"%d\" y=\"%d\" fill=\"%s\">VL %u: %.0f%% (intended "
                          "%.0f%%)</text>\n",
                          left + plotWidth + 10, y0 + 32 + 14 * legend++, colours[vl], vl,
                          latest.vls[vl].achieved * 100, latest.vls[vl].intended * 100);
            svg += buf;
        }
    }
    svg += "</svg>\n";
    return svg;
}

// ---- Pages ------------------------------------------------------------------------------------

ScrapePages renderPages(const Monitor& m, bool metrics, bool report, bool svg) {
    auto shared = [](std::string text) {
        return std::make_shared<const std::string>(std::move(text));
    };
    ScrapePages pages;
    if (metrics) pages.metrics = shared(prometheusText(m));
    if (report) pages.report = shared(dumpJson(reportJson(m)) + "\n");
    if (svg) pages.svg = shared(sharesSvg(m));
    return pages;
}

void addPages(MetricsServer& server) {
    for (const auto& [path, type] : ServedPages) server.addPage(path, type);
}

void servePages(MetricsServer& server, const ScrapePages& pages) {
    const std::shared_ptr<const std::string>* bodies[] = {&pages.metrics, &pages.report,
                                                          &pages.svg};
    for (size_t i = 0; i < ServedPages.size(); ++i)
        if (*bodies[i]) server.publish(ServedPages[i].first, *bodies[i]);
}

}  // namespace ibqos::monitor
