// SPDX-License-Identifier: MIT
// Unit tests of compilePolicy: values, names, the default level, qos-ulps lowering, shadowing.
#include <catch2/catch.hpp>

#include "tests/policy_text.hpp"

using namespace ibqos;
using test::Compiled;

namespace {

const char* const levels = R"(
qos-levels
    qos-level
        name: default
        sl: 0
    end-qos-level
    qos-level
        name: gold
        sl: 5
        mtu-limit: 4
        rate-limit: 7
        packet-life: 12
        pkey: 0x8001, 0x0005-0x0003
    end-qos-level
end-qos-levels
)";

const MatchRule& onlyUlpRule(const Policy& p) {
    REQUIRE(p.rules.size() == 1);
    REQUIRE(p.rules[0].fromUlps);
    return p.rules[0];
}

}  // namespace

TEST_CASE("a level keeps every value, PKeys without the membership bit", "[compiler][levels]") {
    Compiled c(levels);
    REQUIRE(c.codes().empty());
    REQUIRE(c.policy.levels.size() == 2);
    const QosLevel& gold = c.policy.levels[1];
    CHECK(gold.sl == 5);
    CHECK(gold.mtuLimit == 4);
    CHECK(gold.rateLimit == 7);
    CHECK(gold.packetLife == 12);
    CHECK(gold.pkeys.ranges() == std::vector<Range>{{1, 1}, {3, 5}});
    CHECK(c.policy.defaultLevel == 0);
}

TEST_CASE(
    "sl above 15 and packet-life above 63 are errors OpenSM lets through, kept as it reads them",
    "[compiler][levels]") {
    Compiled c(
        "qos-levels\n qos-level\n  name: default\n  sl: 289\n  packet-life: 64\n "
        "end-qos-level\nend-qos-levels\n");
    CHECK(c.codes() == std::vector<std::string>{"value-range", "value-range"});
    CHECK(c.lines() == std::vector<uint32_t>{4, 5});
    CHECK_FALSE(c.diagnostics.openSmRejects());
    // OpenSM keeps both in 8 bits; its SA answers SL 289 & 0xff = 33 as 33 & 15 = 1.
    REQUIRE(c.policy.levels.size() == 1);
    CHECK(c.policy.levels[0].sl == 33);
    CHECK(answeredSl(33) == 1);
    CHECK_FALSE(answeredSl(16).has_value());
    CHECK(c.policy.levels[0].packetLife == 64);
}

TEST_CASE("each error says whether a stock OpenSM drops the policy for it too",
          "[compiler][opensm]") {
    const std::string level = "qos-levels\n qos-level\n  name: default\n  sl: 1\n end-qos-level\n";
    struct Case {
        std::string text;
        bool openSmRejects;
    };
    const Case cases[] = {
        // OpenSM's own checks: syntax, ranges it tests, references, the default level.
        {level + "  mtu-limit: 7\nend-qos-levels\n", true},
        {level + "end-qos-levels\nqos-match-rules\n qos-match-rule\n  qos-level-name: gold\n"
                 " end-qos-match-rule\nend-qos-match-rules\n",
         true},
        {"qos-levels\nend-qos-levels\n", true},
        {level + "end-qos-levels\nqos-ulps\n sdp : 16\nend-qos-ulps\n", true},
        {level + "end-qos-levels\nport-groups\nend-port-groups\n", true},  // a warning here
        // Only ibqos's: duplicates, qos-setup's values and names, the extensions.
        {level + " qos-level\n  name: DEFAULT\n  sl: 2\n end-qos-level\nend-qos-levels\n", false},
        {level + "end-qos-levels\nqos-setup\n vlarb-tables\n  vlarb-scope\n   group: nowhere\n"
                 "   vlarb-high: 0:300\n  end-vlarb-scope\n end-vlarb-tables\nend-qos-setup\n",
         false},
        {level + "end-qos-levels\nhost-sched\n sched-leaf\n  name: a\n  sl: 3\n  parent: b\n"
                 " end-sched-leaf\nend-host-sched\n",
         false},
    };
    for (const Case& k : cases) {
        Compiled c(k.text);
        INFO(k.text);
        CHECK(c.diagnostics.openSmRejects() == k.openSmRejects);
        CHECK((c.diagnostics.hasErrors() || c.diagnostics.warningCount() > 0));
    }
}

