// SPDX-License-Identifier: MIT
// The collector: a scrape reads every port's counters from the fabric's PMAs over a
// PmaTransport, at most one MAD outstanding per node and a bounded number in flight, within a
// MAD budget; it learns once per device kind which attributes a PMA answers, and reports and
// skips a PMA that does not answer.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fabric/fabric.hpp"
#include "ib/perf_mgt.hpp"
#include "monitor/perf_codec.hpp"
#include "monitor/pma_transport.hpp"

namespace ibqos::monitor {

// What attribute support is learnt for, once: the node type and NodeInfo's VendorID, DeviceID
// and Revision (NodeInfo carries no firmware version; a kind is learnt again after SIGHUP).
struct DeviceKind {
    NodeType type = NodeType::Ca;
    uint32_t vendorId = 0;
    uint16_t deviceId = 0;
    uint32_t revision = 0;
    auto operator<=>(const DeviceKind&) const = default;
};
// "switch vendor 0x2c9 device 0xcb20 revision 0xa1".
std::string describe(const DeviceKind& kind);

// The attributes a scrape reads of each port, in the order it reads them.
inline constexpr std::array<ib::perf::Attribute, 7> PortAttributes = {
    ib::perf::Attribute::PortCounters,           ib::perf::Attribute::PortCountersExtended,
    ib::perf::Attribute::PortVlXmitWaitCounters, ib::perf::Attribute::PortVlOpData,
    ib::perf::Attribute::PortVlOpPackets,        ib::perf::Attribute::PortXmitDataSl,
    ib::perf::Attribute::PortRcvDataSl};
// An attribute's index in PortAttributes.
size_t attributeSlot(ib::perf::Attribute attribute);

struct PortTarget {
    uint32_t port = 0;  // index into Fabric::ports
    uint8_t number = 0;
    uint16_t lid = 0;  // where its PMA answers: the CA port's LID, a switch's LID
};

struct NodeTarget {
    uint32_t node = 0;  // index into Fabric::nodes
    DeviceKind kind;
    std::vector<PortTarget> ports;
};

// The ports a collector reads: every port with a link and a LID (switch port 0 and ports
// without a link carry no traffic of their own).
std::vector<NodeTarget> targetsOf(const Fabric& fabric);

// Which counters the collector clears after reading them (a Set of their CounterSelect).
enum class CounterReset : uint8_t {
    None,   // none: other readers keep them whole; a narrow counter stops at its maximum
    Lanes,  // the per-VL and per-SL counters, which have no 64-bit form (OpenSM reads none)
    All,    // those and PortCounters' data, packet and XmitWait counters
};

struct CollectorOptions {
    unsigned inFlight = 128;  // MADs outstanding at most over the fabric (one per node)
    size_t madBudget = 0;     // MADs a scrape may send (0: no bound)
    std::chrono::milliseconds timeout{500};
    unsigned retries = 1;  // a MAD is sent 1 + retries times before it counts as lost
    CounterReset reset = CounterReset::Lanes;
};

enum class Support : uint8_t { Unknown, Probing, Yes, No };

// The last two readings of one port's attribute. After a SET cleared the counters, the
// previous reading is zero at the time the SET was answered.
struct AttributeHistory {
    Sample previous, current;
    uint64_t scrape = 0;  // the scrape that read `current`
    std::optional<Clock::time_point> clearedAt;
};

struct PortSamples {
    std::array<AttributeHistory, PortAttributes.size()> attributes;
    const AttributeHistory& operator[](ib::perf::Attribute a) const {
        return attributes[attributeSlot(a)];
    }
};

// A node's PMA as the collector knows it.
struct NodeStatus {
    bool answering = true;  // false: the PMA did not answer in the last scrape that asked it
    std::string problem;    // why, or the last error status it answered with
    bool capabilityKnown = false;
    uint16_t capabilityMask = 0;   // ClassPortInfo.CapabilityMask
    uint32_t capabilityMask2 = 0;  // ClassPortInfo.CapabilityMask2
    // PortCountersExtended holds the port's XmitWait (64 bits) too.
    bool extendedXmitWait() const { return capabilityMask2 & ib::perf::Cap2AdditionalExtended; }
};

struct ScrapeStats {
    uint64_t scrape = 0;  // its number, from 1
    size_t sent = 0;      // MADs sent, retries included
    size_t answered = 0;
    size_t timedOut = 0;  // attempts that got no answer
    size_t errors = 0;    // answers with an error status (support probes not counted)
    size_t probes = 0;    // MADs that asked whether a device kind has an attribute
    size_t portsPlanned = 0, portsRead = 0;
    size_t nodesUnanswered = 0;
    size_t maxInFlight = 0;
    bool budgetReached = false;
    double seconds = 0;  // on the transport's clock
    std::map<ib::perf::Attribute, size_t> sentByAttribute;
};

using SupportTable = std::map<std::pair<DeviceKind, ib::perf::Attribute>, Support>;

class Collector {
  public:
    // The transport is borrowed; `learnt` is support already known (a previous collector's).
    Collector(PmaTransport& transport, std::vector<NodeTarget> targets, CollectorOptions options,
              SupportTable learnt = {});

