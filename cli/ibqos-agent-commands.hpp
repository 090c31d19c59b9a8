// SPDX-License-Identifier: MIT
// The ibqos-agent subcommands and the printing helpers they share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/command_line.hpp"
#include "host-sched/plan/host_plan.hpp"

namespace ibqos::cli {

// The ibqos-agent subcommands.
void addResolve(Program& program);
void addPlan(Program& program);
void addSimulate(Program& program);
void addRun(Program& program);
void addStatus(Program& program);
void addEnv(Program& program);

// Loads a policy, prints its diagnostics like `ibqos check`, and returns its plan; nullopt
// (with exitCode set) when it has errors (1) or cannot be read (throws IoError: 2).
std::optional<host::HostPlan> loadPlanOrReport(const std::string& path, bool json, int& exitCode);

// "40000 Mbit/s" or "unlimited".
std::string describeBandwidth(uint32_t mbps);

}  // namespace ibqos::cli
