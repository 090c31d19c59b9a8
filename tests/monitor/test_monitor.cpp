// SPDX-License-Identifier: MIT
// Unit tests of the monitor: the PerfMgt codec, the collector's scrapes against a fake PMA
// (bounds, support learnt once per device kind, PMAs that do not answer, the MAD budget), and
// recorded counter sequences turned into deltas, VL shares against the intent, findings and
// Prometheus text.
#include <catch2/catch.hpp>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/text.hpp"
#include "monitor/exposition.hpp"
#include "monitor/monitor.hpp"
#include "monitor/perf_codec.hpp"
#include "tests/doubles/fake_fabric.hpp"
#include "tests/doubles/fake_pma.hpp"
#include "tests/policy_text.hpp"

using namespace ibqos;
using namespace ibqos::monitor;
using namespace std::chrono_literals;
using ib::perf::Attribute;
using ib::perf::PortCounter;

namespace {

constexpr unsigned Hosts = 4;
constexpr uint16_t SwitchLid = FakeLeafFabric::SwitchLid;
uint16_t hostLid(unsigned h) { return FakeLeafFabric::hostLid(h); }

std::vector<std::string> hostNames() {
    std::vector<std::string> names;
    for (unsigned h = 0; h < Hosts; ++h) names.push_back("h" + std::to_string(h) + " HCA-1");
    return names;
}

// A leaf switch "Leaf" (LID 1) whose ports 1-4 lead to the single-port CAs "h0".."h3" (LIDs
// 2-5), and the same nodes as PMAs of a fake.
struct Lab : FakeLeafFabric {
    explicit Lab(std::chrono::microseconds roundTrip = 50us,
                 std::chrono::milliseconds timeout = 500ms, const std::string& leafName = "Leaf")
        : FakeLeafFabric(hostNames(), leafName, roundTrip, timeout) {}
};

// Options whose scrapes only read (no counter cleared), so that MAD counts are of reads.
CollectorOptions fastOptions() {
    CollectorOptions o;
    o.timeout = 500ms;
    o.retries = 1;
    o.reset = CounterReset::None;
    return o;
}

const char* const Policy =
    "port-groups\n"
    "  port-group\n    name: storage\n    port-name: \"h0 HCA-1/P1\"\n  end-port-group\n"
    "  port-group\n    name: compute\n    port-name: \"h1 HCA-1/P1\", \"h2 HCA-1/P1\"\n"
    "  end-port-group\n"
    "end-port-groups\n"
    "qos-setup\n  vlarb-tables\n    vlarb-scope\n      across: storage\n"
    "      bandwidth: 1:50%, 2:30%, 3:20%\n    end-vlarb-scope\n  end-vlarb-tables\n"
    "end-qos-setup\n"
    "qos-levels\n"
    "  qos-level\n    name: default\n    sl: 0\n  end-qos-level\n"
    "  qos-level\n    name: fast\n    sl: 1\n  end-qos-level\n"
    "  qos-level\n    name: bulk\n    sl: 2\n  end-qos-level\n"
    "end-qos-levels\n";

// The policy compiled for the lab's fabric, and a Monitor reading it through the fake.
struct Watched {
    test::Compiled policy{Policy};
    std::unique_ptr<Monitor> monitor;

    Watched(Lab& lab, MonitorOptions options = {}) {
        REQUIRE_FALSE(policy.diagnostics.hasErrors());
        Diagnostics d;
        auto compiled = FabricCompilation::compile(policy.policy, lab.fabric, OpenSmConf{}, d);
        REQUIRE_FALSE(d.hasErrors());
        monitor = std::make_unique<Monitor>(lab.pma, std::move(compiled), options);
    }
    const PortReport& port(uint32_t fabricPort) const {
        for (const PortReport& p : monitor->last().ports)
            if (p.port == fabricPort) return p;
        FAIL("no report for port " << fabricPort);
        throw;
    }
};

size_t countFindings(const Report& r, Finding::Kind kind) {
    return static_cast<size_t>(std::count_if(r.findings.begin(), r.findings.end(),
                                             [&](const Finding& f) { return f.kind == kind; }));
}

}  // namespace

TEST_CASE("The codec writes PortSelect and reads counters through libibmad's field table",
          "[monitor][codec]") {
    PerfData request = requestData(Attribute::PortCountersExtended, 7);
    CHECK(decodePortSelect(Attribute::PortCountersExtended, request) == 7);
    // PortSelect is byte 1 of the attribute data (IBA 16.1.3.5).
    CHECK(request[1] == 7);

    PerfData extended{}, vl{};
    encodeCounter(Attribute::PortCountersExtended, unsigned(PortCounter::XmitData),
                  0x0123456789abcdefULL, extended);
    // 64 bits at byte 8 of the attribute (IBA 16.1.4.10), big-endian.
    CHECK(extended[8] == 0x01);
    CHECK(extended[15] == 0xef);
    encodeCounter(Attribute::PortVlXmitWaitCounters, 3, 1234, vl);
    Sample wide = decodeSample(Attribute::PortCountersExtended, extended, Clock::time_point{});
    CHECK(wide.values[unsigned(PortCounter::XmitData)] == 0x0123456789abcdefULL);
    CHECK(wide.saturated == 0);
    Sample lanes = decodeSample(Attribute::PortVlXmitWaitCounters, vl, Clock::time_point{});
    CHECK(lanes.values[3] == 1234);
    CHECK(lanes.values[2] == 0);
}

