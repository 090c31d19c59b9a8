// SPDX-License-Identifier: MIT
// The benchmarks' synthetic fabric: a two-level fat tree of 48,000 single-port hosts under 2,000
// 36-port leaf switches (24 hosts down, 12 links up) and 667 36-port spines: 50,667 endpoints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/fabric.hpp"
#include "ib/link.hpp"

namespace ibqos::bench {

struct FatTree {
    unsigned hosts = 48000;
    unsigned leaves = 2000;
    unsigned spines = 667;
    unsigned down = 24;  // hosts per leaf
    unsigned up = 12;    // uplinks per leaf
    unsigned radix = 36;

    static constexpr uint64_t HostGuid = 0x0002c90300000000ULL;  // node GUID; its port is +1
    static constexpr uint64_t LeafGuid = 0x0002c90400000000ULL;
    static constexpr uint64_t SpineGuid = 0x0002c90500000000ULL;

    uint64_t hostPortGuid(unsigned h) const { return HostGuid + 2ull * h + 1; }
    uint16_t hostLid(unsigned h) const { return static_cast<uint16_t>(1 + h); }
    uint16_t leafLid(unsigned l) const { return static_cast<uint16_t>(1 + hosts + l); }
    uint16_t spineLid(unsigned s) const { return static_cast<uint16_t>(1 + hosts + leaves + s); }
    // Uplink k of leaf l goes to spine (l * up + k) % spines, port (l * up + k) / spines + 1.
    unsigned spineOf(unsigned l, unsigned k) const { return (l * up + k) % spines; }
    unsigned spinePortOf(unsigned l, unsigned k) const { return (l * up + k) / spines + 1; }

    // The fabric, built as a model: every link 4xEDR, LIDs as above, VL caps assumed as a
    // topology file leaves them.
    Fabric fabric() const {
        Fabric f;
        f.source = "synthetic fat tree";
        f.assumedVlCaps = true;
        const uint8_t edr = rateForLink(4, "EDR");
        auto addSwitch = [&](uint64_t guid, const std::string& name, uint16_t lid) {
            uint32_t node = f.addNode(NodeType::Switch, guid, name, static_cast<uint8_t>(radix));
            for (unsigned n = 0; n <= radix; ++n) f.ports[f.portOf(node, n)].lid = lid;
            return node;
        };
        std::vector<uint32_t> spineNodes, leafNodes;
        for (unsigned s = 0; s < spines; ++s)
            spineNodes.push_back(
                addSwitch(SpineGuid + s, "spine" + std::to_string(s), spineLid(s)));
        for (unsigned l = 0; l < leaves; ++l)
            leafNodes.push_back(addSwitch(LeafGuid + l, "leaf" + std::to_string(l), leafLid(l)));
        for (unsigned h = 0; h < hosts; ++h) {
            uint32_t node = f.addNode(NodeType::Ca, HostGuid + 2ull * h,
                                      "host" + std::to_string(h) + " HCA-1", 1);
            uint32_t port = f.portOf(node, 1);
            f.ports[port].lid = hostLid(h);
            f.link(port, f.portOf(leafNodes[h / down], h % down + 1), edr);
        }
        for (unsigned l = 0; l < leaves; ++l) {
            for (unsigned k = 0; k < up; ++k)
                f.link(f.portOf(leafNodes[l], down + 1 + k),
                       f.portOf(spineNodes[spineOf(l, k)], spinePortOf(l, k)), edr);
        }
        f.index();
        return f;
    }
};

}  // namespace ibqos::bench
