// SPDX-License-Identifier: MIT
// The host plan of a policy file: the agent compiles it (the preload library only reads the
// compiled plan file, plan/plan_file.hpp).
#pragma once

#include <optional>
#include <string>

#include "host-sched/plan/host_plan.hpp"

namespace ibqos::host {

// Where the agent reads the policy unless --policy says otherwise: IBQOS_POLICY, else
// /etc/ibqos/qos-policy.conf.
std::string defaultPolicyPath();

// Reads and checks a policy file and returns its plan, or nullopt with error holding the
// first problem (for callers that report one line).
std::optional<HostPlan> loadHostPlan(const std::string& path, std::string& error);

}  // namespace ibqos::host
