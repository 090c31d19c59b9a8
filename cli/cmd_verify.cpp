// SPDX-License-Identifier: MIT
// ibqos verify: does every port of the live fabric hold the tables the policy compiles to?
#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "common/json.hpp"
#include "common/text.hpp"
#include "compiler/compile_policy.hpp"
#include "compiler/drift.hpp"
#include "fabric/partitions.hpp"
#include "fabric/smp_probe.hpp"

namespace ibqos::cli {

namespace {

const char* const verifyHelp =
    R"(Usage: ibqos verify POLICY [--partitions FILE] [--sm PORT] [--opensm-conf FILE]
                    [--hca NAME] [--port N] [--json]

Discovers the fabric from this host (directed-route SMPs, as ibnetdiscover does), reads every
port's SL2VL and VL arbitration tables (as smpquery does), and compares them with what the policy
compiles to for the fabric found. Every difference is reported: port, table, expected, found.

  --partitions FILE  the partitions.conf the SM uses (default: the Default partition only)
  --sm PORT          the SM's port (default: the master SM the local port knows)
  --opensm-conf FILE the opensm.conf the SM uses: its qos_* options give the tables that
                     qos-setup does not (default: OpenSM's built-in defaults)
  --hca NAME         the local HCA to use (default: the first)
  --port N           its port (default: the first active)
  --json             {"ports_checked": N, "queries": N, "differences": [{"port", "guid",
                     "port_number", "table", "expected", "found"}, ...], "diagnostics": [...]}
  -h, --help         show this help

Exit status: 0 the fabric holds the policy's tables, 1 there are differences (or the policy has
errors), 2 usage error or the fabric cannot be reached.
)";

}  // namespace

int runVerify(const std::vector<std::string>& args) {
    Options options(args, {{"partitions", true},
                           {"sm", true},
                           {"opensm-conf", true},
                           {"hca", true},
                           {"port", true},
                           {"json"}});
    if (options.flag("help")) {
        std::cout << verifyHelp;
        return ExitOk;
    }
    if (options.positionals().size() != 1) throw UsageError{"verify takes one POLICY file"};
    bool json = options.flag("json");
    Inputs inputs;
    Diagnostics diagnostics;
    Policy policy = loadPolicy(inputs.load(options.positionals()[0]), diagnostics);
    OpenSmConf conf = loadOpenSmConf(options, inputs, diagnostics);
    if (diagnostics.hasErrors()) return emitDiagnostics(diagnostics, inputs, json);

    probe::ProbeOptions probeOptions;
    probeOptions.ca = options.value("hca").value_or("");
    if (auto port = options.value("port"))
        probeOptions.port = static_cast<int>(parseNumberOption("port", *port, 254));
    std::string error;
    auto live = probe::LiveFabric::discover(probeOptions, error);
    if (!live) throw IoError{error};
    Fabric& fabric = live->fabric();
    if (auto sm = options.value("sm")) {
        fabric.smPort = fabric.findEndpoint(*sm, error);
        if (fabric.smPort == NoPort) throw UsageError{"--sm: " + error};
    }
    auto partitions = options.value("partitions");
    readPartitions(partitions ? &inputs.load(*partitions) : nullptr, fabric, diagnostics);
    auto compiled = FabricCompilation::compile(policy, fabric, conf, diagnostics);
    const FabricTables& tables = compiled->tables();
    std::vector<Drift> drift = findDrift(*live, tables);

    if (json) {
        Json differences = Json::array();
        for (const Drift& d : drift) {
            differences.push_back({{"port", fabric.portName(d.port)},
                                   {"guid", hex(fabric.ports[d.port].guid, 16)},
                                   {"port_number", fabric.ports[d.port].number},
                                   {"table", d.table},
                                   {"expected", d.expected},
                                   {"found", d.found}});
        }
        diagnostics.sort();
        Json out = {{"ports_checked", tables.ports.size()},
                    {"queries", live->queries()},
                    {"differences", std::move(differences)},
                    {"diagnostics", diagnosticsJson(diagnostics.all())}};
        std::cout << dumpJson(out) << "\n";
    } else {
        emitDiagnostics(diagnostics, inputs, false);
        for (const Drift& d : drift) {
            std::cout << fabric.portName(d.port) << " " << d.table << ": expected " << d.expected
                      << ", found " << d.found << "\n";
        }
        std::cout << tables.ports.size() << " ports checked (" << live->queries() << " queries), "
                  << drift.size() << (drift.size() == 1 ? " difference\n" : " differences\n");
    }
    if (diagnostics.hasErrors()) return ExitInputErrors;
    return drift.empty() ? ExitOk : ExitInputErrors;
}

}  // namespace ibqos::cli
