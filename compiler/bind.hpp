// SPDX-License-Identifier: MIT
// Binding: a Policy's port groups resolved to the ports of one Fabric.
#pragma once

#include <cstdint>
#include <vector>

#include "common/diagnostics.hpp"
#include "compiler/policy.hpp"
#include "fabric/fabric.hpp"

namespace ibqos {

// The endpoints a port group holds on a fabric: every endpoint of some node types, plus the
// endpoints it lists (by GUID, name, partition, PKey or SELF). Node types stay a mask, so a
// group such as "node-type: CA" costs nothing per port.
struct GroupMembers {
    uint8_t nodeTypes = 0;
    std::vector<uint32_t> ports;  // endpoint indices into Fabric::ports, sorted, unique

    bool contains(const Fabric& fabric, uint32_t endpoint) const;
    // Every member endpoint, in port order.
    std::vector<uint32_t> all(const Fabric& fabric) const;
};

// A policy bound to a fabric. It borrows both: they must outlive it.
struct BoundPolicy {
    const Policy* policy = nullptr;
    const Fabric* fabric = nullptr;
    std::vector<GroupMembers> groups;  // one per Policy::groups
};

// Resolves every group to its endpoints. What OpenSM silently ignores (a GUID, node name,
// partition or PKey that matches nothing) is a warning located in the policy; what OpenSM
// rejects (a port number a named node does not have, an IPoIB partition that does not exist or
// has fewer than two full members) is an error.
BoundPolicy bindPolicy(const Policy& policy, const Fabric& fabric, Diagnostics& diagnostics);

}  // namespace ibqos
