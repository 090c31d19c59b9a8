// SPDX-License-Identifier: MIT
// The arbitration simulator and the bandwidth-to-weights planner.
#include "vlarb_sim.hpp"

#include <algorithm>
#include <cmath>

namespace ibqos {

namespace {

// One table's weighted round robin: the current entry and the credits it has left.
class RoundRobin {
public:
    RoundRobin(const VlArbEntry* entries, size_t count, unsigned packetCredits)
        : entries_(entries), count_(count), packetCredits_(packetCredits) {
        for (size_t i = 0; i < count; ++i) active_ |= entries[i].weight > 0;
    }
    bool active() const { return active_; }

    // Sends one packet and returns its VL.
    uint8_t send() {
        while (credits_ <= 0) {
            position_ = (position_ + 1) % count_;
            credits_ = entries_[position_].weight;
        }
        credits_ -= static_cast<int>(packetCredits_);
        return entries_[position_].vl;
    }

private:
    const VlArbEntry* entries_;
    size_t count_;
    unsigned packetCredits_;
    size_t position_ = SIZE_MAX;  // before the first entry
    int credits_ = 0;
    bool active_ = false;
};

}  // namespace

std::array<double, 15> simulateArbitration(const VlArbEntry* high, size_t highCount, const VlArbEntry* low,
                                           size_t lowCount, uint8_t highLimit, unsigned packetBytes) {
    std::array<double, 15> share{};
    unsigned packetCredits = std::max(1u, packetBytes / 64);
    RoundRobin highTable(high, highCount, packetCredits);
    RoundRobin lowTable(low, lowCount, packetCredits);
    if (!highTable.active() && !lowTable.active()) return share;
    bool unbounded = highLimit == 255;
    uint64_t highBurst = std::max<uint64_t>(1, uint64_t{highLimit} * 4096 / packetBytes);

    // Long enough that every cycle of both tables repeats many times: the error is below 1e-4.
    constexpr unsigned Packets = 200000;
    std::array<uint64_t, 16> sent{};
    uint64_t burst = 0;
    for (unsigned i = 0; i < Packets; ++i) {
        bool highTurn = highTable.active() && (!lowTable.active() || unbounded || burst < highBurst);
        if (highTurn) {
            ++sent[highTable.send() & 15];
            ++burst;
        } else {
            ++sent[lowTable.send() & 15];
            burst = 0;
        }
    }
    for (unsigned vl = 0; vl < 15; ++vl) share[vl] = static_cast<double>(sent[vl]) / Packets;
    return share;
}

BandwidthPlan planBandwidth(const std::vector<VlShare>& shares, unsigned maxEntries, unsigned packetCredits) {
    BandwidthPlan plan;
    double total = 0;
    for (const VlShare& s : shares) total += s.percent;
    if (shares.empty() || total <= 0 || maxEntries == 0) return plan;
    for (const VlShare& s : shares) plan.intended[s.vl] = s.percent / total;

    // Packets per round-robin cycle for each VL: the smallest cycle within the entry budget
    // whose proportions come closest to those asked.
    unsigned perEntry = std::max(1u, 255 / packetCredits);  // whole packets one entry can hold
    std::vector<unsigned> best;
    double bestError = 2;
    for (unsigned cycle = static_cast<unsigned>(shares.size()); cycle <= maxEntries * perEntry; ++cycle) {
        std::vector<unsigned> packets;
        unsigned entries = 0, sum = 0;
        for (const VlShare& s : shares) {
            unsigned n = std::max(1u, static_cast<unsigned>(std::lround(s.percent / total * cycle)));
            packets.push_back(n);
            entries += (n + perEntry - 1) / perEntry;
            sum += n;
        }
        if (entries > maxEntries) continue;
        double error = 0;
        for (size_t i = 0; i < shares.size(); ++i) {
            error = std::max(error, std::abs(double(packets[i]) / sum - shares[i].percent / total));
        }
        if (error < bestError - 1e-12) {
            bestError = error;
            best = packets;
        }
        if (error < 1e-9) break;
    }
    if (best.empty()) return plan;

    // Entries interleaved across VLs (a smoother schedule), each at most perEntry packets.
    std::vector<unsigned> left = best;
    for (bool any = true; any;) {
        any = false;
        for (size_t i = 0; i < shares.size(); ++i) {
            if (left[i] == 0) continue;
            unsigned n = std::min(left[i], perEntry);
            plan.entries.push_back({shares[i].vl, static_cast<uint8_t>(n * packetCredits)});
            left[i] -= n;
            any = true;
        }
    }
    plan.achieved = simulateArbitration(nullptr, 0, plan.entries.data(), plan.entries.size(), 0, packetCredits * 64);
    return plan;
}

}  // namespace ibqos
