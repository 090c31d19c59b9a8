// SPDX-License-Identifier: MIT
// FabricCompilation::compile: the fabric stage, in the order the data flows.
#include "compiler/fabric_compilation.hpp"

#include <chrono>

#include "compiler/realizability.hpp"
#include "policy-grammar/keywords.hpp"

namespace ibqos {

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The tables with every qos-setup scope applied, except the scopes that would drop or starve an
// SL a level hands out where stock OpenSM, which ignores qos-setup, would not: such a scope is
// left out (an error at the scope says why and where), and its ports get opensm.conf's tables.
// Leaving one out may bare another's harm, so this goes on until no scope does harm (at most
// once per scope).
FabricTables tablesNeverWorseThanStock(const BoundPolicy& bound, const OpenSmConf& conf,
                                       Diagnostics& diagnostics) {
    const Policy& policy = *bound.policy;
    WithheldScopes withheld;
    withheld.vlarb.assign(policy.vlarbScopes.size(), false);
    withheld.sl2vl.assign(policy.sl2vlScopes.size(), false);
    Diagnostics tableWarnings;
    FabricTables tables = computeTables(bound, conf, tableWarnings, withheld);
    for (;;) {
        std::vector<ScopeHarm> harm = findHarmfulScopes(bound, tables);
        if (harm.empty()) break;
        for (const ScopeHarm& h : harm) {
            (h.vlarb ? withheld.vlarb : withheld.sl2vl)[h.scope] = true;
            const SourceLocation at = h.vlarb ? policy.vlarbScopes[h.scope].location
                                              : policy.sl2vlScopes[h.scope].location;
            const size_t ports =
                h.vlarb ? tables.vlarbScopeUse[h.scope] : tables.sl2vlScopeUse[h.scope];
            diagnostics.stricterError(
                h.dropped ? "sl-dropped" : "sl-starved", policy.file, at,
                "with this " +
                    std::string(ast::wordsOf(h.vlarb ? ast::BlockKind::VlArbScope
                                                     : ast::BlockKind::Sl2VlScope)
                                    .open) +
                    ", " + h.message +
                    (h.dropped ? ": requests matched to it would get no path there"
                               : ": its packets would never be sent") +
                    ". The scope is not applied: its " + std::to_string(ports) +
                    (h.vlarb ? (ports == 1 ? " port gets" : " ports get")
                             : (ports == 1 ? " (in, out) pair gets" : " (in, out) pairs get")) +
                    " the tables opensm.conf gives, as stock OpenSM programs them");
        }
        tableWarnings = Diagnostics();
        tables = computeTables(bound, conf, tableWarnings, withheld);
    }
    diagnostics.append(tableWarnings);
    return tables;
}

}  // namespace

std::unique_ptr<FabricCompilation> FabricCompilation::compile(const Policy& policy, Fabric fabric,
                                                              OpenSmConf conf,
                                                              Diagnostics& diagnostics,
                                                              CompileStage upTo) {
    std::unique_ptr<FabricCompilation> c(new FabricCompilation());
    c->fabric_ = std::move(fabric);
    c->conf_ = std::move(conf);
    auto start = std::chrono::steady_clock::now();
    c->bound_ = bindPolicy(policy, c->fabric_, diagnostics);
    c->timings_.bind = secondsSince(start);
    if (upTo == CompileStage::Bind) return c;
    start = std::chrono::steady_clock::now();
    c->tables_ = tablesNeverWorseThanStock(c->bound_, c->conf_, diagnostics);
    c->timings_.tables = secondsSince(start);
    if (upTo == CompileStage::Tables) return c;
    start = std::chrono::steady_clock::now();
    checkRealizability(c->bound_, c->tables_, diagnostics);
    c->timings_.realizability = secondsSince(start);
    return c;
}

}  // namespace ibqos
