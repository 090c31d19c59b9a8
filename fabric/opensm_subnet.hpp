// SPDX-License-Identifier: MIT
// Reading OpenSM's subnet and options into ibqos's models (call with OpenSM's lock held).
#pragma once

#include <vector>

#include "fabric/fabric.hpp"
#include "fabric/opensm_conf.hpp"
#include "fabric/osm.hpp"

namespace ibqos::osm {

// A node's physical port by number, or nullptr.
osm_physp_t* physpOf(osm_node_t* node, unsigned number);

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

}  // namespace ibqos::osm
