// SPDX-License-Identifier: MIT
// One scrape's report: each port's counters turned into deltas and rates (bytes, packets,
// XmitWait ticks), per VL and per SL, each output port's VL shares against the policy's intent,
// the findings, and how the scrape went. Every output (Prometheus, JSON, SVG) reads this.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ib/perf_mgt.hpp"
#include "ib/qos.hpp"
#include "monitor/collector.hpp"

namespace ibqos::monitor {

// Why a counter has, or has no, delta for the last interval.
enum class DeltaState : uint8_t {
    Ok,
    NotRead,    // the attribute is not read on this port (unsupported, or not asked)
    First,      // one reading so far
    Stale,      // not read in this scrape (the MAD budget, or no answer)
    Saturated,  // the counter reached its maximum: the delta is at least `value`
    Reset,      // the counter went down (someone cleared it): the delta is unknown
};
const char* deltaStateName(DeltaState state);

struct Delta {
    DeltaState state = DeltaState::NotRead;
    double value = 0;    // bytes, packets or ticks over the interval (Saturated: at least that)
    double seconds = 0;  // the interval
    bool ok() const { return state == DeltaState::Ok; }
    double rate() const { return ok() && seconds > 0 ? value / seconds : 0; }
    // What is known to have been counted in the interval: the delta, or its lower bound.
    double known() const { return ok() || state == DeltaState::Saturated ? value : 0; }
    // Whether the counter is known to have risen in the interval.
    bool rose() const { return known() > 0; }
};

// Counts added up over the collector's life from every known delta (a _total metric).
struct Totals {
    std::array<double, ib::perf::PortCounterCount> port{};
    std::array<double, 16> vlXmitWait{}, vlRcvBytes{}, vlRcvPackets{};
    std::array<double, ib::SlCount> slXmitBytes{}, slRcvBytes{};
};

struct VlShare {
    bool competing = false;   // it had packets waiting (its XmitWait rose, or it sent)
    double achieved = 0;      // its share of what the link carried in the interval
    double intended = 0;      // its share by the port's arbitration, among the competing VLs
    bool lowerBound = false;  // its count saturated: `achieved` is from a lower bound
};

struct PortReport {
    uint32_t port = 0;      // index into Fabric::ports
    uint32_t target = 0;    // index into Collector::targets()
    bool extended = false;  // data and packets from PortCountersExtended (64-bit)
    std::array<Delta, ib::perf::PortCounterCount> counters;  // by ib::perf::PortCounter
    std::array<Delta, 16> vlXmitWait, vlRcvBytes, vlRcvPackets;
    std::array<Delta, ib::SlCount> slXmitBytes, slRcvBytes;
    Totals totals;
    std::vector<std::string> saturated;  // "PortXmitData", "PortVLOpData3", ...
    bool saturatedStays = false;         // one of them is not cleared after each read
    bool extendedXmitWait = false;       // XmitWait from PortCountersExtended (64-bit)
    bool congested = false;              // its XmitWait, or a VL's, rose in the interval
    // The port as an output: the VL mix its link carried (from the peer's receive counters),
    // and, while congested, each VL's share against the intended one.
    bool hasVlMix = false;
    bool judged = false;  // congested, with a VL mix and an arbitration setup
    // A VL's byte count in the mix reached its counter's maximum: its share is a lower bound's,
    // and the others' are upper bounds (judged below their share only when certainly so).
    bool mixSaturated = false;
    std::array<VlShare, ib::DataVlCount> vls{};
};

struct Finding {
    enum class Kind : uint8_t {
        VlBelowShare,     // a competing VL got less than its intended share by more than the margin
        SlWithoutLevel,   // traffic on an SL no qos-level of the policy uses
        PmaUnanswered,    // a node's PMA did not answer: skipped
        TablesDiffer,     // the port's live tables differ from the compiled ones
        CounterSaturated  // a counter reached its maximum: only a lower bound of its delta
    } kind;
    uint32_t port = UINT32_MAX;  // index into Fabric::ports (UINT32_MAX: the node)
    uint32_t node = 0;           // index into Fabric::nodes
    int vl = -1, sl = -1;
    double achieved = 0, intended = 0;
    std::string message;
};
const char* findingKindName(Finding::Kind kind);

struct Report {
    ScrapeStats stats;
    double interval = 0;            // seconds since the previous scrape began (0 for the first)
    double unixTime = 0;            // when the scrape ended
    std::vector<PortReport> ports;  // every target port, in target order
    std::vector<Finding> findings;
    size_t madsTotal = 0, timeoutsTotal = 0;  // over the collector's life
};

}  // namespace ibqos::monitor
