// SPDX-License-Identifier: MIT
// What the ibqos-agent subcommands share: loading a plan, JSON pieces.
#include <cmath>
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/ibqos-agent-commands.hpp"
#include "policy-space/load_policy.hpp"

namespace ibqos::cli {

std::optional<host::HostPlan> loadPlanOrReport(const std::string& path, bool json, int& exitCode) {
    Inputs inputs;
    const SourceFile& source = inputs.load(path);
    Diagnostics diagnostics;
    Policy policy = loadPolicy(source, diagnostics);
    if (diagnostics.hasErrors()) {
        // Errors go to stderr as `ibqos check` prints them (warnings are check's business).
        (void)json;
        exitCode = emitDiagnostics(diagnostics, inputs, false);
        return std::nullopt;
    }
    return host::HostPlan::fromPolicy(policy.hostSched);
}

std::string describeBandwidth(uint32_t mbps) {
    return mbps ? std::to_string(mbps) + " Mbit/s" : "unlimited";
}

}  // namespace ibqos::cli
