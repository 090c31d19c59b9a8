// SPDX-License-Identifier: MIT
// CompiledSweep: binding, tables, the plain policy, class options and per-port overrides.
#include "sweep.hpp"

#include "realizability.hpp"

namespace ibqos::osm {

std::unique_ptr<CompiledSweep> CompiledSweep::compile(const Policy& policy, Fabric fabric, const OpenSmConf& conf,
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
    for (uint32_t i : sweep->plan_.specialPorts) {
        const FabricPort& port = sweep->fabric_->ports[sweep->tables_.ports[i].port];
        sweep->overrides_.emplace(portKey(sweep->fabric_->nodes[port.node].guid, port.number), i);
    }
    return sweep;
}

std::optional<ClassOptions> CompiledSweep::classOptions(PortClass c) const {
    const ClassTemplate& t = plan_.classes[static_cast<size_t>(c)];
    if (!t.present) return std::nullopt;
    return ClassOptions{t.highLimit, vlarbOptionString(tables_.vlarbs[t.high]), vlarbOptionString(tables_.vlarbs[t.low]),
                        sl2vlOptionString(tables_.sl2vls[t.sl2vl])};
}

const PortTables* CompiledSweep::overrideFor(uint64_t nodeGuid, unsigned portNumber) const {
    auto it = overrides_.find(portKey(nodeGuid, portNumber));
    return it == overrides_.end() ? nullptr : &tables_.ports[it->second];
}

}  // namespace ibqos::osm
