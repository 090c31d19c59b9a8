// SPDX-License-Identifier: MIT
// Realizability: whether the tables a fabric receives can carry what the policy asks for.
#pragma once

#include <string>
#include <vector>

#include "common/diagnostics.hpp"
#include "compiler/bind.hpp"
#include "compiler/tables.hpp"

namespace ibqos {

// Reports, located in the policy (or in opensm.conf for its options):
// - an SL a level uses that a port it can cross maps to VL 15 (dropped): error;
// - an SL a level uses whose VL has no weight in either arbitration table of a port: error;
// - a high limit of 255 with weighted high-priority VLs (low priority can starve): warning;
// - written weights that are not a multiple of a full-MTU packet's credits: warning;
// - an IPoIB partition whose broadcast-group SL differs from the SL the policy gives the
//   partition's PathRecords: warning;
// - a qos-setup scope that no port ends up using: warning.
void checkRealizability(const BoundPolicy& bound, const FabricTables& tables,
                        Diagnostics& diagnostics);

// A qos-setup scope that wrote a table of a port where an SL a level hands out is dropped or
// starved: what stock OpenSM, which ignores qos-setup, would not do.
struct ScopeHarm {
    bool vlarb = false;  // a vlarb-scope, else an sl2vl-scope
    uint32_t scope = 0;  // its index in the policy
    bool dropped = false;
    std::string message;  // "SL 7 of qos-level 'x' maps to ... on 3 ports, e.g. ..."
};
std::vector<ScopeHarm> findHarmfulScopes(const BoundPolicy& bound, const FabricTables& tables);

}  // namespace ibqos