TEST_CASE("A counter at its field's maximum is read as saturated", "[monitor][codec]") {
    // PortVLXmitWait is 16 bits, PortXmitData 32: a value beyond is written as the maximum.
    CHECK(counterMaximum(Attribute::PortVlXmitWaitCounters, 0) == 0xffff);
    CHECK(counterMaximum(Attribute::PortCounters, unsigned(PortCounter::XmitData)) == 0xffffffff);
    CHECK(counterMaximum(Attribute::PortCountersExtended, 0) == UINT64_MAX);
    PerfData lanes{}, counters{};
    encodeCounter(Attribute::PortVlXmitWaitCounters, 2, 70000, lanes);
    encodeCounter(Attribute::PortCounters, unsigned(PortCounter::RcvData), 0xffffffff, counters);
    Sample vl = decodeSample(Attribute::PortVlXmitWaitCounters, lanes, {});
    CHECK(vl.values[2] == 0xffff);
    CHECK(vl.saturated == (1u << 2));
    Sample pc = decodeSample(Attribute::PortCounters, counters, {});
    CHECK(pc.saturated == (1u << unsigned(PortCounter::RcvData)));
}

TEST_CASE("A scrape reads every port, one MAD outstanding per node, within the in-flight bound",
          "[monitor][collector]") {
    Lab lab;
    CollectorOptions options = fastOptions();
    options.inFlight = 3;
    Collector collector(lab.pma, targetsOf(lab.fabric), options);
    ScrapeStats first = collector.scrape();
    CHECK(first.portsPlanned == 2 * Hosts);
    CHECK(first.portsRead == 2 * Hosts);
    CHECK(lab.pma.overlaps() == 0);
    CHECK(lab.pma.maxInFlight() <= 3);
    CHECK(first.maxInFlight == 3);
    // ClassPortInfo once per node, then seven attributes per port (everything answers).
    CHECK(lab.pma.sentOf(Attribute::ClassPortInfo) == 1 + Hosts);
    CHECK(lab.pma.sentOf(Attribute::PortCounters) == 2 * Hosts);
    CHECK(lab.pma.sentOf(Attribute::PortRcvDataSl) == 2 * Hosts);
    CHECK(first.sent == 1 + Hosts + 7 * 2 * Hosts);
    CHECK(first.timedOut == 0);
    // The switch's ports are asked by PortSelect, each CA's own port by its number.
    std::set<uint8_t> switchPorts;
    for (const FakePma::Sent& s : lab.pma.sent())
        if (s.lid == SwitchLid && s.attribute == Attribute::PortCounters)
            switchPorts.insert(s.portSelect);
    CHECK(switchPorts == std::set<uint8_t>{1, 2, 3, 4});

    ScrapeStats second = collector.scrape();
    CHECK(second.sent == 7 * 2 * Hosts);  // ClassPortInfo is not asked again
    CHECK(lab.pma.overlaps() == 0);
}

TEST_CASE("By default a scrape clears the per-VL and per-SL counters it read, and nothing else",
          "[monitor][collector]") {
    Lab lab;
    CollectorOptions options = fastOptions();
    options.reset = CounterReset::Lanes;
    Collector collector(lab.pma, targetsOf(lab.fabric), options);
    lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 2) = 500;
    lab.pma.counter(hostLid(0), 1, Attribute::PortXmitDataSl, 4) = 600;
    lab.pma.counter(hostLid(0), 1, Attribute::PortCounters, 0) = 700;
    ScrapeStats first = collector.scrape();
    // One Set for each of the five lane attributes of every port, after its read.
    size_t sets = 0;
    for (const FakePma::Sent& s : lab.pma.sent()) {
        if (s.method != IB_MAD_METHOD_SET) continue;
        ++sets;
        CHECK(ib::perf::isLaneAttribute(s.attribute));
    }
    CHECK(sets == 5 * 2 * Hosts);
    CHECK(first.sent == 1 + Hosts + (7 + 5) * 2 * Hosts);
    CHECK(lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 2) == 0);
    CHECK(lab.pma.counter(hostLid(0), 1, Attribute::PortXmitDataSl, 4) == 0);
    CHECK(lab.pma.counter(hostLid(0), 1, Attribute::PortCounters, 0) == 700);
    // What a port counts after the clear is the next interval's delta.
    lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 2) = 25;
    lab.pma.advance(1s);
    collector.scrape();
    const AttributeHistory& h = (*collector.samples(lab.hostPort(0)))[Attribute::PortVlOpData];
    CHECK(h.previous.values[2] == 0);
    CHECK(h.current.values[2] == 25);
}

