// SPDX-License-Identifier: MIT
// Policies for the host-sched tests: a default level around the host-sched section under test.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

#include "host-sched/plan/host_plan.hpp"
#include "tests/policy_text.hpp"

namespace ibqos::test {

// The smallest valid policy with this host-sched body (the lines between host-sched and
// end-host-sched).
inline std::string withHostSched(std::string_view body) {
    return "qos-levels\n qos-level\n  name: default\n  sl: 0\n end-qos-level\nend-qos-levels\n"
           "host-sched\n" +
           std::string(body) + "end-host-sched\n";
}

// The plan of that policy, which must compile without errors.
inline host::HostPlan planOf(std::string_view body) {
    Compiled c(withHostSched(body));
    REQUIRE(c.codes().empty());
    return host::HostPlan::fromPolicy(c.policy.hostSched);
}

}  // namespace ibqos::test
