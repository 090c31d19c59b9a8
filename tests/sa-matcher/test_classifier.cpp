// SPDX-License-Identifier: MIT
// The compiled classifier against OpenSM's rule-by-rule scan, on random fabrics, policies and
// requests; and the matching semantics a user relies on, on the sample fabric.
#include <catch2/catch.hpp>

#include <random>

#include "fabric/partitions.hpp"
#include "sa-matcher/classifier.hpp"
#include "sa-matcher/reference_match.hpp"
#include "tests/sa-matcher/matcher_fixture.hpp"

using namespace ibqos;
using test::LabFixture;

namespace {

// A small fabric of random shape: switches (port 0 an endpoint), CAs with one or two ports
// (some unlinked), routers; GUIDs close together so that random GUID ranges hit them.
Fabric randomFabric(std::mt19937_64& rng) {
    Fabric f;
    auto pick = [&rng](uint64_t n) { return rng() % n; };
    uint32_t switches = 1 + static_cast<uint32_t>(pick(3));
    std::vector<uint32_t> freePorts;
    uint64_t guid = 0x100;
    for (uint32_t s = 0; s < switches; ++s) {
        uint32_t node = f.addNode(NodeType::Switch, guid, "sw" + std::to_string(s), 8);
        guid += 1 + pick(3);
        for (unsigned n = 1; n <= 8; ++n) freePorts.push_back(f.nodes[node].firstPort + n);
        if (s > 0) {
            f.link(f.nodes[node].firstPort + 8, f.nodes[node - 1].firstPort + 7);
            freePorts.erase(
                std::find(freePorts.begin(), freePorts.end(), f.nodes[node].firstPort + 8));
            freePorts.erase(
                std::find(freePorts.begin(), freePorts.end(), f.nodes[node - 1].firstPort + 7));
        }
    }
    uint32_t hosts = 3 + static_cast<uint32_t>(pick(10));
    for (uint32_t h = 0; h < hosts && !freePorts.empty(); ++h) {
        NodeType type = pick(6) == 0 ? NodeType::Router : NodeType::Ca;
        uint8_t ports = static_cast<uint8_t>(1 + pick(2));
        uint32_t node = f.addNode(type, guid, "host" + std::to_string(h), ports);
        guid += ports + 1 + pick(2);
        for (unsigned n = 1; n <= ports && !freePorts.empty(); ++n) {
            if (pick(5) == 0) continue;  // a port whose link is down
            size_t i = pick(freePorts.size());
            f.link(f.nodes[node].firstPort + n - 1, freePorts[i]);
            freePorts.erase(freePorts.begin() + static_cast<ptrdiff_t>(i));
        }
    }
    uint16_t lid = 1;
    for (FabricPort& p : f.ports) {
        if (f.nodes[p.node].type != NodeType::Switch || p.number == 0) p.lid = lid++;
    }
    f.index();
    if (!f.endpoints().empty() && pick(2)) f.smPort = f.endpoints()[pick(f.endpoints().size())];
    Diagnostics d;
    readPartitions(nullptr, f, d);
    for (uint16_t pkey : {0x0001, 0x0002, 0x0003}) {
        Partition p;
        p.name = "p" + std::to_string(pkey);
        p.pkey = pkey;
        for (uint32_t e : f.endpoints()) {
            if (pick(2)) p.members.push_back({e, pick(2) == 0});
        }
        f.partitions.push_back(p);
    }
    return f;
}

RangeSet randomRanges(std::mt19937_64& rng, uint64_t span, unsigned most) {
    std::vector<Range> ranges;
    unsigned n = static_cast<unsigned>(rng() % (most + 1));
    for (unsigned i = 0; i < n; ++i) {
        uint64_t lo = rng() % span;
        ranges.push_back({lo, lo + rng() % 6});
    }
    if (n && rng() % 8 == 0) ranges.push_back({UINT64_MAX - rng() % 4, UINT64_MAX});  // the top
    return RangeSet::build(std::move(ranges));
}

// A policy of random groups (node types, GUID ranges, partitions, PKeys, SELF) and rules
// (any mix of sources, destinations, QoS classes, ServiceIDs and PKeys), bound to the fabric.
struct RandomPolicy {
    Policy policy;
    BoundPolicy bound;
    Diagnostics diagnostics;

