// SPDX-License-Identifier: MIT
// Reading OpenSM's subnet and options into ibqos's models (call with OpenSM's lock held).
#pragma once

#include <vector>

#include "compiler/fabric.hpp"
#include "compiler/opensm_conf.hpp"
#include "compiler/tables.hpp"
#include "osm-plugin/osm.hpp"

namespace ibqos::osm {

// The subnet as a Fabric: every node, physical port, link (a link that is down is no link),
// OperVLs, VLCap and VLArb caps as the ports report them, partitions and the SM's port.
// nodeOf, when given, receives OpenSM's node for each Fabric node.
Fabric fabricFromSubnet(const osm_subn_t& subnet, std::vector<osm_node_t*>* nodeOf = nullptr);

// Partitions in a form two views of them compare in: per partition its PKey, its name and its
// members' port GUIDs with their membership, all sorted.
using PartitionsKey =
    std::vector<std::tuple<uint16_t, std::string, std::vector<std::pair<uint64_t, bool>>>>;
// The key of fabric.partitions.
PartitionsKey partitionsKey(const Fabric& fabric);
// The key of the partitions OpenSM's PKey setup made (its prtn_pkey_tbl).
PartitionsKey livePartitionsKey(const osm_subn_t& subnet);

// OpenSM's current QoS options as an OpenSmConf (unset options stay unset).
OpenSmConf confFromOptions(const osm_subn_opt_t& options);

// How many SL2VL and VLArb MADs osm_qos_setup() will send this sweep to give the ports these
// tables: by osm_qos.c's rules, a block is sent when it differs from OpenSM's cached copy or an
// update is forced (non-optimized SL2VL programming, as on switches without the capability).
size_t expectedQosMads(const osm_subn_t& subnet, const Fabric& fabric,
                       const std::vector<osm_node_t*>& nodeOf, const FabricTables& tables);

}  // namespace ibqos::osm
