// SPDX-License-Identifier: MIT
// Dead rules: the shadowed-rule verdicts against brute force over small random policies. The
// brute force builds every port a small fabric could have (each GUID, node type and name the
// policy uses or none of them, any one or two partitions, a PKey or none, the SM's port or
// not) and every request between them with each field value the rules tell apart, and calls
// a rule dead when no request it matches escapes the rules before it.
#include <catch2/catch.hpp>

#include <optional>
#include <random>
#include <set>
#include <string>

#include "common/text.hpp"
#include "compiler/fabric_compilation.hpp"
#include "fabric/partitions.hpp"
#include "fabric/topology.hpp"
#include "policy-space/reachability.hpp"
#include "policy-space/request_space.hpp"
#include "tests/policy_families.hpp"
#include "tests/policy_text.hpp"

using namespace ibqos;
using ibqos::test::Compiled;

namespace {

struct Port {
    uint64_t guid;
    NodeType type;
    int name;  // index into Names, -1: a name no group uses
    std::set<std::string> partitions;
    std::optional<uint64_t> pkey;
    bool self;
};

const char* const Names[] = {"n1", "n2"};
const char* const Partitions[] = {"p1", "p2"};

bool inGroup(const PortGroup& g, const Port& p) {
    if ((g.nodeTypes & nodeTypeBit(p.type)) || (g.self && p.self) || g.guids.contains(p.guid))
        return true;
    for (const PortNameRef& n : g.portNames) {
        if (p.name >= 0 && n.nodeDescription == Names[p.name] &&
            (p.type == NodeType::Switch || n.port == 1))
            return true;
    }
    for (const NameRef& n : g.partitions) {
        if (p.partitions.count(n.name)) return true;
    }
    return p.pkey && g.pkeys.contains(*p.pkey);
}

bool sideMatches(const Policy& policy, const std::vector<uint32_t>& groups, const Port& p) {
    if (groups.empty()) return true;
    for (uint32_t g : groups) {
        if (inGroup(policy.groups[g], p)) return true;
    }
    return false;
}

bool fieldMatches(const RangeSet& set, std::optional<uint64_t> v) {
    return set.empty() || (v && set.contains(*v));
}

std::vector<Port> allPorts() {
    std::vector<Port> out;
    const uint64_t guids[] = {0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x99};
    const std::vector<std::set<std::string>> partitionSets = {{}, {"p1"}, {"p2"}, {"p1", "p2"}};
    const std::optional<uint64_t> pkeys[] = {std::nullopt, 1, 2, 3};
    for (uint64_t guid : guids)
        for (NodeType type : {NodeType::Ca, NodeType::Switch, NodeType::Router})
            for (int name = -1; name < 2; ++name)
                for (const auto& parts : partitionSets)
                    for (auto pkey : pkeys)
                        for (bool self : {false, true})
                            out.push_back({guid, type, name, parts, pkey, self});
    return out;
}

// What random policies name: GUID ranges from base (span wide), port names, partitions and
// PKeys, and whether rules name ServiceIDs and PKeys besides QoS classes.
struct Universe {
    int guidBase, guidSpan;
    std::vector<std::string> names, partitions, pkeys;
    bool allFields;
};

// A random small policy over a universe: groups of one or two selectors, rules over them.
std::string randomPolicy(std::mt19937& rng, const Universe& u) {
    auto pick = [&](size_t n) { return static_cast<int>(rng() % n); };
    auto any = [&](const std::vector<std::string>& list) { return list[pick(list.size())]; };
    std::string text = "port-groups\n";
    const int groups = 2 + pick(4);
    for (int g = 0; g < groups; ++g) {
        text += " port-group\n  name: g" + std::to_string(g) + "\n";
        for (int s = 1 + pick(2); s > 0; --s) {
            const int lo = u.guidBase + pick(static_cast<size_t>(u.guidSpan));
            switch (pick(6)) {
                case 0:
                    text += "  node-type: " + any({"CA", "SWITCH", "ROUTER", "SELF"}) + "\n";
                    break;
                case 1:
                    text += "  port-guid: " + std::to_string(lo) + "-" +
                            std::to_string(lo + pick(4)) + "\n";
                    break;
                case 2:
                    text += "  port-name: " + any(u.names) + "\n";
                    break;
                case 3:
                    text += "  partition: " + any(u.partitions) + "\n";
                    break;
                case 4:
                    text += "  pkey: " + any(u.pkeys) + "\n";
                    break;
                default:
                    text += "  port-guid: " + std::to_string(lo) + "\n";
            }
        }
        text += " end-port-group\n";
    }
    text +=
        "end-port-groups\nqos-levels\n qos-level\n  name: default\n  sl: 0\n end-qos-level\n"
        " qos-level\n  name: gold\n  sl: 1\n end-qos-level\n qos-level\n  name: silver\n"
        "  sl: 2\n end-qos-level\nend-qos-levels\nqos-match-rules\n";
    auto range = [&](int base, size_t span) {
        int lo = base + pick(span);
        return std::to_string(lo) + "-" + std::to_string(lo + pick(3));
    };
    for (int r = 2 + pick(5); r > 0; --r) {
        text += " qos-match-rule\n";
        if (pick(3)) text += "  source: g" + std::to_string(pick(groups)) + "\n";
        if (pick(4) == 0)
            text += "  source: g" + std::to_string(pick(groups)) + "\n";  // a second list line
        if (pick(3)) text += "  destination: g" + std::to_string(pick(groups)) + "\n";
        if (pick(2)) text += "  qos-class: " + range(1, 4) + "\n";
        if (u.allFields && pick(3) == 0) text += "  service-id: " + range(1, 4) + "\n";
        if (u.allFields && pick(3) == 0) text += "  pkey: " + range(1, 3) + "\n";
        text += "  qos-level-name: " + any({"gold", "silver"}) + "\n end-qos-match-rule\n";
    }
    return text + "end-qos-match-rules\n";
}

const Universe Small{0x10, 5, {"n1/P1", "n2/P1"}, {"p1", "p2"}, {"1", "2", "3"}, true};
// The qos-lab fabric's own GUIDs, names and partitions.
const Universe Lab{0x100000,
                   17,
                   {"node-01 HCA-1/P1", "storage-01 HCA-1/P2", "leaf-01/P3", "gw-01/P1"},
                   {"compute", "storage", "lab", "mgmt"},
                   {"0x100", "0x1", "0x7001", "0x2"},
                   false};

// Random policies (every kind of selector; half on Small, half on Lab), then each shape family
// of `familyRules` rules, with and without qos-ulps lines.
std::vector<std::string> mixedPolicies(uint32_t seed, int random, uint32_t familyRules,
                                       uint64_t familySeed) {
    std::mt19937 rng(seed);
    std::vector<std::string> policies;
    for (int round = 0; round < random; ++round)
        policies.push_back(randomPolicy(rng, round % 2 ? Small : Lab));
    for (test::Family family : test::Families) {
        for (bool ulps : {false, true}) {
            test::FamilyPolicy o;
            o.family = family;
            o.rules = familyRules;
            o.ulps = ulps;
            o.seed = familySeed;
            policies.push_back(test::familyPolicy(o));
        }
    }
    return policies;
}

}  // namespace

