// SPDX-License-Identifier: MIT
// ibqos compile: every table every port will receive, the VL shares, or a plain OpenSM setup.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "compiler/compile_policy.hpp"
#include "compiler/emit.hpp"

namespace ibqos::cli {

namespace {

const char* const compileHelp =
    R"(Usage: ibqos compile POLICY --topology FILE [--partitions FILE] [--sm PORT] [--opensm-conf FILE]
                     --emit opensm|tables|json|shares [-o PATH] [--svg FILE]

Compiles a policy for a fabric: the SL2VL and VL arbitration tables every port will receive
(OpenSM's opensm.conf options first, then the policy's qos-setup, which OpenSM ignores), with
every problem that would hurt traffic reported as for `ibqos check`.

  --emit tables      the tables for people, ports with identical tables grouped
  --emit json        {"ports": [...], "diagnostics": [...]} (see docs/compile.md)
  --emit shares      the long-run bandwidth share of each VL for every distinct
                     arbitration setup; --svg FILE also draws it as a bar chart
  --emit opensm      a plain qos-policy.conf and the opensm.conf qos_* lines doing the
                     same with a stock OpenSM; with -o DIR they are written to
                     DIR/qos-policy.conf and DIR/opensm-qos.conf
  -o PATH            write the output there (atomically) instead of standard output
)";

const char* const compileHelpTail = R"(  -h, --help         show this help

Diagnostics go to standard error. A policy with errors is not compiled: nothing is written
(except with --emit json, whose "diagnostics" carry them) and the exit status is 1.
Exit status: 0 success, 1 the inputs have errors, 2 usage or I/O error.
)";

}  // namespace

int runCompile(const std::vector<std::string>& args) {
    auto specs = fabricOptions();
    specs.push_back({"emit", true});
    specs.push_back({"output", true});
    specs.push_back({"svg", true});
    Options options(args, specs);
    if (options.flag("help")) {
        std::cout << compileHelp << fabricOptionsHelp << compileHelpTail;
        return ExitOk;
    }
    if (options.positionals().size() != 1) throw UsageError{"compile takes one POLICY file"};
    std::string emit = options.required("emit");
    if (emit != "opensm" && emit != "tables" && emit != "json" && emit != "shares") {
        throw UsageError{"--emit takes opensm, tables, json or shares, not '" + emit + "'"};
    }
    if (!options.value("topology")) throw UsageError{"compile needs --topology"};
    if (options.value("svg") && emit != "shares") throw UsageError{"--svg goes with --emit shares"};

    Inputs inputs;
    Diagnostics diagnostics;
    Policy policy = loadPolicy(inputs.load(options.positionals()[0]), diagnostics);
    auto compiled = compileForFabric(policy, options, inputs, diagnostics);
    bool failed = diagnostics.hasErrors();

    auto output = options.value("output");
    auto deliver = [&](const std::string& text) {
        if (output) {
            writeFileAtomically(*output, text);
        } else {
            std::cout << text;
        }
    };
    if (emit == "json") {
        diagnostics.sort();
        deliver(emitTablesJson(compiled->bound(), compiled->tables(), diagnostics.all()));
    } else if (!failed && emit == "tables") {
        deliver(emitTablesText(compiled->bound(), compiled->tables()));
    } else if (!failed && emit == "shares") {
        deliver(emitSharesText(compiled->bound(), compiled->tables()));
        if (auto svg = options.value("svg"))
            writeFileAtomically(*svg, emitSharesSvg(compiled->bound(), compiled->tables()));
    } else if (!failed && emit == "opensm") {
        OpenSmFiles files = emitOpenSm(compiled->bound(), compiled->tables(), diagnostics);
        if (output) {
            writeFileAtomically(*output + "/qos-policy.conf", files.policy);
            writeFileAtomically(*output + "/opensm-qos.conf", files.options);
        } else {
            std::cout << "# ---- qos-policy.conf\n"
                      << files.policy << "# ---- opensm-qos.conf\n"
                      << files.options;
        }
    }
    return emitDiagnostics(diagnostics, inputs, false);
}

}  // namespace ibqos::cli
