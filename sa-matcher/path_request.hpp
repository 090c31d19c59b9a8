// SPDX-License-Identifier: MIT
// PathRequest: a PathRecord or MultiPathRecord request as OpenSM's SA reads it, decoded from the
// raw MAD, and PathQuery: the same request with its two ends resolved to ports of a Fabric.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabric/fabric.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"

namespace ibqos {

// The SA attribute a request was sent as.
enum class PathRecordKind : uint8_t { PathRecord, MultiPathRecord };

// One end of a path as the request names it: by LID, by GID (whose interface id is the port
// GUID), or both (then they must name the same port).
struct PortAddress {
    std::optional<uint16_t> lid;
    std::optional<uint64_t> gidPrefix;  // set together with guid
    std::optional<uint64_t> guid;
};

// The fields of a request that decide its QoS level and the SA's answer. A field is present
// exactly when the request's component mask selects it (the ServiceID only with both halves,
// as OpenSM reads it); MultiPathRecord mask bits are already translated to their PathRecord
// meaning.
struct PathRequest : ib::QosFields {
    PathRecordKind kind = PathRecordKind::PathRecord;
    PortAddress source;
    PortAddress destination;
};

// A request whose ends are endpoints of a Fabric (indices into Fabric::ports).
struct PathQuery : ib::QosFields {
    uint32_t source = NoPort;
    uint32_t destination = NoPort;
};

// The outcome of decoding one SA MAD. On failure, `error` says why and `saStatus` is the MAD
// status OpenSM answers with, or 0 when OpenSM does not refuse the MAD with a status (it drops
// it, or answers for many paths or a multicast group rather than one path).
struct DecodedRequest {
    std::vector<PathRequest> requests;  // a MultiPathRecord names every (source, destination) pair
    std::string error;
    uint16_t saStatus = 0;

    bool ok() const { return error.empty(); }
};

// Decodes a SubnAdmGet/SubnAdmGetTable(PathRecord) or SubnAdmGetMulti(MultiPathRecord) MAD.
// Pure: reads only the bytes. Everything OpenSM refuses is refused with its status; a request
// that does not name one source and one destination for every path (a table dump, a multicast
// destination) is refused too, since it asks for no single path.
DecodedRequest decodePathRequest(std::span<const uint8_t> mad);

// The endpoint a PortAddress names on a fabric (NoPort, with the reason in error, when none).
uint32_t resolvePortAddress(const Fabric& fabric, const PortAddress& address, std::string& error);

// The request with its ends resolved, or nullopt with the reason in error.
std::optional<PathQuery> resolvePathRequest(const Fabric& fabric, const PathRequest& request,
                                            std::string& error);

}  // namespace ibqos