TEST_CASE("a rule hidden by the union of two earlier rules is dead", "[compiler][shadowing]") {
    Compiled c(R"(
port-groups
    port-group
        name: low
        port-guid: 0x10-0x1f
    end-port-group
    port-group
        name: high
        port-guid: 0x20-0x2f
    end-port-group
    port-group
        name: all
        port-guid: 0x10-0x2f
    end-port-group
end-port-groups
qos-levels
    qos-level
        name: default
        sl: 0
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        source: low
        qos-class: 1-5
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        source: high
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        source: all
        qos-class: 2-3
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        source: all
        qos-class: 2-6
        qos-level-name: default
    end-qos-match-rule
end-qos-match-rules
)");
    REQUIRE(c.codes().empty());
    REQUIRE(c.codes(Severity::Warning) == std::vector<std::string>{"shadowed-rule"});
    const Diagnostic& d = c.diagnostics.all()[0];
    CHECK(d.location.line == 32);
    CHECK(d.message.find("line 23 and the match rule at line 28 together") != std::string::npos);
}

TEST_CASE("a dead rule that one earlier rule holds names that rule alone, though others went first",
          "[compiler][shadowing]") {
    // The last rule's requests with qos-class 5 are held by each of the eight rules before the
    // one at line 55, which alone holds all of them: the judgement takes out the largest of the
    // eight first, then that one, and the warning names that one. (Eight, so that the quick
    // look, which compares the rule whole with the first eight earlier rules that match one of
    // its requests, does not reach the one at line 55.)
    Compiled c(R"(
port-groups
    port-group
        name: a
        port-guid: 0x10-0x17
    end-port-group
    port-group
        name: b
        port-guid: 0x18-0x1f
    end-port-group
    port-group
        name: ab
        port-guid: 0x10-0x1f
    end-port-group
end-port-groups
qos-levels
    qos-level
        name: default
        sl: 0
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        qos-class: 5
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        qos-class: 4-5
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        qos-class: 3-5
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        qos-class: 2-5
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        qos-class: 1-5
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        qos-class: 0-5
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        qos-class: 5,7
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        qos-class: 4-5,8
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        source: a, b
        qos-class: 5-6
        qos-level-name: default
    end-qos-match-rule
    qos-match-rule
        source: ab
        qos-class: 5-6
        qos-level-name: default
    end-qos-match-rule
end-qos-match-rules
)");
    REQUIRE(c.codes().empty());
    // (The rule on qos-class 0-5 is also told that QoS class 0 is every untagged RDMA-CM
    // connection's.)
    REQUIRE(c.codes(Severity::Warning) ==
            std::vector<std::string>{"qos-class-zero", "shadowed-rule"});
    const Diagnostic& d = c.diagnostics.all()[1];
    CHECK(d.location.line == 60);
    CHECK(d.message ==
          "this match rule can never match: the match rule at line 55 matches every request it "
          "does");
}

