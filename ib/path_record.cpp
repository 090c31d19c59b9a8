// SPDX-License-Identifier: MIT
// PathRecord and MultiPathRecord on the wire, and GIDs in text.
#include "ib/path_record.hpp"

#include <arpa/inet.h>
#include <infiniband/sa.h>
#include <rdma/rdma_cma.h>

#include <algorithm>

#include "ib/mad.hpp"
#include "ib/qos.hpp"
#include "ib/service_id.hpp"

namespace ibqos::ib {

// The port space the kernel ULPs' ServiceIDs are made in is rdma-core's.
static_assert(RdmaPsTcp == RDMA_PS_TCP);

static_assert(sizeof(ibv_path_record) == PathRecordSize);

namespace pr_at {
const size_t ServiceId = offsetof(ibv_path_record, service_id);
const size_t Dgid = offsetof(ibv_path_record, dgid);
const size_t Sgid = offsetof(ibv_path_record, sgid);
const size_t Dlid = offsetof(ibv_path_record, dlid);
const size_t Slid = offsetof(ibv_path_record, slid);
const size_t FlowLabelHopLimit = offsetof(ibv_path_record, flowlabel_hoplimit);
const size_t TrafficClass = offsetof(ibv_path_record, tclass);
const size_t ReversibleNumbPath = offsetof(ibv_path_record, reversible_numpath);
const size_t Pkey = offsetof(ibv_path_record, pkey);
const size_t QosClassSl = offsetof(ibv_path_record, qosclass_sl);
const size_t Mtu = offsetof(ibv_path_record, mtu);
const size_t Rate = offsetof(ibv_path_record, rate);
const size_t PacketLife = offsetof(ibv_path_record, packetlifetime);
const size_t Preference = offsetof(ibv_path_record, preference);
}  // namespace pr_at

namespace {

// The MultiPathRecord layout (IBA 15.2.5.20): rdma-core has no struct for it.
namespace mpr_at {
constexpr size_t Pkey = 6, QosClassSl = 8, Mtu = 10, Rate = 11, ServiceIdMsb = 13;
constexpr size_t SgidCount = 15, DgidCount = 16, ServiceIdLsb = 17, Gids = 24;
}  // namespace mpr_at

Gid gidAt(std::span<const uint8_t> b, size_t at) {
    Gid g;
    std::copy(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(at + 16),
              g.bytes.begin());
    return g;
}

}  // namespace

Gid Gid::fromParts(uint64_t prefix, uint64_t guid) {
    Gid g;
    put64(g.bytes.data(), prefix);
    put64(g.bytes.data() + 8, guid);
    return g;
}

std::optional<Gid> Gid::parse(const std::string& text) {
    Gid g;
    if (inet_pton(AF_INET6, text.c_str(), g.bytes.data()) != 1) return std::nullopt;
    return g;
}

uint64_t Gid::prefix() const { return get64(bytes, 0); }
uint64_t Gid::guid() const { return get64(bytes, 8); }
bool Gid::isZero() const {
    return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

std::string Gid::toString() const {
    char buf[INET6_ADDRSTRLEN];
    if (!inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf)) return "?";
    return buf;
}

std::array<uint8_t, PathRecordSize> encodePathRecord(const PathRecord& r) {
    std::array<uint8_t, PathRecordSize> b{};
    put64(&b[pr_at::ServiceId], r.serviceId);
    std::copy(r.dgid.bytes.begin(), r.dgid.bytes.end(), b.begin() + pr_at::Dgid);
    std::copy(r.sgid.bytes.begin(), r.sgid.bytes.end(), b.begin() + pr_at::Sgid);
    put16(&b[pr_at::Dlid], r.dlid);
    put16(&b[pr_at::Slid], r.slid);
    put32(&b[pr_at::FlowLabelHopLimit],
          uint32_t{r.rawTraffic} << 31 | (r.flowLabel & 0xfffff) << 8 | r.hopLimit);
    b[pr_at::TrafficClass] = r.trafficClass;
    b[pr_at::ReversibleNumbPath] =
        static_cast<uint8_t>(uint32_t{r.reversible} << 7 | (r.numbPath & 0x7f));
    put16(&b[pr_at::Pkey], r.pkey);
    put16(&b[pr_at::QosClassSl],
          static_cast<uint16_t>((r.qosClass & MaxQosClass) << 4 | (r.sl & MaxSl)));
    b[pr_at::Mtu] = static_cast<uint8_t>((r.mtuSelector & 3) << 6 | (r.mtu & 0x3f));
    b[pr_at::Rate] = static_cast<uint8_t>((r.rateSelector & 3) << 6 | (r.rate & 0x3f));
    b[pr_at::PacketLife] =
        static_cast<uint8_t>((r.packetLifeSelector & 3) << 6 | (r.packetLife & 0x3f));
    b[pr_at::Preference] = r.preference;
    return b;
}

PathRecord decodePathRecord(std::span<const uint8_t, PathRecordSize> b) {
    PathRecord r;
    r.serviceId = get64(b, pr_at::ServiceId);
    r.dgid = gidAt(b, pr_at::Dgid);
    r.sgid = gidAt(b, pr_at::Sgid);
    r.dlid = get16(b, pr_at::Dlid);
    r.slid = get16(b, pr_at::Slid);
    uint32_t hopFlowRaw = get32(b, pr_at::FlowLabelHopLimit);
    r.rawTraffic = hopFlowRaw >> 31;
    r.flowLabel = (hopFlowRaw >> 8) & 0xfffff;
    r.hopLimit = static_cast<uint8_t>(hopFlowRaw);
    r.trafficClass = b[pr_at::TrafficClass];
    r.reversible = b[pr_at::ReversibleNumbPath] >> 7;
    r.numbPath = b[pr_at::ReversibleNumbPath] & 0x7f;
    r.pkey = get16(b, pr_at::Pkey);
    uint16_t qosClassSl = get16(b, pr_at::QosClassSl);
    r.qosClass = qosClassSl >> 4;
    r.sl = qosClassSl & MaxSl;
    r.mtuSelector = b[pr_at::Mtu] >> 6;
    r.mtu = b[pr_at::Mtu] & 0x3f;
    r.rateSelector = b[pr_at::Rate] >> 6;
    r.rate = b[pr_at::Rate] & 0x3f;
    r.packetLifeSelector = b[pr_at::PacketLife] >> 6;
    r.packetLife = b[pr_at::PacketLife] & 0x3f;
    r.preference = b[pr_at::Preference];
    return r;
}

MultiPathRecord decodeMultiPathRecord(std::span<const uint8_t> b) {
    MultiPathRecord r;
    r.serviceId = getBig(b, mpr_at::ServiceIdMsb, 1) << 56 | getBig(b, mpr_at::ServiceIdLsb, 7);
    r.pkey = get16(b, mpr_at::Pkey);
    uint16_t qosClassSl = get16(b, mpr_at::QosClassSl);
    r.qosClass = qosClassSl >> 4;
    r.sl = qosClassSl & MaxSl;
    r.mtu = b[mpr_at::Mtu] & 0x3f;
    r.rate = b[mpr_at::Rate] & 0x3f;
    r.sgidCount = b[mpr_at::SgidCount];
    r.dgidCount = b[mpr_at::DgidCount];
    for (size_t at = mpr_at::Gids; at + 16 <= b.size(); at += 16) r.gids.push_back(gidAt(b, at));
    return r;
}

}  // namespace ibqos::ib
