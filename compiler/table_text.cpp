// SPDX-License-Identifier: MIT
// Tables as people read them ("0:4,1:8"), and the tables of each port that two compilations
// differ in (what diff, verify and the plugin's reload report).
#include "compiler/tables.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace ibqos {

std::vector<VlArbEntry> arbitrated(const std::vector<VlArbEntry>& entries) {
    std::vector<VlArbEntry> out;
    for (const VlArbEntry& e : entries) {
        if (e.weight) out.push_back(e);
    }
    return out;
}

std::string sl2vlText(const Sl2VlTable& t) {
    std::string s;
    for (size_t i = 0; i < t.size(); ++i) s += (i ? "," : "") + std::to_string(t[i]);
    return s;
}

std::string vlarbText(const std::vector<VlArbEntry>& entries) {
    std::string s;
    for (const VlArbEntry& e : entries)
        s += (s.empty() ? "" : ",") + std::to_string(e.vl) + ":" + std::to_string(e.weight);
    return s;
}

std::string tableText(const PortTable& table) {
    if (const auto* sl2vl = std::get_if<Sl2VlTable>(&table)) return sl2vlText(*sl2vl);
    if (const auto* vlarb = std::get_if<std::vector<VlArbEntry>>(&table)) return vlarbText(*vlarb);
    return std::to_string(std::get<uint8_t>(table));
}

std::vector<TableChange> changedTables(const Fabric& fabric, const FabricTables& before,
                                       const FabricTables& after) {
    std::unordered_map<uint32_t, uint32_t> afterByPort;
    for (uint32_t i = 0; i < after.ports.size(); ++i) afterByPort.emplace(after.ports[i].port, i);
    // The entries a port is sent: its cap's worth, none without VL arbitration.
    auto sent = [](const FabricTables& tables, const PortTables& t, bool high) {
        const VlArbTable& table = tables.vlarbs[high ? t.vlArbHigh : t.vlArbLow];
        unsigned n = t.hasVlArb ? std::min<unsigned>(high ? t.vlArbHighCap : t.vlArbLowCap, 64) : 0;
        return std::vector<VlArbEntry>(table.begin(), table.begin() + n);
    };
    std::vector<TableChange> out;
    for (uint32_t i = 0; i < before.ports.size(); ++i) {
        const PortTables& a = before.ports[i];
        auto it = afterByPort.find(a.port);
        if (it == afterByPort.end()) continue;
        const PortTables& b = after.ports[it->second];
        const FabricNode& node = fabric.nodeOf(a.port);
        const unsigned ins = node.type == NodeType::Switch ? node.portCount + 1u : 1u;
        TableChange change;
        change.before = i;
        change.after = it->second;
        for (unsigned in = 0; in < ins; ++in) {
            const Sl2VlTable& x = before.sl2vls[a.sl2vlFor(in)];
            const Sl2VlTable& y = after.sl2vls[b.sl2vlFor(in)];
            if (x == y) continue;
            change.sl2vl = true;
            change.differences.push_back({"sl2vl in " + std::to_string(in), x, y});
        }
        for (bool high : {true, false}) {
            auto x = sent(before, a, high), y = sent(after, b, high);
            if (arbitrated(x) == arbitrated(y)) continue;  // the same arbitration
            change.vlarb = true;
            change.differences.push_back({high ? "vlarb high" : "vlarb low", x, y});
        }
        if (a.highLimit != b.highLimit) {
            change.vlarb = true;
            change.differences.push_back({"vl-high-limit", a.highLimit, b.highLimit});
        }
        if (change.sl2vl || change.vlarb) out.push_back(std::move(change));
    }
    return out;
}

}  // namespace ibqos
