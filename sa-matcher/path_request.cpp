// SPDX-License-Identifier: MIT
// decodePathRequest: the SA MAD layouts of IBA vol. 1 (15.2.5.16 PathRecord, 15.2.5.20
// MultiPathRecord) and the checks osm_sa_path_record.c / osm_sa_multipath_record.c make first.
#include "sa-matcher/path_request.hpp"
#include "common/text.hpp"

#include <cstdio>

namespace ibqos {

namespace {

// MAD and SA header (IBA 13.4.2, 15.2.1.1): offsets in bytes.
constexpr size_t BaseVersionAt = 0, MgmtClassAt = 1, ClassVersionAt = 2, MethodAt = 3;
constexpr size_t AttributeIdAt = 16, RmppFlagsAt = 26, ComponentMaskAt = 48, DataAt = 56;

constexpr uint8_t SubnetAdministration = 0x03;
constexpr uint8_t SaClassVersion = 2;
constexpr uint8_t MethodGet = 0x01, MethodGetTable = 0x12, MethodGetMulti = 0x14;
constexpr uint16_t PathRecordId = 0x0035, MultiPathRecordId = 0x003a;
constexpr uint8_t RmppActive = 0x01;

// MAD status values (host order) OpenSM answers with.
constexpr uint16_t StatusUnsupportedClassVersion = 0x0004;
constexpr uint16_t StatusUnsupportedMethodAttribute = 0x000c;
constexpr uint16_t StatusRequestInvalid = 0x0200;
constexpr uint16_t StatusInvalidGid = 0x0500;
constexpr uint16_t StatusInsufficientComponents = 0x0600;

constexpr uint64_t bit(unsigned n) { return uint64_t{1} << n; }

// PathRecord component mask bits (IBA table 207) and record offsets.
namespace pr {
constexpr uint64_t Dgid = bit(2), Sgid = bit(3), Dlid = bit(4), Slid = bit(5);
constexpr size_t ServiceIdAt = 0, DgidAt = 8, SgidAt = 24, DlidAt = 40, SlidAt = 42;
}  // namespace pr

// MultiPathRecord component mask bits (IBA table 212) and record offsets.
namespace mpr {
constexpr uint64_t SgidCount = bit(19), DgidCount = bit(20);
constexpr size_t ServiceIdMsbAt = 13, SgidCountAt = 15, DgidCountAt = 16, ServiceIdLsbAt = 17;
constexpr size_t GidsAt = 24;
constexpr unsigned MaxGids = 11;  // as many as fit in the first MAD (OpenSM's limit)
}  // namespace mpr

// The fields both records have: their component mask bits and offsets. Reading a
// MultiPathRecord through its own bits is what OpenSM's translation of its mask to the
// PathRecord one comes to (osm_qos_policy_get_qos_level_by_mpr).
struct SharedFields {
    uint64_t serviceIdMsb, serviceIdLsb, pkey, qosClass, sl, mtuSelector, mtu, rateSelector, rate;
    size_t pkeyAt, qosClassSlAt, mtuAt, rateAt;
};
constexpr SharedFields PathRecordFields{.serviceIdMsb = bit(0),
                                        .serviceIdLsb = bit(1),
                                        .pkey = bit(13),
                                        .qosClass = bit(14),
                                        .sl = bit(15),
                                        .mtuSelector = bit(16),
                                        .mtu = bit(17),
                                        .rateSelector = bit(18),
                                        .rate = bit(19),
                                        .pkeyAt = 50,
                                        .qosClassSlAt = 52,
                                        .mtuAt = 54,
                                        .rateAt = 55};
constexpr SharedFields MultiPathRecordFields{.serviceIdMsb = bit(16),
                                             .serviceIdLsb = bit(21),
                                             .pkey = bit(7),
                                             .qosClass = bit(8),
                                             .sl = bit(9),
                                             .mtuSelector = bit(10),
                                             .mtu = bit(11),
                                             .rateSelector = bit(12),
                                             .rate = bit(13),
                                             .pkeyAt = 6,
                                             .qosClassSlAt = 8,
                                             .mtuAt = 10,
                                             .rateAt = 11};

uint64_t readBig(std::span<const uint8_t> bytes, size_t at, size_t size) {
    uint64_t v = 0;
    for (size_t i = 0; i < size; ++i) v = v << 8 | bytes[at + i];
    return v;
}

DecodedRequest failure(std::string error, uint16_t status) {
    DecodedRequest d;
    d.error = std::move(error);
    d.saStatus = status;
    return d;
}

bool isMulticast(uint64_t gidPrefix) { return gidPrefix >> 56 == 0xff; }

// A GID (16 bytes at `at`) as the port address it names.
PortAddress gidAddress(std::span<const uint8_t> record, size_t at) {
    PortAddress a;
    a.gidPrefix = readBig(record, at, 8);
    a.guid = readBig(record, at + 8, 8);
    return a;
}

// The checks OpenSM makes on the shared fields before anything else: an MTU or rate given
// with its selector must be valid, and a ServiceID needs both halves.
std::optional<DecodedRequest> refuseSharedFields(const SharedFields& f, uint64_t mask,
                                                 std::span<const uint8_t> record) {
    uint8_t mtu = record[f.mtuAt] & 0x3f, rate = record[f.rateAt] & 0x3f;
    if ((mask & f.mtu) && (mask & f.mtuSelector) && (mtu < 1 || mtu > 5)) {
        return failure("the requested MTU " + std::to_string(mtu) + " is not an IB MTU (1..5)",
                       StatusRequestInvalid);
    }
    if ((mask & f.rate) && (mask & f.rateSelector) && (rate < 2 || rate > 22)) {
        return failure("the requested rate " + std::to_string(rate) + " is not an IB rate (2..22)",
                       StatusRequestInvalid);
    }
    if (!(mask & f.serviceIdMsb) != !(mask & f.serviceIdLsb)) {
        return failure("the component mask selects only one half of the ServiceID",
                       StatusInsufficientComponents);
    }
    return std::nullopt;
}

// The QoS class, SL and PKey the mask selects.
void readSharedFields(const SharedFields& f, uint64_t mask, std::span<const uint8_t> record,
                      PathRequest& r) {
    uint16_t qosClassSl = static_cast<uint16_t>(readBig(record, f.qosClassSlAt, 2));
    if (mask & f.qosClass) r.qosClass = qosClassSl >> 4;
    if (mask & f.sl) r.sl = qosClassSl & 0xf;
    if (mask & f.pkey) r.pkey = static_cast<uint16_t>(readBig(record, f.pkeyAt, 2));
}

DecodedRequest decodePathRecord(std::span<const uint8_t> mad, uint8_t method, uint64_t mask) {
    if (method != MethodGet && method != MethodGetTable) {
        return failure("method " + hex(method) + " is not SubnAdmGet or SubnAdmGetTable",
                       StatusUnsupportedMethodAttribute);
    }
    auto record = mad.subspan(DataAt);
    if (auto refused = refuseSharedFields(PathRecordFields, mask, record)) return *refused;
    PathRequest r;
    r.kind = PathRecordKind::PathRecord;
    if (mask & pr::Sgid) r.source = gidAddress(record, pr::SgidAt);
    if (mask & pr::Slid) r.source.lid = static_cast<uint16_t>(readBig(record, pr::SlidAt, 2));
    if (mask & pr::Dgid) r.destination = gidAddress(record, pr::DgidAt);
    if (mask & pr::Dlid) r.destination.lid = static_cast<uint16_t>(readBig(record, pr::DlidAt, 2));
    if (r.destination.gidPrefix && isMulticast(*r.destination.gidPrefix)) {
        return failure(
            "the destination is a multicast GID: OpenSM answers from the group, not the QoS policy",
            0);
    }
    if (r.source.gidPrefix && isMulticast(*r.source.gidPrefix)) {
        return failure("the source GID is a multicast GID", StatusInvalidGid);
    }
    if (!r.source.lid && !r.source.guid) {
        return failure("no source (SGID or SLID): the request asks for paths from every port", 0);
    }
    if (!r.destination.lid && !r.destination.guid) {
        return failure("no destination (DGID or DLID): the request asks for paths to every port",
                       0);
    }
    if (mask & PathRecordFields.serviceIdMsb) r.serviceId = readBig(record, pr::ServiceIdAt, 8);
    readSharedFields(PathRecordFields, mask, record, r);
    DecodedRequest d;
    d.requests.push_back(r);
    return d;
}

DecodedRequest decodeMultiPathRecord(std::span<const uint8_t> mad, uint8_t method, uint64_t mask) {
    if ((mad[RmppFlagsAt] & RmppActive) == 0) {
        return failure("a MultiPathRecord request must have the RMPP active flag",
                       StatusRequestInvalid);
    }
    if (method != MethodGetMulti) {
        return failure("method " + hex(method) + " is not SubnAdmGetMulti",
                       StatusUnsupportedMethodAttribute);
    }
    if (!(mask & mpr::SgidCount) || !(mask & mpr::DgidCount)) {
        return failure("a MultiPathRecord needs SGIDCount and DGIDCount in its component mask",
                       StatusInsufficientComponents);
    }
    auto record = mad.subspan(DataAt);
    if (auto refused = refuseSharedFields(MultiPathRecordFields, mask, record)) return *refused;
    // OpenSM clips the counts to the GIDs that fit, sources first.
    unsigned sources = std::min<unsigned>(record[mpr::SgidCountAt], mpr::MaxGids);
    unsigned destinations = std::min<unsigned>(record[mpr::DgidCountAt], mpr::MaxGids - sources);
    if (sources == 0 || destinations == 0) {
        return failure("the MultiPathRecord names no source or no destination GID",
                       StatusRequestInvalid);
    }
    PathRequest common;
    common.kind = PathRecordKind::MultiPathRecord;
    if (mask & MultiPathRecordFields.serviceIdMsb) {
        common.serviceId =
            readBig(record, mpr::ServiceIdMsbAt, 1) << 56 | readBig(record, mpr::ServiceIdLsbAt, 7);
    }
    readSharedFields(MultiPathRecordFields, mask, record, common);

    std::vector<PortAddress> gids;
    for (unsigned i = 0; i < sources + destinations; ++i) {
        PortAddress a = gidAddress(record, mpr::GidsAt + 16 * i);
        if (i < sources && isMulticast(*a.gidPrefix)) {
            return failure("source GID " + std::to_string(i + 1) + " is a multicast GID",
                           StatusInvalidGid);
        }
        gids.push_back(a);
    }
    DecodedRequest d;
    for (unsigned s = 0; s < sources; ++s) {
        for (unsigned t = 0; t < destinations; ++t) {
            PathRequest r = common;
            r.source = gids[s];
            r.destination = gids[sources + t];
            d.requests.push_back(r);
        }
    }
    return d;
}

}  // namespace

DecodedRequest decodePathRequest(std::span<const uint8_t> mad) {
    if (mad.size() != MadSize) {
        return failure(
            "a MAD has " + std::to_string(MadSize) + " bytes, not " + std::to_string(mad.size()),
            0);
    }
    if (mad[BaseVersionAt] != 1) {
        return failure("base version " + std::to_string(mad[BaseVersionAt]) + " is not 1", 0);
    }
    if (mad[MgmtClassAt] != SubnetAdministration) {
        return failure(
            "management class " + hex(mad[MgmtClassAt]) + " is not Subnet Administration (0x3)", 0);
    }
    if (mad[ClassVersionAt] != SaClassVersion) {
        return failure("SA class version " + std::to_string(mad[ClassVersionAt]) + " is not 2",
                       StatusUnsupportedClassVersion);
    }
    uint8_t method = mad[MethodAt];
    if (method & 0x80) return failure("method " + hex(method) + " is a response, not a request", 0);
    uint16_t attribute = static_cast<uint16_t>(readBig(mad, AttributeIdAt, 2));
    uint64_t mask = readBig(mad, ComponentMaskAt, 8);
    if (attribute == PathRecordId) return decodePathRecord(mad, method, mask);
    if (attribute == MultiPathRecordId) return decodeMultiPathRecord(mad, method, mask);
    return failure(
        "attribute " + hex(attribute) + " is not PathRecord (0x35) or MultiPathRecord (0x3a)",
        StatusUnsupportedMethodAttribute);
}

uint32_t resolvePortAddress(const Fabric& fabric, const PortAddress& address, std::string& error) {
    uint32_t byGid = NoPort, byLid = NoPort;
    if (address.guid) {
        // A link-local GID always names this subnet; any other prefix must be OpenSM's
        // subnet_prefix, assumed to be the default (fe80::) as ibnetdiscover does not record it.
        if ((*address.gidPrefix & 0xffc0000000000000ULL) != LinkLocalPrefix) {
            error = "GID prefix " + hex(*address.gidPrefix) + " is not this subnet's";
            return NoPort;
        }
        byGid = fabric.endpointByGuid(*address.guid);
        if (byGid == NoPort) {
            error = "no port has GUID " + hex(*address.guid);
            return NoPort;
        }
    }
    if (address.lid) {
        byLid = fabric.endpointByLid(*address.lid);
        if (byLid == NoPort) {
            error = "no port has LID " + std::to_string(*address.lid);
            return NoPort;
        }
    }
    if (byGid != NoPort && byLid != NoPort && byGid != byLid) {
        error = "the GID and the LID name different ports";
        return NoPort;
    }
    if (byGid == NoPort && byLid == NoPort) error = "no port is named";
    return byGid != NoPort ? byGid : byLid;
}

std::optional<PathQuery> resolvePathRequest(const Fabric& fabric, const PathRequest& request,
                                            std::string& error) {
    PathQuery q;
    q.source = resolvePortAddress(fabric, request.source, error);
    if (q.source == NoPort) {
        error = "source: " + error;
        return std::nullopt;
    }
    q.destination = resolvePortAddress(fabric, request.destination, error);
    if (q.destination == NoPort) {
        error = "destination: " + error;
        return std::nullopt;
    }
    q.serviceId = request.serviceId;
    q.qosClass = request.qosClass;
    q.pkey = request.pkey;
    q.sl = request.sl;
    return q;
}

}  // namespace ibqos
