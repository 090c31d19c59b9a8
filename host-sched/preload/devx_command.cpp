// SPDX-License-Identifier: MIT
// Reading a DEVX QP command and writing its SL, by the named fields of devx_command.hpp.
#include "host-sched/preload/devx_command.hpp"

namespace ibqos::host::devx {

namespace {

constexpr uint32_t PathBit = CmdQpcBit + QpcPrimaryAddressPathBit;

uint32_t pathField(const uint8_t* in, Field f) { return getField(in, PathBit + f.bit, f.width); }

}  // namespace

uint32_t getField(const uint8_t* buffer, uint32_t bit, uint32_t width) {
    uint32_t value = 0;
    for (uint32_t i = bit; i < bit + width; ++i)
        value = value << 1 | ((buffer[i / 8] >> (7 - i % 8)) & 1u);
    return value;
}

void setField(uint8_t* buffer, uint32_t bit, uint32_t width, uint32_t value) {
    for (uint32_t i = 0; i < width; ++i) {
        const uint32_t at = bit + width - 1 - i;
        const auto mask = static_cast<uint8_t>(1u << (7 - at % 8));
        if ((value >> i) & 1u) {
            buffer[at / 8] |= mask;
        } else {
            buffer[at / 8] &= static_cast<uint8_t>(~mask);
        }
    }
}

std::optional<QpCommand> readQpCommand(const void* in, size_t inlen) {
    if (!in || inlen * 8 < PathBit + AdsBits) return std::nullopt;
    const auto* b = static_cast<const uint8_t*>(in);
    QpCommand c;
    c.opcode = static_cast<uint16_t>(getField(b, CmdOpcode.bit, CmdOpcode.width));
    if (c.opcode != OpCreateQp && c.opcode != OpRst2InitQp && c.opcode != OpInit2RtrQp)
        return std::nullopt;
    c.qpn = getField(b, CmdQpn.bit, CmdQpn.width);
    c.st = static_cast<uint8_t>(getField(b, CmdQpcBit + QpcSt.bit, QpcSt.width));
    AddressPath& p = c.path;
    p.pkeyIndex = static_cast<uint16_t>(pathField(b, AdsPkeyIndex));
    p.grh = pathField(b, AdsGrh) != 0;
    p.srcPathBits = static_cast<uint8_t>(pathField(b, AdsMlid));
    p.rlid = static_cast<uint16_t>(pathField(b, AdsRlid));
    for (size_t i = 0; i < p.rgid.size(); ++i)
        p.rgid[i] = static_cast<uint8_t>(getField(b, PathBit + AdsRgidBit + 8 * i, 8));
    p.sl = static_cast<uint8_t>(pathField(b, AdsSl));
    p.port = static_cast<uint8_t>(pathField(b, AdsVhcaPortNum));
    return c;
}

std::optional<uint32_t> createdQpn(const void* out, size_t outlen) {
    if (!out || outlen * 8 < CreateQpOutQpn.bit + CreateQpOutQpn.width) return std::nullopt;
    return getField(static_cast<const uint8_t*>(out), CreateQpOutQpn.bit, CreateQpOutQpn.width);
}

void writeSl(uint8_t* in, uint8_t sl) { setField(in, PathBit + AdsSl.bit, AdsSl.width, sl); }

}  // namespace ibqos::host::devx
