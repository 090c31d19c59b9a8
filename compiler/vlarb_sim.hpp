// SPDX-License-Identifier: MIT
// VL arbitration: a simulator of the two-priority weighted round robin (IBA 7.6.9), and the
// weights that give a wanted bandwidth share (the bandwidth: extension).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "compiler/policy.hpp"
#include "compiler/tables.hpp"
#include "ib/qos.hpp"

namespace ibqos {

// Long-run share of the link (0..1) of each data VL when every VL that the tables name always
// has packets of packetBytes waiting. Each table entry sends packets while its weight (64-byte
// credits) lasts, a started packet always completes; the high-priority table may send
// max(1, highLimit x 4 KiB) before the low-priority table gets one packet; 255 means unbounded.
// Each table's round robin is stepped through one whole cycle, which then repeats exactly, so
// the shares are exact and cost one step per packet of a cycle.
std::array<double, ib::DataVlCount> simulateArbitration(const VlArbEntry* high, size_t highCount,
                                                        const VlArbEntry* low, size_t lowCount,
                                                        uint8_t highLimit,
                                                        unsigned packetBytes = 4096);

// The low-priority table for a bandwidth: line: whole packets per VL (weights in multiples of
// packetCredits, at most 255 per entry, split over several entries when needed) in the
// proportions asked, within maxEntries entries; and the shares it achieves.
struct BandwidthPlan {
    std::vector<VlArbEntry> entries;
    std::array<double, ib::DataVlCount> intended{};  // share of the low-priority bandwidth (0..1)
    std::array<double, ib::DataVlCount> achieved{};
};
BandwidthPlan planBandwidth(const std::vector<VlShare>& shares, unsigned maxEntries,
                            unsigned packetCredits = 64);

}  // namespace ibqos
