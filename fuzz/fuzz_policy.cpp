// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as a policy file, through the grammar, every check, binding to a
// sample fabric, the tables, the realizability checks and every emitter.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/bind.hpp"
#include "compiler/emit.hpp"
#include "compiler/fabric_compilation.hpp"
#include "compiler/realizability.hpp"
#include "compiler/tables.hpp"
#include "fuzz/sample_fabric.hpp"
#include "policy-space/load_policy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ibqos::SourceFile source("fuzz.conf", std::string(reinterpret_cast<const char*>(data), size));
    ibqos::Diagnostics diagnostics;
    ibqos::Policy policy = ibqos::loadPolicy(source, diagnostics);
    // Rendering touches every position the diagnostics carry.
    for (const ibqos::Diagnostic& d : diagnostics.all()) (void)ibqos::renderText(d, &source);
    (void)ibqos::renderJson(diagnostics.all());
    // The Policy is consistent even with errors: the fabric stages must take it.
    auto compiled = ibqos::FabricCompilation::compile(policy, ibqos::fuzz::sampleFabric(),
                                                      ibqos::OpenSmConf{}, diagnostics);
    const ibqos::BoundPolicy& bound = compiled->bound();
    const ibqos::FabricTables& tables = compiled->tables();
    (void)ibqos::emitTablesJson(bound, tables, diagnostics.all());
    (void)ibqos::emitTablesText(bound, tables);
    (void)ibqos::emitOpenSm(bound, tables, diagnostics);
    return 0;
}
