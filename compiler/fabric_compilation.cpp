// SPDX-License-Identifier: MIT
// FabricCompilation::compile: the fabric stage, in the order the data flows.
#include "compiler/fabric_compilation.hpp"

#include <chrono>

#include "compiler/compile_policy.hpp"
#include "compiler/reachability.hpp"
#include "compiler/realizability.hpp"

namespace ibqos {

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::unique_ptr<FabricCompilation> FabricCompilation::compile(
    const Policy& policy, Fabric fabric, OpenSmConf conf, Diagnostics& diagnostics,
    CompileStage upTo, std::optional<uint64_t> analysisBudget) {
    std::unique_ptr<FabricCompilation> c(new FabricCompilation());
    c->fabric_ = std::move(fabric);
    c->conf_ = std::move(conf);
    auto start = std::chrono::steady_clock::now();
    c->bound_ = bindPolicy(policy, c->fabric_, diagnostics);
    c->timings_.bind = secondsSince(start);
    if (upTo == CompileStage::Bind) return c;
    start = std::chrono::steady_clock::now();
    c->tables_ = computeTables(c->bound_, c->conf_, diagnostics);
    c->timings_.tables = secondsSince(start);
    if (upTo == CompileStage::Tables) return c;
    start = std::chrono::steady_clock::now();
    checkRealizability(c->bound_, c->tables_, diagnostics);
    c->timings_.realizability = secondsSince(start);
    // What no request reaches says little about a policy with errors (dropped references).
    if (upTo == CompileStage::Realizability || diagnostics.hasErrors()) return c;
    checkReachability(c->bound_, diagnostics, analysisBudget.value_or(analysisBudgetFor(policy)));
    return c;
}

}  // namespace ibqos