    // The first `decoys` rules also need QoS class 4000, which no random request has: the
    // answers then come from rules far down the list.
    RandomPolicy(std::mt19937_64& rng, const Fabric& fabric, size_t rules, size_t decoys = 0) {
        auto pick = [&rng](uint64_t n) { return rng() % n; };
        size_t groups = 1 + pick(6);
        for (size_t g = 0; g < groups; ++g) {
            PortGroup group;
            group.name = "g" + std::to_string(g);
            for (NodeType t : {NodeType::Ca, NodeType::Switch, NodeType::Router}) {
                if (pick(5) == 0) group.nodeTypes |= nodeTypeBit(t);
            }
            for (unsigned i = pick(3); i > 0; --i) {
                uint64_t lo = 0x100 + pick(60);
                const Range guids{lo, lo + pick(8)};
                group.guidRanges.push_back({guids, {}, guids});
            }
            if (pick(4) == 0) {
                std::string name = "p" + std::to_string(1 + pick(3));
                group.partitions.push_back({name, name, {}});
            }
            if (pick(4) == 0) {
                const Range pkeys{1 + pick(3), 3};
                group.pkeyRanges.push_back({pkeys, {}, pkeys});
            }
            group.self = pick(6) == 0;
            policy.groups.push_back(group);
        }
        for (uint8_t sl = 0; sl < 4; ++sl) {
            QosLevel level;
            level.name = "l" + std::to_string(sl);
            level.sl = sl;
            policy.levels.push_back(level);
        }
        policy.defaultLevel = 0;
        policy.hasDefaultLevel = true;
        for (size_t r = 0; r < rules; ++r) {
            MatchRule rule;
            for (unsigned i = pick(3); i > 0; --i)
                rule.sources.push_back(static_cast<uint32_t>(pick(groups)));
            for (unsigned i = pick(3); i > 0; --i)
                rule.destinations.push_back(static_cast<uint32_t>(pick(groups)));
            if (pick(2)) rule.qosClasses = randomRanges(rng, 40, 2);
            if (pick(2)) rule.serviceIds = randomRanges(rng, 50, 3);
            if (pick(3) == 0) rule.pkeys = randomRanges(rng, 10, 2);
            rule.level = static_cast<uint32_t>(pick(policy.levels.size()));
            policy.rules.push_back(rule);
        }
        for (size_t r = 0; r < decoys && r < rules; ++r)
            policy.rules[r].qosClasses = RangeSet{{4000, 4000}};
        // QoS classes have 12 bits and PKeys 15: keep what a real policy can hold.
        for (MatchRule& rule : policy.rules) {
            std::vector<Range> q, p;
            for (Range x : rule.qosClasses.ranges()) {
                if (x.lo < 4096) q.push_back({x.lo, std::min<uint64_t>(x.hi, 4095)});
            }
            for (Range x : rule.pkeys.ranges()) {
                if (x.lo < 0x8000) p.push_back({x.lo, std::min<uint64_t>(x.hi, 0x7fff)});
            }
            rule.qosClasses = RangeSet::build(q);
            rule.pkeys = RangeSet::build(p);
        }
        policy.firstUlpRule = policy.rules.size();
        bound = bindPolicy(policy, fabric, diagnostics);
    }
};

PathQuery randomQuery(std::mt19937_64& rng, const Fabric& fabric) {
    auto pick = [&rng](uint64_t n) { return rng() % n; };
    PathQuery q;
    // Any port, not only endpoints: the classifier must agree everywhere.
    q.source = static_cast<uint32_t>(pick(fabric.ports.size()));
    q.destination = pick(3) == 0 ? q.source : static_cast<uint32_t>(pick(fabric.ports.size()));
    if (pick(4)) q.qosClass = static_cast<uint16_t>(pick(5) == 0 ? 4095 - pick(2) : pick(48));
    if (pick(4)) q.serviceId = pick(8) == 0 ? UINT64_MAX - pick(5) : pick(60);
    if (pick(3)) q.pkey = static_cast<uint16_t>(pick(13) | (pick(2) ? 0x8000 : 0));
    return q;
}

}  // namespace

