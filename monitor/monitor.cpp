// SPDX-License-Identifier: MIT
// Monitor: counters to deltas (the x4 of data counters, saturation, resets), each output port's
// VL mix against its arbitration's intent, and the findings.
#include "monitor/monitor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/text.hpp"
#include "ib/qos.hpp"

namespace ibqos::monitor {

namespace perf = ib::perf;
using perf::Attribute;

const char* deltaStateName(DeltaState state) {
    switch (state) {
        case DeltaState::Ok:
            return "ok";
        case DeltaState::NotRead:
            return "not-read";
        case DeltaState::First:
            return "first";
        case DeltaState::Stale:
            return "stale";
        case DeltaState::Saturated:
            return "saturated";
        case DeltaState::Reset:
            return "reset";
    }
    return "?";
}

const char* findingKindName(Finding::Kind kind) {
    switch (kind) {
        case Finding::Kind::VlBelowShare:
            return "vl-below-share";
        case Finding::Kind::SlWithoutLevel:
            return "sl-without-level";
        case Finding::Kind::PmaUnanswered:
            return "pma-unanswered";
        case Finding::Kind::TablesDiffer:
            return "tables-differ";
        case Finding::Kind::CounterSaturated:
            return "counter-saturated";
    }
    return "?";
}

namespace {

// Counter `index` of an attribute over the last interval, times scale (bytes per data word). A
// counter at its maximum counted at least from the previous reading (or the clear) up to it.
Delta deltaOf(const AttributeHistory& h, unsigned index, double scale, uint64_t scrape) {
    Delta d;
    if (!h.current.valid) return d;
    const uint64_t now = h.current.values[index];
    const uint64_t before = h.previous.valid ? h.previous.values[index] : 0;
    if (h.scrape != scrape) {
        d.state = DeltaState::Stale;
    } else if (h.current.saturated & (1u << index)) {
        d.state = DeltaState::Saturated;
        if (h.previous.valid && before <= now) d.value = static_cast<double>(now - before) * scale;
    } else if (!h.previous.valid) {
        d.state = DeltaState::First;
    } else if (now < before) {
        d.state = DeltaState::Reset;
    } else {
        d.state = DeltaState::Ok;
        d.value = static_cast<double>(now - before) * scale;
    }
    if (h.previous.valid)
        d.seconds = std::chrono::duration<double>(h.current.at - h.previous.at).count();
    return d;
}

std::string percent(double v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.1f%%", v * 100);
    return buf;
}

}  // namespace

Monitor::Monitor(PmaTransport& transport, std::unique_ptr<FabricCompilation> compiled,
                 MonitorOptions options, std::vector<Drift> drift, SupportTable learnt)
    : transport_(transport),
      compiled_(std::move(compiled)),
      intent_(*compiled_),
      options_(options),
      drift_(std::move(drift)),
      collector_(transport, targetsOf(compiled_->fabric()), options.collector, std::move(learnt)) {
    reportOfPort_.assign(fabric().ports.size(), NoPort);
    size_t n = 0;
    for (const NodeTarget& t : collector_.targets()) {
        for (const PortTarget& p : t.ports) reportOfPort_[p.port] = static_cast<uint32_t>(n++);
    }
    totals_.resize(n);
}

PortReport Monitor::portReport(uint32_t target, const PortTarget& port, uint64_t scrape) {
    PortReport out;
    out.port = port.port;
    out.target = target;
    const PortSamples& s = *collector_.samples(port.port);
    const AttributeHistory& counters = s[Attribute::PortCounters];
    const AttributeHistory& extended = s[Attribute::PortCountersExtended];
    out.extended = extended.current.valid;
    out.extendedXmitWait = out.extended && collector_.status(target).extendedXmitWait();
    const double word = perf::DataWordBytes;
    for (unsigned i = 0; i < perf::PortCounterCount; ++i) {
        bool data =
            i == unsigned(perf::PortCounter::XmitData) || i == unsigned(perf::PortCounter::RcvData);
        bool wide =
            i == unsigned(perf::PortCounter::XmitWait) ? out.extendedXmitWait : out.extended;
        out.counters[i] = deltaOf(wide ? extended : counters, i, data ? word : 1, scrape);
    }
    for (unsigned lane = 0; lane < perf::Lanes; ++lane) {
        out.vlXmitWait[lane] = deltaOf(s[Attribute::PortVlXmitWaitCounters], lane, 1, scrape);
        out.vlRcvBytes[lane] = deltaOf(s[Attribute::PortVlOpData], lane, word, scrape);
        out.vlRcvPackets[lane] = deltaOf(s[Attribute::PortVlOpPackets], lane, 1, scrape);
        out.slXmitBytes[lane] = deltaOf(s[Attribute::PortXmitDataSl], lane, word, scrape);
        out.slRcvBytes[lane] = deltaOf(s[Attribute::PortRcvDataSl], lane, word, scrape);
    }
    for (Attribute a : PortAttributes) {
        const AttributeHistory& h = s[a];
        if (!h.current.valid || h.scrape != scrape || !h.current.saturated) continue;
        // (The wide attribute never saturates; a narrow counter the port reads wide is skipped.)
        if (a == Attribute::PortCounters && out.extended) continue;
        for (unsigned i = 0; i < perf::counterCount(a); ++i) {
            if (h.current.saturated & (1u << i))
                out.saturated.push_back(mad_field_name(perf::counterField(a, i)));
        }
        out.saturatedStays = out.saturatedStays || !collector_.clears(a);
    }
    // Congested: the port's XmitWait rose, or a VL's did (the per-VL counters are cleared after
    // each read, so they tell even where a narrow PortXmitWait stays at its maximum).
    out.congested = out.counters[unsigned(perf::PortCounter::XmitWait)].rose() ||
                    std::any_of(out.vlXmitWait.begin(), out.vlXmitWait.end(),
                                [](const Delta& d) { return d.rose(); });

    Totals& t = totals_[reportOfPort_[port.port]];
    auto add = [](double& total, const Delta& d) { total += d.known(); };
    for (unsigned i = 0; i < perf::PortCounterCount; ++i) add(t.port[i], out.counters[i]);
    for (unsigned lane = 0; lane < perf::Lanes; ++lane) {
        add(t.vlXmitWait[lane], out.vlXmitWait[lane]);
        add(t.vlRcvBytes[lane], out.vlRcvBytes[lane]);
        add(t.vlRcvPackets[lane], out.vlRcvPackets[lane]);
        add(t.slXmitBytes[lane], out.slXmitBytes[lane]);
        add(t.slRcvBytes[lane], out.slRcvBytes[lane]);
    }
    out.totals = t;
    return out;
}

// An output port's VL mix is what its link peer received per VL (PortVLOpData counts what a
// port receives). Which VLs competed: those whose XmitWait rose on this port (or, where the
// PMA has no per-VL XmitWait, those that carried traffic). Each competing VL is entitled at
// least to its share by the arbitration when every VL that carried traffic has packets waiting;
// a VL with less demand only leaves more to the others.
void Monitor::judge(PortReport& out, const std::vector<PortReport>& reports) {
    const Fabric& f = fabric();
    uint32_t peer = f.ports[out.port].peer;
    if (peer == NoPort || reportOfPort_[peer] == NoPort) return;
    const PortReport& in = reports[reportOfPort_[peer]];
    double total = 0;
    for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) total += in.vlRcvBytes[vl].known();
    if (total <= 0) return;
    out.hasVlMix = true;
    uint16_t carried = 0, waited = 0;
    bool perVlWait = false;
    for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) {
        const Delta& received = in.vlRcvBytes[vl];
        double bytes = received.known();
        out.vls[vl].achieved = bytes / total;
        out.vls[vl].lowerBound = received.state == DeltaState::Saturated;
        out.mixSaturated = out.mixSaturated || out.vls[vl].lowerBound;
        if (bytes > 0) carried |= static_cast<uint16_t>(1u << vl);
        const Delta& wait = out.vlXmitWait[vl];
        if (wait.ok() || wait.state == DeltaState::Saturated) {
            perVlWait = true;
            if (wait.rose()) waited |= static_cast<uint16_t>(1u << vl);
        }
    }
    uint16_t competing = perVlWait && waited ? waited : carried;
    for (unsigned vl = 0; vl < ib::DataVlCount; ++vl)
        out.vls[vl].competing = competing & (1u << vl);
    const PortIntent& intent = intent_.port(out.port);
    if (!out.congested || intent.setup < 0) return;
    out.judged = true;
    std::array<double, ib::DataVlCount> intended =
        intent_.shares(intent.setup, competing | carried);
    for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) out.vls[vl].intended = intended[vl];
}

