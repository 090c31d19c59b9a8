// SPDX-License-Identifier: MIT
// The InfiniBand link vocabulary: the rate and MTU enums and the OperVLs/VLCap encoding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ib/qos.hpp"

namespace ibqos {

// The link rate in Gb/s of an IB rate enum value (0 when unknown), and the enum for a width x
// lane speed as ibnetdiscover prints it ("4xQDR").
double rateGbps(uint8_t rate);
uint8_t rateForLink(unsigned width, std::string_view speed);
// A width x lane speed that makes a rate, as ibnetdiscover prints it ("4xEDR"; "" for none).
std::string linkName(uint8_t rate);
unsigned mtuBytes(uint8_t mtu);

namespace ib {

// The rate enum a link, a PathRecord or a qos-level carries (IBA table 215 and its later
// additions): 2 = 2.5 Gb/s .. 22 = 600 Gb/s; 0 and 1 name no rate.
inline constexpr uint8_t MinRate = 2;
inline constexpr uint8_t MaxRate = 22;
// Whether a value is one of the rate enum's.
constexpr bool isRate(uint64_t rate) { return rate >= MinRate && rate <= MaxRate; }

// The MTU enum: 1 = 256, 2 = 512, 3 = 1024, 4 = 2048, 5 = 4096 bytes.
inline constexpr uint8_t MinMtu = 1;
inline constexpr uint8_t MaxMtu = 5;
// Whether a value is one of the MTU enum's.
constexpr bool isMtu(uint64_t mtu) { return mtu >= MinMtu && mtu <= MaxMtu; }
// The MTU enum of a size in bytes (256, 512, 1024, 2048 or 4096); 0 for any other size.
constexpr uint8_t mtuForBytes(uint64_t bytes) {
    for (uint8_t mtu = MinMtu; mtu <= MaxMtu; ++mtu) {
        if (bytes == 128u << mtu) return mtu;
    }
    return 0;
}

// The OperVLs/VLCap encoding (PortInfo): 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14;
// 0 and 6-15 are reserved.
inline constexpr uint8_t MaxVlEncoding = 5;
// The data VLs an encoding puts in operation (1, 2, 4, 8 or 15): none for 0 (reserved: no VL
// in operation), all 15 for the reserved codes above 5.
constexpr unsigned dataVls(uint8_t vlEncoding) {
    return vlEncoding == 0 ? 0 : vlEncoding >= MaxVlEncoding ? DataVlCount : 1u << (vlEncoding - 1);
}
// The encoding of a count of data VLs (1, 2, 4, 8 or 15); 0 for any other count.
constexpr uint8_t vlEncoding(uint64_t dataVlCount) {
    for (uint8_t e = 1; e <= MaxVlEncoding; ++e) {
        if (dataVls(e) == dataVlCount) return e;
    }
    return 0;
}

}  // namespace ib

}  // namespace ibqos
