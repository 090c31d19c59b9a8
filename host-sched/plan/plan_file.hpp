// SPDX-License-Identifier: MIT
// The compiled host plan on disk: the agent writes it from the policy, the preload library reads
// it (so that no RDMA application ever parses a policy).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "host-sched/plan/host_plan.hpp"

namespace ibqos::host {

// Where the agent writes the plan and the library reads it (IBQOS_PLAN, --plan).
inline constexpr const char* DefaultPlanPath = "/run/ibqos/host-plan";

// The plan as text: a header line, then one line per element in creation order,
// "node|leaf PARENT BW_SHARE MAX_AVG_BW SLS SLOT ALGORITHM NAME" ('-' for none, SLS a mask).
std::string planFileText(const HostPlan& plan, std::string_view fromPolicy);

// Reads a plan written by planFileText; nullopt with the first problem (file:line) in error.
std::optional<HostPlan> parsePlanText(std::string_view text, const std::string& name,
                                      std::string& error);
std::optional<HostPlan> readPlanFile(const std::string& path, std::string& error);

}  // namespace ibqos::host
