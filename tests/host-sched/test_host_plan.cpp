// SPDX-License-Identifier: MIT
// Unit tests of the host plan: creation order, SL to leaf, slots, loading a policy file.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "host-sched/agent/policy_plan.hpp"
#include "host-sched/plan/host_plan.hpp"
#include "host-sched/plan/plan_file.hpp"
#include "tests/host-sched/host_policies.hpp"

using namespace ibqos;
using namespace ibqos::host;

namespace {

// Nodes written child before parent: the plan must still create parents first.
const std::string tree = test::withHostSched(R"(
    sched-node
        name: inner
        parent: outer
        bw-share: 10
        max-avg-bw: 50000
    end-sched-node
    sched-node
        name: outer
        bw-share: 90
    end-sched-node
    sched-leaf
        name: fast
        parent: inner
        sl: 1, 3-4
        bw-share: 70
        pcc-slot: 4
        pcc-algorithm: swift
    end-sched-leaf
    sched-leaf
        name: slow
        sl: 2
        pcc-slot: 1
        pcc-algorithm: DCQCN
    end-sched-leaf
    sched-leaf
        name: other
        parent: outer
        sl: 5
        pcc-slot: 4
        pcc-algorithm: swift
    end-sched-leaf
)");

}  // namespace

TEST_CASE("the plan creates every node after its parent and the leaves last",
          "[host-sched][plan]") {
    test::Compiled c(tree);
    REQUIRE(c.codes().empty());
    HostPlan plan = HostPlan::fromPolicy(c.policy.hostSched);
    const auto& e = plan.elements();
    REQUIRE(e.size() == 5);
    CHECK(e[0].name == "outer");
    CHECK_FALSE(e[0].parent);
    CHECK(e[1].name == "inner");
    CHECK(e[1].parent == size_t{0});
    CHECK(e[1].maxAvgBw == 50000);
    for (size_t i = 0; i < e.size(); ++i) {
        if (e[i].parent) CHECK(*e[i].parent < i);
        if (i > 0 && e[i - 1].leaf) CHECK(e[i].leaf);
    }
    CHECK(plan.depth() == 3);
    CHECK(plan.children(std::nullopt) == std::vector<size_t>{0, 3});
}

TEST_CASE("each SL of a leaf maps to it and the others to no leaf", "[host-sched][plan]") {
    test::Compiled c(tree);
    HostPlan plan = HostPlan::fromPolicy(c.policy.hostSched);
    auto nameOf = [&](uint8_t sl) {
        auto leaf = plan.leafForSl(sl);
        return leaf ? plan.elements()[*leaf].name : std::string("-");
    };
    CHECK(nameOf(0) == "-");
    CHECK(nameOf(1) == "fast");
    CHECK(nameOf(2) == "slow");
    CHECK(nameOf(3) == "fast");
    CHECK(nameOf(4) == "fast");
    CHECK(nameOf(5) == "other");
    CHECK(nameOf(15) == "-");
    CHECK(nameOf(16) == "-");
}

TEST_CASE("leaves that share a slot share its registration", "[host-sched][plan]") {
    test::Compiled c(tree);
    HostPlan plan = HostPlan::fromPolicy(c.policy.hostSched);
    REQUIRE(plan.slots().size() == 2);
    CHECK(plan.slots()[0].slot == 1);
    CHECK(plan.slots()[0].algorithm == "DCQCN");
    CHECK(plan.slots()[1].slot == 4);
    CHECK(plan.slots()[1].leaves.size() == 2);
    CHECK(plan.find("OTHER") == plan.slots()[1].leaves[1]);
}

TEST_CASE("a policy without host-sched plans nothing", "[host-sched][plan]") {
    test::Compiled c(
        "qos-levels\n qos-level\n  name: default\n  sl: 0\n end-qos-level\nend-qos-levels\n");
    HostPlan plan = HostPlan::fromPolicy(c.policy.hostSched);
    CHECK(plan.empty());
    CHECK(plan.depth() == 0);
    CHECK_FALSE(plan.leafForSl(0));
}

TEST_CASE("loading a plan reports a missing file or the policy's first error in one line",
          "[host-sched][plan]") {
    std::string error;
    CHECK_FALSE(loadHostPlan("/nonexistent/ibqos.conf", error));
    CHECK(error.find("/nonexistent/ibqos.conf") != std::string::npos);

    char path[] = "/tmp/ibqos-plan-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(path)
        << "qos-levels\n qos-level\n  name: default\n  sl: 99\n end-qos-level\nend-qos-levels\n"
        << "qos-levels\n qos-level\n  name: default\n  sl: 1\n end-qos-level\nend-qos-levels\n";
    error.clear();
    CHECK_FALSE(loadHostPlan(path, error));
    CHECK(error.find(":4:") != std::string::npos);
    CHECK(error.find("more error") != std::string::npos);

    std::ofstream(path) << tree;
    auto plan = loadHostPlan(path, error);
    std::remove(path);
    REQUIRE(plan);
    CHECK(plan->elements().size() == 5);
}

