// SPDX-License-Identifier: MIT
// SA PathRecord MADs on the wire: requests encoded and answers checked, as pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace ibqos::host {

// Sizes and codes of the SA management class (IBA 13.4, 15.2).
inline constexpr size_t MadSize = 256;
inline constexpr size_t SaHeaderSize = 56;  // common MAD header, RMPP header, SA header
inline constexpr size_t PathRecordSize = 64;
inline constexpr uint8_t SaClass = 0x03;
inline constexpr uint8_t SaClassVersion = 2;
inline constexpr uint16_t PathRecordAttribute = 0x0035;

enum class SaMethod : uint8_t { Get = 0x01, GetTable = 0x12 };

// A 128-bit port GID in network byte order.
struct Gid {
    std::array<uint8_t, 16> bytes{};

    static Gid fromParts(uint64_t prefix, uint64_t guid);
    // Parses IPv6 notation ("fe80::2:c903:0:1"); nullopt when it is not one.
    static std::optional<Gid> parse(const std::string& text);
    uint64_t prefix() const;
    uint64_t guid() const;
    bool isZero() const;
    std::string toString() const;
    bool operator==(const Gid&) const = default;
};

// One PathRecord request: which path, and the QoS fields the SA must honour.
struct PathQuery {
    SaMethod method = SaMethod::GetTable;
    bool byGid = false;  // false: SLID/DLID; true: SGID/DGID
    uint16_t slid = 0;   // by GID: not checked (with LMC any of the port's LIDs may come back)
    uint16_t dlid = 0;
    Gid sgid;  // by LID: checked in the answer when not zero
    Gid dgid;
    std::optional<uint64_t> serviceId;
    std::optional<uint16_t> qosClass;  // 12 bits
    std::optional<uint16_t> pkey;
    std::optional<uint8_t> sl;  // 4 bits
    bool reversible = true;     // ask for a path that also works back (RC needs it)
};

// The fields of a PathRecord (IBA 15.2.5.16), as found on the wire.
struct PathRecord {
    uint64_t serviceId = 0;
    Gid dgid;
    Gid sgid;
    uint16_t dlid = 0;
    uint16_t slid = 0;
    bool rawTraffic = false;
    uint32_t flowLabel = 0;
    uint8_t hopLimit = 0;
    uint8_t trafficClass = 0;
    bool reversible = false;
    uint8_t numbPath = 0;
    uint16_t pkey = 0;
    uint16_t qosClass = 0;
    uint8_t sl = 0;
    uint8_t mtuSelector = 0;
    uint8_t mtu = 0;  // IB MTU enum: 1 = 256 ... 5 = 4096
    uint8_t rateSelector = 0;
    uint8_t rate = 0;  // IB rate enum
    uint8_t packetLifeSelector = 0;
    uint8_t packetLife = 0;
    uint8_t preference = 0;
    bool operator==(const PathRecord&) const = default;
};

// PathRecord component-mask bits (IBA table 209).
namespace pr_mask {
inline constexpr uint64_t ServiceId = (1ull << 0) | (1ull << 1);
inline constexpr uint64_t Dgid = 1ull << 2;
inline constexpr uint64_t Sgid = 1ull << 3;
inline constexpr uint64_t Dlid = 1ull << 4;
inline constexpr uint64_t Slid = 1ull << 5;
inline constexpr uint64_t Reversible = 1ull << 11;
inline constexpr uint64_t NumbPath = 1ull << 12;
inline constexpr uint64_t Pkey = 1ull << 13;
inline constexpr uint64_t QosClass = 1ull << 14;
inline constexpr uint64_t Sl = 1ull << 15;
}  // namespace pr_mask

// The component mask a query sends.
uint64_t componentMask(const PathQuery& query);

// The 256-byte request MAD for a query with the given transaction id.
std::array<uint8_t, MadSize> encodePathQuery(const PathQuery& query, uint64_t transactionId);

std::array<uint8_t, PathRecordSize> encodePathRecord(const PathRecord& record);
PathRecord decodePathRecord(std::span<const uint8_t, PathRecordSize> bytes);

// What an answer MAD turned out to be.
enum class AnswerKind : uint8_t {
    Path,     // a checked PathRecord
    NoPath,   // the SA answered: no such path (empty table or ERR_NO_RECORDS)
    Busy,     // MAD status "busy": ask again later
    NotOurs,  // another transaction or another attribute: not an answer to this query
    Invalid,  // an answer to this query that breaks the protocol; error says where
};

// A problem in an answer, located at a byte offset of the MAD.
struct WireError {
    size_t offset = 0;
    std::string field;
    std::string message;
    std::string toString() const;
};

struct DecodedAnswer {
    AnswerKind kind = AnswerKind::Invalid;
    PathRecord record;       // kind == Path
    size_t recordCount = 0;  // records in the answer (the first one is used)
    uint16_t status = 0;     // the MAD status field
    uint64_t transactionId = 0;
    WireError error;  // kind == Invalid, or the SA's status for NoPath
};

// Checks an answer MAD against the query it should answer. transactionIds are the ids this
// query was sent with (retries use new ones); only their low 32 bits are compared, because
// the kernel's MAD layer replaces the high 32 bits with its agent id.
DecodedAnswer decodePathAnswer(std::span<const uint8_t> mad, const PathQuery& query,
                               std::span<const uint64_t> transactionIds);

// "SA_ERR_NO_RECORDS", "busy", ...: the MAD status field in words.
std::string describeMadStatus(uint16_t status);

}  // namespace ibqos::host
