// SPDX-License-Identifier: MIT
// A Fabric's partitions from OpenSM's partitions.conf.
#pragma once

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "fabric/fabric.hpp"

namespace ibqos {

// Reads OpenSM's partitions.conf into fabric.partitions by osm_prtn_make_partitions()'s rules:
// the implicit Default partition (0x7fff) first; without a file (nullptr) it holds every
// endpoint as a full member, and so it does, alone, when the file has an error; partitions
// without members are dropped. Set fabric.smPort first (Default's SM port is always full).
void readPartitions(const SourceFile* source, Fabric& fabric, Diagnostics& diagnostics);

}  // namespace ibqos
