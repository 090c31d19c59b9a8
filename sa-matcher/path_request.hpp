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

namespace ibqos {

// The SA attribute a request was sent as.
enum class PathRecordKind : uint8_t { PathRecord, MultiPathRecord };

// The subnet prefix of link-local GIDs, and OpenSM's default subnet_prefix.
constexpr uint64_t LinkLocalPrefix = 0xfe80000000000000ULL;

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
struct PathRequest {
    PathRecordKind kind = PathRecordKind::PathRecord;
    PortAddress source;
    PortAddress destination;
    std::optional<uint64_t> serviceId;
    std::optional<uint16_t> qosClass;  // 12 bits
    std::optional<uint16_t> pkey;      // as sent, membership bit included
    std::optional<uint8_t> sl;         // 4 bits
};

// A request whose ends are endpoints of a Fabric (indices into Fabric::ports).
struct PathQuery {
    uint32_t source = NoPort;
    uint32_t destination = NoPort;
    std::optional<uint64_t> serviceId;
    std::optional<uint16_t> qosClass;
    std::optional<uint16_t> pkey;
    std::optional<uint8_t> sl;
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

// The size of a MAD, the only size a request may have.
constexpr size_t MadSize = 256;

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
