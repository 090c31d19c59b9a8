// SPDX-License-Identifier: MIT
// What the plugin computes at each heavy sweep, free of OpenSM's headers so it can be tested
// and measured on its own: the policy bound to the subnet, every port's tables, the plain policy
// OpenSM's SA loads, the per-class options, and the ports the routing-engine hooks program.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "compiler/emit.hpp"
#include "compiler/fabric_compilation.hpp"
#include "compiler/policy.hpp"
#include "compiler/tables.hpp"
#include "fabric/fabric.hpp"
#include "fabric/opensm_conf.hpp"
#include "sa-matcher/classifier.hpp"

namespace ibqos::osm {

// The four strings of one port class's opensm.conf options.
struct ClassOptions {
    int highLimit = 0;
    std::string vlarbHigh, vlarbLow, sl2vl;
    bool operator==(const ClassOptions&) const = default;
};

// One heavy sweep's results. The hooks read it while OpenSM programs the ports, the PathRecord
// responder while it answers; it lives until the next sweep replaces it, and keeps its policy.
class CompiledSweep {
  public:
    // Binds the policy to the fabric and computes everything; problems go to diagnostics.
    static std::unique_ptr<CompiledSweep> compile(std::shared_ptr<const Policy> policy,
                                                  Fabric fabric, const OpenSmConf& conf,
                                                  Diagnostics& diagnostics);

    const std::string& policyText() const { return policyText_; }
    // The options of a class, or nullopt when no port of that class receives tables.
    std::optional<ClassOptions> classOptions(PortClass c) const;
    // The tables of a port the class options cannot give, or nullptr.
    const PortTables* overrideFor(uint64_t nodeGuid, unsigned portNumber) const;
    const Sl2VlTable& sl2vl(uint32_t index) const { return tables().sl2vls[index]; }
    const VlArbTable& vlarb(uint32_t index) const { return tables().vlarbs[index]; }

    const Policy& policy() const { return *policy_; }
    const Fabric& fabric() const { return compilation_->fabric(); }
    const BoundPolicy& bound() const { return compilation_->bound(); }
    const FabricTables& tables() const { return compilation_->tables(); }
    // The QoS level of a request between two of the fabric's endpoints.
    const Classifier& classifier() const { return *classifier_; }
    size_t overriddenPorts() const { return overrides_.size(); }
    // Whether some overridden port needs its own SL2VL tables (the SL2VL hook turns off OpenSM's
    // one-MAD-per-switch programming, so it is installed only then), or its own VLArb tables or
    // high limit.
    bool needsSl2VlHook() const { return needsSl2Vl_; }
    bool needsVlArbHook() const { return needsVlArb_; }

  private:
    std::shared_ptr<const Policy> policy_;  // the compilation borrows it
    std::unique_ptr<FabricCompilation> compilation_;
    std::unique_ptr<Classifier> classifier_;
    ClassPlan plan_;
    std::string policyText_;
    std::unordered_map<uint64_t, uint32_t>
        overrides_;  // (node GUID, port) -> index into tables().ports
    bool needsSl2Vl_ = false;
    bool needsVlArb_ = false;
};

// Whether two fabrics are the same for a compilation: every node, port and partition field the
// compiler reads (source locations aside).
bool sameFabric(const Fabric& a, const Fabric& b);

// The key the hooks look a port up by.
constexpr uint64_t portKey(uint64_t nodeGuid, unsigned portNumber) {
    return (nodeGuid << 8) ^ portNumber;
}

}  // namespace ibqos::osm