TEST_CASE("qos-setup with an error OpenSM does not check is not applied at all, as in OpenSM",
          "[compiler][qos-setup]") {
    const std::string policy = std::string(levels) +
                               "port-groups\n port-group\n  name: all\n  node-type: ALL\n"
                               " end-port-group\nend-port-groups\nqos-setup\n vlarb-tables\n"
                               "  vlarb-scope\n   group: all\n   vlarb-high: 0:64\n"
                               "  end-vlarb-scope\n  vlarb-scope\n   group: all\n";
    Compiled good(policy +
                  "   vlarb-low: 1:64\n  end-vlarb-scope\n end-vlarb-tables\nend-qos-setup\n");
    REQUIRE_FALSE(good.diagnostics.hasErrors());
    CHECK(good.policy.vlarbScopes.size() == 2);
    Compiled bad(policy +
                 "   vlarb-low: 15:64\n  end-vlarb-scope\n end-vlarb-tables\nend-qos-setup\n");
    CHECK(bad.codes() == std::vector<std::string>{"value-range"});
    CHECK_FALSE(bad.diagnostics.openSmRejects());
    CHECK(bad.policy.qosSetupIgnored);
    CHECK(bad.policy.vlarbScopes.empty());
}

TEST_CASE("level and group names resolve case-insensitively; duplicates are errors",
          "[compiler][names]") {
    Compiled c(std::string(levels) + R"(
port-groups
    port-group
        name: Hosts
        node-type: CA
    end-port-group
end-port-groups
qos-match-rules
    qos-match-rule
        source: HOSTS
        qos-level-name: GOLD
    end-qos-match-rule
end-qos-match-rules
)");
    REQUIRE(c.codes().empty());
    REQUIRE(c.policy.rules.size() == 1);
    CHECK(c.policy.rules[0].level == 1);
    CHECK(c.policy.rules[0].sources == std::vector<uint32_t>{0});

    Compiled dup(std::string(levels) +
                 "qos-levels\n qos-level\n  name: Gold\n  sl: 1\n end-qos-level\nend-qos-levels\n");
    CHECK(dup.codes() == std::vector<std::string>{"duplicate-name"});
}

TEST_CASE("the default level is the qos-level named default, else the qos-ulps default",
          "[compiler][default]") {
    Compiled ulpsOnly("qos-ulps\n default : 3\nend-qos-ulps\n");
    REQUIRE(ulpsOnly.codes().empty());
    CHECK(ulpsOnly.policy.levels[ulpsOnly.policy.defaultLevel].sl == 3);

    Compiled both(std::string(levels) + "qos-ulps\n default : 3\nend-qos-ulps\n");
    // gold is named by no rule: no request gets it, on any fabric.
    CHECK(both.codes(Severity::Warning) ==
          std::vector<std::string>{"unused-level", "default-shadowed"});
    CHECK(both.policy.levels[both.policy.defaultLevel].name == "default");

    Compiled none("qos-levels\n qos-level\n  name: x\n  sl: 1\n end-qos-level\nend-qos-levels\n");
    CHECK(none.codes() == std::vector<std::string>{"missing-default"});
}

TEST_CASE("qos-ulps lines become rules after every qos-match-rule, wherever they stand",
          "[compiler][ulps]") {
    Compiled c(std::string("qos-ulps\n sdp : 2\nend-qos-ulps\n") + levels +
               "qos-match-rules\n qos-match-rule\n  qos-class: 1\n  qos-level-name: gold\n "
               "end-qos-match-rule\nend-qos-match-rules\n");
    REQUIRE(c.codes().empty());
    REQUIRE(c.policy.rules.size() == 2);
    CHECK_FALSE(c.policy.rules[0].fromUlps);
    CHECK(c.policy.rules[1].fromUlps);
    CHECK(c.policy.firstUlpRule == 1);
    CHECK(c.policy.levels[c.policy.rules[1].level].sl == 2);
}

