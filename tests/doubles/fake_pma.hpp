// SPDX-License-Identifier: MIT
// FakePma: a fabric's PMAs as a PmaTransport, on a simulated clock. Each node answers after a
// round trip with the counters a test gives it (encoded with libibmad's field table, clamped at
// each field's maximum as a PMA's counters stop), drops the attributes it lacks (no answer, as
// ibsim does with the per-SL ones), refuses others with a status, or answers nothing at all.
// It records what was asked, how many MADs were in flight, and any second MAD sent to a node
// while one was outstanding there.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "monitor/pma_transport.hpp"

namespace ibqos::monitor {

class FakePma : public PmaTransport {
  public:
    using Counters = std::array<uint64_t, ib::perf::Lanes>;

    struct Node {
        bool silent = false;                    // answers nothing
        std::set<ib::perf::Attribute> dropped;  // answered with nothing
        std::set<ib::perf::Attribute> refused;  // answered with status "unsupported"
        uint16_t capabilityMask = ib::perf::CapExtendedWidth | ib::perf::CapXmitWait;
        uint32_t capabilityMask2 = 0;
        std::map<uint8_t, std::map<ib::perf::Attribute, Counters>> ports;  // by port number
    };

    // `roundTrip`: from a send to its answer; `collectorTimeout`: how long the collector waits,
    // so that a dropped MAD stops counting as outstanding when the collector gives it up.
    explicit FakePma(std::chrono::microseconds roundTrip = std::chrono::microseconds(50),
                     std::chrono::milliseconds collectorTimeout = std::chrono::milliseconds(500));

    // A node reached at these LIDs (a switch: one; a CA: one per port).
    Node& addNode(const std::vector<uint16_t>& lids);
    Node& node(uint16_t lid) { return nodes_[lidToNode_.at(lid)]; }
    // The raw counter (4-byte words for data) a port's attribute holds.
    uint64_t& counter(uint16_t lid, uint8_t port, ib::perf::Attribute attribute, unsigned index) {
        return node(lid).ports[port][attribute][index];
    }
    // Moves the simulated clock on (time between scrapes).
    void advance(std::chrono::microseconds by) { now_ += by; }

    Clock::time_point now() const override { return now_; }
    bool send(const PmaRequest& request, std::string& error) override;
    void wait(Clock::time_point until, std::vector<PmaAnswer>& answers) override;

    struct Sent {
        uint16_t lid;
        ib::perf::Attribute attribute;
        uint8_t method;
        uint8_t portSelect;
    };
    const std::vector<Sent>& sent() const { return sent_; }
    size_t sentOf(ib::perf::Attribute attribute) const;
    size_t maxInFlight() const { return maxInFlight_; }
    size_t overlaps() const { return overlaps_; }  // MADs sent to a node that had one outstanding

  private:
    struct InFlight {
        Clock::time_point at;  // when it is answered, or when the collector gives up on it
        size_t node;
        bool answered;
        PmaAnswer answer;
    };
    std::chrono::microseconds roundTrip_;
    std::chrono::milliseconds collectorTimeout_;
    Clock::time_point now_{std::chrono::hours(1)};
    std::vector<Node> nodes_;
    std::map<uint16_t, size_t> lidToNode_;
    std::vector<InFlight> inFlight_;
    std::vector<Sent> sent_;
    size_t maxInFlight_ = 0, overlaps_ = 0;
};

}  // namespace ibqos::monitor
