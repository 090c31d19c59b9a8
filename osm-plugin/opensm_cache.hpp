// SPDX-License-Identifier: MIT
// What OpenSM's cached copies of the port tables mean for this sweep (call with its lock held).
#pragma once

#include <cstddef>
#include <vector>

#include "compiler/tables.hpp"
#include "fabric/fabric.hpp"
#include "fabric/osm.hpp"

namespace ibqos::osm {

// How many SL2VL and VLArb MADs osm_qos_setup() will send this sweep to give the ports these
// tables: by osm_qos.c's rules, a block is sent when it differs from OpenSM's cached copy or an
// update is forced (non-optimized SL2VL programming, as on switches without the capability).
size_t expectedQosMads(const osm_subn_t& subnet, const Fabric& fabric,
                       const std::vector<osm_node_t*>& nodeOf, const FabricTables& tables);

}  // namespace ibqos::osm
