// SPDX-License-Identifier: MIT
// loadHostPlan: a policy file compiled, its host-sched section as a plan.
#include "host-sched/agent/policy_plan.hpp"

#include <cstdlib>

#include "common/source.hpp"
#include "policy-space/load_policy.hpp"

namespace ibqos::host {

std::string defaultPolicyPath() {
    const char* path = std::getenv("IBQOS_POLICY");
    return path && *path ? path : "/etc/ibqos/qos-policy.conf";
}

std::optional<HostPlan> loadHostPlan(const std::string& path, std::string& error) {
    auto source = SourceFile::load(path, error);
    if (!source) return std::nullopt;
    Diagnostics diagnostics;
    Policy policy = loadPolicy(*source, diagnostics);
    if (diagnostics.hasErrors()) {
        diagnostics.sort();
        size_t count = diagnostics.errorCount();
        for (const Diagnostic& d : diagnostics.all()) {
            if (d.severity != Severity::Error) continue;
            error = d.file + ":" + std::to_string(d.location.line) + ":" +
                    std::to_string(d.location.column) + ": [" + d.code + "] " + d.message;
            if (count > 1) error += " (and " + std::to_string(count - 1) + " more errors)";
            break;
        }
        return std::nullopt;
    }
    return HostPlan::fromPolicy(policy.hostSched);
}

}  // namespace ibqos::host
