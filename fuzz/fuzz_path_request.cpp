// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as an SA request MAD, through the decoder and, when it decodes,
// through resolution, the classifier (checked against OpenSM's rule scan) and the SA's answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>

#include "compiler/fabric_compilation.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "policy-space/load_policy.hpp"
#include "sa-matcher/classifier.hpp"
#include "sa-matcher/path_request.hpp"
#include "sa-matcher/qos_answer.hpp"
#include "sa-matcher/reference_match.hpp"

namespace {

// The ibsim fabric of samples/fabrics/two-switch.net (LIDs 1-6 as OpenSM gives them there).
const char* const topology = R"(Switch 8 "S-0000000000200000" # "Switch1" base port 0 lid 2 lmc 0
[1] "H-0000000000100000"[1](100001) # "Hca1" lid 1 4xSDR
[2] "H-0000000000100006"[1](100007) # "Hca3" lid 5 4xSDR
[3] "S-0000000000200001"[3] # "Switch2" lid 3 4xSDR

Switch 8 "S-0000000000200001" # "Switch2" base port 0 lid 3 lmc 0
[1] "H-0000000000100003"[1](100004) # "Hca2" lid 4 4xSDR
[2] "H-0000000000100009"[1](10000a) # "Hca4" lid 6 4xSDR
[3] "S-0000000000200000"[3] # "Switch1" lid 2 4xSDR

Ca 2 "H-0000000000100000" # "Hca1"
[1](100001) "S-0000000000200000"[1] # lid 1 lmc 0 "Switch1" lid 2 4xSDR

Ca 2 "H-0000000000100003" # "Hca2"
[1](100004) "S-0000000000200001"[1] # lid 4 lmc 0 "Switch2" lid 3 4xSDR

Ca 2 "H-0000000000100006" # "Hca3"
[1](100007) "S-0000000000200000"[2] # lid 5 lmc 0 "Switch1" lid 2 4xSDR

Ca 2 "H-0000000000100009" # "Hca4"
[1](10000a) "S-0000000000200001"[2] # lid 6 lmc 0 "Switch2" lid 3 4xSDR
)";

const char* const partitions =
    "Default=0x7fff : ALL, SELF=full ;\n"
    "a=0x0001 : 0x100001=full, 0x100004, 0x100007=full ;\n"
    "b=0x0100 : ALL_CAS=full, ALL_SWITCHES ;\n";

const char* const policyText = R"(
port-groups
    port-group
        name: left
        port-guid: 0x100001-0x100007
    end-port-group
    port-group
        name: switches
        node-type: SWITCH, SELF
    end-port-group
end-port-groups
qos-levels
    qos-level
        name: fast
        sl: 3
        rate-limit: 6
        pkey: 0x0001, 0x0100
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        source: left
        destination: switches
        qos-level-name: fast
    end-qos-match-rule
    qos-match-rule
        qos-class: 3-9
        service-id: 0x10000-0x1ffff
        qos-level-name: fast
    end-qos-match-rule
    qos-match-rule
        pkey: 0x0001
        destination: left
        qos-level-name: fast
    end-qos-match-rule
end-qos-match-rules
qos-ulps
    default : 1
    any, service-id 0x0-0xff : 2
    ipoib, pkey 0x0100 : 4
end-qos-ulps
)";

struct Lab {
    ibqos::SourceFile topologySource{"two-switch.ibnetdiscover", topology};
    ibqos::SourceFile partitionsSource{"partitions.conf", partitions};
    ibqos::SourceFile policySource{"fuzz.conf", policyText};
    ibqos::Diagnostics diagnostics;
    ibqos::Policy policy;
    std::unique_ptr<ibqos::FabricCompilation> compiled;

    Lab() {
        policy = ibqos::loadPolicy(policySource, diagnostics);
        ibqos::Fabric fabric = ibqos::readTopology(topologySource, diagnostics);
        fabric.smPort = fabric.endpointByGuid(0x100001);
        ibqos::readPartitions(&partitionsSource, fabric, diagnostics);
        compiled = ibqos::FabricCompilation::compile(policy, std::move(fabric), {}, diagnostics,
                                                     ibqos::CompileStage::Bind);
        if (diagnostics.hasErrors()) std::abort();  // the fixture itself is wrong
    }
    const ibqos::Fabric& fabric() const { return compiled->fabric(); }
    const ibqos::BoundPolicy& bound() const { return compiled->bound(); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const Lab lab;
    static const ibqos::Classifier classifier(lab.bound());
    static const ibqos::PkeyTables pkeys(lab.fabric());

    ibqos::DecodedRequest decoded = ibqos::decodePathRequest(std::span<const uint8_t>(data, size));
    if (!decoded.ok()) {
        if (decoded.error.empty() || !decoded.requests.empty()) std::abort();
        return 0;
    }
    if (decoded.requests.empty()) std::abort();
    for (const ibqos::PathRequest& r : decoded.requests) {
        if ((r.qosClass && *r.qosClass > 4095) || (r.sl && *r.sl > 15)) std::abort();
        if ((!r.source.lid && !r.source.guid) || (!r.destination.lid && !r.destination.guid))
            std::abort();
        std::string error;
        auto query = ibqos::resolvePathRequest(lab.fabric(), r, error);
        if (!query) {
            if (error.empty()) std::abort();
            continue;
        }
        ibqos::QosMatch match = classifier.match(*query);
        if (match != ibqos::referenceMatch(lab.bound(), *query)) std::abort();
        ibqos::PathAnswer answer = ibqos::answerPath(lab.policy, pkeys, *query, match);
        if (answer.ok() == (answer.pkey == 0)) std::abort();
    }
    return 0;
}