TEST_CASE("A device kind that drops the per-SL MADs costs one timeout per kind, not per port",
          "[monitor][collector]") {
    Lab lab;
    lab.pma.node(SwitchLid).dropped = {Attribute::PortXmitDataSl, Attribute::PortRcvDataSl};
    for (unsigned h = 0; h < Hosts; ++h)
        lab.pma.node(hostLid(h)).dropped = {Attribute::PortXmitDataSl, Attribute::PortRcvDataSl};
    CollectorOptions options = fastOptions();
    Collector collector(lab.pma, targetsOf(lab.fabric), options);
    size_t timedOut = 0;
    for (int scrape = 0; scrape < 3; ++scrape) {
        ScrapeStats s = collector.scrape();
        timedOut += s.timedOut;
        CHECK(s.portsRead == 2 * Hosts);
        CHECK(s.nodesUnanswered == 0);
        lab.pma.advance(1s);
    }
    // Two kinds (the switch, the CAs), each asked once with its retry; PortRcvDataSL never.
    CHECK(timedOut == 2 * (1 + options.retries));
    CHECK(lab.pma.sentOf(Attribute::PortXmitDataSl) == 2 * (1 + options.retries));
    CHECK(lab.pma.sentOf(Attribute::PortRcvDataSl) == 0);
    CHECK(collector.support({NodeType::Switch}, Attribute::PortRcvDataSl) == Support::No);
    CHECK(collector.support({NodeType::Ca}, Attribute::PortXmitDataSl) == Support::No);
    CHECK(collector.support({NodeType::Ca}, Attribute::PortVlOpData) == Support::Yes);
    CHECK(lab.pma.overlaps() == 0);
}

TEST_CASE("The support probe's timeout is paid once, while the kind's other ports wait",
          "[monitor][collector]") {
    Lab lab(1ms, 200ms);
    for (unsigned h = 0; h < Hosts; ++h)
        lab.pma.node(hostLid(h)).dropped = {Attribute::PortVlXmitWaitCounters};
    CollectorOptions options = fastOptions();
    options.timeout = 200ms;
    options.retries = 0;
    Collector collector(lab.pma, targetsOf(lab.fabric), options);
    ScrapeStats s = collector.scrape();
    CHECK(s.timedOut == 1);
    // The per-VL family goes with its first attribute: no CA is asked PortVLOpData.
    size_t caVlData = 0;
    for (const FakePma::Sent& sent : lab.pma.sent())
        caVlData += sent.lid != SwitchLid && sent.attribute == Attribute::PortVlOpData;
    CHECK(caVlData == 0);
    // All CAs waited on the one probe: the scrape took one timeout, not one per CA.
    CHECK(s.seconds < 0.2 + 0.05);
    CHECK(s.seconds >= 0.2);
}

TEST_CASE("An attribute refused with a status is learnt without a timeout",
          "[monitor][collector]") {
    Lab lab;
    lab.pma.node(SwitchLid).refused = {Attribute::PortVlOpPackets};
    Collector collector(lab.pma, targetsOf(lab.fabric), fastOptions());
    ScrapeStats s = collector.scrape();
    CHECK(s.timedOut == 0);
    CHECK(s.errors == 0);
    CHECK(collector.support({NodeType::Switch}, Attribute::PortVlOpPackets) == Support::No);
    CHECK(collector.support({NodeType::Switch}, Attribute::PortVlOpData) == Support::Yes);
    collector.scrape();
    size_t asked = 0;
    for (const FakePma::Sent& sent : lab.pma.sent())
        asked += sent.lid == SwitchLid && sent.attribute == Attribute::PortVlOpPackets;
    CHECK(asked == 1);
}

TEST_CASE("A PMA that does not answer is reported and skipped", "[monitor][collector]") {
    Lab lab;
    lab.pma.node(hostLid(2)).silent = true;
    Watched w(lab);
    const Report& r = w.monitor->scrape();
    CHECK(r.stats.nodesUnanswered == 1);
    CHECK(r.stats.portsRead == 2 * Hosts - 1);
    REQUIRE(countFindings(r, Finding::Kind::PmaUnanswered) == 1);
    const Finding& f = *std::find_if(r.findings.begin(), r.findings.end(), [](const Finding& f) {
        return f.kind == Finding::Kind::PmaUnanswered;
    });
    CHECK(lab.fabric.nodes[f.node].description == "h2 HCA-1");
    CHECK_THAT(f.message, Catch::Contains("ClassPortInfo"));
    // Only its ClassPortInfo was asked (and retried), none of its counters.
    size_t toSilent = 0;
    for (const FakePma::Sent& s : lab.pma.sent()) toSilent += s.lid == hostLid(2);
    CHECK(toSilent == 2);

    // A PMA that answered and then stops costs one timeout (and its retry), not one per MAD.
    lab.pma.node(hostLid(2)).silent = false;
    lab.pma.advance(1s);
    CHECK(w.monitor->scrape().stats.portsRead == 2 * Hosts);
    CHECK(w.monitor->last().stats.nodesUnanswered == 0);
    lab.pma.node(SwitchLid).silent = true;
    lab.pma.advance(1s);
    size_t before = lab.pma.sent().size();
    const Report& silent = w.monitor->scrape();
    size_t toSwitch = 0;
    for (size_t i = before; i < lab.pma.sent().size(); ++i)
        toSwitch += lab.pma.sent()[i].lid == SwitchLid;
    CHECK(toSwitch == 2);
    CHECK(silent.stats.portsRead == Hosts);
    CHECK(countFindings(silent, Finding::Kind::PmaUnanswered) == 1);
    std::string text = prometheusText(*w.monitor);
    CHECK_THAT(text,
               Catch::Contains("ibqos_monitor_pma_up{node_guid=\"0x0000000000200000\",node_name="
                               "\"Leaf\"} 0"));
}

