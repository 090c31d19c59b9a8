// SPDX-License-Identifier: MIT
// The mlx5 QP commands a DEVX application (UCX) sends, built and read for the tests on their
// own: written from rdma-core's providers/mlx5/mlx5_ifc.h apart from the preload library's
// reader, so that a mistake in either shows.
#pragma once

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstring>

namespace ibqos::test::devx {

// As rdma-core's DEVX_SET/DEVX_GET do it: a field at bit offset `bit` (from the structure's
// start, big-endian bit order) lives in 32-bit big-endian word bit / 32.
inline uint32_t get(const void* buffer, uint32_t bit, uint32_t width) {
    uint32_t word;
    std::memcpy(&word, static_cast<const uint8_t*>(buffer) + bit / 32 * 4, 4);
    const uint32_t shift = 32 - width - bit % 32;
    const uint32_t mask = width == 32 ? ~0u : (1u << width) - 1;
    return (ntohl(word) >> shift) & mask;
}

inline void set(void* buffer, uint32_t bit, uint32_t width, uint32_t value) {
    uint8_t* at = static_cast<uint8_t*>(buffer) + bit / 32 * 4;
    uint32_t word;
    std::memcpy(&word, at, 4);
    const uint32_t shift = 32 - width - bit % 32;
    const uint32_t mask = (width == 32 ? ~0u : (1u << width) - 1) << shift;
    word = htonl((ntohl(word) & ~mask) | ((value << shift) & mask));
    std::memcpy(at, &word, 4);
}

// Structure offsets, in bits (mlx5_ifc.h).
enum : uint32_t {
    // create_qp_in, rst2init_qp_in, init2rtr_qp_in (0x880 bits for the two modify commands).
    Opcode = 0x0,
    Qpn = 0x48,
    Qpc = 0xc0,
    ModifyQpInBits = 0x880,
    CreateQpInBits = 0x880,
    CreateQpOutBits = 0x80,
    // qpc
    QpcSt = 0x8,
    QpcPrimaryPath = 0xc0,
    // ads
    AdsPkeyIndex = 0x10,
    AdsGrh = 0x28,
    AdsMlid = 0x29,
    AdsRlid = 0x30,
    AdsRgid = 0x80,
    AdsSl = 0x124,
    AdsPort = 0x128,
};

enum : uint16_t { CreateQp = 0x500, Rst2InitQp = 0x502, Init2RtrQp = 0x503, Rtr2RtsQp = 0x504 };
enum : uint8_t { StRc = 0x0, StDci = 0x5 };

// A modify command's buffer.
using ModifyQpIn = std::array<uint8_t, ModifyQpInBits / 8>;

inline constexpr uint32_t path(uint32_t field) { return Qpc + QpcPrimaryPath + field; }

}  // namespace ibqos::test::devx
