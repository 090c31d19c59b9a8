// SPDX-License-Identifier: MIT
// Rates and MTUs.
#include "ib/link.hpp"

#include <string>

namespace ibqos {

double rateGbps(uint8_t rate) {
    static constexpr double gbps[] = {0,  0,   2.5, 10, 30,  5,   20,  40, 60, 80,  120, 14,
                                      56, 112, 168, 25, 100, 200, 300, 28, 50, 400, 600};
    static_assert(sizeof gbps / sizeof gbps[0] == ib::MaxRate + 1);
    return rate < sizeof gbps / sizeof gbps[0] ? gbps[rate] : 0;
}

namespace {

struct LaneSpeed {
    std::string_view name;
    double gbps;
};
constexpr LaneSpeed laneSpeeds[] = {{"SDR", 2.5}, {"DDR", 5},  {"QDR", 10}, {"FDR10", 10},
                                    {"FDR", 14},  {"EDR", 25}, {"HDR", 50}, {"NDR", 100}};
// Link widths, the usual ones first.
constexpr unsigned linkWidths[] = {4, 1, 2, 8, 12};

}  // namespace

uint8_t rateForLink(unsigned width, std::string_view speed) {
    double lane = 0;
    for (const LaneSpeed& s : laneSpeeds) {
        if (s.name == speed) lane = s.gbps;
    }
    double total = lane * width;
    for (uint8_t r = ib::MinRate; r <= ib::MaxRate; ++r) {
        if (rateGbps(r) == total) return r;
    }
    return 0;
}

std::string linkName(uint8_t rate) {
    if (rate == 0) return "";  // unknown, and rateForLink's answer for a link it does not know
    for (unsigned width : linkWidths) {
        for (const LaneSpeed& s : laneSpeeds) {
            if (rateForLink(width, s.name) == rate)
                return std::to_string(width) + "x" + std::string(s.name);
        }
    }
    return "";
}

unsigned mtuBytes(uint8_t mtu) { return ib::isMtu(mtu) ? 128u << mtu : 0; }

}  // namespace ibqos