TEST_CASE("the storage ULP words are the ServiceIDs of their RDMA-CM ports, as iser is",
          "[compiler][ulps]") {
    auto ulp = [](const std::string& line) {
        return std::make_unique<Compiled>("qos-ulps\n default : 0\n " + line + "\nend-qos-ulps\n");
    };
    // RDMA_PS_TCP (0x0106) << 16 | port, the kernel's cma_get_service_id().
    const std::pair<const char*, uint64_t> words[] = {
        {"nfs-rdma : 2", 0x0106ull << 16 | 20049},
        {"LUSTRE : 3", 0x0106ull << 16 | 987},
        {"Nvme-Rdma : 4", 0x0106ull << 16 | 4420},
        {"iser : 6", 0x0106ull << 16 | 3260},
    };
    for (const auto& [line, id] : words) {
        auto c = ulp(line);
        CAPTURE(line);
        CHECK(c->codes().empty());
        CHECK(c->codes(Severity::Warning).empty());
        const MatchRule& r = onlyUlpRule(c->policy);
        CHECK(r.serviceIds.ranges() == std::vector<Range>{{id, id}});
        CHECK(r.qosClasses.empty());
        CHECK(r.pkeys.empty());
        CHECK(r.sources.empty());
        CHECK(r.destinations.empty());
    }
    auto bad = ulp("lustre, port-num 988 : 3");
    CHECK(bad->codes() == std::vector<std::string>{"ulp-form"});
}

TEST_CASE("a match rule whose qos-class holds 0 is warned about, once", "[compiler][rules]") {
    auto rule = [](const std::string& fields) {
        return std::make_unique<Compiled>(std::string(levels) +
                                          "qos-match-rules\n qos-match-rule\n" + fields +
                                          "  qos-level-name: gold\n end-qos-match-rule\n"
                                          "end-qos-match-rules\n");
    };
    const Severity w = Severity::Warning;
    CHECK(rule("  qos-class: 0\n")->codes(w) == std::vector<std::string>{"qos-class-zero"});
    CHECK(rule("  qos-class: 3-0, 0\n  qos-class: 0\n")->codes(w) ==
          std::vector<std::string>{"qos-class-zero"});
    CHECK(rule("  qos-class: 1-7\n")->codes(w).empty());
    CHECK(rule("  service-id: 0x1064e51\n")->codes(w).empty());
}

