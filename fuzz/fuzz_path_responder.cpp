// SPDX-License-Identifier: MIT
// libFuzzer target: the plugin's PathRecord responder whole, from a raw request MAD to the answer
// MAD osm_sa_respond would send (or the hand-over to OpenSM's handler), on a fake OpenSM's subnet
// (tests/doubles/fake_opensm.hpp): decoding, the checks that leave a request to OpenSM, the route
// walked through the forwarding tables, the classifier's level, the limits and selectors, the
// PKey and SL, the VL15 check, every LID pair of an LMC port.
//
// Input: one control byte (bits 0-2: which endpoint asks; bit 3: no policy in force; bit 4:
// OpenSM has not parsed the plain policy yet), then the MAD.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "ib/qos.hpp"
#include "osm-plugin/path_responder.hpp"
#include "osm-plugin/sweep.hpp"
#include "policy-space/load_policy.hpp"
#include "tests/doubles/fake_opensm.hpp"

namespace {

// Two switches, four CAs; Hca4's port has LMC 1 (LIDs 6 and 7).
const char* const topology =
    R"(Switch 8 "S-0000000000200000" # "Switch1" enhanced port 0 lid 2 lmc 0
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
[1](10000a) "S-0000000000200001"[2] # lid 6 lmc 1 "Switch2" lid 3 4xSDR
)";

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
        name: default
        sl: 0
    end-qos-level
    qos-level
        name: fast
        sl: 3
        rate-limit: 3
        mtu-limit: 3
        packet-life: 12
    end-qos-level
    qos-level
        name: dropped
        sl: 15
    end-qos-level
    qos-level
        name: keyed
        sl: 5
        pkey: 0x7fff
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
        service-id: 0x20000
        qos-level-name: dropped
    end-qos-match-rule
    qos-match-rule
        pkey: 0x7fff
        destination: left
        qos-level-name: keyed
    end-qos-match-rule
end-qos-match-rules
)";

struct Lab {
    ibqos::SourceFile topologySource{"two-switch.ibnetdiscover", topology};
    ibqos::SourceFile policySource{"fuzz.conf", policyText};
    ibqos::Fabric fabric;
    std::unique_ptr<ibqos::osm::CompiledSweep> sweep;
    std::unique_ptr<ibqos::doubles::FakeOpenSm> opensm;
    std::unique_ptr<ibqos::osm::PathResponder> responder;
    std::vector<uint16_t> lids;  // the endpoints' base LIDs, requesters in turn

    Lab() {
        ibqos::Diagnostics diagnostics;
        auto policy =
            std::make_shared<const ibqos::Policy>(ibqos::loadPolicy(policySource, diagnostics));
        fabric = ibqos::readTopology(topologySource, diagnostics);
        fabric.smPort = fabric.endpointByGuid(0x100001);
        ibqos::readPartitions(nullptr, fabric, diagnostics);
        if (diagnostics.hasErrors()) std::abort();  // the fixture itself is wrong
        sweep = ibqos::osm::CompiledSweep::compile(policy, fabric, {}, diagnostics);
        opensm = std::make_unique<ibqos::doubles::FakeOpenSm>(fabric);
        responder = std::make_unique<ibqos::osm::PathResponder>(
            &opensm->osm(), [](int, const char*, const std::string&) {});
        for (uint32_t p = 0; p < fabric.ports.size(); ++p)
            if (fabric.isEndpoint(p)) lids.push_back(fabric.ports[p].lid);
    }
    bool knownLid(uint16_t lid) const { return fabric.endpointByLid(lid) != ibqos::NoPort; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static Lab lab;
    if (size < 1) return 0;
    const uint8_t control = data[0];
    std::span<const uint8_t> mad(data + 1, size - 1);
    // OpenSM's SA dispatcher hands this handler only MADs whose attribute is PathRecord
    // (osm_sa_mad_ctrl.c dispatches by attribute; a MultiPathRecord goes to its own handler).
    if (mad.size() < ibqos::ib::at::AttributeId + 2 ||
        ibqos::ib::get16(mad, ibqos::ib::at::AttributeId) != ibqos::ib::PathRecordAttribute)
        return 0;
    const bool noPolicy = control & 0x08, notParsed = control & 0x10;
    lab.responder->setSweep(noPolicy ? nullptr : lab.sweep.get(), !notParsed);
    osm_madw_t* madw = lab.opensm->wrap(mad, lab.lids[(control & 0x07) % lab.lids.size()]);
    ibqos::osm::PathResponder::onPathRecord(lab.responder.get(), madw);

    const ibqos::doubles::FakeSaOutcome& out = lab.opensm->outcome();
    // Exactly one of: an answer, or the request handed to OpenSM's handler.
    if (out.delegated == !out.answer.empty()) std::abort();
    if (notParsed && !out.delegated) std::abort();
    if (out.delegated) return 0;
    std::span<const uint8_t> answer(out.answer);
    if (answer.size() != ibqos::ib::MadSize) std::abort();
    const uint8_t method = mad.size() > ibqos::ib::at::Method ? mad[ibqos::ib::at::Method] : 0;
    if (answer[ibqos::ib::at::Method] != (method | ibqos::ib::ResponseBit)) std::abort();
    // Only a SubnAdmGet or SubnAdmGetTable is answered with paths; another method gets an error
    // status, as OpenSM's handler gives it (ERR 1F17). A Get holds one path.
    const uint16_t status = ibqos::ib::get16(answer, ibqos::ib::at::Status);
    if (method != ibqos::ib::MethodGet && method != ibqos::ib::MethodGetTable && status == 0)
        std::abort();
    if (status != 0) return 0;
    if (method == ibqos::ib::MethodGet && out.records != 1) std::abort();
    for (size_t at = ibqos::ib::SaHeaderSize, i = 0;
         i < out.records && at + ibqos::ib::PathRecordSize <= answer.size();
         ++i, at += ibqos::ib::PathRecordSize) {
        ibqos::ib::PathRecord r =
            ibqos::ib::decodePathRecord(answer.subspan(at).first<ibqos::ib::PathRecordSize>());
        // Each path runs between two endpoints of the fabric, on a data VL's SL.
        if (!lab.knownLid(r.slid) || !lab.knownLid(r.dlid)) std::abort();
        if (r.sl > ibqos::ib::MaxSl) std::abort();
    }
    return 0;
}