TEST_CASE("a space too large for the budget is left unbuilt, its rules undecided",
          "[compiler][shadowing]") {
    // 20 groups of 1,000 GUIDs each, 200 rules between them: the point index would hold a
    // group's 1,000 GUIDs again for each rule that names it. Within a budget that cannot pay
    // for that, nothing of the space is built (the budget's count stays at 0), and every rule
    // gets its note; with the budget unlimited, each rule is decided.
    std::string text = "port-groups\n";
    for (int g = 0; g < 20; ++g) {
        text += "    port-group\n        name: g" + std::to_string(g) + "\n";
        for (int line = 0; line < 100; ++line) {
            text += "        port-guid: ";
            for (int k = 0; k < 10; ++k) {
                text += (k ? ", " : "") + hex(0x100000 + 2 * (g * 700 + line * 10 + k));
            }
            text += "\n";
        }
        text += "    end-port-group\n";
    }
    text +=
        "end-port-groups\nqos-levels\n    qos-level\n        name: default\n        sl: 0\n"
        "    end-qos-level\nend-qos-levels\nqos-match-rules\n";
    for (int r = 0; r < 200; ++r) {
        text += "    qos-match-rule\n        source: g" + std::to_string(r % 20) +
                "\n        destination: g" + std::to_string(r / 10 % 20) +
                "\n        qos-class: " + std::to_string(r % 64) +
                "\n        qos-level-name: default\n    end-qos-match-rule\n";
    }
    text += "end-qos-match-rules\n";

    constexpr uint64_t Budget = 500'000;
    Compiled small(text, Budget);
    REQUIRE(small.codes().empty());
    CHECK(small.codes(Severity::Note) == std::vector<std::string>(200, "reachability-undecided"));
    DecisionDiagram dd(Budget);
    CHECK_THROWS_AS(RequestSpace(dd, std::vector<const Policy*>{&small.policy}),
                    AnalysisBudgetSpent);
    CHECK(dd.work() == 0);

    Compiled unlimited(text, 0);
    CHECK(unlimited.codes(Severity::Note).empty());
}