const Report& Monitor::scrape() {
    Report report;
    Clock::time_point start = transport_.now();
    if (lastStart_) report.interval = std::chrono::duration<double>(start - *lastStart_).count();
    lastStart_ = start;
    report.stats = collector_.scrape();
    madsTotal_ += report.stats.sent;
    timeoutsTotal_ += report.stats.timedOut;
    report.madsTotal = madsTotal_;
    report.timeoutsTotal = timeoutsTotal_;
    report.unixTime =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

    const std::vector<NodeTarget>& targets = collector_.targets();
    for (uint32_t t = 0; t < targets.size(); ++t) {
        for (const PortTarget& p : targets[t].ports)
            report.ports.push_back(portReport(t, p, report.stats.scrape));
    }
    for (PortReport& p : report.ports) judge(p, report.ports);

    addFindings(report);
    remember(report);
    report_ = std::move(report);
    return report_;
}

// Findings: node by node, then port by port, in fabric order.
void Monitor::addFindings(Report& report) const {
    const std::vector<NodeTarget>& targets = collector_.targets();
    const Fabric& f = fabric();
    for (uint32_t t = 0; t < targets.size(); ++t) {
        const NodeStatus& status = collector_.status(t);
        if (status.answering) continue;
        const FabricNode& node = f.nodes[targets[t].node];
        report.findings.push_back(
            {Finding::Kind::PmaUnanswered, UINT32_MAX, targets[t].node, -1, -1, 0, 0,
             "the PMA of " + node.description + " (" + hex(node.guid, 16) + ") did not answer (" +
                 status.problem + "): its ports are skipped in this scrape"});
    }
    for (const PortReport& p : report.ports) addPortFindings(p, report);
    for (const Drift& d : drift_) {
        report.findings.push_back(
            {Finding::Kind::TablesDiffer, d.port, f.ports[d.port].node, -1, -1, 0, 0,
             f.portName(d.port) + " " + d.table + ": the fabric holds " + d.foundText() +
                 ", the policy compiles to " + tableText(d.expected) +
                 " (shares are judged against the compiled tables)"});
    }
}

