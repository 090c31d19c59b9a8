// SPDX-License-Identifier: MIT
// Per-port VL capabilities for a Fabric read offline.
#pragma once

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "fabric/fabric.hpp"

namespace ibqos {

// Reads per-port capabilities for an offline fabric, one line per port or set of ports:
// "PORT [vls=1|2|4|8|15] [vlarb-high=N] [vlarb-low=N] [mtu=BYTES]", PORT being '*', a port GUID
// (every port of a switch) or NodeDescription/P<n>. Later lines override earlier ones.
void readPortCaps(const SourceFile& source, Fabric& fabric, Diagnostics& diagnostics);

}  // namespace ibqos
