// SPDX-License-Identifier: MIT
// PathRecord and MultiPathRecord (IBA 15.2.5.16, 15.2.5.20): the records, their component
// masks, GIDs, and the QoS fields of a request. The PathRecord layout is rdma-core's
// (struct ibv_path_record, infiniband/sa.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ibqos::ib {

// A 128-bit port GID in network byte order.
struct Gid {
    std::array<uint8_t, 16> bytes{};

    static Gid fromParts(uint64_t prefix, uint64_t guid);
    // Parses IPv6 notation ("fe80::2:c903:0:1"); nullopt when it is not one.
    static std::optional<Gid> parse(const std::string& text);
    uint64_t prefix() const;
    uint64_t guid() const;
    bool isZero() const;
    bool isMulticast() const { return bytes[0] == 0xff; }
    std::string toString() const;
    bool operator==(const Gid&) const = default;
};

// The subnet prefix of link-local GIDs, and OpenSM's default subnet_prefix.
inline constexpr uint64_t LinkLocalPrefix = 0xfe80000000000000ULL;

// The fields of a request that choose its QoS (a field is there when the request's component
// mask selects it): what a PathRecord query sends and what a QoS policy matches.
struct QosFields {
    std::optional<uint64_t> serviceId;
    std::optional<uint16_t> qosClass;  // 12 bits
    std::optional<uint16_t> pkey;      // as sent, membership bit included
    std::optional<uint8_t> sl;         // 4 bits
};

inline constexpr uint64_t bit(unsigned n) { return uint64_t{1} << n; }

// PathRecord component mask bits (IBA table 207).
namespace pr_mask {
inline constexpr uint64_t ServiceIdMsb = bit(0), ServiceIdLsb = bit(1);
inline constexpr uint64_t ServiceId = ServiceIdMsb | ServiceIdLsb;
inline constexpr uint64_t Dgid = bit(2), Sgid = bit(3), Dlid = bit(4), Slid = bit(5);
inline constexpr uint64_t RawTraffic = bit(6), FlowLabel = bit(8), HopLimit = bit(9);
inline constexpr uint64_t TrafficClass = bit(10);
inline constexpr uint64_t Reversible = bit(11), NumbPath = bit(12), Pkey = bit(13);
inline constexpr uint64_t QosClass = bit(14), Sl = bit(15);
inline constexpr uint64_t MtuSelector = bit(16), Mtu = bit(17);
inline constexpr uint64_t RateSelector = bit(18), Rate = bit(19);
inline constexpr uint64_t PacketLifeSelector = bit(20), PacketLife = bit(21), Preference = bit(22);
}  // namespace pr_mask

// The selector of a PathRecord's MTU, rate or packet life (IBA 15.2.5.16): what the value a
// request gives asks of the path's, and what an answer says of its own value.
enum class Selector : uint8_t { GreaterThan = 0, LessThan = 1, Exactly = 2, Best = 3 };

// An answer's MTU, rate or packet life as OpenSM writes it: "exactly" ORed into the byte, so a
// value above 63 (a packet life OpenSM accepts) spills into the selector's bits.
struct SelectedValue {
    uint8_t selector = 0, value = 0;
};
constexpr SelectedValue exactlyAsOpenSmWrites(uint8_t value) {
    const auto byte = static_cast<uint8_t>(static_cast<uint8_t>(Selector::Exactly) << 6 | value);
    return {static_cast<uint8_t>(byte >> 6), static_cast<uint8_t>(byte & 0x3f)};
}

// MultiPathRecord component mask bits (IBA table 212).
namespace mpr_mask {
inline constexpr uint64_t Pkey = bit(7), QosClass = bit(8), Sl = bit(9);
inline constexpr uint64_t MtuSelector = bit(10), Mtu = bit(11);
inline constexpr uint64_t RateSelector = bit(12), Rate = bit(13);
inline constexpr uint64_t ServiceIdMsb = bit(16), SgidCount = bit(19), DgidCount = bit(20);
inline constexpr uint64_t ServiceIdLsb = bit(21);
}  // namespace mpr_mask

inline constexpr size_t PathRecordSize = 64;

// A PathRecord's fields, as found on the wire.
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

// Byte offsets of the PathRecord fields: rdma-core's struct ibv_path_record.
namespace pr_at {
extern const size_t ServiceId, Dgid, Sgid, Dlid, Slid, FlowLabelHopLimit, TrafficClass,
    ReversibleNumbPath, Pkey, QosClassSl, Mtu, Rate, PacketLife, Preference;
}  // namespace pr_at

std::array<uint8_t, PathRecordSize> encodePathRecord(const PathRecord& record);
PathRecord decodePathRecord(std::span<const uint8_t, PathRecordSize> bytes);

// The fields of a MultiPathRecord a QoS decision reads, and its GIDs.
struct MultiPathRecord {
    uint64_t serviceId = 0;  // its MSB and its 56 low bits, as two fields on the wire
    uint16_t pkey = 0;
    uint16_t qosClass = 0;
    uint8_t sl = 0;
    uint8_t mtu = 0, rate = 0;  // without their selectors
    uint8_t sgidCount = 0, dgidCount = 0;
    std::vector<Gid> gids;  // the GID slots the record holds (11 in one MAD): sources first
};
// Decodes the record of a MultiPathRecord MAD (the bytes after the SA header).
MultiPathRecord decodeMultiPathRecord(std::span<const uint8_t> record);

}  // namespace ibqos::ib
