// SPDX-License-Identifier: MIT
// CompiledSweep: binding, tables, the plain policy, class options and per-port overrides.
#include "osm-plugin/sweep.hpp"

#include "compiler/realizability.hpp"

namespace ibqos::osm {

std::unique_ptr<CompiledSweep> CompiledSweep::compile(const Policy& policy, Fabric fabric,
                                                      const OpenSmConf& conf,
                                                      Diagnostics& diagnostics) {
    auto sweep = std::make_unique<CompiledSweep>();
    sweep->fabric_ = std::make_unique<Fabric>(std::move(fabric));
    sweep->bound_ = bindPolicy(policy, *sweep->fabric_, diagnostics);
    sweep->tables_ = computeTables(sweep->bound_, conf, diagnostics);
    checkRealizability(sweep->bound_, sweep->tables_, diagnostics);
    sweep->plan_ = planClassOptions(*sweep->fabric_, sweep->tables_);
    // The per-port note emitOpenSm would add is the plugin's job, not a warning here.
    Diagnostics emitted;
    sweep->policyText_ = emitOpenSm(sweep->bound_, sweep->tables_, emitted).policy;
    const ClassTemplate& external =
        sweep->plan_.classes[static_cast<size_t>(PortClass::SwitchExternal)];
    for (uint32_t i : sweep->plan_.specialPorts) {
        const PortTables& t = sweep->tables_.ports[i];
        const FabricPort& port = sweep->fabric_->ports[t.port];
        const FabricNode& node = sweep->fabric_->nodes[port.node];
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
    return ClassOptions{t.highLimit, vlarbOptionString(tables_.vlarbs[t.high]),
                        vlarbOptionString(tables_.vlarbs[t.low]),
                        sl2vlOptionString(tables_.sl2vls[t.sl2vl])};
}

const PortTables* CompiledSweep::overrideFor(uint64_t nodeGuid, unsigned portNumber) const {
    auto it = overrides_.find(portKey(nodeGuid, portNumber));
    return it == overrides_.end() ? nullptr : &tables_.ports[it->second];
}

QosMadCount countFullProgramming(const Fabric& fabric, const FabricTables& tables, bool sl2vlHook,
                                 bool switchesOptimize) {
    QosMadCount count;
    std::unordered_map<uint32_t, std::array<size_t, 6>>
        operVlsPerSwitch;  // node -> ports per OperVLs code
    for (const PortTables& t : tables.ports) {
        if (t.hasVlArb) {
            // Block 0 holds min(cap, 32) entries, block 1 cap % 32 when the cap is above 32.
            for (unsigned cap : {unsigned{t.vlArbLowCap}, unsigned{t.vlArbHighCap}}) {
                count.vlarb += cap > 0;
                count.vlarb += cap > 32 && cap % 32 != 0;
            }
        }
        const FabricPort& port = fabric.ports[t.port];
        const FabricNode& node = fabric.nodes[port.node];
        if (node.type != NodeType::Switch) {
            ++count.sl2vl;
        } else if (switchesOptimize && !sl2vlHook) {
            if (port.number != 0) ++operVlsPerSwitch[port.node][std::min<uint8_t>(t.operVls, 5)];
            if (port.number == 0) ++count.sl2vl;  // the enhanced port 0's own (0, 0)
        } else {
            count.sl2vl += node.portCount + 1u;
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
