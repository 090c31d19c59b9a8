// SPDX-License-Identifier: MIT
// Drift: where the tables a live fabric holds differ from what the policy compiles to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/tables.hpp"
#include "fabric/table_reader.hpp"

namespace ibqos {

// One way a port's tables differ from the compiled ones.
struct Drift {
    uint32_t port = 0;  // index into Fabric::ports
    std::string table;  // "sl2vl in 3", "vlarb high", "vlarb low"
    PortTable expected;
    std::optional<PortTable> found;  // nullopt when the port's table could not be read
    std::string error;               // why, then

    // What the port holds, for people: the table, or "unreadable (why)".
    std::string foundText() const {
        return found ? tableText(*found) : "unreadable (" + error + ")";
    }
};

// Reads every port that receives tables and compares with the compiled tables: SL2VL tables
// entry by entry, VLArb tables by what they arbitrate (entries of weight 0, which the arbiter
// skips, left out). Ports that cannot be read are reported as drift without a found table.
std::vector<Drift> findDrift(TableReader& live, const FabricTables& tables);

}  // namespace ibqos
