// SPDX-License-Identifier: MIT
// The widths of the QoS fields: SLs, VLs, the QoS class, P_Keys and their membership bit.
#pragma once

#include <cstdint>

namespace ibqos::ib {

// Service levels have 4 bits.
inline constexpr unsigned SlCount = 16;
inline constexpr uint8_t MaxSl = SlCount - 1;

// Virtual lanes have 4 bits too; VL 15, the management VL, is what an SL2VL table names to drop
// an SL.
inline constexpr unsigned VlCount = 16;
inline constexpr uint8_t MaxVl = VlCount - 1;
inline constexpr uint8_t DropVl = 15;
// VLs 0-14 carry data, arbitrated by the VLArb tables.
inline constexpr unsigned DataVlCount = 15;
inline constexpr uint8_t MaxDataVl = DataVlCount - 1;

// The QoS class of a PathRecord has 12 bits (IBA 15.2.5.16).
inline constexpr uint16_t MaxQosClass = 0xfff;

// A P_Key is a 15-bit base and a membership bit, set for a full member.
inline constexpr uint16_t PkeyBaseMask = 0x7fff;
inline constexpr uint16_t PkeyFullMember = 0x8000;
// The largest P_Key, membership bit included.
inline constexpr uint16_t MaxPkey = 0xffff;
// The default partition's base.
inline constexpr uint16_t DefaultPkey = 0x7fff;

// A P_Key without its membership bit.
constexpr uint16_t pkeyBase(uint16_t pkey) { return pkey & PkeyBaseMask; }
// A P_Key from its base and membership.
constexpr uint16_t pkeyOf(uint16_t base, bool full) {
    return static_cast<uint16_t>(pkeyBase(base) | (full ? PkeyFullMember : 0));
}

}  // namespace ibqos::ib
