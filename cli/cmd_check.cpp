// SPDX-License-Identifier: MIT
// ibqos check: every problem in a policy, located, in one run.
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "policy-space/load_policy.hpp"
#include "policy-space/reachability.hpp"

namespace ibqos::cli {

namespace {

const char* const checkFooter =
    R"(Reads an OpenSM QoS policy file (qos-policy.conf, with the ibqos extensions) and reports every
problem in it, each as FILE:LINE:COL: error|warning: [CODE] message with the source line.
With a topology it also checks the policy against that fabric: names and GUIDs that match no
port, IPoIB partitions, whether the tables it asks for can work, and the rules, levels and
groups no request of that fabric reaches.

Exit status: 0 no errors (warnings allowed), 1 the policy has errors, 2 usage or I/O error.
The diagnostic codes are listed in docs/diagnostics.md and in ibqos(1).)";

struct CheckOptions {
    std::string policy;
    FabricOptions fabric;
    bool json = false;
    std::string analysisBudget;
    std::vector<std::string> ignore;
};

int check(const CheckOptions& o) {
    Inputs inputs;
    Diagnostics diagnostics;
    const std::optional<uint64_t> budget = analysisBudgetOption(o.analysisBudget);
    Policy policy = loadPolicy(inputs.load(o.policy), diagnostics, budget);
    auto compiled = compileForFabric(policy, o.fabric, inputs, diagnostics);
    // What no request reaches says little about a policy with errors (dropped references).
    if (compiled && !diagnostics.hasErrors())
        checkReachability(compiled->bound(), diagnostics,
                          budget.value_or(analysisBudgetFor(policy)));
    if (o.ignore.empty()) return emitDiagnostics(diagnostics, inputs, o.json);
    // Warnings and notes with an ignored code are left out; an error never is (OpenSM would
    // still act on it).
    const std::set<std::string> ignored(o.ignore.begin(), o.ignore.end());
    Diagnostics kept;
    kept.append(diagnostics, [&](const Diagnostic& d) {
        return d.severity == Severity::Error || !ignored.count(d.code);
    });
    return emitDiagnostics(kept, inputs, o.json);
}

}  // namespace

void addCheck(Program& program) {
    auto o = std::make_shared<CheckOptions>();
    CLI::App& c = program.command("check",
                                  "report every problem in a policy file (and, with a topology, "
                                  "in its tables)",
                                  checkFooter, [o] { return check(*o); });
    addPolicyArgument(c, o->policy);
    o->fabric.add(c, false);
    c.add_flag("--json", o->json,
               "print the diagnostics on stdout as a JSON array of {\"severity\", \"code\", "
               "\"file\", \"line\", \"column\", \"message\", \"opensm_rejects\"}");
    c.add_option("--ignore", o->ignore,
                 "leave out the warnings and notes with these codes (errors are always shown)")
        ->type_name("CODE[,CODE...]")
        ->delimiter(',');
    addAnalysisBudget(c, o->analysisBudget,
                      "work the dead-rule and reachability analyses may do, in decision-diagram "
                      "steps, or 'unlimited' (default: in proportion to the policy's size); "
                      "rules left undecided get a reachability-undecided note");
}

}  // namespace ibqos::cli
