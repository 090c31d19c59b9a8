// SPDX-License-Identifier: MIT
// The tables a port applies to its traffic: SL to VL mapping and VL arbitration (IBA 14.2.5.8-9).
#pragma once

#include <array>
#include <cstdint>

#include "ib/qos.hpp"

namespace ibqos {

struct VlArbEntry {
    uint8_t vl = 0;
    uint8_t weight = 0;  // 64-byte credits
    bool operator==(const VlArbEntry&) const = default;
};

// A whole VL-arbitration table (two 32-entry blocks); a port uses its cap's worth of entries.
using VlArbTable = std::array<VlArbEntry, 64>;
// VL per SL; ib::DropVl drops the SL.
using Sl2VlTable = std::array<uint8_t, ib::SlCount>;

}  // namespace ibqos
