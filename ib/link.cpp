// SPDX-License-Identifier: MIT
// Rates and MTUs.
#include "ib/link.hpp"

namespace ibqos {

double rateGbps(uint8_t rate) {
    static constexpr double gbps[] = {0,  0,   2.5, 10, 30,  5,   20,  40, 60, 80,  120, 14,
                                      56, 112, 168, 25, 100, 200, 300, 28, 50, 400, 600};
    return rate < sizeof gbps / sizeof gbps[0] ? gbps[rate] : 0;
}

uint8_t rateForLink(unsigned width, std::string_view speed) {
    double lane = 0;
    if (speed == "SDR")
        lane = 2.5;
    else if (speed == "DDR")
        lane = 5;
    else if (speed == "QDR" || speed == "FDR10")
        lane = 10;
    else if (speed == "FDR")
        lane = 14;
    else if (speed == "EDR")
        lane = 25;
    else if (speed == "HDR")
        lane = 50;
    else if (speed == "NDR")
        lane = 100;
    double total = lane * width;
    for (uint8_t r = 2; r <= 22; ++r) {
        if (rateGbps(r) == total) return r;
    }
    return 0;
}

unsigned mtuBytes(uint8_t mtu) { return mtu >= 1 && mtu <= 5 ? 128u << mtu : 0; }

}  // namespace ibqos