TEST_CASE("each qos-ulps form matches what OpenSM's parser builds", "[compiler][ulps]") {
    auto ulp = [](const std::string& line) {
        return std::make_unique<Compiled>("qos-ulps\n default : 0\n " + line + "\nend-qos-ulps\n");
    };
    {
        auto c = ulp("sdp : 1");
        CHECK(onlyUlpRule(c->policy).serviceIds.ranges() == std::vector<Range>{{0x10000, 0x1ffff}});
    }
    {
        auto c = ulp("sdp, port-num 30000, 10-20 : 1");
        CHECK(onlyUlpRule(c->policy).serviceIds.ranges() ==
              std::vector<Range>{{0x10000 + 10, 0x10000 + 20}, {0x10000 + 30000, 0x10000 + 30000}});
    }
    {
        auto c = ulp("rds : 2");
        CHECK(onlyUlpRule(c->policy).serviceIds.ranges() ==
              std::vector<Range>{{0x10648ca, 0x10648ca}});
    }
    {
        auto c = ulp("iser : 3");
        CHECK(onlyUlpRule(c->policy).serviceIds.ranges() ==
              std::vector<Range>{{0x1060cbc, 0x1060cbc}});
    }
    {
        auto c = ulp("iser, port-num 900 : 3");
        CHECK(onlyUlpRule(c->policy).serviceIds.ranges() ==
              std::vector<Range>{{0x1060000 + 900, 0x1060000 + 900}});
    }
    {
        auto c = ulp("ipoib : 4");
        const MatchRule& r = onlyUlpRule(c->policy);
        CHECK(r.pkeys.ranges() == std::vector<Range>{{0x7fff, 0x7fff}});
        CHECK(r.ipoib);
    }
    {
        auto c = ulp("ipoib, pkey 0x8001 : 4");
        CHECK(onlyUlpRule(c->policy).pkeys.ranges() == std::vector<Range>{{1, 1}});
    }
    {
        auto c = ulp("any, service-id 0x6234 : 6");
        CHECK(onlyUlpRule(c->policy).serviceIds.ranges() == std::vector<Range>{{0x6234, 0x6234}});
    }
    {
        auto c = ulp("srp, target-port-guid 0x1234 : 5");
        const MatchRule& r = onlyUlpRule(c->policy);
        REQUIRE(r.destinations.size() == 1);
        CHECK(r.sources.empty());
        CHECK(c->policy.groups[r.destinations[0]].guids.ranges() ==
              std::vector<Range>{{0x1234, 0x1234}});
        CHECK(c->policy.groups[r.destinations[0]].origin == GroupOrigin::SrpTargets);
    }
    {
        auto c = ulp("any, source-port-guid 0x5678 : 7");
        const MatchRule& r = onlyUlpRule(c->policy);
        CHECK(r.sources.size() == 1);
        CHECK(r.destinations.empty());
    }
    {
        auto c = ulp("any, source-target-port-guid 0x9abcd : 8");
        const MatchRule& r = onlyUlpRule(c->policy);
        REQUIRE(r.sources.size() == 1);
        CHECK(r.sources == r.destinations);  // the port must be both source and destination
    }
    {
        auto c = ulp("any, target-port-guid 0x0ABC-0xFFFFF : 6");
        const MatchRule& r = onlyUlpRule(c->policy);
        CHECK(c->policy.levels[r.level].sl == 6);
        CHECK(c->policy.levels[r.level].generated);
    }
}

TEST_CASE("ULP forms OpenSM does not define are errors", "[compiler][ulps]") {
    Compiled c(
        "qos-ulps\n default : 0\n srp : 3\n any : 1\n sdp, pkey 1 : 1\n rds, port-num 65536 : "
        "1\nend-qos-ulps\n");
    CHECK(c.codes() == std::vector<std::string>{"ulp-form", "ulp-form", "ulp-form", "value-range"});
    CHECK(c.policy.rules.empty());
}

TEST_CASE("a rule covered by an earlier one is a shadowed-rule warning", "[compiler][shadowing]") {
    Compiled c(std::string(levels) + R"(
port-groups
    port-group
        name: hosts
        node-type: CA
        port-guid: 0x10-0x20
    end-port-group
    port-group
        name: few
        port-guid: 0x12
    end-port-group
end-port-groups
qos-match-rules
    qos-match-rule
        destination: hosts
        service-id: 0x100-0x200
        qos-level-name: gold
    end-qos-match-rule
    qos-match-rule
        destination: few
        service-id: 0x150
        qos-class: 4
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        destination: few
        qos-level-name: default
    end-qos-match-rule
end-qos-match-rules
)");
    CHECK(c.codes().empty());
    CHECK(c.codes(Severity::Warning) == std::vector<std::string>{"shadowed-rule"});
    CHECK(c.lines(Severity::Warning).size() == 1);
}

TEST_CASE("a qos-ulps line after a broader one never matches", "[compiler][shadowing]") {
    Compiled shadowed("qos-ulps\n default : 0\n sdp : 1\n sdp, port-num 30000 : 2\nend-qos-ulps\n");
    CHECK(shadowed.codes(Severity::Warning) == std::vector<std::string>{"shadowed-rule"});
    Compiled fine("qos-ulps\n default : 0\n sdp, port-num 30000 : 2\n sdp : 1\nend-qos-ulps\n");
    CHECK(fine.codes(Severity::Warning).empty());
}