    // Reads the counters of every node in this scrape's share of the budget.
    ScrapeStats scrape();

    const std::vector<NodeTarget>& targets() const { return targets_; }
    const NodeStatus& status(size_t target) const { return nodes_[target]; }
    // A port's readings (nullptr for a port the collector does not read).
    const PortSamples* samples(uint32_t fabricPort) const;
    const SupportTable& support() const { return support_; }
    Support support(const DeviceKind& kind, ib::perf::Attribute attribute) const;
    const CollectorOptions& options() const { return options_; }
    // Whether the collector clears an attribute's counters after reading them.
    bool clears(ib::perf::Attribute attribute) const;

  private:
    struct Job {
        uint32_t target = 0;  // index into targets_
        uint16_t port = 0;    // index into the target's ports
        ib::perf::Attribute attribute{};
        uint8_t method = IB_MAD_METHOD_GET;
    };
    struct Pending {
        Job job;
        unsigned attempt = 0;
        bool probe = false;
        Clock::time_point deadline;
    };
    enum class Family : uint8_t { None, Vl, Sl };
    static Family familyOf(ib::perf::Attribute attribute);

    void plan(ScrapeStats& stats);
    size_t portCost(const NodeTarget& target, const NodeStatus& status) const;
    std::optional<Job> nextJob(uint32_t target, bool& probe);
    void send(const Job& job, unsigned attempt, bool probe, ScrapeStats& stats);
    void answered(const Pending& pending, const PmaAnswer& answer, ScrapeStats& stats);
    void lost(const Pending& pending, ScrapeStats& stats);
    void resolve(const DeviceKind& kind, ib::perf::Attribute attribute, Support result);
    void finish(uint32_t target);
    void makeReady(uint32_t target);

    PmaTransport& transport_;
    std::vector<NodeTarget> targets_;
    CollectorOptions options_;
    SupportTable support_;
    std::vector<NodeStatus> nodes_;
    std::vector<PortSamples> samples_;   // per target port, in target order
    std::vector<uint32_t> firstSample_;  // per target: index of its first port's samples
    std::unordered_map<uint32_t, uint32_t> sampleIndex_;  // fabric port -> index into samples_
    uint64_t scrapes_ = 0;
    std::pair<size_t, size_t> cursor_{0, 0};  // target and port a budgeted scrape starts with
    uint32_t nextTid_ = 1;

    // One scrape's state.
    std::vector<std::vector<Job>> queues_;  // per target, in reverse (the next job at the back)
    std::vector<bool> busy_, ready_;
    // Targets ready to send, the one with the most jobs left first (the longest chain of MADs
    // to one node decides when a scrape ends).
    std::priority_queue<std::pair<size_t, uint32_t>> heap_;
    std::map<std::pair<DeviceKind, Family>, std::vector<Job>> deferred_;
    std::unordered_map<uint32_t, Pending> pending_;
    std::deque<std::pair<Clock::time_point, uint32_t>> deadlines_;  // in send order
};

}  // namespace ibqos::monitor
