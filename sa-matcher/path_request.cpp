// SPDX-License-Identifier: MIT
// decodePathRequest: the checks osm_sa_path_record.c / osm_sa_multipath_record.c make first on
// an SA MAD, read through the InfiniBand vocabulary (ib/).
#include "sa-matcher/path_request.hpp"

#include <algorithm>
#include <cstdio>

#include "common/text.hpp"
#include "ib/link.hpp"

namespace ibqos {

namespace {

namespace at = ib::at;
namespace pr_mask = ib::pr_mask;
namespace mpr_mask = ib::mpr_mask;

// OpenSM's limit: the GIDs that fit in the first MAD.
constexpr unsigned MaxGids = 11;

// The fields both records have, as their component mask bits select them. Reading a
// MultiPathRecord through its own bits is what OpenSM's translation of its mask to the
// PathRecord one comes to (osm_qos_policy_get_qos_level_by_mpr).
struct SharedFields {
    uint64_t serviceIdMsb, serviceIdLsb, pkey, qosClass, sl, mtuSelector, mtu, rateSelector, rate;
};
constexpr SharedFields PathRecordMask{
    pr_mask::ServiceIdMsb, pr_mask::ServiceIdLsb, pr_mask::Pkey,
    pr_mask::QosClass,     pr_mask::Sl,           pr_mask::MtuSelector,
    pr_mask::Mtu,          pr_mask::RateSelector, pr_mask::Rate};
constexpr SharedFields MultiPathRecordMask{
    mpr_mask::ServiceIdMsb, mpr_mask::ServiceIdLsb, mpr_mask::Pkey,
    mpr_mask::QosClass,     mpr_mask::Sl,           mpr_mask::MtuSelector,
    mpr_mask::Mtu,          mpr_mask::RateSelector, mpr_mask::Rate};

// The values of those fields in either record.
struct SharedValues {
    uint64_t serviceId;
    uint16_t pkey, qosClass;
    uint8_t sl, mtu, rate;
};

DecodedRequest failure(std::string error, uint16_t status) {
    DecodedRequest d;
    d.error = std::move(error);
    d.saStatus = status;
    return d;
}

// A GID as the port address it names.
PortAddress gidAddress(const ib::Gid& gid) {
    PortAddress a;
    a.gidPrefix = gid.prefix();
    a.guid = gid.guid();
    return a;
}

// The checks OpenSM makes on the shared fields before anything else: an MTU or rate given
// with its selector must be valid, and a ServiceID needs both halves.
std::optional<DecodedRequest> refuseSharedFields(const SharedFields& f, uint64_t mask,
                                                 const SharedValues& v) {
    if ((mask & f.mtu) && (mask & f.mtuSelector) && !ib::isMtu(v.mtu)) {
        return failure("the requested MTU " + std::to_string(v.mtu) + " is not an IB MTU (1..5)",
                       ib::StatusRequestInvalid);
    }
    if ((mask & f.rate) && (mask & f.rateSelector) && !ib::isRate(v.rate)) {
        return failure(
            "the requested rate " + std::to_string(v.rate) + " is not an IB rate (2..22)",
            ib::StatusRequestInvalid);
    }
    if (!(mask & f.serviceIdMsb) != !(mask & f.serviceIdLsb)) {
        return failure("the component mask selects only one half of the ServiceID",
                       ib::StatusInsufficientComponents);
    }
    return std::nullopt;
}

// The ServiceID, QoS class, SL and PKey the mask selects.
void readSharedFields(const SharedFields& f, uint64_t mask, const SharedValues& v, PathRequest& r) {
    if (mask & f.serviceIdMsb) r.serviceId = v.serviceId;
    if (mask & f.qosClass) r.qosClass = v.qosClass;
    if (mask & f.sl) r.sl = v.sl;
    if (mask & f.pkey) r.pkey = v.pkey;
}

DecodedRequest requestFromPathRecord(std::span<const uint8_t> mad, uint8_t method, uint64_t mask) {
    if (method != ib::MethodGet && method != ib::MethodGetTable) {
        return failure("method " + hex(method) + " is not SubnAdmGet or SubnAdmGetTable",
                       ib::StatusUnsupportedMethodAttribute);
    }
    ib::PathRecord record =
        ib::decodePathRecord(mad.subspan(ib::SaHeaderSize).first<ib::PathRecordSize>());
    SharedValues values{record.serviceId, record.pkey, record.qosClass,
                        record.sl,        record.mtu,  record.rate};
    if (auto refused = refuseSharedFields(PathRecordMask, mask, values)) return *refused;
    PathRequest r;
    r.kind = PathRecordKind::PathRecord;
    if (mask & pr_mask::Sgid) r.source = gidAddress(record.sgid);
    if (mask & pr_mask::Slid) r.source.lid = record.slid;
    if (mask & pr_mask::Dgid) r.destination = gidAddress(record.dgid);
    if (mask & pr_mask::Dlid) r.destination.lid = record.dlid;
    if ((mask & pr_mask::Dgid) && record.dgid.isMulticast()) {
        return failure(
            "the destination is a multicast GID: OpenSM answers from the group, not the QoS policy",
            0);
    }
    if ((mask & pr_mask::Sgid) && record.sgid.isMulticast()) {
        return failure("the source GID is a multicast GID", ib::StatusInvalidGid);
    }
    if (!r.source.lid && !r.source.guid) {
        return failure("no source (SGID or SLID): the request asks for paths from every port", 0);
    }
    if (!r.destination.lid && !r.destination.guid) {
        return failure("no destination (DGID or DLID): the request asks for paths to every port",
                       0);
    }
    readSharedFields(PathRecordMask, mask, values, r);
    DecodedRequest d;
    d.requests.push_back(r);
    return d;
}

DecodedRequest requestFromMultiPathRecord(std::span<const uint8_t> mad, uint8_t method,
                                          uint64_t mask) {
    if ((mad[at::RmppFlags] & ib::RmppActive) == 0) {
        return failure("a MultiPathRecord request must have the RMPP active flag",
                       ib::StatusRequestInvalid);
    }
    if (method != ib::MethodGetMulti) {
        return failure("method " + hex(method) + " is not SubnAdmGetMulti",
                       ib::StatusUnsupportedMethodAttribute);
    }
    if (!(mask & mpr_mask::SgidCount) || !(mask & mpr_mask::DgidCount)) {
        return failure("a MultiPathRecord needs SGIDCount and DGIDCount in its component mask",
                       ib::StatusInsufficientComponents);
    }
    ib::MultiPathRecord record = ib::decodeMultiPathRecord(mad.subspan(ib::SaHeaderSize));
    SharedValues values{record.serviceId, record.pkey, record.qosClass,
                        record.sl,        record.mtu,  record.rate};
    if (auto refused = refuseSharedFields(MultiPathRecordMask, mask, values)) return *refused;
    // OpenSM clips the counts to the GIDs that fit, sources first.
    unsigned sources = std::min<unsigned>(record.sgidCount, MaxGids);
    unsigned destinations = std::min<unsigned>(record.dgidCount, MaxGids - sources);
    if (sources == 0 || destinations == 0) {
        return failure("the MultiPathRecord names no source or no destination GID",
                       ib::StatusRequestInvalid);
    }
    PathRequest common;
    common.kind = PathRecordKind::MultiPathRecord;
    readSharedFields(MultiPathRecordMask, mask, values, common);
    for (unsigned i = 0; i < sources; ++i) {
        if (record.gids[i].isMulticast()) {
            return failure("source GID " + std::to_string(i + 1) + " is a multicast GID",
                           ib::StatusInvalidGid);
        }
    }
    DecodedRequest d;
    for (unsigned s = 0; s < sources; ++s) {
        for (unsigned t = 0; t < destinations; ++t) {
            PathRequest r = common;
            r.source = gidAddress(record.gids[s]);
            r.destination = gidAddress(record.gids[sources + t]);
            d.requests.push_back(r);
        }
    }
    return d;
}

}  // namespace

DecodedRequest decodePathRequest(std::span<const uint8_t> mad) {
    if (mad.size() != ib::MadSize) {
        return failure("a MAD has " + std::to_string(ib::MadSize) + " bytes, not " +
                           std::to_string(mad.size()),
                       0);
    }
    if (auto wrong = ib::checkSaHeader(mad)) {
        // Of these OpenSM answers only a wrong class version with a status.
        return failure(wrong->message,
                       wrong->offset == at::ClassVersion ? ib::StatusBadVersion : uint16_t{0});
    }
    uint8_t method = mad[at::Method];
    if (method & ib::ResponseBit)
        return failure("method " + hex(method) + " is a response, not a request", 0);
    uint16_t attribute = ib::get16(mad, at::AttributeId);
    uint64_t mask = ib::get64(mad, at::ComponentMask);
    if (attribute == ib::PathRecordAttribute) return requestFromPathRecord(mad, method, mask);
    if (attribute == ib::MultiPathRecordAttribute)
        return requestFromMultiPathRecord(mad, method, mask);
    return failure(
        "attribute " + hex(attribute) + " is not PathRecord (0x35) or MultiPathRecord (0x3a)",
        ib::StatusUnsupportedMethodAttribute);
}

uint32_t resolvePortAddress(const Fabric& fabric, const PortAddress& address, std::string& error) {
    uint32_t byGid = NoPort, byLid = NoPort;
    if (address.guid) {
        // A link-local GID always names this subnet; any other prefix must be OpenSM's
        // subnet_prefix, assumed to be the default (fe80::) as ibnetdiscover does not record it.
        if ((*address.gidPrefix & 0xffc0000000000000ULL) != ib::LinkLocalPrefix) {
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
    static_cast<ib::QosFields&>(q) = request;
    return q;
}

}  // namespace ibqos