TEST_CASE("A scrape stops at the MAD budget and the next one goes on from there",
          "[monitor][collector]") {
    Lab lab;
    CollectorOptions options = fastOptions();
    options.madBudget = 20;
    Collector collector(lab.pma, targetsOf(lab.fabric), options);
    std::set<uint32_t> read;
    for (int scrape = 0; scrape < 4; ++scrape) {
        ScrapeStats s = collector.scrape();
        CHECK(s.sent <= options.madBudget);
        CHECK(s.budgetReached);
        for (const NodeTarget& t : collector.targets()) {
            for (const PortTarget& p : t.ports)
                if (collector.samples(p.port)->attributes[0].scrape == s.scrape)
                    read.insert(p.port);
        }
        lab.pma.advance(1s);
    }
    // 8 ports of 7 MADs each and 5 ClassPortInfo: the budget of 20 reaches them all in 4.
    CHECK(read.size() == 2 * Hosts);
}

TEST_CASE("Scrape time follows the round trip, the in-flight bound and each node's chain",
          "[monitor][collector]") {
    // 8 CAs' 7 MADs each and a switch's 4 x 7 = 28 in a chain: with 4 in flight, the switch's
    // chain (29 round trips with ClassPortInfo) decides when the scrape ends.
    Lab lab(1ms, 500ms);
    CollectorOptions options = fastOptions();
    options.inFlight = 4;
    Collector collector(lab.pma, targetsOf(lab.fabric), options);
    ScrapeStats s = collector.scrape();
    CHECK(s.sent == 61);
    CHECK(s.seconds == Approx(0.029).margin(0.0015));
    options.inFlight = 1;
    Collector serial(lab.pma, targetsOf(lab.fabric), options);
    CHECK(serial.scrape().seconds == Approx(0.061).margin(0.0015));
}

TEST_CASE("Data counters are 4-byte words, XmitWait ticks, from the 64-bit counters when there",
          "[monitor][rates]") {
    Lab lab;
    lab.pma.node(hostLid(1)).capabilityMask = ib::perf::CapXmitWait;  // no PortCountersExtended
    Watched w(lab);
    w.monitor->scrape();
    lab.pma.counter(SwitchLid, 1, Attribute::PortCountersExtended, 0) += 1000;  // words
    lab.pma.counter(SwitchLid, 1, Attribute::PortCountersExtended, 2) += 10;
    lab.pma.counter(SwitchLid, 1, Attribute::PortCounters, 0) += 999;  // not read: extended
    lab.pma.counter(SwitchLid, 1, Attribute::PortCounters, 4) += 77;
    lab.pma.counter(hostLid(1), 1, Attribute::PortCounters, 1) += 250;
    lab.pma.advance(2s);
    w.monitor->scrape();
    const PortReport& leaf1 = w.port(lab.leafPort(1));
    CHECK(leaf1.extended);
    CHECK(leaf1.counters[0].ok());
    CHECK(leaf1.counters[0].value == 4000);
    CHECK(leaf1.counters[0].rate() == Approx(2000).epsilon(0.01));
    CHECK(leaf1.counters[2].value == 10);
    CHECK(leaf1.counters[4].value == 77);  // ticks, as counted
    CHECK(leaf1.congested);
    const PortReport& h1 = w.port(lab.hostPort(1));
    CHECK_FALSE(h1.extended);
    CHECK(h1.counters[1].value == 1000);
    CHECK(h1.totals.port[1] == 1000);
    CHECK_FALSE(h1.congested);
}

TEST_CASE("A recorded sequence with saturation and a reset gives what it can know of each delta",
          "[monitor][rates]") {
    Lab lab;
    lab.pma.node(hostLid(0)).capabilityMask = ib::perf::CapXmitWait;
    Watched w(lab);
    // PortXmitData of h0 as read scrape by scrape (words): 100, 300, stopped at its maximum
    // twice, then cleared by someone and at 50, then 80.
    const uint64_t sequence[] = {100, 300, 0xffffffff, 0xffffffff, 50, 80};
    const DeltaState expected[] = {DeltaState::First,     DeltaState::Ok,    DeltaState::Saturated,
                                   DeltaState::Saturated, DeltaState::Reset, DeltaState::Ok};
    double total = 0;
    for (size_t i = 0; i < std::size(sequence); ++i) {
        lab.pma.counter(hostLid(0), 1, Attribute::PortCounters, 0) = sequence[i];
        const Report& r = w.monitor->scrape();
        const PortReport& p = w.port(lab.hostPort(0));
        INFO("reading " << i);
        CHECK(p.counters[0].state == expected[i]);
        bool saturated = expected[i] == DeltaState::Saturated;
        // At its maximum, it counted at least from the last reading up to it (nothing more once
        // it stays there).
        if (i == 2) CHECK(p.counters[0].value == (0xffffffffu - 300.0) * 4);
        if (i == 3) CHECK(p.counters[0].value == 0);
        total += p.counters[0].known();
        CHECK(p.totals.port[0] == total);
        CHECK(countFindings(r, Finding::Kind::CounterSaturated) == (saturated ? 1u : 0u));
        if (saturated) CHECK(p.saturated == std::vector<std::string>{"PortXmitData"});
        lab.pma.advance(1s);
    }
    CHECK(total == (200 + (0xffffffffu - 300.0) + 30) * 4);
}

