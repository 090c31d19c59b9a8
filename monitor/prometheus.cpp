// SPDX-License-Identifier: MIT
// A Monitor's last report in Prometheus' text exposition format, from the metric table.
#include <cmath>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "common/text.hpp"
#include "monitor/exposition.hpp"
#include "monitor/metrics.hpp"

namespace ibqos::monitor {

namespace perf = ib::perf;
using perf::Attribute;

namespace {

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
// requires it) after its HELP and TYPE lines. Descriptions are the metric table's, which lives
// as long as the program.
class Families {
  public:
    void add(const MetricDescription& metric, const Labels& labels, double value) {
        auto [it, fresh] = index_.emplace(std::string_view(metric.name), families_.size());
        if (fresh) families_.push_back({&metric, {}});
        std::string& out = families_[it->second].samples;
        out += metric.name;
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
            const MetricDescription& m = *f.metric;
            out += std::string("# HELP ") + m.name + " " + m.help + "\n# TYPE " + m.name + " " +
                   metricTypeName(m.type) + "\n";
            out += f.samples;
        }
        return out;
    }

  private:
    struct Family {
        const MetricDescription* metric;
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

// Each port: what it is, its PortCounters, whether it is congested, its saturated counters.
void writePorts(Families& out, const Monitor& m) {
    const Fabric& fabric = m.fabric();
    for (const PortReport& p : m.last().ports) {
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
        out.add(PortInfoMetric, info, 1);
        if (attributeRead(m, p.port, Attribute::PortCounters)) {
            for (const PortCounterMetric& metric : PortCounterMetrics)
                out.add(metric.metric, labels, p.totals.port[unsigned(metric.which)]);
            out.add(PortCongestedMetric, labels, p.congested);
        }
        for (const std::string& c : p.saturated)
            out.add(CounterSaturatedMetric, with(labels, "counter", c), 1);
    }
}

// A port's VLs: the SLs and levels its tables send on each, the per-VL counters and shares.
void writeVls(Families& out, const Monitor& m, const PortReport& p, const Labels& labels) {
    const PortIntent& intent = m.intent().port(p.port);
    bool read[VlCounterMetrics.size()];
    for (size_t i = 0; i < VlCounterMetrics.size(); ++i)
        read[i] = attributeRead(m, p.port, VlCounterMetrics[i].attribute);
    for (unsigned vl = 0; vl < ib::VlCount; ++vl) {
        if (!shownVl(m, p, vl)) continue;
        Labels v = with(labels, "vl", std::to_string(vl));
        if (intent.hasTables) {
            out.add(VlInfoMetric,
                    with(with(v, "sls", slList(intent.slsOfVl[vl])), "levels",
                         joined(levelsOfVl(m, intent, vl))),
                    1);
        }
        for (size_t i = 0; i < VlCounterMetrics.size(); ++i)
            if (read[i])
                out.add(VlCounterMetrics[i].metric, v, (p.totals.*VlCounterMetrics[i].total)[vl]);
        if (p.hasVlMix && vl < ib::DataVlCount)
            out.add(AchievedShare.metric, v, p.vls[vl].*AchievedShare.value);
        if (p.judged && vl < ib::DataVlCount && p.vls[vl].competing)
            out.add(IntendedShare.metric, v, p.vls[vl].*IntendedShare.value);
    }
}

// A port's SLs: the per-SL counters, labelled with each SL's levels.
void writeSls(Families& out, const Monitor& m, const PortReport& p, const Labels& labels) {
    bool read[SlCounterMetrics.size()];
    bool any = false;
    for (size_t i = 0; i < SlCounterMetrics.size(); ++i)
        any |= read[i] = attributeRead(m, p.port, SlCounterMetrics[i].attribute);
    for (unsigned sl = 0; sl < ib::SlCount && any; ++sl) {
        if (!shownSl(m, p, sl)) continue;
        Labels s = with(with(labels, "sl", std::to_string(sl)), "level",
                        joined(m.intent().levelsOfSl(sl)));
        for (size_t i = 0; i < SlCounterMetrics.size(); ++i)
            if (read[i])
                out.add(SlCounterMetrics[i].metric, s, (p.totals.*SlCounterMetrics[i].total)[sl]);
    }
}

// The policy's levels and the findings of the last scrape.
void writeLevelsAndFindings(Families& out, const Monitor& m) {
    const Fabric& fabric = m.fabric();
    for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
        for (const std::string& level : m.intent().levelsOfSl(sl))
            out.add(SlLevelInfoMetric, {{"sl", std::to_string(sl)}, {"level", level}}, 1);
    }
    for (const Finding& f : m.last().findings) {
        Labels labels = {{"kind", findingKindName(f.kind)}};
        const FabricNode& node = fabric.nodes[f.node];
        labels.add("node_guid", hex(node.guid, 16));
        labels.add("node_name", node.description);
        if (f.port != UINT32_MAX) labels.add("port", std::to_string(fabric.ports[f.port].number));
        if (f.vl >= 0) labels.add("vl", std::to_string(f.vl));
        if (f.sl >= 0) labels.add("sl", std::to_string(f.sl));
        out.add(FindingMetric, labels, 1);
    }
}

// The collector: which PMAs answer, what each device kind supports, how the scrapes went.
void writeCollector(Families& out, const Monitor& m) {
    const Fabric& fabric = m.fabric();
    const std::vector<NodeTarget>& targets = m.collector().targets();
    for (size_t t = 0; t < targets.size(); ++t) {
        const FabricNode& node = fabric.nodes[targets[t].node];
        out.add(PmaUpMetric, {{"node_guid", hex(node.guid, 16)}, {"node_name", node.description}},
                m.collector().status(t).answering);
    }
    for (const auto& [key, support] : m.collector().support()) {
        if (support != Support::Yes && support != Support::No) continue;
        const DeviceKind& kind = key.first;
        out.add(AttributeSupportedMetric,
                {{"node_type", nodeTypeLabel(kind.type)},
                 {"vendor_id", hex(kind.vendorId)},
                 {"device_id", hex(kind.deviceId)},
                 {"revision", hex(kind.revision)},
                 {"attribute", perf::attributeName(key.second)}},
                support == Support::Yes);
    }
    const Report& r = m.last();
    const ScrapeStats& s = r.stats;
    for (const ScrapeMetric& metric : CollectorMetrics) out.add(metric.metric, {}, metric.value(r));
    for (const auto& [attribute, count] : s.sentByAttribute)
        out.add(ScrapeMadsMetric, {{"attribute", perf::attributeName(attribute)}},
                static_cast<double>(count));
    for (const ScrapeMetric& metric : ScrapeTimeMetrics)
        out.add(metric.metric, {}, metric.value(r));
    out.add(ScrapePortsMetric, {{"state", "planned"}}, static_cast<double>(s.portsPlanned));
    out.add(ScrapePortsMetric, {{"state", "read"}}, static_cast<double>(s.portsRead));
    out.add(BudgetReachedMetric, {}, s.budgetReached);
}

}  // namespace

std::string prometheusText(const Monitor& m) {
    Families out;
    writePorts(out, m);
    for (const PortReport& p : m.last().ports) {
        Labels labels = portLabels(m.fabric(), p.port);
        writeVls(out, m, p, labels);
        writeSls(out, m, p, labels);
    }
    writeLevelsAndFindings(out, m);
    writeCollector(out, m);
    return out.text();
}

}  // namespace ibqos::monitor