TEST_CASE("the classifier answers as OpenSM's rule scan on random policies and requests",
          "[sa-matcher][property]") {
    std::mt19937_64 rng(20240611);
    size_t compared = 0, byRule = 0;
    for (int round = 0; round < 1500; ++round) {
        Fabric fabric = randomFabric(rng);
        RandomPolicy p(rng, fabric, rng() % 40);
        Classifier classifier(p.bound);
        for (int i = 0; i < 40; ++i) {
            PathQuery q = randomQuery(rng, fabric);
            QosMatch expected = referenceMatch(p.bound, q);
            QosMatch got = classifier.match(q);
            if (got != expected) {
                FAIL_CHECK("round " << round << " query " << i << ": rule " << got.rule
                                    << " instead of " << expected.rule);
            }
            ++compared;
            byRule += expected.rule != NoRule;
        }
    }
    CHECK(compared == 60000);
    // The random requests must exercise both outcomes, or the comparison proves little.
    CHECK(byRule > compared / 5);
    CHECK(byRule < compared * 4 / 5);
}

TEST_CASE("the classifier agrees past 4096 rules, where its summaries take several words",
          "[sa-matcher][property]") {
    std::mt19937_64 rng(77);
    size_t late = 0;
    for (int round = 0; round < 6; ++round) {
        Fabric fabric = randomFabric(rng);
        size_t rules = 5000 + rng() % 9000;
        RandomPolicy p(rng, fabric, rules, rules - 300 - rng() % 2000);
        Classifier classifier(p.bound);
        for (int i = 0; i < 500; ++i) {
            PathQuery q = randomQuery(rng, fabric);
            QosMatch expected = referenceMatch(p.bound, q);
            REQUIRE(classifier.match(q) == expected);
            late += expected.rule != NoRule && expected.rule >= 4096;
        }
    }
    CHECK(late > 1000);  // answers from the second summary word on
}

TEST_CASE("a policy without rules gives every request the default level",
          "[sa-matcher][classifier]") {
    LabFixture lab("qos-ulps\n    default : 3\nend-qos-ulps\n");
    Classifier c(lab.bound);
    QosMatch m = c.match(lab.query("node-01 HCA-1/P1", "node-02 HCA-1/P1"));
    CHECK(m.rule == NoRule);
    CHECK(lab.policy().levels[m.level].sl == 3);
}

TEST_CASE("a rule naming a field never matches a request without it", "[sa-matcher][classifier]") {
    LabFixture lab(test::levels({{"default", 0}, {"classy", 4}}) + R"(
qos-match-rules
    qos-match-rule
        qos-class: 0-4095
        qos-level-name: classy
    end-qos-match-rule
end-qos-match-rules
)");
    Classifier c(lab.bound);
    PathQuery q = lab.query("node-01 HCA-1/P1", "node-02 HCA-1/P1");
    CHECK(c.match(q).rule == NoRule);  // every QoS class would match, but there is none
    q.qosClass = 4095;
    CHECK(c.match(q).rule == 0);
}

