// SPDX-License-Identifier: MIT
// CompiledSweep: binding, tables, the plain policy, class options and per-port overrides.
#include "osm-plugin/sweep.hpp"

#include <algorithm>
#include <tuple>

namespace ibqos::osm {

std::unique_ptr<CompiledSweep> CompiledSweep::compile(std::shared_ptr<const Policy> policy,
                                                      Fabric fabric, const OpenSmConf& conf,
                                                      Diagnostics& diagnostics) {
    auto sweep = std::make_unique<CompiledSweep>();
    sweep->policy_ = std::move(policy);
    sweep->compilation_ =
        FabricCompilation::compile(*sweep->policy_, std::move(fabric), conf, diagnostics);
    const FabricCompilation& c = *sweep->compilation_;
    sweep->classifier_ = std::make_unique<Classifier>(c.bound());
    sweep->plan_ = planClassOptions(c.fabric(), c.tables());
    // The per-port note emitOpenSm would add is the plugin's job, not a warning here.
    Diagnostics emitted;
    sweep->policyText_ = emitOpenSm(c.bound(), c.tables(), emitted).policy;
    const ClassTemplate& external =
        sweep->plan_.classes[static_cast<size_t>(PortClass::SwitchExternal)];
    for (uint32_t i : sweep->plan_.specialPorts) {
        const PortTables& t = c.tables().ports[i];
        const FabricPort& port = c.fabric().ports[t.port];
        const FabricNode& node = c.fabric().nodes[port.node];
        sweep->overrides_.emplace(portKey(node.guid, port.number), i);
        const ClassTemplate& own = sweep->plan_.classes[static_cast<size_t>(t.portClass)];
        sweep->needsVlArb_ |=
            t.rawHigh != own.high || t.rawLow != own.low || t.highLimit != own.highLimit;
        unsigned ins = node.type == NodeType::Switch ? node.portCount + 1u : 1u;
        for (unsigned in = 0; in < ins; ++in) {
            uint32_t expected =
                t.portClass == PortClass::SwitchPort0 && in != 0 ? external.sl2vl : own.sl2vl;
            sweep->needsSl2Vl_ |= t.rawSl2vlFor(in) != expected;
        }
    }
    return sweep;
}

std::optional<ClassOptions> CompiledSweep::classOptions(PortClass c) const {
    const ClassTemplate& t = plan_.classes[static_cast<size_t>(c)];
    if (!t.present) return std::nullopt;
    return ClassOptions{t.highLimit, vlarbOptionString(tables().vlarbs[t.high]),
                        vlarbOptionString(tables().vlarbs[t.low]),
                        sl2vlOptionString(tables().sl2vls[t.sl2vl])};
}

const PortTables* CompiledSweep::overrideFor(uint64_t nodeGuid, unsigned portNumber) const {
    auto it = overrides_.find(portKey(nodeGuid, portNumber));
    return it == overrides_.end() ? nullptr : &tables().ports[it->second];
}

bool sameFabric(const Fabric& a, const Fabric& b) {
    auto node = [](const FabricNode& n) {
        return std::tie(n.type, n.guid, n.description, n.portCount, n.firstPort, n.enhancedPort0,
                        n.vendorId, n.deviceId, n.revision);
    };
    auto port = [](const FabricPort& p) {
        return std::tie(p.node, p.number, p.guid, p.lid, p.lmc, p.peer, p.operVls, p.vlCap,
                        p.vlArbHighCap, p.vlArbLowCap, p.rate, p.mtu);
    };
    auto member = [](const PartitionMember& m) { return std::tie(m.port, m.full); };
    auto partition = [&](const Partition& x, const Partition& y) {
        return std::tie(x.name, x.pkey, x.ipoib, x.sl, x.mtu, x.rate, x.flags, x.file) ==
                   std::tie(y.name, y.pkey, y.ipoib, y.sl, y.mtu, y.rate, y.flags, y.file) &&
               std::ranges::equal(x.members, y.members, {}, member, member);
    };
    return std::tie(a.noPartitionsFile, a.smPort, a.assumedVlCaps) ==
               std::tie(b.noPartitionsFile, b.smPort, b.assumedVlCaps) &&
           std::ranges::equal(a.nodes, b.nodes, {}, node, node) &&
           std::ranges::equal(a.ports, b.ports, {}, port, port) &&
           std::ranges::equal(a.partitions, b.partitions, partition);
}

}  // namespace ibqos::osm
