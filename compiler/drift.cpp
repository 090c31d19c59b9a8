// SPDX-License-Identifier: MIT
// findDrift: every table a port should hold, read back and compared.
#include "compiler/drift.hpp"

#include <algorithm>

namespace ibqos {

namespace {

std::string tableText(const Sl2VlTable& t) {
    std::string s;
    for (unsigned i = 0; i < 16; ++i) s += (i ? "," : "") + std::to_string(t[i]);
    return s;
}

std::string vlarbText(const std::vector<VlArbEntry>& entries) {
    std::string s;
    for (const VlArbEntry& e : entries)
        s += (s.empty() ? "" : ",") + std::to_string(e.vl) + ":" + std::to_string(e.weight);
    return s;
}

}  // namespace

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
                drift.push_back({t.port, what, tableText(want), error});
            } else if (*found != want) {
                drift.push_back({t.port, what, tableText(want), tableText(*found)});
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
                drift.push_back({t.port, what, vlarbText(want), error});
            } else if (*found != want) {
                drift.push_back({t.port, what, vlarbText(want), vlarbText(*found)});
            }
        }
    }
    return drift;
}

}  // namespace ibqos
