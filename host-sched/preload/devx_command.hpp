// SPDX-License-Identifier: MIT
// The mlx5 device commands that create and move a QP, as far as SL enforcement reads them:
// the layout (named fields) and the QP command read from, or its SL written into, a DEVX
// command buffer (mlx5dv_devx_obj_create, mlx5dv_devx_obj_modify, mlx5dv_devx_qp_modify).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace ibqos::host::devx {

// A field of a command: its offset in bits from the start of its structure and its width,
// as rdma-core writes them (u8 name[width] in an mlx5_ifc_*_bits struct). Commands are
// big-endian: bit 0 is the most significant bit of byte 0.
struct Field {
    uint32_t bit;
    uint32_t width;
};

// Opcodes (rdma-core providers/mlx5/mlx5_ifc.h, enum MLX5_CMD_OP_*).
inline constexpr uint16_t OpCreateQp = 0x500;
inline constexpr uint16_t OpRst2InitQp = 0x502;
inline constexpr uint16_t OpInit2RtrQp = 0x503;

// mlx5_ifc_create_qp_in_bits, mlx5_ifc_rst2init_qp_in_bits, mlx5_ifc_init2rtr_qp_in_bits:
// opcode first; the QP number (input_qpn for CREATE_QP) at 0x48; the QP context at 0xc0.
inline constexpr Field CmdOpcode{0x0, 0x10};
inline constexpr Field CmdQpn{0x48, 0x18};
inline constexpr uint32_t CmdQpcBit = 0xc0;
// mlx5_ifc_create_qp_out_bits: the QP number the device gave.
inline constexpr Field CreateQpOutQpn{0x48, 0x18};

// mlx5_ifc_qpc_bits: the service type, and the primary address path (struct mlx5_ifc_ads_bits).
inline constexpr Field QpcSt{0x8, 0x8};
inline constexpr uint32_t QpcPrimaryAddressPathBit = 0xc0;

// mlx5_ifc_ads_bits (0x160 bits).
inline constexpr Field AdsPkeyIndex{0x10, 0x10};
inline constexpr Field AdsGrh{0x28, 0x1};
inline constexpr Field AdsMlid{0x29, 0x7};  // the source path bits
inline constexpr Field AdsRlid{0x30, 0x10};
inline constexpr uint32_t AdsRgidBit = 0x80;  // rgid_rip[16][0x8]
inline constexpr Field AdsSl{0x124, 0x4};
inline constexpr Field AdsVhcaPortNum{0x128, 0x8};
inline constexpr uint32_t AdsBits = 0x160;

// The QP context's service types (Linux include/linux/mlx5/mlx5_ifc.h, MLX5_QPC_ST_*; UCX's
// src/uct/ib/mlx5/dv/ib_mlx5_ifc.h has the same values).
inline constexpr uint8_t StRc = 0x0;
inline constexpr uint8_t StUc = 0x1;
inline constexpr uint8_t StUd = 0x2;
inline constexpr uint8_t StDci = 0x5;

// The primary address path's fields SL enforcement reads.
struct AddressPath {
    uint16_t pkeyIndex = 0;
    bool grh = false;
    uint8_t srcPathBits = 0;
    uint16_t rlid = 0;
    std::array<uint8_t, 16> rgid{};
    uint8_t sl = 0;
    uint8_t port = 0;  // vhca_port_num; 0 when the command leaves it
};

// A CREATE_QP, RST2INIT_QP or INIT2RTR_QP command.
struct QpCommand {
    uint16_t opcode = 0;
    uint32_t qpn = 0;  // CREATE_QP: input_qpn (0: the device chooses)
    uint8_t st = 0;    // meaningful in CREATE_QP only
    AddressPath path;
};

// The field's value (width at most 32).
uint32_t getField(const uint8_t* buffer, uint32_t bit, uint32_t width);
void setField(uint8_t* buffer, uint32_t bit, uint32_t width, uint32_t value);

// The command in a buffer the application passes, or nullopt when it is none of the three or
// too short to hold the primary address path (then it is not ours to read).
std::optional<QpCommand> readQpCommand(const void* in, size_t inlen);
// The QP number in CREATE_QP's output, or nullopt when the output is too short.
std::optional<uint32_t> createdQpn(const void* out, size_t outlen);
// Writes the SL into an INIT2RTR_QP command's primary address path (readQpCommand said yes).
void writeSl(uint8_t* in, uint8_t sl);

}  // namespace ibqos::host::devx
