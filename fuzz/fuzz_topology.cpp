// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as an ibnetdiscover (or ibsim net) file, then as a partitions.conf
// and a --port-caps file for the fabric read, and the fabric's lookups.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/source.hpp"
#include "fabric/fabric.hpp"
#include "fabric/partitions.hpp"
#include "fabric/port_caps.hpp"
#include "fabric/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    ibqos::SourceFile topology("fuzz.topo", text);
    ibqos::Diagnostics diagnostics;
    ibqos::Fabric fabric = ibqos::readTopology(topology, diagnostics);
    for (uint32_t p = 0; p < fabric.ports.size() && p < 64; ++p) {
        (void)fabric.portName(p);
        std::string error;
        (void)fabric.findEndpoint(fabric.portName(p), error);
    }
    // The same bytes as the other two fabric inputs, against the fabric just read.
    ibqos::SourceFile partitions("fuzz.partitions", text);
    ibqos::readPartitions(&partitions, fabric, diagnostics);
    ibqos::SourceFile caps("fuzz.caps", text);
    ibqos::readPortCaps(caps, fabric, diagnostics);
    return 0;
}