TEST_CASE("a rule with sources and destinations needs both ends in them",
          "[sa-matcher][classifier]") {
    LabFixture lab(R"(
port-groups
    port-group
        name: computes
        port-name: "node-01 HCA-1/P1", "node-02 HCA-1/P1"
    end-port-group
    port-group
        name: storage
        port-guid: 0x100009, 0x10000a
    end-port-group
end-port-groups
)" + test::levels({{"default", 0}, {"to-storage", 2}, {"from-storage", 3}}) +
                   R"(
qos-match-rules
    qos-match-rule
        source: computes
        destination: storage
        qos-level-name: to-storage
    end-qos-match-rule
    qos-match-rule
        source: storage
        qos-level-name: from-storage
    end-qos-match-rule
end-qos-match-rules
)");
    Classifier c(lab.bound);
    auto sl = [&](const char* from, const char* to) { return lab.sl(c, from, to); };
    CHECK(sl("node-01 HCA-1/P1", "storage-01 HCA-1/P1") == 2);
    CHECK(sl("node-01 HCA-1/P1", "storage-01 HCA-1/P2") == 2);  // 0x10000a: the second port
    CHECK(sl("node-01 HCA-1/P1", "node-02 HCA-1/P1") == 0);     // destination not storage
    CHECK(sl("node-03 HCA-1/P1", "storage-01 HCA-1/P1") == 0);  // source not a compute
    CHECK(sl("storage-01 HCA-1/P2", "node-03 HCA-1/P1") == 3);  // source only
}

TEST_CASE("a switch is in a group through its port 0, and node types count",
          "[sa-matcher][classifier]") {
    LabFixture lab(R"(
port-groups
    port-group
        name: spine
        port-guid: 0x200000
    end-port-group
    port-group
        name: routers-and-sm
        node-type: ROUTER, SELF
    end-port-group
end-port-groups
)" + test::levels({{"default", 0}, {"management", 7}, {"gateway", 6}}) +
                   R"(
qos-match-rules
    qos-match-rule
        destination: spine
        qos-level-name: management
    end-qos-match-rule
    qos-match-rule
        source: routers-and-sm
        qos-level-name: gateway
    end-qos-match-rule
end-qos-match-rules
)");
    Classifier c(lab.bound);
    auto sl = [&](const char* from, const char* to) { return lab.sl(c, from, to); };
    CHECK(sl("node-01 HCA-1/P1", "spine-01/P0") == 7);
    CHECK(sl("node-01 HCA-1/P1", "2") == 7);  // the spine's LID
    CHECK(sl("node-01 HCA-1/P1", "leaf-01/P0") == 0);
    CHECK(sl("gw-01/P1", "node-01 HCA-1/P1") == 6);
    CHECK(sl("sm-01 HCA-1/P1", "node-01 HCA-1/P1") == 6);  // SELF: the SM's port
    CHECK(sl("node-02 HCA-1/P1", "node-01 HCA-1/P1") == 0);
}

TEST_CASE("the first matching rule wins, and qos-ulps lines come after every match rule",
          "[sa-matcher][classifier]") {
    LabFixture lab(R"(
qos-ulps
    default : 0
    any, service-id 0x100-0x1ff : 5
end-qos-ulps
)" + test::levels({{"narrow", 1}, {"wide", 2}}) +
                   R"(
qos-match-rules
    qos-match-rule
        service-id: 0x150
        qos-level-name: narrow
    end-qos-match-rule
    qos-match-rule
        service-id: 0x140-0x160
        qos-level-name: wide
    end-qos-match-rule
end-qos-match-rules
)");
    Classifier c(lab.bound);
    PathQuery q = lab.query("node-01 HCA-1/P1", "node-02 HCA-1/P1");
    auto slFor = [&](uint64_t sid) {
        q.serviceId = sid;
        return lab.policy().levels[c.match(q).level].sl;
    };
    CHECK(slFor(0x150) == 1);
    CHECK(slFor(0x151) == 2);
    CHECK(slFor(0x100) == 5);  // the qos-ulps line, written first, is tried last
    CHECK(slFor(0x200) == 0);
}