void Monitor::addPortFindings(const PortReport& p, Report& report) const {
    const Fabric& f = fabric();
    const std::string name = f.portName(p.port);
    uint32_t node = f.ports[p.port].node;
    if (!p.saturated.empty()) {
        std::string list;
        for (const std::string& c : p.saturated) list += (list.empty() ? "" : ", ") + c;
        report.findings.push_back(
            {Finding::Kind::CounterSaturated, p.port, node, -1, -1, 0, 0,
             name + ": " + list +
                 " reached the counter's maximum in the last "
                 "interval: judged with what it counted up to it" +
                 (p.saturatedStays ? "; it stays there until something clears it "
                                     "(--reset-counters)"
                                   : "; it is cleared after each read, so the "
                                     "next interval is judged afresh")});
    }
    if (p.judged) {
        for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) {
            const VlShare& v = p.vls[vl];
            // A VL whose count saturated got at least what is known: never found below.
            if (!v.competing || v.lowerBound || v.achieved + options_.margin >= v.intended)
                continue;
            report.findings.push_back(
                {Finding::Kind::VlBelowShare, p.port, node, static_cast<int>(vl), -1, v.achieved,
                 v.intended,
                 "VL " + std::to_string(vl) + " of " + name + " got " + percent(v.achieved) +
                     " of the link while the port was congested; its arbitration intends " +
                     percent(v.intended) + " (margin " + percent(options_.margin) + ")"});
        }
    }
    for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
        if (!intent_.levelsOfSl(sl).empty()) continue;
        const Delta& rcv = p.slRcvBytes[sl];
        const Delta& xmit = p.slXmitBytes[sl];
        double bytes = std::max(rcv.ok() ? rcv.value : 0, xmit.ok() ? xmit.value : 0);
        if (bytes <= 0) continue;
        report.findings.push_back(
            {Finding::Kind::SlWithoutLevel, p.port, node, -1, static_cast<int>(sl), 0, 0,
             name + " carried " + decimal(bytes) + " bytes on SL " + std::to_string(sl) +
                 ", which no qos-level of the policy uses"});
    }
}

void Monitor::remember(const Report& report) {
    for (const PortReport& p : report.ports) {
        if (!p.judged) continue;
        history_[p.port].push_back({report.unixTime, p.vls});
        historyOrder_.push_back(p.port);
    }
    // Points come in time order: the oldest point kept is the first of its port's, and its port
    // is at the front of the order. Those older than the window go, then the oldest beyond the
    // bound.
    const double oldest = report.unixTime - options_.window;
    while (!historyOrder_.empty()) {
        auto it = history_.find(historyOrder_.front());
        if (historyOrder_.size() <= options_.historyPoints && it->second.front().unixTime >= oldest)
            break;
        it->second.pop_front();
        if (it->second.empty()) history_.erase(it);
        historyOrder_.pop_front();
    }
}

}  // namespace ibqos::monitor