TEST_CASE("Resetting all counters clears PortCounters' too and counts from the clear",
          "[monitor][rates]") {
    Lab lab;
    lab.pma.node(hostLid(0)).capabilityMask = ib::perf::CapXmitWait;
    MonitorOptions options;
    options.collector.reset = CounterReset::All;
    Watched w(lab, options);
    lab.pma.counter(hostLid(0), 1, Attribute::PortCounters, 0) = 500;
    w.monitor->scrape();
    CHECK(lab.pma.counter(hostLid(0), 1, Attribute::PortCounters, 0) == 0);
    size_t sets = 0;
    for (const FakePma::Sent& s : lab.pma.sent()) sets += s.method == IB_MAD_METHOD_SET;
    CHECK(sets > 0);
    lab.pma.counter(hostLid(0), 1, Attribute::PortCounters, 0) = 40;
    lab.pma.advance(1s);
    w.monitor->scrape();
    const PortReport& p = w.port(lab.hostPort(0));
    CHECK(p.counters[0].ok());
    CHECK(p.counters[0].value == 160);
}

TEST_CASE("Per-SL counters are labelled with the policy's levels; an SL without one is a finding",
          "[monitor][sl]") {
    Lab lab;
    Watched w(lab);
    w.monitor->scrape();
    lab.pma.counter(hostLid(3), 1, Attribute::PortXmitDataSl, 1) += 100;
    lab.pma.counter(hostLid(3), 1, Attribute::PortRcvDataSl, 5) += 7;
    lab.pma.advance(1s);
    const Report& r = w.monitor->scrape();
    const PortReport& h3 = w.port(lab.hostPort(3));
    CHECK(h3.slXmitBytes[1].value == 400);
    CHECK(h3.slRcvBytes[5].value == 28);
    REQUIRE(countFindings(r, Finding::Kind::SlWithoutLevel) == 1);
    auto f = std::find_if(r.findings.begin(), r.findings.end(),
                          [](const Finding& f) { return f.kind == Finding::Kind::SlWithoutLevel; });
    CHECK(f->sl == 5);
    CHECK(f->port == lab.hostPort(3));
    std::string text = prometheusText(*w.monitor);
    CHECK_THAT(text, Catch::Contains("ibqos_port_sl_transmit_bytes_total{node_guid="
                                     "\"0x0000000000100006\",node_name=\"h3 HCA-1\",port=\"1\","
                                     "sl=\"1\",level=\"fast\"} 400"));
    CHECK_THAT(text, Catch::Contains("sl=\"5\",level=\"\"} 28"));
    CHECK_THAT(text, Catch::Contains("ibqos_finding{kind=\"sl-without-level\",node_guid="
                                     "\"0x0000000000100006\",node_name=\"h3 HCA-1\",port=\"1\","
                                     "sl=\"5\"} 1"));
}

TEST_CASE("A congested output port's VL mix is judged against its arbitration's intent",
          "[monitor][shares]") {
    Lab lab;
    Watched w(lab);
    w.monitor->scrape();
    // Leaf/P1 sends to h0 (the storage group's port, whose ingress has bandwidth 50/30/20 on
    // VLs 1-3). Its XmitWait rises on VLs 1 and 2; h0 receives 1000, 2000 and 1000 words on
    // VLs 1, 2 and 3.
    lab.pma.counter(SwitchLid, 1, Attribute::PortCounters, 4) += 5000;
    lab.pma.counter(SwitchLid, 1, Attribute::PortVlXmitWaitCounters, 1) += 10;
    lab.pma.counter(SwitchLid, 1, Attribute::PortVlXmitWaitCounters, 2) += 10;
    lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 1) += 1000;
    lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 2) += 2000;
    lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 3) += 1000;
    lab.pma.advance(1s);
    const Report& r = w.monitor->scrape();
    const PortReport& leaf1 = w.port(lab.leafPort(1));
    REQUIRE(leaf1.hasVlMix);
    REQUIRE(leaf1.judged);
    CHECK(leaf1.vls[1].achieved == Approx(0.25));
    CHECK(leaf1.vls[2].achieved == Approx(0.5));
    CHECK(leaf1.vls[3].achieved == Approx(0.25));
    CHECK(leaf1.vls[1].competing);
    CHECK_FALSE(leaf1.vls[3].competing);
    // Among VLs 1-3 the low table gives 50, 30 and 20 % (the high table's VL 0 is idle).
    CHECK(leaf1.vls[1].intended == Approx(0.5));
    CHECK(leaf1.vls[2].intended == Approx(0.3));
    REQUIRE(countFindings(r, Finding::Kind::VlBelowShare) == 1);
    auto f = std::find_if(r.findings.begin(), r.findings.end(),
                          [](const Finding& f) { return f.kind == Finding::Kind::VlBelowShare; });
    CHECK(f->vl == 1);
    CHECK(f->port == lab.leafPort(1));
    CHECK_THAT(f->message, Catch::Contains("25.0%") && Catch::Contains("50.0%"));
    // The other leaf ports carried nothing: no mix, no judgement.
    CHECK_FALSE(w.port(lab.leafPort(2)).hasVlMix);
    CHECK(w.monitor->history().count(lab.leafPort(1)) == 1);
    CHECK_THAT(sharesSvg(*w.monitor), Catch::Contains("Leaf/P1") && Catch::Contains("VL 1: 25%"));

    // Every metric the Grafana dashboard in docs/ plots is one the monitor writes.
    std::set<std::string> families;
    std::istringstream lines(prometheusText(*w.monitor));
    for (std::string line; std::getline(lines, line);)
        if (line.rfind("# TYPE ", 0) == 0) families.insert(line.substr(7, line.find(' ', 7) - 7));
    std::string dashboard = test::slurp(IBQOS_SOURCE_ROOT "/docs/grafana-ibqos-monitor.json");
    REQUIRE_FALSE(dashboard.empty());
    std::regex metric(R"(\bibqos_[a-z_]+)");
    size_t used = 0;
    for (auto it = std::sregex_iterator(dashboard.begin(), dashboard.end(), metric);
         it != std::sregex_iterator(); ++it) {
        INFO(it->str());
        CHECK(families.count(it->str()) == 1);
        ++used;
    }
    CHECK(used >= 10);

    // Not congested: the same mix is shown, not judged.
    lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 1) += 1000;
    lab.pma.advance(1s);
    const Report& quiet = w.monitor->scrape();
    CHECK(w.port(lab.leafPort(1)).hasVlMix);
    CHECK_FALSE(w.port(lab.leafPort(1)).judged);
    CHECK(countFindings(quiet, Finding::Kind::VlBelowShare) == 0);

    // VL 1 at 50 % where VLs 1 and 2 compete for 62.5 % and 37.5 %: a finding with the default
    // margin (5 points), none within a margin of 30 points.
    MonitorOptions wide;
    wide.margin = 0.3;
    Lab lab2;
    Watched w2(lab2, wide);
    w2.monitor->scrape();
    lab2.pma.counter(SwitchLid, 1, Attribute::PortCounters, 4) += 5000;
    lab2.pma.counter(SwitchLid, 1, Attribute::PortVlXmitWaitCounters, 1) += 10;
    lab2.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 1) += 2000;
    lab2.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 2) += 2000;
    lab2.pma.advance(1s);
    CHECK(countFindings(w2.monitor->scrape(), Finding::Kind::VlBelowShare) == 0);
    const PortReport& judged = w2.port(lab2.leafPort(1));
    CHECK(judged.vls[1].achieved == Approx(0.5));
    CHECK(judged.vls[1].intended == Approx(0.625));
}

