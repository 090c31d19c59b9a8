// SPDX-License-Identifier: MIT
// What SL enforcement decides for one address vector, apart from the verbs calls that gather
// the facts: which vectors are not the SA's to decide, the exact SLID of the path, and the SL
// to use given the mode and the agent's answer.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>

#include "host-sched/agent/agent_protocol.hpp"

namespace ibqos::host {

// What the library knows of a local port (ibv_query_port, GID 0).
struct PortFacts {
    bool ethernet = false;
    uint16_t lid = 0;
    uint8_t lmc = 0;
    uint64_t subnetPrefix = 0;  // host order
};

// The subnet prefix of a GID, in host order.
inline uint64_t subnetPrefixOf(const ibv_gid& gid) {
    uint64_t prefix = 0;
    for (int i = 0; i < 8; ++i) prefix = prefix << 8 | gid.raw[i];
    return prefix;
}

// The first multicast LID.
inline constexpr uint16_t FirstMulticastLid = 0xC000;

// Why an address vector keeps the application's SL whatever the mode, or nullopt when the
// SA decides it: a RoCE port (the SL is a priority), a multicast DLID, a GRH to another subnet.
inline std::optional<SlOutcome> exemptionOf(const PortFacts& port, const ibv_ah_attr& av) {
    if (port.ethernet) return SlOutcome::Ethernet;
    if (av.dlid >= FirstMulticastLid) return SlOutcome::Multicast;
    if (av.is_global && subnetPrefixOf(av.grh.dgid) != port.subnetPrefix) return SlOutcome::Router;
    return std::nullopt;
}

// The SLID packets on this vector carry: the port's base LID with the vector's path bits
// (as many as the LMC gives the port).
inline uint16_t sourceLidOf(const PortFacts& port, uint8_t srcPathBits) {
    const uint16_t mask = static_cast<uint16_t>((1u << (port.lmc & 7)) - 1);
    return static_cast<uint16_t>(port.lid | (srcPathBits & mask));
}

struct SlDecision {
    uint8_t sl = 0;  // the SL to put in the vector
    SlOutcome outcome = SlOutcome::None;
    std::optional<uint8_t> saSl;
};

// The SL to use: audit and enforce compare with the SA's answer (nullopt: none came in time);
// only enforce replaces, and only with an SL the SA gave.
inline SlDecision decideSl(SlMode mode, uint8_t appSl, const std::optional<AgentMessage>& path) {
    SlDecision d{appSl, SlOutcome::NoAnswer, std::nullopt};
    if (mode == SlMode::Respect) {
        d.outcome = SlOutcome::None;
        return d;
    }
    if (!path) return d;
    if (path->answer == PathAnswer::NoPath) {
        d.outcome = SlOutcome::NoPath;
        return d;
    }
    if (path->answer != PathAnswer::Found || !path->sl) return d;
    d.saSl = path->sl;
    if (*path->sl == appSl) {
        d.outcome = SlOutcome::Agrees;
    } else if (mode == SlMode::Enforce) {
        d.sl = *path->sl;
        d.outcome = SlOutcome::Replaced;
    } else {
        d.outcome = SlOutcome::Differs;
    }
    return d;
}

}  // namespace ibqos::host
