// SPDX-License-Identifier: MIT
// A Monitor's last report as one JSON object, its counters named by the metric table.
#include "common/text.hpp"
#include "monitor/exposition.hpp"
#include "monitor/metrics.hpp"

namespace ibqos::monitor {

namespace perf = ib::perf;
using perf::Attribute;

namespace {

Json deltaJson(const Delta& d) {
    if (d.ok()) return jsonNumber(d.rate());
    return nullptr;
}

Json scrapeJson(const Report& r) {
    const ScrapeStats& s = r.stats;
    Json byAttribute = Json::object();
    for (const auto& [attribute, count] : s.sentByAttribute)
        byAttribute[perf::attributeName(attribute)] = count;
    return {{"number", s.scrape},
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
}

// A lane's counters: each one's rate, then the totals the table puts in the JSON report.
template <size_t N>
void addLaneCounters(Json& lane, const std::array<LaneCounterMetric, N>& metrics,
                     const PortReport& p, unsigned index) {
    for (const LaneCounterMetric& metric : metrics)
        lane[std::string(metric.json) + "_per_second"] = deltaJson((p.*metric.delta)[index]);
    for (const LaneCounterMetric& metric : metrics)
        if (metric.jsonTotal)
            lane[std::string(metric.json) + "_total"] = jsonNumber((p.totals.*metric.total)[index]);
}

Json vlsJson(const Monitor& m, const PortReport& p) {
    const PortIntent& intent = m.intent().port(p.port);
    Json vls = Json::array();
    for (unsigned vl = 0; vl < ib::VlCount; ++vl) {
        if (!shownVl(m, p, vl)) continue;
        Json sls = Json::array();
        for (unsigned sl = 0; sl < ib::SlCount; ++sl)
            if (intent.slsOfVl[vl] & (1u << sl)) sls.push_back(sl);
        Json entry = {{"vl", vl}, {"sls", std::move(sls)}, {"levels", levelsOfVl(m, intent, vl)}};
        addLaneCounters(entry, VlCounterMetrics, p, vl);
        const bool shares = vl < ib::DataVlCount && p.hasVlMix;
        const bool judged = p.judged && vl < ib::DataVlCount;
        entry[AchievedShare.json] =
            shares ? jsonNumber(p.vls[vl].*AchievedShare.value) : Json(nullptr);
        entry["competing"] = shares ? Json(p.vls[vl].competing) : Json(nullptr);
        entry[IntendedShare.json] =
            judged ? jsonNumber(p.vls[vl].*IntendedShare.value) : Json(nullptr);
        vls.push_back(std::move(entry));
    }
    return vls;
}

Json slsJson(const Monitor& m, const PortReport& p) {
    Json sls = Json::array();
    for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
        if (!shownSl(m, p, sl)) continue;
        Json entry = {{"sl", sl}, {"levels", m.intent().levelsOfSl(sl)}};
        addLaneCounters(entry, SlCounterMetrics, p, sl);
        sls.push_back(std::move(entry));
    }
    return sls;
}

Json portJson(const Monitor& m, const PortReport& p) {
    const Fabric& fabric = m.fabric();
    const FabricPort& port = fabric.ports[p.port];
    const FabricNode& node = fabric.nodeOf(p.port);
    Json rates = Json::object();
    Json totals = Json::object();
    Json states = Json::object();
    for (const PortCounterMetric& metric : PortCounterMetrics) {
        const unsigned i = unsigned(metric.which);
        rates[std::string(metric.json) + "_per_second"] = deltaJson(p.counters[i]);
        totals[metric.json] = jsonNumber(p.totals.port[i]);
        states[metric.json] = deltaStateName(p.counters[i].state);
    }
    Json read = Json::array();
    for (Attribute a : PortAttributes)
        if (attributeRead(m, p.port, a)) read.push_back(perf::attributeName(a));
    return {{"node_guid", hex(node.guid, 16)},
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
            {"vls", vlsJson(m, p)},
            {"sls", slsJson(m, p)}};
}

Json findingsJson(const Monitor& m) {
    const Fabric& fabric = m.fabric();
    Json findings = Json::array();
    for (const Finding& f : m.last().findings) {
        const FabricNode& node = fabric.nodes[f.node];
        const bool below = f.kind == Finding::Kind::VlBelowShare;
        findings.push_back(
            {{"kind", findingKindName(f.kind)},
             {"node_guid", hex(node.guid, 16)},
             {"node_name", node.description},
             {"port", f.port == UINT32_MAX ? Json(nullptr) : Json(fabric.ports[f.port].number)},
             {"vl", f.vl >= 0 ? Json(f.vl) : Json(nullptr)},
             {"sl", f.sl >= 0 ? Json(f.sl) : Json(nullptr)},
             {AchievedShare.json, below ? jsonNumber(f.achieved) : Json(nullptr)},
             {IntendedShare.json, below ? jsonNumber(f.intended) : Json(nullptr)},
             {"message", f.message}});
    }
    return findings;
}

Json pmasJson(const Monitor& m) {
    const Fabric& fabric = m.fabric();
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
    return pmas;
}

Json supportJson(const Monitor& m) {
    Json support = Json::array();
    for (const auto& [key, value] : m.collector().support()) {
        if (value != Support::Yes && value != Support::No) continue;
        support.push_back({{"kind", describe(key.first)},
                           {"attribute", perf::attributeName(key.second)},
                           {"supported", value == Support::Yes}});
    }
    return support;
}

}  // namespace

Json reportJson(const Monitor& m) {
    Json ports = Json::array();
    for (const PortReport& p : m.last().ports) ports.push_back(portJson(m, p));
    return {{"scrape", scrapeJson(m.last())},
            {"ports", std::move(ports)},
            {"findings", findingsJson(m)},
            {"pmas", pmasJson(m)},
            {"support", supportJson(m)}};
}

}  // namespace ibqos::monitor