TEST_CASE("Prometheus text: one HELP and TYPE per family, labels by convention, escaped",
          "[monitor][exposition]") {
    Lab lab;
    Watched w(lab);
    w.monitor->scrape();
    lab.pma.counter(SwitchLid, 2, Attribute::PortCountersExtended, 1) += 3;
    lab.pma.counter(hostLid(1), 1, Attribute::PortVlOpData, 0) += 5;
    lab.pma.advance(1s);
    w.monitor->scrape();
    std::string text = prometheusText(*w.monitor);
    CHECK_THAT(text, Catch::Contains("ibqos_port_receive_bytes_total{node_guid="
                                     "\"0x0000000000200000\",node_name=\"Leaf\",port=\"2\"} 12\n"));
    CHECK_THAT(text, Catch::Contains("ibqos_port_vl_receive_bytes_total{node_guid="
                                     "\"0x0000000000100002\",node_name=\"h1 HCA-1\",port=\"1\","
                                     "vl=\"0\"} 20\n"));
    CHECK_THAT(text, Catch::Contains("ibqos_port_info{node_guid=\"0x0000000000100002\",node_name="
                                     "\"h1 HCA-1\",port=\"1\",node_type=\"ca\",lid=\"3\","
                                     "groups=\"compute\",peer_node_guid=\"0x0000000000200000\","
                                     "peer_port=\"2\"} 1\n"));
    // Every sample line belongs to a family announced once, before its samples.
    std::map<std::string, int> helps, types;
    std::set<std::string> seen;
    std::istringstream lines(text);
    std::regex sample(R"(^([a-z_]+)(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? -?[0-9.e+NaN]+$)");
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("# HELP ", 0) == 0) {
            ++helps[line.substr(7, line.find(' ', 7) - 7)];
        } else if (line.rfind("# TYPE ", 0) == 0) {
            std::string name = line.substr(7, line.find(' ', 7) - 7);
            ++types[name];
            std::string type = line.substr(line.rfind(' ') + 1);
            CHECK((type == "counter" || type == "gauge"));
            if (type == "counter") CHECK(name.size() > 6);
            if (type == "counter") CHECK(name.substr(name.size() - 6) == "_total");
        } else {
            INFO(line);
            CHECK(std::regex_match(line, sample));
            std::string name = line.substr(0, line.find_first_of("{ "));
            CHECK(types.count(name) == 1);
        }
    }
    for (const auto& [name, n] : helps) CHECK(n == 1);
    for (const auto& [name, n] : types) CHECK(n == 1);
    CHECK(types.count("ibqos_monitor_mads_total") == 1);
}

TEST_CASE("Label values are escaped as the text format asks", "[monitor][exposition]") {
    Lab lab(50us, 500ms, "Leaf \"A\"\\1");
    Watched w(lab);
    w.monitor->scrape();
    CHECK_THAT(prometheusText(*w.monitor),
               Catch::Contains("node_name=\"Leaf \\\"A\\\"\\\\1\",port=\"1\""));
}

