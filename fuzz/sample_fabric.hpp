// SPDX-License-Identifier: MIT
// The small fabric the policy fuzz targets bind to: two switches, three CAs (one dual-ported),
// the SM on H1's port, every port in the default partition.
#pragma once

#include "common/diagnostics.hpp"
#include "common/source.hpp"
#include "fabric/fabric.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"

namespace ibqos::fuzz {

inline const Fabric& sampleFabric() {
    static const Fabric fabric = [] {
        SourceFile net(
            "sample.net",
            "Switch 8 \"S1\" enhanced port 0\n[1] \"H1\"[1]\n[2] \"H2\"[1]\n[3] \"S2\"[3]\n\n"
            "Switch 8 \"S2\"\n[1] \"H3\"[1]\n[2] \"H2\"[2]\n[3] \"S1\"[3]\n\n"
            "Hca 1 \"H1\"\n[1] \"S1\"[1]\n\nHca 2 \"H2\"\n[1] \"S1\"[2]\n[2] \"S2\"[2]\n\n"
            "Hca 1 \"H3\"\n[1] \"S2\"[1]\n");
        Diagnostics d;
        Fabric f = readTopology(net, d);
        f.smPort = f.endpointByGuid(0x100001);
        readPartitions(nullptr, f, d);
        return f;
    }();
    return fabric;
}

}  // namespace ibqos::fuzz
