// SPDX-License-Identifier: MIT
// ibqos compile: every table every port will receive, the VL shares, or a plain OpenSM setup.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "compiler/emit.hpp"
#include "policy-space/load_policy.hpp"

namespace ibqos::cli {

namespace {

const char* const compileFooter =
    R"(Compiles a policy for a fabric: the SL2VL and VL arbitration tables every port will receive
(OpenSM's opensm.conf options first, then the policy's qos-setup, which OpenSM ignores), with
every problem that would hurt traffic reported as for `ibqos check`.

  --emit tables   the tables for people, ports with identical tables grouped
  --emit json     {"ports": [...], "diagnostics": [...]} (see docs/compile.md)
  --emit shares   the long-run bandwidth share of each VL for every distinct arbitration
                  setup; --svg FILE also draws it as a bar chart
  --emit opensm   a plain qos-policy.conf and the opensm.conf qos_* lines doing the same with
                  a stock OpenSM; with -o DIR they are written to DIR/qos-policy.conf and
                  DIR/opensm-qos.conf

Diagnostics go to standard error. A policy with errors is not compiled: nothing is written
(except with --emit json, whose "diagnostics" carry them) and the exit status is 1.
Exit status: 0 success, 1 the inputs have errors, 2 usage or I/O error.)";

struct CompileOptions {
    std::string policy;
    FabricOptions fabric;
    std::string emit;
    Value output, svg;
};

int compile(const CompileOptions& o) {
    const std::string& emit = o.emit;
    if (o.svg && emit != "shares") throw UsageError{"--svg goes with --emit shares"};

    Inputs inputs;
    Diagnostics diagnostics;
    Policy policy = loadPolicy(inputs.load(o.policy), diagnostics);
    auto compiled = compileForFabric(policy, o.fabric, inputs, diagnostics);
    bool failed = diagnostics.hasErrors();
    if (!compiled)
        return emitDiagnostics(diagnostics, inputs, false,
                               Shown::ErrorsAndCounts);  // no fabric was read

    const Value& output = o.output;
    auto deliver = [&](const std::string& text) {
        if (output) {
            writeFileAtomically(*output, text);
        } else {
            std::cout << text;
        }
    };
    if (emit == "json" && failed) {
        // No tables for a policy with errors: they are not what would be programmed.
        return emitErrorObject(diagnostics, inputs, true);
    } else if (emit == "json") {
        diagnostics.sort();
        deliver(emitTablesJson(compiled->bound(), compiled->tables(), diagnostics.all()));
    } else if (!failed && emit == "tables") {
        deliver(emitTablesText(compiled->bound(), compiled->tables()));
    } else if (!failed && emit == "shares") {
        deliver(emitSharesText(compiled->bound(), compiled->tables()));
        if (o.svg)
            writeFileAtomically(*o.svg, emitSharesSvg(compiled->bound(), compiled->tables()));
    } else if (!failed && emit == "opensm") {
        OpenSmFiles files = emitOpenSm(compiled->bound(), compiled->tables(), diagnostics);
        if (output) {
            std::error_code error;
            std::filesystem::create_directories(*output, error);
            if (error) throw IoError{"cannot create '" + *output + "': " + error.message()};
            writeFileAtomically(*output + "/qos-policy.conf", files.policy);
            writeFileAtomically(*output + "/opensm-qos.conf", files.options);
        } else {
            std::cout << "# ---- qos-policy.conf\n"
                      << files.policy << "# ---- opensm-qos.conf\n"
                      << files.options;
        }
    }
    return emitDiagnostics(diagnostics, inputs, false, Shown::ErrorsAndCounts);
}

}  // namespace

void addCompile(Program& program) {
    auto o = std::make_shared<CompileOptions>();
    CLI::App& c = program.command(
        "compile", "the tables every port of a fabric receives, VL shares, or a plain OpenSM setup",
        compileFooter, [o] { return compile(*o); });
    addPolicyArgument(c, o->policy);
    o->fabric.add(c, true);
    c.add_option("--emit", o->emit, "what to write: tables, json, shares or opensm (below)")
        ->required()
        ->type_name("FORM")
        ->check(CLI::IsMember({"opensm", "tables", "json", "shares"}));
    addValue(c, "-o,--output", o->output, "PATH",
             "write the output there (atomically) instead of standard output");
    addValue(c, "--svg", o->svg, "FILE", "with --emit shares: draw the shares as an SVG bar chart");
}

}  // namespace ibqos::cli
