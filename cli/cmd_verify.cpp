// SPDX-License-Identifier: MIT
// ibqos verify: does every port of the live fabric hold the tables the policy compiles to?
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/live_fabric.hpp"
#include "common/json.hpp"
#include "common/text.hpp"
#include "compiler/drift.hpp"
#include "compiler/emit.hpp"
#include "policy-space/load_policy.hpp"

namespace ibqos::cli {

namespace {

const char* const verifyFooter =
    R"(Discovers the fabric from this host (directed-route SMPs, as ibnetdiscover does), reads every
port's SL2VL and VL arbitration tables (as smpquery does), and compares them with what the policy
compiles to for the fabric found. Every difference is reported on a line: port, table, expected,
found. --json prints {"ports_checked": N, "queries": N, "differences": [{"name", "guid", "port",
"port_number", "table", "expected", "found"}, ...], "diagnostics": [...]}: "port" (and
"port_number") the port's number, tables as `ibqos compile --emit json` gives them (an SL2VL
table as 16 VLs, VLArb entries as [[vl, weight], ...]); "found" is null, and "error" says why,
for a table that could not be read.

Exit status: 0 the fabric holds the policy's tables, 1 there are differences (or the policy has
errors), 2 usage error or the fabric cannot be reached.)";

struct VerifyOptions {
    std::string policy;
    FabricOptions fabric;
    LocalPortOptions local;
    bool json = false;
};

}  // namespace

TableVerification verifyLiveTables(const Policy& policy, const OpenSmConf& conf,
                                   probe::LiveFabric& live, Diagnostics& diagnostics) {
    const Fabric& fabric = live.fabric();
    auto compiled = FabricCompilation::compile(policy, fabric, conf, diagnostics);
    const FabricTables& tables = compiled->tables();
    std::vector<Drift> drift = findDrift(live, tables);
    TableVerification v;
    v.differences = drift.size();
    Json differences = Json::array();
    for (const Drift& d : drift) {
        const FabricPort& port = fabric.ports[d.port];
        Json difference = {{"name", fabric.portName(d.port)},
                           {"guid", hex(port.guid, 16)},
                           {"port", port.number},
                           {"port_number", port.number},
                           {"table", d.table},
                           {"expected", tableJson(d.expected)},
                           {"found", d.found ? tableJson(*d.found) : Json(nullptr)}};
        if (!d.found) difference["error"] = d.error;
        differences.push_back(std::move(difference));
        v.text += tableDifferenceLine(fabric.portName(d.port), d.table, "expected",
                                      tableText(d.expected), "found", d.foundText());
    }
    v.report = {{"ports_checked", tables.ports.size()},
                {"queries", live.queries()},
                {"differences", std::move(differences)}};
    v.text += std::to_string(tables.ports.size()) + " ports checked (" +
              std::to_string(live.queries()) + " queries), " + std::to_string(drift.size()) +
              (drift.size() == 1 ? " difference\n" : " differences\n");
    return v;
}

namespace {

int verify(const VerifyOptions& o) {
    bool json = o.json;
    Inputs inputs;
    Diagnostics diagnostics;
    Policy policy = loadPolicy(inputs.load(o.policy), diagnostics);
    OpenSmConf conf = loadOpenSmConf(o.fabric.opensmConf, inputs, diagnostics);
    if (diagnostics.hasErrors()) {
        if (json) return emitErrorObject(diagnostics, inputs);
        return emitDiagnostics(diagnostics, inputs, false, Shown::ErrorsAndCounts);
    }

    auto live = discoverFabric(o.local, o.fabric.sm, o.fabric.partitions, inputs, diagnostics);
    TableVerification v = verifyLiveTables(policy, conf, *live, diagnostics);
    // A policy with errors on this fabric is reported, and nothing compared: its tables are
    // not what a stock OpenSM or the plugin would program from it.
    if (diagnostics.hasErrors()) {
        if (json) return emitErrorObject(diagnostics, inputs);
        return emitDiagnostics(diagnostics, inputs, false, Shown::ErrorsAndCounts);
    }
    if (json) {
        diagnostics.sort();
        v.report["status"] = v.differences == 0 ? "ok" : "differences";
        v.report["diagnostics"] = diagnosticsJson(diagnostics.all());
        std::cout << dumpJson(v.report) << "\n";
    } else {
        emitDiagnostics(diagnostics, inputs, false, Shown::ErrorsAndCounts);
        std::cout << v.text;
    }
    return v.differences == 0 ? ExitOk : ExitInputErrors;
}

}  // namespace

void addVerify(Program& program) {
    auto o = std::make_shared<VerifyOptions>();
    CLI::App& c = program.command(
        "verify", "compare every port's tables on the live fabric with what the policy compiles to",
        verifyFooter, [o] { return verify(*o); });
    addPolicyArgument(c, o->policy);
    o->fabric.addLive(c, false);
    o->local.add(c);
    c.add_flag("--json", o->json, "print the result as one JSON object (below)");
}

}  // namespace ibqos::cli
