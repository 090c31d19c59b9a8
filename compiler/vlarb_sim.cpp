// SPDX-License-Identifier: MIT
// The arbitration simulator and the bandwidth-to-weights planner.
#include "compiler/vlarb_sim.hpp"

#include <algorithm>
#include <cmath>

namespace ibqos {

namespace {

// One table's weighted round robin stepped through one whole cycle: how many packets each VL
// sends per cycle. An entry sends packets while its credits last; a started packet completes.
std::array<uint64_t, ib::VlCount> packetsPerCycle(const VlArbEntry* entries, size_t count,
                                                  unsigned packetCredits) {
    std::array<uint64_t, ib::VlCount> sent{};
    for (size_t i = 0; i < count; ++i) {
        for (int credits = entries[i].weight; credits > 0;
             credits -= static_cast<int>(packetCredits)) {
            ++sent[entries[i].vl & ib::MaxVl];
        }
    }
    return sent;
}

}  // namespace

std::array<double, ib::DataVlCount> simulateArbitration(const VlArbEntry* high, size_t highCount,
                                                        const VlArbEntry* low, size_t lowCount,
                                                        uint8_t highLimit, unsigned packetBytes) {
    std::array<double, ib::DataVlCount> share{};
    unsigned packetCredits = std::max(1u, packetBytes / 64);
    std::array<uint64_t, ib::VlCount> highCycle = packetsPerCycle(high, highCount, packetCredits);
    std::array<uint64_t, ib::VlCount> lowCycle = packetsPerCycle(low, lowCount, packetCredits);
    uint64_t highTotal = 0, lowTotal = 0;
    for (unsigned vl = 0; vl < ib::VlCount; ++vl) {
        highTotal += highCycle[vl];
        lowTotal += lowCycle[vl];
    }
    if (highTotal == 0 && lowTotal == 0) return share;
    // Priority: the high table sends max(1, limit x 4 KiB) before the low table sends one
    // packet; 255 never lets it. Over many such rounds each table's cycle repeats exactly.
    double highFraction = 1;
    if (highTotal == 0) {
        highFraction = 0;
    } else if (lowTotal != 0 && highLimit != 255) {
        double burst =
            static_cast<double>(std::max<uint64_t>(1, uint64_t{highLimit} * 4096 / packetBytes));
        highFraction = burst / (burst + 1);
    }
    for (unsigned vl = 0; vl < ib::DataVlCount; ++vl) {
        if (highTotal)
            share[vl] +=
                highFraction * static_cast<double>(highCycle[vl]) / static_cast<double>(highTotal);
        if (lowTotal)
            share[vl] += (1 - highFraction) * static_cast<double>(lowCycle[vl]) /
                         static_cast<double>(lowTotal);
    }
    return share;
}

BandwidthPlan planBandwidth(const std::vector<VlShare>& shares, unsigned maxEntries,
                            unsigned packetCredits) {
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
    for (unsigned cycle = static_cast<unsigned>(shares.size()); cycle <= maxEntries * perEntry;
         ++cycle) {
        std::vector<unsigned> packets;
        unsigned entries = 0, sum = 0;
        for (const VlShare& s : shares) {
            unsigned n =
                std::max(1u, static_cast<unsigned>(std::lround(s.percent / total * cycle)));
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
    plan.achieved = simulateArbitration(nullptr, 0, plan.entries.data(), plan.entries.size(), 0,
                                        packetCredits * 64);
    return plan;
}

}  // namespace ibqos
