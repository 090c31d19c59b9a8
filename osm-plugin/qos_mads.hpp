// SPDX-License-Identifier: MIT
// The SL2VL and VL-arbitration MADs OpenSM's osm_qos.c sends to give the ports their tables.
#pragma once

#include <cstddef>

#include "compiler/tables.hpp"
#include "fabric/fabric.hpp"
#include "ib/sl2vl_vlarb.hpp"

namespace ibqos::osm {

// The entries osm_qos.c sends in block 0 or 1 of a VL-arbitration table for a port's cap:
// min(cap, 32) in the first, cap % 32 in the second when the cap is above 32 (so a cap of 64
// sends nothing there: compatibility.md).
constexpr unsigned vlArbBlockLength(unsigned cap, unsigned block) {
    constexpr unsigned n = ib::VlArbBlockEntries;
    return block == 0 ? (cap < n ? cap : n) : (cap > n ? cap % n : 0);
}

// The in-ports whose SL2VL table osm_qos.c programs for a port: every port of a switch (0
// included), port 0 alone on a CA or router.
constexpr unsigned sl2vlInPorts(const FabricNode& node) {
    return node.type == NodeType::Switch ? node.portCount + 1u : 1u;
}

// How many SL2VL and VLArb MADs OpenSM sends to program every port from scratch (a first sweep,
// or need_update), by osm_qos.c's rules. On switches that support optimized SL2VL programming
// OpenSM sends one MAD per switch (plus one per port whose OperVLs differ from the switch's most
// common) -- unless an update_sl2vl hook is installed, which turns that off.
struct QosMadCount {
    size_t vlarb = 0;
    size_t sl2vl = 0;
    size_t total() const { return vlarb + sl2vl; }
};
QosMadCount countFullProgramming(const Fabric& fabric, const FabricTables& tables, bool sl2vlHook,
                                 bool switchesOptimize);

}  // namespace ibqos::osm