TEST_CASE("the compiled plan file holds the whole plan, and a bad one is refused with its line",
          "[host-sched][plan]") {
    test::Compiled c(tree);
    REQUIRE_FALSE(c.diagnostics.hasErrors());
    HostPlan plan = HostPlan::fromPolicy(c.policy.hostSched);
    std::string error;
    auto read = parsePlanText(planFileText(plan, "policy.conf"), "plan", error);
    REQUIRE(read);
    REQUIRE(read->elements().size() == plan.elements().size());
    for (size_t i = 0; i < plan.elements().size(); ++i) {
        const PlanElement &a = plan.elements()[i], &b = read->elements()[i];
        CHECK(a.name == b.name);
        CHECK(a.leaf == b.leaf);
        CHECK(a.parent == b.parent);
        CHECK(a.bwShare == b.bwShare);
        CHECK(a.maxAvgBw == b.maxAvgBw);
        CHECK(a.sls == b.sls);
        CHECK(a.pccSlot == b.pccSlot);
        CHECK(a.pccAlgorithm == b.pccAlgorithm);
    }
    for (uint8_t sl = 0; sl < 16; ++sl) CHECK(read->leafForSl(sl) == plan.leafForSl(sl));
    REQUIRE(read->slots().size() == plan.slots().size());
    for (size_t i = 0; i < plan.slots().size(); ++i) {
        CHECK(read->slots()[i].slot == plan.slots()[i].slot);
        CHECK(read->slots()[i].leaves == plan.slots()[i].leaves);
    }

    const std::string header = "ibqos-host-plan 1\n";
    for (auto [text, line] : std::initializer_list<std::pair<std::string, int>>{
             {"something else\n", 1},
             {header + "leaf 3 10 0 0x0004 - - a\n", 2},                      // no such parent
             {header + "leaf - 10 0 0x0004 - - a\nnode 0 1 0 0 - - b\n", 3},  // a leaf as parent
             {header + "leaf - 10 0 0x0004 - - a\nleaf - 10 0 0x0006 - - b\n", 3},  // SL 2 twice
             {header + "leaf - 101 0 0x0004 - - a\n", 2},  // bw-share above 100
             {header + "leaf - 10 0 0x0004 3 - a\n", 2},   // a slot without algorithm
         }) {
        INFO(text);
        CHECK_FALSE(parsePlanText(text, "plan", error));
        CHECK(error.find("plan:" + std::to_string(line) + ":") == 0);
    }
}

TEST_CASE("sl-enforcement blocks reach the plan file; a program takes the first that names it",
          "[host-sched][plan][enforce]") {
    test::Compiled c(test::withHostSched(R"(
    sl-enforcement
        use: audit the MPI launchers first
        mode: Audit
        programs: mpirun, "orted"
        resolve-timeout: 20
    end-sl-enforcement
    # Everything else is enforced, but for the backup tool.
    sl-enforcement

        mode: enforce
        except-programs: backup
    end-sl-enforcement
)"));
    REQUIRE(c.codes().empty());
    REQUIRE(c.codes(Severity::Warning).empty());
    HostPlan plan = HostPlan::fromPolicy(c.policy.hostSched);
    std::string error;
    auto read = parsePlanText(planFileText(plan, "policy.conf"), "plan", error);
    INFO(error);
    REQUIRE(read);
    for (const HostPlan* p : {&plan, &*read}) {
        const SlEnforcement* mpi = p->enforcementFor({"orted", "ignored"});
        REQUIRE(mpi);
        CHECK(mpi->mode == SlMode::Audit);
        CHECK(mpi->resolveTimeoutMs == 20);
        const SlEnforcement* other = p->enforcementFor({"", "ib_write_bw"});
        REQUIRE(other);
        CHECK(other->mode == SlMode::Enforce);
        CHECK(other->resolveTimeoutMs == 5);
        CHECK(p->enforcementFor({"backup"}) == nullptr);  // respect
    }
    CHECK(HostPlan::fromPolicy(test::Compiled(test::withHostSched("")).policy.hostSched)
              .enforcementFor({"anything"}) == nullptr);

    for (const std::string text : {"enforce strict 5 - -\n", "enforce audit 0 - -\n",
                                   "enforce audit 5 -\n", "enforce audit 5 - - extra\n"}) {
        INFO(text);
        CHECK_FALSE(parsePlanText("ibqos-host-plan 1\n" + text, "plan", error));
        CHECK(error.find("plan:2: expected 'enforce MODE") == 0);
    }
}

TEST_CASE("a mistaken sl-enforcement block is reported where it is written",
          "[host-sched][plan][enforce]") {
    test::Compiled c(test::withHostSched(R"(
    sl-enforcement
        mode: strict
        programs: /usr/bin/ior, ok
        resolve-timeout: 0
    end-sl-enforcement
    sl-enforcement
        programs: ior
    end-sl-enforcement
    sl-enforcement
        mode: audit
    end-sl-enforcement
    sl-enforcement
        mode: enforce
    end-sl-enforcement
)"));
    // Lines count from the policy's first line: withHostSched puts 7 lines before the body.
    CHECK(c.codes() ==
          std::vector<std::string>{"value-range", "value-range", "value-range", "missing-field"});
    CHECK(c.lines() == std::vector<uint32_t>{10, 11, 12, 14});
    CHECK(c.codes(Severity::Warning) == std::vector<std::string>{"unused-enforcement"});
    CHECK(c.lines(Severity::Warning) == std::vector<uint32_t>{20});
}