TEST_CASE("an undefined name is an error", "[compiler][names]") {
    Compiled c(std::string(levels) + R"(
port-groups
    port-group
        name: servers
        node-type: CA
    end-port-group
end-port-groups
qos-match-rules
    qos-match-rule
        source: nowhere
        qos-level-name: silver
    end-qos-match-rule
end-qos-match-rules
)");
    REQUIRE(c.codes() == std::vector<std::string>{"undefined-group", "undefined-level"});
    CHECK(c.diagnostics.all()[0].openSmRejects);
    CHECK(c.policy.rules.empty());  // the broken rule is not kept
}

TEST_CASE("a name resolves as OpenSM reads it, blanks outside quotes dropped, with a warning",
          "[compiler][names]") {
    Compiled c(std::string(levels) + R"(
port-groups
    port-group
        name: Virtual Servers
        node-type: CA
    end-port-group
end-port-groups
qos-match-rules
    qos-match-rule
        source: VirtualServers
        destination: "virtualservers"
        qos-level-name: Go ld
    end-qos-match-rule
end-qos-match-rules
)");
    // OpenSM reads the definition and both references as "VirtualServers" and the level as
    // "Gold": it puts the policy in force, so ibqos does, with the same meaning.
    CHECK(c.diagnostics.errorCount() == 0);
    CHECK(c.codes(Severity::Warning) ==
          std::vector<std::string>{"name-blanks", "name-blanks", "name-blanks"});
    REQUIRE(c.policy.rules.size() == 1);
    CHECK(c.policy.rules[0].sources == std::vector<uint32_t>{0});
    CHECK(c.policy.rules[0].destinations == std::vector<uint32_t>{0});
    CHECK(c.policy.levels[c.policy.rules[0].level].name == "gold");
}

TEST_CASE("a quoted name with a blank is not found by an unquoted reference, as in OpenSM",
          "[compiler][names]") {
    Compiled c(std::string(levels) + R"(
port-groups
    port-group
        name: "Web Servers"
        node-type: CA
    end-port-group
end-port-groups
qos-match-rules
    qos-match-rule
        source: Web Servers
        qos-level-name: gold
    end-qos-match-rule
end-qos-match-rules
)");
    // OpenSM reads the reference as "WebServers" and finds no such group: it drops the file.
    REQUIRE(c.codes() == std::vector<std::string>{"undefined-group"});
    const Diagnostic& d = c.diagnostics.all()[0];
    CHECK(d.openSmRejects);
    CHECK(d.message.find("quote it") != std::string::npos);
}

TEST_CASE("a quoted reference to an unquoted name with a blank asks to quote the definition",
          "[compiler][names]") {
    Compiled c(std::string(levels) + R"(
port-groups
    port-group
        name: gpu hosts
        node-type: CA
    end-port-group
end-port-groups
qos-match-rules
    qos-match-rule
        source: "gpu hosts"
        qos-level-name: gold
    end-qos-match-rule
end-qos-match-rules
)");
    // OpenSM reads the definition as "gpuhosts" and the reference as "gpu hosts".
    REQUIRE(c.codes() == std::vector<std::string>{"undefined-group"});
    const std::string& message = c.diagnostics.all()[0].message;
    CHECK(message.find("OpenSM reads it 'gpuhosts'") != std::string::npos);
    CHECK(message.find("quote the definition") != std::string::npos);
    CHECK(message.find("quote it:") == std::string::npos);
}

TEST_CASE("a leading 0 is warned about only where octal and decimal readings differ",
          "[compiler][numbers]") {
    for (const auto& [value, warned] :
         {std::pair{"05", false}, std::pair{"07", false}, std::pair{"010", true}}) {
        INFO(value);
        Compiled c(std::string("qos-levels\n  qos-level\n    name: default\n    sl: 0\n"
                               "    mtu-limit: ") +
                   value + "\n  end-qos-level\nend-qos-levels\n");
        CHECK(c.codes(Severity::Warning) ==
              (warned ? std::vector<std::string>{"octal-number"} : std::vector<std::string>{}));
    }
}

