// SPDX-License-Identifier: MIT
// The tables a port applies to its traffic: SL to VL mapping and VL arbitration (IBA 14.2.5.8-9),
// and how their attributes lay them out.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ib/qos.hpp"

namespace ibqos {

// One entry of a VL-arbitration table.
struct VlArbEntry {
    uint8_t vl = 0;
    uint8_t weight = 0;  // 64-byte credits
    bool operator==(const VlArbEntry&) const = default;
};

// A whole VL-arbitration table (two 32-entry blocks); a port uses its cap's worth of entries.
using VlArbTable = std::array<VlArbEntry, 64>;
// VL per SL; ib::DropVl drops the SL.
using Sl2VlTable = std::array<uint8_t, ib::SlCount>;

namespace ib {

// The SLtoVLMappingTable attribute: two SLs a byte, the even one in the high nibble.
inline constexpr size_t Sl2VlBytes = SlCount / 2;
using PackedSl2Vl = std::array<uint8_t, Sl2VlBytes>;

// The attribute's bytes for a table (a VL keeps its low 4 bits).
constexpr PackedSl2Vl packSl2Vl(const Sl2VlTable& table) {
    PackedSl2Vl bytes{};
    for (size_t i = 0; i < Sl2VlBytes; ++i)
        bytes[i] = static_cast<uint8_t>((table[2 * i] & 0xf) << 4 | (table[2 * i + 1] & 0xf));
    return bytes;
}
// The table the attribute's bytes hold.
constexpr Sl2VlTable unpackSl2Vl(std::span<const uint8_t, Sl2VlBytes> bytes) {
    Sl2VlTable table{};
    for (size_t i = 0; i < Sl2VlBytes; ++i) {
        table[2 * i] = bytes[i] >> 4;
        table[2 * i + 1] = bytes[i] & 0xf;
    }
    return table;
}
// A VL as an SL2VL table keeps it: its low 4 bits.
constexpr uint8_t sl2VlEntry(unsigned vl) { return static_cast<uint8_t>(vl & 0xf); }
// The attribute modifier that names a switch's (in-port, out-port) table; 0 on a CA or router.
constexpr uint32_t sl2VlModifier(uint8_t inPort, uint8_t outPort) {
    return uint32_t{inPort} << 8 | outPort;
}

// The VLArbitrationTable attribute: blocks of 32 entries, 0 and 1 the low-priority table, 2 and
// 3 the high-priority one (OpenSM's index; the attribute modifier numbers them from 1).
inline constexpr unsigned VlArbBlockEntries = 32;
inline constexpr unsigned VlArbBlockCount = 4;

// The block that holds a half (0 or 1) of the high- or low-priority table.
constexpr unsigned vlArbBlock(bool high, unsigned half) { return (high ? 2u : 0u) + half; }
// Whether a block belongs to the high-priority table.
constexpr bool vlArbBlockIsHigh(unsigned block) { return block >= 2; }
// The index in its table (a VlArbTable) of a block's first entry.
constexpr unsigned vlArbFirstEntry(unsigned block) { return block % 2 * VlArbBlockEntries; }
// The attribute modifier that names a block of a port's table (port 0 on a CA or router).
constexpr uint32_t vlArbModifier(unsigned block, uint8_t port) { return (block + 1) << 16 | port; }
// An entry from its two bytes: the VL in the low 4 bits of the first, the weight.
constexpr VlArbEntry vlArbEntry(uint8_t vlByte, uint8_t weight) {
    return {static_cast<uint8_t>(vlByte & 0xf), weight};
}

}  // namespace ib

}  // namespace ibqos