TEST_CASE("UTF-8 is checked as RFC 3629 defines it, and what is not is escaped byte by byte",
          "[monitor][exposition]") {
    CHECK(validUtf8("caf\xc3\xa9") == "caf\xc3\xa9");  // é, well formed
    CHECK(validUtf8("caf\xe9 n\xf6"
                    "de") == "caf\\xe9 n\\xf6de");                   // Latin-1
    CHECK(validUtf8("\xc0\xaf") == "\\xc0\\xaf");                    // an overlong '/'
    CHECK(validUtf8("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // a surrogate
    CHECK(validUtf8("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
    CHECK(validUtf8("\xe2\x82") == "\\xe2\\x82");                    // cut short
    CHECK(validUtf8("\xf0\x9f\x98\x80!") == "\xf0\x9f\x98\x80!");    // U+1F600
    CHECK(xmlText("<a & \"b\">\x01\xff") == "&lt;a &amp; &quot;b&quot;&gt;\\x01\\xff");
}

TEST_CASE("A number is read whole: a NUL byte inside ends no number", "[monitor][common]") {
    using namespace std::string_view_literals;
    CHECK(parseNumber("0x10"sv) == 16u);
    CHECK(parseNumber("5\0junk"sv) == std::nullopt);
    CHECK(parseNumber("0x0000\0*e0"sv, 16) == std::nullopt);
    CHECK(parseNumber("7\0"sv, 10) == std::nullopt);
}

// strtoull as parseNumber's contract states it: the whole text, a digit first, 64 bits.
std::optional<uint64_t> strtoullWhole(const std::string& text, int base) {
    if (text.empty()) return std::nullopt;
    auto first = static_cast<unsigned char>(text.front());
    if (!(base == 16 ? std::isxdigit(first) : std::isdigit(first))) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(text.c_str(), &end, base);
    if (errno != 0 || end != text.c_str() + text.size()) return std::nullopt;
    return v;
}

TEST_CASE("A number reads as strtoull reads it, on every short text of digits, prefixes and signs",
          "[monitor][common]") {
    // Every text of up to 4 characters over an alphabet that tries the bases' edges, and long
    // texts around 2^64: parseNumber reads in place what strtoull reads from a copy.
    const std::string alphabet = "0178afgxX+- ";
    std::vector<std::string> texts{"",
                                   "18446744073709551615",
                                   "18446744073709551616",
                                   "0xffffffffffffffff",
                                   "0x10000000000000000",
                                   "01777777777777777777777",
                                   "02000000000000000000000",
                                   "0x00000000000000000000000001"};
    std::vector<std::string> level{""};
    for (int length = 1; length <= 4; ++length) {
        std::vector<std::string> longer;
        for (const std::string& t : level)
            for (char c : alphabet) longer.push_back(t + c);
        texts.insert(texts.end(), longer.begin(), longer.end());
        level = std::move(longer);
    }
    size_t numbers = 0;
    for (const std::string& t : texts) {
        for (int base : {0, 8, 10, 16}) {
            INFO("'" << t << "' in base " << base);
            std::optional<uint64_t> expected = strtoullWhole(t, base);
            REQUIRE(parseNumber(t, base) == expected);
            numbers += expected.has_value();
        }
    }
    CHECK(numbers > 1000);  // the texts are not all refused
}

TEST_CASE("A NodeDescription in Latin-1 leaves every output valid UTF-8", "[monitor][exposition]") {
    Lab lab(50us, 500ms,
            "caf\xe9 n\xf6"
            "de");
    Watched w(lab);
    w.monitor->scrape();
    // Congested, so that the SVG draws the port by name.
    lab.pma.counter(SwitchLid, 1, Attribute::PortCounters, 4) += 5000;
    lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 1) += 1000;
    lab.pma.advance(1s);
    w.monitor->scrape();
    const std::string text = prometheusText(*w.monitor);
    CHECK(isUtf8(text));
    CHECK_THAT(text, Catch::Contains("node_name=\"caf\\\\xe9 n\\\\xf6de\",port=\"1\""));
    const std::string svg = sharesSvg(*w.monitor);
    CHECK(isUtf8(svg));
    CHECK_THAT(svg, Catch::Contains("caf\\xe9 n\\xf6de/P1"));
    CHECK(isUtf8(dumpJson(reportJson(*w.monitor))));
}

TEST_CASE(
    "XmitWait comes from the 64-bit counter where CapabilityMask2 says PortCountersExtended "
    "has it",
    "[monitor][rates]") {
    Lab lab;
    lab.pma.node(SwitchLid).capabilityMask2 = ib::perf::Cap2AdditionalExtended;
    Watched w(lab);
    // The 32-bit PortXmitWait is stuck at its maximum; the 64-bit one counts on.
    lab.pma.counter(SwitchLid, 1, Attribute::PortCounters, 4) = 0xffffffff;
    lab.pma.counter(SwitchLid, 1, Attribute::PortCountersExtended, 4) = 1;
    w.monitor->scrape();
    lab.pma.counter(SwitchLid, 1, Attribute::PortCountersExtended, 4) += 6000000000;
    lab.pma.advance(1s);
    const Report& r = w.monitor->scrape();
    const PortReport& leaf1 = w.port(lab.leafPort(1));
    CHECK(leaf1.extendedXmitWait);
    CHECK(leaf1.counters[4].ok());
    CHECK(leaf1.counters[4].value == 6000000000.0);
    CHECK(leaf1.congested);
    CHECK(leaf1.saturated.empty());
    CHECK(countFindings(r, Finding::Kind::CounterSaturated) == 0);
    // A CA whose PMA does not say so keeps the 32-bit one.
    CHECK_FALSE(w.port(lab.hostPort(0)).extendedXmitWait);
}

TEST_CASE("A busy link whose narrow counters saturate is judged in every interval",
          "[monitor][shares]") {
    Lab lab;
    Watched w(lab);
    w.monitor->scrape();
    // Leaf/P1 sends to h0 (bandwidth 50/30/20 % on VLs 1-3). Its 32-bit PortXmitWait is stuck at
    // its maximum (nothing clears PortCounters by default); the per-VL counters are cleared
    // after each read and saturate anew in each interval: 16-bit XmitWait on VLs 1 and 2, and
    // h0's PortVLOpData on VL 2.
    lab.pma.counter(SwitchLid, 1, Attribute::PortCounters, 4) = 0xffffffff;
    for (int interval = 0; interval < 4; ++interval) {
        INFO("interval " << interval);
        lab.pma.counter(SwitchLid, 1, Attribute::PortVlXmitWaitCounters, 1) = 0xffff;
        lab.pma.counter(SwitchLid, 1, Attribute::PortVlXmitWaitCounters, 2) = 0xffff;
        lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 1) = 0x10000000;
        lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 2) = 0xffffffff;
        lab.pma.counter(hostLid(0), 1, Attribute::PortVlOpData, 3) = 0x10000000;
        lab.pma.advance(1s);
        const Report& r = w.monitor->scrape();
        const PortReport& leaf1 = w.port(lab.leafPort(1));
        CHECK(leaf1.congested);
        REQUIRE(leaf1.judged);
        CHECK(leaf1.mixSaturated);
        CHECK(leaf1.vls[2].lowerBound);
        CHECK(leaf1.vls[1].competing);
        CHECK(leaf1.vls[2].competing);
        // VL 1 got at most 0x1000 / (0x1000 + 0xffff + 0x1000) of the link, well below 50 %: a
        // finding. VL 2, saturated, got at least its lower bound: never found below.
        CHECK(leaf1.vls[1].achieved < 0.06);
        std::vector<int> below;
        for (const Finding& f : r.findings)
            if (f.kind == Finding::Kind::VlBelowShare && f.port == lab.leafPort(1))
                below.push_back(f.vl);
        CHECK(below == std::vector<int>{1});
        CHECK(countFindings(r, Finding::Kind::CounterSaturated) >= 1);
        // The interval's counted bytes are in the totals, at least what is known.
        CHECK(w.port(lab.hostPort(0)).vlRcvBytes[2].known() == 0xffffffffu * 4.0);
    }
}

TEST_CASE("The text report says how many of the ports read it lists", "[monitor][exposition]") {
    Lab lab;
    Watched w(lab);
    w.monitor->scrape();
    // Two of the eight ports read transmit in the interval.
    lab.pma.counter(SwitchLid, 1, Attribute::PortCountersExtended, 0) += 100;
    lab.pma.counter(hostLid(2), 1, Attribute::PortCountersExtended, 0) += 100;
    lab.pma.advance(1s);
    w.monitor->scrape();
    const std::string text = reportText(*w.monitor);
    CHECK_THAT(text, Catch::Contains("8 of 8 ports read"));
    CHECK_THAT(text, Catch::Contains("2 of the 8 ports read transmitted, or were congested, in "
                                     "the interval:\n"));
    CHECK_THAT(text, Catch::Contains("Leaf/P1 ") && Catch::Contains("h2 HCA-1/P1 "));
    CHECK_THAT(text, !Catch::Contains("h1 HCA-1/P1 "));
}

TEST_CASE("The JSON report carries rates, labels, findings and PMAs", "[monitor][exposition]") {
    Lab lab;
    lab.pma.node(hostLid(3)).silent = true;
    Watched w(lab);
    w.monitor->scrape();
    lab.pma.counter(hostLid(0), 1, Attribute::PortCountersExtended, 0) += 256;
    lab.pma.advance(2s);
    w.monitor->scrape();
    Json report = reportJson(*w.monitor);
    CHECK(report["scrape"]["number"] == 2);
    Json h0;
    for (const Json& p : report["ports"])
        if (p["node_name"] == "h0 HCA-1") h0 = p;
    REQUIRE(h0.is_object());
    CHECK(h0["groups"] == Json::array({"storage"}));
    // 1024 bytes over 3 s: the silent PMA's ClassPortInfo and its retry kept the first scrape
    // waiting 1 s after h0 answered, then 2 s passed.
    CHECK(h0["rates"]["transmit_bytes_per_second"].get<double>() ==
          Approx(1024.0 / 3).epsilon(0.01));
    CHECK(h0["totals"]["transmit_bytes"] == 1024);
    CHECK(h0["states"]["transmit_bytes"] == "ok");
    // The VLs shown are those that carry a level's SL (0-2 here) or traffic.
    std::vector<int> shown;
    Json vl1;
    for (const Json& v : h0["vls"]) {
        shown.push_back(v["vl"].get<int>());
        if (v["vl"] == 1) vl1 = v;
    }
    CHECK(shown == std::vector<int>{0, 1, 2});
    CHECK(vl1["sls"].front() == 1);
    CHECK(vl1["levels"] == Json::array({"fast"}));
    bool silentReported = false;
    for (const Json& f : report["findings"])
        silentReported = silentReported || (f["kind"] == "pma-unanswered" &&
                                            f["node_name"] == "h3 HCA-1" && f["port"].is_null());
    CHECK(silentReported);
    for (const Json& p : report["pmas"])
        if (p["node_name"] == "h3 HCA-1") CHECK(p["answering"] == false);
}
