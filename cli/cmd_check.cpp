// SPDX-License-Identifier: MIT
// ibqos check: every problem in a policy, located, in one run.
#include <iostream>

#include "commands.hpp"
#include "compile_policy.hpp"
#include "options.hpp"

namespace ibqos::cli {

namespace {

const char* const checkHelp = R"(Usage: ibqos check POLICY [--json]

Reads an OpenSM QoS policy file (qos-policy.conf, with the ibqos extensions) and reports every
problem in it, each as FILE:LINE:COL: error|warning: [CODE] message with the source line.

Options:
  --json        print the diagnostics on stdout as a JSON array of
                {"severity", "code", "file", "line", "column", "message"}
  -h, --help    show this help

Exit status: 0 no errors (warnings allowed), 1 the policy has errors, 2 usage or I/O error.
The diagnostic codes are listed in docs/diagnostics.md and in ibqos(1).
)";

}  // namespace

int runCheck(const std::vector<std::string>& args) {
    Options options(args, {{"json"}});
    if (options.flag("help")) {
        std::cout << checkHelp;
        return ExitOk;
    }
    if (options.positionals().size() != 1) throw UsageError{"check takes one POLICY file"};
    Inputs inputs;
    const SourceFile& source = inputs.load(options.positionals()[0]);
    Diagnostics diagnostics;
    loadPolicy(source, diagnostics);
    return emitDiagnostics(diagnostics, inputs, options.flag("json"));
}

}  // namespace ibqos::cli
