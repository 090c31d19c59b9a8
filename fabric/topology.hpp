// SPDX-License-Identifier: MIT
// A Fabric from a topology file (ibnetdiscover output or an ibsim net file), and back.
#pragma once

#include <string>

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "fabric/fabric.hpp"

namespace ibqos {

// Reads an ibnetdiscover topology file, or an ibsim net file (the same format without GUIDs,
// which are then assigned as ibsim assigns them). Problems are located in the file.
// VL capabilities are not in these files: every port is given `assumedOperVls` (encoding) and
// VLArb caps 8/8, and Fabric::assumedVlCaps is set.
Fabric readTopology(const SourceFile& source, Diagnostics& diagnostics, uint8_t assumedOperVls = 4);

// The fabric as ibnetdiscover writes it: readTopology reads back its nodes, port GUIDs, LIDs,
// LMCs, links and rates (not what the format lacks: VL caps, MTUs, ports without a link). As in
// ibnetdiscover, a NodeDescription is written as it is: one holding '"' does not read back.
std::string writeTopology(const Fabric& fabric);

}  // namespace ibqos
