// SPDX-License-Identifier: MIT
// ibqos check: every problem in a policy, located, in one run.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "compiler/compile_policy.hpp"

namespace ibqos::cli {

namespace {

const char* const checkHelp =
    R"(Usage: ibqos check POLICY [--topology FILE [--partitions FILE] [--sm PORT] [--vls N]] [--json]

Reads an OpenSM QoS policy file (qos-policy.conf, with the ibqos extensions) and reports every
problem in it, each as FILE:LINE:COL: error|warning: [CODE] message with the source line.
With a topology it also checks the policy against that fabric: names and GUIDs that match no
port, IPoIB partitions, and whether the tables it asks for can work.

Options:
  --json             print the diagnostics on stdout as a JSON array of
                     {"severity", "code", "file", "line", "column", "message"}
)";

const char* const checkHelpTail = R"(  -h, --help         show this help

Exit status: 0 no errors (warnings allowed), 1 the policy has errors, 2 usage or I/O error.
The diagnostic codes are listed in docs/diagnostics.md and in ibqos(1).
)";

}  // namespace

int runCheck(const std::vector<std::string>& args) {
    auto specs = fabricOptions();
    specs.push_back({"json"});
    Options options(args, specs);
    if (options.flag("help")) {
        std::cout << checkHelp << fabricOptionsHelp << checkHelpTail;
        return ExitOk;
    }
    if (options.positionals().size() != 1) throw UsageError{"check takes one POLICY file"};
    Inputs inputs;
    const SourceFile& source = inputs.load(options.positionals()[0]);
    Diagnostics diagnostics;
    Policy policy = loadPolicy(source, diagnostics);
    compileForFabric(policy, options, inputs, diagnostics);
    return emitDiagnostics(diagnostics, inputs, options.flag("json"));
}

}  // namespace ibqos::cli
