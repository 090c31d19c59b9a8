// SPDX-License-Identifier: MIT
// The InfiniBand link vocabulary: the rate and MTU enums and the OperVLs/VLCap encoding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ibqos {

// The link rate in Gb/s of an IB rate enum value (0 when unknown), and the enum for a width x
// lane speed as ibnetdiscover prints it ("4xQDR").
double rateGbps(uint8_t rate);
uint8_t rateForLink(unsigned width, std::string_view speed);
// A width x lane speed that makes a rate, as ibnetdiscover prints it ("4xEDR"; "" for none).
std::string linkName(uint8_t rate);
unsigned mtuBytes(uint8_t mtu);

// VL counts from the OperVLs/VLCap encoding (1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14).
constexpr unsigned dataVls(uint8_t vlEncoding) {
    return vlEncoding == 0 ? 1 : vlEncoding >= 5 ? 15 : (1u << (vlEncoding - 1));
}

}  // namespace ibqos
