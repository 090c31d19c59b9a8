// SPDX-License-Identifier: MIT
// findDrift: every table a port should hold, read back and compared.
#include "compiler/drift.hpp"

#include <algorithm>

namespace ibqos {

std::vector<Drift> findDrift(TableReader& live, const FabricTables& tables) {
    std::vector<Drift> drift;
    const Fabric& fabric = live.fabric();
    for (const PortTables& t : tables.ports) {
        const FabricNode& node = fabric.nodeOf(t.port);
        unsigned ins = node.type == NodeType::Switch ? node.portCount + 1u : 1u;
        for (unsigned in = 0; in < ins; ++in) {
            std::string error;
            const Sl2VlTable& want = tables.sl2vls[t.sl2vlFor(in)];
            auto found = live.readSl2Vl(t.port, in, error);
            std::string what = "sl2vl in " + std::to_string(in);
            if (!found) {
                drift.push_back({t.port, what, want, std::nullopt, error});
            } else if (*found != want) {
                drift.push_back({t.port, what, want, *found, ""});
            }
        }
        if (!t.hasVlArb) continue;
        for (bool high : {true, false}) {
            unsigned cap = std::min<unsigned>(high ? t.vlArbHighCap : t.vlArbLowCap, 64);
            const VlArbTable& table = tables.vlarbs[high ? t.vlArbHigh : t.vlArbLow];
            std::vector<VlArbEntry> want(table.begin(), table.begin() + cap);
            std::string error;
            auto found = live.readVlArb(t.port, high, cap, error);
            std::string what = high ? "vlarb high" : "vlarb low";
            if (!found) {
                drift.push_back({t.port, what, want, std::nullopt, error});
            } else if (arbitrated(*found) != arbitrated(want)) {
                drift.push_back({t.port, what, want, *found, ""});
            }
        }
    }
    return drift;
}

}  // namespace ibqos
