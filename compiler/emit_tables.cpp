// SPDX-License-Identifier: MIT
// The per-port tables as JSON (the contract's format) and as text for people.
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "common/json.hpp"
#include "common/text.hpp"
#include "compiler/emit.hpp"

namespace ibqos {

namespace {

// The entries a port is sent: its cap's worth (none without VL arbitration).
unsigned sentEntries(const PortTables& t, bool high) {
    if (!t.hasVlArb) return 0;
    return std::min<unsigned>(high ? t.vlArbHighCap : t.vlArbLowCap, 64);
}

Json vlArbJson(const VlArbEntry* entries, size_t count) {
    Json out = Json::array();
    for (size_t i = 0; i < count; ++i) out.push_back({entries[i].vl, entries[i].weight});
    return out;
}

// The in-ports of a port that receives tables: 0 on CAs and routers, 0..N on a switch.
unsigned inPortCount(const Fabric& fabric, const PortTables& t) {
    const FabricNode& node = fabric.nodeOf(t.port);
    return node.type == NodeType::Switch ? node.portCount + 1u : 1u;
}

}  // namespace

Json portTablesJson(const Fabric& fabric, const FabricTables& tables, const PortTables& t) {
    const FabricPort& port = fabric.ports[t.port];
    const FabricNode& node = fabric.nodes[port.node];
    bool onSwitch = node.type == NodeType::Switch;
    Json sl2vl = Json::array();
    for (unsigned in = 0; in < inPortCount(fabric, t); ++in) {
        const Sl2VlTable& table = tables.sl2vls[t.sl2vlFor(in)];
        sl2vl.push_back({{"in", in}, {"out", onSwitch ? port.number : 0}, {"vl", table}});
    }
    return {{"guid", hex(port.guid, 16)},
            {"port", port.number},
            {"lid", port.lid},
            {"node_type", nodeTypeName(node.type)},
            {"node_desc", node.description},
            {"oper_vls", foldedDataVls(t.operVls)},
            {"high_limit", t.highLimit},
            {"sl2vl", std::move(sl2vl)},
            {"vlarb_high", vlArbJson(tables.vlarbs[t.vlArbHigh].data(), sentEntries(t, true))},
            {"vlarb_low", vlArbJson(tables.vlarbs[t.vlArbLow].data(), sentEntries(t, false))}};
}

Json tableJson(const PortTable& table) {
    if (const auto* sl2vl = std::get_if<Sl2VlTable>(&table)) return *sl2vl;
    if (const auto* vlarb = std::get_if<std::vector<VlArbEntry>>(&table))
        return vlArbJson(vlarb->data(), vlarb->size());
    return std::get<uint8_t>(table);
}

// One port's object per line. The document is put together a port at a time: a fabric of
// 144,000 ports makes 330 MB of JSON, and the whole of it as one nlohmann document would take
// several GB.
std::string emitTablesJson(const BoundPolicy& bound, const FabricTables& tables,
                           const std::vector<Diagnostic>& diagnostics) {
    std::string out = "{\"ports\":[";
    for (const PortTables& t : tables.ports) {
        out += out.back() == '[' ? "\n" : ",\n";
        out += dumpJson(portTablesJson(*bound.fabric, tables, t));
    }
    out += "\n],\"diagnostics\":" + dumpJson(diagnosticsJson(diagnostics)) + "}\n";
    return out;
}

std::string emitTablesText(const BoundPolicy& bound, const FabricTables& tables) {
    const Fabric& fabric = *bound.fabric;
    // Ports with the same tables share one entry.
    using Key =
        std::tuple<uint32_t, uint32_t, uint8_t, uint8_t, uint8_t, bool, std::vector<uint32_t>>;
    std::map<Key, std::vector<uint32_t>> groups;
    std::vector<Key> order;
    for (const PortTables& t : tables.ports) {
        std::vector<uint32_t> sl2vl;
        for (unsigned in = 0; in < inPortCount(fabric, t); ++in) sl2vl.push_back(t.sl2vlFor(in));
        Key key{t.vlArbHigh,   t.vlArbLow, t.highLimit,     t.vlArbHighCap,
                t.vlArbLowCap, t.hasVlArb, std::move(sl2vl)};
        auto [it, fresh] = groups.emplace(key, std::vector<uint32_t>{});
        if (fresh) order.push_back(key);
        it->second.push_back(t.port);
    }
    std::string out;
    out += std::to_string(tables.ports.size()) + " ports receive tables; " +
           std::to_string(groups.size()) + " distinct sets of tables";
    if (fabric.assumedVlCaps) out += " (VL capabilities assumed: not in the topology file)";
    out += "\n";
    for (const Key& key : order) {
        const std::vector<uint32_t>& ports = groups[key];
        out +=
            "\n== " + std::to_string(ports.size()) + (ports.size() == 1 ? " port: " : " ports: ");
        for (size_t i = 0; i < ports.size() && i < 8; ++i)
            out += (i ? ", " : "") + fabric.portName(ports[i]);
        if (ports.size() > 8) out += ", ... (" + std::to_string(ports.size() - 8) + " more)";
        out += "\n";
        const auto& [high, low, limit, highCap, lowCap, hasVlArb, sl2vl] = key;
        if (hasVlArb) {
            auto list = [&](uint32_t table, unsigned cap) {
                std::string s;
                const VlArbTable& entries = tables.vlarbs[table];
                for (unsigned i = 0; i < cap && i < 64; ++i) {
                    if (entries[i].weight == 0) continue;
                    s += (s.empty() ? "" : ", ") + std::to_string(entries[i].vl) + ":" +
                         std::to_string(entries[i].weight);
                }
                return s.empty() ? std::string("(all weights 0)") : s;
            };
            out += "   VL high limit " + std::to_string(limit) + "\n";
            out += "   VLArb high (" + std::to_string(highCap) +
                   " entries): " + list(high, highCap) + "\n";
            out += "   VLArb low  (" + std::to_string(lowCap) + " entries): " + list(low, lowCap) +
                   "\n";
        } else {
            out += "   no VL arbitration (one data VL)\n";
        }
        // SL2VL rows, in-ports with the same table grouped.
        std::map<uint32_t, std::string> inPortsOf;
        std::vector<uint32_t> tableOrder;
        for (unsigned in = 0; in < sl2vl.size(); ++in) {
            auto [it, fresh] = inPortsOf.emplace(sl2vl[in], "");
            if (fresh) tableOrder.push_back(sl2vl[in]);
            it->second += (it->second.empty() ? "" : ",") + std::to_string(in);
        }
        out += "   SL2VL        SL:  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15\n";
        for (uint32_t table : tableOrder) {
            std::string label = sl2vl.size() == 1        ? ""
                                : tableOrder.size() == 1 ? "all in-ports"
                                                         : "from " + inPortsOf[table];
            if (sl2vl.size() > 1 && inPortsOf[table].size() > 20)
                label = "from " + inPortsOf[table].substr(0, 17) + "...";
            char row[128];
            std::snprintf(row, sizeof row, "   %-16s", label.c_str());
            out += row;
            for (uint8_t vl : tables.sl2vls[table]) {
                std::snprintf(row, sizeof row, "%3u", vl);
                out += row;
            }
            out += "\n";
        }
    }
    return out;
}

}  // namespace ibqos
