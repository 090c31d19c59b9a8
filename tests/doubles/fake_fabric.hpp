// SPDX-License-Identifier: MIT
// FakeLeafFabric: a leaf switch (LID 1) whose ports 1..N lead to single-port CAs (LIDs 2..N+1),
// as a Fabric and as the PMAs of a FakePma. The monitor's unit tests, its fuzz target and its
// test server read it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "fabric/fabric.hpp"
#include "tests/doubles/fake_pma.hpp"

namespace ibqos::monitor {

struct FakeLeafFabric {
    static constexpr uint16_t SwitchLid = 1;
    static uint16_t hostLid(unsigned h) { return static_cast<uint16_t>(2 + h); }

    Fabric fabric;
    FakePma pma;
    uint32_t leaf = 0;

    // One CA a name; the switch's NodeDescription is leafName.
    FakeLeafFabric(const std::vector<std::string>& hostNames, const std::string& leafName,
                   std::chrono::microseconds roundTrip = std::chrono::microseconds(50),
                   std::chrono::milliseconds timeout = std::chrono::milliseconds(500))
        : pma(roundTrip, timeout) {
        const auto hosts = static_cast<unsigned>(hostNames.size());
        leaf = fabric.addNode(NodeType::Switch, 0x200000, leafName, hosts);
        for (uint32_t p = 0; p <= hosts; ++p) fabric.ports[fabric.portOf(leaf, p)].lid = SwitchLid;
        pma.addNode({SwitchLid});
        for (unsigned h = 0; h < hosts; ++h) {
            uint32_t ca = fabric.addNode(NodeType::Ca, 0x100000 + 2 * h, hostNames[h], 1);
            uint32_t port = fabric.portOf(ca, 1);
            fabric.ports[port].lid = hostLid(h);
            fabric.link(fabric.portOf(leaf, h + 1), port);
            pma.addNode({hostLid(h)}).ports[1];
            pma.node(SwitchLid).ports[static_cast<uint8_t>(h + 1)];
        }
        fabric.index();
    }
    uint32_t leafPort(unsigned p) const { return fabric.portOf(leaf, p); }
    uint32_t hostPort(unsigned h) const { return fabric.portOf(1 + h, 1); }
};

}  // namespace ibqos::monitor