TEST_CASE("two names that differ only in blanks are one name to OpenSM", "[compiler][names]") {
    Compiled c(std::string(levels) + R"(
port-groups
    port-group
        name: ab
        node-type: CA
    end-port-group
    port-group
        name: a b
        node-type: SWITCH
    end-port-group
end-port-groups
qos-match-rules
    qos-match-rule
        source: a b
        qos-level-name: gold
    end-qos-match-rule
end-qos-match-rules
)");
    // A duplicate OpenSM lets through (it uses the first): the reference means "ab".
    CHECK(c.codes(Severity::Error) == std::vector<std::string>{"duplicate-name"});
    CHECK_FALSE(c.diagnostics.all()[0].openSmRejects);
    REQUIRE(c.policy.rules.size() == 1);
    CHECK(c.policy.rules[0].sources == std::vector<uint32_t>{0});
}

TEST_CASE("a field lost to a syntax error is not also reported as missing",
          "[compiler][recovery]") {
    Compiled c(
        "qos-levels\n qos-level\n  name: default\n  sl: zero\n end-qos-level\nend-qos-levels\n");
    CHECK(c.codes() == std::vector<std::string>{"syntax"});
}

TEST_CASE("qos-setup is read into scopes and warned about", "[compiler][qos-setup]") {
    Compiled c(R"(
port-groups
    port-group
        name: sw
        node-type: SWITCH
    end-port-group
end-port-groups
qos-setup
    vlarb-tables
        vlarb-scope
            group: sw
            vlarb-high: 0:4, 1:8
            vlarb-high: 2:16
            bandwidth: 3:25%, 4:75%
            vl-high-limit: 10
        end-vlarb-scope
    end-vlarb-tables
    sl2vl-tables
        sl2vl-scope
            across-to: sw
            from: 1-3
            sl2vl-table: 0,1,2,3,4,5,6,7,7,7,7,7,7,7,7,15
        end-sl2vl-scope
    end-sl2vl-tables
end-qos-setup
qos-ulps
    default : 0
end-qos-ulps
)");
    REQUIRE(c.codes().empty());
    CHECK(c.codes(Severity::Warning) == std::vector<std::string>{"qos-setup-applied"});
    REQUIRE(c.policy.vlarbScopes.size() == 1);
    const VlArbScope& v = c.policy.vlarbScopes[0];
    CHECK(*v.high == std::vector<VlArbEntry>{{0, 4}, {1, 8}, {2, 16}});
    CHECK(v.bandwidth->size() == 2);
    CHECK(v.highLimit == 10);
    REQUIRE(c.policy.sl2vlScopes.size() == 1);
    const Sl2VlScope& s = c.policy.sl2vlScopes[0];
    CHECK(s.acrossTo == std::vector<uint32_t>{0});
    CHECK(s.from.count() == 3);
    CHECK(s.to.count() == 128);
    CHECK(s.table[15] == 15);
}

TEST_CASE("host-sched maps each SL to one leaf", "[compiler][host-sched]") {
    Compiled c(R"(
qos-ulps
    default : 0
end-qos-ulps
host-sched
    sched-node
        name: tenant
        bw-share: 60
    end-sched-node
    sched-leaf
        name: storage
        parent: tenant
        sl: 3-4
        bw-share: 30
        max-avg-bw: 40000
        pcc-slot: 2
        pcc-algorithm: dcqcn
    end-sched-leaf
end-host-sched
)");
    REQUIRE(c.codes().empty());
    const HostSched& h = c.policy.hostSched;
    REQUIRE(h.leaves.size() == 1);
    CHECK(h.leaves[0].parent == 0);
    CHECK(h.leafOfSl[3] == 0);
    CHECK(h.leafOfSl[4] == 0);
    CHECK(h.leafOfSl[5] == -1);
    CHECK(h.leaves[0].pccSlot == 2);
    CHECK(h.leaves[0].maxAvgBw == 40000);
}
