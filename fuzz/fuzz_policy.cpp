// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as a policy file, through the grammar, every check, binding to a
// sample fabric, the tables, the realizability checks and every emitter.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/bind.hpp"
#include "compiler/compile_policy.hpp"
#include "compiler/emit.hpp"
#include "compiler/fabric_compilation.hpp"
#include "compiler/realizability.hpp"
#include "compiler/tables.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"

namespace {

const ibqos::Fabric& sampleFabric() {
    static const ibqos::Fabric fabric = [] {
        ibqos::SourceFile net(
            "sample.net",
            "Switch 8 \"S1\" enhanced port 0\n[1] \"H1\"[1]\n[2] \"H2\"[1]\n[3] \"S2\"[3]\n\n"
            "Switch 8 \"S2\"\n[1] \"H3\"[1]\n[2] \"H2\"[2]\n[3] \"S1\"[3]\n\n"
            "Hca 1 \"H1\"\n[1] \"S1\"[1]\n\nHca 2 \"H2\"\n[1] \"S1\"[2]\n[2] \"S2\"[2]\n\n"
            "Hca 1 \"H3\"\n[1] \"S2\"[1]\n");
        ibqos::Diagnostics d;
        ibqos::Fabric f = ibqos::readTopology(net, d);
        f.smPort = f.endpointByGuid(0x100001);
        ibqos::readPartitions(nullptr, f, d);
        return f;
    }();
    return fabric;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ibqos::SourceFile source("fuzz.conf", std::string(reinterpret_cast<const char*>(data), size));
    ibqos::Diagnostics diagnostics;
    ibqos::Policy policy = ibqos::loadPolicy(source, diagnostics);
    // Rendering touches every position the diagnostics carry.
    for (const ibqos::Diagnostic& d : diagnostics.all()) (void)ibqos::renderText(d, &source);
    (void)ibqos::renderJson(diagnostics.all());
    // The Policy is consistent even with errors: the fabric stages must take it.
    auto compiled =
        ibqos::FabricCompilation::compile(policy, sampleFabric(), ibqos::OpenSmConf{}, diagnostics);
    const ibqos::BoundPolicy& bound = compiled->bound();
    const ibqos::FabricTables& tables = compiled->tables();
    (void)ibqos::emitTablesJson(bound, tables, diagnostics.all());
    (void)ibqos::emitTablesText(bound, tables);
    (void)ibqos::emitOpenSm(bound, tables, diagnostics);
    return 0;
}