TEST_CASE("every request a rule is tried with matches that rule", "[compiler][shadowing]") {
    // The quick look calls a rule reachable when one of its witnesses escapes the rules before
    // it; that verdict holds only if the rule matches the witness. Random small policies (every
    // kind of selector) and each shape family, every rule, every variant the look tries.
    size_t tried = 0;
    for (const std::string& text : mixedPolicies(20261127, 60, 120, 11)) {
        Compiled c(text, uint64_t{1});  // (the analysis itself is not wanted here)
        REQUIRE(c.codes().empty());
        DecisionDiagram dd(0);
        RequestSpace space(dd, std::vector<const Policy*>{&c.policy});
        for (uint32_t r = 0; r < c.policy.rules.size(); ++r) {
            for (unsigned variant = 0; variant < 8; ++variant) {
                const std::optional<RequestPoint> point = space.witness(0, r, variant);
                if (!point) {
                    // None only for a rule that matches nothing.
                    CHECK(space.rule(0, r) == DecisionDiagram::False);
                    break;
                }
                INFO("rule at line " << c.policy.rules[r].location.line << ", variant " << variant
                                     << "\n"
                                     << text);
                CHECK(space.matches(0, r, *point));
                ++tried;
            }
        }
    }
    CHECK(tried > 10'000);
}

TEST_CASE("the lookups of earlier matching rules equal a scan of every rule",
          "[compiler][shadowing]") {
    // firstMatch, allMatches and largestMatch read bitset indexes (largestMatch first the
    // index of the largest rules, built for 256 rules or more); a plain scan of the rules with
    // matches() and extent() must give the same rules. Each family at 400 rules and random
    // policies, at the witnesses of every third rule.
    size_t looked = 0, largestNotFirst = 0;
    for (const std::string& text : mixedPolicies(20261129, 10, 400, 13)) {
        Compiled c(text, uint64_t{1});
        REQUIRE(c.codes().empty());
        DecisionDiagram dd(0);
        RequestSpace space(dd, std::vector<const Policy*>{&c.policy});
        RequestSpace::LookupRoom room;
        const auto n = static_cast<uint32_t>(c.policy.rules.size());
        for (uint32_t r = 0; r < n; r += 3) {
            for (unsigned variant = 0; variant < 2; ++variant) {
                const std::optional<RequestPoint> point = space.witness(0, r, variant);
                if (!point) break;
                for (uint32_t before : {r, n}) {
                    std::vector<uint32_t> all;
                    std::optional<uint32_t> largest;
                    for (uint32_t i = 0; i < before; ++i) {
                        if (!space.matches(0, i, *point)) continue;
                        all.push_back(i);
                        if (!largest || space.extent(0, i) > space.extent(0, *largest)) largest = i;
                    }
                    INFO("rule at line " << c.policy.rules[r].location.line << ", variant "
                                         << variant << ", rules below " << before << "\n"
                                         << text);
                    CHECK(space.allMatches(0, *point, before, room) == all);
                    CHECK(space.firstMatch(0, *point, before, room) ==
                          (all.empty() ? std::nullopt : std::optional<uint32_t>(all[0])));
                    CHECK(space.largestMatch(0, *point, before, room) == largest);
                    ++looked;
                    largestNotFirst += largest && *largest != all[0];
                }
            }
        }
    }
    CHECK(looked > 3'000);
    CHECK(largestNotFirst > 1'000);  // the largest is not merely the first
}

TEST_CASE("a rule's diagram made again after the diagram starts afresh is the same function",
          "[compiler][shadowing]") {
    // The judgement starts its diagram afresh when it grows large, and a rule built a second
    // time is kept as its nodes and made again from them after that. The products each rule's
    // diagram splits into, listed when first built, when built again and when made from the
    // kept nodes, must be the same: a rule made wrong there changes verdicts on large policies
    // only.
    size_t compared = 0;
    for (const std::string& text : mixedPolicies(20261128, 20, 60, 12)) {
        Compiled c(text, uint64_t{1});
        REQUIRE(c.codes().empty());
        DecisionDiagram dd(0);
        RequestSpace space(dd, std::vector<const Policy*>{&c.policy});
        auto products = [&](uint32_t r) {
            std::string listed;
            space.cubes(space.rule(0, r), [&](const RequestCube& cube) {
                for (const IndexRanges& dim : cube.dims) {
                    for (const Range& x : dim)
                        listed += std::to_string(x.lo) + "-" + std::to_string(x.hi) + ",";
                    listed += ";";
                }
                listed += "\n";
            });
            return listed;
        };
        for (uint32_t r = 0; r < c.policy.rules.size(); ++r) {
            const std::string first = products(r);
            space.trimDiagram(0);
            const std::string again = products(r);  // built anew, and kept
            space.trimDiagram(0);
            const std::string kept = products(r);  // made from the kept nodes
            INFO("rule at line " << c.policy.rules[r].location.line << "\n" << text);
            CHECK(again == first);
            CHECK(kept == first);
            compared += !first.empty();
        }
    }
    CHECK(compared > 300);
}

TEST_CASE("shadowed-rule verdicts equal brute force over every small fabric",
          "[compiler][shadowing]") {
    const std::vector<Port> ports = allPorts();
    std::mt19937 rng(20261123);
    int dead = 0, alive = 0;
    for (int round = 0; round < 150; ++round) {
        Compiled c(randomPolicy(rng, Small));
        REQUIRE(c.codes().empty());
        const Policy& p = c.policy;
        std::set<uint32_t> warned;
        for (const Diagnostic& d : c.diagnostics.all()) {
            if (d.code == "shadowed-rule") {
                REQUIRE(d.severity == Severity::Warning);  // always decided at this size
                warned.insert(d.location.line);
            }
        }
        // Which rules each port satisfies as a source and as a destination, and which each
        // field-value combination satisfies, as bit masks over the rules (duplicates dropped:
        // a request escapes rule j's predecessors when some source, destination and values
        // satisfy j and no earlier rule on all three).
        REQUIRE(p.rules.size() <= 32);
        std::set<uint32_t> sourceMasks, destinationMasks, fieldMasks;
        for (const Port& port : ports) {
            uint32_t s = 0, d = 0;
            for (uint32_t i = 0; i < p.rules.size(); ++i) {
                s |= sideMatches(p, p.rules[i].sources, port) ? 1u << i : 0;
                d |= sideMatches(p, p.rules[i].destinations, port) ? 1u << i : 0;
            }
            sourceMasks.insert(s);
            destinationMasks.insert(d);
        }
        std::vector<std::optional<uint64_t>> values = {std::nullopt};
        for (uint64_t v = 0; v <= 9; ++v) values.push_back(v);
        for (auto sid : values)
            for (auto qos : values)
                for (auto pkey : values) {
                    uint32_t m = 0;
                    for (uint32_t i = 0; i < p.rules.size(); ++i) {
                        const MatchRule& r = p.rules[i];
                        bool ok = fieldMatches(r.serviceIds, sid) &&
                                  fieldMatches(r.qosClasses, qos) && fieldMatches(r.pkeys, pkey);
                        m |= ok ? 1u << i : 0;
                    }
                    fieldMasks.insert(m);
                }
        for (uint32_t j = 0; j < p.rules.size(); ++j) {
            const uint32_t bit = 1u << j, earlier = bit - 1;
            bool escapes = false;
            for (uint32_t s : sourceMasks)
                for (uint32_t d : destinationMasks)
                    for (uint32_t f : fieldMasks)
                        escapes = escapes || ((s & d & f & bit) && !(s & d & f & earlier));
            INFO("round " << round << ", rule at line " << p.rules[j].location.line << "\n"
                          << c.source.text());
            CHECK(warned.count(p.rules[j].location.line) == (escapes ? 0u : 1u));
            (escapes ? alive : dead) += 1;
        }
    }
    // The random policies exercise both verdicts.
    CHECK(dead >= 20);
    CHECK(alive >= 100);
}

TEST_CASE("unreachable-rule, unreachable-level and unused-group equal brute force on a fabric",
          "[compiler][shadowing]") {
    const std::string root = IBQOS_SOURCE_ROOT "/samples/fabrics/";
    SourceFile topology("qos-lab.ibnetdiscover",
                        ibqos::test::slurp(root + "qos-lab.ibnetdiscover"));
    SourceFile partitions("qos-lab.partitions.conf",
                          ibqos::test::slurp(root + "qos-lab.partitions.conf"));
    Diagnostics fabricDiagnostics;
    Fabric fabric = readTopology(topology, fabricDiagnostics);
    std::string error;
    fabric.smPort = fabric.findEndpoint("0x100001", error);
    readPartitions(&partitions, fabric, fabricDiagnostics);
    REQUIRE_FALSE(fabricDiagnostics.hasErrors());

    std::mt19937 rng(7);
    int unreachable = 0, reachable = 0, levelsUnreached = 0;
    for (int round = 0; round < 150; ++round) {
        Compiled c(randomPolicy(rng, Lab));
        REQUIRE(c.codes().empty());
        const Policy& p = c.policy;
        Diagnostics d;
        auto compiled = FabricCompilation::compile(p, fabric, OpenSmConf{}, d);
        if (!d.hasErrors()) checkReachability(compiled->bound(), d, analysisBudgetFor(p));
        std::set<uint32_t> warnedRules, warnedLevels;
        for (const Diagnostic& x : d.all()) {
            if (x.code == "unreachable-rule") warnedRules.insert(x.location.line);
            if (x.code == "unreachable-level") warnedLevels.insert(x.location.line);
        }
        // Brute force: every endpoint pair, every QoS class the rules tell apart or none; the
        // first rule that matches decides.
        const BoundPolicy& bound = compiled->bound();
        std::vector<char> decides(p.rules.size()), gets(p.levels.size());
        for (uint32_t s : fabric.endpoints())
            for (uint32_t t : fabric.endpoints())
                for (int qos = -1; qos <= 8; ++qos) {
                    uint32_t level = p.defaultLevel;
                    for (uint32_t i = 0; i < p.rules.size(); ++i) {
                        const MatchRule& r = p.rules[i];
                        auto side = [&](const std::vector<uint32_t>& groups, uint32_t port) {
                            if (groups.empty()) return true;
                            for (uint32_t g : groups)
                                if (bound.groups[g].contains(fabric, port)) return true;
                            return false;
                        };
                        bool qosOk =
                            r.qosClasses.empty() ||
                            (qos >= 0 && r.qosClasses.contains(static_cast<uint64_t>(qos)));
                        if (side(r.sources, s) && side(r.destinations, t) && qosOk) {
                            decides[i] = 1;
                            level = r.level;
                            break;
                        }
                    }
                    gets[level] = 1;
                }
        // A rule hidden on every fabric has its shadowed-rule warning instead.
        std::set<uint32_t> shadowed;
        for (const Diagnostic& x : c.diagnostics.all())
            if (x.code == "shadowed-rule") shadowed.insert(x.location.line);
        INFO("round " << round << "\n" << c.source.text());
        for (uint32_t i = 0; i < p.rules.size(); ++i) {
            uint32_t line = p.rules[i].location.line;
            INFO("rule at line " << line);
            if (shadowed.count(line)) {
                CHECK_FALSE(decides[i]);
                continue;
            }
            CHECK(warnedRules.count(line) == (decides[i] ? 0u : 1u));
            (decides[i] ? reachable : unreachable) += 1;
        }
        for (uint32_t l = 0; l < p.levels.size(); ++l) {
            INFO("level " << p.levels[l].name);
            // A level no rule that can match names has its unused-level warning instead.
            CHECK(warnedLevels.count(p.levels[l].location.line) + p.levels[l].unused ==
                  (gets[l] ? 0u : 1u));
            levelsUnreached += !gets[l];
        }
    }
    CHECK(unreachable >= 20);
    CHECK(reachable >= 100);
    CHECK(levelsUnreached >= 20);
}
