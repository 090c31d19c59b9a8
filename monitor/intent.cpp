// SPDX-License-Identifier: MIT
// Intent: the policy's meaning per port, SL and VL, from one fabric compilation.
#include "monitor/intent.hpp"

#include <algorithm>

#include "compiler/vlarb_sim.hpp"

namespace ibqos::monitor {

Intent::Intent(const FabricCompilation& compiled) : compiled_(compiled) {
    const Fabric& fabric = compiled.fabric();
    const Policy& policy = compiled.policy();
    const FabricTables& tables = compiled.tables();
    ports_.resize(fabric.ports.size());

    for (const QosLevel& level : policy.levels) {
        if (auto sl = answeredSl(level.sl)) levels_[*sl].push_back(level.name);
    }

    // Groups per endpoint from each group's members (a switch's ports share its port 0's).
    std::vector<std::vector<uint32_t>> groupsOf(fabric.ports.size());
    const BoundPolicy& bound = compiled.bound();
    for (uint32_t g = 0; g < bound.groups.size(); ++g) {
        if (policy.groups[g].origin != GroupOrigin::Written) continue;
        std::vector<uint32_t> members = bound.groups[g].all(fabric);
        members.erase(std::unique(members.begin(), members.end()), members.end());
        for (uint32_t endpoint : members) groupsOf[endpoint].push_back(g);
    }
    for (uint32_t p = 0; p < fabric.ports.size(); ++p) {
        uint32_t endpoint = fabric.endpointFor(p);
        if (endpoint != NoPort) ports_[p].groups = groupsOf[endpoint];
    }

    for (const PortTables& t : tables.ports) {
        PortIntent& intent = ports_[t.port];
        intent.hasTables = true;
        const FabricNode& node = fabric.nodeOf(t.port);
        unsigned ins = node.type == NodeType::Switch ? node.portCount + 1u : 1u;
        for (unsigned in = 0; in < ins; ++in) {
            const Sl2VlTable& table = tables.sl2vls[t.sl2vlFor(in)];
            for (unsigned sl = 0; sl < ib::SlCount; ++sl) {
                if (table[sl] < ib::DropVl)
                    intent.slsOfVl[table[sl]] |= static_cast<uint16_t>(1u << sl);
            }
        }
    }
    setups_ = arbitrationSetups(bound, tables);
    for (size_t s = 0; s < setups_.size(); ++s) {
        for (uint32_t i : setups_[s].ports)
            ports_[tables.ports[i].port].setup = static_cast<int>(s);
    }
}

std::array<double, ib::DataVlCount> Intent::shares(int setup, uint16_t competing) const {
    std::lock_guard<std::mutex> lock(cacheLock_);
    auto key = std::make_pair(setup, competing);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const ArbitrationSetup& s = setups_.at(static_cast<size_t>(setup));
    const FabricTables& tables = compiled_.tables();
    auto idleless = [&](uint32_t table, unsigned cap) {
        std::vector<VlArbEntry> entries(tables.vlarbs[table].begin(),
                                        tables.vlarbs[table].begin() + std::min(cap, 64u));
        for (VlArbEntry& e : entries)
            if (!(competing & (1u << (e.vl & ib::MaxVl)))) e.weight = 0;
        return entries;
    };
    std::vector<VlArbEntry> high = idleless(s.high, s.highCap), low = idleless(s.low, s.lowCap);
    std::array<double, ib::DataVlCount> result =
        simulateArbitration(high.data(), high.size(), low.data(), low.size(), s.highLimit);
    cache_.emplace(key, result);
    return result;
}

}  // namespace ibqos::monitor
