// SPDX-License-Identifier: MIT
// Subnet administration MADs: the layout rdma-core's libibumad defines (umad_types.h,
// umad_sa.h), read and written in network byte order.
#pragma once

#include <infiniband/umad_sa.h>
#include <infiniband/umad_types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace ibqos::ib {

// Sizes and offsets (IBA 13.4.2 common MAD header, 13.6.2.1 RMPP header, 15.2.1.1 SA header).
inline constexpr size_t MadSize = sizeof(umad_sa_packet);               // 256
inline constexpr size_t SaHeaderSize = offsetof(umad_sa_packet, data);  // 56
namespace at {
inline constexpr size_t BaseVersion = offsetof(umad_hdr, base_version);
inline constexpr size_t MgmtClass = offsetof(umad_hdr, mgmt_class);
inline constexpr size_t ClassVersion = offsetof(umad_hdr, class_version);
inline constexpr size_t Method = offsetof(umad_hdr, method);
inline constexpr size_t Status = offsetof(umad_hdr, status);
inline constexpr size_t TransactionId = offsetof(umad_hdr, tid);
inline constexpr size_t AttributeId = offsetof(umad_hdr, attr_id);
inline constexpr size_t RmppVersion = offsetof(umad_sa_packet, rmpp_hdr.rmpp_version);
inline constexpr size_t RmppType = offsetof(umad_sa_packet, rmpp_hdr.rmpp_type);
inline constexpr size_t RmppFlags = offsetof(umad_sa_packet, rmpp_hdr.rmpp_rtime_flags);
inline constexpr size_t Segment = offsetof(umad_sa_packet, rmpp_hdr.seg_num);
inline constexpr size_t PayloadLength = offsetof(umad_sa_packet, rmpp_hdr.paylen_newwin);
inline constexpr size_t SmKey = offsetof(umad_sa_packet, sm_key);
inline constexpr size_t AttributeOffset = offsetof(umad_sa_packet, attr_offset);
inline constexpr size_t ComponentMask = offsetof(umad_sa_packet, comp_mask);
}  // namespace at

inline constexpr uint8_t BaseVersion = 1;
inline constexpr uint8_t SaClass = UMAD_CLASS_SUBN_ADM;
inline constexpr uint8_t SaClassVersion = UMAD_SA_CLASS_VERSION;
inline constexpr uint8_t MethodGet = UMAD_METHOD_GET;
inline constexpr uint8_t MethodGetTable = UMAD_SA_METHOD_GET_TABLE;
inline constexpr uint8_t MethodGetMulti = UMAD_SA_METHOD_GET_MULTI;
inline constexpr uint8_t ResponseBit = UMAD_METHOD_RESP_MASK;
inline constexpr uint16_t PathRecordAttribute = UMAD_SA_ATTR_PATH_REC;
inline constexpr uint16_t MultiPathRecordAttribute = UMAD_SA_ATTR_MULTI_PATH_REC;
inline constexpr uint8_t RmppActive = 0x1, RmppFirst = 0x2, RmppLast = 0x4;

// MAD status values (host order): the common field codes, and the SA's in the high byte.
inline constexpr uint16_t StatusBusy = UMAD_STATUS_BUSY;
inline constexpr uint16_t StatusBadVersion = UMAD_STATUS_BAD_VERSION;
inline constexpr uint16_t StatusUnsupportedMethodAttribute = UMAD_STATUS_ATTR_NOT_SUPPORTED;
inline constexpr uint16_t saStatus(unsigned code) { return static_cast<uint16_t>(code << 8); }
inline constexpr uint16_t StatusRequestInvalid = saStatus(UMAD_SA_STATUS_REQ_INVALID);
inline constexpr uint16_t StatusNoRecords = saStatus(UMAD_SA_STATUS_NO_RECORDS);
inline constexpr uint16_t StatusInvalidGid = saStatus(UMAD_SA_STATUS_INVALID_GID);
inline constexpr uint16_t StatusInsufficientComponents = saStatus(UMAD_SA_STATUS_INSUF_COMPS);

// Big-endian fields.
inline uint64_t getBig(std::span<const uint8_t> bytes, size_t at, size_t size) {
    uint64_t v = 0;
    for (size_t i = 0; i < size; ++i) v = v << 8 | bytes[at + i];
    return v;
}
inline uint16_t get16(std::span<const uint8_t> b, size_t at) {
    return static_cast<uint16_t>(getBig(b, at, 2));
}
inline uint32_t get32(std::span<const uint8_t> b, size_t at) {
    return static_cast<uint32_t>(getBig(b, at, 4));
}
inline uint64_t get64(std::span<const uint8_t> b, size_t at) { return getBig(b, at, 8); }
inline void putBig(uint8_t* p, uint64_t v, size_t size) {
    for (size_t i = size; i-- > 0; v >>= 8) p[i] = static_cast<uint8_t>(v);
}
inline void put16(uint8_t* p, uint16_t v) { putBig(p, v, 2); }
inline void put32(uint8_t* p, uint32_t v) { putBig(p, v, 4); }
inline void put64(uint8_t* p, uint64_t v) { putBig(p, v, 8); }

// "0x0300 (SA_ERR_NO_RECORDS)", "0x0001 (busy)": the MAD status field in words.
std::string describeMadStatus(uint16_t status);

// A MAD field that does not hold what it must: its offset, its name and what is wrong.
struct MadFieldError {
    size_t offset = 0;
    std::string field;
    std::string message;
};
// The first field of the common MAD header (at least 3 bytes) that does not say "SA MAD, version
// 1, SA class version 2", or nullopt.
std::optional<MadFieldError> checkSaHeader(std::span<const uint8_t> mad);

}  // namespace ibqos::ib
