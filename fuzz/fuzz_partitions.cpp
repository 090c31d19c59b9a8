// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as OpenSM's partitions.conf, on a fixed sample fabric.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/source.hpp"
#include "fabric/fabric.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"

namespace {

// A small fabric with switches, CAs and a known SM port, read once.
const ibqos::Fabric& sampleFabric() {
    static const ibqos::Fabric fabric = [] {
        ibqos::SourceFile net("sample.net",
                              "Switch 8 \"S1\"\n[1] \"H1\"[1]\n[2] \"H2\"[1]\n[3] \"S2\"[3]\n\n"
                              "Switch 8 \"S2\"\n[1] \"H3\"[1]\n[3] \"S1\"[3]\n\n"
                              "Hca 1 \"H1\"\n[1] \"S1\"[1]\n\nHca 1 \"H2\"\n[1] \"S1\"[2]\n\nHca 1 "
                              "\"H3\"\n[1] \"S2\"[1]\n");
        ibqos::Diagnostics d;
        ibqos::Fabric f = ibqos::readTopology(net, d);
        f.smPort = f.endpointByGuid(0x100001);
        return f;
    }();
    return fabric;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ibqos::Fabric fabric = sampleFabric();
    ibqos::SourceFile partitions("fuzz.partitions",
                                 std::string(reinterpret_cast<const char*>(data), size));
    ibqos::Diagnostics diagnostics;
    ibqos::readPartitions(&partitions, fabric, diagnostics);
    for (const ibqos::Partition& p : fabric.partitions) (void)p.fullMembers();
    return 0;
}
