// SPDX-License-Identifier: MIT
// countFullProgramming: osm_qos.c's MADs for a fabric programmed from scratch.
#include "osm-plugin/qos_mads.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace ibqos::osm {

QosMadCount countFullProgramming(const Fabric& fabric, const FabricTables& tables, bool sl2vlHook,
                                 bool switchesOptimize) {
    QosMadCount count;
    std::unordered_map<uint32_t, std::array<size_t, ib::MaxVlEncoding + 1>>
        operVlsPerSwitch;  // node -> ports per OperVLs code
    for (const PortTables& t : tables.ports) {
        if (t.hasVlArb) {
            for (unsigned cap : {unsigned{t.vlArbLowCap}, unsigned{t.vlArbHighCap}}) {
                for (unsigned block : {0u, 1u}) count.vlarb += vlArbBlockLength(cap, block) != 0;
            }
        }
        const FabricPort& port = fabric.ports[t.port];
        const FabricNode& node = fabric.nodes[port.node];
        if (node.type != NodeType::Switch) {
            ++count.sl2vl;
        } else if (switchesOptimize && !sl2vlHook) {
            if (port.number != 0)
                ++operVlsPerSwitch[port.node][std::min(t.operVls, ib::MaxVlEncoding)];
            if (port.number == 0) ++count.sl2vl;  // the enhanced port 0's own (0, 0)
        } else {
            count.sl2vl += sl2vlInPorts(node);
        }
    }
    for (const auto& [node, counts] : operVlsPerSwitch) {
        size_t ports = 0, common = 0;
        for (size_t n : counts) {
            ports += n;
            common = std::max(common, n);
        }
        count.sl2vl += 1 + (ports - common);
    }
    return count;
}

}  // namespace ibqos::osm
